//! Browser pages: sign-in, sign-out, the start page, password change, a
//! password reset link's page, and the person's connected apps.
//!
//! Every page route sits behind the session layer and [`same_origin_posts`]:
//! a state-changing request whose `Origin` is present and not the issuer's is
//! refused before any handler runs, and every form also carries the
//! session's CSRF token.
//!
//! What the account pages load and decide is [`crate::admin::pages`]'s;
//! sign-in is [`crate::identity::SignIn`]'s, and reset links
//! [`crate::identity::reset`]'s.

mod account;
pub mod apps;
mod home;
mod login;
mod reset;
pub mod view;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::error::PageError;
use crate::admin::pages::PageRefusal;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(home::show))
        .route("/login", get(login::show).post(login::submit))
        .route("/logout", post(login::sign_out))
        .route("/account/apps", get(apps::list))
        .route(
            "/account/apps/{grant}/disconnect",
            get(apps::confirm).post(apps::disconnect),
        )
        .route(
            crate::identity::reset::PATH,
            get(reset::show).post(reset::choose),
        )
        .route(
            super::session::CHANGE_PASSWORD_PATH,
            get(account::show_password).post(account::change_password),
        )
}

/// Refuses a POST whose `Origin` names another site (threat: CSRF). Browsers
/// send `Origin` on every cross-site POST; a request without one (an old
/// client, a script) still needs the form's CSRF token.
pub async fn same_origin_posts(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let foreign = request.method() == Method::POST
        && request
            .headers()
            .get(header::ORIGIN)
            .is_some_and(|origin| origin.as_bytes() != state.issuer.as_str().as_bytes());
    if foreign {
        return PageError::Csrf.into_response();
    }
    next.run(request).await
}

/// A refusal of [`crate::admin::pages`] as a page.
impl From<PageRefusal> for PageError {
    fn from(err: PageRefusal) -> Self {
        match err {
            PageRefusal::Invalid(reason) => Self::BadRequest(reason),
            PageRefusal::NotFound => Self::NotFound,
            PageRefusal::Conflict(reason) => Self::Conflict(reason),
            PageRefusal::Store(err) => err.into(),
            PageRefusal::SignIn(err) => err.into(),
            PageRefusal::Internal(detail) => Self::Internal(detail),
        }
    }
}
