//! `/`: who is signed in, on which farm, with which role, and how many
//! apps they have connected.

use askama::Template;
use axum::extract::State;
use axum::response::Response;

use super::view::Nav;
use crate::admin::pages::home;
use crate::http::error::{PageError, render};
use crate::http::session::RequireUser;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage<'a> {
    nav: Nav,
    email: &'a str,
    farm_name: &'a str,
    role: &'a str,
    apps_count: i64,
}

pub async fn show(
    State(state): State<AppState>,
    RequireUser(user): RequireUser,
) -> Result<Response, PageError> {
    let apps_count = home::apps_count(&state.store, &user.account).await?;
    Ok(render(&HomePage {
        nav: Nav::new(&user, "home").await?,
        email: &user.account.email,
        farm_name: &user.account.farm_name,
        role: user.account.role.as_str(),
        apps_count,
    }))
}
