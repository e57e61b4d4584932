//! # Coop
//!
//! One service that lets the people of a farm connect AI assistants to the
//! farm's records safely: an OAuth 2.1 authorization server and an MCP
//! resource server sharing one credential store, so that a revocation takes
//! effect on the very next MCP call on every replica.
//!
//! ## Layout
//!
//! Data flows one way: `http` → (`identity` | `oauth` | `mcp`) → `storage`,
//! with `domain` types everywhere.
//!
//! - [`config`]: typed settings, checked once; the [`domain::Issuer`] every
//!   URL is built from.
//! - [`startup`]: bind first (port 0 works), connect and migrate, assemble
//!   the router, serve, drain on SIGTERM.
//! - [`clock`]: the current time, passed in so protocol rules can be tested
//!   at fixed instants.
//! - [`domain`]: the farm's vocabulary (ids, roles, scopes, emails), parsed
//!   once and trusted after; no I/O.
//! - `identity`: password hashing (argon2id on the blocking pool, bounded)
//!   and sign-in throttling.
//! - [`secrets`]: random tokens, their storage hashes, constant-time compare.
//! - [`storage`]: every SQL statement, on SQLite or PostgreSQL, one module
//!   per aggregate.
//! - `http`: axum only: per-area routers, middleware, one error-to-response
//!   place per kind of client (pages, OAuth, MCP), page handlers and
//!   templates.
//! - `admin`: the operator's command-line actions over the store.
//! - [`cli`]: the `coop` command line (clap): each command group's flags,
//!   their checks and dispatch; `main.rs` only parses and runs it.
//! - [`telemetry`]: structured logs with a request id on every line.
//!
//! ## A browser request
//!
//! `SetRequestId` → trace span (method, path, request id; never a query) →
//! security headers → session layer (cookie → session row) → `SignedIn`
//! extractor (loads the user, checks the credential epoch) → handler →
//! `PageError` → HTML page.

pub(crate) mod admin;
#[cfg(test)]
mod architecture;
pub mod cli;
pub mod clock;
pub mod config;
pub mod domain;
pub(crate) mod http;
pub(crate) mod identity;
pub mod mcp;
pub mod oauth;
pub mod secrets;
pub mod startup;
pub(crate) mod state;
pub mod storage;
pub mod telemetry;
#[cfg(test)]
mod testing;
