//! The one place an error becomes a response.
//!
//! Browser pages answer with an HTML page in plain words ([`PageError`]).
//! Internal causes are logged with the request's span and never shown: the
//! person sees "something went wrong" and the request id to quote.

use std::time::Duration;

use askama::Template;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

use crate::identity::PasswordError;
use crate::storage::StoreError;

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
    #[error("internal: {0}")]
    Internal(String),
}

impl From<StoreError> for PageError {
    fn from(err: StoreError) -> Self {
        Self::Internal(err.to_string())
    }
}

impl From<PasswordError> for PageError {
    fn from(err: PasswordError) -> Self {
        Self::Internal(err.to_string())
    }
}

impl From<crate::identity::SignInError> for PageError {
    fn from(err: crate::identity::SignInError) -> Self {
        match err {
            crate::identity::SignInError::Throttled(wait) => Self::TooManyAttempts(wait),
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
        Self::Internal(format!("session: {err}"))
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
            Self::TooManyAttempts(wait) => (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many attempts",
                format!(
                    "Too many failed password attempts. Try again in {}.",
                    wait_in_words(*wait)
                ),
            ),
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
        if let Self::TooManyAttempts(wait) = &self
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
}
