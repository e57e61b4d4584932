//! Houses and flocks as the owner's admin page manages them: list all,
//! rename, mark a flock depleted. Adding goes through [`super::farms`].
//!
//! Every statement names the farm: an id from another farm matches nothing
//! and is reported as `NotFound`.

use time::Date;
use uuid::Uuid;

use super::{Exec, Sql, StoreError, StoreResult, Tx};
use crate::domain::{FarmId, FlockId, HouseId};

#[derive(Clone, Debug)]
pub struct HouseRow {
    pub id: Uuid,
    pub name: String,
}
crate::from_record!(HouseRow { id, name });

#[derive(Clone, Debug)]
pub struct FlockAdminRow {
    pub id: Uuid,
    pub house: String,
    pub name: String,
    pub breed: String,
    pub placed_on: Date,
    pub head_count: i64,
    pub status: String,
}
crate::from_record!(FlockAdminRow {
    id,
    house,
    name,
    breed,
    placed_on,
    head_count,
    status
});

pub async fn houses(db: &mut impl Exec, farm: FarmId) -> StoreResult<Vec<HouseRow>> {
    Sql::new("select id, name from houses where farm_id = $1 order by name limit 500")
        .bind(farm.0)
        .fetch_all(db)
        .await
}

pub async fn flocks(db: &mut impl Exec, farm: FarmId) -> StoreResult<Vec<FlockAdminRow>> {
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
pub async fn house_of_farm(db: &mut impl Exec, farm: FarmId, house: HouseId) -> StoreResult<bool> {
    let found: Option<Uuid> = Sql::new("select id from houses where farm_id = $1 and id = $2")
        .bind(farm.0)
        .bind(house.0)
        .fetch_optional_scalar(db)
        .await?;
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
    tx: &mut Tx,
    farm: FarmId,
    house: HouseId,
    name: &str,
) -> StoreResult<()> {
    let affected = Sql::new("update houses set name = $3 where farm_id = $1 and id = $2")
        .bind(farm.0)
        .bind(house.0)
        .bind(name)
        .execute(tx)
        .await?;
    one_row(affected)
}

/// `Conflict` when the flock's house already has a flock of that name.
pub async fn rename_flock(
    tx: &mut Tx,
    farm: FarmId,
    flock: FlockId,
    name: &str,
) -> StoreResult<()> {
    let affected = Sql::new("update flocks set name = $3 where farm_id = $1 and id = $2")
        .bind(farm.0)
        .bind(flock.0)
        .bind(name)
        .execute(tx)
        .await?;
    one_row(affected)
}

/// Marks a flock depleted (all birds gone); its records stay.
pub async fn deplete_flock(tx: &mut Tx, farm: FarmId, flock: FlockId) -> StoreResult<()> {
    let affected = Sql::new("update flocks set status = 'depleted' where farm_id = $1 and id = $2")
        .bind(farm.0)
        .bind(flock.0)
        .execute(tx)
        .await?;
    one_row(affected)
}
