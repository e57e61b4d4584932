//! `/account/apps`: the signed-in person's connected apps, and disconnecting
//! one (a confirmation page, then a CSRF-protected POST).
//!
//! A grant id that is not one of this person's active grants (another
//! member's, another farm's, revoked, or unknown) is a 404 page: the
//! answer does not tell a grant of someone else from no grant.

use askama::Template;
use axum::Form;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::view::{AppView, Nav};
use crate::admin::apps::{self, Actor};
use crate::domain::GrantId;
use crate::http::error::{PageError, render};
use crate::http::session::{self, RequireUser, SignedIn};
use crate::secrets::CsrfToken;
use crate::state::AppState;
use crate::storage::connected_apps::{self, AppFilter, ConnectedApp};
use crate::storage::farms;

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
pub struct DisconnectPage<'a> {
    pub nav: Nav,
    pub app: AppView,
    pub action: String,
    pub cancel: &'a str,
    /// Who would approve it again: "you" or the member's email.
    pub who: String,
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
    let filter = AppFilter {
        user: Some(user.account.user_id()),
        ..AppFilter::default()
    };
    let apps = connected_apps::list(&mut state.store.read().await?, &filter).await?;
    let farm_apps_enabled = farms::find(&mut state.store.read().await?, user.account.farm())
        .await?
        .is_none_or(|f| f.connected_apps_enabled);
    Ok(render(&AppsPage {
        nav: Nav::new(&user, "apps").await?,
        apps: apps.iter().map(AppView::from_app).collect(),
        notice: notice(query.done.as_deref()),
        farm_apps_enabled,
    }))
}

/// The person's own active grant `raw_id`, or 404.
async fn own_app(
    state: &AppState,
    user: &SignedIn,
    raw_id: &str,
) -> Result<ConnectedApp, PageError> {
    let id = GrantId::parse(raw_id).ok_or(PageError::NotFound)?;
    connected_apps::find_active(&mut state.store.read().await?, id)
        .await?
        .filter(|app| app.user() == user.account.user_id())
        .ok_or(PageError::NotFound)
}

pub async fn confirm(
    State(state): State<AppState>,
    RequireUser(user): RequireUser,
    Path(raw_id): Path<String>,
) -> Result<Response, PageError> {
    let app = own_app(&state, &user, &raw_id).await?;
    Ok(render(&DisconnectPage {
        nav: Nav::new(&user, "apps").await?,
        action: format!("/account/apps/{}/disconnect", app.grant_id),
        app: AppView::from_app(&app),
        cancel: "/account/apps",
        who: "you".to_owned(),
    }))
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
    let app = own_app(&state, &user, &raw_id).await?;
    let actor = Actor::Member {
        id: user.account.user_id(),
        email: &user.account.email,
    };
    apps::disconnect(&state.store, &app, actor, state.clock.now()).await?;
    Ok(Redirect::to("/account/apps?done=disconnected").into_response())
}
