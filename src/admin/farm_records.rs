//! Houses and flocks as the owner's admin page changes them, addressed by
//! id within the owner's farm. Names and figures are checked exactly as the
//! command line checks them; an id from another farm is
//! `StoreError::NotFound`. Each runs in the caller's transaction, so the
//! change and its audit row commit together.

use time::OffsetDateTime;

use super::{AdminError, check_name, parse_date, parse_head_count, refused};
use crate::domain::{FarmId, FlockId, HouseId, Name};
pub use crate::storage::farm_admin::Renamed;
use crate::storage::farms::{self, NewFlock};
use crate::storage::{StoreError, Tx, farm_admin};

/// The name written, or a refusal saying `taken` when another has it.
fn named<T>(
    written: Result<T, StoreError>,
    name: Name,
    taken: fn(&Name) -> String,
) -> Result<String, AdminError> {
    match written {
        Ok(_) => Ok(name.into_string()),
        Err(StoreError::Conflict(_)) => Err(refused(taken(&name))),
        Err(other) => Err(other.into()),
    }
}

fn house_taken(name: &Name) -> String {
    format!("the farm already has a house named {name:?}")
}

fn flock_taken(name: &Name) -> String {
    format!("that house already has a flock named {name:?}")
}

pub async fn add_house(
    tx: &mut Tx,
    farm: FarmId,
    name: &str,
    now: OffsetDateTime,
) -> Result<String, AdminError> {
    let name = check_name("house", name)?;
    let written = farms::add_house(tx, farm, &name, now).await;
    named(written, name, house_taken)
}

/// Renames a house or a flock, checked as a new one's name is.
pub async fn rename(
    tx: &mut Tx,
    farm: FarmId,
    what: Renamed,
    name: &str,
) -> Result<String, AdminError> {
    let (what_name, taken): (_, fn(&Name) -> String) = match what {
        Renamed::House(_) => ("house", house_taken),
        Renamed::Flock(_) => ("flock", flock_taken),
    };
    let name = check_name(what_name, name)?;
    let written = farm_admin::rename(tx, farm, what, &name).await;
    named(written, name, taken)
}

/// A new flock from the admin form's text fields.
#[derive(Clone, Copy, Debug)]
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
) -> Result<String, AdminError> {
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
    let written = farms::add_flock(tx, farm, &flock, now).await;
    named(written, name, flock_taken)
}

pub async fn deplete_flock(tx: &mut Tx, farm: FarmId, flock: FlockId) -> Result<(), AdminError> {
    Ok(farm_admin::deplete_flock(tx, farm, flock).await?)
}
