//! `/admin/farm`: the farm's houses and flocks. Add and rename both; mark a
//! flock depleted (its records stay). Names are checked as the command
//! line checks them; a duplicate is a 400 page saying so.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::{OwnerPost, RequireOwner, audit_action, page_error};
use crate::admin::farm_records::{self, FlockForm};
use crate::domain::{FlockId, HouseId};
use crate::http::error::{PageError, render};
use crate::http::pages::apps::{NoticeQuery, notice};
use crate::http::pages::view::Nav;
use crate::state::AppState;
use crate::storage::farm_admin::{self, FlockAdminRow, HouseRow};

#[derive(Template)]
#[template(path = "admin_farm.html")]
struct FarmPage {
    nav: Nav,
    tab: &'static str,
    houses: Vec<HouseRow>,
    flocks: Vec<FlockAdminRow>,
    today: String,
    notice: Option<&'static str>,
}

pub async fn show(
    State(state): State<AppState>,
    RequireOwner(owner): RequireOwner,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let farm = owner.account.farm();
    Ok(render(&FarmPage {
        nav: Nav::new(&owner, "admin").await?,
        tab: "farm",
        houses: farm_admin::houses(&mut state.store.read().await?, farm).await?,
        flocks: farm_admin::flocks(&mut state.store.read().await?, farm).await?,
        today: state.clock.now().date().to_string(),
        notice: notice(query.done.as_deref()),
    }))
}

#[derive(Deserialize)]
pub struct NameForm {
    #[serde(default)]
    name: String,
}

pub async fn add_house(
    State(state): State<AppState>,
    OwnerPost { owner, form }: OwnerPost,
) -> Result<Response, PageError> {
    let form: NameForm = form.fields()?;
    let mut tx = state.store.write().await?;
    let name =
        farm_records::add_house(&mut tx, owner.account.farm(), &form.name, state.clock.now())
            .await
            .map_err(page_error)?;
    audit_action(
        &mut tx,
        &state,
        &owner,
        None,
        "house_added",
        serde_json::json!({ "name": name }),
    )
    .await?;
    tx.commit().await?;
    Ok(Redirect::to("/admin/farm?done=house").into_response())
}

pub async fn rename_house(
    State(state): State<AppState>,
    Path(raw_id): Path<String>,
    OwnerPost { owner, form }: OwnerPost,
) -> Result<Response, PageError> {
    let form: NameForm = form.fields()?;
    let house = HouseId::parse(&raw_id).ok_or(PageError::NotFound)?;
    let mut tx = state.store.write().await?;
    let name = farm_records::rename_house(&mut tx, owner.account.farm(), house, &form.name)
        .await
        .map_err(page_error)?;
    let detail = serde_json::json!({ "house": house.to_string(), "name": name });
    audit_action(&mut tx, &state, &owner, None, "house_renamed", detail).await?;
    tx.commit().await?;
    Ok(Redirect::to("/admin/farm?done=house").into_response())
}

#[derive(Deserialize)]
pub struct NewFlockForm {
    #[serde(default)]
    house: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    breed: String,
    #[serde(default)]
    placed_on: String,
    #[serde(default)]
    head_count: String,
}

pub async fn add_flock(
    State(state): State<AppState>,
    OwnerPost { owner, form }: OwnerPost,
) -> Result<Response, PageError> {
    let form: NewFlockForm = form.fields()?;
    let house = HouseId::parse(&form.house).ok_or(PageError::NotFound)?;
    let input = FlockForm {
        house,
        name: &form.name,
        breed: &form.breed,
        placed: &form.placed_on,
        head_count: &form.head_count,
    };
    let mut tx = state.store.write().await?;
    let name = farm_records::add_flock(&mut tx, owner.account.farm(), &input, state.clock.now())
        .await
        .map_err(page_error)?;
    let detail = serde_json::json!({ "house": house.to_string(), "name": name });
    audit_action(&mut tx, &state, &owner, None, "flock_added", detail).await?;
    tx.commit().await?;
    Ok(Redirect::to("/admin/farm?done=flock").into_response())
}

#[derive(Deserialize)]
pub struct FlockChangeForm {
    /// `rename` or `deplete`.
    #[serde(default)]
    action: String,
    #[serde(default)]
    name: String,
}

pub async fn change_flock(
    State(state): State<AppState>,
    Path(raw_id): Path<String>,
    OwnerPost { owner, form }: OwnerPost,
) -> Result<Response, PageError> {
    let form: FlockChangeForm = form.fields()?;
    let flock = FlockId::parse(&raw_id).ok_or(PageError::NotFound)?;
    let farm = owner.account.farm();
    let mut tx = state.store.write().await?;
    let (action, detail) = match form.action.as_str() {
        "rename" => {
            let name = farm_records::rename_flock(&mut tx, farm, flock, &form.name)
                .await
                .map_err(page_error)?;
            (
                "flock_renamed",
                serde_json::json!({ "flock": flock.to_string(), "name": name }),
            )
        }
        "deplete" => {
            farm_records::deplete_flock(&mut tx, farm, flock)
                .await
                .map_err(page_error)?;
            (
                "flock_depleted",
                serde_json::json!({ "flock": flock.to_string() }),
            )
        }
        _ => return Err(PageError::BadRequest("Choose an action.".to_owned())),
    };
    audit_action(&mut tx, &state, &owner, None, action, detail).await?;
    tx.commit().await?;
    Ok(Redirect::to("/admin/farm?done=flock").into_response())
}
