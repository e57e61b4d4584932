//! `/account/password`: change one's own password.
//!
//! Reachable by a user flagged `must_change_password` (every other page
//! sends them here). A change moves the credential epoch: every other
//! browser session and every access token of the user dies, while this
//! session adopts the new epoch and stays signed in. The checks and the
//! change are [`crate::admin::pages::password`]'s.

use askama::Template;
use axum::Form;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use std::net::SocketAddr;

use crate::admin::pages::password::{self, Changed, Checks};
use crate::http::error::{PageError, render};
use crate::http::session::{self, SignedIn};
use crate::secrets::{CsrfToken, Password};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "password.html")]
struct PasswordPage<'a> {
    csrf: &'a str,
    forced: bool,
    error: Option<&'a str>,
}

pub async fn show_password(user: Option<SignedIn>) -> Result<Response, PageError> {
    let Some(user) = user else {
        return Ok(Redirect::to("/login?return_to=%2Faccount%2Fpassword").into_response());
    };
    let csrf = session::csrf_token(&user.session).await?;
    Ok(render(&PasswordPage {
        csrf: csrf.expose(),
        forced: user.account.must_change_password,
        error: None,
    }))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct PasswordForm {
    csrf: CsrfToken,
    current_password: Password,
    new_password: Password,
    confirm_password: Password,
}

pub async fn change_password(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    user: Option<SignedIn>,
    headers: HeaderMap,
    Form(form): Form<PasswordForm>,
) -> Result<Response, PageError> {
    let Some(user) = user else {
        return Ok(Redirect::to("/login").into_response());
    };
    session::verify_csrf(&user.session, &form.csrf).await?;
    let device_cookie = session::device_cookie(&state, &headers);
    let entered = password::PasswordForm {
        current: &form.current_password,
        new: &form.new_password,
        confirm: &form.confirm_password,
        address: peer.ip(),
        device_cookie: device_cookie.as_ref(),
    };
    let checks = Checks {
        signin: &state.signin,
        passwords: &state.passwords,
    };
    let now = state.clock.now();
    match password::change(&state.store, checks, &user.account, entered, now).await? {
        Changed::Done { epoch } => {
            session::adopt_epoch(&user.session, epoch, now).await?;
            Ok(Redirect::to("/").into_response())
        }
        // The epoch moved under us (signed out everywhere meanwhile).
        Changed::SignedOut => Ok(Redirect::to("/login").into_response()),
        Changed::Refused(message) => {
            let csrf = session::csrf_token(&user.session).await?;
            let mut response = render(&PasswordPage {
                csrf: csrf.expose(),
                forced: user.account.must_change_password,
                error: Some(&message),
            });
            *response.status_mut() = StatusCode::BAD_REQUEST;
            Ok(response)
        }
    }
}
