//! The refresh-token reuse window (issue 11, threat 7): a client that
//! retries a refresh whose response it lost, or two processes refreshing
//! with one token at once, stay connected with one token family; a replay
//! after the successor was used, or after the window, is still reuse and
//! revokes the grant.

use serde_json::Value;

use crate::helpers::oauth::assert_oauth_error;
use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(
    a_retried_refresh_gets_the_same_successor,
    racing_refreshes_share_one_successor,
    a_replay_after_the_successor_was_used_revokes_the_grant,
    a_replay_after_the_window_revokes_the_grant,
    a_replay_needs_the_same_client,
);

async fn refreshed(response: reqwest::Response) -> Value {
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

fn refresh_token(body: &Value) -> String {
    body["refresh_token"].as_str().unwrap().to_owned()
}

async fn mcp_status(app: &TestApp, token: &str) -> u16 {
    app.call_tool(token, "list_flocks", serde_json::json!({}))
        .await
        .0
}

async fn live_tokens(app: &TestApp) -> i64 {
    app.db_count("select count(*) from refresh_tokens where used_at is null")
        .await
}

async fn grants_revoked(app: &TestApp) -> i64 {
    app.db_count("select count(*) from grants where revoked_at is not null")
        .await
}

async fn a_retried_refresh_gets_the_same_successor(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;

    let first = refreshed(app.refresh(&tokens.client_id, &tokens.refresh_token).await).await;
    // The response was lost; the client tries again with what it has.
    app.clock.advance(time::Duration::seconds(5));
    let retry = refreshed(app.refresh(&tokens.client_id, &tokens.refresh_token).await).await;
    assert_eq!(refresh_token(&retry), refresh_token(&first));
    assert_ne!(retry["access_token"], first["access_token"]);
    // Both access tokens work (each is its own short-lived token).
    for body in [&first, &retry] {
        let token = body["access_token"].as_str().unwrap();
        assert_eq!(mcp_status(&app, token).await, 200);
    }
    assert_eq!(live_tokens(&app).await, 1, "one live family");
    assert_eq!(grants_revoked(&app).await, 0);

    // The successor carries on as usual.
    let next = refreshed(app.refresh(&tokens.client_id, &refresh_token(&first)).await).await;
    assert_ne!(refresh_token(&next), refresh_token(&first));
    assert_eq!(live_tokens(&app).await, 1);
}

async fn racing_refreshes_share_one_successor(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let (a, b, c) = tokio::join!(
        app.refresh(&tokens.client_id, &tokens.refresh_token),
        app.refresh(&tokens.client_id, &tokens.refresh_token),
        app.refresh(&tokens.client_id, &tokens.refresh_token),
    );
    let (a, b, c) = (refreshed(a).await, refreshed(b).await, refreshed(c).await);
    assert_eq!(refresh_token(&a), refresh_token(&b));
    assert_eq!(refresh_token(&a), refresh_token(&c));
    assert_eq!(grants_revoked(&app).await, 0);
    assert_eq!(
        app.db_count("select count(*) from refresh_tokens").await,
        2,
        "exactly one successor was stored"
    );
    assert_eq!(live_tokens(&app).await, 1);
}

async fn a_replay_after_the_successor_was_used_revokes_the_grant(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let first = refreshed(app.refresh(&tokens.client_id, &tokens.refresh_token).await).await;
    let next = refreshed(app.refresh(&tokens.client_id, &refresh_token(&first)).await).await;

    // Within the window, but the successor was used: someone else holds
    // the old token.
    let replay = app.refresh(&tokens.client_id, &tokens.refresh_token).await;
    assert_oauth_error(replay, 400, "invalid_grant").await;
    assert_eq!(grants_revoked(&app).await, 1);
    assert_eq!(app.audit_count("token_reuse_detected").await, 1);
    let latest = app.refresh(&tokens.client_id, &refresh_token(&next)).await;
    assert_oauth_error(latest, 400, "invalid_grant").await;
    let access = next["access_token"].as_str().unwrap();
    assert_eq!(mcp_status(&app, access).await, 401);
}

async fn a_replay_after_the_window_revokes_the_grant(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let first = refreshed(app.refresh(&tokens.client_id, &tokens.refresh_token).await).await;

    app.clock.advance(time::Duration::seconds(31));
    let replay = app.refresh(&tokens.client_id, &tokens.refresh_token).await;
    assert_oauth_error(replay, 400, "invalid_grant").await;
    assert_eq!(grants_revoked(&app).await, 1);
    // The successor, unused, died with the grant.
    let successor = app.refresh(&tokens.client_id, &refresh_token(&first)).await;
    assert_oauth_error(successor, 400, "invalid_grant").await;
}

async fn a_replay_needs_the_same_client(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let other = app.register_public_client().await;
    refreshed(app.refresh(&tokens.client_id, &tokens.refresh_token).await).await;

    let stranger = app.refresh(&other, &tokens.refresh_token).await;
    assert_oauth_error(stranger, 400, "invalid_grant").await;
    assert_eq!(live_tokens(&app).await, 1);
}
