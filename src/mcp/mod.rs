//! The MCP resource server: the bearer check that builds a [`CallContext`],
//! the protocol glue around rmcp, and the farm tools.
//!
//! No HTTP types here except where rmcp's service needs them; the axum
//! middleware that decides things at the HTTP level lives in `http::mcp`.

pub mod catalog;
pub mod context;
pub mod tools;

pub use context::{CallContext, FlockScope};
