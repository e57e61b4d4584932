//! Houses and flocks as the owner's admin page manages them: list all,
//! rename, mark a flock depleted. Adding goes through [`super::farms`].
//!
//! Every statement names the farm: an id from another farm matches nothing
//! and is reported as `NotFound`.

use time::Date;
use uuid::Uuid;

use super::{Exec, Sql, StoreError, Tx};
use crate::domain::{FarmId, FlockId, FlockStatus, HeadCount, HouseId, Name};

crate::record! {
    #[derive(Clone, Debug)]
    pub struct HouseRow {
        pub id: Uuid,
        pub name: Name,
    }
}

crate::record! {
    #[derive(Clone, Debug)]
    pub struct FlockAdminRow {
        pub id: Uuid,
        pub house: Name,
        pub name: Name,
        pub breed: Name,
        pub placed_on: Date,
        pub head_count: HeadCount,
        pub status: FlockStatus,
    }
}

pub async fn houses(db: &mut impl Exec, farm: FarmId) -> Result<Vec<HouseRow>, StoreError> {
    Sql::new("select id, name from houses where farm_id = $1 order by name limit 500")
        .bind(farm.0)
        .fetch_all(db)
        .await
}

pub async fn flocks(db: &mut impl Exec, farm: FarmId) -> Result<Vec<FlockAdminRow>, StoreError> {
    Sql::new(
        "select f.id, h.name as house, f.name, f.breed, f.placed_on, f.head_count, f.status
         from flocks f join houses h on h.id = f.house_id and h.farm_id = f.farm_id
         where f.farm_id = $1
         order by f.status, h.name, f.name
         limit 1000",
    )
    .bind(farm.0)
    .fetch_all(db)
    .await
}

/// Whether `house` is one of `farm`'s houses.
pub async fn house_of_farm(
    db: &mut impl Exec,
    farm: FarmId,
    house: HouseId,
) -> Result<bool, StoreError> {
    let found: Option<Uuid> = Sql::new("select id from houses where farm_id = $1 and id = $2")
        .bind(farm.0)
        .bind(house.0)
        .fetch_optional_scalar(db)
        .await?;
    Ok(found.is_some())
}

/// Runs `update`, a statement `… where farm_id = $1 and id = $2` with its
/// values bound: `NotFound` when the farm has no row of that id.
pub(super) async fn update_one_of_farm(tx: &mut Tx, update: Sql<'_>) -> Result<(), StoreError> {
    match update.execute(tx).await? {
        0 => Err(StoreError::NotFound),
        _ => Ok(()),
    }
}

/// What can be renamed: a house or a flock of the farm.
#[derive(Clone, Copy, Debug)]
pub enum Renamed {
    House(HouseId),
    Flock(FlockId),
}

/// Renames a house or a flock of `farm`. `Conflict` when the name is
/// taken: by another of the farm's houses, or by another flock of the
/// flock's house.
pub async fn rename(
    tx: &mut Tx,
    farm: FarmId,
    what: Renamed,
    name: &Name,
) -> Result<(), StoreError> {
    let (table, id) = match what {
        Renamed::House(house) => ("houses", house.0),
        Renamed::Flock(flock) => ("flocks", flock.0),
    };
    let update = format!("update {table} set name = $3 where farm_id = $1 and id = $2");
    update_one_of_farm(
        tx,
        Sql::new(update).bind(farm.0).bind(id).bind(name.as_str()),
    )
    .await
}

/// Marks a flock depleted (all birds gone); its records stay.
pub async fn deplete_flock(tx: &mut Tx, farm: FarmId, flock: FlockId) -> Result<(), StoreError> {
    let update = Sql::new("update flocks set status = 'depleted' where farm_id = $1 and id = $2");
    update_one_of_farm(tx, update.bind(farm.0).bind(flock.0)).await
}
