//! `/admin`: every active grant on the farm with Disconnect, the farm's
//! automations (Disconnect disables one at once), and the farm's
//! connected-apps switch.
//!
//! The switch is read by every token check and every consent: off, each
//! MCP call and refresh for the farm is refused at once and consent shows
//! a page saying why; on again, the grants it stopped work again.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::{Frame, OwnerForm, OwnerPage, OwnerPost, RequireOwner};
use crate::admin::pages::apps::{self, Reach};
use crate::admin::pages::automations::AutomationView;
use crate::admin::pages::words::AppView;
use crate::http::error::{PageError, render};
use crate::http::pages::apps::{confirm_page, notice};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "admin_apps.html")]
struct AdminAppsPage {
    frame: Frame,
    farm_name: String,
    apps_enabled: bool,
    apps: Vec<AppView>,
    automations: Vec<AutomationView>,
}

pub async fn show(State(state): State<AppState>, page: OwnerPage) -> Result<Response, PageError> {
    let view = apps::farm(&state.store, &page.owner.account).await?;
    Ok(render(&AdminAppsPage {
        frame: page.frame("apps", notice),
        farm_name: view.farm_name,
        apps_enabled: view.apps_enabled,
        apps: view.apps,
        automations: view.automations,
    }))
}

#[derive(Deserialize)]
pub struct SwitchForm {
    #[serde(default)]
    enabled: String,
}

pub async fn switch(
    State(state): State<AppState>,
    OwnerForm { owner, form }: OwnerForm<SwitchForm>,
) -> Result<Response, PageError> {
    let (enabled, done) = match form.enabled.as_str() {
        "on" => (true, "/admin?done=apps-on"),
        "off" => (false, "/admin?done=apps-off"),
        _ => return Err(PageError::BadRequest("Choose on or off.".to_owned())),
    };
    apps::switch(&state.store, &owner.account, enabled, state.clock.now()).await?;
    Ok(Redirect::to(done).into_response())
}

pub async fn confirm(
    State(state): State<AppState>,
    RequireOwner { owner, nav }: RequireOwner,
    Path(raw_id): Path<String>,
) -> Result<Response, PageError> {
    let view = apps::confirm(&state.store, &owner.account, Reach::Farm, &raw_id).await?;
    Ok(confirm_page(nav, view, "/admin/apps", "/admin"))
}

pub async fn disconnect(
    State(state): State<AppState>,
    Path(raw_id): Path<String>,
    OwnerPost { owner, .. }: OwnerPost,
) -> Result<Response, PageError> {
    let now = state.clock.now();
    apps::disconnect(&state.store, &owner.account, Reach::Farm, &raw_id, now).await?;
    Ok(Redirect::to("/admin?done=disconnected").into_response())
}
