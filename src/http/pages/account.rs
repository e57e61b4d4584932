//! `/account/password`: change one's own password.
//!
//! Reachable by a user flagged `must_change_password` (every other page
//! sends them here). A change moves the credential epoch: every other
//! browser session and every access token of the user dies, while this
//! session adopts the new epoch and stays signed in.

use askama::Template;
use axum::Form;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use std::net::SocketAddr;

use crate::http::error::{PageError, render};
use crate::http::session::{self, SignedIn};
use crate::identity::password::check_new_password;
use crate::secrets::{CsrfToken, Password};
use crate::state::AppState;
use crate::storage::audit::{self, AuditEvent, AuditKind};
use crate::storage::{StoreError, users};

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

#[derive(Deserialize)]
pub struct PasswordForm {
    #[serde(default)]
    csrf: CsrfToken,
    #[serde(default)]
    current_password: Password,
    #[serde(default)]
    new_password: Password,
    #[serde(default)]
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

    let refuse = |message: &str, csrf: &CsrfToken| {
        let mut response = render(&PasswordPage {
            csrf: csrf.expose(),
            forced: user.account.must_change_password,
            error: Some(message),
        });
        *response.status_mut() = StatusCode::BAD_REQUEST;
        response
    };
    let csrf = session::csrf_token(&user.session).await?;

    // The current password is a guessable secret like any sign-in.
    let current_ok = state
        .signin
        .confirm_password(
            &user.account,
            &form.current_password,
            peer.ip(),
            session::device_cookie(&state, &headers).as_ref(),
            state.clock.now(),
        )
        .await?;
    if !current_ok {
        return Ok(refuse("Your current password is not right.", &csrf));
    }
    if form.new_password != form.confirm_password {
        return Ok(refuse("The two new passwords are not the same.", &csrf));
    }
    if let Err(message) = check_new_password(&form.new_password) {
        return Ok(refuse(&message, &csrf));
    }
    if form.new_password == form.current_password {
        return Ok(refuse(
            "Choose a password different from the current one.",
            &csrf,
        ));
    }

    let hash = state.passwords.hash(&form.new_password).await?;
    let now = state.clock.now();
    let mut tx = state.store.write().await?;
    let epoch = match users::change_password(
        &mut tx,
        user.account.user_id(),
        user.account.credential_epoch,
        &hash,
        now,
    )
    .await
    {
        Ok(epoch) => epoch,
        // The epoch moved under us (signed out everywhere meanwhile).
        Err(StoreError::NotFound) => return Ok(Redirect::to("/login").into_response()),
        Err(err) => return Err(err.into()),
    };
    let mut event = AuditEvent::new(AuditKind::PasswordChanged);
    event.farm = Some(user.account.farm());
    event.user = Some(user.account.user_id());
    audit::record(&mut tx, &event, now).await?;
    tx.commit().await?;
    session::adopt_epoch(&user.session, epoch, now).await?;
    Ok(Redirect::to("/").into_response())
}
