//! The consent flow against the store: each entry point loads what the
//! decision of [`super`] reads (the waiting request, its client, the farm,
//! the person's grant), decides, carries the decision out through
//! [`crate::oauth::approval`] and [`crate::oauth::pending`], and returns
//! what the browser gets next ([`Next`]). The HTTP handlers only read the
//! forms and the session before, and render after.
//!
//! Every entry point takes the time from its caller, once per request.

use time::OffsetDateTime;

use super::{FarmState, NextStep, Reauthenticate, Situation};
use crate::domain::this_computer::is_on_this_computer;
use crate::domain::{Issuer, Scope, ScopeSet};
use crate::identity::{SignIn, SignInError};
use crate::oauth::approval::{self, NothingGranted};
use crate::oauth::authorize::{AuthorizationRequest, RedirectRefusal};
use crate::oauth::client::Client;
use crate::oauth::pending::{self, Decision, Pending};
use crate::oauth::{clients, redirect_uri};
use crate::secrets::{AuthorizationCode, DeviceCookie, Password};
use crate::storage::grants::GrantStatus;
use crate::storage::users::Account;
use crate::storage::{Store, StoreError, farms, grants};

/// The signed-in person, as their session knows them.
#[derive(Clone, Copy, Debug)]
pub struct Person<'a> {
    pub account: &'a Account,
    /// When the password was last entered in this session (Unix seconds).
    pub password_entered_at: i64,
}

/// A checked request: just arrived from `/authorize`, or waiting in the
/// store under its id.
#[derive(Clone, Copy, Debug)]
pub enum Waiting<'a> {
    New(&'a AuthorizationRequest),
    Stored(&'a Pending),
}

impl<'a> Waiting<'a> {
    fn request(self) -> &'a AuthorizationRequest {
        match self {
            Self::New(request) => request,
            Self::Stored(pending) => &pending.request,
        }
    }
}

/// What the browser gets next.
#[derive(Debug)]
pub enum Next {
    /// A page saying why this farm cannot connect apps now.
    Refused(super::FarmRefusal),
    /// The change-password page.
    ChangePassword,
    /// The client's redirect URI, carrying a code or an error.
    ToClient(String),
    ConfirmPassword(PasswordScreen),
    AskConsent(ConsentScreen),
}

/// What the password step-up page shows.
#[derive(Debug)]
pub struct PasswordScreen {
    pub client_name: String,
    /// The app asked for a fresh sign-in (rather than the sign-in being old).
    pub requested: bool,
    /// The id the form carries.
    pub request_id: String,
    /// Shown again because the password entered was not right.
    pub wrong_password: bool,
}

/// What the consent screen shows (threat 12).
#[derive(Debug)]
pub struct ConsentScreen {
    pub client_name: String,
    /// Self-registered: its name is its own claim.
    pub unverified: bool,
    pub document_host: Option<String>,
    pub redirect_host: String,
    /// The redirect goes to this computer.
    pub loopback: bool,
    /// Approved before, and asked again because the client cannot prove
    /// who it is (RFC 8252 §8.6).
    pub asked_again: bool,
    pub resource: String,
    pub scopes: Vec<ScopeChoice>,
    /// The id the form carries.
    pub request_id: String,
    /// Shown again because the form approved nothing.
    pub error: Option<NothingGranted>,
}

/// One scope's box on the consent screen.
#[derive(Clone, Copy, Debug)]
pub struct ScopeChoice {
    pub scope: Scope,
    /// The person's grant already holds it.
    pub remembered: bool,
}

/// Why the flow stopped short of a [`Next`].
#[derive(Debug, thiserror::Error)]
pub enum ConsentError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    SignIn(#[from] SignInError),
    /// No such waiting request of this person (unknown, expired, or, for
    /// the password form, answered).
    #[error("the waiting request has expired or was answered")]
    Expired,
    /// The request's client is no longer registered.
    #[error("the client is no longer registered")]
    ClientGone,
    /// Answered before, and nothing of that answer is left to repeat.
    #[error("the waiting request was already answered")]
    AlreadyAnswered,
    #[error("{0}")]
    Internal(&'static str),
}

/// What a decision reads from the store besides the request.
struct Facts {
    farm: FarmState,
    existing: Option<GrantStatus>,
}

/// The store and the issuer, which every step needs.
#[derive(Clone, Copy, Debug)]
pub struct Place<'a> {
    pub store: &'a Store,
    pub issuer: &'a Issuer,
    pub now: OffsetDateTime,
}

async fn facts(
    place: Place<'_>,
    person: Person<'_>,
    request: &AuthorizationRequest,
) -> Result<Facts, ConsentError> {
    let account = person.account;
    let mut db = place.store.read().await?;
    let farm = farms::find(&mut db, account.farm())
        .await?
        .ok_or(ConsentError::Internal("the member's farm is gone"))?;
    let existing = grants::active_for(&mut db, account.user_id(), &request.client_id).await?;
    Ok(Facts {
        farm: FarmState {
            suspended: farm.suspended,
            connected_apps_enabled: farm.connected_apps_enabled,
        },
        existing,
    })
}

fn situation<'a>(
    place: Place<'_>,
    person: Person<'_>,
    client: &Client,
    waiting: Waiting<'a>,
    facts: &'a Facts,
) -> Situation<'a> {
    let request = waiting.request();
    Situation {
        request,
        farm: facts.farm,
        must_change_password: person.account.must_change_password,
        user_epoch: person.account.credential_epoch,
        existing: facts.existing.as_ref(),
        client_proven: client.proven_by(&request.redirect_uri),
        password_entered_at: person.password_entered_at,
        reauthenticated: matches!(waiting, Waiting::Stored(p) if p.reauthenticated),
        now: place.now,
    }
}

/// Decides and carries out the next step for a checked request (see
/// [`super`] for the order).
pub async fn proceed(
    place: Place<'_>,
    person: Person<'_>,
    client: &Client,
    waiting: Waiting<'_>,
) -> Result<Next, ConsentError> {
    let facts = facts(place, person, waiting.request()).await?;
    let step = super::next_step(&situation(place, person, client, waiting, &facts));
    carry_out(place, person, client, waiting, step, None).await
}

/// `GET /authorize/consent`: where the waiting request `id` stands, with
/// the first answer repeated when it was answered before.
pub async fn show(place: Place<'_>, person: Person<'_>, id: &str) -> Result<Next, ConsentError> {
    let (pending, client) = load_waiting(place, person, id).await?;
    if pending.answered.is_some() {
        return answered_before(place, &pending).await;
    }
    proceed(place, person, &client, Waiting::Stored(&pending)).await
}

/// The consent form's answer to the waiting request `id`: `ticked` are the
/// boxes ticked. One decision per request: of two submits, one claims it
/// (in the transaction that carries it out); the other gets the same
/// answer.
pub async fn answer(
    place: Place<'_>,
    person: Person<'_>,
    id: &str,
    decision: Decision,
    ticked: &[&str],
) -> Result<Next, ConsentError> {
    let (pending, client) = load_waiting(place, person, id).await?;
    answer_as_read(place, person, &pending, &client, decision, ticked).await
}

/// The form's answer to `pending` as this submit read it. Another submit
/// of the same form may have answered it since that read: the claim in
/// [`approval`] decides which one counts, and the one that lost it repeats
/// the winner's answer.
async fn answer_as_read(
    place: Place<'_>,
    person: Person<'_>,
    pending: &Pending,
    client: &Client,
    decision: Decision,
    ticked: &[&str],
) -> Result<Next, ConsentError> {
    if pending.answered.is_some() {
        return answered_before(place, pending).await;
    }
    let waiting = Waiting::Stored(pending);
    let request = &pending.request;
    let account = person.account;

    // The farm may have been suspended, the password change required, or
    // the sign-in grown old, while the screen was open.
    let facts = facts(place, person, request).await?;
    let situation = situation(place, person, client, waiting, &facts);
    if let Err(step) = super::may_answer(&situation) {
        return carry_out(place, person, client, waiting, step, None).await;
    }
    match decision {
        Decision::Deny => {
            if !approval::deny(place.store, pending, account, place.now).await? {
                return lost_claim(place, person, pending).await;
            }
            to_client_refused(place, request, &approval::denied())
        }
        Decision::Approve => match approval::approved_scopes(&request.scopes(), ticked) {
            Ok(scopes) => {
                match approval::approve(place.store, pending, account, &scopes, place.now).await? {
                    Some(code) => to_client_code(place, request, &code),
                    None => lost_claim(place, person, pending).await,
                }
            }
            Err(why) => {
                let step = NextStep::AskConsent {
                    remembered: super::remembered(&situation),
                };
                carry_out(place, person, client, waiting, step, Some(why)).await
            }
        },
    }
}

/// What the password the device sent with the step-up form came with.
#[derive(Clone, Copy, Debug)]
pub struct Entered<'a> {
    pub password: &'a Password,
    pub address: std::net::IpAddr,
    pub device_cookie: Option<&'a DeviceCookie>,
}

/// The password step-up form for the waiting request `id`, checked under
/// the sign-in throttle: `None` when it was right (and the request now
/// knows it), or the page again saying it was not.
pub async fn confirm_password(
    place: Place<'_>,
    person: Person<'_>,
    signin: &SignIn,
    id: &str,
    entered: Entered<'_>,
) -> Result<Option<PasswordScreen>, ConsentError> {
    let (pending, client) = load_waiting(place, person, id).await?;
    if pending.answered.is_some() {
        return Err(ConsentError::Expired);
    }
    let account = person.account;
    let right = signin
        .confirm_password(
            account,
            entered.password,
            entered.address,
            entered.device_cookie,
            place.now,
        )
        .await?;
    if !right {
        return Ok(Some(PasswordScreen {
            client_name: client.name,
            requested: pending.request.prompt.login || pending.request.max_age.is_some(),
            request_id: id.to_owned(),
            wrong_password: true,
        }));
    }
    pending::reauthenticated(place.store, &pending.id, account.user_id(), place.now).await?;
    Ok(None)
}

/// Carries out `step`. `error` is shown on the consent screen when showing
/// it again after a form that approved nothing.
async fn carry_out(
    place: Place<'_>,
    person: Person<'_>,
    client: &Client,
    waiting: Waiting<'_>,
    step: NextStep,
    error: Option<NothingGranted>,
) -> Result<Next, ConsentError> {
    let request = waiting.request();
    match step {
        NextStep::Refused(why) => Ok(Next::Refused(why)),
        NextStep::ChangePassword => Ok(Next::ChangePassword),
        NextStep::SendBack(refusal) => to_client_refused(place, request, &refusal),
        NextStep::AlreadyApproved(grant) => {
            // A request that waited (for the password) is answered once,
            // like a consent form.
            let waited = match waiting {
                Waiting::New(_) => None,
                Waiting::Stored(pending) => Some(pending),
            };
            let issued = approval::issue_code(
                place.store,
                request,
                waited,
                person.account,
                grant,
                place.now,
            )
            .await?;
            match (issued, waited) {
                (Some(code), _) => to_client_code(place, request, &code),
                (None, Some(pending)) => lost_claim(place, person, pending).await,
                (None, None) => Err(ConsentError::Internal(
                    "a code without a claim was not issued",
                )),
            }
        }
        NextStep::ConfirmPassword(why) => Ok(Next::ConfirmPassword(PasswordScreen {
            client_name: client.name.clone(),
            requested: why == Reauthenticate::Requested,
            request_id: waiting_id(place, person, waiting).await?,
            wrong_password: false,
        })),
        NextStep::AskConsent { remembered } => Ok(Next::AskConsent(ConsentScreen {
            client_name: client.name.clone(),
            unverified: client.is_unverified(),
            document_host: client.document_host().map(str::to_owned),
            redirect_host: redirect_uri::host_of(&request.redirect_uri),
            loopback: is_on_this_computer(&request.redirect_uri),
            asked_again: !remembered.is_empty() && !client.proven_by(&request.redirect_uri),
            resource: request.resource.clone(),
            scopes: choices(&request.scopes(), &remembered),
            request_id: waiting_id(place, person, waiting).await?,
            error,
        })),
    }
}

fn choices(asked: &ScopeSet, remembered: &ScopeSet) -> Vec<ScopeChoice> {
    asked
        .iter()
        .map(|scope| ScopeChoice {
            scope,
            remembered: remembered.contains(scope),
        })
        .collect()
}

/// The id the page's form names: the stored request's, or a new one for a
/// request that must now wait for the person.
async fn waiting_id(
    place: Place<'_>,
    person: Person<'_>,
    waiting: Waiting<'_>,
) -> Result<String, ConsentError> {
    match waiting {
        Waiting::Stored(pending) => Ok(pending.id.clone()),
        Waiting::New(request) => {
            Ok(pending::put(place.store, person.account.user_id(), request, place.now).await?)
        }
    }
}

/// A request answered before (a second submit of the same form, a reload):
/// the first answer's redirect again, or [`ConsentError::AlreadyAnswered`].
async fn answered_before(place: Place<'_>, pending: &Pending) -> Result<Next, ConsentError> {
    match approval::replay(place.store, pending, place.issuer, place.now).await? {
        Some(url) => Ok(Next::ToClient(url)),
        None => Err(ConsentError::AlreadyAnswered),
    }
}

/// A claim lost to another submit of the same form: read the winner's
/// answer (the row read before the claim predates it; the winner has
/// committed, since the claim waited for it) and repeat it.
async fn lost_claim(
    place: Place<'_>,
    person: Person<'_>,
    pending: &Pending,
) -> Result<Next, ConsentError> {
    let user = person.account.user_id();
    match pending::get(place.store, &pending.id, user, place.now).await? {
        Some(answered) if answered.answered.is_some() => answered_before(place, &answered).await,
        _ => Err(ConsentError::AlreadyAnswered),
    }
}

const UNPARSED: ConsentError = ConsentError::Internal("a validated redirect URI did not parse");

fn to_client_code(
    place: Place<'_>,
    request: &AuthorizationRequest,
    code: &AuthorizationCode,
) -> Result<Next, ConsentError> {
    approval::code_redirect(request, code, place.issuer)
        .map(Next::ToClient)
        .ok_or(UNPARSED)
}

fn to_client_refused(
    place: Place<'_>,
    request: &AuthorizationRequest,
    refusal: &RedirectRefusal,
) -> Result<Next, ConsentError> {
    approval::error_redirect(
        &request.redirect_uri,
        refusal,
        request.state.as_deref(),
        place.issuer,
    )
    .map(Next::ToClient)
    .ok_or(UNPARSED)
}

/// A waiting request of the signed-in person, with its client.
async fn load_waiting(
    place: Place<'_>,
    person: Person<'_>,
    id: &str,
) -> Result<(Pending, Client), ConsentError> {
    let pending = pending::get(place.store, id, person.account.user_id(), place.now)
        .await?
        .ok_or(ConsentError::Expired)?;
    let client = clients::find_stored(place.store, &pending.request.client_id, place.now)
        .await?
        .ok_or(ConsentError::ClientGone)?;
    Ok((pending, client))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::approval::tests::request;
    use crate::oauth::cimd::ClientMetadataDocument;
    use crate::oauth::client::AuthMethod;
    use crate::storage::users;
    use crate::testing::TestStore;

    const CLIENT_ID: &str = "https://app.example/client.json";

    /// A signed-in member of a farm, a client whose document was fetched,
    /// and one of its requests waiting for the member's answer.
    struct WaitingRequest {
        db: TestStore,
        issuer: Issuer,
        account: Account,
        id: String,
        now: OffsetDateTime,
    }

    impl WaitingRequest {
        async fn new() -> Self {
            let (db, user, now) = pending::tests::person().await;
            let account = users::find(&mut db.store.read().await.unwrap(), user)
                .await
                .unwrap()
                .unwrap();
            let document = ClientMetadataDocument {
                client_id: CLIENT_ID.into(),
                client_name: "App".into(),
                redirect_uris: vec!["https://app.example/cb?keep=1".into()],
                document_host: "app.example".into(),
                auth: Default::default(),
                auth_method: AuthMethod::None,
                assertion_keys: None,
                fresh_until: now + time::Duration::hours(1),
                source: crate::oauth::cimd::Source {
                    body: "{}".into(),
                    fetched_at: now,
                },
            };
            clients::record_document(&db.store, &document, now)
                .await
                .unwrap();
            let mut asked = request("farm:read");
            asked.client_id = CLIENT_ID.into();
            let id = pending::put(&db.store, user, &asked, now).await.unwrap();
            Self {
                db,
                issuer: Issuer::parse("https://coop.example").unwrap(),
                account,
                id,
                now,
            }
        }

        fn place(&self) -> Place<'_> {
            Place {
                store: &self.db.store,
                issuer: &self.issuer,
                now: self.now,
            }
        }

        fn person(&self) -> Person<'_> {
            Person {
                account: &self.account,
                password_entered_at: self.now.unix_timestamp(),
            }
        }

        /// The request and its client as a submit reads them before it
        /// claims the request.
        async fn read(&self) -> (Pending, Client) {
            load_waiting(self.place(), self.person(), &self.id)
                .await
                .unwrap()
        }

        async fn submit(&self, decision: Decision) -> Next {
            answer(
                self.place(),
                self.person(),
                &self.id,
                decision,
                &["farm:read"],
            )
            .await
            .unwrap()
        }
    }

    fn to_client(next: Next) -> String {
        match next {
            Next::ToClient(url) => url,
            other => panic!("expected a redirect to the client, got {other:?}"),
        }
    }

    /// Two submits of one form that both read the request before either
    /// answered it: the second loses the claim and repeats the first's
    /// answer, whatever it asked itself. (The black-box suite cannot hold
    /// a submit between its read and its claim; this test does.)
    #[tokio::test]
    async fn a_submit_that_loses_the_claim_repeats_the_winners_answer() {
        for (first, second) in [
            (Decision::Approve, Decision::Deny),
            (Decision::Approve, Decision::Approve),
            (Decision::Deny, Decision::Approve),
            (Decision::Deny, Decision::Deny),
        ] {
            let waiting = WaitingRequest::new().await;
            let (stale, client) = waiting.read().await;
            assert!(stale.answered.is_none());
            let won = to_client(waiting.submit(first).await);
            match first {
                Decision::Approve => assert!(won.contains("code="), "{won}"),
                Decision::Deny => assert!(won.contains("error=access_denied"), "{won}"),
            }
            let lost = answer_as_read(
                waiting.place(),
                waiting.person(),
                &stale,
                &client,
                second,
                &["farm:read"],
            )
            .await
            .unwrap();
            assert_eq!(to_client(lost), won, "{first:?} then {second:?}");
        }
    }
}
