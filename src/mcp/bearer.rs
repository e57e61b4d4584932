//! The bearer check of `/mcp`: one complete check per request, in a fixed
//! order, ending in a [`CallContext`] or a typed [`Refusal`].
//!
//! 1. a token in the `Authorization` header, scheme `Bearer` or `DPoP`
//!    (none: [`Refusal::NoToken`]);
//! 2. no token in the query string as well ([`Refusal::TokenInQuery`]);
//! 3. signature, `kid`, `iss`, `exp`, `aud` = the resource
//!    ([`crate::oauth::access_token::verify`]);
//!    Then the token's binding ([`check_proof`]): a DPoP-bound token
//!    (`cnf.jkt`) only with the `DPoP` scheme and one proof for
//!    `POST <issuer>/mcp` with this token's `ath`, by the key the token is
//!    bound to, a nonce when they are required; an unbound token only as
//!    `Bearer`. The proof's `jti` is then spent in the shared store
//!    ([`spend_proof`]), after the rate limits and before the store
//!    look-up;
//! 4. one look-up in the shared store ([`crate::storage::call_context`]):
//!    grant active and the token's own, token not revoked, its signing key
//!    not withdrawn, credential epoch unchanged, user enabled and not
//!    required to change password, farm not suspended, the farm's connected
//!    apps on; for an automation's token, the automation instead of the
//!    grant and user: it exists, is enabled, its epoch unchanged;
//! 5. at least one MCP scope left (the token's scopes ∩ the grant's, or
//!    the automation's, now).
//!
//! Failures of 3 and 4 are all [`Refusal::InvalidToken`]: the client learns
//! only "this token is no good" (401 `invalid_token`); the reason is for the
//! log. A proof that fails is [`Refusal::InvalidDpopProof`] (401
//! `invalid_dpop_proof`), one without a good nonce [`Refusal::UseDpopNonce`].
//! The store failing at 3 (reloading keys) or 4 is [`AuthError::Store`],
//! never a refusal: a client told its token is invalid throws it away. No
//! HTTP types here; `http::mcp` turns a refusal into a response.

use time::OffsetDateTime;

use super::{CallContext, Caller, FlockScope};
use crate::domain::Issuer;
use crate::domain::{AutomationId, ClientId, FarmId, GrantId, Role, Scope, ScopeSet, UserId};
use crate::oauth::access_token::{self, AccessClaims, TokenRejection, TokenSubject, VerifyError};
use crate::oauth::dpop::{self, Expected, Proof, ProofError};
use crate::oauth::keys::{KeyError, Keys};
use crate::storage::call_context::{self, StoredAutomationContext, StoredCallContext};
use crate::storage::grants::LAST_USED_RESOLUTION;
use crate::storage::{Exec, Store, StoreError};

/// Why a request is not let through.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No bearer token: 401 with the plain challenge (no `error`).
    #[error("no bearer token")]
    NoToken,
    /// A token in the query string besides the header (RFC 6750 §2.3 is
    /// not offered: URLs end up in logs and referrers, threat 26).
    #[error("access token in the query string")]
    TokenInQuery,
    /// 401 `invalid_token`.
    #[error("invalid token: {0}")]
    InvalidToken(InvalidToken),
    /// 403 `insufficient_scope` naming these scopes.
    #[error("insufficient scope")]
    InsufficientScope(ScopeSet),
    /// 401 `invalid_dpop_proof`.
    #[error("invalid DPoP proof: {0}")]
    InvalidDpopProof(ProofError),
    /// 401 `use_dpop_nonce`, with this nonce to use.
    #[error("a DPoP nonce is required")]
    UseDpopNonce(String),
}

/// The reason behind a 401 `invalid_token`, for the log only.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidToken {
    #[error("{0}")]
    Jwt(TokenRejection),
    #[error("no such grant, user, membership or farm")]
    UnknownGrant,
    #[error("the grant was revoked")]
    GrantRevoked,
    #[error("the token was revoked")]
    TokenRevoked,
    #[error("the key that signed the token was withdrawn")]
    KeyWithdrawn,
    #[error("the token's user or client is not the grant's")]
    NotTheGrantsToken,
    #[error("the credential epoch moved")]
    EpochMoved,
    #[error("the user is disabled")]
    UserDisabled,
    #[error("the user must change their password")]
    MustChangePassword,
    #[error("the farm is suspended")]
    FarmSuspended,
    #[error("the farm's connected apps are off")]
    ConnectedAppsOff,
    /// An automation's row names a role it may not hold (an owner).
    #[error("the automation's role is not one an automation may hold")]
    UnknownRole,
    #[error("no such automation or farm")]
    UnknownAutomation,
    #[error("the automation is disabled")]
    AutomationDisabled,
    #[error("a DPoP-bound token was presented as a bearer token")]
    BoundTokenAsBearer,
    #[error("a bearer token was presented with the DPoP scheme")]
    NotBound,
}

/// A refusal, or the store failing: never a refusal, a 503 when the
/// database is out of reach (the token may be perfectly good), else a 500.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<KeyError> for AuthError {
    fn from(err: KeyError) -> Self {
        match err {
            KeyError::Store(err) => Self::Store(err),
            other => Self::Store(StoreError::backend(other.to_string())),
        }
    }
}

/// How the token was presented (RFC 6750 or RFC 9449 §7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Bearer,
    Dpop,
}

/// A token and the scheme it came with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Presented<'a> {
    pub scheme: Scheme,
    pub token: &'a str,
}

/// The token from an `Authorization` header value: `Bearer <token>` or
/// `DPoP <token>`, the scheme matched without regard to case (RFC 9110
/// §11.1).
pub fn credentials(header: Option<&str>) -> Result<Presented<'_>, Refusal> {
    let value = header.ok_or(Refusal::NoToken)?;
    let (scheme, token) = value.trim().split_once(' ').ok_or(Refusal::NoToken)?;
    let token = token.trim();
    let scheme = if scheme.eq_ignore_ascii_case("bearer") {
        Scheme::Bearer
    } else if scheme.eq_ignore_ascii_case("dpop") {
        Scheme::Dpop
    } else {
        return Err(Refusal::NoToken);
    };
    if token.is_empty() {
        return Err(Refusal::NoToken);
    }
    Ok(Presented { scheme, token })
}

/// Whether a query string carries an `access_token` parameter.
pub fn query_carries_token(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        url::form_urlencoded::parse(q.as_bytes()).any(|(name, _)| name == "access_token")
    })
}

/// Steps 1 and 2: the header's token, refusing one that also came in the query.
pub fn presented_token<'a>(
    authorization: Option<&'a str>,
    query: Option<&str>,
) -> Result<Presented<'a>, Refusal> {
    let presented = credentials(authorization)?;
    if query_carries_token(query) {
        return Err(Refusal::TokenInQuery);
    }
    Ok(presented)
}

/// Step 3b: the token's binding and the request's proof (`proofs`: the
/// values of its `DPoP` headers; `method`: its method). The proof, when
/// one was needed and is good, is returned for its `jti` to be spent.
/// Always checked afresh: the proof is per request, so nothing about it is
/// cached with the token's claims.
pub fn check_proof(
    presented: &Presented<'_>,
    claims: &AccessClaims,
    proofs: &[&str],
    method: &str,
    issuer: &Issuer,
    policy: &dpop::Policy,
    now: OffsetDateTime,
) -> Result<Option<Proof>, Refusal> {
    let invalid = |why| Err(Refusal::InvalidToken(why));
    let bound = match (presented.scheme, claims.jkt()) {
        (Scheme::Bearer, None) => return Ok(None),
        (Scheme::Bearer, Some(_)) => return invalid(InvalidToken::BoundTokenAsBearer),
        (Scheme::Dpop, None) => return invalid(InvalidToken::NotBound),
        (Scheme::Dpop, Some(jkt)) => jkt,
    };
    let uri = issuer.mcp_resource();
    let expected = Expected {
        method,
        uri: &uri,
        access_token: Some(presented.token),
        nonces: policy.required_nonces(),
    };
    let proof =
        dpop::verify(proofs, &expected, now).map_err(|why| proof_refusal(why, policy, now))?;
    if !crate::secrets::constant_time_eq(&proof.jkt, bound) {
        return Err(Refusal::InvalidDpopProof(ProofError::KeyMismatch));
    }
    Ok(Some(proof))
}

fn proof_refusal(why: ProofError, policy: &dpop::Policy, now: OffsetDateTime) -> Refusal {
    if why.wants_nonce() {
        Refusal::UseDpopNonce(policy.fresh_nonce(now))
    } else {
        Refusal::InvalidDpopProof(why)
    }
}

/// Spends the proof's `jti` in the shared store: a proof seen before, on
/// any replica, is [`ProofError::Replayed`].
pub async fn spend_proof(store: &Store, proof: &Proof) -> Result<(), AuthError> {
    dpop::spend(store, proof)
        .await?
        .map_err(|why| AuthError::Refused(Refusal::InvalidDpopProof(why)))
}

/// Step 3: the token's signature and claims. The key set failing to load
/// (a key another replica made, the store out of reach) is a store error,
/// not a refusal.
pub async fn verify_token(
    keys: &Keys,
    issuer: &Issuer,
    token: &str,
    now: OffsetDateTime,
) -> Result<AccessClaims, AuthError> {
    access_token::verify(keys, token, issuer.as_str(), &issuer.mcp_resource(), now)
        .await
        .map_err(|err| match err {
            VerifyError::Rejected(e) => Refusal::InvalidToken(InvalidToken::Jwt(e)).into(),
            VerifyError::Keys(err) => err.into(),
        })
}

/// A verified caller, and whether the grant's last use should be written.
#[derive(Clone, Debug)]
pub struct Authorized {
    pub context: CallContext,
    pub touch_last_used: bool,
}

/// Steps 4 and 5: the store's one look-up for a verified token.
pub async fn authorize(
    db: &mut impl Exec,
    claims: &AccessClaims,
    now: OffsetDateTime,
) -> Result<Authorized, AuthError> {
    match claims.subject() {
        Some(TokenSubject::Member { grant, .. }) => {
            let stored = call_context::load(db, grant, &claims.jti, &claims.kid).await?;
            Ok(decide(claims, stored, now)?)
        }
        Some(TokenSubject::Automation(automation)) => {
            let stored =
                call_context::load_automation(db, automation, &claims.jti, &claims.kid).await?;
            Ok(decide_automation(claims, stored, now)?)
        }
        None => Err(Refusal::InvalidToken(InvalidToken::UnknownGrant).into()),
    }
}

/// What the store's answer means for an automation's token, checked like
/// a person's: the same farm conditions, the automation instead of the
/// grant and user. Pure: the clock is passed.
pub fn decide_automation(
    claims: &AccessClaims,
    stored: Option<StoredAutomationContext>,
    now: OffsetDateTime,
) -> Result<Authorized, Refusal> {
    let invalid = |why| Err(Refusal::InvalidToken(why));
    let Some(s) = stored else {
        return invalid(InvalidToken::UnknownAutomation);
    };
    if claims.automation() != Some(AutomationId(s.automation_id)) {
        return invalid(InvalidToken::NotTheGrantsToken);
    }
    token_standing(s.token_revoked, s.key_withdrawn)?;
    if s.disabled {
        return invalid(InvalidToken::AutomationDisabled);
    }
    // Moved when it was disabled: enabling it again does not revive tokens.
    if claims.epoch != s.epoch {
        return invalid(InvalidToken::EpochMoved);
    }
    farm_open(s.farm_suspended, s.connected_apps_enabled)?;
    // Never an owner, whatever the row says (the table refuses one too).
    if s.role == Role::Owner {
        return invalid(InvalidToken::UnknownRole);
    }
    let role = s.role;
    let scopes = still_allowed(claims, &s.scope)?;
    let touch_last_used = touch_due(s.last_used_at, now);
    Ok(Authorized {
        context: CallContext {
            farm: FarmId(s.farm_id),
            caller: Caller::Automation {
                id: AutomationId(s.automation_id),
                name: s.name.into_string(),
            },
            role,
            flocks: FlockScope::resolve(s.flock_restricted, s.flocks),
            scopes,
            client_id: ClientId(claims.client_id.clone()),
        },
        touch_last_used,
    })
}

/// The token itself still stands: not revoked, and signed with a key not
/// withdrawn.
fn token_standing(token_revoked: bool, key_withdrawn: bool) -> Result<(), Refusal> {
    if token_revoked {
        return Err(Refusal::InvalidToken(InvalidToken::TokenRevoked));
    }
    if key_withdrawn {
        return Err(Refusal::InvalidToken(InvalidToken::KeyWithdrawn));
    }
    Ok(())
}

/// The farm still lets apps and automations in.
fn farm_open(suspended: bool, connected_apps_enabled: bool) -> Result<(), Refusal> {
    if suspended {
        return Err(Refusal::InvalidToken(InvalidToken::FarmSuspended));
    }
    if !connected_apps_enabled {
        return Err(Refusal::InvalidToken(InvalidToken::ConnectedAppsOff));
    }
    Ok(())
}

/// The token's scopes that the stored ones still allow; none left is
/// `insufficient_scope`.
fn still_allowed(claims: &AccessClaims, stored: &ScopeSet) -> Result<ScopeSet, Refusal> {
    let scopes = claims.scopes().intersection(stored);
    if scopes.is_empty() {
        return Err(Refusal::InsufficientScope(ScopeSet::all()));
    }
    Ok(scopes)
}

/// Whether `last_used_at` is older than [`LAST_USED_RESOLUTION`], so worth
/// writing again.
fn touch_due(last_used_at: Option<i64>, now: OffsetDateTime) -> bool {
    last_used_at.is_none_or(|at| at < (now - LAST_USED_RESOLUTION).unix_timestamp())
}

/// What the store's answer means for this token. Pure: the clock is passed.
pub fn decide(
    claims: &AccessClaims,
    stored: Option<StoredCallContext>,
    now: OffsetDateTime,
) -> Result<Authorized, Refusal> {
    let invalid = |why| Err(Refusal::InvalidToken(why));
    let Some(s) = stored else {
        return invalid(InvalidToken::UnknownGrant);
    };
    if s.grant_revoked {
        return invalid(InvalidToken::GrantRevoked);
    }
    token_standing(s.token_revoked, s.key_withdrawn)?;
    if claims.user_id().map(|u| u.0) != Some(s.user_id) || claims.client_id != s.client_id {
        return invalid(InvalidToken::NotTheGrantsToken);
    }
    if claims.epoch != s.user_epoch {
        return invalid(InvalidToken::EpochMoved);
    }
    if s.user_disabled {
        return invalid(InvalidToken::UserDisabled);
    }
    if s.must_change_password {
        return invalid(InvalidToken::MustChangePassword);
    }
    farm_open(s.farm_suspended, s.connected_apps_enabled)?;
    // The role was read as a `Role` from the store (an unknown one is a
    // storage error there, never a token that passes).
    let role = s.role;
    // A later consent may have narrowed the grant: the token keeps only
    // what the grant still allows.
    let scopes = still_allowed(claims, &s.grant_scope)?;
    let touch_last_used = touch_due(s.last_used_at, now);
    Ok(Authorized {
        context: CallContext {
            farm: FarmId(s.farm_id),
            caller: Caller::Member {
                user: UserId(s.user_id),
                grant: GrantId(s.grant_id),
            },
            role,
            flocks: FlockScope::resolve(s.flock_restricted, s.flocks),
            scopes,
            client_id: ClientId(s.client_id),
        },
        touch_last_used,
    })
}

/// The scope a `tools/call` of `tool` needs that the caller lacks, if the
/// role allows the tool (step-up); `None` when the call may go on (allowed,
/// or hidden: then it is refused like an unknown tool).
pub fn step_up_scope(context: &CallContext, tool: &str) -> Option<Scope> {
    match super::catalog::access(tool, context.role, &context.scopes) {
        super::catalog::ToolAccess::MissingScope(scope) => Some(scope),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Name;
    use time::macros::datetime;
    use uuid::Uuid;

    const NOW: OffsetDateTime = datetime!(2026-03-10 12:00 UTC);

    #[test]
    fn last_use_is_written_again_only_once_its_resolution_has_passed() {
        let boundary = (NOW - LAST_USED_RESOLUTION).unix_timestamp();
        assert!(touch_due(None, NOW));
        assert!(touch_due(Some(boundary - 1), NOW));
        assert!(!touch_due(Some(boundary), NOW));
        assert!(!touch_due(Some(NOW.unix_timestamp()), NOW));
    }

    fn claims(user: Uuid) -> AccessClaims {
        AccessClaims {
            iss: "https://coop.example".into(),
            sub: user.to_string(),
            aud: "https://coop.example/mcp".into(),
            client_id: "client-1".into(),
            scope: "farm:read daily-entries:write".into(),
            iat: NOW.unix_timestamp(),
            exp: NOW.unix_timestamp() + 900,
            jti: "jti-1".into(),
            grant_id: Uuid::nil().to_string(),
            epoch: 2,
            cnf: None,
            kid: "key-1".into(),
        }
    }

    fn stored(user: Uuid) -> StoredCallContext {
        StoredCallContext {
            grant_id: Uuid::nil(),
            farm_id: Uuid::now_v7(),
            user_id: user,
            client_id: "client-1".into(),
            grant_scope: ScopeSet::from_stored("farm:read"),
            grant_revoked: false,
            last_used_at: Some(NOW.unix_timestamp() - 30),
            user_epoch: 2,
            user_disabled: false,
            must_change_password: false,
            role: Role::Worker,
            flock_restricted: true,
            flocks: vec![],
            farm_suspended: false,
            connected_apps_enabled: true,
            token_revoked: false,
            key_withdrawn: false,
        }
    }

    /// Breaks one fact of a stored row.
    type BreaksOne<S> = fn(&mut S);

    /// Each case breaks one fact of a `fresh` stored row: `decide` must
    /// refuse the token for that very reason.
    fn refused_for_each<S, T: std::fmt::Debug, const N: usize>(
        cases: [(BreaksOne<S>, InvalidToken); N],
        fresh: impl Fn() -> S,
        decide: impl Fn(S) -> Result<T, Refusal>,
    ) {
        for (breaks, why) in cases {
            let mut s = fresh();
            breaks(&mut s);
            let label = why.to_string();
            assert_eq!(
                decide(s).unwrap_err(),
                Refusal::InvalidToken(why),
                "{label}"
            );
        }
    }

    #[test]
    fn each_store_condition_refuses_the_token() {
        let user = Uuid::now_v7();
        let c = claims(user);
        type Breaks = fn(&mut StoredCallContext);
        let cases: [(Breaks, InvalidToken); 10] = [
            (|s| s.grant_revoked = true, InvalidToken::GrantRevoked),
            (|s| s.token_revoked = true, InvalidToken::TokenRevoked),
            (|s| s.key_withdrawn = true, InvalidToken::KeyWithdrawn),
            (|s| s.user_epoch = 3, InvalidToken::EpochMoved),
            (|s| s.user_disabled = true, InvalidToken::UserDisabled),
            (
                |s| s.must_change_password = true,
                InvalidToken::MustChangePassword,
            ),
            (|s| s.farm_suspended = true, InvalidToken::FarmSuspended),
            (
                |s| s.connected_apps_enabled = false,
                InvalidToken::ConnectedAppsOff,
            ),
            (
                |s| s.client_id = "other".into(),
                InvalidToken::NotTheGrantsToken,
            ),
            (
                |s| s.user_id = Uuid::now_v7(),
                InvalidToken::NotTheGrantsToken,
            ),
        ];
        refused_for_each(cases, || stored(user), |s| decide(&c, Some(s), NOW));
        assert_eq!(
            decide(&c, None, NOW).unwrap_err(),
            Refusal::InvalidToken(InvalidToken::UnknownGrant)
        );
    }

    #[test]
    fn a_good_token_yields_the_narrowed_context_and_touches_once_a_minute() {
        let user = Uuid::now_v7();
        let ok = decide(&claims(user), Some(stored(user)), NOW).unwrap();
        assert_eq!(ok.context.role, Role::Worker);
        // The grant was narrowed to read: the token's write scope is dropped.
        assert_eq!(ok.context.scopes, ScopeSet::from_scopes([Scope::FarmRead]));
        assert_eq!(ok.context.flocks.restricted_to(), Some(&[][..]));
        assert!(!ok.touch_last_used);
        let mut old = stored(user);
        old.last_used_at = Some(NOW.unix_timestamp() - 61);
        assert!(
            decide(&claims(user), Some(old), NOW)
                .unwrap()
                .touch_last_used
        );
        assert_eq!(
            step_up_scope(&ok.context, "record_daily_entry"),
            Some(Scope::DailyEntriesWrite)
        );
        assert_eq!(step_up_scope(&ok.context, "stock_levels"), None);
    }

    #[test]
    fn no_mcp_scope_left_is_insufficient_scope() {
        let user = Uuid::now_v7();
        let mut c = claims(user);
        c.scope = "openid".into();
        assert_eq!(
            decide(&c, Some(stored(user)), NOW).unwrap_err(),
            Refusal::InsufficientScope(ScopeSet::all())
        );
    }

    fn automation_claims(automation: AutomationId) -> AccessClaims {
        AccessClaims {
            sub: automation.client_id(),
            client_id: automation.client_id(),
            grant_id: String::new(),
            epoch: 1,
            ..claims(Uuid::nil())
        }
    }

    fn stored_automation(automation: AutomationId) -> StoredAutomationContext {
        StoredAutomationContext {
            automation_id: automation.0,
            farm_id: Uuid::now_v7(),
            name: Name::parse("Barn scale").unwrap(),
            role: Role::Worker,
            flock_restricted: false,
            flocks: vec![],
            scope: ScopeSet::from_stored("daily-entries:write"),
            epoch: 1,
            disabled: false,
            last_used_at: None,
            farm_suspended: false,
            connected_apps_enabled: true,
            token_revoked: false,
            key_withdrawn: false,
        }
    }

    #[test]
    fn an_automations_token_is_checked_like_a_persons() {
        let automation = AutomationId::new();
        let c = automation_claims(automation);
        let ok = decide_automation(&c, Some(stored_automation(automation)), NOW).unwrap();
        assert_eq!(
            ok.context.caller,
            Caller::Automation {
                id: automation,
                name: "Barn scale".into()
            }
        );
        assert_eq!(ok.context.user(), None);
        assert_eq!(ok.context.grant(), None);
        assert_eq!(ok.context.role, Role::Worker);
        // Narrowed to what the automation may hold now.
        assert_eq!(
            ok.context.scopes,
            ScopeSet::from_scopes([Scope::DailyEntriesWrite])
        );
        assert!(ok.touch_last_used);

        type Breaks = fn(&mut StoredAutomationContext);
        let cases: [(Breaks, InvalidToken); 8] = [
            (|s| s.disabled = true, InvalidToken::AutomationDisabled),
            (|s| s.epoch = 2, InvalidToken::EpochMoved),
            (|s| s.token_revoked = true, InvalidToken::TokenRevoked),
            (|s| s.key_withdrawn = true, InvalidToken::KeyWithdrawn),
            (|s| s.farm_suspended = true, InvalidToken::FarmSuspended),
            (
                |s| s.connected_apps_enabled = false,
                InvalidToken::ConnectedAppsOff,
            ),
            (|s| s.role = Role::Owner, InvalidToken::UnknownRole),
            (
                |s| s.automation_id = Uuid::now_v7(),
                InvalidToken::NotTheGrantsToken,
            ),
        ];
        refused_for_each(
            cases,
            || stored_automation(automation),
            |s| decide_automation(&c, Some(s), NOW),
        );
        assert_eq!(
            decide_automation(&c, None, NOW).unwrap_err(),
            Refusal::InvalidToken(InvalidToken::UnknownAutomation)
        );
        let mut read_only = stored_automation(automation);
        read_only.scope = ScopeSet::from_stored("farm:read");
        let mut c = c;
        c.scope = "daily-entries:write".into();
        assert_eq!(
            decide_automation(&c, Some(read_only), NOW).unwrap_err(),
            Refusal::InsufficientScope(ScopeSet::all())
        );
    }

    #[test]
    fn the_binding_is_checked_on_every_call() {
        use crate::oauth::access_token::Confirmation;
        use crate::oauth::dpop::testing::{ProofKey, proof};
        let issuer = Issuer::parse("https://coop.example").unwrap();
        let policy = dpop::Policy::new(
            dpop::NonceKey::new(crate::secrets::MacKey::derive(b"k", "dpop nonce")),
            false,
        );
        let key = ProofKey::es256();
        let mut bound = claims(Uuid::now_v7());
        bound.cnf = Some(Confirmation {
            jkt: key.thumbprint(),
        });
        let unbound = claims(Uuid::now_v7());
        let as_bearer = Presented {
            scheme: Scheme::Bearer,
            token: "tok",
        };
        let as_dpop = Presented {
            scheme: Scheme::Dpop,
            token: "tok",
        };
        let good = proof(
            &key,
            &serde_json::json!({
                "jti": "j", "htm": "POST", "htu": "https://coop.example/mcp",
                "iat": NOW.unix_timestamp(), "ath": dpop::token_hash("tok"),
            }),
        );
        let check = |presented: &Presented<'_>, claims: &AccessClaims, proofs: &[&str]| {
            check_proof(presented, claims, proofs, "POST", &issuer, &policy, NOW)
        };
        assert_eq!(check(&as_bearer, &unbound, &[]), Ok(None));
        assert_eq!(
            check(&as_bearer, &bound, &[&good]),
            Err(Refusal::InvalidToken(InvalidToken::BoundTokenAsBearer))
        );
        assert_eq!(
            check(&as_dpop, &unbound, &[&good]),
            Err(Refusal::InvalidToken(InvalidToken::NotBound))
        );
        assert_eq!(
            check(&as_dpop, &bound, &[&good]).unwrap().unwrap().jkt,
            key.thumbprint()
        );
        assert_eq!(
            check(&as_dpop, &bound, &[]),
            Err(Refusal::InvalidDpopProof(ProofError::Missing))
        );
        let other = ProofKey::es256();
        let by_other = proof(
            &other,
            &serde_json::json!({
                "jti": "j", "htm": "POST", "htu": "https://coop.example/mcp",
                "iat": NOW.unix_timestamp(), "ath": dpop::token_hash("tok"),
            }),
        );
        assert_eq!(
            check(&as_dpop, &bound, &[&by_other]),
            Err(Refusal::InvalidDpopProof(ProofError::KeyMismatch))
        );
        // With nonces required, a proof without one asks for it.
        let strict = dpop::Policy::new(
            dpop::NonceKey::new(crate::secrets::MacKey::derive(b"k", "dpop nonce")),
            true,
        );
        assert!(matches!(
            check_proof(&as_dpop, &bound, &[&good], "POST", &issuer, &strict, NOW),
            Err(Refusal::UseDpopNonce(nonce)) if dpop::NonceKey::new(crate::secrets::MacKey::derive(b"k", "dpop nonce")).accepts(&nonce, NOW)
        ));
    }

    #[test]
    fn the_header_must_carry_a_bearer_token_and_the_query_none() {
        assert_eq!(credentials(None), Err(Refusal::NoToken));
        assert_eq!(credentials(Some("Basic abc")), Err(Refusal::NoToken));
        assert_eq!(credentials(Some("Bearer ")), Err(Refusal::NoToken));
        assert_eq!(
            credentials(Some("bearer abc")),
            Ok(Presented {
                scheme: Scheme::Bearer,
                token: "abc"
            })
        );
        assert_eq!(
            credentials(Some("dpop abc")),
            Ok(Presented {
                scheme: Scheme::Dpop,
                token: "abc"
            })
        );
        assert_eq!(credentials(Some("DPoP ")), Err(Refusal::NoToken));
        assert_eq!(
            presented_token(Some("Bearer abc"), Some("x=1&access_token=abc")),
            Err(Refusal::TokenInQuery)
        );
        assert_eq!(
            presented_token(Some("Bearer abc"), Some("x=1")).map(|p| p.token),
            Ok("abc")
        );
        assert_eq!(
            presented_token(None, Some("access_token=abc")),
            Err(Refusal::NoToken)
        );
    }
}
