//! `/mcp` as a client speaks it: raw JSON-RPC over HTTP on each protocol
//! revision ([`Wire`]), one [`TestApp`] method per call (`tools/list`,
//! `tools/call`, any method), the exact `401` challenge, whether a grant
//! still works or is cut off, and tokens forged with a key the test holds
//! (Coop's own key read out of the database, as a thief would, or a key
//! the test generates).

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use super::app::TestApp;
use super::oauth::{self, Tokens, assert_oauth_error};

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

/// The `tools/call` body for `tool` with `arguments` on `wire`.
pub fn call_body(wire: Wire, tool: &str, arguments: Value) -> Value {
    request_body(
        wire,
        1,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
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

/// The `WWW-Authenticate` header of a response ("" when there is none).
pub fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

impl TestApp {
    /// A POST to `/mcp` with `body`, the headers of `wire` changed by
    /// `overrides` (a value of `None` removes the header), and `token` as
    /// the bearer; not yet sent.
    pub fn mcp_post_with(
        &self,
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
            .post(self.url("/mcp"))
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
    pub fn mcp_post(
        &self,
        token: Option<&str>,
        wire: Wire,
        body: &Value,
    ) -> reqwest::RequestBuilder {
        self.mcp_post_with(token, wire, &body.to_string(), &[])
    }

    /// Sends [`Self::mcp_post`] and returns the answer.
    pub async fn mcp_send(
        &self,
        token: Option<&str>,
        wire: Wire,
        body: &Value,
    ) -> reqwest::Response {
        self.mcp_post(token, wire, body).send().await.unwrap()
    }

    /// Sends `method` on `wire` and returns (status, JSON body).
    pub async fn rpc(&self, token: &str, wire: Wire, method: &str, params: Value) -> (u16, Value) {
        let body = request_body(wire, 1, method, params);
        let response = self.mcp_send(Some(token), wire, &body).await;
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// `tools/call` on the 2025-11-25 wire; returns (status, body).
    pub async fn call_tool(&self, token: &str, tool: &str, arguments: Value) -> (u16, Value) {
        self.rpc(
            token,
            Wire::V2025_11_25,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
        .await
    }

    /// A successful tool call's structured content (asserting success).
    pub async fn tool_ok(&self, token: &str, tool: &str, arguments: Value) -> Value {
        let (status, body) = self.call_tool(token, tool, arguments).await;
        assert_eq!(status, 200, "{body}");
        assert_ne!(body["result"]["isError"], true, "{body}");
        body["result"]["structuredContent"].clone()
    }

    /// A tool result with `isError: true`; returns its text.
    pub async fn tool_refused(&self, token: &str, tool: &str, arguments: Value) -> String {
        let (status, body) = self.call_tool(token, tool, arguments).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["isError"], true, "{body}");
        body["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The flock names `list_flocks` returns to `token`, in its order.
    pub async fn flock_names(&self, token: &str) -> Vec<String> {
        let flocks = self.tool_ok(token, "list_flocks", json!({})).await;
        flocks["flocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The names `tools/list` shows on `wire`.
    pub async fn tool_names(&self, token: &str, wire: Wire) -> Vec<String> {
        let (status, body) = self.rpc(token, wire, "tools/list", Value::Null).await;
        assert_eq!(status, 200, "{body}");
        body["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Sends a `tools/list` with `token` on the 2025-11-25 wire.
    pub async fn list_with(&self, token: &str) -> reqwest::Response {
        let body = request_body(Wire::V2025_11_25, 1, "tools/list", Value::Null);
        self.mcp_post(Some(token), Wire::V2025_11_25, &body)
            .send()
            .await
            .unwrap()
    }

    /// `tools/list` with `token`, `Host` the issuer's authority, as behind
    /// a load balancer: a replica reached on its own port still serves the
    /// one public origin.
    pub async fn mcp_list(&self, token: &str) -> reqwest::Response {
        let authority = self
            .issuer
            .split_once("://")
            .map(|(_, rest)| rest.to_owned())
            .unwrap();
        reqwest::Client::new()
            .post(self.url("/mcp"))
            .header("host", authority)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25")
            .bearer_auth(token)
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
            .send()
            .await
            .unwrap()
    }

    /// `<issuer>/.well-known/oauth-protected-resource/mcp`.
    pub fn metadata_url(&self) -> String {
        format!("{}/.well-known/oauth-protected-resource/mcp", self.issuer)
    }

    /// The exact challenge of a 401 for a bad token.
    pub fn invalid_token_challenge(&self) -> String {
        format!(
            r#"Bearer resource_metadata="{}", error="invalid_token""#,
            self.metadata_url()
        )
    }

    /// Asserts that a `tools/list` with `token` is a 401 `invalid_token`
    /// with the exact challenge.
    pub async fn assert_invalid_token(&self, token: &str, what: &str) {
        let response = self.list_with(token).await;
        assert_eq!(response.status(), 401, "{what}");
        assert_eq!(
            challenge(&response),
            self.invalid_token_challenge(),
            "{what}"
        );
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "invalid_token", "{what}: {body}");
    }

    /// The grant works: the next MCP call is answered, and a refresh
    /// succeeds (the new tokens replace the old).
    pub async fn assert_works(&self, tokens: &mut Tokens) {
        let response = self.mcp_list(&tokens.access_token).await;
        assert_eq!(response.status(), 200, "the MCP call should be answered");
        let response = self.refresh(&tokens.client_id, &tokens.refresh_token).await;
        assert_eq!(response.status(), 200, "the grant should still work");
        let body: Value = response.json().await.unwrap();
        tokens.access_token = body["access_token"].as_str().unwrap().to_owned();
        tokens.refresh_token = body["refresh_token"].as_str().unwrap().to_owned();
    }

    /// The grant is cut off: the very next MCP call with its access token
    /// is 401 `invalid_token` with the exact challenge, and its refresh
    /// token is refused with `invalid_grant`.
    pub async fn assert_cut_off(&self, tokens: &Tokens) {
        let response = self.mcp_list(&tokens.access_token).await;
        assert_eq!(
            response.status(),
            401,
            "the next MCP call should be refused"
        );
        assert_eq!(challenge(&response), self.invalid_token_challenge());
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "invalid_token", "{body}");
        let response = self.refresh(&tokens.client_id, &tokens.refresh_token).await;
        assert_oauth_error(response, 400, "invalid_grant").await;
    }

    /// The claims of a real token with `change` applied, signed with
    /// Coop's key.
    pub async fn forge(&self, real: &str, change: impl FnOnce(&mut Value)) -> String {
        let mut claims = oauth::claims(real);
        change(&mut claims);
        let (kid, key) = self.stolen_signing_key().await;
        sign(&claims, &kid, &key)
    }
}
