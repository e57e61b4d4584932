//! Introspection of access tokens (RFC 7662), for resource servers and
//! gateways in front of other MCP servers: a token is `active` only if the
//! very check `/mcp` runs on every call passes for it at that moment
//! ([`super::bearer`]: signature and claims, then the one store look-up).
//! So every kind of revocation, a moved credential epoch, a disabled person
//! or automation, a suspended farm and the farm's connected apps turned
//! off all answer `active: false`, on every replica, with nothing cached.
//!
//! Who may ask, the answer's shape and refresh tokens are
//! [`crate::oauth::introspection`]'s; this module is here, not there,
//! because the check it asks is the resource's.

use time::OffsetDateTime;

use super::bearer::{self, AuthError};
use crate::domain::Issuer;
use crate::oauth::access_token;
use crate::oauth::client::Client;
use crate::oauth::error::OAuthError;
use crate::oauth::introspection::{self, Introspection};
use crate::oauth::keys::Keys;
use crate::oauth::presented_token::{TokenHint, TokenParams};
use crate::storage::Store;

/// What an answer needs from the running server.
pub struct Introspector<'a> {
    pub store: &'a Store,
    pub keys: &'a Keys,
    pub issuer: &'a Issuer,
}

/// Introspects the presented token for `caller` (already authenticated
/// and allowed to introspect). The hint only chooses which kind is tried
/// first.
pub async fn introspect(
    ctx: &Introspector<'_>,
    caller: &Client,
    presented: &TokenParams,
    now: OffsetDateTime,
) -> Result<Introspection, OAuthError> {
    let token = presented.token.expose();
    if presented.hint == Some(TokenHint::RefreshToken)
        && let Some(answer) = introspection::refresh_token(ctx.store, caller, token, now).await?
    {
        return Ok(answer);
    }
    if let Some(answer) = access_token_answer(ctx, token, now).await? {
        return Ok(answer);
    }
    Ok(introspection::refresh_token(ctx.store, caller, token, now)
        .await?
        .unwrap_or_else(Introspection::inactive))
}

/// `token` as an access token: `None` when it is not one Coop signed (or
/// no longer verifies); inactive when the per-call check refuses it.
async fn access_token_answer(
    ctx: &Introspector<'_>,
    token: &str,
    now: OffsetDateTime,
) -> Result<Option<Introspection>, OAuthError> {
    let claims = match bearer::verify_token(ctx.keys, ctx.issuer, token, now).await {
        Ok(claims) => claims,
        Err(AuthError::Refused(_)) => return Ok(None),
        // The key set could not be read: that says nothing about the token
        // (answering "inactive" would look like a revocation).
        Err(AuthError::Store(err)) => return Err(err.into()),
    };
    let authorized = {
        let mut db = ctx.store.read().await?;
        bearer::authorize(&mut db, &claims, now).await
    };
    match authorized {
        Ok(authorized) => Ok(Some(active(&claims, &authorized.context))),
        Err(AuthError::Refused(refusal)) => {
            tracing::info!(jti = %claims.jti, why = %refusal, "introspected token is not active");
            Ok(Some(Introspection::inactive()))
        }
        Err(AuthError::Store(err)) => Err(err.into()),
    }
}

/// An active access token's facts; `scope` is what the token may do now
/// (its scopes narrowed by a later consent or the automation's allowance).
fn active(claims: &access_token::AccessClaims, context: &super::CallContext) -> Introspection {
    Introspection {
        active: true,
        scope: Some(context.scopes.to_wire()),
        client_id: Some(claims.client_id.clone()),
        sub: Some(claims.sub.clone()),
        aud: Some(claims.aud.clone()),
        iss: Some(claims.iss.clone()),
        exp: Some(claims.exp),
        iat: Some(claims.iat),
        jti: Some(claims.jti.clone()),
        token_type: Some(if claims.cnf.is_some() {
            "DPoP"
        } else {
            "Bearer"
        }),
        cnf: claims.cnf.clone(),
    }
}
