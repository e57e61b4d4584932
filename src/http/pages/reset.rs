//! `/password-reset?token=…`: a person follows a reset link, reads what
//! choosing a new password will do, and chooses one.
//!
//! Signed out like `/login`: the form's CSRF token is the signed-out
//! form's (a signed cookie, no session). Opening the page changes nothing;
//! only the POST spends the link. The link's token is in the query (left
//! out of every log line) for the GET, and in the form's body for the
//! POST. What a link is, and what choosing a password does, is
//! [`crate::identity::reset`]'s; a link that does not work is a
//! [`PageError::ResetLink`] page.

use askama::Template;
use axum::Form;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;

use crate::admin::pages::words::instant;
use crate::http::error::{PageError, render};
use crate::http::session;
use crate::identity::reset::{self, Chosen, LinkState, NewPassword};
use crate::secrets::{CsrfToken, Password, ResetToken};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "password_reset.html")]
struct ResetPage<'a> {
    csrf: &'a str,
    token: &'a str,
    email: &'a str,
    expires: &'a str,
    error: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "password_reset_done.html")]
struct DonePage<'a> {
    email: &'a str,
}

/// The person and expiry of a link that works now; any other is its page.
async fn usable(state: &AppState, token: &ResetToken) -> Result<(String, i64), PageError> {
    match reset::state(&state.store, token, state.clock.now()).await? {
        LinkState::Usable { email, expires_at } => Ok((email, expires_at)),
        other => Err(PageError::ResetLink(other)),
    }
}

#[derive(Deserialize)]
pub struct LinkQuery {
    #[serde(default)]
    token: ResetToken,
}

pub async fn show(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<LinkQuery>,
) -> Result<Response, PageError> {
    let now = state.clock.now();
    let (email, expires_at) = usable(&state, &query.token).await?;
    let form = session::signed_out_form_token(&state, &headers, now);
    let page = render(&ResetPage {
        csrf: form.token().expose(),
        token: query.token.expose(),
        email: &email,
        expires: &instant(expires_at),
        error: None,
    });
    Ok(form.attach(&state, page))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ResetForm {
    csrf: CsrfToken,
    token: ResetToken,
    new_password: Password,
    confirm_password: Password,
}

pub async fn choose(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<ResetForm>,
) -> Result<Response, PageError> {
    let now = state.clock.now();
    session::verify_signed_out_form(&state, &headers, &form.csrf, now)?;
    let password = NewPassword {
        new: &form.new_password,
        confirm: &form.confirm_password,
    };
    match reset::choose(&state.store, &state.passwords, &form.token, password, now).await? {
        Chosen::Done { email } => Ok(render(&DonePage { email: &email })),
        Chosen::Gone(link) => Err(PageError::ResetLink(link)),
        Chosen::Refused(message) => {
            // The form again, saying why; the link still works.
            let (email, expires_at) = usable(&state, &form.token).await?;
            let mut response = render(&ResetPage {
                csrf: form.csrf.expose(),
                token: form.token.expose(),
                email: &email,
                expires: &instant(expires_at),
                error: Some(&message),
            });
            *response.status_mut() = StatusCode::BAD_REQUEST;
            Ok(response)
        }
    }
}
