//! The `client_credentials` grant, for automations only (the MCP extension
//! `io.modelcontextprotocol/oauth-client-credentials`).
//!
//! An automation is a machine client a farm owner made (a barn scale, a
//! farm-management system). It names itself with its `client_id`
//! (`automation-<id>`) and proves it with what it was made with: a signed
//! client assertion (`private_key_jwt`, RFC 7523, checked by the one
//! verifier every client shares, [`crate::oauth::client_assertion`], with
//! its `jti` spent in the shared store), or its client secret in the HTTP
//! Basic header (`client_secret_basic`). What it gets is one short-lived
//! access token: its subject is the automation (never a person), its
//! audience the one resource, its scopes at most those the owner allowed;
//! no refresh token (it can always ask again). The token is checked on
//! every `/mcp` call against the automation's row like a person's against
//! their grant, so disabling the automation stops it on its next call.
//!
//! Order: the automation is authenticated first (an unknown one, a wrong
//! or missing secret or assertion, the other method than its own, a
//! disabled one: `invalid_client`), then the request
//! (`resource` as for every grant: absent means `<issuer>/mcp`, anything
//! else is `invalid_target`; `scope` is narrowed to what it may hold, and
//! an unknown scope or nothing left is `invalid_scope`), then the farm
//! (suspended, or connected apps off: `unauthorized_client`).
//!
//! With a DPoP proof (checked by the caller) the token is bound to the
//! proof's key (`cnf.jkt`, `token_type: DPoP`), as for every grant.

use std::sync::Arc;

use time::OffsetDateTime;

use super::{TokenContext, TokenResponse, token_type};
use crate::domain::{AutomationId, Scope, ScopeSet};
use crate::oauth::access_token::{self, NewAutomationToken};
use crate::oauth::cimd::{CimdRequest, key_set};
use crate::oauth::client::ClientKeys;
use crate::oauth::client_assertion::{
    self, AssertionError, ClientKeySource, Expected, KeySetError,
};
use crate::oauth::client_auth::Presented;
use crate::oauth::dpop::Proof;
use crate::oauth::error::OAuthError;
use crate::oauth::params::Params;
use crate::oauth::resource;
use crate::oauth::scopes::OFFLINE_ACCESS;
use crate::secrets::{self, ClientAssertion};
use crate::storage::automations::{self, AutomationCredential};

/// The longest an automation's access token lives, whatever the
/// configured lifetime of a person's: a leaked one is worth little, and an
/// automation can always ask again.
pub const AUTOMATION_TOKEN_TTL: time::Duration = time::Duration::minutes(5);

/// A client credentials request's parameters (after authentication).
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub scope: Option<String>,
    pub resource: Vec<String>,
}

/// Reads an automation's token request: `grant_type` must be
/// `client_credentials` (an automation has no other grant:
/// `unauthorized_client`), `scope` at most once, `resource` as sent.
pub fn parse(form: &Params) -> Result<Request, OAuthError> {
    let one = |name: &'static str| {
        form.single(name)
            .map_err(|n| OAuthError::invalid_request(format!("{n} is repeated")))
    };
    match one("grant_type")? {
        None => return Err(OAuthError::invalid_request("grant_type is required")),
        Some("client_credentials") => {}
        Some(_) => {
            return Err(OAuthError::UnauthorizedClient(
                "an automation may only use the client_credentials grant".into(),
            ));
        }
    }
    let scope = one("scope")?.map(str::to_owned);
    let resource = form
        .all("resource")
        .into_iter()
        .map(str::to_owned)
        .collect();
    Ok(Request { scope, resource })
}

/// An automation that proved who it is: only [`authenticate`] makes one,
/// and only [`exchange`] reads it.
#[derive(Debug)]
pub struct Authenticated(AutomationCredential);

/// Whether the presented `client_id` names an automation: then only an
/// automation may be authenticated with it.
pub fn names_an_automation(presented: &Presented) -> Option<AutomationId> {
    AutomationId::from_client_id(&presented.client_id)
}

/// Authenticates the automation `presented` names. Every refusal is
/// `invalid_client` (with the Basic challenge when Basic was tried): an
/// unknown automation, a secret that is wrong, missing or not in the
/// header, an assertion that does not verify or was used before, the
/// method it was not made with, a disabled automation. `cimd` fetches a
/// key set behind a `jwks_uri` (SSRF-guarded, cached, limited).
pub async fn authenticate(
    ctx: &TokenContext<'_>,
    cimd: &CimdRequest<'_>,
    automation: AutomationId,
    presented: &Presented,
    now: OffsetDateTime,
) -> Result<Authenticated, OAuthError> {
    let refuse = |why: &str| OAuthError::invalid_client(why, presented.basic);
    let found = automations::find_credential(&mut ctx.store.read().await?, automation).await?;
    let Some(credential) = found else {
        return Err(refuse("unknown automation"));
    };
    match (credential.auth_method.as_str(), &credential.secret_hash) {
        ("client_secret_basic", Some(expected)) => {
            let Some(secret) = presented.secret.as_ref().filter(|_| presented.basic) else {
                return Err(refuse("an automation sends its secret in the Basic header"));
            };
            if !secrets::constant_time_eq(expected, &secrets::hash_secret(secret.expose())) {
                tracing::warn!(automation = %automation, "wrong automation secret");
                return Err(refuse("wrong automation secret"));
            }
        }
        ("private_key_jwt", None) => {
            let Some(assertion) = presented.assertion.as_ref() else {
                return Err(refuse("this automation authenticates with private_key_jwt"));
            };
            let keys = assertion_keys(&credential).ok_or_else(|| {
                tracing::error!(automation = %automation, "stored key set unusable");
                refuse("the automation's key set cannot be used")
            })?;
            verify_assertion(ctx, cimd, &automation.client_id(), &keys, assertion, now).await?;
        }
        _ => return Err(refuse("the automation's credential is not this method")),
    }
    if credential.disabled {
        return Err(refuse("the automation is disabled"));
    }
    Ok(Authenticated(credential))
}

/// Where an automation's public keys are: pasted, or at its `jwks_uri`.
fn assertion_keys(credential: &AutomationCredential) -> Option<ClientKeys> {
    if let Some(uri) = &credential.jwks_uri {
        return Some(ClientKeys::Uri(uri.clone()));
    }
    let value: serde_json::Value = serde_json::from_str(credential.jwks.as_deref()?).ok()?;
    key_set::from_value(&value)
        .ok()
        .map(|set| ClientKeys::Inline(Arc::new(set)))
}

/// The assertion, checked as every client's is: signed by one of `keys`,
/// `iss` = `sub` = the automation's `client_id`, `aud` naming Coop, fresh,
/// its `jti` never seen before (spent now, in the shared store).
async fn verify_assertion(
    ctx: &TokenContext<'_>,
    cimd: &CimdRequest<'_>,
    client_id: &str,
    keys: &ClientKeys,
    assertion: &ClientAssertion,
    now: OffsetDateTime,
) -> Result<(), OAuthError> {
    let token_endpoint = ctx.issuer.url("/token");
    let audiences = [ctx.issuer.as_str(), token_endpoint.as_str()];
    let expected = Expected {
        client_id,
        audiences: &audiences,
        algorithm: None,
    };
    let source = ClientKeySource { keys, cimd };
    match client_assertion::verify(assertion.expose(), &expected, &source, now, ctx.store).await {
        Ok(_) => Ok(()),
        Err(AssertionError::KeySet(KeySetError::Throttled(throttle))) => Err(throttle.into()),
        Err(AssertionError::Store(err)) => Err(err.into()),
        Err(err) => {
            tracing::warn!(client_id, error = %err, "automation's client assertion refused");
            Err(OAuthError::invalid_client(
                format!("client assertion refused: {err}"),
                false,
            ))
        }
    }
}

/// Issues the access token for an authenticated automation, bound to the
/// key of `proof` when the request carried one.
pub async fn exchange(
    ctx: &TokenContext<'_>,
    automation: &Authenticated,
    request: &Request,
    proof: Option<&Proof>,
    now: OffsetDateTime,
) -> Result<TokenResponse, OAuthError> {
    let jkt = proof.map(|p| p.jkt.as_str());
    let credential = &automation.0;
    let sent: Vec<&str> = request.resource.iter().map(String::as_str).collect();
    let audience = resource::resolve(ctx.issuer, &sent)
        .map_err(|why| OAuthError::InvalidTarget(why.to_string()))?;
    let scope = asked_scope(&credential.scope, request.scope.as_deref())?;
    if credential.farm_suspended {
        return Err(OAuthError::UnauthorizedClient(
            "the automation's farm is suspended".into(),
        ));
    }
    if !credential.farm_apps_enabled {
        return Err(OAuthError::UnauthorizedClient(
            "connected apps are off for the automation's farm".into(),
        ));
    }
    let lifetime = ctx.access_ttl.min(AUTOMATION_TOKEN_TTL);
    let (access_token, _) = access_token::mint_for_automation(
        ctx.keys,
        &NewAutomationToken {
            issuer: ctx.issuer.as_str(),
            audience: audience.as_str(),
            automation: credential.automation(),
            scope: &scope,
            epoch: credential.credential_epoch,
            lifetime,
            jkt,
        },
        now,
    )
    .await?;
    tracing::info!(automation = %credential.automation(), scope = %scope, "automation token issued");
    Ok(TokenResponse {
        access_token,
        token_type: token_type(jkt),
        expires_in: lifetime.whole_seconds(),
        refresh_token: None,
        scope: scope.to_wire(),
    })
}

/// The scopes granted: every allowed one when `scope` is absent (or
/// empty), else the asked ones it may hold. A known scope it may not hold
/// is left out rather than refused: MCP clients ask for what the resource's
/// challenge names (both scopes, to a caller not yet known), whatever the
/// automation may hold, and offer no way to ask for less; RFC 6749 §3.3
/// lets the server grant less, and the response's `scope` says what it
/// granted. An unknown scope, or nothing left, is `invalid_scope`.
fn asked_scope(allowed: &ScopeSet, asked: Option<&str>) -> Result<ScopeSet, OAuthError> {
    let mut scopes = Vec::new();
    for word in asked
        .unwrap_or_default()
        .split(' ')
        .filter(|w| !w.is_empty() && *w != OFFLINE_ACCESS)
    {
        scopes.push(
            Scope::parse(word)
                .ok_or_else(|| OAuthError::InvalidScope(format!("unknown scope {word:?}")))?,
        );
    }
    let scope = if scopes.is_empty() {
        allowed.clone()
    } else {
        ScopeSet::from_scopes(scopes.into_iter().filter(|s| allowed.contains(*s)))
    };
    if scope.is_empty() {
        return Err(OAuthError::InvalidScope(
            "the automation may hold none of the scopes asked for".into(),
        ));
    }
    Ok(scope)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_automation_gets_at_most_its_allowed_scopes() {
        let write = ScopeSet::from_stored("daily-entries:write");
        let both = ScopeSet::from_stored("farm:read daily-entries:write");
        assert_eq!(asked_scope(&write, None).unwrap(), write);
        assert_eq!(asked_scope(&both, Some("")).unwrap(), both);
        assert_eq!(
            asked_scope(&both, Some("daily-entries:write offline_access")).unwrap(),
            write
        );
        // What an MCP client asks for (the challenge's scopes): narrowed.
        assert_eq!(
            asked_scope(&write, Some("farm:read daily-entries:write")).unwrap(),
            write
        );
        for (allowed, asked) in [
            (&write, "farm:read"),
            (&write, "farm:read offline_access"),
            (&both, "admin"),
            (&both, "farm:read admin"),
            (&write, "daily-entries:write FARM:READ"),
            (&ScopeSet::empty(), ""),
            (&ScopeSet::empty(), "farm:read"),
        ] {
            assert_eq!(
                asked_scope(allowed, Some(asked)).unwrap_err().code(),
                "invalid_scope",
                "{asked}"
            );
        }
    }

    #[test]
    fn an_automation_asks_only_for_client_credentials() {
        let form = |body: &str| Params::parse(body.as_bytes());
        assert_eq!(
            parse(&form(
                "grant_type=client_credentials&scope=farm%3Aread&resource=r"
            ))
            .unwrap(),
            Request {
                scope: Some("farm:read".into()),
                resource: vec!["r".into()],
            }
        );
        for (body, code) in [
            ("", "invalid_request"),
            (
                "grant_type=refresh_token&refresh_token=x",
                "unauthorized_client",
            ),
            (
                "grant_type=client_credentials&grant_type=client_credentials",
                "invalid_request",
            ),
            (
                "grant_type=client_credentials&scope=a&scope=b",
                "invalid_request",
            ),
        ] {
            assert_eq!(parse(&form(body)).unwrap_err().code(), code, "{body}");
        }
    }

    #[test]
    fn only_an_automation_client_id_names_one() {
        let id = AutomationId::new();
        let presented = |client_id: String| Presented {
            client_id,
            secret: None,
            basic: true,
            assertion: None,
        };
        assert_eq!(names_an_automation(&presented(id.client_id())), Some(id));
        assert_eq!(names_an_automation(&presented(id.to_string())), None);
        assert_eq!(
            names_an_automation(&presented(format!("automation-{}", id.0.simple()))),
            None
        );
        assert_eq!(names_an_automation(&presented("registered-1".into())), None);
    }
}
