//! The registered `token_endpoint_auth_method` is the only one accepted, at
//! `/token` and at `/revoke` (RFC 7591 §2, RFC 7009 §2.2.1; threat 29).
//!
//! A client that registered `client_secret_basic` and sends its secret in
//! the body, one that registered `client_secret_post` and uses the Basic
//! header, and a public client sending a secret, each get 401
//! `invalid_client`; the refused request spends nothing (the code still
//! exchanges, the token stays valid).

use serde_json::Value;

use crate::helpers::oauth::{TokenRequest, assert_oauth_error};
use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(
    a_basic_client_sending_its_secret_in_the_body_is_refused_at_token,
    a_post_client_using_the_basic_header_is_refused_at_token,
    a_public_client_presenting_a_secret_is_refused_at_token_and_revoke,
    revocation_with_another_method_is_refused_and_the_token_stays_valid,
);

/// A fresh app, a confidential client that authenticates with `method`,
/// and the exchange of a manager's approved code for it, without the
/// client's authentication yet: (app, client_id, secret, exchange).
async fn confidential(engine: Engine, method: &str) -> (TestApp, String, String, TokenRequest) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let (client_id, secret) = app.register_confidential(method).await;
    let (code, verifier) = app.approved_code_for(&user, &client_id, "farm:read").await;
    let exchange = TokenRequest::confidential_code(&code, &verifier);
    (app, client_id, secret, exchange)
}

async fn a_basic_client_sending_its_secret_in_the_body_is_refused_at_token(engine: Engine) {
    let (app, client_id, secret, exchange) = confidential(engine, "client_secret_basic").await;

    let in_body = exchange
        .clone()
        .field("client_id", &client_id)
        .field("client_secret", &secret);
    let response = app.token(&in_body).await;
    assert!(response.headers().get("www-authenticate").is_none());
    assert_oauth_error(response, 401, "invalid_client").await;

    // Nothing was spent: the registered method exchanges the same code.
    let response = app.token(&exchange.basic(&client_id, &secret)).await;
    assert_eq!(response.status(), 200);
}

async fn a_post_client_using_the_basic_header_is_refused_at_token(engine: Engine) {
    let (app, client_id, secret, exchange) = confidential(engine, "client_secret_post").await;

    let response = app
        .token(&exchange.clone().basic(&client_id, &secret))
        .await;
    assert_eq!(
        response.headers()["www-authenticate"],
        "Basic realm=\"coop\""
    );
    assert_oauth_error(response, 401, "invalid_client").await;

    let in_body = exchange
        .field("client_id", &client_id)
        .field("client_secret", &secret);
    let response = app.token(&in_body).await;
    assert_eq!(response.status(), 200);
}

async fn a_public_client_presenting_a_secret_is_refused_at_token_and_revoke(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let id = tokens.client_id.as_str();
    let refresh = TokenRequest::fields(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", tokens.refresh_token.as_str()),
    ]);
    // A secret in the Basic header, then in the body.
    let response = app.token(&refresh.basic(id, "made-up")).await;
    assert_eq!(
        response.headers()["www-authenticate"],
        "Basic realm=\"coop\""
    );
    assert_oauth_error(response, 401, "invalid_client").await;
    let response = TokenRequest::fields(&[("token", &tokens.refresh_token)])
        .basic(id, "made-up")
        .send_to(&app, "/revoke")
        .await;
    assert_oauth_error(response, 401, "invalid_client").await;
    let response = TokenRequest::fields(&[
        ("client_id", id),
        ("client_secret", "made-up"),
        ("token", &tokens.refresh_token),
    ])
    .send_to(&app, "/revoke")
    .await;
    assert_oauth_error(response, 401, "invalid_client").await;
    // The grant was not touched.
    let response = app.refresh(id, &tokens.refresh_token).await;
    assert_eq!(response.status(), 200);
}

async fn revocation_with_another_method_is_refused_and_the_token_stays_valid(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    for method in ["client_secret_basic", "client_secret_post"] {
        let (client_id, secret) = app.register_confidential(method).await;
        let (code, verifier) = app.approved_code_for(&user, &client_id, "farm:read").await;
        let (id, secret) = (client_id.as_str(), secret.as_str());
        let basic = method == "client_secret_basic";
        // Authenticates with the registered method when `right`, else the other.
        let send = |path: &'static str, request: TokenRequest, right: bool| {
            let app = &app;
            async move {
                let request = if basic == right {
                    request.basic(id, secret)
                } else {
                    request
                        .field("client_id", id)
                        .field("client_secret", secret)
                };
                request.send_to(app, path).await
            }
        };
        let refresh = |refresh_token: &str| {
            TokenRequest::fields(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
            ])
        };
        let revoke = |token: &str| TokenRequest::fields(&[("token", token)]);
        let exchange = TokenRequest::confidential_code(&code, &verifier);
        let response = send("/token", exchange, true).await;
        assert_eq!(response.status(), 200, "{method}");
        let body: Value = response.json().await.unwrap();
        let refresh_token = body["refresh_token"].as_str().unwrap().to_owned();

        let response = send("/revoke", revoke(&refresh_token), false).await;
        assert_oauth_error(response, 401, "invalid_client").await;
        // Still valid: a refresh with the registered method works.
        let response = send("/token", refresh(&refresh_token), true).await;
        assert_eq!(
            response.status(),
            200,
            "{method}: the refused revoke ended the grant"
        );
        let body: Value = response.json().await.unwrap();
        let refresh_token = body["refresh_token"].as_str().unwrap().to_owned();
        // The registered method revokes.
        let response = send("/revoke", revoke(&refresh_token), true).await;
        assert_eq!(response.status(), 200);
        let response = send("/token", refresh(&refresh_token), true).await;
        assert_oauth_error(response, 400, "invalid_grant").await;
    }
}
