//! The `refresh_token` grant (RFC 6749 §6, rotated as OAuth 2.1 §4.3.1
//! asks): the token, read with its grant, passes every check (the client it
//! was issued to, expiry, its DPoP binding, the resource, the grant still
//! usable, a scope no wider than granted) before the access token is
//! signed; only then is it spent, by one conditional update in the
//! transaction that stores its successor. A refresh may narrow the scope
//! of the access token, never widen it; the successor keeps the old
//! token's scope.
//!
//! One exception keeps honest clients connected: a refresh token presented
//! again within the reuse window of its rotation, while its successor has
//! not been used, gets that same successor back (a response lost on the
//! way, two processes sharing one credentials file, two tabs). The
//! successor is derived from the presented token and a random nonce stored
//! at rotation ([`secrets::successor_token`]), so it can be handed out
//! again without ever being stored, and only to whoever holds the spent
//! token. Whether the successor is still unused is claimed by one
//! conditional update in the same transaction, so of a replay and the
//! successor's own first use racing, exactly one order wins: there is never
//! more than one live token family.
//!
//! A refresh token bound to a DPoP key (a public client's) needs a proof
//! by that key: without one, or with another key, `invalid_grant`, before
//! anything else and with nothing spent.

use time::OffsetDateTime;

use super::{
    REFRESH_TTL, TokenContext, TokenResponse, check_grant_usable, check_resource, mint,
    refresh_binding, reuse_detected, token_type,
};
use crate::domain::{Scope, ScopeSet};
use crate::oauth::client::Client;
use crate::oauth::error::OAuthError;
use crate::oauth::scopes::OFFLINE_ACCESS;
use crate::secrets::{self, RefreshToken};
use crate::storage::refresh_tokens::{self, NewRefreshToken};
use crate::storage::{StoreError, Tx};

/// Rotates a refresh token: every check (a spent one too), then the token
/// spent and its successor stored in one transaction, or, for a spent one
/// within the reuse window, its unused successor handed out again.
pub(super) async fn exchange(
    ctx: &TokenContext<'_>,
    client: &Client,
    token: &RefreshToken,
    resource: &[String],
    asked_scope: Option<&str>,
    jkt: Option<&str>,
    now: OffsetDateTime,
) -> Result<TokenResponse, OAuthError> {
    if !client.may_refresh {
        return Err(OAuthError::UnauthorizedClient(
            "the client registered without the refresh_token grant".into(),
        ));
    }
    let token_hash = secrets::hash_secret(token.expose());
    let row = refresh_tokens::find(&mut ctx.store.read().await?, &token_hash)
        .await?
        .ok_or_else(|| OAuthError::invalid_grant("unknown refresh token"))?;
    if row.grant.grant_client_id != client.client_id {
        return Err(OAuthError::invalid_grant(
            "refresh token issued to another client",
        ));
    }
    if row.expires_at <= now.unix_timestamp() {
        return Err(OAuthError::invalid_grant("refresh token expired"));
    }
    // A bound token without its key is worth nothing to whoever copied
    // it: refused before anything else, spent or not, and nothing changes.
    check_binding(row.dpop_jkt.as_deref(), jkt)?;
    // A spent token goes through every check too: only a request that
    // would have been answered had the token been fresh may get its
    // successor again (below); any other replay is reuse.
    check_resource(ctx.issuer, resource, &row.grant.grant_resource)?;
    check_grant_usable(&row.grant, row.grant.grant_epoch)?;
    let allowed = row.scope.intersection(&row.grant.grant_scope);
    let scope = narrowed_scope(&allowed, asked_scope)?;
    if scope.is_empty() {
        return Err(OAuthError::invalid_grant("no approved scope is left"));
    }

    let (access_token, _) = mint(ctx, client, &row.grant, &scope, jkt, now).await?;
    let binding = row
        .dpop_jkt
        .as_deref()
        .or_else(|| refresh_binding(client, jkt));
    // RFC 6749 §6: the new refresh token keeps the old one's scope, even
    // when this access token was narrowed.
    let allowed_wire = allowed.to_wire();
    let respond = |refresh: RefreshToken| TokenResponse {
        access_token,
        token_type: token_type(jkt),
        expires_in: ctx.access_ttl.whole_seconds(),
        refresh_token: Some(refresh),
        scope: scope.to_wire(),
    };

    let mut tx = ctx.store.write().await?;
    if row.used_at.is_none() {
        let nonce = secrets::random_token(16);
        let refresh = secrets::successor_token(token, &nonce);
        let refresh_hash = secrets::hash_secret(refresh.expose());
        let next = NewRefreshToken {
            token_hash: &refresh_hash,
            grant: row.grant.id(),
            scope: &allowed_wire,
            expires_at: now + REFRESH_TTL,
            dpop_jkt: binding,
        };
        if refresh_tokens::rotate(&mut tx, &token_hash, &next, &nonce, now).await? {
            tx.commit().await?;
            return Ok(respond(refresh));
        }
        // Spent by a racing request between our read and our update: the
        // same question as a replay, asked of what that request stored.
    }
    match resend_successor(ctx, &mut tx, token, &token_hash, now).await? {
        Some(refresh) => {
            tx.commit().await?;
            tracing::info!(grant = %row.grant.grant_id, "spent refresh token presented again within the window: same successor");
            Ok(respond(refresh))
        }
        None => {
            drop(tx);
            Err(reuse_detected(ctx, &row.grant, "refresh_token", now).await)
        }
    }
}

/// The successor of the spent token `token`, when it was spent within the
/// reuse window and its successor is unused; claimed in `tx`.
async fn resend_successor(
    ctx: &TokenContext<'_>,
    tx: &mut Tx,
    token: &RefreshToken,
    token_hash: &str,
    now: OffsetDateTime,
) -> Result<Option<RefreshToken>, StoreError> {
    if ctx.reuse_window <= time::Duration::ZERO {
        return Ok(None);
    }
    let Some(nonce) =
        refresh_tokens::successor_nonce(tx, token_hash, now - ctx.reuse_window).await?
    else {
        return Ok(None);
    };
    let successor = secrets::successor_token(token, &nonce);
    let unused =
        refresh_tokens::claim_unused(tx, &secrets::hash_secret(successor.expose()), now).await?;
    Ok(unused.then_some(successor))
}

/// A refresh token bound to a key needs a proof by that key.
fn check_binding(bound: Option<&str>, jkt: Option<&str>) -> Result<(), OAuthError> {
    match (bound, jkt) {
        (None, _) => Ok(()),
        (Some(bound), Some(jkt)) if secrets::constant_time_eq(bound, jkt) => Ok(()),
        (Some(_), Some(_)) => Err(OAuthError::invalid_grant(
            "the refresh token is bound to another DPoP key",
        )),
        (Some(_), None) => Err(OAuthError::invalid_grant(
            "the refresh token is bound to a DPoP key and no proof came",
        )),
    }
}

/// A refresh request may ask for fewer scopes than the token carries,
/// never more (RFC 6749 §6); `offline_access` is ignored as everywhere.
fn narrowed_scope(allowed: &ScopeSet, asked: Option<&str>) -> Result<ScopeSet, OAuthError> {
    let Some(asked) = asked else {
        return Ok(allowed.clone());
    };
    let mut scopes = Vec::new();
    for word in asked
        .split(' ')
        .filter(|w| !w.is_empty() && *w != OFFLINE_ACCESS)
    {
        scopes.push(
            Scope::parse(word)
                .ok_or_else(|| OAuthError::InvalidScope(format!("unknown scope {word:?}")))?,
        );
    }
    let asked = ScopeSet::from_scopes(scopes);
    if asked.is_empty() {
        return Ok(allowed.clone());
    }
    if !asked.is_subset(allowed) {
        return Err(OAuthError::InvalidScope(
            "a refresh cannot add scopes that were not granted".into(),
        ));
    }
    Ok(asked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_refresh_token_needs_its_key_and_only_public_clients_bind() {
        assert!(check_binding(None, None).is_ok());
        assert!(check_binding(None, Some("k1")).is_ok());
        assert!(check_binding(Some("k1"), Some("k1")).is_ok());
        for jkt in [Some("k2"), None] {
            assert_eq!(
                check_binding(Some("k1"), jkt).unwrap_err().code(),
                "invalid_grant"
            );
        }
        use crate::oauth::client::{ClientKind, Origin, SecretMethod};
        let mut client = Client {
            client_id: "c".into(),
            kind: ClientKind::Public {
                origin: Origin::Dynamic,
            },
            name: "n".into(),
            redirect_uris: vec![],
            may_refresh: true,
            native: false,
        };
        assert_eq!(refresh_binding(&client, Some("k1")), Some("k1"));
        client.kind = ClientKind::Confidential {
            origin: Origin::Dynamic,
            method: SecretMethod::Basic,
            secret_hash: "h".into(),
        };
        assert_eq!(refresh_binding(&client, Some("k1")), None);
        assert_eq!(token_type(Some("k1")), "DPoP");
        assert_eq!(token_type(None), "Bearer");
    }

    #[test]
    fn a_refresh_may_narrow_but_never_widen() {
        let both = ScopeSet::from_stored("farm:read daily-entries:write");
        let read = ScopeSet::from_stored("farm:read");
        assert_eq!(narrowed_scope(&both, None).unwrap(), both);
        assert_eq!(narrowed_scope(&both, Some("farm:read")).unwrap(), read);
        assert_eq!(narrowed_scope(&read, Some("offline_access")).unwrap(), read);
        assert_eq!(
            narrowed_scope(&read, Some("farm:read daily-entries:write"))
                .unwrap_err()
                .code(),
            "invalid_scope"
        );
        assert_eq!(
            narrowed_scope(&read, Some("admin")).unwrap_err().code(),
            "invalid_scope"
        );
    }
}
