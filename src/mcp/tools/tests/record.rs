//! `record_daily_entry`: upsert, replay, conflict, refusals that can be
//! retried, scope, tenancy, the audit row, and concurrent writers.

use serde_json::json;
use time::Duration;

use super::*;
use crate::storage::Sql;

/// Audit rows of tool writes on the farm: (user, client, grant, detail).
async fn tool_writes(
    store: &Store,
    farm: FarmId,
) -> Vec<(
    Option<uuid::Uuid>,
    Option<String>,
    Option<uuid::Uuid>,
    String,
)> {
    Sql::new(
        "select user_id, client_id, grant_id, detail from audit_log
         where farm_id = $1 and kind = 'tool_write' order by created_at, id",
    )
    .bind(farm.0)
    .fetch_all(&mut store.read().await.unwrap())
    .await
    .unwrap()
}

async fn stored_entries(store: &Store, farm: FarmId) -> i64 {
    Sql::new("select count(*) from daily_entries where farm_id = $1")
        .bind(farm.0)
        .fetch_scalar(&mut store.read().await.unwrap())
        .await
        .unwrap()
}

fn full_entry() -> Value {
    json!({
        "flock": "Alpha", "date": "2026-03-09", "eggs_collected": 930, "eggs_cracked": 4,
        "mortality": 2, "feed_used_g": 115000, "water_used_ml": 220000, "notes": "fan fixed",
    })
}

async fn an_identical_replay_changes_nothing_and_audits_once(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    let first = w.ok("record_daily_entry", full_entry()).await;
    assert_eq!(first["replayed"], false);
    assert_eq!(first["change"], "created");
    assert_eq!(first["entry"]["version"], 1);
    assert_eq!(first["entry"]["notes"], "fan fixed");
    assert_eq!(first["house"], "North");

    let again = w.ok("record_daily_entry", full_entry()).await;
    assert_eq!(again["replayed"], true);
    assert_eq!(again["entry"], first["entry"]);
    // Sending only part of the same entry is a replay too.
    let partial = record(store, &w.owner, "Alpha", "2026-03-09", 930).await;
    assert_eq!(partial["replayed"], true);
    assert_eq!(partial["entry"]["version"], 1);

    // The row count cannot tell a replay from an upsert; the audit log can.
    let audit = tool_writes(store, w.farm.id).await;
    assert_eq!(audit.len(), 1, "{audit:?}");
    let (user, client, grant, detail) = &audit[0];
    assert_eq!(*user, w.owner.user().map(|u| u.0));
    assert_eq!(client.as_deref(), Some(w.owner.client_id.as_str()));
    assert_eq!(*grant, w.owner.grant().map(|g| g.0));
    let detail: Value = serde_json::from_str(detail).unwrap();
    assert_eq!(detail["change"], "created");
    assert_eq!(detail["flock"], "Alpha");
    assert_eq!(detail["date"], "2026-03-09");
    assert_eq!(detail["version"], 1);
}

async fn an_update_keeps_omitted_fields_and_moves_the_version(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    w.ok("record_daily_entry", full_entry()).await;
    let updated = record(store, &w.owner, "Alpha", "2026-03-09", 950).await;
    assert_eq!(updated["replayed"], false);
    assert_eq!(updated["change"], "updated");
    let entry = &updated["entry"];
    assert_eq!(entry["version"], 2);
    assert_eq!(entry["eggs_collected"], 950);
    assert_eq!(entry["mortality"], 2);
    assert_eq!(entry["notes"], "fan fixed");
    assert_eq!(tool_writes(store, w.farm.id).await.len(), 2);
    assert_eq!(stored_entries(store, w.farm.id).await, 1);
}

async fn a_stale_expected_version_is_a_conflict_showing_the_entry(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    w.ok("record_daily_entry", full_entry()).await;
    record(store, &w.owner, "Alpha", "2026-03-09", 940).await;
    let mut stale = full_entry();
    stale["eggs_collected"] = json!(999);
    stale["expected_version"] = json!(1);
    let message = w.refused("record_daily_entry", stale.clone()).await;
    assert!(
        message.starts_with(
            r#"conflict: the entry for "Alpha" (North) on 2026-03-09 is at version 2, not 1"#
        ),
        "{message}"
    );
    assert!(message.contains(r#""eggs_collected":940"#), "{message}");
    assert!(message.contains(r#""version":2"#), "{message}");
    assert_eq!(tool_writes(store, w.farm.id).await.len(), 2);

    stale["expected_version"] = json!(2);
    let written = w.ok("record_daily_entry", stale).await;
    assert_eq!(written["entry"]["version"], 3);
    assert_eq!(written["entry"]["eggs_collected"], 999);

    // 0 means "only if there is no entry yet".
    let mut create_only = full_entry();
    create_only["expected_version"] = json!(0);
    create_only["eggs_collected"] = json!(1);
    let message = w.refused("record_daily_entry", create_only).await;
    assert!(message.contains("is at version 3, not 0"), "{message}");
    // Expecting an entry that does not exist is a conflict too.
    let message = w.refused(
        "record_daily_entry",
        json!({ "flock": "Alpha", "date": "2026-03-08", "eggs_collected": 1, "expected_version": 1 }),
    )
    .await;
    assert!(
        message.contains("there is no entry for that day"),
        "{message}"
    );
    assert_eq!(stored_entries(store, w.farm.id).await, 1);
}

async fn a_replay_with_an_old_expected_version_is_still_a_replay(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    record(store, &w.owner, "Alpha", "2026-03-09", 900).await;
    let call = json!({
        "flock": "Alpha", "date": "2026-03-09", "eggs_collected": 901, "expected_version": 1
    });
    let first = w.ok("record_daily_entry", call.clone()).await;
    assert_eq!(first["entry"]["version"], 2);
    // The client lost the answer and sends the same call again.
    let again = w.ok("record_daily_entry", call).await;
    assert_eq!(again["replayed"], true);
    assert_eq!(again["entry"]["version"], 2);
    assert_eq!(tool_writes(store, w.farm.id).await.len(), 2);
}

async fn a_write_refused_for_the_date_succeeds_once_the_day_has_come(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    // NOW is 2026-03-10 12:00 UTC: 2026-03-11 has begun east of UTC+12,
    // 2026-03-12 has begun nowhere.
    let call = json!({ "flock": "Alpha", "date": "2026-03-12", "eggs_collected": 910 });
    let message = w.refused("record_daily_entry", call.clone()).await;
    assert_eq!(
        message,
        "2026-03-12 is in the future; record a day once it has begun"
    );
    assert_eq!(stored_entries(store, w.farm.id).await, 0);
    let Value::Object(arguments) = call else {
        unreachable!()
    };
    let later = NOW + Duration::days(1);
    let db = store.read().await.unwrap();
    let reply =
        crate::mcp::tools::call(store, db, &w.owner, "record_daily_entry", arguments, later)
            .await
            .unwrap();
    // Done now, not "replayed": the refusal was not remembered as done.
    assert_eq!(reply.structured["replayed"], false);
    assert_eq!(reply.structured["change"], "created");
    assert_eq!(tool_writes(store, w.farm.id).await.len(), 1);

    let tomorrow = record(store, &w.owner, "Alpha", "2026-03-11", 1).await;
    assert_eq!(tomorrow["change"], "created");
}

async fn a_write_refused_for_mortality_succeeds_after_the_head_count_is_fixed(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    let call = json!({
        "flock": "Bravo", "date": "2026-03-09", "eggs_collected": 400, "mortality": 501
    });
    let message = w.refused("record_daily_entry", call.clone()).await;
    assert_eq!(
        message,
        r#"mortality 501 exceeds flock "Bravo"'s head count of 500"#
    );
    in_tx(store, async |tx| {
        flock_store::set_head_count(tx, w.farm.id, w.bravo, 520).await
    })
    .await;
    let reply = w.ok("record_daily_entry", call).await;
    assert_eq!(reply["change"], "created");
    assert_eq!(reply["entry"]["mortality"], 501);
    assert_eq!(tool_writes(store, w.farm.id).await.len(), 1);
}

async fn a_day_before_placement_is_refused(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    let message = record_refused(store, &w.owner, "Charlie", "2026-01-04", 0).await;
    assert_eq!(
        message,
        r#"2026-01-04 is before flock "Charlie" was placed on 2026-01-05"#
    );
    record(store, &w.owner, "Charlie", "2026-01-05", 0).await;
}

async fn writes_outside_the_scope_or_the_farm_are_not_found(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    let worker = w.worker("worker@hillside.example", &[w.alpha]).await;
    let message = record_refused(store, &worker, "Bravo", "2026-03-09", 1).await;
    assert_eq!(message, r#"no flock named "Bravo""#);
    let mine = record(store, &worker, "Alpha", "2026-03-09", 7).await;
    assert_eq!(mine["entry"]["recorded_by"], "worker@hillside.example");

    let other = farm(store, "Valley").await;
    let stranger = member(store, &other, "owner@valley.example", Role::Owner, None).await;
    let stranger = context(&other, stranger, Role::Owner, None);
    let message = record_refused(store, &stranger, "Alpha", "2026-03-09", 1).await;
    assert_eq!(message, r#"no flock named "Alpha""#);
    assert_eq!(stored_entries(store, w.farm.id).await, 1);
    assert_eq!(stored_entries(store, other.id).await, 0);
    assert_eq!(tool_writes(store, other.id).await.len(), 0);
}

async fn bad_write_arguments_are_rejected_with_their_name(engine: Engine) {
    let w = World::new(engine).await;
    let (store, owner) = (w.store(), &w.owner);
    let tool = "record_daily_entry";
    let base = json!({ "flock": "Alpha", "date": "2026-03-09", "eggs_collected": 1 });
    let with = |key: &str, value: Value| {
        let mut args = base.clone();
        args[key] = value;
        args
    };
    let cases = [
        (
            with("eggs_collected", json!(-1)),
            "eggs_collected must be between 0 and 10000000, not -1",
        ),
        (
            with("mortality", json!(-3)),
            "mortality must be between 0 and 10000000, not -3",
        ),
        (
            with("date", json!("2026-02-30")),
            r#"date: "2026-02-30" is not a date like 2026-03-01"#,
        ),
        (
            with("date", json!("09/03/2026")),
            r#"date: "09/03/2026" is not a date like 2026-03-01"#,
        ),
        (
            with("eggs_collected", json!("ten")),
            "invalid argument eggs_collected: invalid type: string \"ten\", expected i64",
        ),
        (
            with("notes", json!("x".repeat(1001))),
            "notes must be at most 1000 characters",
        ),
        (
            with("notes", json!("fan fixed\r\u{1b}[2Jall fine")),
            "notes must not hold control characters other than a line break or a tab \
             (found U+000D)",
        ),
        (
            with("notes", json!("bell\u{7}")),
            "notes must not hold control characters other than a line break or a tab \
             (found U+0007)",
        ),
        (
            with("expected_version", json!(-1)),
            "expected_version must be between 0 and 9223372036854775807, not -1",
        ),
        (
            with("flock", json!("  ")),
            "flock must be 1 to 100 printable characters",
        ),
        (
            with("colour", json!("brown")),
            "invalid argument colour: unknown field `colour`, expected one of `flock`",
        ),
        (
            json!({ "flock": "Alpha", "date": "2026-03-09" }),
            "invalid arguments: missing field `eggs_collected`",
        ),
    ];
    for (args, expected) in cases {
        let message = invalid(store, owner, tool, args.clone()).await;
        assert!(message.starts_with(expected), "{args}: {message}");
    }
    assert_eq!(stored_entries(store, w.farm.id).await, 0);
    // A line break and a tab are the control characters notes may hold.
    let written = ok(
        store,
        owner,
        tool,
        with("notes", json!("fan fixed\n\tcheck at 6")),
    )
    .await;
    assert_eq!(written["entry"]["notes"], "fan fixed\n\tcheck at 6");
}

async fn concurrent_writers_expecting_one_version_get_one_win(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    record(store, &w.owner, "Alpha", "2026-03-09", 900).await;
    for round in 0..5 {
        let expected = round + 1;
        let a = json!({ "flock": "Alpha", "date": "2026-03-09",
            "eggs_collected": 1000 + round, "expected_version": expected });
        let b = json!({ "flock": "Alpha", "date": "2026-03-09",
            "eggs_collected": 2000 + round, "expected_version": expected });
        let (ra, rb) = tokio::join!(
            run(store, &w.owner, "record_daily_entry", a, NOW),
            run(store, &w.owner, "record_daily_entry", b, NOW),
        );
        let wins = [&ra, &rb].iter().filter(|r| r.is_ok()).count();
        let conflicts = [&ra, &rb]
            .iter()
            .filter(|r| matches!(r, Err(ToolError::Refused(m)) if m.starts_with("conflict")))
            .count();
        assert_eq!((wins, conflicts), (1, 1), "{ra:?} {rb:?}");
    }
    assert_eq!(tool_writes(store, w.farm.id).await.len(), 6);
}

async fn concurrent_identical_creates_write_once(engine: Engine) {
    let w = World::new(engine).await;
    let store = w.store();
    for day in 1..=5 {
        let call =
            json!({ "flock": "Alpha", "date": format!("2026-03-0{day}"), "eggs_collected": 900 });
        let (ra, rb) = tokio::join!(
            run(store, &w.owner, "record_daily_entry", call.clone(), NOW),
            run(store, &w.owner, "record_daily_entry", call, NOW),
        );
        let (ra, rb) = (ra.unwrap().structured, rb.unwrap().structured);
        let mut replayed = [ra["replayed"].as_bool(), rb["replayed"].as_bool()];
        replayed.sort();
        assert_eq!(replayed, [Some(false), Some(true)], "{ra} {rb}");
    }
    assert_eq!(tool_writes(store, w.farm.id).await.len(), 5);
    assert_eq!(stored_entries(store, w.farm.id).await, 5);
}

on_both_engines!(
    an_identical_replay_changes_nothing_and_audits_once,
    an_update_keeps_omitted_fields_and_moves_the_version,
    a_stale_expected_version_is_a_conflict_showing_the_entry,
    a_replay_with_an_old_expected_version_is_still_a_replay,
    a_write_refused_for_the_date_succeeds_once_the_day_has_come,
    a_write_refused_for_mortality_succeeds_after_the_head_count_is_fixed,
    a_day_before_placement_is_refused,
    writes_outside_the_scope_or_the_farm_are_not_found,
    bad_write_arguments_are_rejected_with_their_name,
    concurrent_writers_expecting_one_version_get_one_win,
    concurrent_identical_creates_write_once,
);
