//! Farms, their houses and flocks, as the operator and admin pages manage them.

use time::{Date, OffsetDateTime};
use uuid::Uuid;

use super::{Store, StoreError, StoreResult, unix};
use crate::domain::{FarmId, FlockId, HouseId};
use crate::on_pool;

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct FarmRow {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
    pub suspended: bool,
    pub connected_apps_enabled: bool,
}

impl FarmRow {
    pub fn farm_id(&self) -> FarmId {
        FarmId(self.id)
    }
}

pub async fn create(
    store: &Store,
    slug: &str,
    name: &str,
    now: OffsetDateTime,
) -> StoreResult<FarmId> {
    let id = FarmId::new();
    on_pool!(store, |pool| {
        sqlx::query("insert into farms (id, slug, name, created_at) values ($1, $2, $3, $4)")
            .bind(id.0)
            .bind(slug)
            .bind(name)
            .bind(unix(now))
            .execute(pool)
            .await?;
    });
    Ok(id)
}

pub async fn find_by_slug(store: &Store, slug: &str) -> StoreResult<Option<FarmRow>> {
    let row = on_pool!(store, |pool| {
        sqlx::query_as::<_, FarmRow>(
            "select id, slug, name, suspended, connected_apps_enabled from farms where slug = $1",
        )
        .bind(slug)
        .fetch_optional(pool)
        .await?
    });
    Ok(row)
}

pub async fn find(store: &Store, farm: FarmId) -> StoreResult<Option<FarmRow>> {
    let row = on_pool!(store, |pool| {
        sqlx::query_as::<_, FarmRow>(
            "select id, slug, name, suspended, connected_apps_enabled from farms where id = $1",
        )
        .bind(farm.0)
        .fetch_optional(pool)
        .await?
    });
    Ok(row)
}

/// Whether any farm exists yet (the demo seeds only an empty database).
pub async fn any_exist(store: &Store) -> StoreResult<bool> {
    let count: i64 = on_pool!(store, |pool| {
        sqlx::query_scalar("select count(*) from farms")
            .fetch_one(pool)
            .await?
    });
    Ok(count > 0)
}

/// Suspends or resumes a farm. `NotFound` when no farm has that slug.
pub async fn set_suspended(store: &Store, slug: &str, suspended: bool) -> StoreResult<FarmId> {
    let id: Option<Uuid> = on_pool!(store, |pool| {
        sqlx::query_scalar("update farms set suspended = $1 where slug = $2 returning id")
            .bind(suspended)
            .bind(slug)
            .fetch_optional(pool)
            .await?
    });
    id.map(FarmId).ok_or(StoreError::NotFound)
}

/// Turns the farm's connected apps on or off. `NotFound` for an unknown slug.
pub async fn set_connected_apps(store: &Store, slug: &str, enabled: bool) -> StoreResult<FarmId> {
    let id: Option<Uuid> = on_pool!(store, |pool| {
        sqlx::query_scalar(
            "update farms set connected_apps_enabled = $1 where slug = $2 returning id",
        )
        .bind(enabled)
        .bind(slug)
        .fetch_optional(pool)
        .await?
    });
    id.map(FarmId).ok_or(StoreError::NotFound)
}

pub async fn add_house(
    store: &Store,
    farm: FarmId,
    name: &str,
    now: OffsetDateTime,
) -> StoreResult<HouseId> {
    let id = HouseId::new();
    on_pool!(store, |pool| {
        sqlx::query("insert into houses (id, farm_id, name, created_at) values ($1, $2, $3, $4)")
            .bind(id.0)
            .bind(farm.0)
            .bind(name)
            .bind(unix(now))
            .execute(pool)
            .await?;
    });
    Ok(id)
}

pub async fn find_house(store: &Store, farm: FarmId, name: &str) -> StoreResult<Option<HouseId>> {
    let id: Option<Uuid> = on_pool!(store, |pool| {
        sqlx::query_scalar("select id from houses where farm_id = $1 and name = $2")
            .bind(farm.0)
            .bind(name)
            .fetch_optional(pool)
            .await?
    });
    Ok(id.map(HouseId))
}

/// What a new flock needs; the farm comes from the house.
pub struct NewFlock<'a> {
    pub house: HouseId,
    pub name: &'a str,
    pub breed: &'a str,
    pub placed_on: Date,
    pub head_count: i64,
}

pub async fn add_flock(
    store: &Store,
    farm: FarmId,
    flock: &NewFlock<'_>,
    now: OffsetDateTime,
) -> StoreResult<FlockId> {
    let id = FlockId::new();
    on_pool!(store, |pool| {
        sqlx::query(
            "insert into flocks (id, farm_id, house_id, name, breed, placed_on, head_count, created_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(id.0)
        .bind(farm.0)
        .bind(flock.house.0)
        .bind(flock.name)
        .bind(flock.breed)
        .bind(flock.placed_on)
        .bind(flock.head_count)
        .bind(unix(now))
        .execute(pool)
        .await?;
    });
    Ok(id)
}

/// Flocks of the farm with this exact name (a name may recur across houses).
pub async fn find_flocks_named(
    store: &Store,
    farm: FarmId,
    name: &str,
) -> StoreResult<Vec<FlockId>> {
    let ids: Vec<Uuid> = on_pool!(store, |pool| {
        sqlx::query_scalar(
            "select id from flocks where farm_id = $1 and name = $2 order by id limit 16",
        )
        .bind(farm.0)
        .bind(name)
        .fetch_all(pool)
        .await?
    });
    Ok(ids.into_iter().map(FlockId).collect())
}
