//! Egg lots: eggs gathered from a flock under a lot code, listed by the day
//! they were laid, within the caller's farm and flock scope.

use time::{Date, OffsetDateTime};
use uuid::Uuid;

use super::farm_query::FarmQuery;
use super::{Exec, Sql, StoreError, Tx};
use crate::domain::FlockScope;
use crate::domain::{FarmId, FlockId, LotStatus, Name, Page, PageSize, Period};

crate::record! {
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct EggLotRow {
        pub lot_code: String,
        pub flock: Name,
        pub house: Name,
        pub laid_on: Date,
        pub grade: String,
        pub quantity: i64,
        pub status: LotStatus,
    }
}

/// (laid on, lot code): lots are listed newest first, then by code
/// (descending, so one row comparison serves as the keyset condition).
pub type EggLotKey = (Date, String);

impl EggLotRow {
    pub fn key(&self) -> EggLotKey {
        (self.laid_on, self.lot_code.clone())
    }
}

#[derive(Clone, Debug)]
pub struct EggLotFilter {
    pub period: Period,
    pub status: Option<LotStatus>,
    pub flock: Option<FlockId>,
}

pub async fn list_page(
    db: &mut impl Exec,
    farm: FarmId,
    scope: &FlockScope,
    filter: &EggLotFilter,
    after: Option<&EggLotKey>,
    size: PageSize,
) -> Result<Page<EggLotRow>, StoreError> {
    let mut q = FarmQuery::new(
        farm,
        "select l.lot_code, f.name as flock, h.name as house, l.laid_on, l.grade,
            l.quantity, l.status
         from egg_lots l
         join flocks f on f.id = l.flock_id and f.farm_id = l.farm_id
         join houses h on h.id = f.house_id and h.farm_id = f.farm_id
         where l.farm_id = $1",
    );
    q.flock_scope("l.flock_id", scope)
        .within("l.laid_on", filter.period)
        .equals("l.status", filter.status)
        .equals("l.flock_id", filter.flock.map(|f| f.0));
    if let Some((laid_on, code)) = after {
        let (a, b) = (q.bind(*laid_on), q.bind(code.clone()));
        q.push(&format!(" and (l.laid_on, l.lot_code) < ({a}, {b})"));
    }
    let p = q.bind(size.fetch_limit());
    q.push(&format!(
        " order by l.laid_on desc, l.lot_code desc limit {p}"
    ));
    let rows = q.fetch_all(db).await?;
    Ok(Page::from_fetched(rows, size))
}

/// A lot to store.
pub struct NewEggLot<'a> {
    pub flock: FlockId,
    pub lot_code: &'a str,
    pub laid_on: Date,
    pub grade: &'a str,
    pub quantity: i64,
    pub status: LotStatus,
}

pub async fn add(
    tx: &mut Tx,
    farm: FarmId,
    lot: &NewEggLot<'_>,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    Sql::new(
        "insert into egg_lots (id, farm_id, flock_id, lot_code, laid_on, grade, quantity,
            status, created_at)
         select $2, $1, f.id, $3, $4, $5, $6, $7, $8
         from flocks f where f.farm_id = $1 and f.id = $9",
    )
    .bind(farm.0)
    .bind(Uuid::now_v7())
    .bind(lot.lot_code)
    .bind(lot.laid_on)
    .bind(lot.grade)
    .bind(lot.quantity)
    .bind(lot.status)
    .bind(now)
    .bind(lot.flock.0)
    .execute(tx)
    .await?;
    Ok(())
}
