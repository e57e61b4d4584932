//! After the checks: may this person approve, must they, and what happens
//! when they do.
//!
//! Order of decisions for a signed-in person and a checked request
//! ([`next_step`]); in brackets, what a request with `prompt=none` gets
//! instead of a page, sent to the client's redirect URI with `state` and
//! `iss` (OpenID Connect Core §3.1.2.6):
//! 1. their farm is suspended or has connected apps off → refused, with a
//!    page saying so [`access_denied`];
//! 2. they must change their password → the change-password page
//!    [`interaction_required`];
//! 3. the client asked for a fresh sign-in (`prompt=login`, `max_age=0`, or
//!    a sign-in older than `max_age` seconds) and the password has not been
//!    entered again for this request → ask for it [`login_required`];
//! 4. the redirect proves which program is asking ([`Client::proven_by`]:
//!    a confidential client, or an https redirect to the web; never a
//!    native app, nor a public client sent to this computer, over http or
//!    https, RFC 8252 §8.6, threat 31), `prompt=consent` was not sent, and an active grant made under
//!    the person's current credential epoch already holds every scope asked
//!    → no screen, a code at once (threat 12: only a client approved before
//!    is ever approved silently);
//! 5. `prompt=none` → [`consent_required`];
//! 6. the password was last entered more than [`STEP_UP_AFTER`] ago → ask
//!    for it again;
//! 7. otherwise → the consent screen, the scopes an existing grant holds
//!    marked as allowed before.
//!
//! A signed-out person signs in first, or gets [`login_required`]
//! ([`crate::oauth::authorize::begin`]). The consent form's answer runs 1–3 and 6 again
//! ([`may_answer`]): the farm may have been suspended, or the sign-in grown
//! old, while the screen was open.
//!
//! This module decides, purely, from a [`Situation`]; [`flow`] reads the
//! situation from the store, and carries the decision out: what an answer
//! does (the grant, the code, the redirects) is [`crate::oauth::approval`];
//! each waiting request is answered once ([`crate::oauth::pending`]).
//!
//! [`Client::proven_by`]: crate::oauth::client::Client::proven_by
//! [`access_denied`]: FarmRefusal
//! [`interaction_required`]: NextStep::SendBack
//! [`login_required`]: NextStep::SendBack
//! [`consent_required`]: NextStep::SendBack

mod flow;

use time::OffsetDateTime;

pub use flow::{
    ConsentError, ConsentScreen, Entered, Next, PasswordScreen, Person, Place, ScopeChoice,
    Waiting, answer, confirm_password, proceed, show,
};

use crate::domain::{GrantId, ScopeSet};
use crate::oauth::authorize::{AuthorizationRequest, RedirectRefusal};
use crate::storage::grants::GrantStatus;

/// A consent needs the password entered at most this long ago.
pub const STEP_UP_AFTER: time::Duration = time::Duration::minutes(10);

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

/// Why the password is asked for again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reauthenticate {
    /// The client asked (`prompt=login` or `max_age`).
    Requested,
    /// The sign-in is older than [`STEP_UP_AFTER`].
    StepUp,
}

/// What happens next for a signed-in person and a checked request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NextStep {
    Refused(FarmRefusal),
    ChangePassword,
    ConfirmPassword(Reauthenticate),
    /// Approved before: issue a code under this grant without asking.
    AlreadyApproved(GrantId),
    /// The consent screen; `remembered` are the asked scopes the person's
    /// grant already holds (shown as allowed before).
    AskConsent {
        remembered: ScopeSet,
    },
    /// `prompt=none` and a page would be needed: this error goes back to
    /// the client instead.
    SendBack(RedirectRefusal),
}

/// The farm's switches, as the account row carries them.
#[derive(Clone, Copy, Debug)]
pub struct FarmState {
    pub suspended: bool,
    pub connected_apps_enabled: bool,
}

/// Everything the decision depends on.
#[derive(Clone, Copy, Debug)]
pub struct Situation<'a> {
    pub request: &'a AuthorizationRequest,
    pub farm: FarmState,
    pub must_change_password: bool,
    pub user_epoch: i64,
    /// The person's active grant to this client, if any.
    pub existing: Option<&'a GrantStatus>,
    /// Whether the request's redirect proves which program is asking.
    pub client_proven: bool,
    /// When the password was last entered in this session (Unix seconds).
    pub password_entered_at: i64,
    /// The password was entered again for this very request.
    pub reauthenticated: bool,
    pub now: OffsetDateTime,
}

fn send_back(error: &'static str, description: &str) -> NextStep {
    NextStep::SendBack(RedirectRefusal::new(error, description))
}

/// Decides the next step (see the module documentation for the order).
pub fn next_step(s: &Situation<'_>) -> NextStep {
    if let Some(step) = before_consent(s) {
        return step;
    }
    let prompt = s.request.prompt;
    if s.client_proven
        && !prompt.consent
        && let Some(grant) = s.existing.filter(|g| covers(g, s.request, s.user_epoch))
    {
        return NextStep::AlreadyApproved(grant.id());
    }
    if prompt.none {
        return send_back(
            "consent_required",
            "the person must approve this request on the consent screen",
        );
    }
    if step_up_due(s) {
        return NextStep::ConfirmPassword(Reauthenticate::StepUp);
    }
    NextStep::AskConsent {
        remembered: remembered(s),
    }
}

/// For the consent form's answer: `Err` with the step to take instead when
/// the person may not answer now (see the module documentation).
pub fn may_answer(s: &Situation<'_>) -> Result<(), NextStep> {
    if let Some(step) = before_consent(s) {
        return Err(step);
    }
    if step_up_due(s) {
        return Err(NextStep::ConfirmPassword(Reauthenticate::StepUp));
    }
    Ok(())
}

/// Steps 1–3.
fn before_consent(s: &Situation<'_>) -> Option<NextStep> {
    let none = s.request.prompt.none;
    let refusal = if s.farm.suspended {
        Some(FarmRefusal::Suspended)
    } else if !s.farm.connected_apps_enabled {
        Some(FarmRefusal::ConnectedAppsOff)
    } else {
        None
    };
    if let Some(why) = refusal {
        return Some(if none {
            send_back(
                "access_denied",
                "this person's farm cannot connect apps now",
            )
        } else {
            NextStep::Refused(why)
        });
    }
    if s.must_change_password {
        return Some(if none {
            send_back(
                "interaction_required",
                "the person must change their password first",
            )
        } else {
            NextStep::ChangePassword
        });
    }
    if reauthentication_requested(s) {
        return Some(if none {
            send_back("login_required", "the sign-in is older than max_age")
        } else {
            NextStep::ConfirmPassword(Reauthenticate::Requested)
        });
    }
    None
}

/// `prompt=login` or `max_age=0`: always, once per request; `max_age=N`:
/// when the password was entered more than N seconds ago.
fn reauthentication_requested(s: &Situation<'_>) -> bool {
    if s.reauthenticated {
        return false;
    }
    if s.request.prompt.login {
        return true;
    }
    match s.request.max_age {
        None => false,
        Some(0) => true,
        Some(max) => s.now.unix_timestamp() - s.password_entered_at > i64::from(max),
    }
}

fn step_up_due(s: &Situation<'_>) -> bool {
    s.now.unix_timestamp() - s.password_entered_at > STEP_UP_AFTER.whole_seconds()
}

/// Whether a grant may still vouch for this person and resource.
fn current(grant: &GrantStatus, request: &AuthorizationRequest, user_epoch: i64) -> bool {
    grant.grant_revoked_at.is_none()
        && grant.grant_epoch == user_epoch
        && grant.grant_resource == request.resource
}

/// Whether an existing grant already approves everything `request` asks.
fn covers(grant: &GrantStatus, request: &AuthorizationRequest, user_epoch: i64) -> bool {
    current(grant, request, user_epoch) && request.scopes().is_subset(&grant.grant_scope)
}

/// The asked scopes a current grant already holds.
pub fn remembered(s: &Situation<'_>) -> ScopeSet {
    s.existing
        .filter(|g| current(g, s.request, s.user_epoch))
        .map(|g| g.grant_scope.intersection(&s.request.scopes()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::approval::tests::request;
    use uuid::Uuid;

    const NOW: i64 = 1_800_000_000;

    fn now() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(NOW).unwrap()
    }

    fn grant(scope: &str, epoch: i64, revoked: bool) -> GrantStatus {
        GrantStatus {
            grant_id: Uuid::nil(),
            grant_farm_id: Uuid::nil(),
            grant_user_id: Uuid::nil(),
            grant_client_id: "c1".into(),
            grant_scope: ScopeSet::from_stored(scope),
            grant_resource: "https://coop.example/mcp".into(),
            grant_epoch: epoch,
            grant_revoked_at: revoked.then_some(1),
            user_epoch: epoch,
            user_disabled: false,
            user_must_change_password: false,
            farm_suspended: false,
            farm_apps_enabled: true,
        }
    }

    const OPEN: FarmState = FarmState {
        suspended: false,
        connected_apps_enabled: true,
    };

    /// A proven client with a covering grant, signed in just now: the
    /// silent case, from which each test changes one thing.
    fn approved<'a>(r: &'a AuthorizationRequest, g: &'a GrantStatus) -> Situation<'a> {
        Situation {
            request: r,
            farm: OPEN,
            must_change_password: false,
            user_epoch: g.grant_epoch,
            existing: Some(g),
            client_proven: true,
            password_entered_at: NOW,
            reauthenticated: false,
            now: now(),
        }
    }

    fn error_of(step: NextStep) -> &'static str {
        match step {
            NextStep::SendBack(refusal) => refusal.error,
            other => panic!("expected an error for the client, got {other:?}"),
        }
    }

    /// The error the same request with `prompt=none` gets back, in the
    /// same situation.
    fn sent_back_under_prompt_none(s: &Situation<'_>) -> &'static str {
        let mut none = s.request.clone();
        none.prompt.none = true;
        error_of(next_step(&Situation {
            request: &none,
            ..*s
        }))
    }

    const SILENT: NextStep = NextStep::AlreadyApproved(GrantId(Uuid::nil()));

    fn ask(remembered: &str) -> NextStep {
        NextStep::AskConsent {
            remembered: ScopeSet::from_stored(remembered),
        }
    }

    #[test]
    fn a_suspended_farm_or_apps_off_refuse_before_anything_else() {
        let g = grant("farm:read", 0, false);
        let r = request("farm:read");
        let mut s = approved(&r, &g);
        s.must_change_password = true;
        s.farm.suspended = true;
        assert_eq!(next_step(&s), NextStep::Refused(FarmRefusal::Suspended));
        assert_eq!(
            may_answer(&s),
            Err(NextStep::Refused(FarmRefusal::Suspended))
        );
        s.farm = FarmState {
            suspended: false,
            connected_apps_enabled: false,
        };
        assert_eq!(
            next_step(&s),
            NextStep::Refused(FarmRefusal::ConnectedAppsOff)
        );
        assert_eq!(sent_back_under_prompt_none(&s), "access_denied");
    }

    #[test]
    fn a_password_change_comes_before_any_code() {
        let g = grant("farm:read", 0, false);
        let r = request("farm:read");
        let mut s = approved(&r, &g);
        s.must_change_password = true;
        assert_eq!(next_step(&s), NextStep::ChangePassword);
        assert_eq!(may_answer(&s), Err(NextStep::ChangePassword));
        assert_eq!(sent_back_under_prompt_none(&s), "interaction_required");
    }

    #[test]
    fn consent_is_skipped_only_within_an_active_grant_of_this_epoch() {
        let both = grant("farm:read daily-entries:write", 2, false);
        let r = request("farm:read");
        // An hour-old sign-in does not matter to a silent approval.
        let mut s = approved(&r, &both);
        s.password_entered_at = NOW - 3600;
        assert_eq!(next_step(&s), SILENT);

        // Asks for more than was granted.
        let read = grant("farm:read", 2, false);
        let more = request("farm:read daily-entries:write");
        assert_eq!(next_step(&approved(&more, &read)), ask("farm:read"));
        // Revoked, or made under an older epoch: nothing remembered.
        let revoked = grant("farm:read", 2, true);
        assert_eq!(next_step(&approved(&r, &revoked)), ask(""));
        let mut s = approved(&r, &read);
        s.user_epoch = 3;
        assert_eq!(next_step(&s), ask(""));
        let mut s = approved(&r, &read);
        s.existing = None;
        assert_eq!(next_step(&s), ask(""));
        // A grant for another server's /mcp vouches for nothing here.
        let mut elsewhere = grant("farm:read", 2, false);
        elsewhere.grant_resource = "https://other.example/mcp".into();
        assert_eq!(next_step(&approved(&r, &elsewhere)), ask(""));
    }

    #[test]
    fn each_farm_refusal_tells_the_person_why_and_whom_to_ask() {
        let suspended = FarmRefusal::Suspended.message();
        assert!(
            suspended.starts_with("Your farm is suspended"),
            "{suspended}"
        );
        let off = FarmRefusal::ConnectedAppsOff.message();
        assert!(off.starts_with("Connected apps are turned off"), "{off}");
        assert!(off.contains("owner"), "{off}");
    }

    #[test]
    fn a_client_that_cannot_prove_who_it_is_always_sees_the_screen() {
        // Threat 31: the same grant, but the redirect proves nothing.
        let g = grant("farm:read daily-entries:write", 0, false);
        let r = request("farm:read");
        let mut s = approved(&r, &g);
        s.client_proven = false;
        assert_eq!(next_step(&s), ask("farm:read"));
        // With the step-up when due, like any consent.
        s.password_entered_at = NOW - STEP_UP_AFTER.whole_seconds() - 1;
        assert_eq!(
            next_step(&s),
            NextStep::ConfirmPassword(Reauthenticate::StepUp)
        );
    }

    #[test]
    fn prompt_consent_shows_the_screen_to_an_approved_client() {
        let g = grant("farm:read", 0, false);
        let mut r = request("farm:read");
        r.prompt.consent = true;
        assert_eq!(next_step(&approved(&r, &g)), ask("farm:read"));
    }

    #[test]
    fn prompt_login_and_max_age_ask_for_the_password_once() {
        let g = grant("farm:read", 0, false);
        let mut r = request("farm:read");
        r.prompt.login = true;
        let mut s = approved(&r, &g);
        // However fresh the sign-in.
        assert_eq!(
            next_step(&s),
            NextStep::ConfirmPassword(Reauthenticate::Requested)
        );
        assert_eq!(
            may_answer(&s),
            Err(NextStep::ConfirmPassword(Reauthenticate::Requested))
        );
        // Entered again for this request: on to the next rule (here the
        // silent approval of a proven client).
        s.reauthenticated = true;
        assert_eq!(next_step(&s), SILENT);

        let mut r = request("farm:read");
        r.max_age = Some(0);
        assert_eq!(
            next_step(&approved(&r, &g)),
            NextStep::ConfirmPassword(Reauthenticate::Requested)
        );
        r.max_age = Some(60);
        let mut s = approved(&r, &g);
        s.password_entered_at = NOW - 60;
        assert_eq!(next_step(&s), SILENT);
        s.password_entered_at = NOW - 61;
        assert_eq!(
            next_step(&s),
            NextStep::ConfirmPassword(Reauthenticate::Requested)
        );
        s.reauthenticated = true;
        assert_eq!(next_step(&s), SILENT);
    }

    #[test]
    fn prompt_none_never_asks_and_says_why() {
        let g = grant("farm:read", 0, false);
        let mut r = request("farm:read");
        r.prompt.none = true;
        // Approved before, proven: the code, as without prompt.
        assert_eq!(next_step(&approved(&r, &g)), SILENT);
        let mut s = approved(&r, &g);
        s.client_proven = false;
        assert_eq!(error_of(next_step(&s)), "consent_required");
        let mut s = approved(&r, &g);
        s.existing = None;
        // Even with the step-up due: consent is what is missing.
        s.password_entered_at = NOW - 3600;
        assert_eq!(error_of(next_step(&s)), "consent_required");
        r.max_age = Some(10);
        let mut s = approved(&r, &g);
        s.password_entered_at = NOW - 11;
        assert_eq!(error_of(next_step(&s)), "login_required");
    }

    #[test]
    fn an_old_password_entry_is_asked_again_before_consent() {
        let r = request("farm:read");
        let g = grant("farm:read", 0, false);
        let limit = STEP_UP_AFTER.whole_seconds();
        let mut s = approved(&r, &g);
        s.existing = None;
        s.password_entered_at = NOW - limit;
        assert_eq!(next_step(&s), ask(""));
        assert_eq!(may_answer(&s), Ok(()));
        s.password_entered_at = NOW - limit - 1;
        assert_eq!(
            next_step(&s),
            NextStep::ConfirmPassword(Reauthenticate::StepUp)
        );
        assert_eq!(
            may_answer(&s),
            Err(NextStep::ConfirmPassword(Reauthenticate::StepUp))
        );
    }
}
