//! Token introspection (RFC 7662): who may ask, what an answer says, and
//! the refresh-token half.
//!
//! - Only a confidential client registered for it (`coop admin client add
//!   --introspection`) may ask; any other caller, however well it
//!   authenticates, is refused like a stranger (401 `invalid_client`): an
//!   ordinary client has no business learning about tokens, and a public
//!   one proves nothing.
//! - An access token is active only if the per-call check of `/mcp` passes
//!   for it at that moment; that check is the MCP layer's, so the access
//!   token half lives beside it (`mcp::introspection`) and comes in here as
//!   an [`AccessTokens`]; [`introspect`] decides which half is asked first.
//! - A refresh token is active only for the client it was issued to, and
//!   only while it could still be used (unspent, unexpired, its grant
//!   usable); for anyone else it is `active: false`, as is anything
//!   unknown, so an answer never tells a caller about another's token.

use std::future::Future;

use serde::Serialize;
use time::OffsetDateTime;

use crate::oauth::access_token::Confirmation;
use crate::oauth::client::Client;
use crate::oauth::error::OAuthError;
use crate::oauth::presented_token::{TokenHint, TokenParams};
use crate::oauth::token::check_grant_usable;
use crate::secrets;
use crate::storage::{Store, clients, refresh_tokens};

/// An introspection answer. Inactive: `{"active": false}` and nothing else
/// (RFC 7662 §2.2); active: the token's facts, never a `null`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Introspection {
    pub active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    /// `Bearer` for an access token (`DPoP` for one bound to a key);
    /// absent for a refresh token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_type: Option<&'static str>,
    /// The key a DPoP-bound access token is bound to (RFC 9449 §6.2), so a
    /// resource server behind the caller can check the proof.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cnf: Option<Confirmation>,
}

impl Introspection {
    pub fn inactive() -> Self {
        Self::default()
    }
}

/// The access-token half of introspection: the resource's own check.
pub trait AccessTokens {
    /// Why no answer could be given; never the token's fault.
    type Error: Into<OAuthError>;

    /// `token` as an access token: `None` when it is not one Coop signed
    /// (or no longer verifies); inactive when the per-call check refuses it.
    fn introspect(
        &self,
        token: &str,
        now: OffsetDateTime,
    ) -> impl Future<Output = Result<Option<Introspection>, Self::Error>> + Send;
}

/// Introspects the presented token for `caller` (already authenticated
/// and allowed to introspect). The hint only chooses which kind is tried
/// first.
pub async fn introspect(
    store: &Store,
    access_tokens: &impl AccessTokens,
    caller: &Client,
    presented: &TokenParams,
    now: OffsetDateTime,
) -> Result<Introspection, OAuthError> {
    let token = presented.token.expose();
    if presented.hint == Some(TokenHint::RefreshToken)
        && let Some(answer) = refresh_token(store, caller, token, now).await?
    {
        return Ok(answer);
    }
    if let Some(answer) = access_tokens
        .introspect(token, now)
        .await
        .map_err(Into::into)?
    {
        return Ok(answer);
    }
    Ok(refresh_token(store, caller, token, now)
        .await?
        .unwrap_or_else(Introspection::inactive))
}

/// The caller must be a client registered for introspection; anyone else
/// is `invalid_client`, the same answer as an unknown client.
pub async fn require_introspector(
    store: &Store,
    caller: &Client,
    basic: bool,
) -> Result<(), OAuthError> {
    let allowed = caller.auth_method().is_confidential()
        && clients::may_introspect(&mut store.read().await?, &caller.client_id).await?;
    if !allowed {
        tracing::warn!(client_id = %caller.client_id, "introspection by a client not registered for it");
        return Err(OAuthError::invalid_client(
            "the client is not registered for introspection",
            basic,
        ));
    }
    Ok(())
}

/// `token` as a refresh token: `None` when no refresh token has that
/// value; inactive unless `caller` is its client and it could still be used.
pub async fn refresh_token(
    store: &Store,
    caller: &Client,
    token: &str,
    now: OffsetDateTime,
) -> Result<Option<Introspection>, OAuthError> {
    let found =
        refresh_tokens::find(&mut store.read().await?, &secrets::hash_secret(token)).await?;
    let Some(row) = found else {
        return Ok(None);
    };
    let usable = row.grant.grant_client_id == caller.client_id
        && row.used_at.is_none()
        && row.expires_at > now.unix_timestamp()
        && check_grant_usable(&row.grant, row.grant.grant_epoch).is_ok();
    if !usable {
        return Ok(Some(Introspection::inactive()));
    }
    let scope = row.scope.intersection(&row.grant.grant_scope);
    Ok(Some(Introspection {
        active: true,
        scope: Some(scope.to_wire()),
        client_id: Some(row.grant.grant_client_id.clone()),
        sub: Some(row.grant.user().to_string()),
        exp: Some(row.expires_at),
        ..Introspection::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::AuthMethod;
    use crate::oauth::params::Params;
    use crate::storage::StoreError;
    use crate::testing::TestStore;

    /// An access-token half with a fixed answer (`Err`: it could not tell).
    struct Fixed(Result<Option<Introspection>, ()>);

    impl AccessTokens for Fixed {
        type Error = StoreError;

        async fn introspect(
            &self,
            _: &str,
            _: OffsetDateTime,
        ) -> Result<Option<Introspection>, StoreError> {
            self.0
                .clone()
                .map_err(|()| StoreError::backend("the key set could not be read"))
        }
    }

    /// A token that is no refresh token: the access half's word is the
    /// answer, whatever the hint; neither half knowing it is inactive, and
    /// the access half failing is an error, never "inactive" (which would
    /// read as a revocation).
    #[tokio::test]
    async fn the_access_half_answers_for_what_is_no_refresh_token() {
        let db = TestStore::sqlite().await;
        let now = time::macros::datetime!(2026-03-10 12:00 UTC);
        let caller = Client::with_method(AuthMethod::ClientSecretBasic);
        let active = Introspection {
            active: true,
            jti: Some("j".into()),
            ..Introspection::default()
        };
        for form in ["token=t", "token=t&token_type_hint=refresh_token"] {
            let presented = TokenParams::parse(&Params::parse(form.as_bytes())).unwrap();
            let ask =
                async |half: Fixed| introspect(&db.store, &half, &caller, &presented, now).await;
            assert_eq!(ask(Fixed(Ok(Some(active.clone())))).await.unwrap(), active);
            assert_eq!(
                ask(Fixed(Ok(None))).await.unwrap(),
                Introspection::inactive()
            );
            assert!(ask(Fixed(Err(()))).await.is_err(), "{form}");
        }
    }

    #[test]
    fn an_inactive_answer_says_only_that() {
        assert_eq!(
            serde_json::to_value(Introspection::inactive()).unwrap(),
            serde_json::json!({ "active": false })
        );
    }
}
