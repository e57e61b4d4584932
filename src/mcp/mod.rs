//! The MCP resource server: a request's admission, its checks in their
//! order ([`admit`]), with the bearer check that builds a [`CallContext`]
//! ([`bearer`]) and the wire rules Coop adds around rmcp ([`wire`]); the
//! rmcp handler ([`server`]), the protected resource metadata
//! ([`resource_metadata`]), the farm tools, and introspection
//! ([`introspection`]: RFC 7662 answered by the bearer check itself).
//!
//! No HTTP types here except where rmcp's service needs them; the axum
//! middleware in `http::mcp` reads the request for [`admit`] and turns its
//! answer into a response.

pub mod admission;
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

pub use admission::admit;
pub use context::{CallContext, Caller, FlockScope, HeldReader, StoreOutage};
