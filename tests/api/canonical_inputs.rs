//! Canonical inputs at registration (threat 1, threat 14): redirect URIs
//! the URL parser would rewrite, client names that disguise themselves,
//! bodies a cross-site page could send, and JSON naming a member twice are
//! refused with nothing stored; names are isolated on every page.

use serde_json::{Value, json};

use crate::helpers::oauth::{Pkce, REDIRECT_URI, assert_oauth_error, callback};
use crate::helpers::{Engine, TestApp, location};
use crate::on_both_engines;

on_both_engines!(
    non_canonical_redirect_uris_are_refused_and_nothing_is_stored,
    a_registered_redirect_uri_is_stored_in_canonical_form,
    a_requested_redirect_uri_the_parser_would_rewrite_matches_nothing,
    names_with_bidi_or_invisible_characters_are_refused,
    client_names_are_isolated_on_every_page,
    only_json_bodies_may_register,
    a_member_named_twice_is_refused,
);

async fn non_canonical_redirect_uris_are_refused_and_nothing_is_stored(engine: Engine) {
    // More registrations than an address may make in an hour.
    let app = TestApp::spawn_with(engine, |config| config.register_rate_limit = 0).await;
    for uri in [
        "https://app.example/cb\r\nSet-Cookie: x=1",
        "https://app.example/c\nb",
        "http://127.0.0.1:9/call\tback",
        " https://app.example/cb",
        "https://app.example/cb ",
        "https://app.example\\cb",
        "https:\\\\app.example/cb",
        "https:///cb",
        "https:app.example/cb",
        "HTTPS://APP.example/cb",
        "https://app.example:443/cb",
        "https://app.example/a/../cb",
        "https://app.example",
    ] {
        let response = app.register(&json!({"redirect_uris": [uri]})).await;
        let body = assert_oauth_error(response, 400, "invalid_redirect_uri").await;
        assert!(
            body["error_description"]
                .as_str()
                .unwrap()
                .contains("canonical"),
            "{uri:?}: {body}"
        );
        // A canonical URI beside it does not carry it through.
        let response = app
            .register(&json!({"redirect_uris": ["https://app.example/cb", uri]}))
            .await;
        assert_oauth_error(response, 400, "invalid_redirect_uri").await;
    }
    assert_eq!(app.client_count().await, 0);
    // The command line refuses them the same way, on one line.
    let (code, out, err) = app
        .cli(&[
            "admin",
            "client",
            "add",
            "--name",
            "Office",
            "--redirect-uri",
            "https://app.example/c\nb",
        ])
        .await;
    assert_eq!(code, 1, "{out}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("canonical"), "{err}");
    assert_eq!(app.client_count().await, 0);
}

async fn a_registered_redirect_uri_is_stored_in_canonical_form(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let uri = "https://xn--bcher-kva.example/cb?x=%20y";
    let response = app.register(&json!({"redirect_uris": [uri, uri]})).await;
    assert_eq!(response.status(), 201);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["redirect_uris"], json!([uri]));
    let stored = app.db_text("select redirect_uris from oauth_clients").await;
    let stored: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(stored, json!([uri]));
}

async fn a_requested_redirect_uri_the_parser_would_rewrite_matches_nothing(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let client_id = app.register_public_client().await;
    let browser = app.signed_in(&user).await;
    // REDIRECT_URI is http://127.0.0.1:9/callback: a loopback URI, which
    // matches with any port, so each of these parses to a match.
    for requested in [
        "http://127.0.0.1:5000/call\tback",
        "http://127.0.0.1:5000/callback\n",
        " http://127.0.0.1:5000/callback",
        "http://127.0.0.1:5000\\callback",
        "HTTP://127.0.0.1:5000/callback",
    ] {
        let pkce = Pkce::new();
        let path = app.authorize_path(
            &client_id,
            &pkce,
            "farm:read",
            &[("redirect_uri", Some(requested))],
        );
        let response = browser.open(&path).await;
        assert_eq!(response.status(), 400, "{requested:?}");
        assert!(
            response.headers().get("location").is_none(),
            "{requested:?}: {}",
            location(&response)
        );
    }
    // The registered URI itself still works.
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let html = browser.open_consent(&path).await;
    let response = browser.accept(&html, &["farm:read"]).await;
    assert!(callback(&response).contains_key("code"));
}

async fn names_with_bidi_or_invisible_characters_are_refused(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    for name in [
        "Trusted\u{202E}ppA",
        "\u{202D}Claude",
        "\u{2067}Claude\u{2069}",
        "Claude\u{2066}",
        "Cl\u{200B}aude",
        "Cl\u{200D}aude",
        "Claude\u{FEFF}",
        "Cl\u{00AD}aude",
        "Claude\u{200F}",
        "Claude\u{2028}Desktop",
    ] {
        let response = app
            .register(&json!({"redirect_uris": [REDIRECT_URI], "client_name": name}))
            .await;
        assert_oauth_error(response, 400, "invalid_client_metadata").await;
    }
    assert_eq!(app.client_count().await, 0);
    // A right-to-left name is a name like any other.
    let response = app
        .register(&json!({"redirect_uris": [REDIRECT_URI], "client_name": "مساعد المزرعة"}))
        .await;
    assert_eq!(response.status(), 201);
}

async fn client_names_are_isolated_on_every_page(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    let name = "מסייע";
    let response = app
        .register(&json!({"redirect_uris": [REDIRECT_URI], "client_name": name}))
        .await;
    let body: Value = response.json().await.unwrap();
    let client_id = body["client_id"].as_str().unwrap().to_owned();
    let isolated = format!("<bdi>{name}</bdi>");
    // Where no element may go (a title, an option), the isolate characters.
    let in_text = format!("&#x2068;{name}&#x2069;");

    let browser = app.signed_in(&user).await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let html = browser.open_consent(&path).await;
    assert_eq!(html.matches(&isolated).count(), 2, "{html}");
    assert!(
        html.contains(&format!("<title>Connect {in_text}")),
        "{html}"
    );
    assert!(
        !html
            .replace(&isolated, "")
            .replace(&in_text, "")
            .contains(name)
    );
    let response = browser.accept(&html, &["farm:read"]).await;
    assert!(callback(&response).contains_key("code"));

    let grant = app.grant_of(&user.email).await;
    for path in [
        "/account/apps".to_owned(),
        format!("/account/apps/{grant}/disconnect"),
        "/admin".to_owned(),
        format!("/admin/apps/{grant}/disconnect"),
        "/admin/audit".to_owned(),
    ] {
        let html = browser.text(&path).await;
        assert!(html.contains(&isolated), "{path}: {html}");
        let rest = html.replace(&isolated, "").replace(&in_text, "");
        assert!(!rest.contains(name), "{path}: the name shown bare: {html}");
    }
}

async fn only_json_bodies_may_register(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let body = json!({"redirect_uris": ["https://app.example/cb"]}).to_string();
    for content_type in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/jsonp"),
        None,
    ] {
        let mut request = reqwest::Client::new()
            .post(app.url("/register"))
            .header("origin", "https://evil.example")
            .body(body.clone());
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let response = request.send().await.unwrap();
        assert_oauth_error(response, 415, "invalid_request").await;
    }
    assert_eq!(app.client_count().await, 0);
    // application/json, with a charset, is taken.
    let response = reqwest::Client::new()
        .post(app.url("/register"))
        .header("content-type", "application/json; charset=utf-8")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
}

async fn a_member_named_twice_is_refused(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    for body in [
        r#"{"redirect_uris": ["https://app.example/cb"], "redirect_uris": ["https://evil.example/cb"]}"#,
        r#"{"redirect_uris": ["https://app.example/cb"], "client_name": "Office", "client_name": "Claude"}"#,
        r#"{"redirect_uris": ["https://app.example/cb"], "token_endpoint_auth_method": "none", "token_endpoint_\u0061uth_method": "client_secret_post"}"#,
        r#"{"redirect_uris": ["https://app.example/cb"], "jwks": {"keys": [], "keys": []}}"#,
    ] {
        let response = reqwest::Client::new()
            .post(app.url("/register"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_oauth_error(response, 400, "invalid_client_metadata").await;
    }
    assert_eq!(app.client_count().await, 0);
}
