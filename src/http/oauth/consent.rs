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
//! The handlers read the form and the session, call one function of
//! [`crate::oauth::consent`], which loads, decides and carries out the
//! next step, and render what it returns. Waiting requests are kept and
//! answered once by [`crate::oauth::pending`]: a form submitted twice gets
//! the first submit's redirect (the same code), or a 409 page once that
//! code is spent, never a second code.
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

use crate::http::error::{PageError, render};
use crate::http::form;
use crate::http::session::{self, CHANGE_PASSWORD_PATH, SignedIn};
use crate::oauth::authorize::AuthorizationRequest;
use crate::oauth::client::Client;
use crate::oauth::consent::{self, ConsentError, Entered, Next, Person, Place, Waiting};
use crate::oauth::params::Params;
use crate::oauth::pending::Decision;
use crate::secrets::{CsrfToken, Password};
use crate::state::AppState;

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

impl From<ConsentError> for PageError {
    fn from(err: ConsentError) -> Self {
        match err {
            ConsentError::Store(err) => err.into(),
            ConsentError::SignIn(err) => err.into(),
            ConsentError::Expired => Self::BadRequest(
                "This request has expired or was already answered. Go back to the app and connect again."
                    .into(),
            ),
            ConsentError::ClientGone => {
                Self::BadRequest("The app is no longer registered.".into())
            }
            ConsentError::AlreadyAnswered => Self::Conflict(
                "This request was already answered. If the app did not connect, go back to it and connect again."
                    .into(),
            ),
            ConsentError::Internal(why) => Self::Internal(why.into()),
        }
    }
}

fn place(state: &AppState) -> Place<'_> {
    Place {
        store: &state.store,
        issuer: &state.issuer,
        now: state.clock.now(),
    }
}

fn person(user: &SignedIn) -> Person<'_> {
    Person {
        account: &user.account,
        password_entered_at: user.authenticated_at,
    }
}

/// Decides and answers the next step for a checked request that just
/// arrived from `/authorize`.
pub async fn proceed(
    state: &AppState,
    user: &SignedIn,
    client: &Client,
    request: &AuthorizationRequest,
) -> Result<Response, PageError> {
    let next = consent::proceed(place(state), person(user), client, Waiting::New(request)).await?;
    render_next(user, next).await
}

/// Renders what the browser gets next.
async fn render_next(user: &SignedIn, next: Next) -> Result<Response, PageError> {
    let account = &user.account;
    match next {
        Next::Refused(why) => Ok(PageError::Forbidden(why.message().to_owned()).into_response()),
        Next::ChangePassword => Ok(Redirect::to(CHANGE_PASSWORD_PATH).into_response()),
        Next::ToClient(url) => Ok(Redirect::to(&url).into_response()),
        Next::ConfirmPassword(screen) => {
            let csrf = session::csrf_token(&user.session).await?;
            let mut response = render(&PasswordPage {
                client_name: &screen.client_name,
                requested: screen.requested,
                email: &account.email,
                csrf: csrf.expose(),
                request_id: &screen.request_id,
                error: screen
                    .wrong_password
                    .then_some("That password is not right."),
            });
            if screen.wrong_password {
                *response.status_mut() = StatusCode::UNAUTHORIZED;
            }
            Ok(no_store(response))
        }
        Next::AskConsent(screen) => {
            let csrf = session::csrf_token(&user.session).await?;
            let error = screen.error.as_ref().map(ToString::to_string);
            let mut response = render(&ConsentPage {
                client_name: &screen.client_name,
                unverified: screen.unverified,
                document_host: screen.document_host.as_deref(),
                redirect_host: &screen.redirect_host,
                loopback: screen.loopback,
                asked_again: screen.asked_again,
                resource: &screen.resource,
                farm_name: &account.farm_name,
                email: &account.email,
                scopes: screen
                    .scopes
                    .iter()
                    .map(|choice| ScopeView {
                        name: choice.scope.as_str(),
                        description: choice.scope.description(),
                        remembered: choice.remembered,
                    })
                    .collect(),
                csrf: csrf.expose(),
                request_id: &screen.request_id,
                error: error.as_deref(),
            });
            if error.is_some() {
                *response.status_mut() = StatusCode::BAD_REQUEST;
            }
            Ok(no_store(response))
        }
    }
}

/// Sends a signed-out person to sign in, then back to `return_to`.
pub(super) fn sign_in_first(return_to: &str) -> Response {
    let login = format!(
        "/login?{}",
        serde_urlencoded::to_string([("return_to", return_to)]).unwrap_or_default()
    );
    Redirect::to(&login).into_response()
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
    let next = consent::show(place(&state), person(&user), &query.request).await?;
    render_next(&user, next).await
}

/// The fields of the consent form.
struct ConsentForm<'a> {
    csrf: &'a str,
    request: &'a str,
    decision: &'a str,
    scopes: Vec<&'a str>,
}

fn consent_form(params: &Params) -> Result<ConsentForm<'_>, PageError> {
    let [csrf, request, decision] = form::singles(params, ["csrf", "request", "decision"])?;
    Ok(ConsentForm {
        csrf,
        request,
        decision,
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
    session::verify_csrf(&user.session, &CsrfToken::from(form.csrf)).await?;
    let decision = match form.decision {
        "approve" => Decision::Approve,
        "deny" => Decision::Deny,
        _ => return Err(PageError::BadRequest("Choose Approve or Deny.".into())),
    };
    let next = consent::answer(
        place(&state),
        person(&user),
        form.request,
        decision,
        &form.scopes,
    )
    .await?;
    render_next(&user, next).await
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct PasswordForm {
    csrf: CsrfToken,
    request: String,
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
    let place = place(&state);
    let device = session::device_cookie(&state, &headers);
    let entered = Entered {
        password: &form.password,
        address: peer.ip(),
        device_cookie: device.as_ref(),
    };
    let wrong =
        consent::confirm_password(place, person(&user), &state.signin, &form.request, entered)
            .await?;
    if let Some(screen) = wrong {
        return render_next(&user, Next::ConfirmPassword(screen)).await;
    }
    session::password_confirmed(&user.session, place.now).await?;
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
