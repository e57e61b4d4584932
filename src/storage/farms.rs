//! Farms, their houses and flocks, as the operator and admin pages manage them.

use time::{Date, OffsetDateTime};
use uuid::Uuid;

use super::{Exec, Sql, StoreError, Tx};
use crate::domain::{FarmId, FarmSlug, FlockId, HeadCount, HouseId, Name};

crate::record! {
    #[derive(Clone, Debug)]
    pub struct FarmRow {
        pub id: Uuid,
        pub slug: FarmSlug,
        pub name: Name,
        pub suspended: bool,
        pub connected_apps_enabled: bool,
    }
}

impl FarmRow {
    pub fn farm_id(&self) -> FarmId {
        FarmId(self.id)
    }
}

pub async fn create(
    tx: &mut Tx,
    slug: &FarmSlug,
    name: &Name,
    now: OffsetDateTime,
) -> Result<FarmId, StoreError> {
    let id = FarmId::new();
    insert(tx, id, slug.as_str(), name.as_str(), now).await?;
    Ok(id)
}

/// The farm row itself, under an id the caller chose: [`create`]'s, or the
/// demo seed's (whose other rows already name it).
pub(super) async fn insert(
    tx: &mut Tx,
    id: FarmId,
    slug: &str,
    name: &str,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    Sql::new("insert into farms (id, slug, name, created_at) values ($1, $2, $3, $4)")
        .bind(id.0)
        .bind(slug)
        .bind(name)
        .bind(now)
        .execute(tx)
        .await?;
    Ok(())
}

const FARM_SELECT: &str = "select id, slug, name, suspended, connected_apps_enabled from farms";

pub async fn find_by_slug(db: &mut impl Exec, slug: &str) -> Result<Option<FarmRow>, StoreError> {
    Sql::new(format!("{FARM_SELECT} where slug = $1"))
        .bind(slug)
        .fetch_optional(db)
        .await
}

pub async fn find(db: &mut impl Exec, farm: FarmId) -> Result<Option<FarmRow>, StoreError> {
    Sql::new(format!("{FARM_SELECT} where id = $1"))
        .bind(farm.0)
        .fetch_optional(db)
        .await
}

/// Whether any farm exists yet (the demo seeds only an empty database).
pub async fn any_exist(db: &mut impl Exec) -> Result<bool, StoreError> {
    let count: i64 = Sql::new("select count(*) from farms")
        .fetch_scalar(db)
        .await?;
    Ok(count > 0)
}

/// Suspends a farm, with why (shown to its members), or resumes it (the
/// reason goes too). `NotFound` when no farm has that slug.
pub async fn set_suspended(
    tx: &mut Tx,
    slug: &str,
    suspended: bool,
    reason: Option<&str>,
) -> Result<FarmId, StoreError> {
    Sql::new("update farms set suspended = $1, suspended_reason = $2 where slug = $3 returning id")
        .bind(suspended)
        .bind(reason.filter(|_| suspended))
        .bind(slug)
        .fetch_scalar(tx)
        .await
        .map(FarmId)
}

/// Turns the farm's connected apps on or off. `NotFound` for an unknown slug.
pub async fn set_connected_apps(
    tx: &mut Tx,
    slug: &str,
    enabled: bool,
) -> Result<FarmId, StoreError> {
    Sql::new("update farms set connected_apps_enabled = $1 where slug = $2 returning id")
        .bind(enabled)
        .bind(slug)
        .fetch_scalar(tx)
        .await
        .map(FarmId)
}

pub async fn add_house(
    tx: &mut Tx,
    farm: FarmId,
    name: &str,
    now: OffsetDateTime,
) -> Result<HouseId, StoreError> {
    let id = HouseId::new();
    Sql::new("insert into houses (id, farm_id, name, created_at) values ($1, $2, $3, $4)")
        .bind(id.0)
        .bind(farm.0)
        .bind(name)
        .bind(now)
        .execute(tx)
        .await?;
    Ok(id)
}

pub async fn find_house(
    db: &mut impl Exec,
    farm: FarmId,
    name: &str,
) -> Result<Option<HouseId>, StoreError> {
    Sql::new("select id from houses where farm_id = $1 and name = $2")
        .bind(farm.0)
        .bind(name)
        .fetch_optional_scalar(db)
        .await
        .map(|id| id.map(HouseId))
}

/// What a new flock needs; the farm comes from the house.
pub struct NewFlock<'a> {
    pub house: HouseId,
    pub name: &'a Name,
    pub breed: &'a Name,
    pub placed_on: Date,
    pub head_count: HeadCount,
}

pub async fn add_flock(
    tx: &mut Tx,
    farm: FarmId,
    flock: &NewFlock<'_>,
    now: OffsetDateTime,
) -> Result<FlockId, StoreError> {
    let id = FlockId::new();
    Sql::new(
        "insert into flocks (id, farm_id, house_id, name, breed, placed_on, head_count, created_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(id.0)
    .bind(farm.0)
    .bind(flock.house.0)
    .bind(flock.name.as_str())
    .bind(flock.breed.as_str())
    .bind(flock.placed_on)
    .bind(flock.head_count.get())
    .bind(now)
    .execute(tx)
    .await?;
    Ok(id)
}

/// Flocks of the farm with this exact name (a name may recur across houses).
pub async fn find_flocks_named(
    db: &mut impl Exec,
    farm: FarmId,
    name: &str,
) -> Result<Vec<FlockId>, StoreError> {
    let ids: Vec<Uuid> =
        Sql::new("select id from flocks where farm_id = $1 and name = $2 order by id limit 16")
            .bind(farm.0)
            .bind(name)
            .fetch_column(db)
            .await?;
    Ok(ids.into_iter().map(FlockId).collect())
}
