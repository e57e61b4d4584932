//! Persistence: every SQL statement Coop runs, on SQLite or PostgreSQL.
//!
//! [`engine`] is the seam: a [`Store`] hands out readers and write
//! transactions ([`Tx`]) that work on either engine, and statements
//! ([`Sql`]) are written once for both. Each aggregate has its own module of
//! intention-named functions (`users::find_by_email`, `farms::suspend`,
//! ...); a function that only reads takes `&mut impl Exec` (a reader or a
//! transaction), one that writes takes `&mut Tx`, so a caller composes a
//! change and its audit row into one transaction by passing the same `Tx`
//! to both. Instants are integer Unix seconds so comparisons are exact
//! everywhere (docs/decisions/0001); the integration suite, run on both
//! engines, stands in for compile-time query checks.
//!
//! Functions that read a farm's records take the farm id first; the MCP
//! call context is the only caller that can supply it for tool reads.

pub mod audit;
pub mod audit_query;
pub mod automations;
pub mod call_context;
pub mod client_assertions;
pub mod clients;
pub mod codes;
pub mod connected_apps;
pub mod daily_entries;
pub mod dpop_proofs;
pub mod egg_lots;
pub mod engine;
pub mod farm_admin;
pub mod farm_query;
pub mod farms;
pub mod flock_limits;
pub mod flocks;
pub mod grants;
pub mod keys;
pub mod last_good_copies;
pub mod members;
pub mod password_resets;
pub mod pending_authorizations;
pub mod refresh_tokens;
pub mod revocations;
pub mod seed;
pub mod server_secrets;
pub mod sessions;
pub mod signin_failures;
pub mod stock;
pub mod users;

pub use engine::{
    EngineKind, Exec, FromRecord, RETRY_AFTER_UNAVAILABLE, Reader, Record, Sql, Store, StoreError,
    Tx,
};

/// Unix seconds, the one representation of an instant in storage.
pub fn unix(t: time::OffsetDateTime) -> i64 {
    t.unix_timestamp()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// Both engines must carry the same migration versions, or a feature
    /// exists on one and not the other.
    #[test]
    fn both_engines_have_the_same_migrations() {
        let versions = |dir: &str| -> BTreeSet<String> {
            std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            versions("migrations/sqlite"),
            versions("migrations/postgres")
        );
    }
}
