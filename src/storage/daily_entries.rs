//! Daily entries: one row per (flock, day), read in pages and aggregates
//! over bounded periods, written by one race-safe upsert that audits itself.
//!
//! The write is shaped around two promises of `record_daily_entry`:
//! replaying an identical call changes nothing (no new version, no second
//! audit row), and only a successful write is remembered. There is no
//! idempotency store at all: "already done" is decided by comparing the
//! request with the stored row, so a refused or failed call leaves nothing
//! behind that could make a later retry look done.
//!
//! Concurrency: the write runs in one transaction whose first statement is
//! a write (`insert … on conflict do nothing`, else a conditional `update`),
//! so SQLite serialises writers on its write lock, and on PostgreSQL the
//! `update`'s `where version = …` is re-checked against the latest committed
//! row after a concurrent writer commits. Of two writers expecting the same
//! version exactly one wins; the other sees a conflict.

use time::{Date, OffsetDateTime};
use uuid::Uuid;

use super::audit::{self, AuditEvent};
use super::farm_query::FarmQuery;
use super::flocks::FlockKey;
use super::{Exec, Sql, Store, StoreError, Tx};
use crate::domain::FlockScope;
use crate::domain::{
    AutomationId, FarmId, FlockId, HeadCount, HouseId, Name, Notes, Page, PageSize, Period, UserId,
};

crate::record! {
    /// One day's entry as the tools show it.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct EntryRow {
        pub entry_date: Date,
        pub eggs_collected: i64,
        pub eggs_cracked: i64,
        pub mortality: i64,
        pub feed_used_g: i64,
        pub water_used_ml: i64,
        pub notes: String,
        pub version: i64,
        /// The email of whoever wrote the current version, if still a user,
        /// or the name of the automation that did.
        pub recorded_by: Option<String>,
    }
}

const ENTRY_COLUMNS: &str = "e.entry_date, e.eggs_collected, e.eggs_cracked, e.mortality,
        e.feed_used_g, e.water_used_ml, e.notes, e.version,
        coalesce(u.email, ra.name) as recorded_by";

/// Who recorded an entry: a person, or an automation (by its name).
const RECORDER_JOINS: &str = "left join users u on u.id = e.recorded_by
    left join automations ra on ra.id = e.recorded_by_automation";

/// One page of a flock's entries in a period, newest first. `after` is the
/// last day of the previous page.
pub async fn list_page(
    db: &mut impl Exec,
    farm: FarmId,
    scope: &FlockScope,
    flock: FlockId,
    period: Period,
    after: Option<Date>,
    size: PageSize,
) -> Result<Page<EntryRow>, StoreError> {
    let mut q = FarmQuery::new(
        farm,
        &format!(
            "select {ENTRY_COLUMNS}
             from daily_entries e
             {RECORDER_JOINS}
             where e.farm_id = $1"
        ),
    );
    q.flock_scope("e.flock_id", scope)
        .equals("e.flock_id", Some(flock.0))
        .within("e.entry_date", period);
    if let Some(after) = after {
        let p = q.bind(after);
        q.push(&format!(" and e.entry_date < {p}"));
    }
    let p = q.bind(size.fetch_limit());
    q.push(&format!(" order by e.entry_date desc limit {p}"));
    let rows = q.fetch_all(db).await?;
    Ok(Page::from_fetched(rows, size))
}

crate::record! {
    /// Totals of one day over the flocks that recorded it.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct DayTotals {
        pub entry_date: Date,
        pub flocks_recorded: i64,
        pub eggs_collected: i64,
        pub eggs_cracked: i64,
        pub mortality: i64,
        pub feed_used_g: i64,
        pub water_used_ml: i64,
        /// The head count of the flocks that recorded this day.
        pub hens: i64,
    }
}

/// Per-day totals for one flock or every flock in scope, over a period. The
/// period is capped, so at most one row per day and one entry per flock and
/// day are read.
pub async fn daily_totals(
    db: &mut impl Exec,
    farm: FarmId,
    scope: &FlockScope,
    flock: Option<FlockId>,
    period: Period,
) -> Result<Vec<DayTotals>, StoreError> {
    let mut q = FarmQuery::new(
        farm,
        "select e.entry_date, count(*) as flocks_recorded,
            cast(sum(e.eggs_collected) as bigint) as eggs_collected,
            cast(sum(e.eggs_cracked) as bigint) as eggs_cracked,
            cast(sum(e.mortality) as bigint) as mortality,
            cast(sum(e.feed_used_g) as bigint) as feed_used_g,
            cast(sum(e.water_used_ml) as bigint) as water_used_ml,
            cast(sum(f.head_count) as bigint) as hens
         from daily_entries e
         join flocks f on f.id = e.flock_id and f.farm_id = e.farm_id
         where e.farm_id = $1",
    );
    q.flock_scope("e.flock_id", scope)
        .equals("e.flock_id", flock.map(|f| f.0))
        .within("e.entry_date", period);
    let p = q.bind(period.days() + 1);
    q.push(&format!(
        " group by e.entry_date order by e.entry_date limit {p}"
    ));
    q.fetch_all(db).await
}

crate::record! {
    /// Deaths of one flock over a period.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct FlockDeaths {
        pub id: Uuid,
        pub name: Name,
        pub house: Name,
        pub head_count: HeadCount,
        pub deaths: i64,
        pub days_recorded: i64,
    }
}

impl FlockDeaths {
    pub fn key(&self) -> FlockKey {
        (self.house.to_string(), self.name.to_string(), self.id)
    }
}

/// One page of flocks in scope (or the one `flock`) with their deaths over
/// the period. The page of flocks is chosen first, in a subquery with its
/// own `limit`, so only that page's entries are aggregated.
pub async fn deaths_page(
    db: &mut impl Exec,
    farm: FarmId,
    scope: &FlockScope,
    flock: Option<FlockId>,
    period: Period,
    after: Option<&FlockKey>,
    size: PageSize,
) -> Result<Page<FlockDeaths>, StoreError> {
    let mut q = FarmQuery::new(
        farm,
        "select p.id, p.name, p.house, p.head_count,
            cast(coalesce(sum(e.mortality), 0) as bigint) as deaths,
            count(e.id) as days_recorded
         from (
            select f.id, f.name, h.name as house, f.head_count
            from flocks f
            join houses h on h.id = f.house_id and h.farm_id = f.farm_id
            where f.farm_id = $1",
    );
    q.flock_scope("f.id", scope)
        .equals("f.id", flock.map(|f| f.0));
    if let Some((house, name, id)) = after {
        let (a, b, c) = (q.bind(house.clone()), q.bind(name.clone()), q.bind(*id));
        q.push(&format!(" and (h.name, f.name, f.id) > ({a}, {b}, {c})"));
    }
    let (limit, from, to) = (
        q.bind(size.fetch_limit()),
        q.bind(period.from().date()),
        q.bind(period.to().date()),
    );
    q.push(&format!(
        " order by h.name, f.name, f.id limit {limit}
         ) p
         left join daily_entries e on e.flock_id = p.id and e.farm_id = $1
            and e.entry_date >= {from} and e.entry_date <= {to}
         group by p.id, p.name, p.house, p.head_count
         order by p.house, p.name, p.id"
    ));
    let rows = q.fetch_all(db).await?;
    Ok(Page::from_fetched(rows, size))
}

/// Deaths over a period across every flock in scope: the report's total,
/// one aggregate over the period's entries.
pub async fn total_deaths(
    db: &mut impl Exec,
    farm: FarmId,
    scope: &FlockScope,
    flock: Option<FlockId>,
    period: Period,
) -> Result<i64, StoreError> {
    let mut q = FarmQuery::new(
        farm,
        "select cast(coalesce(sum(e.mortality), 0) as bigint)
         from daily_entries e where e.farm_id = $1",
    );
    q.flock_scope("e.flock_id", scope)
        .equals("e.flock_id", flock.map(|f| f.0))
        .within("e.entry_date", period);
    q.fetch_scalar(db).await
}

/// What a caller asks to record. Omitted optional counts and notes keep
/// their stored value on an update and are 0 / empty on a new entry.
#[derive(Clone, Debug)]
pub struct EntryWrite<'a> {
    pub farm: FarmId,
    pub house: HouseId,
    pub flock: FlockId,
    pub date: Date,
    pub eggs_collected: i64,
    pub eggs_cracked: Option<i64>,
    pub mortality: Option<i64>,
    pub feed_used_g: Option<i64>,
    pub water_used_ml: Option<i64>,
    pub notes: Option<&'a Notes>,
    /// `None`: no check. `Some(0)`: only if there is no entry yet.
    /// `Some(n)`: only if the entry is at version `n`.
    pub expected_version: Option<i64>,
    /// The member who wrote it, or the automation (exactly one is set).
    pub recorded_by: Option<UserId>,
    pub recorded_by_automation: Option<AutomationId>,
}

impl EntryWrite<'_> {
    /// Whether storing this request would leave `current` as it is.
    pub fn matches(&self, current: &EntryRow) -> bool {
        current.eggs_collected == self.eggs_collected
            && self.eggs_cracked.is_none_or(|v| v == current.eggs_cracked)
            && self.mortality.is_none_or(|v| v == current.mortality)
            && self.feed_used_g.is_none_or(|v| v == current.feed_used_g)
            && self
                .water_used_ml
                .is_none_or(|v| v == current.water_used_ml)
            && self.notes.is_none_or(|v| v.as_str() == current.notes)
    }
}

/// How a write ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    Created(EntryRow),
    Updated(EntryRow),
    /// The stored entry already says exactly this: nothing was written.
    Replayed(EntryRow),
    /// `expected_version` did not match; nothing was written. `None`: the
    /// caller expected an entry and there is none.
    Conflict(Option<EntryRow>),
}

/// Attempts before a writer that keeps losing races gives up with an error.
const MAX_ATTEMPTS: usize = 3;

/// Creates or updates the entry and, when something changed, writes the
/// audit row `audit` (its detail gains `change` and `version`) in the same
/// transaction.
pub async fn record(
    store: &Store,
    write: &EntryWrite<'_>,
    audit: &AuditEvent<'_>,
    now: OffsetDateTime,
) -> Result<WriteOutcome, StoreError> {
    let select_current = format!(
        "select {ENTRY_COLUMNS}
         from daily_entries e
         {RECORDER_JOINS}
         where e.farm_id = $1 and e.flock_id = $2 and e.entry_date = $3"
    );
    let update = format!(
        "update daily_entries set
            eggs_collected = $4,
            eggs_cracked = coalesce($5, eggs_cracked),
            mortality = coalesce($6, mortality),
            feed_used_g = coalesce($7, feed_used_g),
            water_used_ml = coalesce($8, water_used_ml),
            notes = coalesce($9, notes),
            version = version + 1,
            recorded_by = $10,
            recorded_by_automation = $12,
            updated_at = $11
         where farm_id = $1 and flock_id = $2 and entry_date = $3
           and not (eggs_collected = $4
                and eggs_cracked = coalesce($5, eggs_cracked)
                and mortality = coalesce($6, mortality)
                and feed_used_g = coalesce($7, feed_used_g)
                and water_used_ml = coalesce($8, water_used_ml)
                and notes = coalesce($9, notes)){}
         returning version",
        if write.expected_version.is_some() {
            " and version = $13"
        } else {
            ""
        }
    );
    let may_insert = matches!(write.expected_version, None | Some(0));
    let may_update = write.expected_version != Some(0);

    for _ in 0..MAX_ATTEMPTS {
        let mut tx = store.write().await?;
        let mut change = None;
        if may_insert {
            let created: Option<i64> = Sql::new(
                "insert into daily_entries (id, farm_id, house_id, flock_id, entry_date,
                    eggs_collected, eggs_cracked, mortality, feed_used_g, water_used_ml,
                    notes, version, recorded_by, recorded_by_automation, created_at, updated_at)
                 values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 1, $12, $14, $13, $13)
                 on conflict (flock_id, entry_date) do nothing
                 returning version",
            )
            .bind(Uuid::now_v7())
            .bind(write.farm.0)
            .bind(write.house.0)
            .bind(write.flock.0)
            .bind(write.date)
            .bind(write.eggs_collected)
            .bind(write.eggs_cracked.unwrap_or(0))
            .bind(write.mortality.unwrap_or(0))
            .bind(write.feed_used_g.unwrap_or(0))
            .bind(write.water_used_ml.unwrap_or(0))
            .bind(write.notes.map_or("", Notes::as_str))
            .bind(write.recorded_by.map(|u| u.0))
            .bind(now)
            .bind(write.recorded_by_automation.map(|a| a.0))
            .fetch_optional_scalar(&mut tx)
            .await?;
            change = created.map(|v| ("created", v));
        }
        if change.is_none() && may_update {
            let mut query = Sql::new(update.as_str())
                .bind(write.farm.0)
                .bind(write.flock.0)
                .bind(write.date)
                .bind(write.eggs_collected)
                .bind(write.eggs_cracked)
                .bind(write.mortality)
                .bind(write.feed_used_g)
                .bind(write.water_used_ml)
                .bind(write.notes.map(Notes::as_str))
                .bind(write.recorded_by.map(|u| u.0))
                .bind(now)
                .bind(write.recorded_by_automation.map(|a| a.0));
            if let Some(expected) = write.expected_version {
                query = query.bind(expected);
            }
            let updated: Option<i64> = query.fetch_optional_scalar(&mut tx).await?;
            change = updated.map(|v| ("updated", v));
        }
        let current: Option<EntryRow> = current_entry(&mut tx, write, &select_current).await?;
        let outcome = match (change, current) {
            (Some((change, version)), Some(current)) => {
                let mut detail = audit.detail.clone();
                if let Some(object) = detail.as_object_mut() {
                    object.insert("change".into(), change.into());
                    object.insert("version".into(), version.into());
                }
                let event = AuditEvent {
                    detail,
                    ..audit.clone()
                };
                audit::record(&mut tx, &event, now).await?;
                tx.commit().await?;
                Some(if change == "created" {
                    WriteOutcome::Created(current)
                } else {
                    WriteOutcome::Updated(current)
                })
            }
            // A row we just wrote cannot be missing inside our own
            // transaction; treat it as a storage fault.
            (Some(_), None) => return Err(StoreError::NotFound),
            // Nothing written: the transaction is dropped (rolled back).
            (None, current) => classify(write, current),
        };
        if let Some(outcome) = outcome {
            return Ok(outcome);
        }
    }
    Err(StoreError::Conflict(
        "daily entry kept changing under concurrent writers".to_owned(),
    ))
}

async fn current_entry(
    tx: &mut Tx,
    write: &EntryWrite<'_>,
    select_current: &str,
) -> Result<Option<EntryRow>, StoreError> {
    Sql::new(select_current)
        .bind(write.farm.0)
        .bind(write.flock.0)
        .bind(write.date)
        .fetch_optional(tx)
        .await
}

/// Nothing was written: say why, or `None` when the row changed between
/// the conditional write and the read (a concurrent writer), so the caller
/// tries again.
fn classify(write: &EntryWrite<'_>, current: Option<EntryRow>) -> Option<WriteOutcome> {
    match current {
        None => match write.expected_version {
            Some(n) if n > 0 => Some(WriteOutcome::Conflict(None)),
            // Inserting found a row and then the row vanished: retry.
            _ => None,
        },
        Some(current) if write.matches(&current) => Some(WriteOutcome::Replayed(current)),
        Some(current) => match write.expected_version {
            Some(expected) if expected != current.version => {
                Some(WriteOutcome::Conflict(Some(current)))
            }
            _ => None,
        },
    }
}
