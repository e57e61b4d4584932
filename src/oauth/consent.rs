//! After the checks: may this person approve, must they, and what happens
//! when they do.
//!
//! Order of decisions for a signed-in person and a checked request
//! ([`next_step`]):
//! 1. their farm is suspended or has connected apps off → refused, with a
//!    page saying so (no code can be issued, so nothing is asked);
//! 2. an active grant, made under the person's current credential epoch,
//!    already holds every scope asked for → no screen, a code at once
//!    (threat 12: only a client approved before is ever approved silently);
//! 3. the password was last entered more than [`STEP_UP_AFTER`] ago → ask
//!    for it again;
//! 4. otherwise → the consent screen.
//!
//! Approving records the consent (creating, narrowing or widening the
//! (user, client) grant), issues a code and writes the audit entry; denying
//! writes the audit entry. Codes are 256-bit random values stored only as
//! hashes, single use, valid for [`CODE_TTL`].

use time::OffsetDateTime;

use crate::config::Issuer;
use crate::domain::{GrantId, Scope, ScopeSet};
use crate::oauth::authorize::{AuthorizationRequest, RedirectRefusal};
use crate::secrets;
use crate::storage::audit::{self, AuditEvent, AuditKind};
use crate::storage::codes::{self, NewCode};
use crate::storage::grants::{self, Consent, ConsentOutcome, GrantStatus};
use crate::storage::users::Account;
use crate::storage::{Store, StoreError, Tx};

/// A consent needs the password entered at most this long ago.
pub const STEP_UP_AFTER: time::Duration = time::Duration::minutes(10);

/// How long a code may wait to be exchanged.
pub const CODE_TTL: time::Duration = time::Duration::seconds(60);

/// Why no one on this farm can connect an app right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FarmRefusal {
    Suspended,
    ConnectedAppsOff,
}

impl FarmRefusal {
    pub fn message(self) -> &'static str {
        match self {
            Self::Suspended => {
                "Your farm is suspended, so no app can be connected to it. Ask the people who run Coop for your farm."
            }
            Self::ConnectedAppsOff => {
                "Connected apps are turned off for your farm. Your farm's owner can turn them back on."
            }
        }
    }
}

/// What happens next for a signed-in person and a checked request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NextStep {
    Refused(FarmRefusal),
    /// Approved before: issue a code under this grant without asking.
    AlreadyApproved(GrantId),
    ConfirmPassword,
    AskConsent,
}

/// The farm's switches, as the account row carries them.
pub struct FarmState {
    pub suspended: bool,
    pub connected_apps_enabled: bool,
}

/// Decides the next step (see the module documentation for the order).
pub fn next_step(
    request: &AuthorizationRequest,
    farm: &FarmState,
    user_epoch: i64,
    existing: Option<&GrantStatus>,
    password_entered_at: i64,
    now: OffsetDateTime,
) -> NextStep {
    if farm.suspended {
        return NextStep::Refused(FarmRefusal::Suspended);
    }
    if !farm.connected_apps_enabled {
        return NextStep::Refused(FarmRefusal::ConnectedAppsOff);
    }
    if let Some(grant) = existing.filter(|g| covers(g, request, user_epoch)) {
        return NextStep::AlreadyApproved(grant.id());
    }
    if now.unix_timestamp() - password_entered_at > STEP_UP_AFTER.whole_seconds() {
        return NextStep::ConfirmPassword;
    }
    NextStep::AskConsent
}

/// Whether an existing grant already approves everything `request` asks.
fn covers(grant: &GrantStatus, request: &AuthorizationRequest, user_epoch: i64) -> bool {
    grant.grant_revoked_at.is_none()
        && grant.grant_epoch == user_epoch
        && grant.grant_resource == request.resource
        && request
            .scopes()
            .is_subset(&ScopeSet::from_stored(&grant.grant_scope))
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("tick at least one of the permissions, or choose Deny")]
pub struct NothingGranted;

/// The scopes approved: the ticked boxes that were asked for (a box for a
/// scope not asked for is ignored, never granted). At least one.
pub fn approved_scopes(asked: &ScopeSet, ticked: &[&str]) -> Result<ScopeSet, NothingGranted> {
    let ticked = ScopeSet::from_scopes(ticked.iter().filter_map(|s| Scope::parse(s)));
    let approved = ticked.intersection(asked);
    if approved.is_empty() {
        Err(NothingGranted)
    } else {
        Ok(approved)
    }
}

/// The grant's scopes after a consent: an answer concerns only the scopes
/// that were asked, so those approved are added, those asked but left
/// unticked removed, and the others kept (two tabs asking for different
/// scopes must not undo each other).
pub fn grant_scope_after(
    before: Option<&ScopeSet>,
    asked: &ScopeSet,
    approved: &ScopeSet,
) -> ScopeSet {
    let kept = before
        .map(|b| ScopeSet::from_scopes(b.iter().filter(|s| !asked.contains(*s))))
        .unwrap_or_default();
    kept.union(approved)
}

/// Records an approval: the grant, its audit rows and a code for `scope`,
/// in one transaction. Returns the code (to send to the client, once).
pub async fn approve(
    store: &Store,
    request: &AuthorizationRequest,
    account: &Account,
    scope: &ScopeSet,
    now: OffsetDateTime,
) -> Result<String, StoreError> {
    match approve_once(store, request, account, scope, now).await {
        // PostgreSQL: a consent for the same (user, client) committed
        // between our read and our insert. Once more finds its grant.
        Err(StoreError::Conflict(_)) => approve_once(store, request, account, scope, now).await,
        other => other,
    }
}

async fn approve_once(
    store: &Store,
    request: &AuthorizationRequest,
    account: &Account,
    scope: &ScopeSet,
    now: OffsetDateTime,
) -> Result<String, StoreError> {
    let wire = scope.to_wire();
    let asked = request.scopes();
    let scope_after = |before: Option<&str>| {
        grant_scope_after(before.map(ScopeSet::from_stored).as_ref(), &asked, scope).to_wire()
    };
    let mut tx = store.write().await?;
    let outcome = grants::record_consent(
        &mut tx,
        &Consent {
            farm: account.farm(),
            user: account.user_id(),
            client_id: &request.client_id,
            scope_after: &scope_after,
            resource: &request.resource,
            epoch: account.credential_epoch,
        },
        now,
    )
    .await?;
    let mut event = AuditEvent::new(AuditKind::Consent);
    event.farm = Some(account.farm());
    event.user = Some(account.user_id());
    event.client_id = Some(&request.client_id);
    event.grant = Some(outcome.grant());
    event.detail = serde_json::json!({
        "scope": wire,
        "asked": request.scope,
        "grant": match outcome {
            ConsentOutcome::Created(_) => "created",
            ConsentOutcome::Updated(_) => "updated",
            ConsentOutcome::Replaced { .. } => "replaced",
        },
    });
    audit::record(&mut tx, &event, now).await?;
    if let ConsentOutcome::Replaced { old, .. } = outcome {
        // The old grant ended here: a grant event of its own, so the log
        // shows when its tokens stopped working and why.
        let mut ended = AuditEvent::new(AuditKind::GrantRevoked);
        ended.farm = Some(account.farm());
        ended.user = Some(account.user_id());
        ended.client_id = Some(&request.client_id);
        ended.grant = Some(old);
        ended.detail = serde_json::json!({
            "via": "consent",
            "reason": "credential epoch moved",
            "replaced_by": outcome.grant().0,
        });
        audit::record(&mut tx, &ended, now).await?;
    }
    let code = insert_code(&mut tx, request, account, outcome.grant(), scope, now).await?;
    tx.commit().await?;
    Ok(code)
}

/// Records a refusal.
pub async fn deny(
    store: &Store,
    request: &AuthorizationRequest,
    account: &Account,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    let mut event = AuditEvent::new(AuditKind::ConsentDenied);
    event.farm = Some(account.farm());
    event.user = Some(account.user_id());
    event.client_id = Some(&request.client_id);
    event.detail = serde_json::json!({ "asked": request.scope });
    let mut tx = store.write().await?;
    audit::record(&mut tx, &event, now).await?;
    tx.commit().await
}

/// A new code under `grant`, bound to the client, redirect URI, PKCE
/// challenge, resource, scopes and the person's credential epoch.
pub async fn issue_code(
    store: &Store,
    request: &AuthorizationRequest,
    account: &Account,
    grant: GrantId,
    scope: &ScopeSet,
    now: OffsetDateTime,
) -> Result<String, StoreError> {
    let mut tx = store.write().await?;
    let code = insert_code(&mut tx, request, account, grant, scope, now).await?;
    tx.commit().await?;
    Ok(code)
}

async fn insert_code(
    tx: &mut Tx,
    request: &AuthorizationRequest,
    account: &Account,
    grant: GrantId,
    scope: &ScopeSet,
    now: OffsetDateTime,
) -> Result<String, StoreError> {
    let code = secrets::random_token(32);
    let hash = secrets::hash_secret(&code);
    codes::insert(
        tx,
        &NewCode {
            code_hash: &hash,
            grant,
            client_id: &request.client_id,
            user: account.user_id(),
            redirect_uri: &request.redirect_uri,
            code_challenge: &request.code_challenge,
            resource: &request.resource,
            scope: &scope.to_wire(),
            epoch: account.credential_epoch,
            expires_at: now + CODE_TTL,
        },
        now,
    )
    .await?;
    Ok(code)
}

/// The redirect that hands the code to the client: `code`, `state` (when
/// the client sent one) and `iss` (RFC 9207), added with the URL encoder to
/// whatever query the registered URI already has.
pub fn code_redirect(
    request: &AuthorizationRequest,
    code: &str,
    issuer: &Issuer,
) -> Option<String> {
    redirect_with(
        &request.redirect_uri,
        &[("code", code)],
        request.state.as_deref(),
        issuer,
    )
}

/// The redirect that reports a refusal to the client, with `state` and
/// `iss` as on success.
pub fn error_redirect(
    redirect_uri: &str,
    refusal: &RedirectRefusal,
    state: Option<&str>,
    issuer: &Issuer,
) -> Option<String> {
    redirect_with(
        redirect_uri,
        &[
            ("error", refusal.error),
            ("error_description", &refusal.description),
        ],
        state,
        issuer,
    )
}

fn redirect_with(
    redirect_uri: &str,
    pairs: &[(&str, &str)],
    state: Option<&str>,
    issuer: &Issuer,
) -> Option<String> {
    let mut url = url::Url::parse(redirect_uri).ok()?;
    {
        let mut query = url.query_pairs_mut();
        for (k, v) in pairs {
            query.append_pair(k, v);
        }
        if let Some(state) = state {
            query.append_pair("state", state);
        }
        query.append_pair("iss", issuer.as_str());
    }
    Some(url.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    const NOW: i64 = 1_800_000_000;

    fn now() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(NOW).unwrap()
    }

    fn request(scope: &str) -> AuthorizationRequest {
        AuthorizationRequest {
            client_id: "c1".into(),
            redirect_uri: "https://app.example/cb?keep=1".into(),
            state: Some("s t&".into()),
            code_challenge: "x".into(),
            resource: "https://coop.example/mcp".into(),
            scope: scope.into(),
        }
    }

    fn grant(scope: &str, epoch: i64, revoked: bool) -> GrantStatus {
        GrantStatus {
            grant_id: Uuid::nil(),
            grant_farm_id: Uuid::nil(),
            grant_user_id: Uuid::nil(),
            grant_client_id: "c1".into(),
            grant_scope: scope.into(),
            grant_resource: "https://coop.example/mcp".into(),
            grant_epoch: epoch,
            grant_revoked_at: revoked.then_some(1),
            user_epoch: epoch,
            user_disabled: false,
            farm_suspended: false,
            farm_apps_enabled: true,
        }
    }

    const OPEN: FarmState = FarmState {
        suspended: false,
        connected_apps_enabled: true,
    };

    #[test]
    fn a_suspended_farm_or_apps_off_refuse_before_anything_else() {
        let g = grant("farm:read", 0, false);
        let suspended = FarmState {
            suspended: true,
            connected_apps_enabled: true,
        };
        let off = FarmState {
            suspended: false,
            connected_apps_enabled: false,
        };
        let r = request("farm:read");
        assert_eq!(
            next_step(&r, &suspended, 0, Some(&g), NOW, now()),
            NextStep::Refused(FarmRefusal::Suspended)
        );
        assert_eq!(
            next_step(&r, &off, 0, Some(&g), NOW, now()),
            NextStep::Refused(FarmRefusal::ConnectedAppsOff)
        );
    }

    #[test]
    fn consent_is_skipped_only_within_an_active_grant_of_this_epoch() {
        let old = NOW - 3600;
        let r = request("farm:read");
        assert_eq!(
            next_step(
                &r,
                &OPEN,
                2,
                Some(&grant("farm:read daily-entries:write", 2, false)),
                old,
                now()
            ),
            NextStep::AlreadyApproved(GrantId(Uuid::nil()))
        );
        // Asks for more than was granted.
        assert_eq!(
            next_step(
                &request("farm:read daily-entries:write"),
                &OPEN,
                2,
                Some(&grant("farm:read", 2, false)),
                NOW,
                now()
            ),
            NextStep::AskConsent
        );
        // Revoked, or made under an older epoch.
        assert_eq!(
            next_step(&r, &OPEN, 2, Some(&grant("farm:read", 2, true)), NOW, now()),
            NextStep::AskConsent
        );
        assert_eq!(
            next_step(
                &r,
                &OPEN,
                3,
                Some(&grant("farm:read", 2, false)),
                NOW,
                now()
            ),
            NextStep::AskConsent
        );
        assert_eq!(
            next_step(&r, &OPEN, 2, None, NOW, now()),
            NextStep::AskConsent
        );
    }

    #[test]
    fn an_old_password_entry_is_asked_again_before_consent() {
        let r = request("farm:read");
        let limit = STEP_UP_AFTER.whole_seconds();
        assert_eq!(
            next_step(&r, &OPEN, 0, None, NOW - limit, now()),
            NextStep::AskConsent
        );
        assert_eq!(
            next_step(&r, &OPEN, 0, None, NOW - limit - 1, now()),
            NextStep::ConfirmPassword
        );
    }

    #[test]
    fn only_ticked_scopes_that_were_asked_for_are_approved() {
        let asked = ScopeSet::from_stored("farm:read daily-entries:write");
        assert_eq!(
            approved_scopes(&asked, &["farm:read"]).unwrap().to_wire(),
            "farm:read"
        );
        assert_eq!(approved_scopes(&asked, &[]), Err(NothingGranted));
        assert_eq!(approved_scopes(&asked, &["admin"]), Err(NothingGranted));
        let read_only = ScopeSet::from_stored("farm:read");
        assert_eq!(
            approved_scopes(&read_only, &["farm:read", "daily-entries:write"])
                .unwrap()
                .to_wire(),
            "farm:read"
        );
        assert_eq!(
            approved_scopes(&read_only, &["daily-entries:write"]),
            Err(NothingGranted)
        );
    }

    #[test]
    fn a_consent_changes_only_the_scopes_it_asked_about() {
        let both = ScopeSet::from_stored("farm:read daily-entries:write");
        let read = ScopeSet::from_stored("farm:read");
        let write = ScopeSet::from_stored("daily-entries:write");
        assert_eq!(grant_scope_after(None, &both, &read), read);
        // Asked read only: write, granted before, stays.
        assert_eq!(grant_scope_after(Some(&both), &read, &read), both);
        // Asked both, write left unticked: write goes.
        assert_eq!(grant_scope_after(Some(&both), &both, &read), read);
        assert_eq!(grant_scope_after(Some(&read), &write, &write), both);
    }

    #[test]
    fn redirects_carry_state_and_iss_and_keep_the_registered_query() {
        let issuer = Issuer::parse("https://coop.example").unwrap();
        let url = code_redirect(&request("farm:read"), "abc", &issuer).unwrap();
        assert_eq!(
            url,
            "https://app.example/cb?keep=1&code=abc&state=s+t%26&iss=https%3A%2F%2Fcoop.example"
        );
        let refusal = RedirectRefusal {
            error: "access_denied",
            description: "no".into(),
        };
        let url = error_redirect("https://app.example/cb", &refusal, None, &issuer).unwrap();
        assert_eq!(
            url,
            "https://app.example/cb?error=access_denied&error_description=no&iss=https%3A%2F%2Fcoop.example"
        );
    }
}
