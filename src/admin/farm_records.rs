//! Houses and flocks as the owner's admin page changes them, addressed by
//! id within the owner's farm. Names and figures are checked exactly as the
//! command line checks them; an id from another farm is
//! `StoreError::NotFound`. Each runs in the caller's transaction, so the
//! change and its audit row commit together.

use time::OffsetDateTime;

use super::{AdminResult, check_name, parse_date, parse_head_count, refused};
use crate::domain::{FarmId, FlockId, HouseId};
use crate::storage::farms::{self, NewFlock};
use crate::storage::{StoreError, Tx, farm_admin};

fn duplicate(err: StoreError, message: String) -> super::AdminError {
    match err {
        StoreError::Conflict(_) => refused(message),
        other => other.into(),
    }
}

pub async fn add_house(
    tx: &mut Tx,
    farm: FarmId,
    name: &str,
    now: OffsetDateTime,
) -> AdminResult<String> {
    let name = check_name("house", name)?;
    farms::add_house(tx, farm, &name, now)
        .await
        .map_err(|e| duplicate(e, format!("the farm already has a house named {name:?}")))?;
    Ok(name.into_string())
}

pub async fn rename_house(
    tx: &mut Tx,
    farm: FarmId,
    house: HouseId,
    name: &str,
) -> AdminResult<String> {
    let name = check_name("house", name)?;
    farm_admin::rename_house(tx, farm, house, &name)
        .await
        .map_err(|e| duplicate(e, format!("the farm already has a house named {name:?}")))?;
    Ok(name.into_string())
}

/// A new flock from the admin form's text fields.
pub struct FlockForm<'a> {
    pub house: HouseId,
    pub name: &'a str,
    pub breed: &'a str,
    pub placed: &'a str,
    pub head_count: &'a str,
}

pub async fn add_flock(
    tx: &mut Tx,
    farm: FarmId,
    form: &FlockForm<'_>,
    now: OffsetDateTime,
) -> AdminResult<String> {
    if !farm_admin::house_of_farm(tx, farm, form.house).await? {
        return Err(StoreError::NotFound.into());
    }
    let name = check_name("flock", form.name)?;
    let breed = check_name("breed", form.breed)?;
    let placed_on = parse_date(form.placed)?;
    let head_count = parse_head_count(form.head_count)?;
    let flock = NewFlock {
        house: form.house,
        name: &name,
        breed: &breed,
        placed_on,
        head_count,
    };
    farms::add_flock(tx, farm, &flock, now)
        .await
        .map_err(|e| duplicate(e, format!("that house already has a flock named {name:?}")))?;
    Ok(name.into_string())
}

pub async fn rename_flock(
    tx: &mut Tx,
    farm: FarmId,
    flock: FlockId,
    name: &str,
) -> AdminResult<String> {
    let name = check_name("flock", name)?;
    farm_admin::rename_flock(tx, farm, flock, &name)
        .await
        .map_err(|e| duplicate(e, format!("that house already has a flock named {name:?}")))?;
    Ok(name.into_string())
}

pub async fn deplete_flock(tx: &mut Tx, farm: FarmId, flock: FlockId) -> AdminResult<()> {
    Ok(farm_admin::deplete_flock(tx, farm, flock).await?)
}
