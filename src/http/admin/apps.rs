//! `/admin`: every active grant on the farm with Disconnect, the farm's
//! automations (Disconnect disables one at once), and the farm's
//! connected-apps switch.
//!
//! The switch is read by every token check and every consent: off, each
//! MCP call and refresh for the farm is refused at once and consent shows
//! a page saying why; on again, the grants it stopped work again.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::automations::{self, AutomationView};
use super::{OwnerPost, RequireOwner, audit_action};
use crate::admin::apps::{self as app_admin, Actor};
use crate::domain::GrantId;
use crate::http::error::{PageError, render};
use crate::http::pages::apps::{DisconnectPage, NoticeQuery, notice};
use crate::http::pages::view::{AppView, Nav};
use crate::http::session::SignedIn;
use crate::state::AppState;
use crate::storage::connected_apps::{self, AppFilter, ConnectedApp};
use crate::storage::farms;

#[derive(Template)]
#[template(path = "admin_apps.html")]
struct AdminAppsPage<'a> {
    nav: Nav,
    tab: &'static str,
    farm_name: &'a str,
    apps_enabled: bool,
    apps: Vec<AppView>,
    automations: Vec<AutomationView>,
    notice: Option<&'static str>,
}

pub async fn show(
    State(state): State<AppState>,
    RequireOwner(owner): RequireOwner,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let farm = farms::find(&mut state.store.read().await?, owner.account.farm())
        .await?
        .ok_or(PageError::NotFound)?;
    let filter = AppFilter {
        farm: Some(owner.account.farm()),
        ..AppFilter::default()
    };
    let apps = connected_apps::list(&mut state.store.read().await?, &filter).await?;
    Ok(render(&AdminAppsPage {
        nav: Nav::new(&owner, "admin").await?,
        tab: "apps",
        farm_name: &farm.name,
        apps_enabled: farm.connected_apps_enabled,
        apps: apps.iter().map(AppView::from_app).collect(),
        automations: automations::views(&state, owner.account.farm()).await?,
        notice: notice(query.done.as_deref()),
    }))
}

#[derive(Deserialize)]
pub struct SwitchForm {
    #[serde(default)]
    enabled: String,
}

pub async fn switch(
    State(state): State<AppState>,
    OwnerPost { owner, form }: OwnerPost,
) -> Result<Response, PageError> {
    let form: SwitchForm = form.fields()?;
    let enabled = match form.enabled.as_str() {
        "on" => true,
        "off" => false,
        _ => return Err(PageError::BadRequest("Choose on or off.".to_owned())),
    };
    let mut tx = state.store.write().await?;
    farms::set_connected_apps(&mut tx, &owner.account.farm_slug, enabled).await?;
    let action = if enabled {
        "connected_apps_on"
    } else {
        "connected_apps_off"
    };
    audit_action(&mut tx, &state, &owner, None, action, serde_json::json!({})).await?;
    tx.commit().await?;
    let done = if enabled { "apps-on" } else { "apps-off" };
    Ok(Redirect::to(&format!("/admin?done={done}")).into_response())
}

/// An active grant of the owner's farm, or 404.
async fn farm_app(
    state: &AppState,
    owner: &SignedIn,
    raw_id: &str,
) -> Result<ConnectedApp, PageError> {
    let id = GrantId::parse(raw_id).ok_or(PageError::NotFound)?;
    connected_apps::find_active(&mut state.store.read().await?, id)
        .await?
        .filter(|app| app.farm() == owner.account.farm())
        .ok_or(PageError::NotFound)
}

pub async fn confirm(
    State(state): State<AppState>,
    RequireOwner(owner): RequireOwner,
    Path(raw_id): Path<String>,
) -> Result<Response, PageError> {
    let app = farm_app(&state, &owner, &raw_id).await?;
    let who = if app.user() == owner.account.user_id() {
        "you".to_owned()
    } else {
        app.email.clone()
    };
    Ok(render(&DisconnectPage {
        nav: Nav::new(&owner, "admin").await?,
        action: format!("/admin/apps/{}/disconnect", app.grant_id),
        app: AppView::from_app(&app),
        cancel: "/admin",
        who,
    }))
}

pub async fn disconnect(
    State(state): State<AppState>,
    Path(raw_id): Path<String>,
    OwnerPost { owner, .. }: OwnerPost,
) -> Result<Response, PageError> {
    let app = farm_app(&state, &owner, &raw_id).await?;
    let actor = Actor::Member {
        id: owner.account.user_id(),
        email: &owner.account.email,
    };
    app_admin::disconnect(&state.store, &app, actor, state.clock.now()).await?;
    Ok(Redirect::to("/admin?done=disconnected").into_response())
}
