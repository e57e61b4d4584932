//! Shared pieces of the `/mcp` tests: raw JSON-RPC over HTTP on each wire,
//! farm fixtures through the CLI, and tokens forged with a key the test
//! holds (Coop's own key read out of the database, as a thief would, or a
//! key the test generates).
#![allow(dead_code)]

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestUser};
use crate::oauth_client::{self, Tokens};

pub const BOTH_SCOPES: &str = "farm:read daily-entries:write";

/// The protocol revisions Coop serves, as a client speaks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
}

impl Wire {
    pub const ALL: [Wire; 3] = [Wire::V2025_06_18, Wire::V2025_11_25, Wire::V2026_07_28];

    pub fn version(self) -> &'static str {
        match self {
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    pub fn modern(self) -> bool {
        self == Self::V2026_07_28
    }
}

/// The `_meta` every 2026-07-28 request carries.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "coop-tests", "version": "1"},
    })
}

/// A JSON-RPC request body for `method` on `wire` (with `_meta` on 2026).
pub fn request_body(wire: Wire, id: i64, method: &str, params: Value) -> Value {
    let mut params = if params.is_null() { json!({}) } else { params };
    if wire.modern() {
        params["_meta"] = modern_meta();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The headers a well-behaved client on `wire` sends with `body`.
pub fn wire_headers(wire: Wire, body: &Value) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("accept", "application/json, text/event-stream".to_owned()),
        ("content-type", "application/json".to_owned()),
        ("mcp-protocol-version", wire.version().to_owned()),
    ];
    if wire.modern() {
        if let Some(method) = body["method"].as_str() {
            headers.push(("mcp-method", method.to_owned()));
        }
        if body["method"] == "tools/call"
            && let Some(name) = body["params"]["name"].as_str()
        {
            headers.push(("mcp-name", name.to_owned()));
        }
    }
    headers
}

/// A POST to `/mcp` with `body`, the headers of `wire` changed by
/// `overrides` (a value of `None` removes the header), and `token` as the
/// bearer; not yet sent.
pub fn post_with(
    app: &TestApp,
    token: Option<&str>,
    wire: Wire,
    body: &str,
    overrides: &[(&'static str, Option<&str>)],
) -> reqwest::RequestBuilder {
    let parsed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let mut headers = wire_headers(wire, &parsed);
    for (name, value) in overrides {
        headers.retain(|(n, _)| n != name);
        if let Some(value) = value {
            headers.push((name, (*value).to_owned()));
        }
    }
    let mut request = reqwest::Client::new()
        .post(app.url("/mcp"))
        .body(body.to_owned());
    for (name, value) in headers {
        request = request.header(name, value);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request
}

/// A POST to `/mcp` as a well-behaved client on `wire` sends it.
pub fn post(
    app: &TestApp,
    token: Option<&str>,
    wire: Wire,
    body: &Value,
) -> reqwest::RequestBuilder {
    post_with(app, token, wire, &body.to_string(), &[])
}

/// Sends `method` on `wire` and returns (status, JSON body).
pub async fn rpc(
    app: &TestApp,
    token: &str,
    wire: Wire,
    method: &str,
    params: Value,
) -> (u16, Value) {
    let body = request_body(wire, 1, method, params);
    let response = post(app, Some(token), wire, &body).send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// `tools/call` on the 2025-11-25 wire; returns (status, body).
pub async fn call_tool(app: &TestApp, token: &str, tool: &str, arguments: Value) -> (u16, Value) {
    rpc(
        app,
        token,
        Wire::V2025_11_25,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
    .await
}

/// A successful tool call's structured content (asserting success).
pub async fn tool_ok(app: &TestApp, token: &str, tool: &str, arguments: Value) -> Value {
    let (status, body) = call_tool(app, token, tool, arguments).await;
    assert_eq!(status, 200, "{body}");
    assert_ne!(body["result"]["isError"], true, "{body}");
    body["result"]["structuredContent"].clone()
}

/// A tool result with `isError: true`; returns its text.
pub async fn tool_refused(app: &TestApp, token: &str, tool: &str, arguments: Value) -> String {
    let (status, body) = call_tool(app, token, tool, arguments).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["isError"], true, "{body}");
    body["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The names `tools/list` shows on `wire`.
pub async fn tool_names(app: &TestApp, token: &str, wire: Wire) -> Vec<String> {
    let (status, body) = rpc(app, token, wire, "tools/list", Value::Null).await;
    assert_eq!(status, 200, "{body}");
    body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Runs an admin command, asserting success.
pub async fn admin(app: &TestApp, args: &[&str]) {
    let mut full = vec!["admin"];
    full.extend_from_slice(args);
    let (code, _, err) = app.cli(&full).await;
    assert_eq!(code, 0, "{args:?}: {err}");
}

pub async fn add_flock(app: &TestApp, farm: &str, house: &str, name: &str) {
    admin(
        app,
        &[
            "flock",
            "add",
            "--farm",
            farm,
            "--house",
            house,
            "--name",
            name,
            "--breed",
            "ISA Brown",
            "--placed",
            "2025-01-06",
            "--head-count",
            "1000",
        ],
    )
    .await;
}

/// A farm with houses "North" and "South": flocks "Hens A" (North),
/// "Hens B" (South), and "Layers" in both houses; and a member of `role`.
pub async fn farm_with_flocks(app: &TestApp, role: &str) -> TestUser {
    let user = app.farm_with_member(role).await;
    for house in ["North", "South"] {
        admin(
            app,
            &["house", "add", "--farm", &user.farm, "--name", house],
        )
        .await;
        add_flock(app, &user.farm, house, "Layers").await;
    }
    add_flock(app, &user.farm, "North", "Hens A").await;
    add_flock(app, &user.farm, "South", "Hens B").await;
    user
}

/// Another member of `user`'s farm, with `role` (and `--flocks`).
pub async fn add_member(
    app: &TestApp,
    farm: &str,
    email: &str,
    role: &str,
    flocks: Option<&str>,
) -> TestUser {
    let password = "correct horse battery staple".to_owned();
    let mut args = vec![
        "admin",
        "user",
        "add",
        "--farm",
        farm,
        "--email",
        email,
        "--role",
        role,
        "--password-stdin",
    ];
    if let Some(flocks) = flocks {
        args.extend(["--flocks", flocks]);
    }
    let (code, _, err) = app.cli_with_stdin(&args, Some(&password)).await;
    assert_eq!(code, 0, "user add failed: {err}");
    TestUser {
        farm: farm.to_owned(),
        email: email.to_owned(),
        password,
    }
}

pub async fn connect(app: &TestApp, user: &TestUser, scopes: &str) -> Tokens {
    oauth_client::connect(app, user, scopes).await
}

/// Coop's active signing key, read out of the database: (kid, PKCS#8 DER).
pub async fn stolen_signing_key(app: &TestApp) -> (String, Vec<u8>) {
    use coop::config::DatabaseUrl;
    let sql = "select kid, private_pkcs8 from signing_keys where active";
    match &app.db.url {
        DatabaseUrl::Sqlite(url) => {
            let pool = sqlx::SqlitePool::connect(url).await.unwrap();
            let row: (String, Vec<u8>) = sqlx::query_as(sql).fetch_one(&pool).await.unwrap();
            pool.close().await;
            row
        }
        DatabaseUrl::Postgres(url) => {
            let pool = sqlx::PgPool::connect(url).await.unwrap();
            let row: (String, Vec<u8>) = sqlx::query_as(sql).fetch_one(&pool).await.unwrap();
            pool.close().await;
            row
        }
    }
}

/// A fresh P-256 key the test made (Coop never saw it), as PKCS#8 DER.
pub fn foreign_key() -> Vec<u8> {
    EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
        .unwrap()
        .as_ref()
        .to_vec()
}

/// Signs `claims` as an `at+jwt` with ES256, key id `kid`.
pub fn sign(claims: &Value, kid: &str, pkcs8: &[u8]) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("at+jwt".to_owned());
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(pkcs8)).unwrap()
}

/// The claims of a real token with `change` applied, signed with Coop's key.
pub async fn forge(app: &TestApp, real: &str, change: impl FnOnce(&mut Value)) -> String {
    let mut claims = oauth_client::claims(real);
    change(&mut claims);
    let (kid, key) = stolen_signing_key(app).await;
    sign(&claims, &kid, &key)
}

/// The `WWW-Authenticate` header of a response.
pub fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

pub fn metadata_url(app: &TestApp) -> String {
    format!("{}/.well-known/oauth-protected-resource/mcp", app.issuer)
}

/// The exact challenge of a 401 for a bad token.
pub fn invalid_token_challenge(app: &TestApp) -> String {
    format!(
        r#"Bearer resource_metadata="{}", error="invalid_token""#,
        metadata_url(app)
    )
}

/// Sends a `tools/list` with `token` on the 2025-11-25 wire.
pub async fn list_with(app: &TestApp, token: &str) -> reqwest::Response {
    let body = request_body(Wire::V2025_11_25, 1, "tools/list", Value::Null);
    post(app, Some(token), Wire::V2025_11_25, &body)
        .send()
        .await
        .unwrap()
}

/// Asserts a 401 `invalid_token` with the exact challenge.
pub async fn assert_invalid_token(app: &TestApp, token: &str, what: &str) {
    let response = list_with(app, token).await;
    assert_eq!(response.status(), 401, "{what}");
    assert_eq!(challenge(&response), invalid_token_challenge(app), "{what}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "invalid_token", "{what}: {body}");
}
