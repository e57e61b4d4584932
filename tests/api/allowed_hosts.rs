//! Behind a proxy that rewrites `Host`: `--allowed-hosts` adds exact
//! `host[:port]` values to the `/mcp` Host allow-list (threat 17 keeps
//! every other Host out), a refused Host is named in the log, and a bad
//! value is a one-line refusal at start.

use serde_json::Value;

use crate::helpers::mcp::{Wire, request_body};
use crate::helpers::{Engine, TestApp, TestDatabase, run_cli};
use crate::on_both_engines;
use crate::serve::Server;

on_both_engines!(
    an_allowed_host_reaches_mcp_and_every_other_host_is_refused,
    without_the_setting_a_rewritten_host_is_refused,
);

/// `tools/list` with `token`, sent with `Host: host`; (status, body).
async fn list_as_host(app: &TestApp, token: &str, host: &str) -> (u16, Value) {
    let body = request_body(Wire::V2025_11_25, 1, "tools/list", Value::Null);
    let response = app
        .mcp_post(Some(token), Wire::V2025_11_25, &body)
        .header("host", host)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn assert_host_refused(status: u16, body: &Value, host: &str) {
    assert_eq!(status, 403, "{host}: {body}");
    assert_eq!(body["error"]["code"], -32600, "{host}: {body}");
    assert_eq!(
        body["error"]["message"], "Forbidden: Host header is not allowed",
        "{host}"
    );
}

async fn an_allowed_host_reaches_mcp_and_every_other_host_is_refused(engine: Engine) {
    let app = TestApp::spawn_with(engine, |config| {
        config.allowed_hosts = vec!["coop.internal:8080".into(), "coop".into()];
    })
    .await;
    let user = app.farm_with_member("viewer").await;
    let tokens = app.connect(&user, "farm:read").await;
    for host in ["coop.internal:8080", "COOP.Internal:8080", "coop"] {
        let (status, body) = list_as_host(&app, &tokens.access_token, host).await;
        assert_eq!(status, 200, "{host}: {body}");
        assert!(body["result"]["tools"].is_array(), "{host}: {body}");
    }
    // Exactly: another port, no port, a suffix, a subdomain.
    for host in [
        "coop.internal",
        "coop.internal:8081",
        "coop:8080",
        "coop.internal:8080.evil.example",
        "evil.coop.internal:8080",
        "evil.example",
    ] {
        let (status, body) = list_as_host(&app, &tokens.access_token, host).await;
        assert_host_refused(status, &body, host);
    }
    // The issuer's own authority still works.
    let issuer_authority = app.issuer.trim_start_matches("http://").to_owned();
    let (status, _) = list_as_host(&app, &tokens.access_token, &issuer_authority).await;
    assert_eq!(status, 200);
}

async fn without_the_setting_a_rewritten_host_is_refused(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    let tokens = app.connect(&user, "farm:read").await;
    let (status, body) = list_as_host(&app, &tokens.access_token, "coop.internal:8080").await;
    assert_host_refused(status, &body, "coop.internal:8080");
}

#[tokio::test]
async fn a_refused_host_is_named_in_the_log() {
    let db = TestDatabase::create(Engine::Sqlite).await;
    let server = Server::start(
        &db.url_string(),
        &["--allowed-hosts", "coop.internal:8080"],
        &[("RUST_LOG", "info")],
    )
    .await;
    let issuer = &server.issuer;

    let response = reqwest::Client::new()
        .post(format!("{issuer}/mcp"))
        .header("host", "proxy-rewrote.example:9000")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    server.wait_for_log(&["MCP request refused"]).await;
    let logs = server.logs();
    let line = logs
        .lines()
        .find(|l| l.contains("MCP request refused"))
        .unwrap();
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains("proxy-rewrote.example:9000"), "{line}");
    assert!(line.contains("--allowed-hosts"), "{line}");
    server.kill().await;
}

#[tokio::test]
async fn a_bad_allowed_host_is_a_one_line_refusal() {
    for bad in [
        "https://coop.example",
        "coop.example/mcp",
        "*.example",
        "coop.example:99999",
        "ok.example,user@coop.example",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("never.db");
        let url = format!("sqlite://{}", path.display());
        let (code, _out, err) = run_cli(&url, &["serve", "--allowed-hosts", bad], None).await;
        assert_eq!(code, 1, "{bad}: {err}");
        let line = err.trim();
        assert_eq!(line.lines().count(), 1, "one line: {line}");
        assert!(
            line.starts_with("error: --allowed-hosts / COOP_ALLOWED_HOSTS: "),
            "{line}"
        );
        assert!(
            !path.exists(),
            "a refused configuration created the database"
        );
    }
}
