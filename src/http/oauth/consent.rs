//! The consent screen, the password step-up before it, and their forms.
//!
//! - `GET /authorize/consent?request=ID` shows where a waiting request
//!   stands (after the password step-up, or on reload).
//! - `POST /authorize/consent` (CSRF token, request id, `decision`, one
//!   `scope` per ticked box): Approve records the grant and redirects with
//!   `code`, `state` and `iss`; Deny redirects with `access_denied`.
//! - `POST /authorize/confirm` (CSRF token, request id, password): the
//!   password again (step-up, `prompt=login`, `max_age`), throttled like
//!   sign-in.
//!
//! The handlers read and render; what happens next is decided by
//! [`crate::oauth::consent`], and waiting requests are kept and answered
//! once by [`crate::oauth::pending`]: a form submitted twice gets the first
//! submit's redirect (the same code), or a 409 page once that code is
//! spent, never a second code.
//!
//! Every page here is `Cache-Control: no-store`, carries the frame-denying
//! headers of every page (threat 10), and its forms the session's CSRF
//! token (threat 9). What the screen shows is what threat 12 asks for: the
//! client's name (marked unverified when self-registered), its document
//! host, the redirect host with a warning when it is this computer, the
//! resource, the farm, and each scope with its own box (marked "allowed
//! before" when the person's grant holds it, with a note when a client
//! approved before is asked again because it cannot prove who it is).

use std::net::SocketAddr;

use askama::Template;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::error::refusal_redirect;
use crate::http::error::{PageError, render};
use crate::http::form;
use crate::http::session::{self, CHANGE_PASSWORD_PATH, SignedIn};
use crate::oauth::approval;
use crate::oauth::authorize::AuthorizationRequest;
use crate::oauth::client::Client;
use crate::oauth::consent::{self, FarmState, NextStep, Reauthenticate, Situation};
use crate::oauth::params::Params;
use crate::oauth::pending::{self, Decision, Pending};
use crate::oauth::{clients, redirect_uri};
use crate::secrets::AuthorizationCode;
use crate::secrets::Password;
use crate::state::AppState;
use crate::storage::grants::GrantStatus;
use crate::storage::{farms, grants};

struct ScopeView {
    name: &'static str,
    description: &'static str,
    /// The person's grant already holds it.
    remembered: bool,
}

#[derive(Template)]
#[template(path = "consent.html")]
struct ConsentPage<'a> {
    client_name: &'a str,
    unverified: bool,
    document_host: Option<&'a str>,
    redirect_host: &'a str,
    loopback: bool,
    /// Approved before, and asked again because the client cannot prove
    /// who it is (RFC 8252 §8.6).
    asked_again: bool,
    resource: &'a str,
    farm_name: &'a str,
    email: &'a str,
    scopes: Vec<ScopeView>,
    csrf: &'a str,
    request_id: &'a str,
    error: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "consent_password.html")]
struct PasswordPage<'a> {
    client_name: &'a str,
    /// The app asked for a fresh sign-in (rather than the sign-in being old).
    requested: bool,
    email: &'a str,
    csrf: &'a str,
    request_id: &'a str,
    error: Option<&'a str>,
}

fn no_store(mut response: Response) -> Response {
    super::error::no_store(response.headers_mut());
    response
}

/// A checked request: just arrived from `/authorize`, or waiting in the
/// store under its id.
#[derive(Clone, Copy)]
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

/// What a decision reads from the store besides the request.
struct Facts {
    farm: FarmState,
    existing: Option<GrantStatus>,
}

async fn facts(
    state: &AppState,
    user: &SignedIn,
    request: &AuthorizationRequest,
) -> Result<Facts, PageError> {
    let account = &user.account;
    let mut db = state.store.read().await?;
    let farm = farms::find(&mut db, account.farm())
        .await?
        .ok_or_else(|| PageError::Internal("the member's farm is gone".into()))?;
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
    state: &AppState,
    user: &SignedIn,
    client: &Client,
    waiting: Waiting<'a>,
    facts: &'a Facts,
) -> Situation<'a> {
    let request = waiting.request();
    Situation {
        request,
        farm: facts.farm,
        must_change_password: user.account.must_change_password,
        user_epoch: user.account.credential_epoch,
        existing: facts.existing.as_ref(),
        client_proven: client.proven_by(&request.redirect_uri),
        password_entered_at: user.authenticated_at,
        reauthenticated: matches!(waiting, Waiting::Stored(p) if p.reauthenticated),
        now: state.clock.now(),
    }
}

/// Decides and answers the next step for a checked request (see
/// [`crate::oauth::consent`] for the order).
pub async fn proceed(
    state: &AppState,
    user: &SignedIn,
    client: &Client,
    waiting: Waiting<'_>,
) -> Result<Response, PageError> {
    let facts = facts(state, user, waiting.request()).await?;
    let step = consent::next_step(&situation(state, user, client, waiting, &facts));
    respond(state, user, client, waiting, step, None).await
}

/// Answers `step`. `error` is shown on the consent screen when re-rendering
/// it after a refused form.
async fn respond(
    state: &AppState,
    user: &SignedIn,
    client: &Client,
    waiting: Waiting<'_>,
    step: NextStep,
    error: Option<&str>,
) -> Result<Response, PageError> {
    let now = state.clock.now();
    let request = waiting.request();
    let account = &user.account;
    match step {
        NextStep::Refused(why) => {
            Ok(PageError::Forbidden(why.message().to_owned()).into_response())
        }
        NextStep::ChangePassword => Ok(Redirect::to(CHANGE_PASSWORD_PATH).into_response()),
        NextStep::SendBack(refusal) => Ok(refusal_redirect(
            &request.redirect_uri,
            &refusal,
            request.state.as_deref(),
            &state.issuer,
        )),
        NextStep::AlreadyApproved(grant) => {
            // A request that waited (for the password) is answered once,
            // like a consent form.
            let waited = match waiting {
                Waiting::New(_) => None,
                Waiting::Stored(pending) => Some(pending),
            };
            let issued =
                approval::issue_code(&state.store, request, waited, account, grant, now).await?;
            match (issued, waited) {
                (Some(code), _) => code_redirect(state, request, &code),
                (None, Some(pending)) => lost_claim(state, user, pending).await,
                (None, None) => Err(PageError::Internal(
                    "a code without a claim was not issued".into(),
                )),
            }
        }
        NextStep::ConfirmPassword(why) => {
            let id = waiting_id(state, user, waiting).await?;
            let csrf = session::csrf_token(&user.session).await?;
            Ok(no_store(render(&PasswordPage {
                client_name: &client.name,
                requested: why == Reauthenticate::Requested,
                email: &account.email,
                csrf: &csrf,
                request_id: &id,
                error: None,
            })))
        }
        NextStep::AskConsent { remembered } => {
            let id = waiting_id(state, user, waiting).await?;
            let csrf = session::csrf_token(&user.session).await?;
            let document_host = client.document_host();
            let redirect_host = redirect_uri::host_of(&request.redirect_uri);
            let mut response = render(&ConsentPage {
                client_name: &client.name,
                unverified: client.is_unverified(),
                document_host,
                redirect_host: &redirect_host,
                loopback: redirect_uri::is_loopback_uri(&request.redirect_uri),
                asked_again: !remembered.is_empty() && !client.proven_by(&request.redirect_uri),
                resource: &request.resource,
                farm_name: &account.farm_name,
                email: &account.email,
                scopes: request
                    .scopes()
                    .iter()
                    .map(|s| ScopeView {
                        name: s.as_str(),
                        description: s.description(),
                        remembered: remembered.contains(s),
                    })
                    .collect(),
                csrf: &csrf,
                request_id: &id,
                error,
            });
            if error.is_some() {
                *response.status_mut() = StatusCode::BAD_REQUEST;
            }
            Ok(no_store(response))
        }
    }
}

/// The id the page's form names: the stored request's, or a new one for a
/// request that must now wait for the person.
async fn waiting_id(
    state: &AppState,
    user: &SignedIn,
    waiting: Waiting<'_>,
) -> Result<String, PageError> {
    match waiting {
        Waiting::Stored(pending) => Ok(pending.id.clone()),
        Waiting::New(request) => Ok(pending::put(
            &state.store,
            user.account.user_id(),
            request,
            state.clock.now(),
        )
        .await?),
    }
}

/// A request answered before (a second submit of the same form, a reload):
/// the first answer's redirect again, or a page saying it was answered.
async fn answered_before(state: &AppState, pending: &Pending) -> Result<Response, PageError> {
    match approval::replay(&state.store, pending, &state.issuer, state.clock.now()).await? {
        Some(url) => Ok(Redirect::to(&url).into_response()),
        None => Err(already_answered()),
    }
}

fn already_answered() -> PageError {
    PageError::Conflict(
        "This request was already answered. If the app did not connect, go back to it and connect again."
            .into(),
    )
}

/// A claim lost to another submit of the same form: read the winner's
/// answer (the row read before the claim predates it; the winner has
/// committed, since the claim waited for it) and repeat it.
async fn lost_claim(
    state: &AppState,
    user: &SignedIn,
    pending: &Pending,
) -> Result<Response, PageError> {
    let now = state.clock.now();
    match pending::get(&state.store, &pending.id, user.account.user_id(), now).await? {
        Some(answered) if answered.answered.is_some() => answered_before(state, &answered).await,
        _ => Err(already_answered()),
    }
}

fn code_redirect(
    state: &AppState,
    request: &AuthorizationRequest,
    code: &AuthorizationCode,
) -> Result<Response, PageError> {
    let url = approval::code_redirect(request, code, &state.issuer)
        .ok_or_else(|| PageError::Internal("a validated redirect URI did not parse".into()))?;
    Ok(Redirect::to(&url).into_response())
}

fn expired() -> PageError {
    PageError::BadRequest(
        "This request has expired or was already answered. Go back to the app and connect again."
            .into(),
    )
}

/// Sends a signed-out person to sign in, then back here.
fn sign_in_first(return_to: &str) -> Response {
    let login = format!(
        "/login?{}",
        serde_urlencoded::to_string([("return_to", return_to)]).unwrap_or_default()
    );
    Redirect::to(&login).into_response()
}

/// A waiting request of the signed-in person, with its client.
async fn load_waiting(
    state: &AppState,
    user: &SignedIn,
    id: &str,
) -> Result<(Pending, Client), PageError> {
    let now = state.clock.now();
    let pending = pending::get(&state.store, id, user.account.user_id(), now)
        .await?
        .ok_or_else(expired)?;
    let client = clients::find_stored(&state.store, &pending.request.client_id, now)
        .await?
        .ok_or_else(|| PageError::BadRequest("The app is no longer registered.".into()))?;
    Ok((pending, client))
}

#[derive(Deserialize)]
pub struct ShowQuery {
    #[serde(default)]
    request: String,
}

pub async fn show(
    State(state): State<AppState>,
    user: Option<SignedIn>,
    Query(query): Query<ShowQuery>,
) -> Result<Response, PageError> {
    let Some(user) = user else {
        let here = format!(
            "/authorize/consent?{}",
            serde_urlencoded::to_string([("request", query.request.as_str())]).unwrap_or_default()
        );
        return Ok(sign_in_first(&here));
    };
    let (pending, client) = load_waiting(&state, &user, &query.request).await?;
    if pending.answered.is_some() {
        return answered_before(&state, &pending).await;
    }
    proceed(&state, &user, &client, Waiting::Stored(&pending)).await
}

/// The fields of the consent form.
struct ConsentForm<'a> {
    csrf: &'a str,
    request: &'a str,
    decision: &'a str,
    scopes: Vec<&'a str>,
}

fn consent_form(params: &Params) -> Result<ConsentForm<'_>, PageError> {
    let one = |name| form::single(params, name);
    Ok(ConsentForm {
        csrf: one("csrf")?,
        request: one("request")?,
        decision: one("decision")?,
        scopes: params.all("scope"),
    })
}

pub async fn answer(
    State(state): State<AppState>,
    user: Option<SignedIn>,
    body: Bytes,
) -> Result<Response, PageError> {
    let params = Params::parse(&body);
    let form = consent_form(&params)?;
    let Some(user) = user else {
        return Err(PageError::BadRequest(
            "You were signed out before answering. Go back to the app and connect again.".into(),
        ));
    };
    session::verify_csrf(&user.session, form.csrf).await?;
    let decision = match form.decision {
        "approve" => Decision::Approve,
        "deny" => Decision::Deny,
        _ => return Err(PageError::BadRequest("Choose Approve or Deny.".into())),
    };
    let (pending, client) = load_waiting(&state, &user, form.request).await?;
    if pending.answered.is_some() {
        return answered_before(&state, &pending).await;
    }
    let waiting = Waiting::Stored(&pending);
    let request = &pending.request;
    let account = &user.account;
    let now = state.clock.now();

    // The farm may have been suspended, the password change required, or
    // the sign-in grown old, while the screen was open.
    let facts = facts(&state, &user, request).await?;
    let situation = situation(&state, &user, &client, waiting, &facts);
    if let Err(step) = consent::may_answer(&situation) {
        return respond(&state, &user, &client, waiting, step, None).await;
    }

    let approved = match decision {
        Decision::Deny => None,
        Decision::Approve => match approval::approved_scopes(&request.scopes(), &form.scopes) {
            Ok(scopes) => Some(scopes),
            Err(why) => {
                let step = NextStep::AskConsent {
                    remembered: consent::remembered(&situation),
                };
                return respond(
                    &state,
                    &user,
                    &client,
                    waiting,
                    step,
                    Some(&why.to_string()),
                )
                .await;
            }
        },
    };
    // One decision per request: of two submits, one claims it (in the
    // transaction that carries it out); the other gets the same answer.
    match approved {
        None => {
            if !approval::deny(&state.store, &pending, account, now).await? {
                return lost_claim(&state, &user, &pending).await;
            }
            Ok(refusal_redirect(
                &request.redirect_uri,
                &approval::denied(),
                request.state.as_deref(),
                &state.issuer,
            ))
        }
        Some(scopes) => {
            match approval::approve(&state.store, &pending, account, &scopes, now).await? {
                Some(code) => code_redirect(&state, request, &code),
                None => lost_claim(&state, &user, &pending).await,
            }
        }
    }
}

#[derive(Deserialize)]
pub struct PasswordForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    request: String,
    #[serde(default)]
    password: Password,
}

pub async fn confirm_password(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    user: Option<SignedIn>,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<PasswordForm>,
) -> Result<Response, PageError> {
    let Some(user) = user else {
        return Err(PageError::BadRequest(
            "You were signed out. Go back to the app and connect again.".into(),
        ));
    };
    session::verify_csrf(&user.session, &form.csrf).await?;
    let now = state.clock.now();
    let (pending, client) = load_waiting(&state, &user, &form.request).await?;
    if pending.answered.is_some() {
        return Err(expired());
    }
    let ok = state
        .signin
        .confirm_password(
            &user.account,
            &form.password,
            peer.ip(),
            session::device_cookie(&state, &headers).as_deref(),
            now,
        )
        .await?;
    if !ok {
        let csrf = session::csrf_token(&user.session).await?;
        let mut response = render(&PasswordPage {
            client_name: &client.name,
            requested: pending.request.prompt.login || pending.request.max_age.is_some(),
            email: &user.account.email,
            csrf: &csrf,
            request_id: &form.request,
            error: Some("That password is not right."),
        });
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        return Ok(no_store(response));
    }
    session::password_confirmed(&user.session, now).await?;
    pending::reauthenticated(&state.store, &pending.id, user.account.user_id(), now).await?;
    let next = format!(
        "/authorize/consent?{}",
        serde_urlencoded::to_string([("request", form.request.as_str())]).unwrap_or_default()
    );
    Ok(Redirect::to(&next).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Scope;

    #[test]
    fn the_consent_page_escapes_what_the_client_chose() {
        let page = ConsentPage {
            client_name: "<script>alert(1)</script>",
            unverified: true,
            document_host: None,
            redirect_host: "127.0.0.1",
            loopback: true,
            asked_again: true,
            resource: "https://coop.example/mcp",
            farm_name: "Hillside",
            email: "a@b.example",
            scopes: vec![ScopeView {
                name: "farm:read",
                description: Scope::FarmRead.description(),
                remembered: true,
            }],
            csrf: "c",
            request_id: "r",
            error: None,
        };
        let html = page.render().unwrap();
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("script&#62;alert(1)"), "{html}");
        assert!(html.contains("unverified"));
        assert!(html.contains("allowed before"), "{html}");
    }
}
