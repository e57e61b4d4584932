//! The paged lists: daily entries, egg lots, stock (money as text).

use serde_json::json;
use time::macros::date;

use super::*;
use crate::domain::{Currency, LotStatus};
use crate::storage::egg_lots::{self, NewEggLot};
use crate::storage::stock::{self, NewStockItem};

async fn daily_entries_page_newest_first_within_the_period(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    for day in 1..=9 {
        record(
            store,
            &w.owner,
            "Alpha",
            &format!("2026-03-0{day}"),
            900 + day,
        )
        .await;
    }
    record(store, &w.owner, "Bravo", "2026-03-05", 400).await;
    let args = json!({ "flock": "Alpha", "from": "2026-03-02", "to": "2026-03-08", "limit": 3 });
    let first = w.ok("list_daily_entries", args.clone()).await;
    let dates = |reply: &Value| names(reply, "entries", "date");
    assert_eq!(dates(&first), ["2026-03-08", "2026-03-07", "2026-03-06"]);
    assert_eq!(first["entries"][0]["eggs_collected"], 908);
    let mut next = args.clone();
    next["cursor"] = first["next_cursor"].clone();
    let second = w.ok("list_daily_entries", next.clone()).await;
    assert_eq!(dates(&second), ["2026-03-05", "2026-03-04", "2026-03-03"]);
    next["cursor"] = second["next_cursor"].clone();
    let third = w.ok("list_daily_entries", next).await;
    assert_eq!(dates(&third), ["2026-03-02"]);
    assert!(third.get("next_cursor").is_none());

    // Defaults: the 30 days ending today.
    let recent = w
        .ok("list_daily_entries", json!({ "flock": "Alpha" }))
        .await;
    assert_eq!(
        (recent["from"].clone(), recent["to"].clone()),
        (json!("2026-02-09"), json!("2026-03-10"))
    );
    assert_eq!(recent["entries"].as_array().unwrap().len(), 9);
}

async fn bad_list_arguments_are_rejected(engine: Engine) {
    let w = World::new(engine).await;
    let (store, owner) = (w.store(), &w.owner);
    let flocks_cursor = ok(store, owner, "list_flocks", json!({ "limit": 1 })).await["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let cases = [
        (
            "list_flocks",
            json!({ "limit": 201 }),
            "limit 201 is out of range: a page holds 1 to 200 rows",
        ),
        (
            "list_flocks",
            json!({ "limit": 0 }),
            "limit 0 is out of range",
        ),
        (
            "list_flocks",
            json!({ "status": "sleeping" }),
            "invalid argument status: unknown variant `sleeping`",
        ),
        (
            "list_flocks",
            json!({ "cursor": "%%%" }),
            r#"cursor: "%%%" is not a cursor of this list"#,
        ),
        (
            "list_egg_lots",
            json!({ "cursor": flocks_cursor }),
            "cursor: ",
        ),
        (
            "list_daily_entries",
            json!({ "flock": "Alpha", "from": "2026-03-05", "to": "2026-03-01" }),
            "the period is reversed: from 2026-03-05 is after to 2026-03-01",
        ),
        (
            "list_daily_entries",
            json!({ "flock": "Alpha", "from": "2024-12-31", "to": "2026-01-01" }),
            "the period from 2024-12-31 to 2026-01-01 spans 367 days; at most 366 are allowed",
        ),
        (
            "production_summary",
            json!({ "from": "2024-01-01", "to": "2025-01-01" }),
            "the period from 2024-01-01 to 2025-01-01 spans 367 days; at most 366 are allowed",
        ),
        (
            "mortality_report",
            json!({ "to": "2026-13-01" }),
            r#"to: "2026-13-01" is not a date like 2026-03-01"#,
        ),
        (
            "production_summary",
            json!({ "house": "North" }),
            "house only chooses between flocks",
        ),
        (
            "stock_levels",
            json!({ "category": "tools" }),
            "invalid argument category: unknown variant `tools`",
        ),
        (
            "list_egg_lots",
            json!({ "limit": "ten" }),
            "invalid argument limit: invalid type: string",
        ),
    ];
    for (tool, args, expected) in cases {
        let message = invalid(store, owner, tool, args.clone()).await;
        assert!(message.starts_with(expected), "{tool} {args}: {message}");
    }
    // 366 days is allowed (2025 is not a leap year: Jan 1 to Jan 1 is 366 days).
    ok(
        store,
        owner,
        "list_daily_entries",
        json!({ "flock": "Alpha", "from": "2025-01-01", "to": "2026-01-01" }),
    )
    .await;
}

async fn egg_lots_page_by_day_and_respect_scope(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    let lots = [
        (w.alpha, "A-0301", date!(2026 - 03 - 01), LotStatus::InStore),
        (w.alpha, "A-0302", date!(2026 - 03 - 02), LotStatus::Shipped),
        (w.bravo, "B-0302", date!(2026 - 03 - 02), LotStatus::InStore),
        (
            w.charlie,
            "C-0303",
            date!(2026 - 03 - 03),
            LotStatus::InStore,
        ),
        (w.alpha, "A-0101", date!(2026 - 01 - 01), LotStatus::InStore),
    ];
    for (flock, code, laid_on, status) in lots {
        let lot = NewEggLot {
            flock,
            lot_code: code,
            laid_on,
            grade: "A",
            quantity: 360,
            status,
        };
        in_tx(store, async |tx| {
            egg_lots::add(tx, w.farm.id, &lot, NOW).await
        })
        .await;
    }
    let first = w.ok("list_egg_lots", json!({ "limit": 2 })).await;
    assert_eq!(names(&first, "egg_lots", "lot_code"), ["C-0303", "B-0302"]);
    assert_eq!(first["egg_lots"][0]["house"], "South");
    let rest = next_page(&w, "list_egg_lots", json!({ "limit": 2 }), &first).await;
    assert_eq!(names(&rest, "egg_lots", "lot_code"), ["A-0302", "A-0301"]);
    assert!(rest.get("next_cursor").is_none(), "{rest}");

    let shipped = w.ok("list_egg_lots", json!({ "status": "shipped" })).await;
    assert_eq!(names(&shipped, "egg_lots", "lot_code"), ["A-0302"]);
    let january = w
        .ok(
            "list_egg_lots",
            json!({ "from": "2026-01-01", "to": "2026-01-31", "flock": "Alpha" }),
        )
        .await;
    assert_eq!(names(&january, "egg_lots", "lot_code"), ["A-0101"]);

    let worker = w.worker("worker@hillside.example", &[w.bravo]).await;
    let seen = ok(store, &worker, "list_egg_lots", json!({})).await;
    assert_eq!(names(&seen, "egg_lots", "lot_code"), ["B-0302"]);
    refused(store, &worker, "list_egg_lots", json!({ "flock": "Alpha" })).await;

    let other = farm(store, "Valley").await;
    let stranger = member(store, &other, "owner@valley.example", Role::Owner, None).await;
    let stranger = context(&other, stranger, Role::Owner, None);
    let nothing = ok(store, &stranger, "list_egg_lots", json!({})).await;
    assert_eq!(nothing["egg_lots"], json!([]));
}

async fn stock_is_priced_as_text_with_its_currency(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    let items = [
        ("feed", "Layer pellets", 40, "bag", 1250, "EUR"),
        ("medication", "Vitamin drops", 3, "bottle", 899, "EUR"),
        ("packaging", "Egg boxes", 1000, "box", 12, "JPY"),
        ("packaging", "Trays", 7, "tray", 1250, "KWD"),
        ("other", "Gloves", 0, "pair", 5, "USD"),
    ];
    for (category, name, quantity, unit, cost, currency) in items {
        let item = NewStockItem {
            category,
            name,
            quantity,
            unit,
            unit_cost_minor: cost,
            currency: Currency::parse(currency).unwrap(),
        };
        in_tx(store, async |tx| {
            stock::add(tx, w.farm.id, &item, NOW).await
        })
        .await;
    }
    let reply = run(store, &w.owner, "stock_levels", json!({}), NOW)
        .await
        .unwrap();
    let listed = &reply.structured["items"];
    assert_eq!(
        names(&reply.structured, "items", "name"),
        [
            "Layer pellets",
            "Vitamin drops",
            "Gloves",
            "Egg boxes",
            "Trays"
        ]
    );
    assert_eq!(listed[0]["unit_cost"], "12.50 EUR");
    assert_eq!(listed[0]["value"], "500.00 EUR");
    assert_eq!(listed[1]["value"], "26.97 EUR");
    assert_eq!(listed[2]["value"], "0.00 USD");
    assert_eq!(listed[3]["unit_cost"], "12 JPY");
    assert_eq!(listed[3]["value"], "12000 JPY");
    assert_eq!(listed[4]["unit_cost"], "1.250 KWD");
    assert_eq!(listed[4]["value"], "8.750 KWD");
    assert!(
        reply
            .text
            .contains("Layer pellets (feed): 40 bag at 12.50 EUR each, worth 500.00 EUR"),
        "{}",
        reply.text
    );
    // No amount crosses as a bare number of minor units.
    for item in listed.as_array().unwrap() {
        assert!(
            item["unit_cost"].is_string() && item["value"].is_string(),
            "{item}"
        );
        assert!(item.get("unit_cost_minor").is_none());
    }
    let one_packaging = json!({ "category": "packaging", "limit": 1 });
    let packaging = w.ok("stock_levels", one_packaging.clone()).await;
    assert_eq!(names(&packaging, "items", "name"), ["Egg boxes"]);
    let more = next_page(&w, "stock_levels", one_packaging, &packaging).await;
    assert_eq!(names(&more, "items", "name"), ["Trays"]);

    let other = farm(store, "Valley").await;
    let stranger = member(store, &other, "owner@valley.example", Role::Owner, None).await;
    let stranger = context(&other, stranger, Role::Owner, None);
    assert_eq!(
        ok(store, &stranger, "stock_levels", json!({})).await["items"],
        json!([])
    );
}

on_both_engines!(
    daily_entries_page_newest_first_within_the_period,
    bad_list_arguments_are_rejected,
    egg_lots_page_by_day_and_respect_scope,
    stock_is_priced_as_text_with_its_currency,
);
