//! `/account/apps`: the signed-in person's connected apps, and disconnecting
//! one (a confirmation page, then a CSRF-protected POST).
//!
//! A grant id that is not one of this person's active grants (another
//! member's, another farm's, revoked, or unknown) is a 404 page: the
//! answer does not tell a grant of someone else from no grant
//! ([`crate::admin::pages::apps`]).

use askama::Template;
use axum::Form;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::view::Nav;
use crate::admin::pages::apps::{self, ConfirmView, Reach};
use crate::admin::pages::words::AppView;
use crate::http::error::{PageError, render};
use crate::http::session::{self, RequireUser};
use crate::secrets::CsrfToken;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "apps.html")]
struct AppsPage {
    nav: Nav,
    apps: Vec<AppView>,
    notice: Option<&'static str>,
    farm_apps_enabled: bool,
}

/// The confirmation step before a disconnect; shared with farm admin.
#[derive(Template)]
#[template(path = "disconnect.html")]
struct DisconnectPage<'a> {
    nav: Nav,
    app: AppView,
    action: String,
    cancel: &'a str,
    /// Who would approve it again: "you" or the member's email.
    who: String,
}

/// The confirmation page: its form posts to `{base}/{grant}/disconnect`,
/// its Cancel goes back to `cancel`.
pub fn confirm_page(nav: Nav, view: ConfirmView, base: &str, cancel: &str) -> Response {
    render(&DisconnectPage {
        nav,
        action: format!("{base}/{}/disconnect", view.app.grant_id),
        app: view.app,
        cancel,
        who: view.who,
    })
}

#[derive(Deserialize)]
pub struct NoticeQuery {
    pub done: Option<String>,
}

/// The one-line notices a redirect after an action may ask for; anything
/// else in `?done=` shows nothing.
pub fn notice(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "disconnected" => "The app is disconnected. It can no longer reach the farm's records.",
        "apps-on" => "Connected apps are on. Apps that were connected work again.",
        "apps-off" => "Connected apps are off. Every app is refused until you turn them on again.",
        "member" => "The member is updated.",
        "house" => "The house is saved.",
        "flock" => "The flock is saved.",
        _ => return None,
    })
}

pub async fn list(
    State(state): State<AppState>,
    RequireUser(user): RequireUser,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let view = apps::own(&state.store, &user.account).await?;
    Ok(render(&AppsPage {
        nav: Nav::new(&user, "apps").await?,
        apps: view.apps,
        notice: notice(query.done.as_deref()),
        farm_apps_enabled: view.farm_apps_enabled,
    }))
}

pub async fn confirm(
    State(state): State<AppState>,
    RequireUser(user): RequireUser,
    Path(raw_id): Path<String>,
) -> Result<Response, PageError> {
    let view = apps::confirm(&state.store, &user.account, Reach::Own, &raw_id).await?;
    let nav = Nav::new(&user, "apps").await?;
    Ok(confirm_page(nav, view, "/account/apps", "/account/apps"))
}

#[derive(Deserialize)]
pub struct CsrfForm {
    #[serde(default)]
    pub csrf: CsrfToken,
}

pub async fn disconnect(
    State(state): State<AppState>,
    RequireUser(user): RequireUser,
    Path(raw_id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Result<Response, PageError> {
    session::verify_csrf(&user.session, &form.csrf).await?;
    let now = state.clock.now();
    apps::disconnect(&state.store, &user.account, Reach::Own, &raw_id, now).await?;
    Ok(Redirect::to("/account/apps?done=disconnected").into_response())
}
