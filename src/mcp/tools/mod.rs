//! The farm tools: argument types (with generated JSON schemas), the
//! queries behind them, and the replies.
//!
//! INTERFACE between the tools and the MCP transport: the transport checks
//! `catalog::access` first, then calls [`call`] with the verified
//! [`CallContext`]; it lists [`definitions`] filtered by `catalog::visible`.
//!
//! Every tool follows one shape: parse the arguments into a
//! `deny_unknown_fields` struct (its schema is what `tools/list` shows),
//! check them into domain values (-32602 on failure), resolve any flock name
//! within the caller's scope, run paged or period-bounded SQL that filters by
//! the context's farm and flock scope, and answer with structured JSON (lists
//! under a named key, `next_cursor` when more follow) plus a short text.

pub(crate) mod args;
pub(crate) mod eggs;
pub(crate) mod entries;
pub(crate) mod flocks;
pub(crate) mod reports;
pub(crate) mod stock;

#[cfg(test)]
mod tests;

use std::sync::OnceLock;

use serde_json::{Map, Value};
use time::OffsetDateTime;

use super::CallContext;
use super::catalog::{self, ToolAccess, ToolSpec};
use crate::domain::Period;
use crate::storage::{Reader, Store, StoreError};

/// One tool as `tools/list` shows it.
#[derive(Clone, Debug)]
pub struct ToolDefinition {
    pub spec: &'static ToolSpec,
    pub title: &'static str,
    pub description: &'static str,
    /// JSON Schema of the arguments, generated from the argument type.
    pub input_schema: Map<String, Value>,
}

/// What every tool handler returns.
pub type ToolResult = Result<ToolReply, ToolError>;

/// A successful tool answer: structured content plus a text rendering.
#[derive(Clone, Debug)]
pub struct ToolReply {
    pub structured: Value,
    pub text: String,
}

impl ToolReply {
    /// One page of a list: `next`, the cursor of the page after (if more
    /// follow), goes under `next_cursor`, and the text says that more
    /// `what` follow.
    pub fn page(mut structured: Value, mut text: String, next: Option<String>, what: &str) -> Self {
        if let Some(next) = next {
            structured["next_cursor"] = Value::String(next);
            text.push_str(&format!(
                "\nMore {what} follow: pass next_cursor to continue."
            ));
        }
        Self { structured, text }
    }

    /// The answer over `period`: its structured content names the days it
    /// covers as `from` and `to`, in the same words for every tool.
    pub fn over(mut self, period: Period) -> Self {
        self.structured["from"] = Value::String(period.from().to_string());
        self.structured["to"] = Value::String(period.to().to_string());
        self
    }
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
    /// The database out of reach: HTTP 503 with `Retry-After` (see
    /// [`crate::mcp::StoreOutage`]), detail logged only.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// A storage or internal failure: JSON-RPC -32603, detail logged only.
    #[error("internal: {0}")]
    Internal(String),
}

/// A storage failure as a tool error: logged where it is answered, never
/// shown.
pub(crate) fn internal(err: StoreError) -> ToolError {
    if err.is_unavailable() {
        return ToolError::Unavailable(err.to_string());
    }
    tracing::error!(error = %err, "tool storage failure");
    ToolError::Internal(err.to_string())
}

/// What a handler works with: the caller's context, the reader the
/// bearer check used (one connection for the whole call), the store for
/// writes, and the time.
pub struct ToolCall<'a> {
    pub store: &'a Store,
    /// The call's one connection; a tool that writes hands it back first.
    pub db: Reader,
    pub ctx: &'a CallContext,
    pub now: OffsetDateTime,
}

/// Every tool's definition, built once.
pub fn definitions() -> &'static [ToolDefinition] {
    static DEFINITIONS: OnceLock<Vec<ToolDefinition>> = OnceLock::new();
    DEFINITIONS.get_or_init(|| {
        catalog::TOOLS
            .iter()
            .map(|spec| ToolDefinition {
                spec,
                title: spec.title,
                description: spec.description,
                input_schema: (spec.schema)(),
            })
            .collect()
    })
}

/// Runs the named tool for `ctx`. The caller has already checked access;
/// it is checked again here so that no path reaches a tool the caller's
/// role and scopes do not allow.
pub async fn call(
    store: &Store,
    db: Reader,
    ctx: &CallContext,
    name: &str,
    arguments: Map<String, Value>,
    now: OffsetDateTime,
) -> ToolResult {
    match catalog::access(name, ctx.role, &ctx.scopes) {
        ToolAccess::Allowed => {}
        ToolAccess::Hidden => {
            return Err(ToolError::InvalidArguments(format!("Unknown tool: {name}")));
        }
        ToolAccess::MissingScope(scope) => {
            return Err(ToolError::Refused(format!(
                "this tool needs the {} scope",
                scope.as_str()
            )));
        }
    }
    let call = ToolCall {
        store,
        db,
        ctx,
        now,
    };
    catalog::dispatch(name, call, arguments).await
}
