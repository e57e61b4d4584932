//! What Coop decides about an MCP POST before rmcp sees it: the five HTTP
//! behaviours rmcp 3.11 leaves open (see docs/mcp.md), and a peek at the
//! method and tool name for the step-up decision.
//!
//! - a batch (the body starts with `[`): 400, -32600;
//! - a body that is not JSON: 400, -32700; JSON but not a JSON-RPC 2.0
//!   object: 400, -32600;
//! - an `MCP-Protocol-Version` outside [`SUPPORTED_VERSIONS`]: 400, -32022
//!   with `data.supported` and `data.requested` (rmcp accepts every
//!   version it knows, back to 2024-11-05);
//! - no `MCP-Protocol-Version` on anything but a legacy `initialize`: 400,
//!   -32020 (rmcp would assume 2025-03-26, a revision Coop does not serve);
//! - `initialize` on the 2026-07-28 wire, which has no handshake: 404, -32601.
//!
//! Pure: plain strings and bytes in, a typed answer out; `http::mcp` maps it.

use serde_json::{Value, json};

/// The protocol revisions served on `/mcp`, oldest first. The one list: the
/// rmcp handler advertises it and the middleware enforces it.
pub const SUPPORTED_VERSIONS: [&str; 3] = ["2025-06-18", "2025-11-25", "2026-07-28"];

/// The first revision without `initialize` (stateless, per-request `_meta`).
pub const MODERN: &str = "2026-07-28";

/// The JSON-RPC codes Coop's own refusals use.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const HEADER_MISMATCH: i64 = -32020;
    pub const UNSUPPORTED_VERSION: i64 = -32022;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The server cannot answer now (its database is out of reach); retry.
    /// One of the codes JSON-RPC 2.0 leaves to the implementation.
    pub const UNAVAILABLE: i64 = -32001;
}

/// The parts of a single JSON-RPC message Coop looks at.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    /// The request id, or `null` for notifications and responses.
    pub id: Value,
    pub method: Option<String>,
    /// `params.name` of a `tools/call`.
    pub tool: Option<String>,
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WireRefusal {
    #[error("JSON-RPC batches are not supported")]
    Batch,
    #[error("the body is not JSON")]
    Parse,
    #[error("the body is not a JSON-RPC 2.0 message")]
    NotJsonRpc { id: Value },
    #[error("missing MCP-Protocol-Version header")]
    MissingVersion { id: Value },
    #[error("unsupported protocol version {requested}")]
    UnsupportedVersion { id: Value, requested: String },
    #[error("initialize does not exist on the {MODERN} wire")]
    InitializeOnModernWire { id: Value },
}

impl WireRefusal {
    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            Self::InitializeOnModernWire { .. } => 404,
            _ => 400,
        }
    }

    /// The JSON-RPC error response body.
    pub fn body(&self) -> Value {
        let (id, code, message, data) = match self {
            Self::Batch => (
                Value::Null,
                code::INVALID_REQUEST,
                "Invalid Request: JSON-RPC batches are not supported".to_owned(),
                None,
            ),
            Self::Parse => (
                Value::Null,
                code::PARSE_ERROR,
                "Parse error".to_owned(),
                None,
            ),
            Self::NotJsonRpc { id } => (
                id.clone(),
                code::INVALID_REQUEST,
                "Invalid Request: not a JSON-RPC 2.0 message".to_owned(),
                None,
            ),
            Self::MissingVersion { id } => (
                id.clone(),
                code::HEADER_MISMATCH,
                "Header mismatch: missing required MCP-Protocol-Version header".to_owned(),
                None,
            ),
            Self::UnsupportedVersion { id, requested } => (
                id.clone(),
                code::UNSUPPORTED_VERSION,
                "Unsupported protocol version".to_owned(),
                Some(json!({ "supported": SUPPORTED_VERSIONS, "requested": requested })),
            ),
            Self::InitializeOnModernWire { id } => (
                id.clone(),
                code::METHOD_NOT_FOUND,
                "Method not found: initialize".to_owned(),
                None,
            ),
        };
        error_body(id, code, &message, data)
    }
}

/// A JSON-RPC error response.
pub fn error_body(id: Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({ "code": code, "message": message });
    if let (Some(data), Some(object)) = (data, error.as_object_mut()) {
        object.insert("data".into(), data);
    }
    json!({ "jsonrpc": "2.0", "id": id, "error": error })
}

/// Checks a POST body and its `MCP-Protocol-Version` header.
pub fn inspect(version_header: Option<&str>, body: &[u8]) -> Result<Envelope, WireRefusal> {
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(WireRefusal::Batch);
    }
    let value: Value = serde_json::from_slice(body).map_err(|_| WireRefusal::Parse)?;
    let Value::Object(message) = value else {
        return Err(WireRefusal::NotJsonRpc { id: Value::Null });
    };
    let id = match message.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(WireRefusal::NotJsonRpc { id });
    }
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let is_initialize = method.as_deref() == Some("initialize");
    match version_header {
        None if !is_initialize => return Err(WireRefusal::MissingVersion { id }),
        None => {}
        Some(version) if !SUPPORTED_VERSIONS.contains(&version) => {
            return Err(WireRefusal::UnsupportedVersion {
                id,
                requested: version.to_owned(),
            });
        }
        Some(version) if is_initialize && version >= MODERN => {
            return Err(WireRefusal::InitializeOnModernWire { id });
        }
        Some(_) => {}
    }
    let tool = (method.as_deref() == Some("tools/call"))
        .then(|| {
            message
                .get("params")
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .flatten();
    Ok(Envelope { id, method, tool })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_wire_refusal_has_its_status_and_code() {
        let call =
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_flocks"}}"#;
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        let cases: Vec<(Option<&str>, &[u8], u16, i64)> = vec![
            (Some("2025-11-25"), b"  [{}]", 400, -32600),
            (Some("2025-11-25"), b"{not json", 400, -32700),
            (Some("2025-11-25"), b"{\"id\":3}", 400, -32600),
            (None, call, 400, -32020),
            (Some("2025-03-26"), call, 400, -32022),
            (Some("2026-07-28"), init, 404, -32601),
        ];
        for (version, body, status, code) in cases {
            let refusal = inspect(version, body).unwrap_err();
            assert_eq!(refusal.status(), status, "{refusal}");
            assert_eq!(refusal.body()["error"]["code"], code, "{refusal}");
        }
        let unsupported = inspect(Some("2025-03-26"), call).unwrap_err().body();
        assert_eq!(unsupported["id"], 7);
        assert_eq!(unsupported["error"]["data"]["requested"], "2025-03-26");
        assert_eq!(
            unsupported["error"]["data"]["supported"],
            json!(SUPPORTED_VERSIONS)
        );
    }

    #[test]
    fn a_good_message_is_let_through_with_its_tool() {
        let call =
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_flocks"}}"#;
        let envelope = inspect(Some("2026-07-28"), call).unwrap();
        assert_eq!(envelope.tool.as_deref(), Some("list_flocks"));
        assert_eq!(envelope.id, json!(7));
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        assert!(inspect(None, init).is_ok());
        assert!(inspect(Some("2025-06-18"), init).is_ok());
    }
}
