//! Writing a whole demo farm in one transaction.
//!
//! `coop serve --demo` hands over every row it wants (see
//! [`crate::admin::demo`], which decides what a plausible farm looks like);
//! this module only writes them. Everything goes in one transaction that
//! first checks the database has no farm, so a refusal or a failure halfway
//! leaves nothing behind, and a second `--demo` adds nothing.
//!
//! The daily entries are hundreds of rows, so they go in multi-row
//! `insert … values (…), (…)` statements of [`ROWS_PER_STATEMENT`] rows: the
//! same SQL on both engines ([`Sql::push_values`] numbers the `$n`), a
//! handful of round trips instead of one per row, and far
//! below either engine's bound-parameter limit (SQLite 32,766; PostgreSQL
//! 65,535).

use time::{Date, OffsetDateTime};

use super::engine::Value;
use super::{Sql, Store, StoreError, farms, unix};
use crate::domain::{FarmId, FlockId, HouseId, Role, UserId};

/// Rows per multi-row insert: 13 columns × 100 rows = 1,300 parameters.
const ROWS_PER_STATEMENT: usize = 100;

/// A whole farm, ready to write.
pub struct FarmSeed {
    pub farm: FarmId,
    pub slug: String,
    pub name: String,
    pub houses: Vec<HouseSeed>,
    pub flocks: Vec<FlockSeed>,
    pub members: Vec<MemberSeed>,
    pub entries: Vec<EntrySeed>,
    pub lots: Vec<LotSeed>,
    pub stock: Vec<StockSeed>,
}

pub struct HouseSeed {
    pub id: HouseId,
    pub name: String,
}

pub struct FlockSeed {
    pub id: FlockId,
    pub house: HouseId,
    pub name: String,
    pub breed: String,
    pub placed_on: Date,
    pub head_count: i64,
    /// `active` or `depleted` (the table's check constraint).
    pub status: &'static str,
}

pub struct MemberSeed {
    pub id: UserId,
    pub email: String,
    /// An argon2id PHC string, never the password.
    pub password_hash: String,
    pub role: Role,
    /// `Some`: restricted to exactly these flocks.
    pub flocks: Option<Vec<FlockId>>,
}

pub struct EntrySeed {
    pub house: HouseId,
    pub flock: FlockId,
    pub date: Date,
    pub eggs_collected: i64,
    pub eggs_cracked: i64,
    pub mortality: i64,
    pub feed_used_g: i64,
    pub water_used_ml: i64,
    pub notes: String,
    pub recorded_by: UserId,
}

pub struct LotSeed {
    pub flock: FlockId,
    pub lot_code: String,
    pub laid_on: Date,
    pub grade: &'static str,
    pub quantity: i64,
    /// `in_store`, `shipped` or `discarded`.
    pub status: &'static str,
}

pub struct StockSeed {
    /// `feed`, `medication`, `packaging` or `other`.
    pub category: &'static str,
    pub name: String,
    pub quantity: i64,
    pub unit: String,
    pub unit_cost_minor: i64,
    pub currency: &'static str,
}

/// Writes `seed` if, and only if, the database has no farm yet. Returns
/// whether it wrote anything.
///
/// On PostgreSQL two servers started with `--demo` at once may both see an
/// empty database; the second then trips over the farm slug's unique index,
/// its transaction rolls back, and it reports that farms exist.
pub async fn insert_if_empty(
    store: &Store,
    seed: &FarmSeed,
    now: OffsetDateTime,
) -> Result<bool, StoreError> {
    match insert(store, seed, now).await {
        Err(StoreError::Conflict(constraint)) => {
            if farms::any_exist(&mut store.read().await?).await? {
                Ok(false)
            } else {
                // A conflict inside the seed itself is a bug in the seed.
                Err(StoreError::Conflict(constraint))
            }
        }
        other => other,
    }
}

async fn insert(store: &Store, seed: &FarmSeed, now: OffsetDateTime) -> Result<bool, StoreError> {
    let at = unix(now);
    let mut tx = store.write().await?;
    if farms::any_exist(&mut tx).await? {
        return Ok(false);
    }

    farms::insert(&mut tx, seed.farm, &seed.slug, &seed.name, now).await?;

    if !seed.houses.is_empty() {
        let mut sql = Sql::new("insert into houses (id, farm_id, name, created_at)");
        sql.push_values(&seed.houses, |row, house| {
            row.extend([
                Value::from(house.id.0),
                Value::from(seed.farm.0),
                Value::from(&house.name),
                Value::from(at),
            ]);
        });
        sql.execute(&mut tx).await?;
    }

    if !seed.flocks.is_empty() {
        let mut sql = Sql::new(
            "insert into flocks
               (id, farm_id, house_id, name, breed, placed_on, head_count, status, created_at)",
        );
        sql.push_values(&seed.flocks, |row, flock| {
            row.extend([
                Value::from(flock.id.0),
                Value::from(seed.farm.0),
                Value::from(flock.house.0),
                Value::from(&flock.name),
                Value::from(&flock.breed),
                Value::from(flock.placed_on),
                Value::from(flock.head_count),
                Value::from(flock.status),
                Value::from(at),
            ]);
        });
        sql.execute(&mut tx).await?;
    }

    for member in &seed.members {
        Sql::new(
            "insert into users (id, email, password_hash, created_at, updated_at)
             values ($1, $2, $3, $4, $4)",
        )
        .bind(member.id.0)
        .bind(&member.email)
        .bind(&member.password_hash)
        .bind(at)
        .execute(&mut tx)
        .await?;
        Sql::new(
            "insert into memberships (user_id, farm_id, role, flock_restricted, created_at)
             values ($1, $2, $3, $4, $5)",
        )
        .bind(member.id.0)
        .bind(seed.farm.0)
        .bind(member.role)
        .bind(member.flocks.is_some())
        .bind(at)
        .execute(&mut tx)
        .await?;
        if let Some(flocks) = member.flocks.as_ref().filter(|f| !f.is_empty()) {
            let mut sql = Sql::new("insert into membership_flocks (user_id, flock_id)");
            sql.push_values(flocks, |row, flock| {
                row.extend([Value::from(member.id.0), Value::from(flock.0)]);
            });
            sql.execute(&mut tx).await?;
        }
    }

    for chunk in seed.entries.chunks(ROWS_PER_STATEMENT) {
        let mut sql = Sql::new(
            "insert into daily_entries
               (id, farm_id, house_id, flock_id, entry_date, eggs_collected, eggs_cracked,
                mortality, feed_used_g, water_used_ml, notes, version, recorded_by,
                created_at, updated_at)",
        );
        sql.push_values(chunk, |row, entry| {
            row.extend([
                Value::from(uuid::Uuid::now_v7()),
                Value::from(seed.farm.0),
                Value::from(entry.house.0),
                Value::from(entry.flock.0),
                Value::from(entry.date),
                Value::from(entry.eggs_collected),
                Value::from(entry.eggs_cracked),
                Value::from(entry.mortality),
                Value::from(entry.feed_used_g),
                Value::from(entry.water_used_ml),
                Value::from(&entry.notes),
                Value::from(1_i64),
                Value::from(entry.recorded_by.0),
                Value::from(at),
                Value::from(at),
            ]);
        });
        sql.execute(&mut tx).await?;
    }

    for chunk in seed.lots.chunks(ROWS_PER_STATEMENT) {
        let mut sql = Sql::new(
            "insert into egg_lots
               (id, farm_id, flock_id, lot_code, laid_on, grade, quantity, status, created_at)",
        );
        sql.push_values(chunk, |row, lot| {
            row.extend([
                Value::from(uuid::Uuid::now_v7()),
                Value::from(seed.farm.0),
                Value::from(lot.flock.0),
                Value::from(&lot.lot_code),
                Value::from(lot.laid_on),
                Value::from(lot.grade),
                Value::from(lot.quantity),
                Value::from(lot.status),
                Value::from(at),
            ]);
        });
        sql.execute(&mut tx).await?;
    }

    if !seed.stock.is_empty() {
        let mut sql = Sql::new(
            "insert into stock_items
               (id, farm_id, category, name, quantity, unit, unit_cost_minor, currency,
                updated_at)",
        );
        sql.push_values(&seed.stock, |row, item| {
            row.extend([
                Value::from(uuid::Uuid::now_v7()),
                Value::from(seed.farm.0),
                Value::from(item.category),
                Value::from(&item.name),
                Value::from(item.quantity),
                Value::from(&item.unit),
                Value::from(item.unit_cost_minor),
                Value::from(item.currency),
                Value::from(at),
            ]);
        });
        sql.execute(&mut tx).await?;
    }

    tx.commit().await?;
    Ok(true)
}
