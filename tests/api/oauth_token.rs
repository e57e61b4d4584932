//! `/token`: both grants, client authentication, every refusal, and that a
//! refused request consumed nothing.

use serde_json::{Value, json};

use crate::helpers::mcp::BOTH_SCOPES;
use crate::helpers::oauth::{self, Pkce, REDIRECT_URI, TokenRequest, assert_oauth_error, callback};
use crate::helpers::{Engine, TestApp, TestUser};
use crate::on_both_engines;

on_both_engines!(
    a_code_becomes_an_access_token_and_a_refresh_token,
    refused_exchanges_leave_the_code_usable,
    an_expired_code_is_refused,
    a_reused_code_revokes_what_it_issued,
    a_code_replayed_after_it_expired_is_still_reuse,
    refresh_rotates_and_a_spent_token_revokes_the_grant,
    two_racing_refreshes_cannot_both_win,
    refresh_is_refused_once_the_credential_epoch_moved,
    refresh_checks_the_resource_and_consumes_nothing_when_refused,
    refresh_may_narrow_the_scope_but_not_widen_it,
    refresh_is_refused_while_the_farm_or_user_is_off_and_consumes_nothing,
    client_secret_basic_may_carry_the_client_id_only_in_the_header,
    client_secret_post_and_client_authentication_refusals,
    unsupported_and_malformed_token_requests,
    a_storage_failure_is_a_server_error_not_invalid_grant,
    a_storage_failure_during_a_code_exchange_is_a_server_error,
    token_requests_are_rate_limited_per_network,
    an_oversized_token_request_is_refused,
    a_client_registered_without_refresh_gets_none,
);

/// Runs the browser part for `client_id` and returns (code, pkce).
async fn code_for(app: &TestApp, user: &TestUser, client_id: &str, scope: &str) -> (String, Pkce) {
    let browser = app.signed_in(user).await;
    let pkce = Pkce::new();
    let path = app.authorize_path(client_id, &pkce, scope, &[]);
    let response = browser.open(&path).await;
    let redirected = if response.status() == 200 {
        let html = response.text().await.unwrap();
        let ticked: Vec<&str> = scope.split_whitespace().collect();
        browser.accept(&html, &ticked).await
    } else {
        response
    };
    let code = callback(&redirected)["code"].clone();
    (code, pkce)
}

/// A fresh app where a manager approved `scope` for a new public client:
/// (app, client_id, code, PKCE).
async fn approved(engine: Engine, scope: &str) -> (TestApp, String, String, Pkce) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let client_id = app.register_public_client().await;
    let (code, pkce) = code_for(&app, &user, &client_id, scope).await;
    (app, client_id, code, pkce)
}

/// Reuse was detected: the grant is revoked (and audited), so the refresh
/// token the first exchange gave is refused.
async fn assert_reuse_ended_the_grant(app: &TestApp, client_id: &str, first: &Value) {
    assert_eq!(grants_revoked(app).await, 1);
    assert_eq!(app.audit_count("token_reuse_detected").await, 1);
    let refreshed = app
        .refresh(client_id, first["refresh_token"].as_str().unwrap())
        .await;
    assert_oauth_error(refreshed, 400, "invalid_grant").await;
}

async fn grants_revoked(app: &TestApp) -> i64 {
    app.db_count("select count(*) from grants where revoked_at is not null")
        .await
}

async fn a_code_becomes_an_access_token_and_a_refresh_token(engine: Engine) {
    let (app, client_id, code, pkce) = approved(engine, "farm:read daily-entries:write").await;
    let response = app.exchange_code(&client_id, &code, &pkce.verifier).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let text = response.text().await.unwrap();
    assert!(!text.contains("null"));
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 900);
    assert_eq!(body["scope"], "farm:read daily-entries:write");
    let refresh_token = body["refresh_token"].as_str().unwrap();
    assert!(refresh_token.len() >= 43);

    let access = body["access_token"].as_str().unwrap();
    let header = oauth::jwt_header(access);
    assert_eq!(header["typ"], "at+jwt");
    assert_eq!(header["alg"], "ES256");
    assert!(header["kid"].is_string());
    let claims = oauth::claims(access);
    assert_eq!(claims["iss"], app.issuer);
    assert_eq!(claims["aud"], format!("{}/mcp", app.issuer));
    assert_eq!(claims["client_id"], client_id.as_str());
    assert_eq!(claims["scope"], "farm:read daily-entries:write");
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        900
    );
    assert!(claims["jti"].is_string());
    assert!(claims["grant_id"].is_string());
    assert_eq!(claims["epoch"], 0);
    assert!(uuid::Uuid::parse_str(claims["sub"].as_str().unwrap()).is_ok());
    // Stored only as hashes.
    for secret in [code.as_str(), refresh_token] {
        let hashed = coop::secrets::hash_secret(secret);
        assert_eq!(
            app.db_count(&format!(
                "select count(*) from authorization_codes where code_hash = '{secret}'"
            ))
            .await
                + app
                    .db_count(&format!(
                        "select count(*) from refresh_tokens where token_hash = '{secret}'"
                    ))
                    .await,
            0
        );
        assert_eq!(
            app.db_count(&format!(
                "select count(*) from authorization_codes where code_hash = '{hashed}'"
            ))
            .await
                + app
                    .db_count(&format!(
                        "select count(*) from refresh_tokens where token_hash = '{hashed}'"
                    ))
                    .await,
            1
        );
    }
}

async fn refused_exchanges_leave_the_code_usable(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let client_id = app.register_public_client().await;
    let other_client = app.register_public_client().await;
    let (code, pkce) = code_for(&app, &user, &client_id, "farm:read").await;
    let resource = format!("{}/mcp", app.issuer);
    let wrong_verifier = "x".repeat(43);
    let exchange = TokenRequest::code(&client_id, &code, &pkce.verifier);
    let cases: Vec<(TokenRequest, u16, &str)> = vec![
        (
            exchange.clone().set("code_verifier", &wrong_verifier),
            400,
            "invalid_grant",
        ),
        (
            exchange
                .clone()
                .field("redirect_uri", "http://127.0.0.1:9/other"),
            400,
            "invalid_grant",
        ),
        (
            exchange.clone().set("client_id", &other_client),
            400,
            "invalid_grant",
        ),
        (
            exchange
                .clone()
                .field("resource", "https://evil.example/mcp"),
            400,
            "invalid_target",
        ),
        (
            exchange
                .clone()
                .field("resource", &resource)
                .field("resource", &resource),
            400,
            "invalid_target",
        ),
        (
            exchange.clone().without("code_verifier"),
            400,
            "invalid_request",
        ),
        (
            exchange.clone().set("client_id", "nobody"),
            401,
            "invalid_client",
        ),
        (
            exchange.clone().set("code", &format!("{code}x")),
            400,
            "invalid_grant",
        ),
    ];
    for (request, status, error) in cases {
        assert_oauth_error(app.token(&request).await, status, error).await;
    }
    app.assert_count(
        "select count(*) from authorization_codes where consumed_at is not null",
        0,
    )
    .await;
    assert_eq!(grants_revoked(&app).await, 0);
    let response = app
        .token(
            &TokenRequest::code(&client_id, &code, &pkce.verifier)
                .field("resource", &format!("{}/mcp/", app.issuer)),
        )
        .await;
    assert_eq!(response.status(), 200);
}

async fn an_expired_code_is_refused(engine: Engine) {
    let (app, client_id, code, pkce) = approved(engine, "farm:read").await;
    app.clock.advance(time::Duration::seconds(61));
    let response = app.exchange_code(&client_id, &code, &pkce.verifier).await;
    assert_oauth_error(response, 400, "invalid_grant").await;
}

async fn a_reused_code_revokes_what_it_issued(engine: Engine) {
    let (app, client_id, code, pkce) = approved(engine, "farm:read").await;
    let first: Value = app
        .exchange_code(&client_id, &code, &pkce.verifier)
        .await
        .json()
        .await
        .unwrap();
    let second = app.exchange_code(&client_id, &code, &pkce.verifier).await;
    assert_oauth_error(second, 400, "invalid_grant").await;
    assert_reuse_ended_the_grant(&app, &client_id, &first).await;
}

async fn a_code_replayed_after_it_expired_is_still_reuse(engine: Engine) {
    let (app, client_id, code, pkce) = approved(engine, "farm:read").await;
    let first: Value = app
        .exchange_code(&client_id, &code, &pkce.verifier)
        .await
        .json()
        .await
        .unwrap();
    app.clock.advance(time::Duration::minutes(5));
    let replay = app.exchange_code(&client_id, &code, &pkce.verifier).await;
    assert_oauth_error(replay, 400, "invalid_grant").await;
    assert_reuse_ended_the_grant(&app, &client_id, &first).await;
}

async fn refresh_rotates_and_a_spent_token_revokes_the_grant(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let response = app.token(&tokens.refresh_request()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let rotated: Value = response.json().await.unwrap();
    let next = rotated["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(next, tokens.refresh_token);
    assert_eq!(rotated["expires_in"], 900);
    assert_eq!(rotated["scope"], "farm:read");
    let claims = oauth::claims(rotated["access_token"].as_str().unwrap());
    assert_eq!(
        claims["grant_id"],
        oauth::claims(&tokens.access_token)["grant_id"]
    );
    // The new token works once more.
    let response = app.refresh(&tokens.client_id, &next).await;
    let latest: Value = response.json().await.unwrap();
    let latest = latest["refresh_token"].as_str().unwrap().to_owned();

    // The spent one comes back: someone copied it. The whole grant ends.
    let replay = app.refresh(&tokens.client_id, &tokens.refresh_token).await;
    assert_oauth_error(replay, 400, "invalid_grant").await;
    assert_eq!(grants_revoked(&app).await, 1);
    assert_eq!(app.audit_count("token_reuse_detected").await, 1);
    let legit = app.refresh(&tokens.client_id, &latest).await;
    assert_oauth_error(legit, 400, "invalid_grant").await;
}

/// With the reuse window off, of two refreshes racing with one token
/// exactly one wins and the other is reuse (threat 7 without the window;
/// `refresh_window.rs` has the race with it).
async fn two_racing_refreshes_cannot_both_win(engine: Engine) {
    let app = TestApp::spawn_with(engine, |config| {
        config.refresh_reuse_window = std::time::Duration::ZERO;
    })
    .await;
    let user = app.farm_with_member("manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let (a, b) = tokio::join!(
        app.refresh(&tokens.client_id, &tokens.refresh_token),
        app.refresh(&tokens.client_id, &tokens.refresh_token),
    );
    let mut statuses = [a.status().as_u16(), b.status().as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 400]);
    // The loser is a reuse: the grant is gone.
    assert_eq!(grants_revoked(&app).await, 1);
    assert_eq!(
        app.db_count("select count(*) from refresh_tokens").await,
        2,
        "exactly one successor was stored"
    );
}

async fn refresh_is_refused_once_the_credential_epoch_moved(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    app.admin(&["user", "sign-out-everywhere", &user.email])
        .await;
    let response = app.token(&tokens.refresh_request()).await;
    assert_oauth_error(response, 400, "invalid_grant").await;
    app.assert_count(
        "select count(*) from refresh_tokens where used_at is not null",
        0,
    )
    .await;
}

async fn refresh_checks_the_resource_and_consumes_nothing_when_refused(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let elsewhere = tokens.refresh_request();
    let elsewhere = elsewhere.field("resource", "https://evil.example/mcp");
    assert_oauth_error(app.token(&elsewhere).await, 400, "invalid_target").await;
    // A resource Coop serves, but not the one the grant is for: the same
    // store under another issuer (an operator who moved Coop to a new
    // address) names its own `/mcp`, and a grant for the old one is not
    // stretched to it.
    let moved = TestApp::spawn_on(app.db.clone(), |_| {}).await;
    assert_ne!(moved.resource(), app.resource());
    let there = tokens
        .refresh_request()
        .field("resource", &moved.resource());
    assert_oauth_error(moved.token(&there).await, 400, "invalid_target").await;
    let here = tokens.refresh_request().field("resource", &app.resource());
    assert_eq!(app.token(&here).await.status(), 200);
}

async fn refresh_may_narrow_the_scope_but_not_widen_it(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let wide = app.connect(&user, "farm:read daily-entries:write").await;
    let response = app
        .token(&wide.refresh_request().field("scope", "farm:read"))
        .await;
    let narrowed: Value = response.json().await.unwrap();
    assert_eq!(narrowed["scope"], "farm:read");
    // The next refresh token keeps the original scope.
    let response = app
        .refresh(&wide.client_id, narrowed["refresh_token"].as_str().unwrap())
        .await;
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["scope"], "farm:read daily-entries:write");

    let narrow = app.connect(&user, "farm:read").await;
    let wider = narrow.refresh_request().field("scope", BOTH_SCOPES);
    assert_oauth_error(app.token(&wider).await, 400, "invalid_scope").await;
    assert_eq!(app.token(&narrow.refresh_request()).await.status(), 200);
}

async fn refresh_is_refused_while_the_farm_or_user_is_off_and_consumes_nothing(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let switches: [(&[&str], &[&str]); 3] = [
        (
            &["admin", "farm", "suspend", &user.farm],
            &["admin", "farm", "resume", &user.farm],
        ),
        (
            &["admin", "farm", "connected-apps", &user.farm, "off"],
            &["admin", "farm", "connected-apps", &user.farm, "on"],
        ),
        (
            &["admin", "user", "disable", &user.email],
            &["admin", "user", "enable", &user.email],
        ),
    ];
    for (off, on) in switches {
        assert_eq!(app.cli(off).await.0, 0);
        let response = app.token(&tokens.refresh_request()).await;
        assert_oauth_error(response, 400, "invalid_grant").await;
        assert_eq!(app.cli(on).await.0, 0);
    }
    assert_eq!(grants_revoked(&app).await, 0);
    assert_eq!(app.token(&tokens.refresh_request()).await.status(), 200);
}

async fn client_secret_basic_may_carry_the_client_id_only_in_the_header(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let (client_id, secret) = app.register_confidential("client_secret_basic").await;
    let (code, pkce) = code_for(&app, &user, &client_id, "farm:read").await;
    let response = app
        .token(&TokenRequest::confidential_code(&code, &pkce.verifier).basic(&client_id, &secret))
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    // And the refresh, the same way.
    let refresh = TokenRequest::fields(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", body["refresh_token"].as_str().unwrap()),
    ]);
    let response = app.token(&refresh.basic(&client_id, &secret)).await;
    assert_eq!(response.status(), 200);
}

async fn client_secret_post_and_client_authentication_refusals(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let (client_id, secret) = app.register_confidential("client_secret_post").await;
    let (code, pkce) = code_for(&app, &user, &client_id, "farm:read").await;
    let exchange = TokenRequest::code(&client_id, &code, &pkce.verifier);
    // Wrong secret, no secret: 401 invalid_client.
    for attempt in [
        exchange.clone().field("client_secret", "wrong"),
        exchange.clone(),
    ] {
        let response = app.token(&attempt).await;
        assert!(response.headers().get("www-authenticate").is_none());
        assert_oauth_error(response, 401, "invalid_client").await;
    }
    // A wrong Basic secret earns a Basic challenge.
    let response = app
        .token(&TokenRequest::confidential_code(&code, &pkce.verifier).basic(&client_id, "wrong"))
        .await;
    assert_eq!(
        response.headers()["www-authenticate"],
        "Basic realm=\"coop\""
    );
    assert_oauth_error(response, 401, "invalid_client").await;
    // Two methods at once.
    let with_secret = exchange.field("client_secret", &secret);
    let response = app
        .token(&with_secret.clone().basic(&client_id, &secret))
        .await;
    assert_oauth_error(response, 400, "invalid_request").await;
    // A public client presenting a secret.
    let public = app.register_public_client().await;
    let response = app
        .token_request(&[
            ("grant_type", "refresh_token"),
            ("client_id", &public),
            ("client_secret", "x"),
            ("refresh_token", "y"),
        ])
        .await;
    assert_oauth_error(response, 401, "invalid_client").await;
    // No client at all.
    let response = app
        .token_request(&[("grant_type", "refresh_token"), ("refresh_token", "y")])
        .await;
    assert_oauth_error(response, 401, "invalid_client").await;
    // Nothing was consumed; the right secret works.
    let response = app.token(&with_secret).await;
    assert_eq!(response.status(), 200);
}

async fn unsupported_and_malformed_token_requests(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let client_id = app.register_public_client().await;
    for (form, status, error) in [
        (
            vec![("client_id", client_id.as_str())],
            400,
            "invalid_request",
        ),
        (
            vec![
                ("grant_type", "password"),
                ("client_id", &client_id),
                ("username", "a"),
                ("password", "b"),
            ],
            400,
            "unsupported_grant_type",
        ),
        (
            vec![
                ("grant_type", "client_credentials"),
                ("client_id", &client_id),
            ],
            // Automations only (tests/api/automations.rs).
            400,
            "unauthorized_client",
        ),
        (
            vec![("grant_type", "refresh_token"), ("client_id", &client_id)],
            400,
            "invalid_request",
        ),
        (
            vec![
                ("grant_type", "refresh_token"),
                ("grant_type", "refresh_token"),
                ("client_id", &client_id),
                ("refresh_token", "x"),
            ],
            400,
            "invalid_request",
        ),
        (
            vec![
                ("grant_type", "refresh_token"),
                ("client_id", &client_id),
                ("refresh_token", "unknown"),
            ],
            400,
            "invalid_grant",
        ),
    ] {
        assert_oauth_error(app.token_request(&form).await, status, error).await;
    }
}

async fn a_storage_failure_is_a_server_error_not_invalid_grant(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    app.db_execute("alter table refresh_tokens rename to refresh_tokens_away")
        .await;
    let response = app.token(&tokens.refresh_request()).await;
    let body = assert_oauth_error(response, 500, "server_error").await;
    assert!(!body.to_string().contains("refresh_tokens"), "{body}");
    app.db_execute("alter table refresh_tokens_away rename to refresh_tokens")
        .await;
    assert_eq!(app.token(&tokens.refresh_request()).await.status(), 200);
}

async fn a_storage_failure_during_a_code_exchange_is_a_server_error(engine: Engine) {
    let (app, client_id, code, pkce) = approved(engine, "farm:read").await;
    // The code is readable but its first refresh token cannot be stored:
    // the exchange fails in the spending transaction.
    app.db_execute("alter table refresh_tokens rename to refresh_tokens_away")
        .await;
    let response = app.exchange_code(&client_id, &code, &pkce.verifier).await;
    let body = assert_oauth_error(response, 500, "server_error").await;
    assert!(!body.to_string().contains("refresh_tokens"), "{body}");
    app.db_execute("alter table refresh_tokens_away rename to refresh_tokens")
        .await;
    // The transaction rolled back: the code was not spent, the grant lives.
    assert_eq!(grants_revoked(&app).await, 0);
    let response = app.exchange_code(&client_id, &code, &pkce.verifier).await;
    assert_eq!(response.status(), 200);
}

async fn an_oversized_token_request_is_refused(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let padding = "x".repeat(9 * 1024);
    let response = app
        .token(&tokens.refresh_request().field("padding", &padding))
        .await;
    assert_eq!(response.status(), 413);
    // Refused before it was read: the refresh token was not spent.
    let response = app.token(&tokens.refresh_request()).await;
    assert_eq!(response.status(), 200);
}

async fn token_requests_are_rate_limited_per_network(engine: Engine) {
    let app = TestApp::spawn_with(engine, |config| config.token_rate_limit = 3).await;
    let client_id = app.register_public_client().await;
    let form = [
        ("grant_type", "refresh_token"),
        ("client_id", client_id.as_str()),
        ("refresh_token", "x"),
    ];
    for _ in 0..3 {
        assert_eq!(app.token_request(&form).await.status(), 400);
    }
    let response = app.token_request(&form).await;
    assert!(response.headers().contains_key("retry-after"));
    assert_oauth_error(response, 429, "temporarily_unavailable").await;
}

async fn a_client_registered_without_refresh_gets_none(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let response = app
        .register(&json!({"redirect_uris": [REDIRECT_URI], "grant_types": ["authorization_code"]}))
        .await;
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["grant_types"], json!(["authorization_code"]));
    let client_id = body["client_id"].as_str().unwrap().to_owned();
    let (code, pkce) = code_for(&app, &user, &client_id, "farm:read").await;
    let response = app.exchange_code(&client_id, &code, &pkce.verifier).await;
    let body: Value = response.json().await.unwrap();
    assert!(body.get("refresh_token").is_none(), "{body}");
    assert_eq!(body["expires_in"], 900);
    let response = app.refresh(&client_id, "anything").await;
    assert_oauth_error(response, 400, "unauthorized_client").await;
}
