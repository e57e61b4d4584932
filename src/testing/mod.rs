//! Test support (unit tests only, `#[cfg(test)]`), shared with the
//! integration suite: `tests/api/main.rs` mounts this folder's
//! `client_keys.rs`, `databases.rs` and `dpop_keys.rs` with `#[path]`, so
//! the unit tests and the integration tests make their databases, expand
//! `on_both_engines!`, sign client assertions and DPoP proofs with the same
//! code. Those files name nothing of the crate but `super::DatabaseUrl`,
//! which each side provides. `store.rs` is the unit tests' own: a migrated
//! [`TestStore`] on such a database; so is `jose.rs`, JOSE parts for the
//! token checks' tests.

pub(crate) use crate::config::DatabaseUrl;

pub mod client_keys;
pub mod databases;
pub mod dpop_keys;
pub mod jose;
pub mod store;

pub use store::TestStore;
