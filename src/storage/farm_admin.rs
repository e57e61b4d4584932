//! Houses and flocks as the owner's admin page manages them: list all,
//! rename, mark a flock depleted. Adding goes through [`super::farms`].
//!
//! Every statement names the farm: an id from another farm matches nothing
//! and is reported as `NotFound`.

use time::Date;
use uuid::Uuid;

use super::{Store, StoreError, StoreResult};
use crate::domain::{FarmId, FlockId, HouseId};
use crate::on_pool;

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct HouseRow {
    pub id: Uuid,
    pub name: String,
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct FlockAdminRow {
    pub id: Uuid,
    pub house: String,
    pub name: String,
    pub breed: String,
    pub placed_on: Date,
    pub head_count: i64,
    pub status: String,
}

pub async fn houses(store: &Store, farm: FarmId) -> StoreResult<Vec<HouseRow>> {
    let rows = on_pool!(store, |pool| {
        sqlx::query_as::<_, HouseRow>(
            "select id, name from houses where farm_id = $1 order by name limit 500",
        )
        .bind(farm.0)
        .fetch_all(pool)
        .await?
    });
    Ok(rows)
}

pub async fn flocks(store: &Store, farm: FarmId) -> StoreResult<Vec<FlockAdminRow>> {
    let rows = on_pool!(store, |pool| {
        sqlx::query_as::<_, FlockAdminRow>(
            "select f.id, h.name as house, f.name, f.breed, f.placed_on, f.head_count, f.status
             from flocks f join houses h on h.id = f.house_id and h.farm_id = f.farm_id
             where f.farm_id = $1
             order by f.status, h.name, f.name
             limit 1000",
        )
        .bind(farm.0)
        .fetch_all(pool)
        .await?
    });
    Ok(rows)
}

/// Whether `house` is one of `farm`'s houses.
pub async fn house_of_farm(store: &Store, farm: FarmId, house: HouseId) -> StoreResult<bool> {
    let found: Option<Uuid> = on_pool!(store, |pool| {
        sqlx::query_scalar("select id from houses where farm_id = $1 and id = $2")
            .bind(farm.0)
            .bind(house.0)
            .fetch_optional(pool)
            .await?
    });
    Ok(found.is_some())
}

fn one_row(affected: u64) -> StoreResult<()> {
    if affected == 0 {
        Err(StoreError::NotFound)
    } else {
        Ok(())
    }
}

/// `Conflict` when the farm already has a house of that name.
pub async fn rename_house(
    store: &Store,
    farm: FarmId,
    house: HouseId,
    name: &str,
) -> StoreResult<()> {
    let affected = on_pool!(store, |pool| {
        sqlx::query("update houses set name = $3 where farm_id = $1 and id = $2")
            .bind(farm.0)
            .bind(house.0)
            .bind(name)
            .execute(pool)
            .await?
            .rows_affected()
    });
    one_row(affected)
}

/// `Conflict` when the flock's house already has a flock of that name.
pub async fn rename_flock(
    store: &Store,
    farm: FarmId,
    flock: FlockId,
    name: &str,
) -> StoreResult<()> {
    let affected = on_pool!(store, |pool| {
        sqlx::query("update flocks set name = $3 where farm_id = $1 and id = $2")
            .bind(farm.0)
            .bind(flock.0)
            .bind(name)
            .execute(pool)
            .await?
            .rows_affected()
    });
    one_row(affected)
}

/// Marks a flock depleted (all birds gone); its records stay.
pub async fn deplete_flock(store: &Store, farm: FarmId, flock: FlockId) -> StoreResult<()> {
    let affected = on_pool!(store, |pool| {
        sqlx::query("update flocks set status = 'depleted' where farm_id = $1 and id = $2")
            .bind(farm.0)
            .bind(flock.0)
            .execute(pool)
            .await?
            .rows_affected()
    });
    one_row(affected)
}
