//! How Coop lives with its database: PostgreSQL connections the server
//! drops during a quiet spell (a restart, a failover, a proxy's idle
//! timeout) are tested and replaced before use, so no request fails on one.

use std::time::Duration;

use futures::future::join_all;
use serde_json::json;

use crate::helpers::{Engine, TestApp, postgres_available};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_dropped_in_a_quiet_spell_are_replaced_before_use() {
    if !postgres_available().await {
        return;
    }
    let app = TestApp::spawn(Engine::Postgres).await;
    let user = app.farm_with_flocks("worker").await;
    let tokens = app.connect(&user, "farm:read").await;
    let call = || app.call_tool(&tokens.access_token, "list_flocks", json!({}));
    // Calls at once, so the pool holds several connections.
    for (status, body) in join_all((0..8).map(|_| call())).await {
        assert_eq!(status, 200, "{body}");
    }

    app.db_execute(
        "select pg_terminate_backend(pid) from pg_stat_activity
         where datname = current_database() and pid <> pg_backend_pid()",
    )
    .await;
    // Past the idle time after which a pooled connection is tested.
    tokio::time::sleep(Duration::from_millis(1200)).await;

    for _ in 0..20 {
        let (status, body) = call().await;
        assert_eq!(status, 200, "{body}");
        assert_ne!(body["result"]["isError"], true, "{body}");
    }
}
