//! A burst of calls larger than the database pool. On PostgreSQL reads and
//! writes share one pool of 16 connections; a request that held a reader
//! while it waited for a writer (a tool that reads and then writes, or the
//! guard recording a grant's last use) let a burst take every connection
//! and wait on itself until the pool's acquire timeout, answering 503. The
//! soak found it at full load (issue 16). Each request now holds one
//! connection at a time, and the whole burst is answered.

use futures::future::join_all;
use serde_json::json;
use time::macros::date;

use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(a_burst_of_writes_larger_than_the_pool_is_answered_in_full);

/// Four times the PostgreSQL pool, so that its connections cannot all be
/// taken by requests that then wait for one more.
const BURST: usize = 64;
const APPS: usize = 24;

async fn a_burst_of_writes_larger_than_the_pool_is_answered_in_full(engine: Engine) {
    let app = TestApp::spawn_with(engine, |config| {
        config.register_rate_limit = APPS as u32;
    })
    .await;
    let farm = app.farm("Hillside Farm").await;
    app.add_flocks(&farm, &["Layers"]).await;
    // More apps than connections, and the first call of each also records
    // its last use.
    let mut tokens = Vec::new();
    for _ in 0..APPS {
        let connected = app
            .connect(&farm.owner, "farm:read daily-entries:write")
            .await;
        tokens.push(connected.access_token);
    }
    let calls = (0..BURST).map(|i| {
        let day = date!(2026 - 01 - 01) + time::Duration::days(i as i64);
        let entry =
            json!({ "flock": "Layers", "date": day.to_string(), "eggs_collected": 900 + i });
        app.call_tool(&tokens[i % tokens.len()], "record_daily_entry", entry)
    });
    for (status, body) in join_all(calls).await {
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body["result"]["structuredContent"]["change"], "created",
            "{body}"
        );
    }
    let written = app.db_count("select count(*) from daily_entries").await;
    assert_eq!(written, BURST as i64);
}
