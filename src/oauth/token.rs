//! The token endpoint's grants, one file per grant: `authorization_code`,
//! `refresh_token`, and [`client_credentials`] (automations only). Here is
//! what they share: the request read by `grant_type` ([`parse`]), the
//! dispatch ([`exchange`]), the response, the resource check, whether a
//! grant may still issue (`check_grant_usable`), minting the access token
//! and reuse detection.
//!
//! The code and refresh grants follow one rule: **check everything, then
//! spend**. A code or refresh token is read with its grant, every check
//! runs (client binding, expiry, redirect URI, PKCE, resource, grant still
//! usable), the access token is signed, and only then is the code or token
//! spent, by one conditional update in the transaction that also stores
//! the next refresh token. So a refused request consumes nothing (the
//! client may correct its `resource` and retry), and two racing requests
//! cannot both win.
//!
//! Presenting a spent code or a spent refresh token is reuse: the whole
//! grant is revoked, which ends everything the code or token issued
//! (threats 3 and 7), and the audit log records it. A storage failure
//! anywhere is `server_error` (see [`OAuthError`]), never `invalid_grant`.
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

use crate::domain::{Issuer, ScopeSet};
use crate::oauth::access_token::{self, NewAccessToken};
use crate::oauth::client::Client;
use crate::oauth::dpop::Proof;
use crate::oauth::error::OAuthError;
use crate::oauth::keys::Keys;
use crate::oauth::params::Params;
use crate::oauth::resource;
use crate::secrets::{AccessToken, AuthorizationCode, CodeVerifier, RefreshToken};
use crate::storage::audit::{self, AuditEvent, AuditKind};
use crate::storage::grants::{self, GrantStatus};
use crate::storage::{Store, StoreError};

mod authorization_code;
pub mod client_credentials;
mod refresh_token;

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
        code: AuthorizationCode,
        code_verifier: CodeVerifier,
        redirect_uri: Option<String>,
        resource: Vec<String>,
    },
    RefreshToken {
        refresh_token: RefreshToken,
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
            code: AuthorizationCode::new(required("code")?),
            code_verifier: CodeVerifier::new(required("code_verifier")?),
            redirect_uri: one("redirect_uri")?,
            resource,
        }),
        "refresh_token" => Ok(GrantRequest::RefreshToken {
            refresh_token: RefreshToken::new(required("refresh_token")?),
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
    pub access_token: AccessToken,
    pub token_type: &'static str,
    pub expires_in: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<RefreshToken>,
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
    if client.auth_method().is_confidential() {
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
            let request = authorization_code::CodeRequest {
                code: &code,
                verifier: &code_verifier,
                redirect_uri: redirect_uri.as_deref(),
                resource: &resource,
            };
            authorization_code::exchange(ctx, client, &request, jkt, now).await
        }
        GrantRequest::RefreshToken {
            refresh_token,
            resource,
            scope,
        } => {
            refresh_token::exchange(
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

async fn mint(
    ctx: &TokenContext<'_>,
    client: &Client,
    grant: &GrantStatus,
    scope: &ScopeSet,
    jkt: Option<&str>,
    now: OffsetDateTime,
) -> Result<(AccessToken, access_token::AccessClaims), OAuthError> {
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
    fn a_grant_request_debugs_without_its_secrets() {
        for body in [
            "grant_type=authorization_code&code=c0de-s3cret&code_verifier=v3rifier-s3cret",
            "grant_type=refresh_token&refresh_token=r3fresh-s3cret",
        ] {
            let printed = format!("{:?}", parse(&form(body)).unwrap());
            assert!(!printed.contains("s3cret"), "{printed}");
        }
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
            grant_scope: crate::domain::ScopeSet::from_stored("farm:read"),
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
