//! `/login` and `/logout`.
//!
//! The sign-in decision (throttle, device cookie, password, disabled) is
//! [`crate::identity::SignIn`]'s, and a disabled account gets the page a
//! wrong password gets; what is left here is HTTP: the signed-out
//! form's CSRF cookie (no session is made for an anonymous page), a new
//! session id once the password is right (no fixation), the device cookie,
//! and the return path, accepted only as a local path.

use std::net::SocketAddr;

use askama::Template;
use axum::Form;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use tower_sessions::Session;

use crate::http::error::{PageError, render, wait_in_words};
use crate::http::session::{self, CHANGE_PASSWORD_PATH, SignedIn, safe_return_path};
use crate::identity::{Attempt, Outcome, SignInError};
use crate::secrets::{CsrfToken, Password};
use crate::state::AppState;
use crate::storage::audit::{self, AuditEvent, AuditKind};

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage<'a> {
    csrf: &'a str,
    email: &'a str,
    return_to: &'a str,
    error: Option<&'a str>,
}

/// The one refusal of a sign-in that was checked: a wrong password, an
/// unknown email and a disabled account all end here, so the page must say
/// so, and who can help.
const REFUSED: &str = "That email and password do not match, or the account is disabled. \
     If you cannot sign in, your farm's owner can help.";

/// Who can help a person locked out by their own failed sign-ins.
const FORGOTTEN: &str = "If you have forgotten your password, your farm's owner can give you \
     a link to choose a new one.";

#[derive(Deserialize)]
pub struct LoginQuery {
    return_to: Option<String>,
}

pub async fn show(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<LoginQuery>,
) -> Response {
    let form = session::signed_out_form_token(&state, &headers, state.clock.now());
    let return_to = safe_return_path(query.return_to.as_deref());
    let page = render(&LoginPage {
        csrf: form.token().expose(),
        email: "",
        return_to: &return_to,
        error: None,
    });
    form.attach(&state, page)
}

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    csrf: CsrfToken,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: Password,
    return_to: Option<String>,
}

pub async fn submit(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: Session,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Result<Response, PageError> {
    let now = state.clock.now();
    session::verify_signed_out_form(&state, &headers, &form.csrf, now)?;
    let return_to = safe_return_path(form.return_to.as_deref());
    let device_cookie = session::device_cookie(&state, &headers);
    let attempt = Attempt {
        email: &form.email,
        password: &form.password,
        address: peer.ip(),
        device_cookie: device_cookie.as_ref(),
    };
    // The form again, with what went wrong (the token is the one just
    // checked against its cookie).
    let refuse = |status: StatusCode, message: &str| {
        let mut response = render(&LoginPage {
            csrf: form.csrf.expose(),
            email: form.email.trim(),
            return_to: &return_to,
            error: Some(message),
        });
        *response.status_mut() = status;
        response
    };
    let (account, device_cookie) = match state.signin.attempt(attempt, now).await {
        Ok(Outcome::SignedIn {
            account,
            device_cookie,
        }) => (account, device_cookie),
        Ok(Outcome::Refused) => {
            return Ok(refuse(StatusCode::UNAUTHORIZED, REFUSED));
        }
        Err(SignInError::Throttled(wait)) => {
            let mut response = refuse(
                StatusCode::TOO_MANY_REQUESTS,
                &format!(
                    "Too many failed sign-ins. Try again in {}. {FORGOTTEN}",
                    wait_in_words(wait)
                ),
            );
            if let Ok(value) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            return Ok(response);
        }
        Err(err) => return Err(err.into()),
    };

    session::sign_in(&session, &account, now).await?;
    let target = if account.must_change_password {
        CHANGE_PASSWORD_PATH
    } else {
        return_to.as_str()
    };
    let mut response = Redirect::to(target).into_response();
    session::set_device_cookie(&state, &mut response, &device_cookie);
    Ok(response)
}

#[derive(Deserialize)]
pub struct SignOutForm {
    #[serde(default)]
    csrf: CsrfToken,
}

pub async fn sign_out(
    State(state): State<AppState>,
    session: Session,
    user: Option<SignedIn>,
    Form(form): Form<SignOutForm>,
) -> Result<Response, PageError> {
    session::verify_csrf(&session, &form.csrf).await?;
    if let Some(user) = user {
        let mut event = AuditEvent::new(AuditKind::SignOut);
        event.farm = Some(user.account.farm());
        event.user = Some(user.account.user_id());
        audit::record_alone(&state.store, &event, state.clock.now()).await?;
    }
    session::sign_out(&session).await?;
    Ok(Redirect::to("/login").into_response())
}
