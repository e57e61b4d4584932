//! Automations (issue 12): machine clients a farm owner controls, getting
//! tokens with the client credentials grant and calling `/mcp` with their
//! own role and flocks, checked against the store on every call.

use serde_json::{Value, json};

use crate::helpers::client_keys::key_set;
use crate::helpers::dpop::{ProofKey, nonce_asked_for, token_proof_with_nonce};
use crate::helpers::mcp::Wire;
use crate::helpers::oauth::{TokenRequest, assert_oauth_error, claims};
use crate::helpers::{Browser, ClientKey, Engine, Printed, TestApp, TestUser, assert_page};
use crate::on_both_engines;
use crate::private_key_jwt::{ASSERTION_TYPE, claims as assertion_claims};

on_both_engines!(
    an_automation_gets_a_short_token_and_acts_with_its_role_and_flocks,
    a_disabled_automation_is_refused_on_its_next_call,
    a_scope_outside_its_allowance_is_invalid_scope,
    what_an_mcp_client_asks_for_is_narrowed_to_its_allowance,
    a_wrong_or_empty_resource_is_invalid_target,
    a_wrong_or_missing_secret_is_invalid_client,
    an_automation_is_never_an_owner,
    a_suspended_farm_or_apps_off_stops_an_automation,
    the_owner_manages_automations_on_the_admin_pages,
    disable_enable_and_delete_on_the_page_take_effect,
    an_automation_with_a_key_set_authenticates_with_assertions_only,
    an_automation_sent_back_for_a_dpop_nonce_retries_with_the_same_assertion,
);

/// `coop admin automation add` of `name` on `farm` with `role` and
/// `scope`, authenticating with `credential` (`--secret`, or `--jwks-file
/// PATH`).
fn automation_add<'a>(
    farm: &'a str,
    name: &'a str,
    role: &'a str,
    scope: &'a str,
    credential: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "admin",
        "automation",
        "add",
        "--farm",
        farm,
        "--name",
        name,
        "--role",
        role,
        "--scope",
        scope,
    ];
    args.extend_from_slice(credential);
    args
}

/// A new automation made with the CLI; returns (client_id, secret).
pub async fn add_automation(
    app: &TestApp,
    farm: &str,
    name: &str,
    role: &str,
    scope: &str,
    flocks: Option<&str>,
) -> (String, String) {
    let mut args = automation_add(farm, name, role, scope, &["--secret"]);
    if let Some(flocks) = flocks {
        args.extend(["--flocks", flocks]);
    }
    let (code, out, err) = app.cli(&args).await;
    assert_eq!(code, 0, "automation add failed: {err}");
    let added = Printed { out, err };
    (added.field("client_id"), added.field("client_secret"))
}

/// A fresh app with a farm with flocks, its owner, and an automation
/// `name` of that farm (see [`add_automation`]): (app, owner, client_id,
/// secret).
async fn with_automation(
    engine: Engine,
    name: &str,
    role: &str,
    scope: &str,
) -> (TestApp, TestUser, String, String) {
    let (app, owner) = TestApp::with_flocks(engine, "owner").await;
    let (client_id, secret) = add_automation(&app, &owner.farm, name, role, scope, None).await;
    (app, owner, client_id, secret)
}

/// A client credentials request with the secret in the Basic header.
pub async fn request_token(
    app: &TestApp,
    client_id: &str,
    secret: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    let mut body = vec![("grant_type", "client_credentials")];
    body.extend_from_slice(form);
    app.token(&TokenRequest::fields(&body).basic(client_id, secret))
        .await
}

/// An access token for the automation (asserting success).
pub async fn automation_token(app: &TestApp, client_id: &str, secret: &str) -> String {
    let response = request_token(app, client_id, secret, &[]).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    body["access_token"].as_str().unwrap().to_owned()
}

fn entry(flock: &str) -> Value {
    json!({"flock": flock, "date": "2025-03-01", "eggs_collected": 900})
}

async fn an_automation_gets_a_short_token_and_acts_with_its_role_and_flocks(engine: Engine) {
    let (app, owner) = TestApp::with_flocks(engine, "owner").await;
    let (client_id, secret) = add_automation(
        &app,
        &owner.farm,
        "Barn scale",
        "worker",
        "farm:read,daily-entries:write",
        Some("Hens A"),
    )
    .await;
    assert!(client_id.starts_with("automation-"), "{client_id}");

    let response = request_token(
        &app,
        &client_id,
        &secret,
        &[("scope", "farm:read daily-entries:write")],
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 300);
    assert_eq!(body["scope"], "farm:read daily-entries:write");
    assert!(body.get("refresh_token").is_none(), "{body}");
    let token = body["access_token"].as_str().unwrap();
    let c = claims(token);
    // The subject is the automation, never a person; no grant.
    assert_eq!(c["sub"], client_id.as_str());
    assert_eq!(c["client_id"], client_id.as_str());
    assert_eq!(c["aud"], format!("{}/mcp", app.issuer));
    assert!(c.get("grant_id").is_none(), "{c}");

    // A worker's tools, on every wire; its flocks only.
    for wire in Wire::ALL {
        let names = app.tool_names(token, wire).await;
        assert!(
            names.contains(&"record_daily_entry".to_owned()),
            "{names:?}"
        );
        assert!(!names.contains(&"stock_levels".to_owned()), "{names:?}");
    }
    assert_eq!(app.flock_names(token).await, ["Hens A"]);
    let written = app
        .tool_ok(token, "record_daily_entry", entry("Hens A"))
        .await;
    assert_eq!(written["entry"]["recorded_by"], "Barn scale");
    let text = app
        .tool_refused(token, "record_daily_entry", entry("Hens B"))
        .await;
    assert!(text.contains("no flock named"), "{text}");
    // A manager's tool is hidden from a worker: unknown.
    let (status, body) = app.call_tool(token, "stock_levels", json!({})).await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (200, Some(-32602)),
        "{body}"
    );

    // The write is audited naming the automation, not a person.
    let id = client_id.trim_start_matches("automation-");
    let audited = app
        .db_count(&format!(
            "select count(*) from audit_log where kind = 'tool_write' and user_id is null
               and grant_id is null and client_id = '{client_id}'
               and detail like '%\"automation\":\"Barn scale\"%'"
        ))
        .await;
    assert_eq!(audited, 1);
    assert!(!id.is_empty());
    // Its last use is recorded.
    let used = app
        .db_count("select count(*) from automations where last_used_at is not null")
        .await;
    assert_eq!(used, 1);
}

async fn a_disabled_automation_is_refused_on_its_next_call(engine: Engine) {
    let (app, _, client_id, secret) =
        with_automation(engine, "Feed system", "manager", "farm:read").await;
    let token = automation_token(&app, &client_id, &secret).await;
    app.tool_ok(&token, "stock_levels", json!({})).await;

    app.admin(&["automation", "disable", &client_id]).await;
    app.assert_invalid_token(&token, "disabled automation")
        .await;
    let response = request_token(&app, &client_id, &secret, &[]).await;
    assert_oauth_error(response, 401, "invalid_client").await;

    // Enabled again, the old token stays dead; a new one works.
    app.admin(&["automation", "enable", &client_id]).await;
    app.assert_invalid_token(&token, "token from before the disable")
        .await;
    let fresh = automation_token(&app, &client_id, &secret).await;
    app.tool_ok(&fresh, "stock_levels", json!({})).await;

    // Deleted: refused at once.
    app.admin(&["automation", "delete", &client_id]).await;
    app.assert_invalid_token(&fresh, "deleted automation").await;
    let response = request_token(&app, &client_id, &secret, &[]).await;
    assert_oauth_error(response, 401, "invalid_client").await;
}

async fn a_scope_outside_its_allowance_is_invalid_scope(engine: Engine) {
    let (app, _, client_id, secret) =
        with_automation(engine, "Reader", "viewer", "farm:read").await;
    // Nothing it may hold, or a scope Coop does not know (even beside one
    // it may hold). Asking for more than it may hold is narrowed instead:
    // `what_an_mcp_client_asks_for_is_narrowed_to_its_allowance`.
    for scope in [
        "daily-entries:write",
        "daily-entries:write offline_access",
        "admin",
        "farm:read admin",
    ] {
        let response = request_token(&app, &client_id, &secret, &[("scope", scope)]).await;
        assert_oauth_error(response, 400, "invalid_scope").await;
    }
    // Without a scope: everything it may hold, and nothing more.
    let response = request_token(&app, &client_id, &secret, &[]).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["scope"], "farm:read");
    // A viewer with only farm:read sees no write tool.
    let names = app
        .tool_names(body["access_token"].as_str().unwrap(), Wire::V2026_07_28)
        .await;
    assert!(
        !names.contains(&"record_daily_entry".to_owned()),
        "{names:?}"
    );
}

/// The official MCP SDKs' client-credentials providers ask for the scopes
/// of the resource's challenge (both, to a caller not yet known), whatever
/// the automation may hold, and have no way to ask for less (the Python
/// SDK 2.3.0 and the TypeScript SDK 2.4.0, `tests/api/real_clients.rs`):
/// the token carries what it may hold (RFC 6749 §3.3), and `scope` says so.
async fn what_an_mcp_client_asks_for_is_narrowed_to_its_allowance(engine: Engine) {
    use coop::domain::{Role, ScopeSet};
    use coop::mcp::catalog;
    let (app, owner) = TestApp::with_flocks(engine, "owner").await;
    let anonymous = reqwest::Client::new()
        .post(app.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let challenge = anonymous.headers()["www-authenticate"].to_str().unwrap();
    let asked = challenge
        .split("scope=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    assert_eq!(asked, "farm:read daily-entries:write");

    for (role, allowed) in [
        (Role::Viewer, "farm:read"),
        (Role::Worker, "daily-entries:write"),
    ] {
        let (client_id, secret) = add_automation(
            &app,
            &owner.farm,
            &format!("{} scale", role.as_str()),
            role.as_str(),
            allowed,
            None,
        )
        .await;
        let response = request_token(&app, &client_id, &secret, &[("scope", &asked)]).await;
        assert_eq!(response.status(), 200, "{allowed}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["scope"], allowed);
        assert!(body.get("refresh_token").is_none(), "{body}");
        let token = body["access_token"].as_str().unwrap();
        assert_eq!(claims(token)["scope"], allowed);
        let mut names = app.tool_names(token, Wire::V2026_07_28).await;
        names.sort();
        let mut expected: Vec<String> = catalog::visible(role, &ScopeSet::from_stored(allowed))
            .map(|t| t.name.to_owned())
            .collect();
        expected.sort();
        assert_eq!(names, expected, "{allowed}");
    }
}

async fn a_wrong_or_empty_resource_is_invalid_target(engine: Engine) {
    let (app, _, client_id, secret) =
        with_automation(engine, "Scale", "worker", "daily-entries:write").await;
    let mcp = format!("{}/mcp", app.issuer);
    for resource in [
        vec!["https://other.example/mcp"],
        vec![""],
        vec![&format!("{}/other", app.issuer)],
        vec![mcp.as_str(), mcp.as_str()],
    ] {
        let form: Vec<(&str, &str)> = resource.iter().map(|r| ("resource", *r)).collect();
        let response = request_token(&app, &client_id, &secret, &form).await;
        assert_oauth_error(response, 400, "invalid_target").await;
    }
    let response = request_token(&app, &client_id, &secret, &[("resource", &mcp)]).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(claims(body["access_token"].as_str().unwrap())["aud"], mcp);
}

async fn a_wrong_or_missing_secret_is_invalid_client(engine: Engine) {
    let (app, _, client_id, secret) =
        with_automation(engine, "Scale", "worker", "daily-entries:write").await;
    let response = request_token(&app, &client_id, "wrong", &[]).await;
    assert_eq!(
        response.headers()["www-authenticate"],
        "Basic realm=\"coop\""
    );
    assert_oauth_error(response, 401, "invalid_client").await;
    // The secret in the body, or none at all: refused too.
    for form in [
        vec![
            ("grant_type", "client_credentials"),
            ("client_id", client_id.as_str()),
            ("client_secret", secret.as_str()),
        ],
        vec![
            ("grant_type", "client_credentials"),
            ("client_id", client_id.as_str()),
        ],
    ] {
        let response = app.token_request(&form).await;
        assert_oauth_error(response, 401, "invalid_client").await;
    }
    // An automation that does not exist.
    let unknown = format!("automation-{}", uuid::Uuid::now_v7());
    let response = request_token(&app, &unknown, &secret, &[]).await;
    assert_oauth_error(response, 401, "invalid_client").await;
    // An automation has no other grant.
    let refresh = TokenRequest::fields(&[("grant_type", "refresh_token"), ("refresh_token", "x")]);
    let response = app.token(&refresh.basic(&client_id, &secret)).await;
    assert_oauth_error(response, 400, "unauthorized_client").await;
    // And an OAuth client has no client credentials grant.
    let public = app.register_public_client().await;
    let response = app
        .token_request(&[("grant_type", "client_credentials"), ("client_id", &public)])
        .await;
    assert_oauth_error(response, 400, "unauthorized_client").await;
    // The right secret still works: nothing was spent.
    automation_token(&app, &client_id, &secret).await;
}

async fn an_automation_is_never_an_owner(engine: Engine) {
    let (app, owner) = TestApp::with_flocks(engine, "owner").await;
    let (code, _, err) = app
        .cli(&automation_add(
            &owner.farm,
            "Boss",
            "owner",
            "farm:read",
            &["--secret"],
        ))
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("cannot be an owner"), "{err}");
    // Through the owner's page: the same refusal.
    let browser = app.signed_in(&owner).await;
    let response = post_add(&browser, "Boss", "owner", &["farm:read"]).await;
    assert_page(response, 400, "cannot be an owner").await;
    // Nor a name that reorders or hides text.
    let reordering = automation_add(
        &owner.farm,
        "Scale\u{202E}",
        "worker",
        "farm:read",
        &["--secret"],
    );
    let (code, _, err) = app.cli(&reordering).await;
    assert_eq!(code, 1);
    assert!(err.contains("reordering"), "{err}");
    assert_eq!(app.db_count("select count(*) from automations").await, 0);
}

async fn a_suspended_farm_or_apps_off_stops_an_automation(engine: Engine) {
    let (app, owner, client_id, secret) =
        with_automation(engine, "Scale", "manager", "farm:read").await;
    for (stop, start) in [
        (
            vec!["farm", "suspend", owner.farm.as_str()],
            vec!["farm", "resume", owner.farm.as_str()],
        ),
        (
            vec!["farm", "connected-apps", owner.farm.as_str(), "off"],
            vec!["farm", "connected-apps", owner.farm.as_str(), "on"],
        ),
    ] {
        let token = automation_token(&app, &client_id, &secret).await;
        app.admin(&stop).await;
        app.assert_invalid_token(&token, &format!("{stop:?}")).await;
        let response = request_token(&app, &client_id, &secret, &[]).await;
        assert_oauth_error(response, 400, "unauthorized_client").await;
        app.admin(&start).await;
        app.tool_ok(&token, "list_flocks", json!({})).await;
    }
}

/// Posts the add form of `/admin/automations` (and the page's CSRF
/// token): an automation `name` with `role`, all flocks, `scopes` ticked
/// and a secret.
async fn post_add(browser: &Browser, name: &str, role: &str, scopes: &[&str]) -> reqwest::Response {
    let mut fields = vec![("name", name), ("role", role), ("flocks", "all")];
    fields.extend(scopes.iter().map(|scope| ("scope", *scope)));
    fields.push(("credential", "secret"));
    let page = browser.text("/admin/automations").await;
    post_with_csrf(browser, &page, "/admin/automations", &fields).await
}

/// POSTs `fields` to `path` with the CSRF token of `page`, from a plain
/// client (no `Origin`).
async fn post_with_csrf(
    browser: &Browser,
    page: &str,
    path: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let csrf = crate::helpers::form_value(page, "csrf").unwrap();
    let mut form = vec![("csrf", csrf.as_str())];
    form.extend_from_slice(fields);
    browser
        .post(browser.url(path))
        .form(&form)
        .send()
        .await
        .unwrap()
}

async fn the_owner_manages_automations_on_the_admin_pages(engine: Engine) {
    let (app, owner) = TestApp::with_flocks(engine, "owner").await;
    let browser = app.signed_in(&owner).await;
    let scopes = ["daily-entries:write", "farm:read"];
    let response = post_add(&browser, "Barn scale", "worker", &scopes).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let page = response.text().await.unwrap();
    let document = scraper::Html::parse_document(&page);
    let text = |id: &str| {
        let selector = scraper::Selector::parse(&format!("#{id}")).unwrap();
        document
            .select(&selector)
            .next()
            .unwrap()
            .text()
            .collect::<String>()
    };
    let client_id = text("created-client-id");
    let secret = text("created-secret");
    assert!(client_id.starts_with("automation-"));
    // The secret is on that page only.
    let again = browser.text("/admin/automations").await;
    assert!(again.contains("Barn scale") && again.contains(&client_id));
    assert!(!again.contains(&secret));
    // A manager cannot see the tab.
    let manager = app
        .add_member(&owner.farm, "m@hillside.example", "manager", None)
        .await;
    let manager_browser = app.signed_in(&manager).await;
    let response = manager_browser.open("/admin/automations").await;
    assert_eq!(response.status(), 403);

    let token = automation_token(&app, &client_id, &secret).await;
    app.tool_ok(&token, "record_daily_entry", entry("Hens A"))
        .await;

    // The connected-apps page shows it as an automation, used; the members
    // page and the audit log name it.
    let apps = browser.text("/admin").await;
    assert!(
        apps.contains("Barn scale") && apps.contains(">automation<"),
        "{apps}"
    );
    assert!(!apps.contains("Not used yet"), "last use shown");
    let members = browser.text("/admin/members").await;
    assert!(members.contains("Barn scale"), "{members}");
    let audit = browser.text("/admin/audit").await;
    assert!(audit.contains("Barn scale (automation)"), "{audit}");

    // Disconnect on the connected-apps page disables it at once.
    let id = client_id.trim_start_matches("automation-").to_owned();
    let path = format!("/admin/automations/{id}");
    let fields = [("action", "disconnect"), ("back", "apps")];
    let response = post_with_csrf(&browser, &apps, &path, &fields).await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        crate::helpers::location(&response),
        "/admin?done=disconnected"
    );
    app.assert_invalid_token(&token, "disconnected automation")
        .await;
    let state = app
        .db_text("select case when disabled then 'off' else 'on' end from automations")
        .await;
    assert_eq!(state, "off");
    // Another farm's owner cannot touch it.
    let other_farm = app.add_farm("Other Farm").await;
    let other = app
        .add_member(&other_farm, "o@other.example", "owner", None)
        .await;
    let other_browser = app.signed_in(&other).await;
    let page = other_browser.text("/admin/automations").await;
    assert!(
        !page.contains(&client_id),
        "another farm sees the automation"
    );
    let response = post_with_csrf(&other_browser, &page, &path, &[("action", "enable")]).await;
    assert_eq!(response.status(), 404);
}

/// The page's disable, enable and delete, judged by what they do: the
/// automation's tokens stop working, a new one works again, and after
/// the delete it cannot get one and is gone from the page and the store.
async fn disable_enable_and_delete_on_the_page_take_effect(engine: Engine) {
    let (app, owner, client_id, secret) =
        with_automation(engine, "Feed system", "manager", "farm:read").await;
    let browser = app.signed_in(&owner).await;
    let path = format!(
        "/admin/automations/{}",
        client_id.trim_start_matches("automation-")
    );
    let act = async |action: &str, done: &str| {
        let page = browser.text("/admin/automations").await;
        let response = post_with_csrf(&browser, &page, &path, &[("action", action)]).await;
        assert_eq!(response.status(), 303, "{action}");
        assert_eq!(
            crate::helpers::location(&response),
            format!("/admin/automations?done={done}")
        );
    };
    let token = automation_token(&app, &client_id, &secret).await;
    app.tool_ok(&token, "stock_levels", json!({})).await;

    act("disable", "disabled").await;
    app.assert_invalid_token(&token, "disabled on the page")
        .await;
    let response = request_token(&app, &client_id, &secret, &[]).await;
    assert_oauth_error(response, 401, "invalid_client").await;

    act("enable", "enabled").await;
    let fresh = automation_token(&app, &client_id, &secret).await;
    app.tool_ok(&fresh, "stock_levels", json!({})).await;

    act("delete", "deleted").await;
    app.assert_invalid_token(&fresh, "deleted on the page")
        .await;
    let response = request_token(&app, &client_id, &secret, &[]).await;
    assert_oauth_error(response, 401, "invalid_client").await;
    let page = browser.text("/admin/automations").await;
    assert!(!page.contains(&client_id), "{page}");
    assert!(!page.contains("Feed system"), "{page}");
    app.assert_count("select count(*) from automations", 0)
        .await;
}

/// Adds a worker automation "Barn scale" (`daily-entries:write`) to
/// `owner`'s farm whose key set is `key`'s; returns its `client_id`.
async fn add_signed_automation(app: &TestApp, owner: &TestUser, key: &ClientKey) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jwks.json");
    std::fs::write(&file, key_set(&[key]).to_string()).unwrap();
    let path = file.display().to_string();
    let credential = ["--jwks-file", path.as_str()];
    let args = automation_add(
        &owner.farm,
        "Barn scale",
        "worker",
        "daily-entries:write",
        &credential,
    );
    let (code, out, err) = app.cli(&args).await;
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("client_secret"), "{out}");
    crate::helpers::app::printed(&out, "client_id").unwrap()
}

async fn an_automation_with_a_key_set_authenticates_with_assertions_only(engine: Engine) {
    let (app, owner) = TestApp::with_flocks(engine, "owner").await;
    let key = ClientKey::es256("scale-1");
    let client_id = add_signed_automation(&app, &owner, &key).await;
    let with_assertion = |assertion: String| {
        let app = &app;
        async move {
            app.token_request(&[
                ("grant_type", "client_credentials"),
                ("client_assertion_type", ASSERTION_TYPE),
                ("client_assertion", &assertion),
            ])
            .await
        }
    };

    // A fresh assertion (no client_id: its sub names the automation).
    let assertion = key.sign(&assertion_claims(&app, &client_id));
    let response = with_assertion(assertion.clone()).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let token = body["access_token"].as_str().unwrap();
    assert_eq!(claims(token)["sub"], client_id.as_str());
    app.tool_ok(token, "record_daily_entry", entry("Hens A"))
        .await;

    // The same assertion again: a replay.
    let response = with_assertion(assertion).await;
    assert!(response.headers().get("www-authenticate").is_none());
    assert_oauth_error(response, 401, "invalid_client").await;
    // Signed by a key it never published; for another audience; naming
    // another automation.
    let stranger = ClientKey::es256("scale-1");
    let response = with_assertion(stranger.sign(&assertion_claims(&app, &client_id))).await;
    assert_oauth_error(response, 401, "invalid_client").await;
    let mut elsewhere = assertion_claims(&app, &client_id);
    elsewhere["aud"] = json!("https://other.example/token");
    let response = with_assertion(key.sign(&elsewhere)).await;
    assert_oauth_error(response, 401, "invalid_client").await;
    // A secret is not its method.
    let response = request_token(&app, &client_id, "anything", &[]).await;
    assert_oauth_error(response, 401, "invalid_client").await;
    // And a secret automation cannot use an assertion.
    let (secret_id, _) =
        add_automation(&app, &owner.farm, "Feed", "worker", "farm:read", None).await;
    let response = with_assertion(key.sign(&assertion_claims(&app, &secret_id))).await;
    assert_oauth_error(response, 401, "invalid_client").await;
    // Disabled: a fresh, valid assertion is refused too.
    app.admin(&["automation", "disable", &client_id]).await;
    let response = with_assertion(key.sign(&assertion_claims(&app, &client_id))).await;
    assert_oauth_error(response, 401, "invalid_client").await;
}

async fn an_automation_sent_back_for_a_dpop_nonce_retries_with_the_same_assertion(engine: Engine) {
    let app = TestApp::spawn_with(engine, |c| c.dpop_require_nonce = true).await;
    let owner = app.farm_with_flocks("owner").await;
    let key = ClientKey::es256("scale-1");
    let client_id = add_signed_automation(&app, &owner, &key).await;
    let assertion = key.sign(&assertion_claims(&app, &client_id));
    let request = TokenRequest::fields(&[
        ("grant_type", "client_credentials"),
        ("client_assertion_type", ASSERTION_TYPE),
        ("client_assertion", &assertion),
    ]);
    let proof_key = ProofKey::es256();
    let nonce = nonce_asked_for(&app, &request, &proof_key).await;
    // The same assertion, a proof with the nonce: a bound token.
    let proof = token_proof_with_nonce(&app, &proof_key, &nonce);
    let response = request.dpop(&proof).send(&app).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_type"], "DPoP");
}
