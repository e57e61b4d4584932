//! The consent screen, the password step-up before it, and their forms.
//!
//! - `GET /authorize/consent?request=ID` shows where a waiting request
//!   stands (after the password step-up, or on reload).
//! - `POST /authorize/consent` (CSRF token, request id, `decision`, one
//!   `scope` per ticked box): Approve records the grant and redirects with
//!   `code`, `state` and `iss`; Deny redirects with `access_denied`.
//! - `POST /authorize/confirm` (CSRF token, request id, password): the
//!   step-up, throttled like sign-in.
//!
//! Every page here is `Cache-Control: no-store`, carries the frame-denying
//! headers of every page (threat 10), and its forms the session's CSRF
//! token (threat 9). What the screen shows is what threat 12 asks for: the
//! client's name (marked unverified when self-registered), its document
//! host, the redirect host with a warning when it is this computer, the
//! resource, the farm, and each scope with its own box.

use std::net::SocketAddr;

use askama::Template;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::error::refusal_redirect;
use super::pending;
use crate::http::error::{PageError, render};
use crate::http::form;
use crate::http::session::{self, SignedIn};
use crate::oauth::authorize::{AuthorizationRequest, RedirectRefusal};
use crate::oauth::client::ClientKind;
use crate::oauth::consent::{self, FarmState, NextStep};
use crate::oauth::params::Params;
use crate::oauth::{clients, redirect_uri};
use crate::state::AppState;
use crate::storage::{farms, grants};

struct ScopeView {
    name: &'static str,
    description: &'static str,
}

#[derive(Template)]
#[template(path = "consent.html")]
struct ConsentPage<'a> {
    client_name: &'a str,
    unverified: bool,
    document_host: Option<&'a str>,
    redirect_host: &'a str,
    loopback: bool,
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
    email: &'a str,
    csrf: &'a str,
    request_id: &'a str,
    error: Option<&'a str>,
}

fn no_store(mut response: Response) -> Response {
    super::error::no_store(response.headers_mut());
    response
}

/// Decides and answers the next step for a waiting request (see
/// [`crate::oauth::consent`] for the order). `error` is shown on the
/// consent screen when re-rendering it after a refused form.
pub async fn proceed(
    state: &AppState,
    user: &SignedIn,
    request_id: &str,
    request: &AuthorizationRequest,
    error: Option<&str>,
) -> Result<Response, PageError> {
    let now = state.clock.now();
    let account = &user.account;
    let farm = farms::find(&mut state.store.read().await?, account.farm())
        .await?
        .ok_or_else(|| PageError::Internal("the member's farm is gone".into()))?;
    let existing = grants::active_for(
        &mut state.store.read().await?,
        account.user_id(),
        &request.client_id,
    )
    .await?;
    let step = consent::next_step(
        request,
        &FarmState {
            suspended: farm.suspended,
            connected_apps_enabled: farm.connected_apps_enabled,
        },
        account.credential_epoch,
        existing.as_ref(),
        user.authenticated_at,
        now,
    );
    match step {
        NextStep::Refused(why) => {
            pending::remove(&user.session, request_id, now).await?;
            Ok(PageError::Forbidden(why.message().to_owned()).into_response())
        }
        NextStep::AlreadyApproved(grant) => {
            pending::remove(&user.session, request_id, now).await?;
            let code = consent::issue_code(
                &state.store,
                request,
                account,
                grant,
                &request.scopes(),
                now,
            )
            .await?;
            code_redirect(state, request, &code)
        }
        NextStep::ConfirmPassword => {
            let csrf = session::csrf_token(&user.session).await?;
            let client_name = client_name(state, &request.client_id).await?;
            Ok(no_store(render(&PasswordPage {
                client_name: &client_name,
                email: &account.email,
                csrf: &csrf,
                request_id,
                error: None,
            })))
        }
        NextStep::AskConsent => {
            let csrf = session::csrf_token(&user.session).await?;
            let client = clients::find_stored(&state.store, &request.client_id, now)
                .await?
                .ok_or_else(|| PageError::BadRequest("The app is no longer registered.".into()))?;
            let document_host = match &client.kind {
                ClientKind::MetadataDocument { document_host } => Some(document_host.as_str()),
                _ => None,
            };
            let redirect_host = redirect_uri::host_of(&request.redirect_uri);
            let mut response = render(&ConsentPage {
                client_name: &client.name,
                unverified: client.is_unverified(),
                document_host,
                redirect_host: &redirect_host,
                loopback: redirect_uri::is_loopback_uri(&request.redirect_uri),
                resource: &request.resource,
                farm_name: &account.farm_name,
                email: &account.email,
                scopes: request
                    .scopes()
                    .iter()
                    .map(|s| ScopeView {
                        name: s.as_str(),
                        description: s.description(),
                    })
                    .collect(),
                csrf: &csrf,
                request_id,
                error,
            });
            if error.is_some() {
                *response.status_mut() = StatusCode::BAD_REQUEST;
            }
            Ok(no_store(response))
        }
    }
}

async fn client_name(state: &AppState, client_id: &str) -> Result<String, PageError> {
    Ok(
        clients::find_stored(&state.store, client_id, state.clock.now())
            .await?
            .map(|c| c.name)
            .unwrap_or_else(|| client_id.to_owned()),
    )
}

fn code_redirect(
    state: &AppState,
    request: &AuthorizationRequest,
    code: &str,
) -> Result<Response, PageError> {
    let url = consent::code_redirect(request, code, &state.issuer)
        .ok_or_else(|| PageError::Internal("a validated redirect URI did not parse".into()))?;
    Ok(Redirect::to(&url).into_response())
}

fn expired() -> PageError {
    PageError::BadRequest(
        "This request has expired or was already answered. Go back to the app and connect again."
            .into(),
    )
}

/// Sends a signed-out person to sign in, then back here.
fn sign_in_first(return_to: &str) -> Response {
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
    let request = pending::get(
        &user.session,
        &query.request,
        user.account.id,
        state.clock.now(),
    )
    .await?
    .ok_or_else(expired)?;
    proceed(&state, &user, &query.request, &request, None).await
}

/// The fields of the consent form.
struct ConsentForm<'a> {
    csrf: &'a str,
    request: &'a str,
    decision: &'a str,
    scopes: Vec<&'a str>,
}

fn consent_form(params: &Params) -> Result<ConsentForm<'_>, PageError> {
    let one = |name| form::single(params, name);
    Ok(ConsentForm {
        csrf: one("csrf")?,
        request: one("request")?,
        decision: one("decision")?,
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
    session::verify_csrf(&user.session, form.csrf).await?;
    let now = state.clock.now();
    let request = pending::get(&user.session, form.request, user.account.id, now)
        .await?
        .ok_or_else(expired)?;

    // The farm may have been suspended, or the sign-in grown old, while the
    // screen was open: decide again before acting on the answer.
    let farm = farms::find(&mut state.store.read().await?, user.account.farm())
        .await?
        .ok_or_else(|| PageError::Internal("the member's farm is gone".into()))?;
    let step = consent::next_step(
        &request,
        &FarmState {
            suspended: farm.suspended,
            connected_apps_enabled: farm.connected_apps_enabled,
        },
        user.account.credential_epoch,
        None,
        user.authenticated_at,
        now,
    );
    if !matches!(step, NextStep::AskConsent) {
        return proceed(&state, &user, form.request, &request, None).await;
    }

    match form.decision {
        "deny" => {
            pending::remove(&user.session, form.request, now).await?;
            consent::deny(&state.store, &request, &user.account, now).await?;
            let refusal = RedirectRefusal::new("access_denied", "the person refused access");
            Ok(refusal_redirect(
                &request.redirect_uri,
                &refusal,
                request.state.as_deref(),
                &state.issuer,
            ))
        }
        "approve" => {
            let approved = match consent::approved_scopes(&request.scopes(), &form.scopes) {
                Ok(scopes) => scopes,
                Err(why) => {
                    return proceed(
                        &state,
                        &user,
                        form.request,
                        &request,
                        Some(&why.to_string()),
                    )
                    .await;
                }
            };
            pending::remove(&user.session, form.request, now).await?;
            let code =
                consent::approve(&state.store, &request, &user.account, &approved, now).await?;
            code_redirect(&state, &request, &code)
        }
        _ => Err(PageError::BadRequest("Choose Approve or Deny.".into())),
    }
}

#[derive(Deserialize)]
pub struct PasswordForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    request: String,
    #[serde(default)]
    password: String,
}

pub async fn confirm_password(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    user: Option<SignedIn>,
    axum::Form(form): axum::Form<PasswordForm>,
) -> Result<Response, PageError> {
    let Some(user) = user else {
        return Err(PageError::BadRequest(
            "You were signed out. Go back to the app and connect again.".into(),
        ));
    };
    session::verify_csrf(&user.session, &form.csrf).await?;
    let now = state.clock.now();
    let request = pending::get(&user.session, &form.request, user.account.id, now)
        .await?
        .ok_or_else(expired)?;
    state
        .login_throttle
        .attempt(&user.account.email, peer.ip())
        .map_err(PageError::TooManyAttempts)?;
    let ok = state
        .passwords
        .verify(&form.password, Some(&user.account.password_hash))
        .await?;
    if !ok {
        let csrf = session::csrf_token(&user.session).await?;
        let name = client_name(&state, &request.client_id).await?;
        let mut response = render(&PasswordPage {
            client_name: &name,
            email: &user.account.email,
            csrf: &csrf,
            request_id: &form.request,
            error: Some("That password is not right."),
        });
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        return Ok(no_store(response));
    }
    session::password_confirmed(&user.session, now).await?;
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
            resource: "https://coop.example/mcp",
            farm_name: "Hillside",
            email: "a@b.example",
            scopes: vec![ScopeView {
                name: "farm:read",
                description: Scope::FarmRead.description(),
            }],
            csrf: "c",
            request_id: "r",
            error: None,
        };
        let html = page.render().unwrap();
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("script&#62;alert(1)"), "{html}");
        assert!(html.contains("unverified"));
    }
}
