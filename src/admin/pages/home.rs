//! `/`: what the start page counts for the signed-in person.

use super::PageRefusal;
use crate::storage::users::Account;
use crate::storage::{Store, connected_apps};

/// How many apps the person has connected.
pub async fn apps_count(store: &Store, person: &Account) -> Result<i64, PageRefusal> {
    Ok(connected_apps::count_for_user(&mut store.read().await?, person.user_id()).await?)
}
