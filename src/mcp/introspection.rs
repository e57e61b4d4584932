//! The access-token half of introspection (RFC 7662), for resource servers
//! and gateways in front of other MCP servers: a token is `active` only if
//! the very check `/mcp` runs on every call passes for it at that moment
//! ([`super::bearer`]: signature and claims, then the one store look-up).
//! So every kind of revocation, a moved credential epoch, a disabled person
//! or automation, a suspended farm and the farm's connected apps turned
//! off all answer `active: false`, on every replica, with nothing cached.
//!
//! Who may ask, the answer's shape, refresh tokens and which half is asked
//! first are [`crate::oauth::introspection`]'s; this half is here, beside
//! the bearer check, because the check it asks is the resource's.

use time::OffsetDateTime;

use super::bearer::{self, AuthError};
use super::context::CallContext;
use crate::domain::Issuer;
use crate::oauth::access_token::AccessClaims;
use crate::oauth::error::OAuthError;
use crate::oauth::introspection::{AccessTokens, Introspection};
use crate::oauth::keys::Keys;
use crate::storage::{Store, StoreError};

/// Why an access token could not be introspected: never the token's fault.
#[derive(Debug, thiserror::Error)]
pub enum IntrospectionError {
    /// The key set or the store could not be read: that says nothing about
    /// the token (answering "inactive" would look like a revocation).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<IntrospectionError> for OAuthError {
    fn from(err: IntrospectionError) -> Self {
        match err {
            IntrospectionError::Store(err) => err.into(),
        }
    }
}

/// What an answer needs from the running server.
pub struct Introspector<'a> {
    pub store: &'a Store,
    pub keys: &'a Keys,
    pub issuer: &'a Issuer,
}

impl AccessTokens for Introspector<'_> {
    type Error = IntrospectionError;

    /// Signature and claims first: a token that fails them is not an
    /// access token of Coop's (`None`), so the refresh half may know it.
    async fn introspect(
        &self,
        token: &str,
        now: OffsetDateTime,
    ) -> Result<Option<Introspection>, IntrospectionError> {
        let claims = match bearer::verify_token(self.keys, self.issuer, token, now).await {
            Ok(claims) => claims,
            Err(AuthError::Refused(_)) => return Ok(None),
            Err(AuthError::Store(err)) => return Err(err.into()),
        };
        let authorized = {
            let mut db = self.store.read().await?;
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
}

/// An active access token's facts; `scope` is what the token may do now
/// (its scopes narrowed by a later consent or the automation's allowance).
fn active(claims: &AccessClaims, context: &CallContext) -> Introspection {
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
