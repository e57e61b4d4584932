//! Egg lots: eggs gathered from a flock under a lot code, listed by the day
//! they were laid, within the caller's farm and flock scope.

use time::{Date, OffsetDateTime};
use uuid::Uuid;

use super::farm_query::FarmQuery;
use super::{Exec, Sql, StoreResult, Tx};
use crate::domain::FlockScope;
use crate::domain::{FarmId, FlockId, Page, PageSize, Period};

/// The statuses a lot may have (the table's check constraint).
pub const STATUSES: &[&str] = &["in_store", "shipped", "discarded"];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EggLotRow {
    pub lot_code: String,
    pub flock: String,
    pub house: String,
    pub laid_on: Date,
    pub grade: String,
    pub quantity: i64,
    pub status: String,
}

crate::from_record!(EggLotRow {
    lot_code,
    flock,
    house,
    laid_on,
    grade,
    quantity,
    status
});

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
    pub status: Option<String>,
    pub flock: Option<FlockId>,
}

pub async fn list_page(
    db: &mut impl Exec,
    farm: FarmId,
    scope: &FlockScope,
    filter: &EggLotFilter,
    after: Option<&EggLotKey>,
    size: PageSize,
) -> StoreResult<Page<EggLotRow>> {
    let mut q = FarmQuery::new(
        farm,
        "select l.lot_code, f.name as flock, h.name as house, l.laid_on, l.grade,
            l.quantity, l.status
         from egg_lots l
         join flocks f on f.id = l.flock_id and f.farm_id = l.farm_id
         join houses h on h.id = f.house_id and h.farm_id = f.farm_id
         where l.farm_id = $1",
    );
    q.flock_scope("l.flock_id", scope);
    let (from, to) = (
        q.bind(filter.period.from().date()),
        q.bind(filter.period.to().date()),
    );
    q.push(&format!(" and l.laid_on >= {from} and l.laid_on <= {to}"));
    if let Some(status) = &filter.status {
        let p = q.bind(status.clone());
        q.push(&format!(" and l.status = {p}"));
    }
    if let Some(flock) = filter.flock {
        let p = q.bind(flock.0);
        q.push(&format!(" and l.flock_id = {p}"));
    }
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
    pub status: &'a str,
}

pub async fn add(
    tx: &mut Tx,
    farm: FarmId,
    lot: &NewEggLot<'_>,
    now: OffsetDateTime,
) -> StoreResult<()> {
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
