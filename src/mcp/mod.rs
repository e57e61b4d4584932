//! The MCP resource server: the bearer check that builds a [`CallContext`]
//! ([`bearer`]), the wire rules Coop adds around rmcp ([`wire`]), the rmcp
//! handler ([`server`]), the protected resource metadata
//! ([`resource_metadata`]), the farm tools, and introspection
//! ([`introspection`]: RFC 7662 answered by the bearer check itself).
//!
//! No HTTP types here except where rmcp's service needs them; the axum
//! middleware that decides things at the HTTP level lives in `http::mcp`.

pub mod bearer;
pub mod catalog;
pub mod context;
pub mod introspection;
pub mod resource_metadata;
pub mod server;
pub mod tools;
pub mod wire;

#[cfg(test)]
mod props;

pub use context::{CallContext, Caller, FlockScope, HeldReader};
