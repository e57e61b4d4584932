//! The farm tools: argument types (with generated JSON schemas), the
//! queries behind them, and the replies.
//!
//! INTERFACE between the tools and the MCP transport (being implemented):
//! the transport checks `catalog::access` first, then calls [`call`] with
//! the verified [`CallContext`]; it lists [`definitions`] filtered by
//! `catalog::visible`.

use serde_json::{Map, Value};
use time::OffsetDateTime;

use super::CallContext;
use super::catalog::ToolSpec;
use crate::storage::Store;

/// One tool as `tools/list` shows it.
#[derive(Clone, Debug)]
pub struct ToolDefinition {
    pub spec: &'static ToolSpec,
    pub title: &'static str,
    pub description: &'static str,
    /// JSON Schema of the arguments, generated from the argument type.
    pub input_schema: Map<String, Value>,
}

/// A successful tool answer: structured content plus a text rendering.
#[derive(Clone, Debug)]
pub struct ToolReply {
    pub structured: Value,
    pub text: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// Malformed arguments: JSON-RPC -32602 with this message.
    #[error("{0}")]
    InvalidArguments(String),
    /// A domain refusal (not found, ambiguous name, conflict, out of the
    /// caller's flock scope): a tool result with `isError: true`.
    #[error("{0}")]
    Refused(String),
    /// A storage or internal failure: JSON-RPC -32603, detail logged only.
    #[error("internal: {0}")]
    Internal(String),
}

/// Every tool's definition, built once.
pub fn definitions() -> &'static [ToolDefinition] {
    &[]
}

/// Runs the named tool for `ctx`. The caller has already checked access.
pub async fn call(
    _store: &Store,
    _ctx: &CallContext,
    name: &str,
    _arguments: Map<String, Value>,
    _now: OffsetDateTime,
) -> Result<ToolReply, ToolError> {
    Err(ToolError::Internal(format!("tool {name} is not wired yet")))
}
