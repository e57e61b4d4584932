//! Housekeeping keeps the tables bounded (issue 16's soak: "expired codes,
//! tokens and sessions purged"): what a connection and its refresh chain
//! leave behind is deleted once nothing could use it, and not before: a
//! spent code is kept an hour past its expiry and a spent refresh token
//! until its own expiry, so that presenting either again is still
//! recognised as reuse. Sessions' expiry is tested in `sessions.rs`.

use coop::oauth::approval::CODE_TTL;
use coop::oauth::housekeeping::sweep;
use coop::oauth::token::REFRESH_TTL;
use coop::storage::Store;
use serde_json::Value;
use time::Duration;

use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(what_a_connection_leaves_behind_is_purged_once_nothing_can_use_it);

async fn what_a_connection_leaves_behind_is_purged_once_nothing_can_use_it(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let user = app.farm_with_member("manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let mut refresh_token = tokens.refresh_token.clone();
    for _ in 0..3 {
        let response = app.refresh(&tokens.client_id, &refresh_token).await;
        assert_eq!(response.status(), 200);
        let body: Value = response.json().await.unwrap();
        refresh_token = body["refresh_token"].as_str().unwrap().to_owned();
    }
    let rows = |table: &'static str| {
        let app = &app;
        async move { app.db_count(&format!("select count(*) from {table}")).await }
    };
    assert_eq!(rows("authorization_codes").await, 1);
    assert_eq!(rows("refresh_tokens").await, 4);

    let store = Store::connect(&app.db.url).await.unwrap();
    let now = app.clock.now();
    // Within the hour after the code's expiry: kept, so a replay of it is
    // still known for what it is.
    let swept = sweep(&store, now + CODE_TTL + Duration::minutes(59))
        .await
        .unwrap();
    assert_eq!((swept.codes, swept.refresh_tokens), (0, 0));
    let swept = sweep(&store, now + CODE_TTL + Duration::minutes(61))
        .await
        .unwrap();
    assert_eq!((swept.codes, swept.refresh_tokens), (1, 0));
    assert_eq!(rows("authorization_codes").await, 0);

    // The chain's spent tokens stay until they expire, with the live one.
    let swept = sweep(&store, now + REFRESH_TTL - Duration::minutes(1))
        .await
        .unwrap();
    assert_eq!(swept.refresh_tokens, 0);
    assert_eq!(rows("refresh_tokens").await, 4);
    let swept = sweep(&store, now + REFRESH_TTL + Duration::minutes(1))
        .await
        .unwrap();
    assert_eq!(swept.refresh_tokens, 4);
    assert_eq!(rows("refresh_tokens").await, 0);
    assert_eq!(rows("pending_authorizations").await, 0);
}
