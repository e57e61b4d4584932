//! `/login` and `/logout`.
//!
//! Sign-in, in order: the form's CSRF token → the throttle (per account and
//! per address, spent before any hashing) → one argon2 verification, against
//! the account's hash or a decoy so an unknown email costs the same → a
//! disabled account is refused only after a correct password (so the refusal
//! tells a guesser nothing) → a new session id → the return path, accepted
//! only as a local path.

use std::net::SocketAddr;

use askama::Template;
use axum::Form;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use tower_sessions::Session;

use crate::domain::Email;
use crate::http::error::{PageError, render};
use crate::http::session::{self, CHANGE_PASSWORD_PATH, SignedIn, safe_return_path};
use crate::state::AppState;
use crate::storage::audit::{self, AuditEvent, AuditKind};
use crate::storage::users;

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage<'a> {
    csrf: &'a str,
    email: &'a str,
    return_to: &'a str,
    error: Option<&'a str>,
}

#[derive(Deserialize)]
pub struct LoginQuery {
    return_to: Option<String>,
}

pub async fn show(
    State(_state): State<AppState>,
    session: Session,
    Query(query): Query<LoginQuery>,
) -> Result<Response, PageError> {
    let csrf = session::csrf_token(&session).await?;
    let return_to = safe_return_path(query.return_to.as_deref());
    Ok(render(&LoginPage {
        csrf: &csrf,
        email: "",
        return_to: &return_to,
        error: None,
    }))
}

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    return_to: Option<String>,
}

pub async fn submit(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: Session,
    Form(form): Form<LoginForm>,
) -> Result<Response, PageError> {
    session::verify_csrf(&session, &form.csrf).await?;
    let return_to = safe_return_path(form.return_to.as_deref());
    let typed_email = form.email.trim().to_lowercase();

    state
        .login_throttle
        .attempt(&typed_email, peer.ip())
        .map_err(PageError::TooManyAttempts)?;

    let account = match Email::parse(&typed_email) {
        Ok(email) => users::find_by_email(&mut state.store.read().await?, &email).await?,
        Err(_) => None,
    };
    let password_ok = state
        .passwords
        .verify(
            &form.password,
            account.as_ref().map(|a| a.password_hash.as_str()),
        )
        .await?;
    let now = state.clock.now();

    let refusal = match &account {
        Some(account) if password_ok && account.disabled => Some((
            StatusCode::FORBIDDEN,
            "This account is disabled. Ask your farm's owner to enable it.",
        )),
        Some(_) if password_ok => None,
        _ => Some((
            StatusCode::UNAUTHORIZED,
            "That email and password do not match.",
        )),
    };

    if let Some((status, message)) = refusal {
        let mut event = AuditEvent::new(AuditKind::SignInFailed);
        event.farm = account.as_ref().map(|a| a.farm());
        event.user = account.as_ref().map(|a| a.user_id());
        event.detail = serde_json::json!({ "address": peer.ip().to_string() });
        audit::record_alone(&state.store, &event, now).await?;

        let csrf = session::csrf_token(&session).await?;
        let mut response = render(&LoginPage {
            csrf: &csrf,
            email: &typed_email,
            return_to: &return_to,
            error: Some(message),
        });
        *response.status_mut() = status;
        return Ok(response);
    }

    let Some(account) = account else {
        return Err(PageError::Internal(
            "sign-in accepted without an account".into(),
        ));
    };
    session::sign_in(&session, &account, now).await?;
    let mut event = AuditEvent::new(AuditKind::SignIn);
    event.farm = Some(account.farm());
    event.user = Some(account.user_id());
    audit::record_alone(&state.store, &event, now).await?;

    if account.must_change_password {
        return Ok(Redirect::to(CHANGE_PASSWORD_PATH).into_response());
    }
    Ok(Redirect::to(&return_to).into_response())
}

#[derive(Deserialize)]
pub struct SignOutForm {
    #[serde(default)]
    csrf: String,
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
