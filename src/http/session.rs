//! The browser session: who is signed in, and the CSRF token of their forms;
//! and the two cookies that are not a session.
//!
//! A session row exists only for someone signed in: a signed-out form
//! (`/login`) keeps its CSRF token in a signed cookie instead (OWASP's
//! signed double-submit cookie), so anonymous page loads write nothing
//! (threat 34), and the session is created when the password is right. The
//! device cookie tells [`crate::identity`] that this browser signed in as an
//! account before. Both cookies are HttpOnly, `Secure` with the `__Host-`
//! prefix when the issuer is https (so no sibling host can plant one), and
//! MACed with keys every replica shares.
//!
//! A session stores the user id, the credential epoch it was made under, the
//! time of the last password entry, and a CSRF token. On every request the
//! user is loaded afresh: a session whose epoch no longer matches the user's
//! (password changed, signed out everywhere) or whose user is disabled is
//! flushed and the request proceeds as signed out. That costs one indexed
//! query per page view, and it is what makes "sign out everywhere" immediate
//! on every replica.

use axum::extract::{FromRequestParts, OptionalFromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use time::OffsetDateTime;
use tower_sessions::Session;
use tower_sessions::cookie::{Cookie, SameSite};

use super::error::PageError;
use crate::domain::UserId;
use crate::secrets::{self, CsrfToken, DeviceCookie};
use crate::state::AppState;
use crate::storage::sessions;
use crate::storage::users::{self, Account};

const USER_ID: &str = "user_id";
const EPOCH: &str = "credential_epoch";
const AUTHENTICATED_AT: &str = "authenticated_at";
const CSRF: &str = "csrf";

/// A signed-in user whose session is still valid.
#[derive(Clone, Debug)]
pub struct SignedIn {
    pub account: Account,
    /// When the password was last entered in this session (Unix seconds).
    pub authenticated_at: i64,
    pub session: Session,
}

/// Starts a signed-in session: a new session id (no fixation), the user,
/// the epoch and the time of sign-in.
pub async fn sign_in(
    session: &Session,
    account: &Account,
    now: OffsetDateTime,
) -> Result<(), PageError> {
    session.cycle_id().await?;
    session.insert(USER_ID, account.id).await?;
    session.insert(EPOCH, account.credential_epoch).await?;
    session
        .insert(AUTHENTICATED_AT, now.unix_timestamp())
        .await?;
    // A fresh CSRF token for the new identity.
    session.insert(CSRF, secrets::random_token(32)).await?;
    Ok(())
}

/// Records the epoch a password change moved the user to, so the session
/// that made the change stays alive while every other one dies.
pub async fn adopt_epoch(
    session: &Session,
    epoch: i64,
    now: OffsetDateTime,
) -> Result<(), PageError> {
    session.cycle_id().await?;
    session.insert(EPOCH, epoch).await?;
    session
        .insert(AUTHENTICATED_AT, now.unix_timestamp())
        .await?;
    Ok(())
}

/// Records that the password was just entered again (the step-up before
/// consent): a new session id, and a fresh time of password entry.
pub async fn password_confirmed(session: &Session, now: OffsetDateTime) -> Result<(), PageError> {
    session.cycle_id().await?;
    session
        .insert(AUTHENTICATED_AT, now.unix_timestamp())
        .await?;
    Ok(())
}

pub async fn sign_out(session: &Session) -> Result<(), PageError> {
    session.flush().await?;
    Ok(())
}

/// The session's CSRF token, made on first use.
pub async fn csrf_token(session: &Session) -> Result<CsrfToken, PageError> {
    if let Some(token) = session.get::<String>(CSRF).await? {
        return Ok(CsrfToken::new(token));
    }
    let token = secrets::random_token(32);
    session.insert(CSRF, token.clone()).await?;
    Ok(CsrfToken::new(token))
}

/// Checks a submitted CSRF token against the session's, in constant time.
pub async fn verify_csrf(session: &Session, submitted: &CsrfToken) -> Result<(), PageError> {
    let submitted = submitted.expose();
    match session.get::<String>(CSRF).await? {
        Some(expected)
            if !submitted.is_empty() && secrets::constant_time_eq(&expected, submitted) =>
        {
            Ok(())
        }
        _ => Err(PageError::Csrf),
    }
}

/// The CSRF cookie of signed-out forms.
const FORM_COOKIE: &str = "coop_form";
/// The device cookie.
const DEVICE_COOKIE: &str = "coop_device";
/// How long a signed-out form's token is good for.
const FORM_TOKEN_LIFETIME: time::Duration = time::Duration::hours(12);

/// A cookie's name: with the `__Host-` prefix when the issuer is https.
fn cookie_name(state: &AppState, base: &str) -> String {
    if state.issuer.is_https() {
        format!("__Host-{base}")
    } else {
        base.to_owned()
    }
}

/// The value of the cookie `name` in the request, if it sent one.
fn request_cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|cookie| cookie.name() == name)
        .map(|cookie| cookie.value().to_owned())
}

/// Adds a `Set-Cookie` for one of our cookies: HttpOnly, Path=/, Secure on
/// https; `max_age` for a lasting one, none for one that ends with the
/// browser.
fn set_cookie(
    state: &AppState,
    response: &mut Response,
    base: &str,
    value: String,
    same_site: SameSite,
    max_age: Option<time::Duration>,
) {
    let mut cookie = Cookie::build((cookie_name(state, base), value))
        .http_only(true)
        .same_site(same_site)
        .secure(state.issuer.is_https())
        .path("/");
    if let Some(max_age) = max_age {
        cookie = cookie.max_age(max_age);
    }
    match HeaderValue::from_str(&cookie.build().to_string()) {
        Ok(value) => {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
        Err(err) => tracing::error!(error = %err, cookie = base, "cookie not set"),
    }
}

/// A signed-out form's CSRF token, and the cookie that carries it when it
/// is new.
pub struct FormToken {
    token: CsrfToken,
    cookie: Option<String>,
}

impl FormToken {
    pub fn token(&self) -> &CsrfToken {
        &self.token
    }

    /// Sets the cookie on `response` if the token is new.
    pub fn attach(self, state: &AppState, mut response: Response) -> Response {
        if let Some(cookie) = self.cookie {
            // Lax like the session: the page is often reached by a
            // redirect from a client's site.
            set_cookie(
                state,
                &mut response,
                FORM_COOKIE,
                cookie,
                SameSite::Lax,
                None,
            );
        }
        response
    }
}

fn form_tag(state: &AppState, issued: &str, token: &str) -> String {
    state.form_key.tag(&["signed-out form", issued, token])
}

/// The token in the request's form cookie, if its tag checks and it is
/// younger than [`FORM_TOKEN_LIFETIME`].
fn form_cookie_token(state: &AppState, headers: &HeaderMap, now: OffsetDateTime) -> Option<String> {
    let value = request_cookie(headers, &cookie_name(state, FORM_COOKIE))?;
    let mut parts = value.split('.');
    let (Some(issued), Some(token), Some(tag), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    if !state
        .form_key
        .verify(&["signed-out form", issued, token], tag)
    {
        return None;
    }
    let issued = OffsetDateTime::from_unix_timestamp(issued.parse().ok()?).ok()?;
    let fresh = issued <= now + time::Duration::minutes(5) && now - issued < FORM_TOKEN_LIFETIME;
    fresh.then(|| token.to_owned())
}

/// The CSRF token of a signed-out form: the one the browser's form cookie
/// already carries (so two open tabs both work), or a new one with its
/// cookie. Writes nothing to the store.
pub fn signed_out_form_token(
    state: &AppState,
    headers: &HeaderMap,
    now: OffsetDateTime,
) -> FormToken {
    if let Some(token) = form_cookie_token(state, headers, now) {
        return FormToken {
            token: CsrfToken::new(token),
            cookie: None,
        };
    }
    let token = secrets::random_token(32);
    let issued = now.unix_timestamp().to_string();
    let tag = form_tag(state, &issued, &token);
    FormToken {
        cookie: Some(format!("{issued}.{token}.{tag}")),
        token: CsrfToken::new(token),
    }
}

/// Checks a signed-out form's submitted token against its cookie, in
/// constant time: the cookie must be ours (its tag), fresh, and carry the
/// token submitted. A page on another site can neither read the cookie nor
/// make one.
pub fn verify_signed_out_form(
    state: &AppState,
    headers: &HeaderMap,
    submitted: &CsrfToken,
    now: OffsetDateTime,
) -> Result<(), PageError> {
    let submitted = submitted.expose();
    match form_cookie_token(state, headers, now) {
        Some(expected)
            if !submitted.is_empty() && secrets::constant_time_eq(&expected, submitted) =>
        {
            Ok(())
        }
        _ => Err(PageError::Csrf),
    }
}

/// The device cookie the browser sent, if any (checked by `identity`).
pub fn device_cookie(state: &AppState, headers: &HeaderMap) -> Option<DeviceCookie> {
    request_cookie(headers, &cookie_name(state, DEVICE_COOKIE)).map(DeviceCookie::new)
}

/// Gives the browser its new device cookie. Strict: only our own pages
/// post the forms it is for.
pub fn set_device_cookie(state: &AppState, response: &mut Response, value: &DeviceCookie) {
    set_cookie(
        state,
        response,
        DEVICE_COOKIE,
        value.expose().to_owned(),
        SameSite::Strict,
        Some(crate::identity::device::LIFETIME),
    );
}

async fn load(parts: &mut Parts, state: &AppState) -> Result<Option<SignedIn>, PageError> {
    let session = Session::from_request_parts(parts, state)
        .await
        .map_err(|(_, msg)| PageError::Internal(msg.to_owned()))?;
    let Some(user_id) = session.get::<uuid::Uuid>(USER_ID).await? else {
        return Ok(None);
    };
    let epoch = session.get::<i64>(EPOCH).await?.unwrap_or(-1);
    let authenticated_at = session.get::<i64>(AUTHENTICATED_AT).await?.unwrap_or(0);
    let account = users::find(&mut state.store.read().await?, UserId(user_id)).await?;
    match account {
        Some(account) if account.credential_epoch == epoch && !account.disabled => {
            Ok(Some(SignedIn {
                account,
                authenticated_at,
                session,
            }))
        }
        _ => {
            // The epoch moved, the user was disabled or deleted: this
            // session is dead everywhere.
            session.flush().await?;
            Ok(None)
        }
    }
}

impl OptionalFromRequestParts<AppState> for SignedIn {
    type Rejection = PageError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Option<Self>, Self::Rejection> {
        load(parts, state).await
    }
}

/// A page that needs a signed-in user who is not required to change their
/// password. Signed out: redirect to `/login?return_to=<this path>`. Must
/// change password: redirect to the change-password page.
#[derive(Clone, Debug)]
pub struct RequireUser(pub SignedIn);

pub enum RequireUserRejection {
    Page(PageError),
    Redirect(Redirect),
}

impl IntoResponse for RequireUserRejection {
    fn into_response(self) -> Response {
        match self {
            Self::Page(err) => err.into_response(),
            Self::Redirect(redirect) => redirect.into_response(),
        }
    }
}

pub const CHANGE_PASSWORD_PATH: &str = "/account/password";

impl FromRequestParts<AppState> for RequireUser {
    type Rejection = RequireUserRejection;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        match load(parts, state)
            .await
            .map_err(RequireUserRejection::Page)?
        {
            Some(user) if user.account.must_change_password => Err(RequireUserRejection::Redirect(
                Redirect::to(CHANGE_PASSWORD_PATH),
            )),
            Some(user) => Ok(Self(user)),
            None => {
                let here = parts
                    .uri
                    .path_and_query()
                    .map(|pq| pq.as_str())
                    .unwrap_or("/");
                let target = format!(
                    "/login?{}",
                    serde_urlencoded::to_string([("return_to", here)]).unwrap_or_default()
                );
                Err(RequireUserRejection::Redirect(Redirect::to(&target)))
            }
        }
    }
}

/// Outside the session layer: a session that could not be saved after the
/// handler because the database is out of reach becomes the 503 page, not
/// tower-sessions' bare 500 (a `GET /login` touches the database only
/// there, when it stores the new visitor's session).
pub async fn unavailable_store_is_503(request: Request, next: Next) -> Response {
    let (response, cause) = sessions::watch_unavailable(next.run(request)).await;
    match cause {
        Some(cause) if response.status() == StatusCode::INTERNAL_SERVER_ERROR => {
            PageError::Unavailable(format!("the session could not be saved: {cause}"))
                .into_response()
        }
        _ => response,
    }
}

/// A return URL after sign-in: accepted only as a local path. `//host`,
/// `/\host`, absolute URLs and anything with a scheme fall back to `/`.
pub fn safe_return_path(raw: Option<&str>) -> String {
    let Some(raw) = raw else {
        return "/".to_owned();
    };
    let local = raw.starts_with('/')
        && !raw.starts_with("//")
        && !raw.starts_with("/\\")
        && !raw.chars().any(|c| c.is_control() || c == '\\');
    if local {
        raw.to_owned()
    } else {
        "/".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::safe_return_path;

    #[test]
    fn only_local_paths_are_return_urls() {
        assert_eq!(
            safe_return_path(Some("/authorize?client_id=x")),
            "/authorize?client_id=x"
        );
        for bad in [
            "//evil.example",
            "https://evil.example/",
            "/\\evil.example",
            "evil",
            "/\tx",
            "javascript:alert(1)",
        ] {
            assert_eq!(safe_return_path(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(safe_return_path(None), "/");
    }
}
