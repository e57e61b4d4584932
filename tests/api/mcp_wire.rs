//! A probe of the HTTP behaviours of `/mcp` on the 2025 and 2026 wires:
//! status, JSON-RPC code and headers for each. Part of these answers come
//! from rmcp (pinned), part from Coop's middleware in front of it; an rmcp
//! upgrade that changes any of them turns this red.

use serde_json::{Value, json};

use crate::helpers::mcp::{Wire, modern_meta, request_body};
use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(
    an_unsupported_version_header_is_400_32022,
    a_missing_version_header_is_400_32020,
    a_batch_is_400_32600,
    malformed_json_is_400_32700,
    json_that_is_not_json_rpc_is_400_32600,
    get_and_delete_are_405,
    accept_and_content_type_are_checked,
    a_session_id_is_ignored_and_never_minted,
    the_legacy_wire,
    the_modern_wire,
);

/// One probe's answer.
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

async fn send(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Answer {
        status,
        headers,
        body,
    }
}

fn code(answer: &Answer) -> i64 {
    answer.body["error"]["code"].as_i64().unwrap_or_default()
}

/// A fresh app and a viewer's token for it, sending probes.
struct Probe {
    app: TestApp,
    token: String,
}

impl Probe {
    async fn viewer(engine: Engine) -> Self {
        let (app, viewer) = TestApp::with_member(engine, "viewer").await;
        let token = app.connect(&viewer, "farm:read").await.access_token;
        Self { app, token }
    }

    /// `body` as a well-behaved client on `wire` sends it.
    async fn post(&self, wire: Wire, body: &Value) -> Answer {
        send(self.app.mcp_post(Some(&self.token), wire, body)).await
    }

    /// `body` with the headers of `wire` changed by `overrides`.
    async fn post_with(
        &self,
        wire: Wire,
        body: &str,
        overrides: &[(&'static str, Option<&str>)],
    ) -> Answer {
        send(
            self.app
                .mcp_post_with(Some(&self.token), wire, body, overrides),
        )
        .await
    }

    /// A `tools/list` with id 5, the headers of `wire` changed by
    /// `overrides`.
    async fn list_with(&self, wire: Wire, overrides: &[(&'static str, Option<&str>)]) -> Answer {
        let list = request_body(wire, 5, "tools/list", Value::Null);
        self.post_with(wire, &list.to_string(), overrides).await
    }

    /// A request for `method` (no params) with `id`.
    async fn call(&self, wire: Wire, id: i64, method: &str) -> Answer {
        self.post(wire, &request_body(wire, id, method, Value::Null))
            .await
    }
}

async fn an_unsupported_version_header_is_400_32022(engine: Engine) {
    let probe = Probe::viewer(engine).await;
    for wire in [Wire::V2025_11_25, Wire::V2026_07_28] {
        // A version outside Coop's set (rmcp alone would serve 2025-03-26).
        for version in ["2025-03-26", "2024-11-05", "2099-01-01"] {
            let a = probe
                .list_with(wire, &[("mcp-protocol-version", Some(version))])
                .await;
            assert_eq!(a.status, 400, "{wire:?} {version}");
            assert_eq!(code(&a), -32022, "{wire:?} {version}");
            assert_eq!(a.body["id"], 5);
            assert_eq!(a.body["error"]["data"]["requested"], version);
            assert_eq!(
                a.body["error"]["data"]["supported"],
                json!(["2025-06-18", "2025-11-25", "2026-07-28"])
            );
        }
    }
}

async fn a_missing_version_header_is_400_32020(engine: Engine) {
    let probe = Probe::viewer(engine).await;
    for wire in [Wire::V2025_11_25, Wire::V2026_07_28] {
        // No version header at all.
        let a = probe
            .list_with(wire, &[("mcp-protocol-version", None)])
            .await;
        assert_eq!((a.status, code(&a)), (400, -32020), "{wire:?} no version");
        assert_eq!(a.body["id"], 5);
    }
}

async fn a_batch_is_400_32600(engine: Engine) {
    let probe = Probe::viewer(engine).await;
    for wire in [Wire::V2025_11_25, Wire::V2026_07_28] {
        let list = request_body(wire, 5, "tools/list", Value::Null);
        // A batch.
        let a = probe.post(wire, &json!([list.clone()])).await;
        assert_eq!((a.status, code(&a)), (400, -32600), "{wire:?} batch");
        assert_eq!(a.body["id"], Value::Null);
        assert!(
            a.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("batches"),
            "{}",
            a.body
        );
    }
}

async fn malformed_json_is_400_32700(engine: Engine) {
    let probe = Probe::viewer(engine).await;
    for wire in [Wire::V2025_11_25, Wire::V2026_07_28] {
        // Malformed JSON.
        let a = probe
            .post_with(
                wire,
                "{\"jsonrpc\": \"2.0\", \"id\": 1,",
                &[("mcp-method", Some("tools/list"))],
            )
            .await;
        assert_eq!((a.status, code(&a)), (400, -32700), "{wire:?} malformed");
        assert_eq!(
            a.headers["content-type"].to_str().unwrap(),
            "application/json"
        );
    }
}

async fn json_that_is_not_json_rpc_is_400_32600(engine: Engine) {
    let probe = Probe::viewer(engine).await;
    for wire in [Wire::V2025_11_25, Wire::V2026_07_28] {
        // JSON, but not a JSON-RPC message.
        let a = probe.post(wire, &json!({"id": 3, "hello": true})).await;
        assert_eq!((a.status, code(&a)), (400, -32600), "{wire:?} not JSON-RPC");
        // JSON-RPC 2.0 but no method: past Coop's envelope check, refused
        // by rmcp's reader (a 415 there), answered as the invalid request
        // it is, with its id.
        let a = probe
            .post(wire, &json!({"jsonrpc": "2.0", "id": 3, "hello": true}))
            .await;
        assert_eq!(
            (a.status, code(&a)),
            (400, -32600),
            "{wire:?} no method: {}",
            a.body
        );
        assert_eq!(a.body["id"], 3, "{wire:?} no method");
    }
}

async fn get_and_delete_are_405(engine: Engine) {
    let probe = Probe::viewer(engine).await;
    for wire in [Wire::V2025_11_25, Wire::V2026_07_28] {
        // GET and DELETE: no stream, no session to end.
        for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
            let a = send(
                reqwest::Client::new()
                    .request(method.clone(), probe.app.url("/mcp"))
                    .bearer_auth(&probe.token)
                    .header("accept", "text/event-stream")
                    .header("mcp-protocol-version", wire.version()),
            )
            .await;
            assert_eq!(a.status, 405, "{wire:?} {method}");
        }
    }
}

async fn accept_and_content_type_are_checked(engine: Engine) {
    let probe = Probe::viewer(engine).await;
    for wire in [Wire::V2025_11_25, Wire::V2026_07_28] {
        // An Accept without event streams, and a body that is not JSON.
        let a = probe
            .list_with(wire, &[("accept", Some("application/json"))])
            .await;
        assert_eq!(a.status, 406, "{wire:?} accept");
        let a = probe
            .list_with(wire, &[("content-type", Some("text/plain"))])
            .await;
        assert_eq!(a.status, 415, "{wire:?} content type");
    }
}

async fn a_session_id_is_ignored_and_never_minted(engine: Engine) {
    let probe = Probe::viewer(engine).await;
    for wire in [Wire::V2025_11_25, Wire::V2026_07_28] {
        // A session id is ignored, never minted.
        let a = probe
            .list_with(wire, &[("mcp-session-id", Some("abc"))])
            .await;
        assert_eq!(a.status, 200, "{wire:?} session id: {}", a.body);
        assert!(!a.headers.contains_key("mcp-session-id"));
        assert_eq!(
            a.headers["content-type"].to_str().unwrap(),
            "application/json"
        );
    }
}

async fn the_legacy_wire(engine: Engine) {
    let probe = Probe::viewer(engine).await;
    for wire in [Wire::V2025_06_18, Wire::V2025_11_25] {
        // initialize without a version header (the one request allowed to).
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": wire.version(), "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"}}});
        let a = probe.post(wire, &init).await;
        assert_eq!(a.status, 200, "{wire:?}: {}", a.body);
        assert_eq!(a.body["result"]["protocolVersion"], wire.version());
        assert_eq!(a.body["result"]["serverInfo"]["name"], "coop");
        assert!(!a.headers.contains_key("mcp-session-id"));
        let a = probe
            .post_with(wire, &init.to_string(), &[("mcp-protocol-version", None)])
            .await;
        assert_eq!(a.status, 200, "{wire:?} initialize without header");

        // An initialize naming a revision Coop does not serve is answered
        // with the newest legacy one.
        let mut old = init.clone();
        old["params"]["protocolVersion"] = json!("2024-11-05");
        let a = probe
            .post_with(wire, &old.to_string(), &[("mcp-protocol-version", None)])
            .await;
        assert_eq!(a.status, 200);
        assert_eq!(a.body["result"]["protocolVersion"], "2025-11-25");

        // notifications/initialized: 202, no body.
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let a = probe.post(wire, &note).await;
        assert_eq!(a.status, 202, "{wire:?}");

        // Unknown method: a JSON-RPC error in a 200.
        let a = probe.call(wire, 7, "foo/bar").await;
        assert_eq!((a.status, code(&a)), (200, -32601), "{wire:?}");

        // ping works; results carry no 2026 fields.
        let a = probe.call(wire, 8, "ping").await;
        assert_eq!(a.status, 200);
        assert_eq!(a.body["result"], json!({}));
        let a = probe.call(wire, 9, "tools/list").await;
        assert_eq!(a.status, 200);
        for field in ["resultType", "ttlMs", "cacheScope"] {
            assert!(a.body["result"].get(field).is_none(), "{wire:?} {field}");
        }
    }
}

async fn the_modern_wire(engine: Engine) {
    let probe = Probe::viewer(engine).await;
    let wire = Wire::V2026_07_28;

    // initialize does not exist here, with full params or without.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2026-07-28", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}, "_meta": modern_meta()}});
    let a = probe.post(wire, &init).await;
    assert_eq!(
        (a.status, code(&a)),
        (404, -32601),
        "initialize: {}",
        a.body
    );
    assert_eq!(a.body["id"], 1);

    // Unknown and removed methods: 404.
    for method in ["foo/bar", "ping", "logging/setLevel"] {
        let a = probe.call(wire, 2, method).await;
        assert_eq!((a.status, code(&a)), (404, -32601), "{method}");
    }

    // _meta missing: 400 -32602.
    let bare = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}});
    let a = probe.post(wire, &bare).await;
    assert_eq!((a.status, code(&a)), (400, -32602), "{}", a.body);

    // Mcp-Method disagreeing with the body, and missing: 400 -32020.
    let list = request_body(wire, 4, "tools/list", Value::Null);
    let list_text = list.to_string();
    let a = probe
        .post_with(wire, &list_text, &[("mcp-method", Some("tools/call"))])
        .await;
    assert_eq!((a.status, code(&a)), (400, -32020));
    let a = probe
        .post_with(wire, &list_text, &[("mcp-method", None)])
        .await;
    assert_eq!((a.status, code(&a)), (400, -32020), "missing Mcp-Method");

    // A _meta version other than the header's: 400 -32020.
    let mut mismatched = list.clone();
    mismatched["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    let a = probe.post(wire, &mismatched).await;
    assert_eq!(a.status, 400, "{}", a.body);

    // Mcp-Name disagreeing with the tool.
    let call = request_body(
        wire,
        5,
        "tools/call",
        json!({"name": "list_flocks", "arguments": {}}),
    );
    let a = probe
        .post_with(wire, &call.to_string(), &[("mcp-name", Some("get_flock"))])
        .await;
    assert_eq!((a.status, code(&a)), (400, -32020));

    // server/discover: Coop's versions, serverInfo, a complete result.
    let a = probe.call(wire, 6, "server/discover").await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        a.body["result"]["supportedVersions"],
        json!(["2025-06-18", "2025-11-25", "2026-07-28"])
    );
    assert_eq!(a.body["result"]["resultType"], "complete");
    // Automations: the client credentials extension is declared.
    assert_eq!(
        a.body["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/oauth-client-credentials"],
        json!({})
    );
    assert!(a.body["result"]["capabilities"]["tools"].is_object());

    // tools/list: complete, private, not cached.
    let a = probe.post(wire, &list).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body["result"]["resultType"], "complete");
    assert_eq!(a.body["result"]["cacheScope"], "private");
    assert_eq!(a.body["result"]["ttlMs"], 0);

    // tools/call: complete, with structured content.
    let a = probe.post(wire, &call).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["result"]["resultType"], "complete");
    assert!(a.body["result"]["structuredContent"]["flocks"].is_array());
}
