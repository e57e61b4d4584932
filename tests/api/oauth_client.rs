//! Tokens through the real flow, for any test that needs them.
//!
//! ```ignore
//! let user = app.farm_with_member("manager").await;
//! let tokens = oauth_client::connect(&app, &user, "farm:read daily-entries:write").await;
//! // tokens.access_token: a real JWT for `<issuer>/mcp`
//! // tokens.refresh_token, tokens.client_id, tokens.scope, tokens.expires_in
//! ```
//!
//! [`connect`] does what an MCP client and a person do, over HTTP:
//! registers a public client at `/register` (redirect URI
//! [`REDIRECT_URI`]), signs the person in with a fresh cookie jar, opens
//! `/authorize` with PKCE S256, the `resource` `<issuer>/mcp` and the asked
//! scopes, approves the consent form by POST ticking exactly those scopes,
//! reads the code off the redirect, and exchanges it at `/token`. Nothing is
//! shortcut through the database.
//!
//! The building blocks are public too, for tests of the individual steps:
//! [`register_public_client`], [`sign_in_browser`], [`Pkce`],
//! [`authorize_path`], [`open_consent`], [`answer_consent`],
//! [`callback`], [`exchange_code`], [`refresh`], [`revoke`],
//! [`token_request`].
#![allow(dead_code)]

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestUser, browser, form_value, location};

/// The redirect URI the helper registers: a loopback address nothing
/// listens on (the tests read the code off the `Location` header).
pub const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

/// What [`connect`] obtains.
#[derive(Clone, Debug)]
pub struct Tokens {
    pub access_token: String,
    pub refresh_token: String,
    pub client_id: String,
    /// Space-separated granted scopes, as `/token` answered.
    pub scope: String,
    pub expires_in: i64,
    pub redirect_uri: String,
}

/// A PKCE verifier and its S256 challenge.
#[derive(Clone, Debug)]
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    pub fn new() -> Self {
        let verifier = coop::secrets::random_token(32);
        let challenge = coop::oauth::pkce::s256(&verifier);
        Self {
            verifier,
            challenge,
        }
    }
}

impl Default for Pkce {
    fn default() -> Self {
        Self::new()
    }
}

/// `POST /register` with `body`; returns the raw response.
pub async fn register(app: &TestApp, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(app.url("/register"))
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Registers a public client with [`REDIRECT_URI`]; returns its client_id.
pub async fn register_public_client(app: &TestApp) -> String {
    let response = register(
        app,
        &json!({
            "client_name": "Test Assistant",
            "redirect_uris": [REDIRECT_URI],
            "token_endpoint_auth_method": "none",
        }),
    )
    .await;
    assert_eq!(response.status(), 201);
    let body: Value = response.json().await.unwrap();
    body["client_id"].as_str().unwrap().to_owned()
}

/// A fresh browser (its own cookie jar), signed in as `user`.
pub async fn sign_in_browser(app: &TestApp, user: &TestUser) -> reqwest::Client {
    let browser = browser();
    let page = browser
        .get(app.url("/login"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let csrf = form_value(&page, "csrf").unwrap();
    let response = browser
        .post(app.url("/login"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("email", user.email.as_str()),
            ("password", user.password.as_str()),
            ("return_to", "/"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303, "sign-in failed");
    browser
}

/// `/authorize?…` for `client_id` with the usual parameters (response_type
/// code, [`REDIRECT_URI`], PKCE S256, the MCP resource, `scope`, `state`)
/// plus/replacing `overrides` (a value of `None` removes the parameter).
pub fn authorize_path(
    app: &TestApp,
    client_id: &str,
    pkce: &Pkce,
    scope: &str,
    overrides: &[(&str, Option<&str>)],
) -> String {
    let resource = format!("{}/mcp", app.issuer);
    let mut params: Vec<(String, String)> = vec![
        ("response_type".into(), "code".into()),
        ("client_id".into(), client_id.into()),
        ("redirect_uri".into(), REDIRECT_URI.into()),
        ("code_challenge".into(), pkce.challenge.clone()),
        ("code_challenge_method".into(), "S256".into()),
        ("resource".into(), resource),
        ("scope".into(), scope.into()),
        ("state".into(), "state-123".into()),
    ];
    for (name, value) in overrides {
        params.retain(|(k, _)| k != name);
        if let Some(value) = value {
            params.push(((*name).into(), (*value).into()));
        }
    }
    format!(
        "/authorize?{}",
        serde_urlencoded::to_string(&params).unwrap()
    )
}

/// GETs an authorization path with a signed-in browser and returns the
/// consent page's HTML (asserting it is one).
pub async fn open_consent(app: &TestApp, browser: &reqwest::Client, path: &str) -> String {
    let response = browser.get(app.url(path)).send().await.unwrap();
    assert_eq!(
        response.status(),
        200,
        "expected the consent page for {path}"
    );
    let html = response.text().await.unwrap();
    assert!(
        html.contains("name=\"decision\""),
        "not a consent page: {html}"
    );
    html
}

/// Answers a consent page: `decision` is "approve" or "deny", `scopes` the
/// ticked boxes. Returns the raw response (a 303 to the client on success).
pub async fn answer_consent(
    app: &TestApp,
    browser: &reqwest::Client,
    consent_html: &str,
    decision: &str,
    scopes: &[&str],
) -> reqwest::Response {
    let csrf = form_value(consent_html, "csrf").unwrap();
    let request = form_value(consent_html, "request").unwrap();
    let mut form: Vec<(&str, &str)> = vec![
        ("csrf", csrf.as_str()),
        ("request", request.as_str()),
        ("decision", decision),
    ];
    for scope in scopes {
        form.push(("scope", scope));
    }
    browser
        .post(app.url("/authorize/consent"))
        .form(&form)
        .send()
        .await
        .unwrap()
}

/// The query parameters of a redirect to the client, asserting the
/// redirect goes to [`REDIRECT_URI`].
pub fn callback(response: &reqwest::Response) -> HashMap<String, String> {
    assert_eq!(response.status(), 303, "expected a redirect to the client");
    let target = location(response);
    let url = url::Url::parse(&target).unwrap();
    assert_eq!(
        format!("{}://{}{}", url.scheme(), url.authority(), url.path()),
        REDIRECT_URI,
        "{target}"
    );
    url.query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// `POST /token` with these form fields and no client authentication.
pub async fn token_request(app: &TestApp, form: &[(&str, &str)]) -> reqwest::Response {
    reqwest::Client::new()
        .post(app.url("/token"))
        .form(form)
        .send()
        .await
        .unwrap()
}

/// Exchanges a code as a public client, with the MCP resource.
pub async fn exchange_code(
    app: &TestApp,
    client_id: &str,
    code: &str,
    verifier: &str,
) -> reqwest::Response {
    let resource = format!("{}/mcp", app.issuer);
    token_request(
        app,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", client_id),
            ("code", code),
            ("code_verifier", verifier),
            ("redirect_uri", REDIRECT_URI),
            ("resource", &resource),
        ],
    )
    .await
}

/// Refreshes as a public client.
pub async fn refresh(app: &TestApp, client_id: &str, refresh_token: &str) -> reqwest::Response {
    token_request(
        app,
        &[
            ("grant_type", "refresh_token"),
            ("client_id", client_id),
            ("refresh_token", refresh_token),
        ],
    )
    .await
}

/// Revokes as a public client.
pub async fn revoke(app: &TestApp, client_id: &str, token: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(app.url("/revoke"))
        .form(&[("client_id", client_id), ("token", token)])
        .send()
        .await
        .unwrap()
}

/// The whole flow with a new public client; see the module documentation.
pub async fn connect(app: &TestApp, user: &TestUser, scopes: &str) -> Tokens {
    let client_id = register_public_client(app).await;
    connect_client(app, user, &client_id, scopes).await
}

/// The whole flow for an already registered public client.
pub async fn connect_client(
    app: &TestApp,
    user: &TestUser,
    client_id: &str,
    scopes: &str,
) -> Tokens {
    let browser = sign_in_browser(app, user).await;
    let pkce = Pkce::new();
    let path = authorize_path(app, client_id, &pkce, scopes, &[]);
    let html = open_consent(app, &browser, &path).await;
    let ticked: Vec<&str> = scopes.split_whitespace().collect();
    let response = answer_consent(app, &browser, &html, "approve", &ticked).await;
    let params = callback(&response);
    let code = params.get("code").expect("a code in the redirect");
    let response = exchange_code(app, client_id, code, &pkce.verifier).await;
    assert_eq!(response.status(), 200, "code exchange failed");
    let body: Value = response.json().await.unwrap();
    Tokens {
        access_token: body["access_token"].as_str().unwrap().to_owned(),
        refresh_token: body["refresh_token"].as_str().unwrap().to_owned(),
        client_id: client_id.to_owned(),
        scope: body["scope"].as_str().unwrap().to_owned(),
        expires_in: body["expires_in"].as_i64().unwrap(),
        redirect_uri: REDIRECT_URI.to_owned(),
    }
}

/// The claims of a JWT, unverified (tests check what Coop put in them).
pub fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

/// The header of a JWT.
pub fn jwt_header(jwt: &str) -> Value {
    let header = jwt.split('.').next().unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap()
}

/// Runs a query returning one integer against the app's database
/// (for assertions about what a refused request left behind).
pub async fn db_count(app: &TestApp, sql: &str) -> i64 {
    use coop::config::DatabaseUrl;
    match &app.db.url {
        DatabaseUrl::Sqlite(url) => {
            let pool = sqlx::SqlitePool::connect(url).await.unwrap();
            let n: i64 = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
            pool.close().await;
            n
        }
        DatabaseUrl::Postgres(url) => {
            let pool = sqlx::PgPool::connect(url).await.unwrap();
            let n: i64 = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
            pool.close().await;
            n
        }
    }
}

/// The one text value `sql` selects.
pub async fn db_text(app: &TestApp, sql: &str) -> String {
    use coop::config::DatabaseUrl;
    match &app.db.url {
        DatabaseUrl::Sqlite(url) => {
            let pool = sqlx::SqlitePool::connect(url).await.unwrap();
            let v: String = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
            pool.close().await;
            v
        }
        DatabaseUrl::Postgres(url) => {
            let pool = sqlx::PgPool::connect(url).await.unwrap();
            let v: String = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
            pool.close().await;
            v
        }
    }
}

/// Runs a statement against the app's database (to break or mend it).
pub async fn db_execute(app: &TestApp, sql: &str) {
    use coop::config::DatabaseUrl;
    match &app.db.url {
        DatabaseUrl::Sqlite(url) => {
            let pool = sqlx::SqlitePool::connect(url).await.unwrap();
            sqlx::query(sql).execute(&pool).await.unwrap();
            pool.close().await;
        }
        DatabaseUrl::Postgres(url) => {
            let pool = sqlx::PgPool::connect(url).await.unwrap();
            sqlx::query(sql).execute(&pool).await.unwrap();
            pool.close().await;
        }
    }
}

/// How many audit entries of `kind` exist.
pub async fn audit_count(app: &TestApp, kind: &str) -> i64 {
    db_count(
        app,
        &format!("select count(*) from audit_log where kind = '{kind}'"),
    )
    .await
}

/// Asserts a JSON OAuth error: status, `error` code, `Cache-Control:
/// no-store`. Returns the body.
pub async fn assert_oauth_error(response: reqwest::Response, status: u16, code: &str) -> Value {
    assert_eq!(response.status(), status, "expected {status} {code}");
    assert_eq!(
        response
            .headers()
            .get("cache-control")
            .map(|v| v.to_str().unwrap()),
        Some("no-store"),
        "{code} without no-store"
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], code, "{body}");
    assert!(body["error_description"].is_string(), "{body}");
    body
}
