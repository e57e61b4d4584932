//! Proof that lists read a page from the database, not the whole table.
//!
//! The storage seam reports, for every statement, how many rows the
//! database returned (`rows_returned` on its `coop::storage::statement`
//! tracing event, on both engines). A global tracing
//! layer records those counts; each test fills a farm with far more rows
//! than a page and checks that no statement of that list returned more than
//! the page plus one. Loading everything and cutting the list in Rust makes
//! these go red, however the reply looks. A control query without a limit
//! shows the capture does see large reads.

use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::json;
use time::macros::date;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::{Layer, Registry};

use super::*;
use crate::domain::paging::MAX_PAGE_SIZE;
use crate::domain::{Currency, EntryDate, LotStatus};
use crate::storage::egg_lots::{self, NewEggLot};
use crate::storage::stock::{self, NewStockItem};
use crate::storage::{Sql, StoreError, Tx};

/// (statement text, rows the database returned), for every statement run
/// by any test while this layer is installed.
static READS: Mutex<Vec<(String, u64)>> = Mutex::new(Vec::new());

struct RowsReturned;

#[derive(Default)]
struct Fields {
    statement: String,
    rows: Option<u64>,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "rows_returned" {
            self.rows = Some(value);
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "statement" {
            self.statement.push_str(value);
            self.statement.push('\n');
        }
    }
    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
}

impl<S: tracing::Subscriber> Layer<S> for RowsReturned {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != crate::storage::engine::STATEMENT_TARGET {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if let Some(rows) = fields.rows {
            READS.lock().unwrap().push((fields.statement, rows));
        }
    }
}

fn capture() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        tracing::subscriber::set_global_default(Registry::default().with(RowsReturned))
            .expect("no other global subscriber in the unit tests");
    });
}

/// The row counts of every statement so far that `is_list` recognises,
/// once `seen` says the expected one is among them (waiting briefly, in
/// case a statement's event is recorded after its result arrives).
async fn reads_of(is_list: impl Fn(&str) -> bool, seen: impl Fn(&u64) -> bool) -> Vec<u64> {
    let mut counts = Vec::new();
    for _ in 0..100 {
        counts = READS
            .lock()
            .unwrap()
            .iter()
            .filter(|(sql, _)| is_list(sql))
            .map(|(_, rows)| *rows)
            .collect();
        if counts.iter().any(&seen) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    counts
}

/// The page was read (page + 1 rows, the extra one telling that more
/// follow) and no statement of this list, in any test, returned more than
/// the largest page allows, although this test's farm holds [`MANY`] rows.
async fn assert_bounded(list: &str, is_list: impl Fn(&str) -> bool, page: u64) {
    let counts = reads_of(is_list, |n| *n == page + 1).await;
    assert!(
        counts.contains(&(page + 1)),
        "{list}: no read of {} rows seen: {counts:?}",
        page + 1
    );
    let cap = u64::from(MAX_PAGE_SIZE) + 1;
    assert!(
        counts.iter().all(|rows| *rows <= cap),
        "{list} read more rows than a page: {counts:?}"
    );
}

const MANY: usize = 260;

async fn the_capture_sees_an_unbounded_read(w: &World, marker: &str, table: &str) {
    let sql = format!("select cast(1 as bigint) as {marker} from {table} where farm_id = $1");
    let rows: Vec<i64> = Sql::new(sql)
        .bind(w.farm.id.0)
        .fetch_column(&mut w.store().read().await.unwrap())
        .await
        .unwrap();
    assert!(rows.len() >= MANY);
    let counts = reads_of(|sql| sql.contains(marker), |n| *n >= MANY as u64).await;
    assert!(counts.iter().any(|n| *n >= MANY as u64), "{counts:?}");
}

/// [`MANY`] rows of the farm, the `n`th written by `add(tx, n)`, all in
/// one transaction.
async fn add_many(w: &World, add: impl AsyncFn(&mut Tx, usize) -> Result<(), StoreError>) {
    in_tx(w.store(), async |tx| {
        for n in 0..MANY {
            add(tx, n).await?;
        }
        Ok(())
    })
    .await
}

/// [`MANY`] flocks in `house`.
async fn many_flocks(w: &World, house: &str) {
    for n in 0..MANY {
        flock(
            w.store(),
            &w.farm,
            house,
            &format!("Flock {n:03}"),
            "2025-09-01",
            100,
        )
        .await;
    }
}

/// `tool` called with `args` and a `limit` of `n` returns a page of `n`
/// under `key`, and read that page alone (see [`assert_bounded`];
/// `is_list` recognises its statement).
async fn one_page(
    w: &World,
    tool: &str,
    mut args: serde_json::Value,
    key: &str,
    n: usize,
    is_list: impl Fn(&str) -> bool,
) {
    args["limit"] = json!(n);
    let page = w.ok(tool, args).await;
    assert_eq!(page[key].as_array().unwrap().len(), n);
    assert_bounded(tool, is_list, n as u64).await;
}

async fn list_flocks_reads_one_page(engine: Engine) {
    capture();
    let w = World::new(engine).await;
    many_flocks(&w, "North").await;
    let is_list =
        |sql: &str| sql.contains("order by h.name, f.name, f.id") && !sql.contains("group by");
    one_page(&w, "list_flocks", json!({}), "flocks", 7, is_list).await;
    the_capture_sees_an_unbounded_read(&w, "control_flocks", "flocks").await;
}

async fn list_daily_entries_reads_one_page(engine: Engine) {
    capture();
    let w = World::new(engine).await;
    let store = w.store();
    flock(store, &w.farm, "South", "Old", "2025-01-01", 1000).await;
    let first = date!(2025 - 01 - 01);
    for n in 0..MANY {
        let day = first + time::Duration::days(n as i64);
        record(
            store,
            &w.owner,
            "Old",
            &EntryDate::from_date(day).to_string(),
            900,
        )
        .await;
    }
    let args = json!({ "flock": "Old", "from": "2025-01-01", "to": "2025-12-31" });
    let is_list = |sql: &str| sql.contains("order by e.entry_date desc");
    one_page(&w, "list_daily_entries", args, "entries", 9, is_list).await;
    the_capture_sees_an_unbounded_read(&w, "control_entries", "daily_entries").await;
}

async fn list_egg_lots_reads_one_page(engine: Engine) {
    capture();
    let w = World::new(engine).await;
    add_many(&w, async |tx, n| {
        let lot = NewEggLot {
            flock: w.alpha,
            lot_code: &format!("L{n:04}"),
            laid_on: date!(2026 - 03 - 01),
            grade: "A",
            quantity: 30,
            status: LotStatus::InStore,
        };
        egg_lots::add(tx, w.farm.id, &lot, NOW).await
    })
    .await;
    let is_list = |sql: &str| sql.contains("order by l.laid_on desc, l.lot_code desc");
    one_page(&w, "list_egg_lots", json!({}), "egg_lots", 11, is_list).await;
    the_capture_sees_an_unbounded_read(&w, "control_lots", "egg_lots").await;
}

async fn stock_levels_reads_one_page(engine: Engine) {
    capture();
    let w = World::new(engine).await;
    let eur = Currency::parse("EUR").unwrap();
    add_many(&w, async |tx, n| {
        let item = NewStockItem {
            category: "feed",
            name: &format!("Feed {n:04}"),
            quantity: 1,
            unit: "bag",
            unit_cost_minor: 100,
            currency: eur,
        };
        stock::add(tx, w.farm.id, &item, NOW).await
    })
    .await;
    let is_list = |sql: &str| sql.contains("order by s.category, s.name");
    one_page(&w, "stock_levels", json!({}), "items", 13, is_list).await;
    the_capture_sees_an_unbounded_read(&w, "control_stock", "stock_items").await;
}

async fn mortality_report_reads_one_page_of_flocks(engine: Engine) {
    capture();
    let w = World::new(engine).await;
    many_flocks(&w, "South").await;
    let is_list = |sql: &str| sql.contains("group by p.id, p.name, p.house, p.head_count");
    one_page(&w, "mortality_report", json!({}), "flocks", 15, is_list).await;
}

on_both_engines!(
    list_flocks_reads_one_page,
    list_daily_entries_reads_one_page,
    list_egg_lots_reads_one_page,
    stock_levels_reads_one_page,
    mortality_report_reads_one_page_of_flocks,
);
