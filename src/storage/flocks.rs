//! Flocks as the tools read them: always within one farm and the caller's
//! flock scope, addressed by name, listed in keyset pages.
//!
//! A flock's name is unique only within its house, so a look-up by name
//! returns every match (bounded) and leaves the choice to the caller: the
//! tools refuse an ambiguous name rather than pick one.

use time::Date;
use uuid::Uuid;

use super::farm_admin::update_one_of_farm;
use super::farm_query::FarmQuery;
use super::{Exec, Sql, StoreError, Tx};
use crate::domain::FlockScope;
use crate::domain::{FarmId, FlockId, FlockStatus, HeadCount, HouseId, Name, Page, PageSize};

/// At most this many flocks are returned for one name; more are reported
/// as "and more", never listed in full.
pub const MAX_NAME_MATCHES: i64 = 10;

crate::record! {
    /// A flock with its house, as every tool shows it.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct FlockRow {
        pub id: Uuid,
        pub house_id: Uuid,
        pub name: Name,
        pub house: Name,
        pub breed: Name,
        pub placed_on: Date,
        pub head_count: HeadCount,
        pub status: FlockStatus,
    }
}

impl FlockRow {
    pub fn flock_id(&self) -> FlockId {
        FlockId(self.id)
    }

    pub fn house_id(&self) -> HouseId {
        HouseId(self.house_id)
    }

    /// The keyset position of this row in [`list_page`]'s order.
    pub fn key(&self) -> FlockKey {
        (self.house.to_string(), self.name.to_string(), self.id)
    }
}

/// (house name, flock name, id): the order flocks are listed in.
pub type FlockKey = (String, String, Uuid);

const SELECT: &str = "select f.id, f.house_id, f.name, h.name as house, f.breed, f.placed_on,
        f.head_count, f.status
    from flocks f
    join houses h on h.id = f.house_id and h.farm_id = f.farm_id
    where f.farm_id = $1";

/// The flocks in scope named `name` (in `house`, when given), up to
/// [`MAX_NAME_MATCHES`] + 1 so the caller can tell "several" from "many".
pub async fn named(
    db: &mut impl Exec,
    farm: FarmId,
    scope: &FlockScope,
    name: &str,
    house: Option<&str>,
) -> Result<Vec<FlockRow>, StoreError> {
    let mut q = FarmQuery::new(farm, SELECT);
    q.flock_scope("f.id", scope)
        .equals("f.name", Some(name.to_owned()))
        .equals("h.name", house.map(str::to_owned));
    let p = q.bind(MAX_NAME_MATCHES + 1);
    q.push(&format!(" order by h.name, f.id limit {p}"));
    q.fetch_all(db).await
}

/// Optional filters of the flock list.
#[derive(Clone, Debug, Default)]
pub struct FlockFilter {
    pub status: Option<FlockStatus>,
    pub house: Option<String>,
}

/// One page of the flocks in scope, by house then name.
pub async fn list_page(
    db: &mut impl Exec,
    farm: FarmId,
    scope: &FlockScope,
    filter: &FlockFilter,
    after: Option<&FlockKey>,
    size: PageSize,
) -> Result<Page<FlockRow>, StoreError> {
    let mut q = FarmQuery::new(farm, SELECT);
    q.flock_scope("f.id", scope)
        .equals("f.status", filter.status)
        .equals("h.name", filter.house.clone());
    if let Some((house, name, id)) = after {
        let (a, b, c) = (q.bind(house.clone()), q.bind(name.clone()), q.bind(*id));
        q.push(&format!(" and (h.name, f.name, f.id) > ({a}, {b}, {c})"));
    }
    let p = q.bind(size.fetch_limit());
    q.push(&format!(" order by h.name, f.name, f.id limit {p}"));
    let rows = q.fetch_all(db).await?;
    Ok(Page::from_fetched(rows, size))
}

/// Sets a flock's head count (the operator's correction after a count).
pub async fn set_head_count(
    tx: &mut Tx,
    farm: FarmId,
    flock: FlockId,
    head_count: i64,
) -> Result<(), StoreError> {
    let update = Sql::new("update flocks set head_count = $3 where farm_id = $1 and id = $2");
    update_one_of_farm(tx, update.bind(farm.0).bind(flock.0).bind(head_count)).await
}

/// Marks a flock active or depleted.
pub async fn set_status(
    tx: &mut Tx,
    farm: FarmId,
    flock: FlockId,
    depleted: bool,
) -> Result<(), StoreError> {
    let status = if depleted {
        FlockStatus::Depleted
    } else {
        FlockStatus::Active
    };
    let update = Sql::new("update flocks set status = $3 where farm_id = $1 and id = $2");
    update_one_of_farm(tx, update.bind(farm.0).bind(flock.0).bind(status)).await
}
