//! What the connected-apps, admin, replica and browser tests share: a farm
//! with an owner and a worker, page fetches and form posts with the CSRF
//! token the page carried, and the one assertion of "this grant is cut
//! off": the next MCP call with its access token is 401 `invalid_token`,
//! and its refresh token is refused with `invalid_grant`.
#![allow(dead_code)]

use crate::helpers::{TestApp, TestUser, form_value};
use crate::oauth_client::{self, Tokens, assert_oauth_error};

pub struct Farm {
    pub slug: String,
    pub owner: TestUser,
    pub worker: TestUser,
}

pub const PASSWORD: &str = "correct horse battery staple";

/// A farm named `name` with owner@ and worker@ (email domain from the slug).
pub async fn farm(app: &TestApp, name: &str) -> Farm {
    let slug = app.add_farm(name).await;
    let member = |role: &str| TestUser {
        farm: slug.clone(),
        email: format!("{role}@{slug}.example"),
        password: PASSWORD.to_owned(),
    };
    let owner = member("owner");
    let worker = member("worker");
    app.add_user(&slug, &owner.email, "owner", PASSWORD).await;
    app.add_user(&slug, &worker.email, "worker", PASSWORD).await;
    Farm {
        slug,
        owner,
        worker,
    }
}

/// House "North" on `farm` with a flock of each name in it.
pub async fn add_flocks(app: &TestApp, farm: &Farm, names: &[&str]) {
    crate::mcp_support::admin(
        app,
        &["house", "add", "--farm", &farm.slug, "--name", "North"],
    )
    .await;
    for name in names {
        crate::mcp_support::add_flock(app, &farm.slug, "North", name).await;
    }
}

/// GET with a browser; (status, body).
pub async fn page(browser: &reqwest::Client, app: &TestApp, path: &str) -> (u16, String) {
    let response = browser.get(app.url(path)).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// The CSRF token the page at `path` carries.
pub async fn csrf(browser: &reqwest::Client, app: &TestApp, path: &str) -> String {
    let (status, html) = page(browser, app, path).await;
    assert_eq!(status, 200, "{path}: {html}");
    form_value(&html, "csrf").expect("a csrf field")
}

/// POSTs a form as the browser would (our own Origin).
pub async fn post(
    browser: &reqwest::Client,
    app: &TestApp,
    path: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    browser
        .post(app.url(path))
        .header("origin", &app.issuer)
        .form(form)
        .send()
        .await
        .unwrap()
}

/// Asserts a page refusal: the status and words of the error page.
pub async fn assert_page(response: reqwest::Response, status: u16, words: &str) {
    assert_eq!(response.status().as_u16(), status);
    let body = response.text().await.unwrap();
    assert!(body.contains(words), "expected {words:?} in {body}");
}

/// `tools/list` at `app`'s `/mcp` with `token`. `Host` is the issuer's
/// authority, as behind a load balancer: a replica reached on its own port
/// still serves the one public origin.
pub async fn mcp_list(app: &TestApp, token: &str) -> reqwest::Response {
    let authority = app
        .issuer
        .split_once("://")
        .map(|(_, rest)| rest.to_owned())
        .unwrap();
    reqwest::Client::new()
        .post(app.url("/mcp"))
        .header("host", authority)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2025-11-25")
        .bearer_auth(token)
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
        .send()
        .await
        .unwrap()
}

/// The grant works: the next MCP call is answered, and a refresh succeeds
/// (the new tokens replace the old).
pub async fn assert_works(app: &TestApp, tokens: &mut Tokens) {
    let response = mcp_list(app, &tokens.access_token).await;
    assert_eq!(response.status(), 200, "the MCP call should be answered");
    let response = oauth_client::refresh(app, &tokens.client_id, &tokens.refresh_token).await;
    assert_eq!(response.status(), 200, "the grant should still work");
    let body: serde_json::Value = response.json().await.unwrap();
    tokens.access_token = body["access_token"].as_str().unwrap().to_owned();
    tokens.refresh_token = body["refresh_token"].as_str().unwrap().to_owned();
}

/// The grant is cut off: the very next MCP call with its access token is
/// 401 `invalid_token` with the exact challenge, and its refresh token is
/// refused with `invalid_grant`.
pub async fn assert_cut_off(app: &TestApp, tokens: &Tokens) {
    let response = mcp_list(app, &tokens.access_token).await;
    assert_eq!(
        response.status(),
        401,
        "the next MCP call should be refused"
    );
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    assert_eq!(
        challenge,
        format!(
            r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp", error="invalid_token""#,
            app.issuer
        )
    );
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"], "invalid_token", "{body}");
    let response = oauth_client::refresh(app, &tokens.client_id, &tokens.refresh_token).await;
    assert_oauth_error(response, 400, "invalid_grant").await;
}

/// The grant id of the only active grant of `email`.
pub async fn grant_of(app: &TestApp, email: &str) -> String {
    let (code, out, err) = app.cli(&["admin", "apps", "list", "--user", email]).await;
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    lines[0].split('\t').next().unwrap().to_owned()
}
