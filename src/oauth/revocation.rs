//! Token revocation (RFC 7009).
//!
//! - A **refresh token** ends its grant: the connected app is disconnected,
//!   and every token the grant issued dies on its next use (each check reads
//!   the grant).
//! - An **access token** is recorded by its `jti` until it expires, and only
//!   it dies: its grant, and the refresh token the client holds, live on.
//!   A client that wants to disconnect revokes its refresh token; a client
//!   that only throws one access token away (a sign-out of one window, a
//!   token it suspects leaked) does not lose the connection. The `/mcp`
//!   check reads both the grant and `revoked_access_tokens`, so either kind
//!   of revocation takes effect on the very next call.
//! - An unknown, expired or malformed token is not an error (RFC 7009 §2.2:
//!   the answer is 200 either way), so revocation reveals nothing.
//! - A token issued to another client is refused `invalid_request` and left
//!   alone (§2.1: the server checks the token was issued to the caller).

use time::OffsetDateTime;

use crate::oauth::access_token::{self, VerifyError};
use crate::oauth::client::Client;
use crate::oauth::error::OAuthError;
use crate::oauth::presented_token::{TokenHint, TokenParams};
use crate::oauth::token::TokenContext;
use crate::secrets;
use crate::storage::audit::{self, AuditEvent, AuditKind};
use crate::storage::{grants, refresh_tokens, revocations};

/// What a revocation did (for the log and the tests of this module).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revoked {
    Grant,
    AccessToken,
    Nothing,
}

/// Revokes the presented token for `client`. The hint only chooses which
/// kind is tried first (RFC 7009 §2.1); both are always tried.
pub async fn revoke(
    ctx: &TokenContext<'_>,
    client: &Client,
    presented: &TokenParams,
    now: OffsetDateTime,
) -> Result<Revoked, OAuthError> {
    let attempt = Attempt {
        ctx,
        client,
        token: presented.token.expose(),
        now,
    };
    let order = match presented.hint {
        Some(TokenHint::AccessToken) => [TokenHint::AccessToken, TokenHint::RefreshToken],
        _ => [TokenHint::RefreshToken, TokenHint::AccessToken],
    };
    for kind in order {
        let done = match kind {
            TokenHint::AccessToken => attempt.access_token().await?,
            TokenHint::RefreshToken => attempt.refresh_token().await?,
        };
        if let Some(done) = done {
            return Ok(done);
        }
    }
    Ok(Revoked::Nothing)
}

fn foreign() -> OAuthError {
    OAuthError::invalid_request("the token was not issued to this client")
}

/// One presented token, tried as each kind in turn: `Ok(None)` when it is
/// not one of that kind Coop issued.
struct Attempt<'a> {
    ctx: &'a TokenContext<'a>,
    client: &'a Client,
    token: &'a str,
    now: OffsetDateTime,
}

impl Attempt<'_> {
    async fn refresh_token(&self) -> Result<Option<Revoked>, OAuthError> {
        let token_hash = secrets::hash_secret(self.token);
        let found = refresh_tokens::find(&mut self.ctx.store.read().await?, &token_hash).await?;
        let Some(row) = found else {
            return Ok(None);
        };
        if row.grant.grant_client_id != self.client.client_id {
            return Err(foreign());
        }
        let mut tx = self.ctx.store.write().await?;
        if grants::revoke(
            &mut tx,
            row.grant.id(),
            "refresh token revoked by the client",
            self.now,
        )
        .await?
        {
            let mut event = AuditEvent::new(AuditKind::GrantRevoked);
            event.farm = Some(row.grant.farm());
            event.user = Some(row.grant.user());
            event.client_id = Some(&self.client.client_id);
            event.grant = Some(row.grant.id());
            event.detail = serde_json::json!({ "via": "revocation_endpoint" });
            audit::record(&mut tx, &event, self.now).await?;
        }
        tx.commit().await?;
        Ok(Some(Revoked::Grant))
    }

    async fn access_token(&self) -> Result<Option<Revoked>, OAuthError> {
        let audience = self.ctx.issuer.mcp_resource();
        let claims = match access_token::verify(
            self.ctx.keys,
            self.token,
            self.ctx.issuer.as_str(),
            &audience,
            self.now,
        )
        .await
        {
            Ok(claims) => claims,
            Err(VerifyError::Rejected(_)) => return Ok(None),
            // Not knowing whether the token is Coop's is no "nothing to
            // revoke": answering 200 would let the client believe it done.
            Err(VerifyError::Keys(err)) => return Err(err.into()),
        };
        if claims.client_id != self.client.client_id {
            return Err(foreign());
        }
        let Some(grant) = claims.grant_id() else {
            return Ok(None);
        };
        let mut tx = self.ctx.store.write().await?;
        revocations::revoke_access_token(&mut tx, &claims.jti, grant, claims.exp).await?;
        let mut event = AuditEvent::new(AuditKind::AccessTokenRevoked);
        event.user = claims.user_id();
        if let Some(status) = grants::status(&mut tx, grant).await? {
            event.farm = Some(status.farm());
        }
        event.client_id = Some(&self.client.client_id);
        event.grant = Some(grant);
        event.detail = serde_json::json!({ "jti": claims.jti, "via": "revocation_endpoint" });
        audit::record(&mut tx, &event, self.now).await?;
        tx.commit().await?;
        Ok(Some(Revoked::AccessToken))
    }
}
