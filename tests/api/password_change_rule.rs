//! One rule for a password change: a person who must choose a new password
//! gets nothing issued until they have. `/authorize` and the consent form
//! send them to the change-password page
//! (`oauth_reconsent::a_person_who_must_change_their_password_gets_no_code_from_the_consent_form`),
//! `/mcp` refuses their tokens (`mcp_auth::a_user_who_must_change_password_is_refused`),
//! and `/token` exchanges none of their codes and refreshes none of their
//! tokens, spending nothing, so the same requests work once the change is
//! made.

use serde_json::Value;

use crate::helpers::{Engine, TestApp};
use crate::oauth_client::{
    self, Pkce, answer_consent, assert_oauth_error, authorize_path, callback, db_execute,
    exchange_code, open_consent, sign_in_browser,
};
use crate::on_both_engines;

on_both_engines!(a_person_who_must_change_their_password_gets_no_token);

async fn a_person_who_must_change_their_password_gets_no_token(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let user = app.farm_with_member("manager").await;
    let tokens = oauth_client::connect(&app, &user, "farm:read").await;
    // A code issued before the change was required, not yet exchanged.
    let browser = sign_in_browser(&app, &user).await;
    let pkce = Pkce::new();
    let path = authorize_path(&app, &tokens.client_id, &pkce, "farm:read", &[]);
    let html = open_consent(&app, &browser, &path).await;
    let response = answer_consent(&app, &browser, &html, "approve", &["farm:read"]).await;
    let code = callback(&response)["code"].clone();

    let (status, _, err) = app
        .cli(&["admin", "user", "require-password-change", &user.email])
        .await;
    assert_eq!(status, 0, "{err}");

    let response = exchange_code(&app, &tokens.client_id, &code, &pkce.verifier).await;
    assert_oauth_error(response, 400, "invalid_grant").await;
    let response = oauth_client::refresh(&app, &tokens.client_id, &tokens.refresh_token).await;
    assert_oauth_error(response, 400, "invalid_grant").await;

    // Nothing was spent or revoked: with the requirement lifted (here
    // straight in the store, since a real change also moves the credential
    // epoch and so ends these grants), both requests succeed.
    db_execute(&app, "update users set must_change_password = false").await;
    let response = exchange_code(&app, &tokens.client_id, &code, &pkce.verifier).await;
    assert_eq!(response.status(), 200);
    let response = oauth_client::refresh(&app, &tokens.client_id, &tokens.refresh_token).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert!(body["access_token"].is_string());
}
