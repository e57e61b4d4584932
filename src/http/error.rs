//! Browser pages' errors: where a [`PageError`] becomes an HTML page in
//! plain words (the rule for every kind of client: [`crate::http`]).
//!
//! Internal causes are logged with the request's span and never shown: the
//! person sees "something went wrong" and the request id to quote. A
//! database out of reach is its own answer, 503 with `Retry-After`: nothing
//! is wrong with the person's session or input, and they should try again.
//! The authorization endpoint's refusals that cannot go back to the client
//! (no trusted redirect URI yet) are pages too ([`PageError::Authorization`],
//! [`PageError::DocumentNotFetched`]).

use std::time::Duration;

use askama::Template;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

use crate::identity::PasswordError;
use crate::identity::reset::{LIFETIME, LinkState, ResetError};
use crate::oauth::authorize::PageRefusal;
use crate::oauth::cimd::{Limit, Throttle};
use crate::storage::{RETRY_AFTER_UNAVAILABLE, StoreError, sessions};

/// A refusal or failure on a browser page.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("bad request: {0}")]
    BadRequest(String),
    /// The form's CSRF token is missing or wrong, or the POST came from
    /// another origin.
    #[error("the form was not sent from this site")]
    Csrf,
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("not found")]
    NotFound,
    /// The action would break a rule of the farm (the last owner).
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("too many attempts; retry in {0:?}")]
    TooManyAttempts(Duration),
    /// A password reset link that does not work (any state but usable):
    /// 404 for one never made, 403 for a disabled account's, 410 for one
    /// that ended (used, replaced, expired).
    #[error("password reset link not usable: {0:?}")]
    ResetLink(LinkState),
    /// An authorization request that cannot be trusted with a redirect:
    /// 400, nothing sent to the app.
    #[error("authorization request refused: {0}")]
    Authorization(PageRefusal),
    /// An authorization request naming a metadata document that a fetch
    /// limit keeps Coop from fetching now (threat 33): "not now", 429 when
    /// the limit is the requester's own address, 503 when it is one shared
    /// by everyone (per host, in flight), with `Retry-After`.
    #[error("client metadata document not fetched now: {0}")]
    DocumentNotFetched(Throttle),
    /// The database cannot be reached or written just now; the detail is
    /// for the log.
    #[error("unavailable: {0}")]
    Unavailable(String),
    #[error("internal: {0}")]
    Internal(String),
}

impl From<StoreError> for PageError {
    fn from(err: StoreError) -> Self {
        if err.is_unavailable() {
            Self::Unavailable(err.to_string())
        } else {
            Self::Internal(err.to_string())
        }
    }
}

impl From<PasswordError> for PageError {
    fn from(err: PasswordError) -> Self {
        Self::Internal(err.to_string())
    }
}

impl From<ResetError> for PageError {
    fn from(err: ResetError) -> Self {
        match err {
            ResetError::Store(err) => err.into(),
            ResetError::Password(err) => err.into(),
        }
    }
}

/// A reset link that does not work, in words: why, and who can help.
fn reset_link_answer(state: &LinkState) -> (StatusCode, &'static str, String) {
    let ask = "Ask your farm's owner for a new link.";
    let (status, message) = match state {
        LinkState::Used => (
            StatusCode::GONE,
            format!(
                "This link was already used to choose a new password, and works only once. Sign in with that password; if it was not you, or you have lost it, tell your farm's owner. {ask}"
            ),
        ),
        LinkState::Replaced => (
            StatusCode::GONE,
            format!(
                "A newer link was made for this account, or its password was changed, since this link was made. Use the newest link you were given, or: {ask}"
            ),
        ),
        LinkState::Expired => (
            StatusCode::GONE,
            format!(
                "This link has expired: a link works for {} hours. {ask}",
                LIFETIME.whole_hours()
            ),
        ),
        LinkState::Disabled => (
            StatusCode::FORBIDDEN,
            "This account is disabled, so a new password would not let you in. Your farm's owner can enable it.".to_owned(),
        ),
        LinkState::Unknown | LinkState::Usable { .. } => (
            StatusCode::NOT_FOUND,
            format!("Coop made no such link. Check that you copied all of it. {ask}"),
        ),
    };
    (status, "This link cannot be used", message)
}

impl From<crate::identity::SignInError> for PageError {
    fn from(err: crate::identity::SignInError) -> Self {
        match err {
            crate::identity::SignInError::Throttled(wait) => Self::TooManyAttempts(wait),
            crate::identity::SignInError::Store(err) => err.into(),
            other => Self::Internal(other.to_string()),
        }
    }
}

/// A wait as a person reads it: seconds up to two minutes, then minutes,
/// rounded up (never "0 seconds").
pub fn wait_in_words(wait: Duration) -> String {
    let seconds = wait.as_secs().max(1);
    if seconds < 120 {
        format!("{seconds} seconds")
    } else {
        format!("{} minutes", seconds.div_ceil(60))
    }
}

impl From<tower_sessions::session::Error> for PageError {
    fn from(err: tower_sessions::session::Error) -> Self {
        use tower_sessions::{session, session_store};
        match &err {
            session::Error::Store(session_store::Error::Backend(message))
                if message == sessions::UNAVAILABLE =>
            {
                Self::Unavailable(sessions::take_unavailable().unwrap_or_else(|| message.clone()))
            }
            _ => Self::Internal(format!("session: {err}")),
        }
    }
}

#[derive(Template)]
#[template(path = "error.html")]
pub struct ErrorPage<'a> {
    pub title: &'a str,
    pub message: &'a str,
}

/// Renders a template, or a bare 500 if the template itself fails.
pub fn render(template: &impl Template) -> Response {
    match template.render() {
        Ok(body) => Html(body).into_response(),
        Err(err) => {
            tracing::error!(error = %err, "template failed to render");
            (StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong.").into_response()
        }
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let (status, title, message) = match &self {
            Self::BadRequest(msg) => (StatusCode::BAD_REQUEST, "That did not work", msg.clone()),
            Self::Csrf => (
                StatusCode::FORBIDDEN,
                "Please try again",
                "This form had expired or was not sent from this site. Go back, reload the page and try again."
                    .to_owned(),
            ),
            Self::Forbidden(msg) => (StatusCode::FORBIDDEN, "Not allowed", msg.clone()),
            Self::NotFound => (
                StatusCode::NOT_FOUND,
                "Not found",
                "There is nothing at this address.".to_owned(),
            ),
            Self::Conflict(msg) => (StatusCode::CONFLICT, "That cannot be done", msg.clone()),
            Self::Authorization(refusal) => {
                tracing::info!(reason = %refusal, "authorization request refused with a page");
                (
                    StatusCode::BAD_REQUEST,
                    "That did not work",
                    format!(
                        "This sign-in link cannot be used: {refusal}. Nothing was sent to the app. Go back to the app and try connecting again."
                    ),
                )
            }
            Self::DocumentNotFetched(throttle) => {
                let (status, why) = match throttle.limit {
                    Limit::Network => (
                        StatusCode::TOO_MANY_REQUESTS,
                        "too many application descriptions were fetched for your network address",
                    ),
                    Limit::Host | Limit::InFlight | Limit::NetworkInFlight => (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "Coop is fetching too many application descriptions at the moment",
                    ),
                };
                tracing::info!(limit = ?throttle.limit, "authorization request refused: fetch limit");
                (
                    status,
                    "Try again shortly",
                    format!(
                        "This sign-in link cannot be used right now: the application's description could not be fetched, because {why}. Nothing was sent to the app. Try again in {} seconds.",
                        throttle.retry_after.as_secs().max(1)
                    ),
                )
            }
            Self::TooManyAttempts(wait) => (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many attempts",
                format!(
                    "Too many failed password attempts. Try again in {}.",
                    wait_in_words(*wait)
                ),
            ),
            Self::ResetLink(state) => reset_link_answer(state),
            Self::Unavailable(detail) => {
                tracing::warn!(error = %detail, "page not served: the database is unavailable");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Try again shortly",
                    format!(
                        "Coop cannot reach its records just now. Nothing is wrong with your sign-in or with what you sent. Try again in {} seconds.",
                        RETRY_AFTER_UNAVAILABLE.as_secs()
                    ),
                )
            }
            Self::Internal(detail) => {
                tracing::error!(detail = %detail, "request failed");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Something went wrong",
                    "Something went wrong on our side. Please try again in a moment.".to_owned(),
                )
            }
        };
        let mut response = render(&ErrorPage {
            title,
            message: &message,
        });
        *response.status_mut() = status;
        let retry_after = match &self {
            Self::TooManyAttempts(wait) => Some(*wait),
            Self::DocumentNotFetched(throttle) => Some(throttle.retry_after),
            Self::Unavailable(_) => Some(RETRY_AFTER_UNAVAILABLE),
            _ => None,
        };
        if let Some(wait) = retry_after
            && let Ok(value) = HeaderValue::from_str(&wait.as_secs().max(1).to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_reads_in_seconds_then_minutes_rounded_up() {
        assert_eq!(wait_in_words(Duration::ZERO), "1 seconds");
        assert_eq!(wait_in_words(Duration::from_secs(60)), "60 seconds");
        assert_eq!(wait_in_words(Duration::from_secs(119)), "119 seconds");
        assert_eq!(wait_in_words(Duration::from_secs(120)), "2 minutes");
        assert_eq!(wait_in_words(Duration::from_secs(121)), "3 minutes");
    }

    #[tokio::test]
    async fn a_throttled_document_fetch_is_a_page_saying_when_to_retry() {
        for (limit, status) in [
            (Limit::Network, 429),
            (Limit::Host, 503),
            (Limit::InFlight, 503),
            (Limit::NetworkInFlight, 503),
        ] {
            let response = PageError::DocumentNotFetched(Throttle {
                limit,
                retry_after: std::time::Duration::from_secs(4),
            })
            .into_response();
            assert_eq!(response.status().as_u16(), status, "{limit:?}");
            assert_eq!(response.headers()["retry-after"], "4");
            assert!(response.headers().get("location").is_none());
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
                .await
                .unwrap();
            let html = String::from_utf8(bytes.to_vec()).unwrap();
            assert!(html.contains("Try again in 4 seconds"), "{html}");
        }
    }
}
