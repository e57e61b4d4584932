//! Structured logs.
//!
//! One JSON object per line when `COOP_LOG_FORMAT=json`, readable text
//! otherwise; the level comes from `RUST_LOG` (default `info`). Every line
//! logged while serving a request carries that request's span, which holds
//! the request id. Handlers never log a password, token, code or secret, and
//! the request span records the path only, never the query string (an
//! authorization response's `code` travels there).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

pub fn init() {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_sessions=warn"));
    let json = std::env::var("COOP_LOG_FORMAT").is_ok_and(|v| v == "json");
    // Colour only for a person at a terminal; a log collector gets plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    // A second init (tests embedding several servers) is harmless.
    let _ = if json {
        builder.json().with_current_span(true).try_init()
    } else {
        builder.try_init()
    };
}
