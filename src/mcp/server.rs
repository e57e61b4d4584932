//! The rmcp server handler: `tools/list` and `tools/call` over the farm
//! tools, for the caller the bearer check verified.
//!
//! rmcp runs stateless (no sessions, JSON responses, no SSE) and makes a
//! handler per request, so [`FarmServer`] is two cheap clones; the tool
//! list, with its generated schemas, is built once ([`catalogue`]). The
//! [`CallContext`] arrives in the HTTP request's extensions, put there by
//! `http::mcp` after the bearer check; a request without one is answered
//! with an internal error, never served (the route cannot be reached without
//! the check, this is the second lock).
//!
//! `tools/list` shows exactly role ∩ scope. A call to any other tool is
//! answered like an unknown tool (-32602), except that the step-up case (the
//! role allows it, the token's scopes do not) never gets here: `http::mcp`
//! answers it with a 403 `insufficient_scope` before rmcp runs.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, DiscoverResult,
    ExtensionCapabilities, Implementation, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use super::catalog::{self, ToolAccess};
use super::tools::{self, ToolError};
use super::{CallContext, HeldReader, StoreOutage};
use crate::clock::Clock;
use crate::storage::Store;

/// [`super::wire::SUPPORTED_VERSIONS`] as rmcp values.
static VERSIONS: [ProtocolVersion; 3] = [
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// The handler rmcp builds for each request.
#[derive(Clone)]
pub struct FarmServer {
    store: Store,
    clock: Clock,
}

impl FarmServer {
    pub fn new(store: Store, clock: Clock) -> Self {
        Self { store, clock }
    }
}

/// Every tool as `tools/list` shows it, built once.
pub fn catalogue() -> &'static [Tool] {
    static TOOLS: OnceLock<Vec<Tool>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        tools::definitions()
            .iter()
            .map(|d| {
                Tool::new(d.spec.name, d.description, Arc::new(d.input_schema.clone()))
                    .with_title(d.title)
            })
            .collect()
    })
}

/// The client credentials extension: automations get tokens with
/// `grant_type=client_credentials` (no settings).
pub const CLIENT_CREDENTIALS_EXTENSION: &str = "io.modelcontextprotocol/oauth-client-credentials";

fn extensions() -> ExtensionCapabilities {
    let mut extensions = ExtensionCapabilities::new();
    extensions.insert(CLIENT_CREDENTIALS_EXTENSION.to_owned(), Default::default());
    extensions
}

fn server_config() -> &'static ServerConfig {
    static CONFIG: OnceLock<ServerConfig> = OnceLock::new();
    CONFIG.get_or_init(|| {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("coop", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .with_instructions(
                "Coop: a farm's flocks, daily entries, egg lots and stock. Flocks are named \
                 by the names people use on the farm.",
            )
    })
}

/// The verified caller, from the HTTP request's extensions.
fn caller(context: &RequestContext<RoleServer>) -> Result<CallContext, McpError> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<CallContext>())
        .cloned()
        .ok_or_else(|| {
            tracing::error!("an MCP request reached the handler without a call context");
            McpError::internal_error("internal error", None)
        })
}

/// The reader the bearer check used, or a fresh one.
async fn reader(
    store: &Store,
    context: &RequestContext<RoleServer>,
) -> Result<crate::storage::Reader, McpError> {
    let held = context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<HeldReader>())
        .and_then(HeldReader::take);
    match held {
        Some(reader) => Ok(reader),
        None => store.read().await.map_err(|err| {
            if err.is_unavailable() {
                return outage(context, &err.to_string());
            }
            tracing::error!(error = %err, "no reader for a tool call");
            McpError::internal_error("internal error", None)
        }),
    }
}

/// The store was out of reach: raises the request's [`StoreOutage`] (the
/// HTTP layer then answers 503 and logs the cause) and gives rmcp an
/// internal error to answer with meanwhile.
fn outage(context: &RequestContext<RoleServer>, detail: &str) -> McpError {
    match context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<StoreOutage>())
    {
        Some(flag) => flag.report(detail.to_owned()),
        None => tracing::warn!(%detail, "the store is unavailable"),
    }
    McpError::internal_error("internal error", None)
}

fn unknown_tool(name: &str) -> McpError {
    McpError::invalid_params(format!("Unknown tool: {name}"), None)
}

impl ServerHandler for FarmServer {
    fn get_info(&self) -> ServerConfig {
        server_config().clone()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(&VERSIONS)
    }

    /// `server/discover` (the 2026 wire) also declares the MCP extensions
    /// Coop's authorization server implements, as their specs ask.
    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        let mut result =
            DiscoverResult::from_server_info(VERSIONS.to_vec(), server_config().clone());
        result.capabilities.extensions = Some(extensions());
        Ok(result)
    }

    /// Used by rmcp only to check `Mcp-Param-*` headers against a schema.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        catalogue().iter().find(|t| t.name == name).cloned()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let caller = caller(&context)?;
        let visible = catalogue()
            .iter()
            .filter(|t| {
                catalog::access(&t.name, caller.role, &caller.scopes) == ToolAccess::Allowed
            })
            .cloned()
            .collect();
        // The list differs per caller: rmcp fills `cacheScope: "private"`
        // (and `ttlMs: 0`) on the 2026 wire when none is set here.
        Ok(ListToolsResult::with_all_items(visible))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let caller = caller(&context)?;
        let name = request.name.as_ref();
        if catalog::access(name, caller.role, &caller.scopes) != ToolAccess::Allowed {
            return Err(unknown_tool(name));
        }
        let arguments = request.arguments.unwrap_or_default();
        let now = self.clock.now();
        let db = reader(&self.store, &context).await?;
        match tools::call(&self.store, db, &caller, name, arguments, now).await {
            Ok(reply) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(reply.text)]);
                result.structured_content = Some(reply.structured);
                Ok(result.into())
            }
            Err(ToolError::Refused(message)) => {
                Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into())
            }
            Err(ToolError::InvalidArguments(message)) => {
                Err(McpError::invalid_params(message, None))
            }
            Err(ToolError::Unavailable(detail)) => Err(outage(&context, &detail)),
            Err(ToolError::Internal(detail)) => {
                tracing::error!(tool = name, %detail, "tool failed");
                Err(McpError::internal_error("internal error", None))
            }
        }
    }
}
