//! Tenant isolation with a neighbour (issue 31 item 11): a farm whose
//! records look like another's ([`crate::helpers::next_door::NextDoor`]) shows in
//! none of that farm's tool answers or owner's pages, and is counted in
//! none of its totals. Each test also reads next door's own view, so the
//! markers it searches for are ones a leak would show.

use serde_json::{Value, json};

use crate::helpers::mcp::BOTH_SCOPES;
use crate::helpers::next_door::DEATHS;
use crate::helpers::{Engine, TestApp, TestUser};
use crate::on_both_engines;

on_both_engines!(
    next_door_is_in_no_tool_answer_nor_total,
    next_door_is_on_no_page_of_the_owner,
);

/// Every list and report tool over the default periods (which hold next
/// door's entries and lots): the whole farm, and one flock named like one
/// of next door's. `stock_levels` only for a role that has it.
fn every_read(with_stock: bool) -> Vec<(&'static str, Value)> {
    let mut reads = vec![
        ("list_flocks", json!({})),
        ("list_flocks", json!({"house": "North", "limit": 200})),
        ("get_flock", json!({"flock": "Hens A"})),
        ("list_daily_entries", json!({"flock": "Hens A"})),
        ("production_summary", json!({})),
        ("production_summary", json!({"flock": "Hens A"})),
        ("mortality_report", json!({})),
        ("mortality_report", json!({"flock": "Hens A"})),
        ("list_egg_lots", json!({})),
        ("list_egg_lots", json!({"flock": "Hens A"})),
    ];
    if with_stock {
        reads.push(("stock_levels", json!({})));
    }
    reads
}

/// A tool call that must succeed; its whole JSON-RPC answer as text.
async fn call(app: &TestApp, token: &str, tool: &str, arguments: &Value) -> String {
    let (status, body) = app.call_tool(token, tool, arguments.clone()).await;
    assert_eq!(status, 200, "{tool} {arguments}: {body}");
    assert!(body["error"].is_null(), "{tool} {arguments}: {body}");
    assert_ne!(
        body["result"]["isError"], true,
        "{tool} {arguments}: {body}"
    );
    body.to_string()
}

/// Days ago, as `record_daily_entry` wants the date.
fn days_ago(app: &TestApp, days: i64) -> String {
    (app.clock.now().date() - time::Duration::days(days)).to_string()
}

async fn next_door_is_in_no_tool_answer_nor_total(engine: Engine) {
    let (app, owner) = TestApp::with_flocks(engine, "owner").await;
    let next_door = app.next_door().await;
    let worker = app
        .add_member(&owner.farm, "w@hillside.example", "worker", Some("Hens A"))
        .await;
    let owner_token = app.connect(&owner, BOTH_SCOPES).await.access_token;
    let worker_token = app.connect(&worker, "farm:read").await.access_token;
    for (flock, days, eggs, deaths) in [("Hens A", 1, 900, 2), ("Hens B", 2, 800, 3)] {
        let entry = json!({"flock": flock, "date": days_ago(&app, days),
            "eggs_collected": eggs, "mortality": deaths});
        app.tool_ok(&owner_token, "record_daily_entry", entry).await;
    }

    for (who, token, with_stock) in [
        ("owner", &owner_token, true),
        ("worker", &worker_token, false),
    ] {
        for (tool, arguments) in every_read(with_stock) {
            let body = call(&app, token, tool, &arguments).await;
            next_door.assert_absent(&format!("{tool} {arguments} as the {who}"), &body);
        }
    }

    // Totals count this farm's entries and lots only, exactly.
    let report = app
        .tool_ok(&owner_token, "mortality_report", json!({}))
        .await;
    assert_eq!(report["total_deaths"], 5, "{report}");
    let scoped = app
        .tool_ok(&worker_token, "mortality_report", json!({}))
        .await;
    assert_eq!(scoped["total_deaths"], 2, "{scoped}");
    let summary = app
        .tool_ok(&owner_token, "production_summary", json!({}))
        .await;
    assert_eq!(
        (&summary["eggs_collected"], &summary["mortality"]),
        (&json!(1700), &json!(5)),
        "{summary}"
    );
    let lots = app.tool_ok(&owner_token, "list_egg_lots", json!({})).await;
    assert_eq!(lots["egg_lots"], json!([]), "{lots}");
    let stock = app.tool_ok(&owner_token, "stock_levels", json!({})).await;
    assert_eq!(stock["items"], json!([]), "{stock}");

    // Next door's owner sees next door's records through the same calls.
    let own = app
        .tool_ok(&next_door.token, "mortality_report", json!({}))
        .await;
    assert_eq!(own["total_deaths"], 4 * DEATHS, "{own}");
    let mut seen = String::new();
    for (tool, arguments) in every_read(true) {
        seen.push_str(&call(&app, &next_door.token, tool, &arguments).await);
    }
    assert!(next_door.markers_in(&seen) >= 6, "{seen}");
}

/// The labels of the audit page's "App" filter, in order.
fn app_filter(page: &str) -> Vec<String> {
    let document = scraper::Html::parse_document(page);
    let selector = scraper::Selector::parse("#f-client option").unwrap();
    document
        .select(&selector)
        .map(|option| {
            option
                .text()
                .collect::<String>()
                .trim_matches(['\u{2068}', '\u{2069}'])
                .to_owned()
        })
        .collect()
}

/// The owner's pages: `/admin` (connected apps), members, automations,
/// farm, audit.
const OWNER_PAGES: [&str; 5] = [
    "/admin",
    "/admin/members",
    "/admin/automations",
    "/admin/farm",
    "/admin/audit",
];

async fn pages_of(app: &TestApp, user: &TestUser) -> Vec<(&'static str, String)> {
    let browser = app.signed_in(user).await;
    let mut pages = Vec::new();
    for path in OWNER_PAGES {
        let (status, page) = browser.page(path).await;
        assert_eq!(status, 200, "{path}: {page}");
        pages.push((path, page));
    }
    pages
}

async fn next_door_is_on_no_page_of_the_owner(engine: Engine) {
    let (app, owner) = TestApp::with_flocks(engine, "owner").await;
    let next_door = app.next_door().await;
    // Hillside has what next door has: a restricted worker, an automation
    // limited to a flock (named as next door's is), a connected app that
    // wrote an entry.
    app.add_member(&owner.farm, "w@hillside.example", "worker", Some("Hens A"))
        .await;
    let (code, _, err) = app
        .cli(&[
            "admin",
            "automation",
            "add",
            "--farm",
            &owner.farm,
            "--name",
            "Barn scale",
            "--role",
            "worker",
            "--scope",
            "daily-entries:write",
            "--flocks",
            "Hens A",
            "--secret",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let token = app.connect(&owner, BOTH_SCOPES).await.access_token;
    let entry = json!({"flock": "Hens A", "date": days_ago(&app, 1), "eggs_collected": 900});
    app.tool_ok(&token, "record_daily_entry", entry).await;

    let pages = pages_of(&app, &owner).await;
    for (path, page) in &pages {
        next_door.assert_absent(path, page);
    }
    let page = |path: &str| &pages.iter().find(|(p, _)| *p == path).unwrap().1;
    // The farm page lists Hillside's flocks, and the members and
    // automations pages name the flock a worker and an automation have.
    let farm = page("/admin/farm");
    for flock in ["Hens A", "Hens B", "Layers"] {
        assert!(farm.contains(flock), "{flock} missing: {farm}");
    }
    assert!(page("/admin/members").contains("Hens A"));
    assert!(page("/admin/automations").contains("Hens A"));
    // The start page counts the owner's own app, not next door's owner's.
    let (status, home) = app.signed_in(&owner).await.page("/").await;
    assert_eq!(status, 200);
    assert!(home.contains("1 app connected"), "{home}");
    // The audit page's app filter is exactly Hillside's app and automation.
    assert_eq!(
        app_filter(page("/admin/audit")),
        ["Any app", "Test Assistant", "Barn scale (automation)"]
    );

    // Next door's owner sees next door on the same pages.
    let theirs = pages_of(&app, &next_door.owner).await;
    for (path, page) in &theirs {
        assert!(next_door.markers_in(page) > 0, "{path}: {page}");
    }
    let audit = &theirs.iter().find(|(p, _)| *p == "/admin/audit").unwrap().1;
    assert_eq!(
        app_filter(audit),
        ["Any app", "Quill Assistant", "Barn scale (automation)"]
    );
}
