//! `/admin/farm`: the farm's houses and flocks. Add and rename both; mark a
//! flock depleted (its records stay). Names are checked as the command
//! line checks them; a duplicate is a 400 page saying so
//! ([`crate::admin::pages::farm`]).

use askama::Template;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::{Frame, OwnerForm, OwnerPage};
use crate::admin::pages::farm::{self, FarmChange, Saved};
use crate::http::error::{PageError, render};
use crate::http::pages::apps::notice;
use crate::http::session::SignedIn;
use crate::state::AppState;
use crate::storage::farm_admin::{FlockAdminRow, HouseRow};

#[derive(Template)]
#[template(path = "admin_farm.html")]
struct FarmPage {
    frame: Frame,
    houses: Vec<HouseRow>,
    flocks: Vec<FlockAdminRow>,
    today: String,
}

pub async fn show(State(state): State<AppState>, page: OwnerPage) -> Result<Response, PageError> {
    let view = farm::show(&state.store, &page.owner.account, state.clock.now()).await?;
    Ok(render(&FarmPage {
        frame: page.frame("farm", notice),
        houses: view.houses,
        flocks: view.flocks,
        today: view.today,
    }))
}

/// Makes the change, then back to the page saying what was saved.
async fn save(
    state: &AppState,
    owner: &SignedIn,
    change: FarmChange<'_>,
) -> Result<Response, PageError> {
    let saved = farm::change(&state.store, &owner.account, change, state.clock.now()).await?;
    let target = match saved {
        Saved::House => "/admin/farm?done=house",
        Saved::Flock => "/admin/farm?done=flock",
    };
    Ok(Redirect::to(target).into_response())
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct NameForm {
    name: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct NewFlockForm {
    house: String,
    name: String,
    breed: String,
    placed_on: String,
    head_count: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct FlockChangeForm {
    /// `rename` or `deplete`.
    action: String,
    name: String,
}

pub async fn add_house(
    State(state): State<AppState>,
    OwnerForm { owner, form }: OwnerForm<NameForm>,
) -> Result<Response, PageError> {
    let change = FarmChange::AddHouse { name: &form.name };
    save(&state, &owner, change).await
}

pub async fn rename_house(
    State(state): State<AppState>,
    Path(raw_id): Path<String>,
    OwnerForm { owner, form }: OwnerForm<NameForm>,
) -> Result<Response, PageError> {
    let change = FarmChange::RenameHouse {
        house: &raw_id,
        name: &form.name,
    };
    save(&state, &owner, change).await
}

pub async fn add_flock(
    State(state): State<AppState>,
    OwnerForm { owner, form }: OwnerForm<NewFlockForm>,
) -> Result<Response, PageError> {
    let change = FarmChange::AddFlock {
        house: &form.house,
        name: &form.name,
        breed: &form.breed,
        placed_on: &form.placed_on,
        head_count: &form.head_count,
    };
    save(&state, &owner, change).await
}

pub async fn change_flock(
    State(state): State<AppState>,
    Path(raw_id): Path<String>,
    OwnerForm { owner, form }: OwnerForm<FlockChangeForm>,
) -> Result<Response, PageError> {
    let change = FarmChange::ChangeFlock {
        flock: &raw_id,
        action: &form.action,
        name: &form.name,
    };
    save(&state, &owner, change).await
}
