//! `production_summary` and `mortality_report`: SQL aggregates, scoped.

use serde_json::json;

use super::*;

async fn seed(w: &World) {
    let entries = [
        ("Alpha", "2026-03-08", 900, 1),
        ("Alpha", "2026-03-09", 950, 2),
        ("Bravo", "2026-03-09", 400, 5),
        ("Charlie", "2026-03-09", 700, 0),
        ("Charlie", "2026-02-01", 600, 9),
    ];
    for (flock, date, eggs, deaths) in entries {
        w.ok(
            "record_daily_entry",
            json!({ "flock": flock, "date": date, "eggs_collected": eggs, "mortality": deaths }),
        )
        .await;
    }
}

async fn production_is_summed_per_day_with_the_lay_rate(engine: Engine) {
    let w = World::new(engine).await;
    seed(&w).await;
    let store = w.store();
    let farm = w.ok("production_summary", json!({})).await;
    assert_eq!(farm["from"], "2026-03-04");
    assert_eq!(farm["to"], "2026-03-10");
    assert_eq!(farm["days_in_period"], 7);
    assert_eq!(farm["days_recorded"], 2);
    assert_eq!(farm["eggs_collected"], 900 + 950 + 400 + 700);
    assert_eq!(farm["mortality"], 8);
    assert_eq!(farm["eggs_per_recorded_day"], 1475.0);
    // 2950 eggs over 1000 hen-days (Mar 8) + 2300 hen-days (Mar 9).
    assert_eq!(farm["lay_rate_percent"], 89.4);
    assert_eq!(farm["days"][1]["date"], "2026-03-09");
    assert_eq!(farm["days"][1]["flocks_recorded"], 3);
    assert_eq!(farm["days"][1]["hens"], 2300);
    assert_eq!(farm["days"][1]["lay_rate_percent"], 89.1);

    let alpha = w
        .ok(
            "production_summary",
            json!({ "flock": "Alpha", "from": "2026-03-09", "to": "2026-03-09" }),
        )
        .await;
    assert_eq!(
        alpha["subject"],
        json!({ "flock": "Alpha", "house": "North" })
    );
    assert_eq!(alpha["eggs_collected"], 950);
    assert_eq!(alpha["lay_rate_percent"], 95.0);

    let worker = w.worker("worker@hillside.example", &[w.bravo]).await;
    let scoped = ok(store, &worker, "production_summary", json!({})).await;
    assert_eq!(scoped["eggs_collected"], 400);
    assert_eq!(scoped["mortality"], 5);
    let none = w.worker("none@hillside.example", &[]).await;
    let empty = ok(store, &none, "production_summary", json!({})).await;
    assert_eq!(empty["eggs_collected"], 0);
    assert_eq!(empty["lay_rate_percent"], Value::Null);
}

async fn mortality_is_reported_per_flock_with_its_rate(engine: Engine) {
    let w = World::new(engine).await;
    seed(&w).await;
    let store = w.store();
    let first = w.ok("mortality_report", json!({ "limit": 2 })).await;
    assert_eq!(first["from"], "2026-02-09");
    assert_eq!(first["total_deaths"], 8);
    assert_eq!(names(&first, "flocks", "flock"), ["Alpha", "Bravo"]);
    assert_eq!(first["flocks"][0]["deaths"], 3);
    assert_eq!(first["flocks"][0]["days_recorded"], 2);
    assert_eq!(first["flocks"][0]["mortality_rate_percent"], 0.3);
    assert_eq!(first["flocks"][1]["mortality_rate_percent"], 1.0);
    let rest = next_page(&w, "mortality_report", json!({ "limit": 2 }), &first).await;
    assert_eq!(names(&rest, "flocks", "flock"), ["Charlie"]);
    assert_eq!(rest["flocks"][0]["deaths"], 0);
    assert!(rest.get("next_cursor").is_none());

    let longer = w
        .ok(
            "mortality_report",
            json!({ "flock": "Charlie", "from": "2026-01-01", "to": "2026-03-10" }),
        )
        .await;
    assert_eq!(longer["total_deaths"], 9);
    assert_eq!(names(&longer, "flocks", "flock"), ["Charlie"]);

    let worker = w
        .worker("worker@hillside.example", &[w.alpha, w.charlie])
        .await;
    let scoped = ok(store, &worker, "mortality_report", json!({})).await;
    assert_eq!(names(&scoped, "flocks", "flock"), ["Alpha", "Charlie"]);
    assert_eq!(scoped["total_deaths"], 3);
    refused(
        store,
        &worker,
        "mortality_report",
        json!({ "flock": "Bravo" }),
    )
    .await;
}

on_both_engines!(
    production_is_summed_per_day_with_the_lay_rate,
    mortality_is_reported_per_flock_with_its_rate,
);
