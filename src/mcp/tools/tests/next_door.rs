//! Next door: a second farm in every [`World`]'s database whose records
//! look like the World's (houses "North" and "South", flocks "Alpha",
//! "Bravo" and "Charlie", entries on the same days, egg lots, stock, an
//! owner), plus markers no answer to the World's farm may hold. A query
//! that forgets its farm predicate then shows next door's rows, or counts
//! them in a total, and the tests below see it: every list and report tool
//! is called as the World's owner and as a restricted worker, and each
//! answer is searched for the markers; the totals are asserted exactly.

use serde_json::json;
use time::macros::date;

use super::*;
use crate::domain::{Currency, LotStatus};
use crate::storage::egg_lots::{self, NewEggLot};
use crate::storage::stock::{self, NewStockItem};

/// Next door's distinctive figures and names: six-digit numbers no
/// fixture of the World's farm uses (a sum that counts next door's
/// rows is caught by the exact totals instead).
const HEAD_COUNT: i64 = 913_577;
const EGGS: i64 = 731_905;
const DEATHS: i64 = 482_711;
const LOT_QUANTITY: i64 = 604_433;
const STOCK_QUANTITY: i64 = 556_677;
const UNIQUE_FLOCK: &str = "Quillfeather";
const LOT_CODE: &str = "ND-LOT";
const STOCK_NAME: &str = "Neighbour mash";
const OWNER: &str = "owner@next-door.example";

/// The farm next door and what identifies its records.
pub struct NextDoor {
    pub owner: CallContext,
}

impl NextDoor {
    /// Seeds next door through the admin functions, the storage functions
    /// and its owner's own tool calls, as the World is seeded.
    pub async fn new(store: &Store) -> Self {
        let farm = farm(store, "Next Door").await;
        house(store, &farm, "North").await;
        house(store, &farm, "South").await;
        let mut flocks = Vec::new();
        for (house, name) in [
            ("North", "Alpha"),
            ("North", "Bravo"),
            ("South", "Charlie"),
            ("North", UNIQUE_FLOCK),
        ] {
            flocks.push(flock(store, &farm, house, name, "2025-09-01", HEAD_COUNT).await);
        }
        let owner_id = member(store, &farm, OWNER, Role::Owner, None).await;
        let owner = context(&farm, owner_id, Role::Owner, None);
        for name in ["Alpha", "Bravo", "Charlie", UNIQUE_FLOCK] {
            for date in ["2026-03-08", "2026-03-09"] {
                let arguments = json!({ "flock": name, "date": date, "eggs_collected": EGGS,
                    "mortality": DEATHS, "notes": "next door's notes" });
                ok(store, &owner, "record_daily_entry", arguments).await;
            }
        }
        for (flock, code, laid_on) in [
            (flocks[0], format!("{LOT_CODE}-1"), date!(2026 - 03 - 02)),
            (flocks[3], format!("{LOT_CODE}-2"), date!(2026 - 03 - 09)),
        ] {
            let lot = NewEggLot {
                flock,
                lot_code: &code,
                laid_on,
                grade: "A",
                quantity: LOT_QUANTITY,
                status: LotStatus::InStore,
            };
            in_tx(store, async |tx| {
                egg_lots::add(tx, farm.id, &lot, NOW).await
            })
            .await;
        }
        let item = NewStockItem {
            category: "feed",
            name: STOCK_NAME,
            quantity: STOCK_QUANTITY,
            unit: "bag",
            unit_cost_minor: 1250,
            currency: Currency::parse("EUR").unwrap(),
        };
        in_tx(store, async |tx| stock::add(tx, farm.id, &item, NOW).await).await;
        Self { owner }
    }

    /// What would show next door's rows in an answer: its unique names and
    /// its figures (no tool shows an id).
    fn markers() -> Vec<String> {
        let mut markers = Vec::new();
        markers.extend(
            [
                UNIQUE_FLOCK,
                LOT_CODE,
                STOCK_NAME,
                OWNER,
                "next door",
                "next-door",
            ]
            .map(str::to_owned),
        );
        markers.extend(
            [HEAD_COUNT, EGGS, DEATHS, LOT_QUANTITY, STOCK_QUANTITY].map(|n| n.to_string()),
        );
        markers
    }

    /// Fails when `answer` (a reply's text and structured content) holds
    /// any of next door's markers.
    pub fn assert_absent(&self, what: &str, answer: &str) {
        for marker in Self::markers() {
            assert!(
                !answer.to_lowercase().contains(&marker.to_lowercase()),
                "{what}: next door's {marker:?} in {answer}"
            );
        }
    }
}

/// A tool's whole answer, its text and structured content, as one string.
async fn answer(store: &Store, ctx: &CallContext, tool: &str, arguments: Value) -> String {
    match run(store, ctx, tool, arguments.clone(), NOW).await {
        Ok(reply) => format!("{}\n{}", reply.text, reply.structured),
        Err(err) => panic!("{tool} {arguments} failed: {err:?}"),
    }
}

/// Every list and report tool, over periods that hold next door's rows,
/// for the whole farm and for one flock named like one of next door's;
/// `stock_levels` only for a role that has it.
fn every_read(with_stock: bool) -> Vec<(&'static str, Value)> {
    let period = json!({ "from": "2026-03-01", "to": "2026-03-10" });
    let with = |extra: Value| {
        let mut arguments = period.clone();
        if let (Some(a), Some(e)) = (arguments.as_object_mut(), extra.as_object()) {
            a.extend(e.clone());
        }
        arguments
    };
    let mut reads = vec![
        ("list_flocks", json!({})),
        ("list_flocks", json!({ "house": "North", "limit": 200 })),
        ("get_flock", json!({ "flock": "Alpha" })),
        ("list_daily_entries", with(json!({ "flock": "Alpha" }))),
        ("production_summary", with(json!({}))),
        ("production_summary", with(json!({ "flock": "Alpha" }))),
        ("mortality_report", with(json!({}))),
        ("mortality_report", with(json!({ "flock": "Alpha" }))),
        ("list_egg_lots", with(json!({}))),
        ("list_egg_lots", with(json!({ "flock": "Alpha" }))),
    ];
    if with_stock {
        reads.push(("stock_levels", json!({})));
    }
    reads
}

async fn next_door_is_in_no_answer_to_the_owner_or_a_worker(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    for (flock, date, deaths) in [("Alpha", "2026-03-09", 2), ("Charlie", "2026-03-08", 3)] {
        let arguments =
            json!({ "flock": flock, "date": date, "eggs_collected": 900, "mortality": deaths });
        w.ok("record_daily_entry", arguments).await;
    }
    let worker = w
        .worker("worker@hillside.example", &[w.alpha, w.charlie])
        .await;
    for (ctx, with_stock) in [(&w.owner, true), (&worker, false)] {
        for (tool, arguments) in every_read(with_stock) {
            let answer = answer(store, ctx, tool, arguments.clone()).await;
            w.next_door
                .assert_absent(&format!("{tool} {arguments} as {:?}", ctx.role), &answer);
        }
    }

    // The totals count this farm's rows only, exactly.
    let period = json!({ "from": "2026-03-01", "to": "2026-03-10" });
    let report = w.ok("mortality_report", period.clone()).await;
    assert_eq!(report["total_deaths"], 5, "{report}");
    assert_eq!(
        names(&report, "flocks", "flock"),
        ["Alpha", "Bravo", "Charlie"]
    );
    let alpha = w
        .ok(
            "mortality_report",
            json!({ "flock": "Alpha", "from": "2026-03-01" }),
        )
        .await;
    assert_eq!(alpha["total_deaths"], 2, "{alpha}");
    let scoped = ok(store, &worker, "mortality_report", period.clone()).await;
    assert_eq!(scoped["total_deaths"], 5, "{scoped}");
    let summary = w.ok("production_summary", period).await;
    assert_eq!(summary["eggs_collected"], 1800, "{summary}");
    assert_eq!(summary["mortality"], 5, "{summary}");
    assert_eq!(summary["days_recorded"], 2, "{summary}");
    let lots = w.ok("list_egg_lots", json!({})).await;
    assert_eq!(lots["egg_lots"], json!([]), "{lots}");
    let stock = w.ok("stock_levels", json!({})).await;
    assert_eq!(stock["items"], json!([]), "{stock}");
}

/// The other way round: next door's owner sees next door's records,
/// which is what makes their absence above mean something.
async fn next_door_sees_its_own_records(engine: Engine) {
    let w = World::new(engine).await;
    let (store, next_door) = (w.store(), &w.next_door);
    let flocks = ok(store, &next_door.owner, "list_flocks", json!({})).await;
    assert_eq!(
        names(&flocks, "flocks", "name"),
        ["Alpha", "Bravo", UNIQUE_FLOCK, "Charlie"]
    );
    let report = ok(store, &next_door.owner, "mortality_report", json!({})).await;
    assert_eq!(report["total_deaths"], 8 * DEATHS);
    let lots = ok(store, &next_door.owner, "list_egg_lots", json!({})).await;
    assert_eq!(lots["egg_lots"].as_array().map(Vec::len), Some(2));
    let stock = ok(store, &next_door.owner, "stock_levels", json!({})).await;
    assert_eq!(names(&stock, "items", "name"), [STOCK_NAME]);
    let mut every = String::new();
    for (tool, arguments) in every_read(true) {
        every.push_str(&answer(store, &next_door.owner, tool, arguments).await);
    }
    for marker in NextDoor::markers() {
        if marker != OWNER && !marker.starts_with("next") {
            assert!(every.contains(&marker), "{marker} never shown to next door");
        }
    }
}

on_both_engines!(
    next_door_is_in_no_answer_to_the_owner_or_a_worker,
    next_door_sees_its_own_records,
);
