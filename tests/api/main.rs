//! Coop's integration suite: one binary, black-box over real HTTP.
//!
//! Every test runs the real application on port 0 against a fresh database,
//! on SQLite always and on PostgreSQL when one is reachable (required when
//! `COOP_TEST_REQUIRE_POSTGRES=1`, as CI sets it). Fixtures are made with the
//! real `coop admin` command, as an operator would.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// The test support shared with the unit tests (`src/testing/`).
#[path = "../../src/testing"]
mod testing {
    pub use coop::config::DatabaseUrl;
    pub mod client_keys;
    pub mod databases;
    pub mod dpop_keys;
}

mod connect_proxy;
mod helpers;
mod tls_host;

mod allowed_hosts;
mod automations;
mod canonical_inputs;
mod cimd;
mod cimd_authorize;
mod cimd_limits;
mod cimd_outage;
mod cimd_proxy;
mod cli;
mod config;
mod connection_share;
mod crash;
mod database;
mod db_faults;
mod dpop;
mod health;
mod housekeeping;
mod introspection;
mod login;
mod mcp_auth;
mod mcp_client;
mod mcp_limits;
mod mcp_metadata;
mod mcp_tools;
mod mcp_wire;
mod metrics;
mod network_limits;
mod oauth_auth_method;
mod oauth_authorize;
mod oauth_cli;
mod oauth_flow;
mod oauth_logs;
mod oauth_metadata;
mod oauth_prompt;
mod oauth_reconsent;
mod oauth_register;
mod oauth_revoke;
mod oauth_token;
mod page_states;
mod password_change_rule;
mod password_reset;
mod pg_proxy;
mod pool_pressure;
mod private_key_jwt;
mod real_clients;
mod refresh_window;
mod serve;
mod sessions;
mod signin_throttle;
mod slow_bodies;
mod slow_clients;
mod tenancy;

mod admin_access;
mod admin_apps;
mod admin_audit;
mod admin_farm;
mod admin_members;
mod apps_cli;
mod apps_pages;
mod atomic_writes;
mod browser_apps;
mod browser_reset;
mod replicas;
