//! Every state change commits together with its audit row, or neither
//! does (issue 14). Each test makes the audit insert fail inside the
//! database (a trigger refuses it, as a full disk or a dropped connection
//! would fail it half-way), sends the action, and finds the state
//! unchanged; with the trigger gone, the same action then succeeds, so the
//! failure was the audit row's and nothing was half-done.

use serde_json::json;

use crate::helpers::oauth::{self, Pkce};
use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(
    a_tool_write_without_its_audit_row_writes_nothing,
    a_consent_without_its_audit_row_grants_nothing,
    a_disconnect_without_its_audit_row_leaves_the_app_connected,
    an_admin_switch_without_its_audit_row_changes_nothing,
    a_member_change_without_its_audit_row_changes_nothing,
    a_revocation_without_its_audit_row_revokes_nothing,
    a_key_rotation_without_its_audit_row_keeps_the_key,
);

/// From now on every insert into the audit log fails.
async fn refuse_audit_rows(app: &TestApp) {
    match &app.db.url {
        coop::config::DatabaseUrl::Sqlite(_) => {
            app.db_execute(
                "create trigger audit_refused before insert on audit_log
                 begin select raise(abort, 'audit refused by the test'); end",
            )
            .await;
        }
        coop::config::DatabaseUrl::Postgres(_) => {
            app.db_execute(
                "create function audit_refused() returns trigger language plpgsql as
                 $$ begin raise exception 'audit refused by the test'; end $$",
            )
            .await;
            app.db_execute(
                "create trigger audit_refused before insert on audit_log
                 for each row execute function audit_refused()",
            )
            .await;
        }
    }
}

async fn allow_audit_rows(app: &TestApp) {
    let sql = match &app.db.url {
        coop::config::DatabaseUrl::Sqlite(_) => "drop trigger audit_refused",
        coop::config::DatabaseUrl::Postgres(_) => "drop trigger audit_refused on audit_log",
    };
    app.db_execute(sql).await;
}

async fn audit_rows(app: &TestApp) -> i64 {
    app.db_count("select count(*) from audit_log").await
}

async fn a_tool_write_without_its_audit_row_writes_nothing(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    app.add_flocks(&farm, &["Layers"]).await;
    let tokens = app
        .connect(&farm.owner, "farm:read daily-entries:write")
        .await;
    let entry = json!({ "flock": "Layers", "date": "2026-11-30", "eggs_collected": 930 });

    refuse_audit_rows(&app).await;
    let (status, body) = app
        .call_tool(&tokens.access_token, "record_daily_entry", entry.clone())
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["error"]["code"], -32603, "{body}");
    assert_eq!(app.db_count("select count(*) from daily_entries").await, 0);

    allow_audit_rows(&app).await;
    let reply = app
        .tool_ok(&tokens.access_token, "record_daily_entry", entry)
        .await;
    assert_eq!(
        reply["change"], "created",
        "not remembered as done: {reply}"
    );
    assert_eq!(app.db_count("select count(*) from daily_entries").await, 1);
    app.assert_count(
        "select count(*) from audit_log where kind = 'tool_write'",
        1,
    )
    .await;
}

async fn a_consent_without_its_audit_row_grants_nothing(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let client_id = app.register_public_client().await;
    let browser = app.signed_in(&farm.worker).await;
    let pkce = Pkce::new();
    let path = app.authorize_path(&client_id, &pkce, "farm:read", &[]);
    let html = browser.open_consent(&path).await;

    refuse_audit_rows(&app).await;
    let response = browser.accept(&html, &["farm:read"]).await;
    assert_eq!(response.status(), 500);
    assert_eq!(app.db_count("select count(*) from grants").await, 0);
    app.assert_count("select count(*) from authorization_codes", 0)
        .await;

    allow_audit_rows(&app).await;
    let html = browser.open_consent(&path).await;
    let response = browser.accept(&html, &["farm:read"]).await;
    assert_eq!(response.status(), 303);
    assert_eq!(app.db_count("select count(*) from grants").await, 1);
}

async fn a_disconnect_without_its_audit_row_leaves_the_app_connected(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let mut tokens = app.connect(&farm.worker, "farm:read").await;
    let grant = app.grant_of(&farm.worker.email).await;
    let browser = app.signed_in(&farm.worker).await;
    let path = format!("/account/apps/{grant}/disconnect");
    let token = browser.csrf(&path).await;

    refuse_audit_rows(&app).await;
    let response = browser.submit(&path, &[("csrf", &token)]).await;
    assert_eq!(response.status(), 500);
    app.assert_works(&mut tokens).await;

    allow_audit_rows(&app).await;
    let response = browser.submit(&path, &[("csrf", &token)]).await;
    assert_eq!(response.status(), 303);
    app.assert_cut_off(&tokens).await;
}

async fn an_admin_switch_without_its_audit_row_changes_nothing(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let mut tokens = app.connect(&farm.worker, "farm:read").await;
    let owner = app.signed_in(&farm.owner).await;
    let token = owner.csrf("/admin").await;
    let switch_off = [("csrf", token.as_str()), ("enabled", "off")];

    let before = audit_rows(&app).await;
    refuse_audit_rows(&app).await;
    let response = owner.submit("/admin/connected-apps", &switch_off).await;
    assert_eq!(response.status(), 500);
    app.assert_works(&mut tokens).await;
    let (_, html) = owner.page("/admin").await;
    assert!(!html.contains("Connected apps are off"), "{html}");

    allow_audit_rows(&app).await;
    let response = owner.submit("/admin/connected-apps", &switch_off).await;
    assert_eq!(response.status(), 303);
    app.assert_cut_off(&tokens).await;
    assert_eq!(audit_rows(&app).await, before + 1);
}

async fn a_member_change_without_its_audit_row_changes_nothing(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let mut tokens = app.connect(&farm.worker, "farm:read").await;
    let owner = app.signed_in(&farm.owner).await;
    let worker_id: String = {
        let (_, html) = owner.page("/admin/members").await;
        let heading = html.find(&format!(">{}", farm.worker.email)).unwrap();
        let marker = "action=\"/admin/members/";
        let start = html[heading..].find(marker).unwrap() + heading + marker.len();
        html[start..start + 36].to_owned()
    };
    let path = format!("/admin/members/{worker_id}");
    let token = owner.csrf("/admin/members").await;
    let disable = [("csrf", token.as_str()), ("action", "disable")];

    refuse_audit_rows(&app).await;
    let response = owner.submit(&path, &disable).await;
    assert_eq!(response.status(), 500);
    app.assert_count("select count(*) from users where disabled", 0)
        .await;
    app.assert_works(&mut tokens).await;

    allow_audit_rows(&app).await;
    let response = owner.submit(&path, &disable).await;
    assert_eq!(response.status(), 303);
    app.assert_cut_off(&tokens).await;
}

async fn a_revocation_without_its_audit_row_revokes_nothing(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let mut tokens = app.connect(&farm.worker, "farm:read").await;

    refuse_audit_rows(&app).await;
    let response = app.revoke(&tokens.client_id, &tokens.refresh_token).await;
    oauth::assert_oauth_error(response, 500, "server_error").await;
    app.assert_works(&mut tokens).await;

    allow_audit_rows(&app).await;
    let response = app.revoke(&tokens.client_id, &tokens.refresh_token).await;
    assert_eq!(response.status(), 200);
    app.assert_cut_off(&tokens).await;
}

async fn a_key_rotation_without_its_audit_row_keeps_the_key(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let keys = || app.db_count("select count(*) from signing_keys");
    let active = "select kid from signing_keys where active";
    assert_eq!(keys().await, 1);
    let kid_before = app.db_text(active).await;

    refuse_audit_rows(&app).await;
    let (code, _out, err) = app.cli(&["keys", "rotate"]).await;
    assert_ne!(code, 0, "{err}");
    assert_eq!(keys().await, 1);
    assert_eq!(app.db_text(active).await, kid_before);

    allow_audit_rows(&app).await;
    let (code, _out, err) = app.cli(&["keys", "rotate"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(keys().await, 2);
    assert_ne!(app.db_text(active).await, kid_before);
}
