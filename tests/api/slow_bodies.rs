//! Nobody can stall the store (issue 31 item 1, threat 45). Any holder of
//! any token used to hold every database connection with a few dozen
//! `/mcp` calls whose bodies came slowly: the guard took a connection
//! before it read the body. The body now comes first
//! (`src/http/mcp/guard.rs`), every pool acquisition has a deadline ending
//! in 503 with `Retry-After` (`src/storage/engine/`), and `/readyz` asks
//! the database on a connection of its own.

use std::future::Future;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::mcp::{BOTH_SCOPES, Wire, call_body};
use crate::helpers::oauth::Tokens;
use crate::helpers::{Engine, TestApp, retry_after};
use crate::on_both_engines;

on_both_engines!(
    slow_bodies_hold_no_connection_while_another_member_is_served,
    every_connection_held_is_503_with_retry_after_and_readyz_stays_ready,
);

/// Four times either engine's pool.
const SLOW_CALLS: usize = 64;
/// Without the fix the answers below wait for the body timeout (20 s), or
/// the acquire deadline (5 s); served, they take milliseconds. A second
/// is the bound on an answer, not a measurement.
const IN_TIME: Duration = Duration::from_secs(1);
/// Longer than the acquire deadline, for answers that must wait for it.
const PATIENCE: Duration = Duration::from_secs(20);

/// `what`, or a panic naming it if it takes longer than `limit`.
async fn within<T>(limit: Duration, what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| panic!("{what} was not answered within {limit:?}"))
}

/// The owner's `tools/list`, a refresh of their token and `/readyz`, sent
/// at once: the first two answered within `limit`, `/readyz` within
/// [`IN_TIME`] whatever the pool is doing.
async fn list_refresh_and_readyz(
    app: &TestApp,
    owner: &Tokens,
    limit: Duration,
) -> (reqwest::Response, reqwest::Response, reqwest::Response) {
    tokio::join!(
        within(limit, "tools/list", app.list_with(&owner.access_token)),
        within(
            limit,
            "a refresh",
            app.refresh(&owner.client_id, &owner.refresh_token)
        ),
        within(IN_TIME, "/readyz", app.get("/readyz")),
    )
}

/// A `tools/call` whose head and first half of a body are sent; the rest
/// is held back by the caller.
struct SlowCall {
    stream: TcpStream,
    rest: &'static str,
}

const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_flocks","arguments":{}}}"#;

impl SlowCall {
    async fn start(app: &TestApp, token: &str) -> Self {
        let authority = app.address.strip_prefix("http://").unwrap();
        let (sent, rest) = CALL.split_at(CALL.len() / 2);
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n{sent}",
            CALL.len()
        );
        let mut stream = TcpStream::connect(authority).await.unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        Self { stream, rest }
    }

    /// Sends the rest of the body; the status line of the answer.
    async fn finish(mut self) -> String {
        self.stream.write_all(self.rest.as_bytes()).await.unwrap();
        let mut received = Vec::new();
        let mut buf = [0u8; 4096];
        while !received.windows(2).any(|w| w == b"\r\n") {
            let n = self.stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed before an answer");
            received.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&received);
        text.split("\r\n").next().unwrap().to_owned()
    }
}

/// 64 slow-bodied calls from a viewer in flight, and the owner's
/// `tools/list`, a refresh at `/token` and `/readyz` are answered as on a
/// quiet server; then each slow call, its body complete, is served too.
async fn slow_bodies_hold_no_connection_while_another_member_is_served(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = app.farm("Hillside Farm").await;
    app.add_flocks(&farm, &["Layers"]).await;
    let viewer = app
        .add_member(&farm.slug, "viewer@hillside.example", "viewer", None)
        .await;
    let slow = app.connect(&viewer, "farm:read").await;
    let owner = app.connect(&farm.owner, "farm:read").await;

    let mut calls = Vec::with_capacity(SLOW_CALLS);
    for _ in 0..SLOW_CALLS {
        calls.push(SlowCall::start(&app, &slow.access_token).await);
    }
    // Time for the server to take each head as far as it goes before the
    // body (with the old order: to take a connection for each).
    tokio::time::sleep(Duration::from_millis(500)).await;

    let (list, refresh, ready) = list_refresh_and_readyz(&app, &owner, IN_TIME).await;
    assert_eq!(list.status(), 200);
    let list: Value = list.json().await.unwrap();
    assert!(
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tool| tool["name"] == "list_flocks"),
        "{list}"
    );
    assert_eq!(refresh.status(), 200);
    let refreshed: Value = refresh.json().await.unwrap();
    assert!(refreshed["access_token"].is_string(), "{refreshed}");
    assert_eq!(ready.status(), 200);
    assert_eq!(ready.text().await.unwrap(), "ready");

    for call in calls {
        assert_eq!(call.finish().await, "HTTP/1.1 200 OK");
    }
}

/// Every connection of the request pool held (as requests would hold
/// them): a call (`tools/list`), a refresh and a signed-in page wait until
/// the acquire deadline and are answered 503 with `Retry-After`, as when
/// the database is out of reach, never 401 or `invalid_grant`; `/readyz`
/// still answers 200 at once, its probe queues behind none of them. Once
/// the connections are free, the same token and the same refresh token
/// work. On SQLite, the one writer held likewise: a write waits until the
/// deadline and is answered 503, and nothing is written.
async fn every_connection_held_is_503_with_retry_after_and_readyz_stays_ready(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = app.farm("Hillside Farm").await;
    app.add_flocks(&farm, &["Layers"]).await;
    let owner = app.connect(&farm.owner, BOTH_SCOPES).await;
    let signed_in = app.sign_in(&farm.owner.email, &farm.owner.password).await;
    assert_eq!(signed_in.status(), 303);

    let mut held = Vec::new();
    while let Ok(reader) = tokio::time::timeout(IN_TIME, app.store().read()).await {
        held.push(reader.unwrap());
    }
    assert!(held.len() > 1, "the pool gave {} connections", held.len());

    let ((call, refresh, ready), page) = tokio::join!(
        list_refresh_and_readyz(&app, &owner, PATIENCE),
        within(PATIENCE, "a page", app.get("/account/apps")),
    );
    assert_eq!(page.status(), 503);
    assert_eq!(retry_after(&page), 5);
    assert!(page.text().await.unwrap().contains("Try again shortly"));
    assert_eq!(call.status(), 503);
    assert_eq!(retry_after(&call), 5);
    assert!(call.headers().get("www-authenticate").is_none());
    let body: Value = call.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32001, "{body}");
    assert_eq!(body["error"]["data"]["retryAfterSeconds"], 5, "{body}");
    assert_eq!(body["id"], 1, "{body}");
    assert_eq!(refresh.status(), 503);
    assert_eq!(retry_after(&refresh), 5);
    let refused: Value = refresh.json().await.unwrap();
    assert_eq!(refused["error"], "temporarily_unavailable", "{refused}");
    assert_eq!(ready.status(), 200);

    drop(held);
    app.tool_ok(&owner.access_token, "list_flocks", json!({}))
        .await;
    let again = app.refresh(&owner.client_id, &owner.refresh_token).await;
    assert_eq!(again.status(), 200, "the refused refresh spent nothing");

    if engine == Engine::Sqlite {
        let writer = app.store().write().await.unwrap();
        let entry = json!({"flock": "Layers", "date": "2026-03-02", "eggs_collected": 900});
        let record = call_body(Wire::V2025_11_25, "record_daily_entry", entry);
        let write = within(
            PATIENCE,
            "a write",
            app.mcp_send(Some(&owner.access_token), Wire::V2025_11_25, &record),
        )
        .await;
        assert_eq!(write.status(), 503);
        assert_eq!(retry_after(&write), 5);
        drop(writer);
        app.assert_count("select count(*) from daily_entries", 0)
            .await;
    }
}
