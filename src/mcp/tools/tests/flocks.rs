//! Flocks by name and in lists: scope, tenancy, ambiguity, paging.

use serde_json::json;

use super::*;

async fn lists_flocks_in_pages_by_house_and_name(engine: Engine) {
    let w = World::new(engine).await;
    let (store, owner) = (w.store(), &w.owner);
    let first = ok(store, owner, "list_flocks", json!({ "limit": 2 })).await;
    assert_eq!(names(&first, "flocks", "name"), ["Alpha", "Bravo"]);
    assert_eq!(first["flocks"][0]["house"], "North");
    assert_eq!(first["flocks"][0]["head_count"], 1000);
    assert_eq!(first["flocks"][0]["placed_on"], "2025-09-01");
    assert_eq!(first["flocks"][0]["age_days"], 190);
    assert_eq!(first["flocks"][0]["age_weeks"], 27);
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = ok(
        store,
        owner,
        "list_flocks",
        json!({ "limit": 2, "cursor": cursor }),
    )
    .await;
    assert_eq!(names(&second, "flocks", "name"), ["Charlie"]);
    assert!(second.get("next_cursor").is_none(), "{second}");

    let south = ok(store, owner, "list_flocks", json!({ "house": "South" })).await;
    assert_eq!(names(&south, "flocks", "name"), ["Charlie"]);
    in_tx(store, async |tx| {
        flock_store::set_status(tx, w.farm.id, w.bravo, true).await
    })
    .await;
    let depleted = ok(store, owner, "list_flocks", json!({ "status": "depleted" })).await;
    assert_eq!(names(&depleted, "flocks", "name"), ["Bravo"]);
}

async fn a_restricted_worker_sees_only_their_flocks(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    let worker = w
        .worker("worker@hillside.example", &[w.alpha, w.charlie])
        .await;
    let listed = ok(store, &worker, "list_flocks", json!({})).await;
    assert_eq!(names(&listed, "flocks", "name"), ["Alpha", "Charlie"]);
    let found = ok(store, &worker, "get_flock", json!({ "flock": "Charlie" })).await;
    assert_eq!(found["flock"]["name"], "Charlie");
    // Outside the scope is exactly "not found", the same words as a flock
    // that does not exist.
    let outside = refused(store, &worker, "get_flock", json!({ "flock": "Bravo" })).await;
    let missing = refused(store, &worker, "get_flock", json!({ "flock": "Zulu" })).await;
    assert_eq!(outside, r#"no flock named "Bravo""#);
    assert_eq!(missing, r#"no flock named "Zulu""#);
    let outside = refused(
        store,
        &worker,
        "list_daily_entries",
        json!({ "flock": "Bravo" }),
    )
    .await;
    assert_eq!(outside, r#"no flock named "Bravo""#);
}

async fn a_worker_restricted_to_no_flocks_sees_nothing(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    let nobody = w.worker("none@hillside.example", &[]).await;
    let listed = ok(store, &nobody, "list_flocks", json!({})).await;
    assert_eq!(listed["flocks"], json!([]));
    refused(store, &nobody, "get_flock", json!({ "flock": "Alpha" })).await;
}

async fn another_farm_s_flocks_are_not_found(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    let other = farm(store, "Valley").await;
    house(store, &other, "Barn").await;
    flock(store, &other, "Barn", "Delta", "2025-09-01", 300).await;
    let valley_owner = member(store, &other, "owner@valley.example", Role::Owner, None).await;
    let valley = context(&other, valley_owner, Role::Owner, None);

    let seen = ok(store, &valley, "list_flocks", json!({})).await;
    assert_eq!(names(&seen, "flocks", "name"), ["Delta"]);
    let message = refused(store, &valley, "get_flock", json!({ "flock": "Alpha" })).await;
    assert_eq!(message, r#"no flock named "Alpha""#);
    let hillside = w.ok("list_flocks", json!({})).await;
    assert!(!names(&hillside, "flocks", "name").contains(&"Delta".to_owned()));
    w.refused("get_flock", json!({ "flock": "Delta" })).await;
}

async fn a_shared_name_is_refused_with_its_candidates(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    flock(store, &w.farm, "South", "Alpha", "2025-11-01", 600).await;
    let message = w.refused("get_flock", json!({ "flock": "Alpha" })).await;
    assert_eq!(
        message,
        r#"several flocks are named "Alpha": "Alpha" in house "North"; "Alpha" in house "South". Pass `house` to choose one."#
    );
    let record = record_refused(store, &w.owner, "Alpha", "2026-03-09", 1).await;
    assert!(record.starts_with("several flocks"), "{record}");
    let south = w
        .ok("get_flock", json!({ "flock": "Alpha", "house": "South" }))
        .await;
    assert_eq!(south["flock"]["head_count"], 600);
    // A worker who can see only one of them is not told about the other.
    let worker = w.worker("worker@hillside.example", &[w.alpha]).await;
    let one = ok(store, &worker, "get_flock", json!({ "flock": "Alpha" })).await;
    assert_eq!(one["flock"]["house"], "North");
}

async fn get_flock_shows_the_last_seven_days(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    for (date, eggs) in [("2026-03-02", 5), ("2026-03-04", 900), ("2026-03-10", 950)] {
        record(store, &w.owner, "Alpha", date, eggs).await;
    }
    let reply = w.ok("get_flock", json!({ "flock": "Alpha" })).await;
    let week = &reply["last_7_days"];
    assert_eq!(week["from"], "2026-03-04");
    assert_eq!(week["to"], "2026-03-10");
    assert_eq!(week["days_recorded"], 2);
    assert_eq!(week["eggs_collected"], 1850);
    assert_eq!(week["entries"][0]["date"], "2026-03-10");
    assert_eq!(week["entries"][0]["recorded_by"], "owner@hillside.example");
}

on_both_engines!(
    lists_flocks_in_pages_by_house_and_name,
    a_restricted_worker_sees_only_their_flocks,
    a_worker_restricted_to_no_flocks_sees_nothing,
    another_farm_s_flocks_are_not_found,
    a_shared_name_is_refused_with_its_candidates,
    get_flock_shows_the_last_seven_days,
);
