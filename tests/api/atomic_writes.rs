//! Every state change commits together with its audit row, or neither
//! does (issue 14). Each test makes the audit insert fail inside the
//! database (a trigger refuses it, as a full disk or a dropped connection
//! would fail it half-way), sends the action, and finds the state
//! unchanged; with the trigger gone, the same action then succeeds, so the
//! failure was the audit row's and nothing was half-done.

use serde_json::json;

use crate::apps_support::{self, assert_cut_off, assert_works, csrf, page, post};
use crate::helpers::{Engine, TestApp};
use crate::oauth_client::{
    self, Pkce, answer_consent, authorize_path, db_count, db_execute, open_consent, sign_in_browser,
};
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
            db_execute(
                app,
                "create trigger audit_refused before insert on audit_log
                 begin select raise(abort, 'audit refused by the test'); end",
            )
            .await;
        }
        coop::config::DatabaseUrl::Postgres(_) => {
            db_execute(
                app,
                "create function audit_refused() returns trigger language plpgsql as
                 $$ begin raise exception 'audit refused by the test'; end $$",
            )
            .await;
            db_execute(
                app,
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
    db_execute(app, sql).await;
}

async fn audit_rows(app: &TestApp) -> i64 {
    db_count(app, "select count(*) from audit_log").await
}

async fn a_tool_write_without_its_audit_row_writes_nothing(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = apps_support::farm(&app, "Hillside Farm").await;
    apps_support::add_flocks(&app, &farm, &["Layers"]).await;
    let tokens = oauth_client::connect(&app, &farm.owner, "farm:read daily-entries:write").await;
    let entry = json!({ "flock": "Layers", "date": "2026-11-30", "eggs_collected": 930 });

    refuse_audit_rows(&app).await;
    let (status, body) = crate::mcp_support::call_tool(
        &app,
        &tokens.access_token,
        "record_daily_entry",
        entry.clone(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["error"]["code"], -32603, "{body}");
    assert_eq!(
        db_count(&app, "select count(*) from daily_entries").await,
        0
    );

    allow_audit_rows(&app).await;
    let reply =
        crate::mcp_support::tool_ok(&app, &tokens.access_token, "record_daily_entry", entry).await;
    assert_eq!(
        reply["change"], "created",
        "not remembered as done: {reply}"
    );
    assert_eq!(
        db_count(&app, "select count(*) from daily_entries").await,
        1
    );
    assert_eq!(
        db_count(
            &app,
            "select count(*) from audit_log where kind = 'tool_write'"
        )
        .await,
        1
    );
}

async fn a_consent_without_its_audit_row_grants_nothing(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = apps_support::farm(&app, "Hillside Farm").await;
    let client_id = oauth_client::register_public_client(&app).await;
    let browser = sign_in_browser(&app, &farm.worker).await;
    let pkce = Pkce::new();
    let path = authorize_path(&app, &client_id, &pkce, "farm:read", &[]);
    let html = open_consent(&app, &browser, &path).await;

    refuse_audit_rows(&app).await;
    let response = answer_consent(&app, &browser, &html, "approve", &["farm:read"]).await;
    assert_eq!(response.status(), 500);
    assert_eq!(db_count(&app, "select count(*) from grants").await, 0);
    assert_eq!(
        db_count(&app, "select count(*) from authorization_codes").await,
        0
    );

    allow_audit_rows(&app).await;
    let html = open_consent(&app, &browser, &path).await;
    let response = answer_consent(&app, &browser, &html, "approve", &["farm:read"]).await;
    assert_eq!(response.status(), 303);
    assert_eq!(db_count(&app, "select count(*) from grants").await, 1);
}

async fn a_disconnect_without_its_audit_row_leaves_the_app_connected(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = apps_support::farm(&app, "Hillside Farm").await;
    let mut tokens = oauth_client::connect(&app, &farm.worker, "farm:read").await;
    let grant = apps_support::grant_of(&app, &farm.worker.email).await;
    let browser = sign_in_browser(&app, &farm.worker).await;
    let path = format!("/account/apps/{grant}/disconnect");
    let token = csrf(&browser, &app, &path).await;

    refuse_audit_rows(&app).await;
    let response = post(&browser, &app, &path, &[("csrf", &token)]).await;
    assert_eq!(response.status(), 500);
    assert_works(&app, &mut tokens).await;

    allow_audit_rows(&app).await;
    let response = post(&browser, &app, &path, &[("csrf", &token)]).await;
    assert_eq!(response.status(), 303);
    assert_cut_off(&app, &tokens).await;
}

async fn an_admin_switch_without_its_audit_row_changes_nothing(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = apps_support::farm(&app, "Hillside Farm").await;
    let mut tokens = oauth_client::connect(&app, &farm.worker, "farm:read").await;
    let owner = sign_in_browser(&app, &farm.owner).await;
    let token = csrf(&owner, &app, "/admin").await;
    let switch_off = [("csrf", token.as_str()), ("enabled", "off")];

    let before = audit_rows(&app).await;
    refuse_audit_rows(&app).await;
    let response = post(&owner, &app, "/admin/connected-apps", &switch_off).await;
    assert_eq!(response.status(), 500);
    assert_works(&app, &mut tokens).await;
    let (_, html) = page(&owner, &app, "/admin").await;
    assert!(!html.contains("Connected apps are off"), "{html}");

    allow_audit_rows(&app).await;
    let response = post(&owner, &app, "/admin/connected-apps", &switch_off).await;
    assert_eq!(response.status(), 303);
    assert_cut_off(&app, &tokens).await;
    assert_eq!(audit_rows(&app).await, before + 1);
}

async fn a_member_change_without_its_audit_row_changes_nothing(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = apps_support::farm(&app, "Hillside Farm").await;
    let mut tokens = oauth_client::connect(&app, &farm.worker, "farm:read").await;
    let owner = sign_in_browser(&app, &farm.owner).await;
    let worker_id: String = {
        let (_, html) = page(&owner, &app, "/admin/members").await;
        let heading = html.find(&format!(">{}", farm.worker.email)).unwrap();
        let marker = "action=\"/admin/members/";
        let start = html[heading..].find(marker).unwrap() + heading + marker.len();
        html[start..start + 36].to_owned()
    };
    let path = format!("/admin/members/{worker_id}");
    let token = csrf(&owner, &app, "/admin/members").await;
    let disable = [("csrf", token.as_str()), ("action", "disable")];

    refuse_audit_rows(&app).await;
    let response = post(&owner, &app, &path, &disable).await;
    assert_eq!(response.status(), 500);
    assert_eq!(
        db_count(&app, "select count(*) from users where disabled").await,
        0
    );
    assert_works(&app, &mut tokens).await;

    allow_audit_rows(&app).await;
    let response = post(&owner, &app, &path, &disable).await;
    assert_eq!(response.status(), 303);
    assert_cut_off(&app, &tokens).await;
}

async fn a_revocation_without_its_audit_row_revokes_nothing(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = apps_support::farm(&app, "Hillside Farm").await;
    let mut tokens = oauth_client::connect(&app, &farm.worker, "farm:read").await;

    refuse_audit_rows(&app).await;
    let response = oauth_client::revoke(&app, &tokens.client_id, &tokens.refresh_token).await;
    oauth_client::assert_oauth_error(response, 500, "server_error").await;
    assert_works(&app, &mut tokens).await;

    allow_audit_rows(&app).await;
    let response = oauth_client::revoke(&app, &tokens.client_id, &tokens.refresh_token).await;
    assert_eq!(response.status(), 200);
    assert_cut_off(&app, &tokens).await;
}

async fn a_key_rotation_without_its_audit_row_keeps_the_key(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let keys = || db_count(&app, "select count(*) from signing_keys");
    let active = "select kid from signing_keys where active";
    assert_eq!(keys().await, 1);
    let kid_before = oauth_client::db_text(&app, active).await;

    refuse_audit_rows(&app).await;
    let (code, _out, err) = app.cli(&["keys", "rotate"]).await;
    assert_ne!(code, 0, "{err}");
    assert_eq!(keys().await, 1);
    assert_eq!(oauth_client::db_text(&app, active).await, kid_before);

    allow_audit_rows(&app).await;
    let (code, _out, err) = app.cli(&["keys", "rotate"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(keys().await, 2);
    assert_ne!(oauth_client::db_text(&app, active).await, kid_before);
}
