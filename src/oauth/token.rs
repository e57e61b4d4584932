//! The token endpoint's grants: `authorization_code` and `refresh_token`
//! here, `client_credentials` (automations only) in [`client_credentials`].
//!
//! Both follow one rule: **check everything, then spend**. A code or
//! refresh token is read with its grant, every check runs (client binding,
//! expiry, redirect URI, PKCE, resource, grant still usable), the access
//! token is signed, and only then is the code or token spent, by one
//! conditional update in the transaction that also stores the next refresh
//! token. So a refused request consumes nothing (the client may correct
//! its `resource` and retry), and two racing requests cannot both win.
//!
//! Presenting a spent code or a spent refresh token is reuse: the whole
//! grant is revoked, which ends everything the code or token issued
//! (threats 3 and 7), and the audit log records it. A storage failure
//! anywhere is `server_error` (see [`OAuthError`]), never `invalid_grant`.
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
//! A request with a DPoP proof (checked by the caller, [`crate::oauth::dpop`])
//! gets an access token bound to the proof's key (`cnf.jkt`, `token_type`
//! `DPoP`); a public client's refresh token is bound to it too, and so is
//! every successor: refreshing a bound token needs a proof by the same key
//! (without one, or with another key, `invalid_grant`, and nothing is
//! spent). A confidential client's refresh tokens stay unbound (its
//! secret already ties them to it, RFC 9449 §5). No proof, no binding: a
//! bearer token as before.

use serde::Serialize;
use time::OffsetDateTime;

use crate::domain::Issuer;
use crate::domain::{Scope, ScopeSet};
use crate::oauth::access_token::{self, NewAccessToken};
use crate::oauth::client::Client;
use crate::oauth::dpop::Proof;
use crate::oauth::error::OAuthError;
use crate::oauth::keys::Keys;
use crate::oauth::params::Params;
use crate::oauth::pkce::CodeChallenge;
use crate::oauth::resource;
use crate::oauth::scopes::OFFLINE_ACCESS;
use crate::secrets;
use crate::storage::audit::{self, AuditEvent, AuditKind};
use crate::storage::grants::{self, GrantStatus};
use crate::storage::refresh_tokens::{self, NewRefreshToken};
use crate::storage::{Store, StoreError, Tx, clients, codes};

pub mod client_credentials;

/// How long a refresh token lives; each rotation starts a new period.
pub const REFRESH_TTL: time::Duration = time::Duration::days(30);

/// What the grants need from the running server.
pub struct TokenContext<'a> {
    pub store: &'a Store,
    pub keys: &'a Keys,
    pub issuer: &'a Issuer,
    pub access_ttl: time::Duration,
    /// How long a spent refresh token may be presented again and get its
    /// still unused successor back; zero: never (every replay is reuse).
    pub reuse_window: time::Duration,
}

/// A token request, by `grant_type`.
#[derive(Debug, PartialEq, Eq)]
pub enum GrantRequest {
    AuthorizationCode {
        code: String,
        code_verifier: String,
        redirect_uri: Option<String>,
        resource: Vec<String>,
    },
    RefreshToken {
        refresh_token: String,
        resource: Vec<String>,
        scope: Option<String>,
    },
    /// Asked by a client that is not an automation: refused.
    ClientCredentials,
}

/// Reads the grant request from the form; the client was authenticated
/// first, so an anonymous caller learns nothing about grant types.
pub fn parse(form: &Params) -> Result<GrantRequest, OAuthError> {
    let one = |name: &'static str| {
        form.single(name)
            .map(|v| v.map(str::to_owned))
            .map_err(|n| OAuthError::invalid_request(format!("{n} is repeated")))
    };
    let required = |name: &'static str| {
        one(name)?.ok_or_else(|| OAuthError::invalid_request(format!("{name} is required")))
    };
    let resource = form
        .all("resource")
        .into_iter()
        .map(str::to_owned)
        .collect();
    match required("grant_type")?.as_str() {
        "authorization_code" => Ok(GrantRequest::AuthorizationCode {
            code: required("code")?,
            code_verifier: required("code_verifier")?,
            redirect_uri: one("redirect_uri")?,
            resource,
        }),
        "refresh_token" => Ok(GrantRequest::RefreshToken {
            refresh_token: required("refresh_token")?,
            resource,
            scope: one("scope")?,
        }),
        "client_credentials" => Ok(GrantRequest::ClientCredentials),
        _ => Err(OAuthError::UnsupportedGrantType),
    }
}

/// A successful token response (RFC 6749 §5.1); never a `null` in it.
#[derive(Debug, Serialize)]
pub struct TokenResponse {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    pub scope: String,
}

/// `token_type` of a token bound to a key, or not.
fn token_type(jkt: Option<&str>) -> &'static str {
    if jkt.is_some() { "DPoP" } else { "Bearer" }
}

/// The key a new refresh token is bound to: a public client's proof key
/// (or the one its previous token was bound to); nothing for a
/// confidential client.
fn refresh_binding<'a>(client: &Client, jkt: Option<&'a str>) -> Option<&'a str> {
    if client.auth_method.is_confidential() {
        None
    } else {
        jkt
    }
}

/// Runs the grant for an authenticated client; `proof` is the request's
/// checked (and spent) DPoP proof, if it came with one.
pub async fn exchange(
    ctx: &TokenContext<'_>,
    client: &Client,
    request: GrantRequest,
    proof: Option<&Proof>,
    now: OffsetDateTime,
) -> Result<TokenResponse, OAuthError> {
    let jkt = proof.map(|p| p.jkt.as_str());
    match request {
        GrantRequest::AuthorizationCode {
            code,
            code_verifier,
            redirect_uri,
            resource,
        } => {
            let request = CodeRequest {
                code: &code,
                verifier: &code_verifier,
                redirect_uri: redirect_uri.as_deref(),
                resource: &resource,
            };
            exchange_code(ctx, client, &request, jkt, now).await
        }
        GrantRequest::RefreshToken {
            refresh_token,
            resource,
            scope,
        } => {
            exchange_refresh(
                ctx,
                client,
                &refresh_token,
                &resource,
                scope.as_deref(),
                jkt,
                now,
            )
            .await
        }
        GrantRequest::ClientCredentials => Err(OAuthError::UnauthorizedClient(
            "only an automation may use the client_credentials grant".into(),
        )),
    }
}

/// What an `authorization_code` request names.
struct CodeRequest<'a> {
    code: &'a str,
    verifier: &'a str,
    redirect_uri: Option<&'a str>,
    resource: &'a [String],
}

async fn exchange_code(
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
    let code_hash = secrets::hash_secret(code);
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
    if !CodeChallenge::from_stored(row.code_challenge.clone()).is_satisfied_by(verifier) {
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
    let scope = ScopeSet::from_stored(&row.scope)
        .intersection(&ScopeSet::from_stored(&row.grant.grant_scope));
    if scope.is_empty() {
        return Err(OAuthError::invalid_grant("no approved scope is left"));
    }

    let (access_token, _) = mint(ctx, client, &row.grant, &scope, jkt, now).await?;
    let refresh = client.may_refresh.then(|| secrets::random_token(32));
    let refresh_hash = refresh.as_deref().map(secrets::hash_secret);
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

async fn exchange_refresh(
    ctx: &TokenContext<'_>,
    client: &Client,
    token: &str,
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
    let token_hash = secrets::hash_secret(token);
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
    let allowed = ScopeSet::from_stored(&row.scope)
        .intersection(&ScopeSet::from_stored(&row.grant.grant_scope));
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
    let respond = |refresh: String| TokenResponse {
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
        let refresh_hash = secrets::hash_secret(&refresh);
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
    token: &str,
    token_hash: &str,
    now: OffsetDateTime,
) -> Result<Option<String>, StoreError> {
    if ctx.reuse_window <= time::Duration::ZERO {
        return Ok(None);
    }
    let Some(nonce) =
        refresh_tokens::successor_nonce(tx, token_hash, now - ctx.reuse_window).await?
    else {
        return Ok(None);
    };
    let successor = secrets::successor_token(token, &nonce);
    let unused = refresh_tokens::claim_unused(tx, &secrets::hash_secret(&successor), now).await?;
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

/// The token request's `resource`, when sent, must name the resource the
/// code or grant was issued for (RFC 8707 §2.2).
fn check_resource(issuer: &Issuer, sent: &[String], bound: &str) -> Result<(), OAuthError> {
    if sent.is_empty() {
        return Ok(());
    }
    let sent: Vec<&str> = sent.iter().map(String::as_str).collect();
    match resource::resolve(issuer, &sent) {
        Ok(resolved) if resolved.as_str() == bound => Ok(()),
        Ok(_) => Err(OAuthError::InvalidTarget(format!(
            "the grant is for {bound}"
        ))),
        Err(why) => Err(OAuthError::InvalidTarget(why.to_string())),
    }
}

/// Whether the grant behind a code or refresh token may still issue: not
/// revoked, the person's credential epoch unchanged since `epoch`, the
/// person enabled and not due to change their password (the one rule of
/// `/authorize`, the consent form and `/mcp`: nothing is issued until they
/// have), the farm neither suspended nor with connected apps off.
pub(crate) fn check_grant_usable(grant: &GrantStatus, epoch: i64) -> Result<(), OAuthError> {
    let refusal = if grant.grant_revoked_at.is_some() {
        "the grant was revoked"
    } else if grant.user_epoch != epoch || grant.grant_epoch != epoch {
        "the person's credentials changed since consent"
    } else if grant.user_disabled {
        "the person is disabled"
    } else if grant.user_must_change_password {
        "the person must change their password first"
    } else if grant.farm_suspended {
        "the farm is suspended"
    } else if !grant.farm_apps_enabled {
        "connected apps are off for the farm"
    } else {
        return Ok(());
    };
    Err(OAuthError::invalid_grant(refusal))
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

async fn mint(
    ctx: &TokenContext<'_>,
    client: &Client,
    grant: &GrantStatus,
    scope: &ScopeSet,
    jkt: Option<&str>,
    now: OffsetDateTime,
) -> Result<(String, access_token::AccessClaims), OAuthError> {
    Ok(access_token::mint(
        ctx.keys,
        &NewAccessToken {
            issuer: ctx.issuer.as_str(),
            audience: &grant.grant_resource,
            user: grant.user(),
            client_id: &client.client_id,
            scope,
            grant: grant.id(),
            epoch: grant.user_epoch,
            lifetime: ctx.access_ttl,
            jkt,
        },
        now,
    )
    .await?)
}

/// A spent code or refresh token was presented again: someone else holds a
/// copy. The grant is revoked (ending every token it issued) and the event
/// audited, in one transaction. Returns the error to send: `invalid_grant`,
/// or `server_error` if the revocation itself could not be stored.
async fn reuse_detected(
    ctx: &TokenContext<'_>,
    grant: &GrantStatus,
    what: &'static str,
    now: OffsetDateTime,
) -> OAuthError {
    tracing::warn!(grant = %grant.grant_id, client_id = %grant.grant_client_id, what, "reuse detected: revoking the grant");
    match revoke_for_reuse(ctx, grant, what, now).await {
        Ok(()) => OAuthError::invalid_grant(format!("{what} was already used")),
        Err(err) => err.into(),
    }
}

async fn revoke_for_reuse(
    ctx: &TokenContext<'_>,
    grant: &GrantStatus,
    what: &'static str,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    let mut tx = ctx.store.write().await?;
    let revoked = grants::revoke(&mut tx, grant.id(), &format!("{what} reused"), now).await?;
    let mut event = AuditEvent::new(AuditKind::TokenReuseDetected);
    event.farm = Some(grant.farm());
    event.user = Some(grant.user());
    event.client_id = Some(&grant.grant_client_id);
    event.grant = Some(grant.id());
    event.detail = serde_json::json!({ "presented": what, "grant_revoked": revoked });
    audit::record(&mut tx, &event, now).await?;
    tx.commit().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(body: &str) -> Params {
        Params::parse(body.as_bytes())
    }

    #[test]
    fn grant_requests_parse_by_grant_type() {
        assert_eq!(
            parse(&form(
                "grant_type=authorization_code&code=c&code_verifier=v&resource=r"
            ))
            .unwrap(),
            GrantRequest::AuthorizationCode {
                code: "c".into(),
                code_verifier: "v".into(),
                redirect_uri: None,
                resource: vec!["r".into()],
            }
        );
        assert_eq!(
            parse(&form(
                "grant_type=refresh_token&refresh_token=t&scope=farm%3Aread"
            ))
            .unwrap(),
            GrantRequest::RefreshToken {
                refresh_token: "t".into(),
                resource: vec![],
                scope: Some("farm:read".into()),
            }
        );
        assert_eq!(
            parse(&form("grant_type=client_credentials")).unwrap(),
            GrantRequest::ClientCredentials
        );
        for (body, code) in [
            ("", "invalid_request"),
            ("grant_type=password&username=a", "unsupported_grant_type"),
            (
                "grant_type=authorization_code&code_verifier=v",
                "invalid_request",
            ),
            ("grant_type=authorization_code&code=c", "invalid_request"),
            (
                "grant_type=authorization_code&code=c&code=d&code_verifier=v",
                "invalid_request",
            ),
            ("grant_type=refresh_token", "invalid_request"),
            ("grant_type=implicit", "unsupported_grant_type"),
            (
                "grant_type=refresh_token&grant_type=refresh_token&refresh_token=t",
                "invalid_request",
            ),
        ] {
            assert_eq!(parse(&form(body)).unwrap_err().code(), code, "{body}");
        }
    }

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
        let mut client = Client {
            client_id: "c".into(),
            kind: crate::oauth::client::ClientKind::Dynamic,
            name: "n".into(),
            redirect_uris: vec![],
            auth_method: crate::oauth::client::AuthMethod::None,
            secret_hash: None,
            may_refresh: true,
            native: false,
            assertion_keys: None,
        };
        assert_eq!(refresh_binding(&client, Some("k1")), Some("k1"));
        client.auth_method = crate::oauth::client::AuthMethod::ClientSecretBasic;
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

    #[test]
    fn the_token_requests_resource_must_match_the_grants() {
        let issuer = Issuer::parse("https://coop.example").unwrap();
        let bound = "https://coop.example/mcp";
        assert!(check_resource(&issuer, &[], bound).is_ok());
        assert!(check_resource(&issuer, &["https://coop.example/mcp/".into()], bound).is_ok());
        assert_eq!(
            check_resource(&issuer, &["https://other.example/mcp".into()], bound)
                .unwrap_err()
                .code(),
            "invalid_target"
        );
        assert_eq!(
            check_resource(&issuer, &[bound.into(), bound.into()], bound)
                .unwrap_err()
                .code(),
            "invalid_target"
        );
    }

    #[test]
    fn a_grant_issues_only_while_everything_behind_it_holds() {
        let ok = GrantStatus {
            grant_id: uuid::Uuid::nil(),
            grant_farm_id: uuid::Uuid::nil(),
            grant_user_id: uuid::Uuid::nil(),
            grant_client_id: "c".into(),
            grant_scope: "farm:read".into(),
            grant_resource: "r".into(),
            grant_epoch: 1,
            grant_revoked_at: None,
            user_epoch: 1,
            user_disabled: false,
            user_must_change_password: false,
            farm_suspended: false,
            farm_apps_enabled: true,
        };
        assert!(check_grant_usable(&ok, 1).is_ok());
        assert!(check_grant_usable(&ok, 0).is_err());
        let cases: [fn(&mut GrantStatus); 6] = [
            |g| g.grant_revoked_at = Some(1),
            |g| g.user_epoch = 2,
            |g| g.user_disabled = true,
            |g| g.user_must_change_password = true,
            |g| g.farm_suspended = true,
            |g| g.farm_apps_enabled = false,
        ];
        for (i, change) in cases.iter().enumerate() {
            let mut g = ok.clone();
            change(&mut g);
            assert_eq!(
                check_grant_usable(&g, 1).unwrap_err().code(),
                "invalid_grant",
                "case {i}"
            );
        }
    }
}
