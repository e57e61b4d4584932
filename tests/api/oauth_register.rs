//! Dynamic Client Registration (RFC 7591) and its fences (threat 14).

use serde_json::{Value, json};

use crate::helpers::oauth::{Pkce, REDIRECT_URI, assert_oauth_error};
use crate::helpers::{Engine, TestApp, retry_after};
use crate::on_both_engines;

on_both_engines!(
    a_public_client_registers_and_gets_its_fields_echoed,
    a_confidential_client_gets_its_secret_once,
    unknown_fields_are_ignored_and_not_echoed,
    refused_registrations_store_nothing,
    registration_is_rate_limited_per_network,
    an_oversized_registration_is_refused,
    an_unused_registration_expires_after_a_day,
    a_used_registration_does_not_expire,
    housekeeping_deletes_unused_registrations,
    browsers_may_call_the_json_endpoints_cross_origin,
    a_web_page_may_not_register_through_its_visitors_browsers,
);

async fn a_public_client_registers_and_gets_its_fields_echoed(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let response = app
        .register(&json!({
            "client_name": "Claude",
            "redirect_uris": ["http://127.0.0.1:33418/callback", "https://claude.example/cb"],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "application_type": "native",
        }))
        .await;
    assert_eq!(response.status(), 201);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let text = response.text().await.unwrap();
    assert!(!text.contains("null"), "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert!(body["client_id"].as_str().unwrap().len() >= 16);
    assert!(body["client_id_issued_at"].as_i64().unwrap() > 1_700_000_000);
    assert_eq!(
        body["redirect_uris"],
        json!([
            "http://127.0.0.1:33418/callback",
            "https://claude.example/cb"
        ])
    );
    assert_eq!(body["client_name"], "Claude");
    assert_eq!(body["token_endpoint_auth_method"], "none");
    assert_eq!(
        body["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(body["response_types"], json!(["code"]));
    assert_eq!(body["application_type"], "native");
    assert!(body.get("client_secret").is_none());

    // Omitting the auth method gives a public client too.
    let response = app
        .register(&json!({"redirect_uris": [REDIRECT_URI]}))
        .await;
    assert_eq!(response.status(), 201);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_endpoint_auth_method"], "none");
    assert!(body.get("client_secret").is_none());
    assert!(body.get("client_name").is_none());
}

async fn a_confidential_client_gets_its_secret_once(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    for method in ["client_secret_basic", "client_secret_post"] {
        let response = app
            .register(&json!({
                "client_name": "Server app",
                "redirect_uris": ["https://app.example/cb"],
                "token_endpoint_auth_method": method,
            }))
            .await;
        assert_eq!(response.status(), 201);
        let body: Value = response.json().await.unwrap();
        let secret = body["client_secret"].as_str().unwrap();
        assert!(secret.len() >= 40);
        assert_eq!(body["client_secret_expires_at"], 0);
        assert_eq!(body["token_endpoint_auth_method"], method);
        // Stored only as a hash.
        let stored = app
            .db_count(&format!(
                "select count(*) from oauth_clients where secret_hash = '{}'",
                coop::secrets::hash_secret(secret)
            ))
            .await;
        assert_eq!(stored, 1);
        let clear = app.db_count(&format!("select count(*) from oauth_clients where secret_hash = '{secret}' or metadata like '%{secret}%'"))
        .await;
        assert_eq!(clear, 0);
    }
}

async fn unknown_fields_are_ignored_and_not_echoed(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let response = app
        .register(&json!({
            "redirect_uris": [REDIRECT_URI],
            "client_name": "Inspector",
            "logo_uri": "https://evil.example/logo.png",
            "scope": "farm:read",
            "contacts": ["a@b.example"],
            "x-custom": {"deep": [1, 2, 3]},
        }))
        .await;
    assert_eq!(response.status(), 201);
    let body: Value = response.json().await.unwrap();
    for field in ["logo_uri", "scope", "contacts", "x-custom"] {
        assert!(body.get(field).is_none(), "{field} echoed: {body}");
    }
}

async fn refused_registrations_store_nothing(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let cases = [
        (json!({}), "invalid_redirect_uri"),
        (json!({"redirect_uris": []}), "invalid_redirect_uri"),
        (
            json!({"redirect_uris": ["http://app.example/cb"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": ["https://app.example/cb#x"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": ["cursor://callback"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": (0..11).map(|i| format!("https://app.example/{i}")).collect::<Vec<_>>()}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": [format!("https://app.example/{}", "a".repeat(2000))]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "private_key_jwt"}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [REDIRECT_URI], "grant_types": ["client_credentials"]}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [REDIRECT_URI], "response_types": ["token"]}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [REDIRECT_URI], "client_name": "n".repeat(101)}),
            "invalid_client_metadata",
        ),
        (json!(["not", "an", "object"]), "invalid_client_metadata"),
    ];
    for (body, code) in cases {
        let response = app.register(&body).await;
        assert_oauth_error(response, 400, code).await;
    }
    let response = reqwest::Client::new()
        .post(app.url("/register"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_oauth_error(response, 400, "invalid_client_metadata").await;
    assert_eq!(app.client_count().await, 0);
}

async fn registration_is_rate_limited_per_network(engine: Engine) {
    let app = TestApp::spawn_with(engine, |config| config.register_rate_limit = 3).await;
    for _ in 0..3 {
        app.register_public_client().await;
    }
    let response = app
        .register(&json!({"redirect_uris": [REDIRECT_URI]}))
        .await;
    let retry_after = retry_after(&response);
    assert!((1..=3600).contains(&retry_after), "{retry_after}");
    assert_oauth_error(response, 429, "temporarily_unavailable").await;
    assert_eq!(app.client_count().await, 3);
}

async fn an_oversized_registration_is_refused(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let response = app
        .register(&json!({"redirect_uris": [REDIRECT_URI], "padding": "x".repeat(20 * 1024)}))
        .await;
    assert_eq!(response.status(), 413);
    assert_eq!(app.client_count().await, 0);
}

async fn an_unused_registration_expires_after_a_day(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let client_id = app.register_public_client().await;
    let browser = app.signed_in(&user).await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    browser.open_consent(&path).await;

    app.clock
        .advance(time::Duration::hours(24) + time::Duration::minutes(1));
    let browser = app.signed_in(&user).await;
    let response = browser.open(&path).await;
    assert_eq!(response.status(), 400);
    assert!(response.headers().get("location").is_none());
    assert!(response.text().await.unwrap().contains("not known to Coop"));
}

async fn a_used_registration_does_not_expire(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    app.clock.advance(time::Duration::hours(48));
    let response = app.token(&tokens.refresh_request()).await;
    assert_eq!(response.status(), 200);
}

async fn housekeeping_deletes_unused_registrations(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    app.register_public_client().await;
    app.connect(&user, "farm:read").await;
    assert_eq!(app.client_count().await, 2);

    let store = coop::storage::Store::connect(&app.db.url).await.unwrap();
    let now = app.clock.now();
    let swept = coop::oauth::housekeeping::sweep(&store, now).await.unwrap();
    assert_eq!(swept.clients, 0);
    let later = now + time::Duration::hours(25);
    let swept = coop::oauth::housekeeping::sweep(&store, later)
        .await
        .unwrap();
    assert_eq!(swept.clients, 1);
    assert_eq!(app.client_count().await, 1);
}

async fn browsers_may_call_the_json_endpoints_cross_origin(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let preflight = app
        .preflight("/token", "http://localhost:6274", "content-type")
        .await;
    assert_eq!(preflight.status(), 204);
    assert_eq!(preflight.headers()["access-control-allow-origin"], "*");
    assert!(
        preflight
            .headers()
            .get("access-control-allow-credentials")
            .is_none()
    );
    let response = app
        .get_with(
            "/.well-known/oauth-authorization-server",
            ("origin", "http://localhost:6274"),
        )
        .await;
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    // The browser pages do not take part.
    let page = app.get("/login").await;
    assert!(page.headers().get("access-control-allow-origin").is_none());
}

/// The CORS headers of `response` (and `vary`), sorted: what a browser
/// decides by.
fn cors_headers(response: &reqwest::Response) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = response
        .headers()
        .iter()
        .filter(|(name, _)| name.as_str().starts_with("access-control-") || *name == "vary")
        .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()))
        .collect();
    found.sort();
    found
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

async fn a_web_page_may_not_register_through_its_visitors_browsers(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    // A page of any web site, or an opaque origin (a sandboxed frame, a
    // file): the preflight is refused, so the browser never sends the
    // JSON registration (threat 38).
    for origin in ["https://evil.example", "http://192.168.1.7:8080", "null"] {
        let preflight = app.preflight("/register", origin, "content-type").await;
        assert_eq!(preflight.status(), 403, "{origin}");
        assert_eq!(
            cors_headers(&preflight),
            pairs(&[("vary", "origin")]),
            "{origin}"
        );
    }
    // A page served from this computer, as the MCP Inspector's is: granted,
    // to that origin alone, never with credentials.
    for origin in ["http://localhost:6274", "http://127.0.0.1:6274"] {
        let preflight = app.preflight("/register", origin, "content-type").await;
        assert_eq!(preflight.status(), 204, "{origin}");
        assert_eq!(
            cors_headers(&preflight),
            pairs(&[
                (
                    "access-control-allow-headers",
                    "authorization, content-type, mcp-protocol-version, dpop"
                ),
                ("access-control-allow-methods", "GET, POST, OPTIONS"),
                ("access-control-allow-origin", origin),
                ("access-control-max-age", "600"),
                ("vary", "origin"),
            ]),
            "{origin}"
        );
    }
    // The answer to a registration names only such a page: a caller that
    // sends a foreign `Origin` without a browser (which sent no preflight)
    // is no browser's visitor, and meets the per-network limit alone.
    let body = json!({"redirect_uris": [REDIRECT_URI]});
    for (origin, allowed) in [
        ("https://evil.example", None),
        ("http://localhost:6274", Some("http://localhost:6274")),
    ] {
        let response = reqwest::Client::new()
            .post(app.url("/register"))
            .header("origin", origin)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201, "{origin}");
        let mut expected = vec![("vary", "origin")];
        expected.extend(allowed.map(|origin| ("access-control-allow-origin", origin)));
        expected.sort();
        assert_eq!(cors_headers(&response), pairs(&expected), "{origin}");
    }
    // The other JSON endpoints stay open to any page.
    let preflight = app
        .preflight("/token", "https://evil.example", "content-type")
        .await;
    assert_eq!(preflight.status(), 204);
    assert_eq!(preflight.headers()["access-control-allow-origin"], "*");
}
