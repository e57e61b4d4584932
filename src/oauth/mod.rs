//! The authorization server's protocol, with no HTTP types.
//!
//! Functions here take plain inputs and the current time and return results
//! or typed errors; `http::oauth` maps them to endpoints.

pub mod access_token;
pub mod cimd;
pub mod keys;
