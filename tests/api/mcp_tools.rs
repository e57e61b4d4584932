//! The tools through `/mcp`: what each role and scope sees, what is refused
//! and how, and the write rules (flock scope, ambiguity, replay, conflict,
//! retry after a refusal, another farm's data).

use serde_json::{Value, json};

use crate::helpers::mcp::{BOTH_SCOPES, Wire, challenge, request_body};
use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(
    tools_list_is_role_and_scope,
    a_hidden_tool_is_refused_like_an_unknown_tool,
    a_write_with_a_read_token_asks_for_step_up,
    another_farms_data_is_not_found,
    a_worker_sees_only_their_flocks,
    an_ambiguous_flock_name_lists_the_candidates,
    a_replayed_write_changes_nothing_and_audits_once,
    a_stale_version_is_a_conflict_showing_the_current_entry,
    a_refused_write_can_be_retried_once_the_cause_is_fixed,
    notes_with_control_characters_are_invalid_params,
);

const READ: [&str; 7] = [
    "list_flocks",
    "get_flock",
    "list_daily_entries",
    "production_summary",
    "list_egg_lots",
    "stock_levels",
    "mortality_report",
];

fn expected(role: &str, scopes: &str) -> Vec<String> {
    let read = scopes.contains("farm:read");
    let write = scopes.contains("daily-entries:write");
    let mut names: Vec<&str> = Vec::new();
    if read {
        names.extend(READ.iter().filter(|t| match **t {
            "stock_levels" => matches!(role, "owner" | "manager"),
            "mortality_report" => role != "viewer",
            _ => true,
        }));
    }
    if write && role != "viewer" {
        names.push("record_daily_entry");
    }
    names.into_iter().map(str::to_owned).collect()
}

/// What `get_flock` and `record_daily_entry` (an entry for 2025-03-01)
/// answer `token` for `flock`, refused: (get's text, record's text).
async fn refusals_for(app: &TestApp, token: &str, flock: &str) -> (String, String) {
    let get = app
        .tool_refused(token, "get_flock", json!({"flock": flock}))
        .await;
    let entry = json!({"flock": flock, "date": "2025-03-01", "eggs_collected": 1});
    let record = app.tool_refused(token, "record_daily_entry", entry).await;
    (get, record)
}

async fn tools_list_is_role_and_scope(engine: Engine) {
    let (app, owner) = TestApp::with_member(engine, "owner").await;
    for role in ["owner", "manager", "worker", "viewer"] {
        for scopes in ["farm:read", "daily-entries:write", BOTH_SCOPES] {
            let email = format!("{role}-{}@hillside.example", scopes.len());
            let member = app.add_member(&owner.farm, &email, role, None).await;
            let tokens = app.connect(&member, scopes).await;
            let mut want = expected(role, scopes);
            want.sort();
            let mut got = app
                .tool_names(&tokens.access_token, Wire::V2025_11_25)
                .await;
            got.sort();
            assert_eq!(got, want, "{role} with {scopes}");
            if role == "worker" && scopes == BOTH_SCOPES {
                for wire in Wire::ALL {
                    let mut got = app.tool_names(&tokens.access_token, wire).await;
                    got.sort();
                    assert_eq!(got, want, "{wire:?}");
                }
            }
        }
    }
}

async fn a_hidden_tool_is_refused_like_an_unknown_tool(engine: Engine) {
    let (app, viewer) = TestApp::with_flocks(engine, "viewer").await;
    let tokens = app.connect(&viewer, BOTH_SCOPES).await;
    let args = json!({"flock": "Hens A", "date": "2025-03-01", "eggs_collected": 900});
    for (tool, arguments) in [
        ("no_such_tool", json!({})),
        ("record_daily_entry", args),
        ("stock_levels", json!({})),
    ] {
        for wire in Wire::ALL {
            let (status, body) = app
                .rpc(
                    &tokens.access_token,
                    wire,
                    "tools/call",
                    json!({"name": tool, "arguments": arguments}),
                )
                .await;
            assert_eq!(status, 200, "{tool} {wire:?}: {body}");
            assert_eq!(body["error"]["code"], -32602, "{tool} {wire:?}: {body}");
            assert_eq!(body["error"]["message"], format!("Unknown tool: {tool}"));
        }
    }
    assert_eq!(app.db_count("select count(*) from daily_entries").await, 0);
}

async fn a_write_with_a_read_token_asks_for_step_up(engine: Engine) {
    let (app, worker) = TestApp::with_flocks(engine, "worker").await;
    let tokens = app.connect(&worker, "farm:read").await;
    let expected = format!(
        r#"Bearer error="insufficient_scope", scope="daily-entries:write", resource_metadata="{}""#,
        app.metadata_url()
    );
    for wire in Wire::ALL {
        let body = request_body(
            wire,
            4,
            "tools/call",
            json!({"name": "record_daily_entry", "arguments":
                {"flock": "Hens A", "date": "2025-03-01", "eggs_collected": 900}}),
        );
        let response = app.mcp_send(Some(&tokens.access_token), wire, &body).await;
        assert_eq!(response.status(), 403, "{wire:?}");
        assert_eq!(challenge(&response), expected, "{wire:?}");
    }
    assert_eq!(app.db_count("select count(*) from daily_entries").await, 0);
    assert_eq!(app.audit_count("tool_write").await, 0);
}

async fn another_farms_data_is_not_found(engine: Engine) {
    let (app, _hillside) = TestApp::with_flocks(engine, "owner").await;
    let other_farm = app.add_farm("Valley Farm").await;
    app.admin(&["house", "add", "--farm", &other_farm, "--name", "Barn"])
        .await;
    app.add_flock(&other_farm, "Barn", "Valley Hens").await;
    let valley = app
        .add_member(&other_farm, "owner@valley.example", "owner", None)
        .await;
    let tokens = app.connect(&valley, BOTH_SCOPES).await;

    assert_eq!(app.flock_names(&tokens.access_token).await, ["Valley Hens"]);
    let (get, record) = refusals_for(&app, &tokens.access_token, "Hens A").await;
    assert!(get.contains("no flock named \"Hens A\""), "{get}");
    assert!(record.contains("no flock named"), "{record}");
    assert_eq!(app.db_count("select count(*) from daily_entries").await, 0);
}

async fn a_worker_sees_only_their_flocks(engine: Engine) {
    let (app, owner) = TestApp::with_flocks(engine, "owner").await;
    let worker = app
        .add_member(&owner.farm, "w@hillside.example", "worker", Some("Hens A"))
        .await;
    let tokens = app.connect(&worker, BOTH_SCOPES).await;
    assert_eq!(app.flock_names(&tokens.access_token).await, ["Hens A"]);
    let (get, record) = refusals_for(&app, &tokens.access_token, "Hens B").await;
    assert!(get.contains("no flock named"), "{get}");
    assert!(record.contains("no flock named"), "{record}");
    let written = app
        .tool_ok(
            &tokens.access_token,
            "record_daily_entry",
            json!({"flock": "Hens A", "date": "2025-03-01", "eggs_collected": 1}),
        )
        .await;
    assert_eq!(written["change"], "created");
}

async fn an_ambiguous_flock_name_lists_the_candidates(engine: Engine) {
    let (app, manager) = TestApp::with_flocks(engine, "manager").await;
    let tokens = app.connect(&manager, "farm:read").await;
    let text = app
        .tool_refused(
            &tokens.access_token,
            "get_flock",
            json!({"flock": "Layers"}),
        )
        .await;
    assert!(
        text.contains("several flocks are named \"Layers\""),
        "{text}"
    );
    assert!(text.contains("North") && text.contains("South"), "{text}");
    let flock = app
        .tool_ok(
            &tokens.access_token,
            "get_flock",
            json!({"flock": "Layers", "house": "South"}),
        )
        .await;
    assert_eq!(flock["flock"]["house"], "South", "{flock}");
}

fn entry(eggs: i64) -> Value {
    json!({"flock": "Hens A", "date": "2025-03-01", "eggs_collected": eggs, "mortality": 2})
}

async fn a_replayed_write_changes_nothing_and_audits_once(engine: Engine) {
    let (app, worker) = TestApp::with_flocks(engine, "worker").await;
    let tokens = app.connect(&worker, BOTH_SCOPES).await;
    let first = app
        .tool_ok(&tokens.access_token, "record_daily_entry", entry(900))
        .await;
    assert_eq!(first["replayed"], false);
    assert_eq!(first["change"], "created");
    let again = app
        .tool_ok(&tokens.access_token, "record_daily_entry", entry(900))
        .await;
    assert_eq!(again["replayed"], true);
    assert_eq!(again["entry"]["version"], first["entry"]["version"]);
    assert_eq!(app.audit_count("tool_write").await, 1);
    assert_eq!(app.db_count("select count(*) from daily_entries").await, 1);
    // The audit row names the grant and the client.
    assert_eq!(
        app.db_count(&format!(
                "select count(*) from audit_log where kind = 'tool_write' and client_id = '{}' and grant_id is not null",
                tokens.client_id
            ))
        .await,
        1
    );
}

async fn a_stale_version_is_a_conflict_showing_the_current_entry(engine: Engine) {
    let (app, manager) = TestApp::with_flocks(engine, "manager").await;
    let tokens = app.connect(&manager, BOTH_SCOPES).await;
    let first = app
        .tool_ok(&tokens.access_token, "record_daily_entry", entry(900))
        .await;
    let version = first["entry"]["version"].as_i64().unwrap();
    let mut stale = entry(950);
    stale["expected_version"] = json!(version + 4);
    let text = app
        .tool_refused(&tokens.access_token, "record_daily_entry", stale)
        .await;
    assert!(text.contains("conflict"), "{text}");
    assert!(text.contains(&format!("is at version {version}")), "{text}");
    assert!(text.contains("900"), "the current entry is shown: {text}");
    let mut fresh = entry(950);
    fresh["expected_version"] = json!(version);
    let updated = app
        .tool_ok(&tokens.access_token, "record_daily_entry", fresh)
        .await;
    assert_eq!(updated["change"], "updated");
    assert_eq!(updated["entry"]["version"], version + 1);
    assert_eq!(app.audit_count("tool_write").await, 2);
}

async fn a_refused_write_can_be_retried_once_the_cause_is_fixed(engine: Engine) {
    let (app, owner) = TestApp::with_flocks(engine, "owner").await;
    let tokens = app.connect(&owner, BOTH_SCOPES).await;
    // Refused by the domain: more deaths than birds.
    let mut impossible = entry(900);
    impossible["mortality"] = json!(5000);
    let text = app
        .tool_refused(&tokens.access_token, "record_daily_entry", impossible)
        .await;
    assert!(text.contains("exceeds"), "{text}");
    // Refused by the transport: the farm's connected apps are off.
    app.admin(&["farm", "connected-apps", &owner.farm, "off"])
        .await;
    let (status, _) = app
        .call_tool(&tokens.access_token, "record_daily_entry", entry(900))
        .await;
    assert_eq!(status, 401);
    app.admin(&["farm", "connected-apps", &owner.farm, "on"])
        .await;
    // Neither refusal was remembered as done: the retry creates the entry.
    let done = app
        .tool_ok(&tokens.access_token, "record_daily_entry", entry(900))
        .await;
    assert_eq!(done["replayed"], false);
    assert_eq!(done["change"], "created");
    assert_eq!(app.audit_count("tool_write").await, 1);
}

/// Notes are shown as they are (pages, answers, terminals): a carriage
/// return, an escape or a bell could rewrite what a reader sees, so only a
/// line break and a tab may be in them.
async fn notes_with_control_characters_are_invalid_params(engine: Engine) {
    let (app, worker) = TestApp::with_flocks(engine, "worker").await;
    let tokens = app.connect(&worker, BOTH_SCOPES).await;
    for (notes, code) in [
        ("fan fixed\rall fine", "000D"),
        ("\u{1b}[2Jcleared", "001B"),
        ("bell\u{7}", "0007"),
        ("c1\u{9b}31m", "009B"),
    ] {
        let mut arguments = entry(900);
        arguments["notes"] = json!(notes);
        let (status, body) = app
            .call_tool(&tokens.access_token, "record_daily_entry", arguments)
            .await;
        assert_eq!(status, 200, "{notes:?}: {body}");
        assert_eq!(body["error"]["code"], -32602, "{notes:?}: {body}");
        assert_eq!(
            body["error"]["message"],
            format!(
                "notes must not hold control characters other than a line break or a tab \
                 (found U+{code})"
            ),
            "{notes:?}"
        );
    }
    assert_eq!(app.db_count("select count(*) from daily_entries").await, 0);
    assert_eq!(app.audit_count("tool_write").await, 0);
    let mut arguments = entry(900);
    arguments["notes"] = json!("fan fixed\n\tcheck at 6");
    let written = app
        .tool_ok(&tokens.access_token, "record_daily_entry", arguments)
        .await;
    assert_eq!(written["entry"]["notes"], "fan fixed\n\tcheck at 6");
}
