//! The `authorization_code` grant (OAuth 2.1 §4.1.3): a code, read with its
//! grant, passes every check (the client it was issued to, the redirect
//! URI, PKCE, the resource, expiry, the grant still usable, some approved
//! scope left) before the access token is signed; only then is the code
//! spent, by one conditional update in the transaction that also stores
//! the first refresh token. A spent code presented again is reuse
//! ([`super::reuse_detected`]), also when its minute is over.

use time::OffsetDateTime;

use super::{
    REFRESH_TTL, TokenContext, TokenResponse, check_grant_usable, check_resource, mint,
    refresh_binding, reuse_detected, token_type,
};
use crate::oauth::client::Client;
use crate::oauth::error::OAuthError;
use crate::oauth::pkce::CodeChallenge;
use crate::secrets::{self, AuthorizationCode, CodeVerifier, RefreshToken};
use crate::storage::refresh_tokens::NewRefreshToken;
use crate::storage::{clients, codes};

/// What an `authorization_code` request names.
pub(super) struct CodeRequest<'a> {
    pub code: &'a AuthorizationCode,
    pub verifier: &'a CodeVerifier,
    pub redirect_uri: Option<&'a str>,
    pub resource: &'a [String],
}

/// Exchanges a code for tokens: every check, then the code spent with the
/// first refresh token stored, in one transaction.
pub(super) async fn exchange(
    ctx: &TokenContext<'_>,
    client: &Client,
    request: &CodeRequest<'_>,
    jkt: Option<&str>,
    now: OffsetDateTime,
) -> Result<TokenResponse, OAuthError> {
    let &CodeRequest {
        code,
        verifier,
        redirect_uri,
        resource,
    } = request;
    let code_hash = secrets::hash_secret(code.expose());
    let row = codes::find(&mut ctx.store.read().await?, &code_hash)
        .await?
        .ok_or_else(|| OAuthError::invalid_grant("unknown code"))?;
    if row.client_id != client.client_id {
        return Err(OAuthError::invalid_grant("code issued to another client"));
    }
    if redirect_uri.is_some_and(|uri| uri != row.redirect_uri) {
        return Err(OAuthError::invalid_grant(
            "redirect_uri differs from the authorization request's",
        ));
    }
    if !CodeChallenge::from_stored(row.code_challenge.clone()).is_satisfied_by(verifier.expose()) {
        tracing::warn!(client_id = %client.client_id, "PKCE verifier does not match: possible code interception");
        return Err(OAuthError::invalid_grant("PKCE verifier does not match"));
    }
    check_resource(ctx.issuer, resource, &row.resource)?;
    // Reuse before expiry: a spent code replayed after its minute is still
    // a copy in someone else's hands (kept an hour past expiry for this).
    if row.consumed_at.is_some() {
        return Err(reuse_detected(ctx, &row.grant, "authorization_code", now).await);
    }
    if row.expires_at <= now.unix_timestamp() {
        return Err(OAuthError::invalid_grant("code expired"));
    }
    check_grant_usable(&row.grant, row.credential_epoch)?;
    let scope = row.scope.intersection(&row.grant.grant_scope);
    if scope.is_empty() {
        return Err(OAuthError::invalid_grant("no approved scope is left"));
    }

    let (access_token, _) = mint(ctx, client, &row.grant, &scope, jkt, now).await?;
    let refresh = client
        .may_refresh
        .then(|| RefreshToken::new(secrets::random_token(32)));
    let refresh_hash = refresh.as_ref().map(|t| secrets::hash_secret(t.expose()));
    let scope_wire = scope.to_wire();
    let next = refresh_hash.as_deref().map(|hash| NewRefreshToken {
        token_hash: hash,
        grant: row.grant.id(),
        scope: &scope_wire,
        expires_at: now + REFRESH_TTL,
        dpop_jkt: refresh_binding(client, jkt),
    });
    let mut tx = ctx.store.write().await?;
    if !codes::redeem(&mut tx, &code_hash, next.as_ref(), now).await? {
        // Another request spent the code between our read and our update.
        drop(tx);
        return Err(reuse_detected(ctx, &row.grant, "authorization_code", now).await);
    }
    clients::mark_used(&mut tx, &client.client_id, now).await?;
    tx.commit().await?;
    Ok(TokenResponse {
        access_token,
        token_type: token_type(jkt),
        expires_in: ctx.access_ttl.whole_seconds(),
        refresh_token: refresh,
        scope: scope_wire,
    })
}
