//! The bearer check of `/mcp`: every refusal, with its exact status and
//! challenge, and the once-a-minute `last_used_at`.

use serde_json::{Value, json};

use crate::helpers::mcp::{Wire, challenge, foreign_key, request_body, sign};
use crate::helpers::oauth;
use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(
    no_token_gets_the_challenge_with_metadata_and_scopes,
    a_token_in_the_query_string_is_refused,
    a_revoked_grant_refuses_its_tokens,
    a_moved_credential_epoch_refuses_older_tokens,
    a_disabled_user_is_refused,
    a_user_who_must_change_password_is_refused,
    a_suspended_farm_is_refused,
    connected_apps_off_refuses_every_token_of_the_farm,
    a_revoked_access_token_is_refused,
    claims_signature_and_key_are_checked,
    an_expired_token_is_refused,
    a_token_without_an_mcp_scope_is_insufficient_scope,
    every_url_comes_from_the_issuer_not_host,
    a_token_naming_another_user_or_client_is_refused,
    last_used_is_written_at_most_once_a_minute,
);

async fn no_token_gets_the_challenge_with_metadata_and_scopes(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let expected = format!(
        r#"Bearer resource_metadata="{}", scope="farm:read daily-entries:write""#,
        app.metadata_url()
    );
    for wire in Wire::ALL {
        let body = request_body(wire, 1, "tools/list", Value::Null);
        let response = app.mcp_post(None, wire, &body).send().await.unwrap();
        assert_eq!(response.status(), 401, "{wire:?}");
        assert_eq!(challenge(&response), expected, "{wire:?}");
    }
    // A scheme other than Bearer is no token either.
    let body = request_body(Wire::V2025_11_25, 1, "tools/list", Value::Null);
    let response = app
        .mcp_post(None, Wire::V2025_11_25, &body)
        .header("authorization", "Basic YTpi")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(challenge(&response), expected);
    // server/discover is authenticated like everything else.
    let body = request_body(Wire::V2026_07_28, 1, "server/discover", Value::Null);
    let response = app.mcp_send(None, Wire::V2026_07_28, &body).await;
    assert_eq!(response.status(), 401);
}

async fn a_token_in_the_query_string_is_refused(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    let tokens = app.connect(&user, "farm:read").await;
    let body = request_body(Wire::V2025_11_25, 1, "tools/list", Value::Null);
    let url = format!("{}?access_token={}", app.url("/mcp"), tokens.access_token);
    let send = |with_header: bool| {
        let mut request = reqwest::Client::new()
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string());
        if with_header {
            request = request.bearer_auth(&tokens.access_token);
        }
        request.send()
    };
    // Only in the query: there is no token (the query is not a way in).
    let response = send(false).await.unwrap();
    assert_eq!(response.status(), 401);
    assert!(!challenge(&response).contains("error="));
    // In the header and the query: refused outright.
    let response = send(true).await.unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(
        challenge(&response),
        format!(
            r#"Bearer resource_metadata="{}", error="invalid_request""#,
            app.metadata_url()
        )
    );
    let json: Value = response.json().await.unwrap();
    assert_eq!(json["error"], "invalid_request");
}

/// Makes one store condition (by `command`, or by revoking the grant when
/// `command` is empty) on a member's working token and asserts the next
/// call is refused; then undoes it, when `undo` is given, and asserts the
/// token works again: the refusal was that condition's doing.
async fn refused_after(engine: Engine, command: &[&str], undo: Option<&[&str]>) {
    let (app, member) = TestApp::with_member(engine, "manager").await;
    let farm = member.farm.clone();
    let tokens = app.connect(&member, "farm:read").await;
    assert_eq!(app.list_with(&tokens.access_token).await.status(), 200);
    let fill = |args: &[&str]| -> Vec<String> {
        let mut full: Vec<String> = args
            .iter()
            .map(|a| {
                if *a == "FARM" {
                    farm.clone()
                } else {
                    (*a).to_owned()
                }
            })
            .collect();
        if args[0] == "user" {
            full.push(member.email.clone());
        }
        full
    };
    if command.is_empty() {
        // Revoking the refresh token ends the grant and its access tokens.
        let response = app.revoke(&tokens.client_id, &tokens.refresh_token).await;
        assert_eq!(response.status(), 200);
    } else {
        let args = fill(command);
        app.admin(&args.iter().map(String::as_str).collect::<Vec<_>>())
            .await;
    }
    app.assert_invalid_token(&tokens.access_token, &command.join(" "))
        .await;
    if let Some(undo) = undo {
        let args = fill(undo);
        app.admin(&args.iter().map(String::as_str).collect::<Vec<_>>())
            .await;
        assert_eq!(app.list_with(&tokens.access_token).await.status(), 200);
    }
}

async fn a_revoked_grant_refuses_its_tokens(engine: Engine) {
    refused_after(engine, &[], None).await;
}

async fn a_moved_credential_epoch_refuses_older_tokens(engine: Engine) {
    refused_after(engine, &["user", "sign-out-everywhere"], None).await;
}

async fn a_disabled_user_is_refused(engine: Engine) {
    refused_after(engine, &["user", "disable"], Some(&["user", "enable"])).await;
}

async fn a_user_who_must_change_password_is_refused(engine: Engine) {
    refused_after(engine, &["user", "require-password-change"], None).await;
}

async fn a_suspended_farm_is_refused(engine: Engine) {
    refused_after(
        engine,
        &["farm", "suspend", "FARM"],
        Some(&["farm", "resume", "FARM"]),
    )
    .await;
}

async fn connected_apps_off_refuses_every_token_of_the_farm(engine: Engine) {
    refused_after(
        engine,
        &["farm", "connected-apps", "FARM", "off"],
        Some(&["farm", "connected-apps", "FARM", "on"]),
    )
    .await;
}

async fn a_revoked_access_token_is_refused(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    let tokens = app.connect(&user, "farm:read").await;
    let response = app.revoke(&tokens.client_id, &tokens.access_token).await;
    assert_eq!(response.status(), 200);
    app.assert_invalid_token(&tokens.access_token, "revoked access token")
        .await;
    // The grant lives on: a refreshed token works.
    let refreshed: Value = app
        .refresh(&tokens.client_id, &tokens.refresh_token)
        .await
        .json()
        .await
        .unwrap();
    let fresh = refreshed["access_token"].as_str().unwrap();
    assert_eq!(app.list_with(fresh).await.status(), 200);
}

async fn claims_signature_and_key_are_checked(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    let tokens = app.connect(&user, "farm:read").await;
    let real = tokens.access_token.as_str();
    assert_eq!(app.list_with(real).await.status(), 200);

    // Signed with Coop's own key: only the claim is wrong.
    let no_audience = app
        .forge(real, |c| {
            c.as_object_mut().unwrap().remove("aud");
        })
        .await;
    app.assert_invalid_token(&no_audience, "no audience").await;
    let other_audience = app
        .forge(real, |c| c["aud"] = json!("https://elsewhere.example/mcp"))
        .await;
    app.assert_invalid_token(&other_audience, "another audience")
        .await;
    let issuer_as_audience = app.forge(real, |c| c["aud"] = json!(app.issuer)).await;
    app.assert_invalid_token(&issuer_as_audience, "the issuer as audience")
        .await;
    let other_issuer = app
        .forge(real, |c| c["iss"] = json!("https://elsewhere.example"))
        .await;
    app.assert_invalid_token(&other_issuer, "another issuer")
        .await;
    // The forging itself is sound: unchanged claims pass.
    let same = app.forge(real, |_| {}).await;
    assert_eq!(app.list_with(&same).await.status(), 200);

    // A key Coop never issued, under Coop's kid: the signature fails.
    let (kid, _) = app.stolen_signing_key().await;
    let claims = oauth::claims(real);
    let bad_signature = sign(&claims, &kid, &foreign_key());
    app.assert_invalid_token(&bad_signature, "bad signature")
        .await;
    // The same, under a kid Coop does not know.
    let unknown_kid = sign(&claims, "not-a-coop-key", &foreign_key());
    app.assert_invalid_token(&unknown_kid, "unknown kid").await;
    // Not a JWT at all.
    app.assert_invalid_token("not-a-token", "garbage").await;
}

async fn an_expired_token_is_refused(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    let tokens = app.connect(&user, "farm:read").await;
    assert_eq!(app.list_with(&tokens.access_token).await.status(), 200);
    app.clock
        .advance(time::Duration::seconds(tokens.expires_in + 1));
    app.assert_invalid_token(&tokens.access_token, "expired")
        .await;
}

async fn a_token_without_an_mcp_scope_is_insufficient_scope(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    let tokens = app.connect(&user, "farm:read").await;
    let scopeless = app
        .forge(&tokens.access_token, |c| c["scope"] = json!("openid"))
        .await;
    let response = app.list_with(&scopeless).await;
    assert_eq!(response.status(), 403);
    assert_eq!(
        challenge(&response),
        format!(
            r#"Bearer error="insufficient_scope", scope="farm:read daily-entries:write", resource_metadata="{}""#,
            app.metadata_url()
        )
    );
}

async fn every_url_comes_from_the_issuer_not_host(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let body = request_body(Wire::V2025_11_25, 1, "tools/list", Value::Null);
    // A forged Host is refused before anything else, and no URL is built from it.
    let response = app
        .mcp_post(None, Wire::V2025_11_25, &body)
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    assert!(!challenge(&response).contains("evil.example"));
    let metadata: Value = app
        .get_with(
            "/.well-known/oauth-protected-resource/mcp",
            ("host", "evil.example"),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], format!("{}/mcp", app.issuer));
}

async fn last_used_is_written_at_most_once_a_minute(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    let tokens = app.connect(&user, "farm:read").await;
    let last_used = || {
        app.db_count("select coalesce(max(last_used_at), 0) from grants where revoked_at is null")
    };
    assert_eq!(last_used().await, 0);
    assert_eq!(app.list_with(&tokens.access_token).await.status(), 200);
    let first = last_used().await;
    assert!(first > 0);
    // Mark it as used 30 s ago: a call now must not write.
    app.db_execute(&format!("update grants set last_used_at = {}", first - 30))
        .await;
    assert_eq!(app.list_with(&tokens.access_token).await.status(), 200);
    assert_eq!(last_used().await, first - 30);
    // A minute later it is written again.
    app.clock.advance(time::Duration::seconds(61));
    assert_eq!(app.list_with(&tokens.access_token).await.status(), 200);
    assert!(last_used().await >= first + 61);
}

async fn a_token_naming_another_user_or_client_is_refused(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    let other = app
        .add_member(&user.farm, "other@hillside.example", "owner", None)
        .await;
    let tokens = app.connect(&user, "farm:read").await;
    let others = app.connect(&other, "farm:read").await;
    let other_sub = oauth::claims(&others.access_token)["sub"].clone();
    // Coop's own key, the grant of `user`, but another user or client named.
    let stolen_grant = app
        .forge(&tokens.access_token, |c| c["sub"] = other_sub)
        .await;
    app.assert_invalid_token(&stolen_grant, "another user")
        .await;
    let other_client = app
        .forge(&tokens.access_token, |c| {
            c["client_id"] = json!(others.client_id)
        })
        .await;
    app.assert_invalid_token(&other_client, "another client")
        .await;
}
