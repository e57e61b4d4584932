//! The registered `token_endpoint_auth_method` is the only one accepted, at
//! `/token` and at `/revoke` (RFC 7591 §2, RFC 7009 §2.2.1; threat 29).
//!
//! A client that registered `client_secret_basic` and sends its secret in
//! the body, one that registered `client_secret_post` and uses the Basic
//! header, and a public client sending a secret, each get 401
//! `invalid_client`; the refused request spends nothing (the code still
//! exchanges, the token stays valid).

use serde_json::{Value, json};

use crate::helpers::{Engine, TestApp, TestUser};
use crate::oauth_client::{
    self, Pkce, REDIRECT_URI, answer_consent, assert_oauth_error, authorize_path, callback,
    sign_in_browser,
};
use crate::on_both_engines;

on_both_engines!(
    a_basic_client_sending_its_secret_in_the_body_is_refused_at_token,
    a_post_client_using_the_basic_header_is_refused_at_token,
    a_public_client_presenting_a_secret_is_refused_at_token_and_revoke,
    revocation_with_another_method_is_refused_and_the_token_stays_valid,
);

/// Registers a confidential client with `method`; (client_id, secret).
async fn register(app: &TestApp, method: &str) -> (String, String) {
    let response = oauth_client::register(
        app,
        &json!({
            "client_name": "Server App",
            "redirect_uris": [REDIRECT_URI],
            "token_endpoint_auth_method": method,
        }),
    )
    .await;
    assert_eq!(response.status(), 201);
    let body: Value = response.json().await.unwrap();
    (
        body["client_id"].as_str().unwrap().to_owned(),
        body["client_secret"].as_str().unwrap().to_owned(),
    )
}

/// A code for `client_id` through sign-in and consent.
async fn code_for(app: &TestApp, user: &TestUser, client_id: &str) -> (String, Pkce) {
    let browser = sign_in_browser(app, user).await;
    let pkce = Pkce::new();
    let path = authorize_path(app, client_id, &pkce, "farm:read", &[]);
    let response = browser.get(app.url(&path)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let html = response.text().await.unwrap();
    let response = answer_consent(app, &browser, &html, "approve", &["farm:read"]).await;
    (callback(&response)["code"].clone(), pkce)
}

fn code_form<'a>(code: &'a str, pkce: &'a Pkce) -> Vec<(&'static str, &'a str)> {
    vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("code_verifier", &pkce.verifier),
    ]
}

/// `POST path` with `form`, with the Basic header when `basic` is given.
async fn post(
    app: &TestApp,
    path: &str,
    basic: Option<(&str, &str)>,
    form: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = reqwest::Client::new().post(app.url(path));
    if let Some((id, secret)) = basic {
        request = request.basic_auth(id, Some(secret));
    }
    request.form(form).send().await.unwrap()
}

async fn a_basic_client_sending_its_secret_in_the_body_is_refused_at_token(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let user = app.farm_with_member("manager").await;
    let (client_id, secret) = register(&app, "client_secret_basic").await;
    let (code, pkce) = code_for(&app, &user, &client_id).await;

    let mut form = code_form(&code, &pkce);
    form.extend([
        ("client_id", client_id.as_str()),
        ("client_secret", &secret),
    ]);
    let response = post(&app, "/token", None, &form).await;
    assert!(response.headers().get("www-authenticate").is_none());
    assert_oauth_error(response, 401, "invalid_client").await;

    // Nothing was spent: the registered method exchanges the same code.
    let response = post(
        &app,
        "/token",
        Some((&client_id, &secret)),
        &code_form(&code, &pkce),
    )
    .await;
    assert_eq!(response.status(), 200);
}

async fn a_post_client_using_the_basic_header_is_refused_at_token(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let user = app.farm_with_member("manager").await;
    let (client_id, secret) = register(&app, "client_secret_post").await;
    let (code, pkce) = code_for(&app, &user, &client_id).await;

    let response = post(
        &app,
        "/token",
        Some((&client_id, &secret)),
        &code_form(&code, &pkce),
    )
    .await;
    assert_eq!(
        response.headers()["www-authenticate"],
        "Basic realm=\"coop\""
    );
    assert_oauth_error(response, 401, "invalid_client").await;

    let mut form = code_form(&code, &pkce);
    form.extend([
        ("client_id", client_id.as_str()),
        ("client_secret", &secret),
    ]);
    let response = post(&app, "/token", None, &form).await;
    assert_eq!(response.status(), 200);
}

async fn a_public_client_presenting_a_secret_is_refused_at_token_and_revoke(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let user = app.farm_with_member("manager").await;
    let tokens = oauth_client::connect(&app, &user, "farm:read").await;
    let id = tokens.client_id.as_str();
    let refresh = [
        ("grant_type", "refresh_token"),
        ("refresh_token", tokens.refresh_token.as_str()),
    ];
    // A secret in the Basic header, then in the body.
    let response = post(&app, "/token", Some((id, "made-up")), &refresh).await;
    assert_eq!(
        response.headers()["www-authenticate"],
        "Basic realm=\"coop\""
    );
    assert_oauth_error(response, 401, "invalid_client").await;
    let response = post(
        &app,
        "/revoke",
        Some((id, "made-up")),
        &[("token", &tokens.refresh_token)],
    )
    .await;
    assert_oauth_error(response, 401, "invalid_client").await;
    let response = post(
        &app,
        "/revoke",
        None,
        &[
            ("client_id", id),
            ("client_secret", "made-up"),
            ("token", &tokens.refresh_token),
        ],
    )
    .await;
    assert_oauth_error(response, 401, "invalid_client").await;
    // The grant was not touched.
    let response = oauth_client::refresh(&app, id, &tokens.refresh_token).await;
    assert_eq!(response.status(), 200);
}

async fn revocation_with_another_method_is_refused_and_the_token_stays_valid(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let user = app.farm_with_member("manager").await;
    for method in ["client_secret_basic", "client_secret_post"] {
        let (client_id, secret) = register(&app, method).await;
        let (code, pkce) = code_for(&app, &user, &client_id).await;
        let (id, secret) = (client_id.as_str(), secret.as_str());
        let basic = method == "client_secret_basic";
        // Authenticates with the registered method when `right`, else the other.
        let send = |path: &'static str, form: Vec<(&'static str, String)>, right: bool| {
            let app = &app;
            async move {
                let mut form: Vec<(&str, &str)> =
                    form.iter().map(|(k, v)| (*k, v.as_str())).collect();
                if basic == right {
                    post(app, path, Some((id, secret)), &form).await
                } else {
                    form.extend([("client_id", id), ("client_secret", secret)]);
                    post(app, path, None, &form).await
                }
            }
        };
        let code_fields = code_form(&code, &pkce)
            .into_iter()
            .map(|(k, v)| (k, v.to_owned()))
            .collect();
        let response = send("/token", code_fields, true).await;
        assert_eq!(response.status(), 200, "{method}");
        let body: Value = response.json().await.unwrap();
        let refresh_token = body["refresh_token"].as_str().unwrap().to_owned();

        let response = send("/revoke", vec![("token", refresh_token.clone())], false).await;
        assert_oauth_error(response, 401, "invalid_client").await;
        // Still valid: a refresh with the registered method works.
        let response = send(
            "/token",
            vec![
                ("grant_type", "refresh_token".into()),
                ("refresh_token", refresh_token),
            ],
            true,
        )
        .await;
        assert_eq!(
            response.status(),
            200,
            "{method}: the refused revoke ended the grant"
        );
        let body: Value = response.json().await.unwrap();
        let refresh_token = body["refresh_token"].as_str().unwrap().to_owned();
        // The registered method revokes.
        let response = send("/revoke", vec![("token", refresh_token.clone())], true).await;
        assert_eq!(response.status(), 200);
        let response = send(
            "/token",
            vec![
                ("grant_type", "refresh_token".into()),
                ("refresh_token", refresh_token),
            ],
            true,
        )
        .await;
        assert_oauth_error(response, 400, "invalid_grant").await;
    }
}
