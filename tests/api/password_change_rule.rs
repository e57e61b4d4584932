//! One rule for a password change: a person who must choose a new password
//! gets nothing issued until they have. `/authorize` and the consent form
//! send them to the change-password page
//! (`oauth_reconsent::a_person_who_must_change_their_password_gets_no_code_from_the_consent_form`),
//! `/mcp` refuses their tokens (`mcp_auth::a_user_who_must_change_password_is_refused`),
//! and `/token` exchanges none of their codes and refreshes none of their
//! tokens, spending nothing, so the same requests work once the change is
//! made.

use serde_json::Value;

use crate::helpers::oauth::assert_oauth_error;
use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(a_person_who_must_change_their_password_gets_no_token);

async fn a_person_who_must_change_their_password_gets_no_token(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    // A code issued before the change was required, not yet exchanged.
    let (code, verifier) = app
        .approved_code_for(&user, &tokens.client_id, "farm:read")
        .await;

    let (status, _, err) = app
        .cli(&["admin", "user", "require-password-change", &user.email])
        .await;
    assert_eq!(status, 0, "{err}");

    let response = app.exchange_code(&tokens.client_id, &code, &verifier).await;
    assert_oauth_error(response, 400, "invalid_grant").await;
    let response = app.token(&tokens.refresh_request()).await;
    assert_oauth_error(response, 400, "invalid_grant").await;

    // Nothing was spent or revoked: with the requirement lifted (here
    // straight in the store, since a real change also moves the credential
    // epoch and so ends these grants), both requests succeed.
    app.db_execute("update users set must_change_password = false")
        .await;
    let response = app.exchange_code(&tokens.client_id, &code, &verifier).await;
    assert_eq!(response.status(), 200);
    let response = app.token(&tokens.refresh_request()).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert!(body["access_token"].is_string());
}
