//! The whole authorization flow driven by a real OAuth client library, the
//! `oauth2` crate (v5, its own HTTP clients off, given a reqwest transport):
//! discovery from the metadata document, dynamic registration, PKCE S256,
//! consent by form post, the code exchange, refresh, reuse detection and
//! revocation. The library builds and parses every token and revocation
//! request; the browser part (sign-in, consent) is the person's, done with
//! the harness's `Browser`.
//!
//! oauth2 refuses a revocation endpoint that is not https (RFC 7009 §2),
//! and the test server listens on plain HTTP on loopback, so the transport
//! carries an `https://` URL naming the server's own address over HTTP, as
//! a TLS-terminating proxy in front of Coop would. Nothing else is changed.

use oauth2::basic::{BasicClient, BasicErrorResponseType, BasicRevocationErrorResponse};
use oauth2::{
    AuthUrl, AuthorizationCode, ClientId, CsrfToken, HttpRequest, HttpResponse, PkceCodeChallenge,
    RedirectUrl, RefreshToken, RequestTokenError, RevocationUrl, Scope, StandardRevocableToken,
    TokenResponse, TokenUrl,
};
use serde_json::{Value, json};

use crate::helpers::oauth::REDIRECT_URI;
use crate::helpers::{Engine, TestApp, location};
use crate::on_both_engines;

on_both_engines!(a_real_oauth_client_runs_the_whole_flow);

/// The library's transport: one reqwest request, redirects not followed.
async fn send(app_address: String, request: HttpRequest) -> Result<HttpResponse, reqwest::Error> {
    let (parts, body) = request.into_parts();
    let mut url = parts.uri.to_string();
    let own_https = app_address.replacen("http://", "https://", 1);
    if let Some(rest) = url.strip_prefix(&own_https) {
        url = format!("{app_address}{rest}");
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let response = client
        .request(parts.method, url)
        .headers(parts.headers)
        .body(body)
        .send()
        .await?;
    let mut builder = http::Response::builder().status(response.status());
    for (name, value) in response.headers() {
        builder = builder.header(name, value);
    }
    let body = response.bytes().await?.to_vec();
    Ok(builder.body(body).unwrap())
}

fn error_code<RE: std::error::Error + 'static>(
    err: RequestTokenError<RE, oauth2::basic::BasicErrorResponse>,
) -> BasicErrorResponseType {
    match err {
        RequestTokenError::ServerResponse(response) => response.error().clone(),
        other => panic!("expected an OAuth error response, got {other:?}"),
    }
}

async fn a_real_oauth_client_runs_the_whole_flow(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let address = app.address.clone();
    let http_client = move |request: HttpRequest| send(address.clone(), request);

    // Discovery.
    let metadata: Value = reqwest::get(app.url("/.well-known/oauth-authorization-server"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["issuer"], app.issuer.as_str());
    assert_eq!(
        metadata["code_challenge_methods_supported"],
        json!(["S256"])
    );
    let endpoint = |name: &str| metadata[name].as_str().unwrap().to_owned();

    // Dynamic registration (RFC 7591), as a public client.
    let registration: Value = reqwest::Client::new()
        .post(endpoint("registration_endpoint"))
        .json(&json!({
            "client_name": "oauth2-rs flow test",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let client_id = registration["client_id"].as_str().unwrap().to_owned();
    assert!(registration.get("client_secret").is_none());

    let revocation = endpoint("revocation_endpoint").replacen("http://", "https://", 1);
    let client = BasicClient::new(ClientId::new(client_id.clone()))
        .set_auth_uri(AuthUrl::new(endpoint("authorization_endpoint")).unwrap())
        .set_token_uri(TokenUrl::new(endpoint("token_endpoint")).unwrap())
        .set_revocation_url(RevocationUrl::new(revocation).unwrap())
        .set_redirect_uri(RedirectUrl::new(REDIRECT_URI.to_owned()).unwrap());
    let resource = format!("{}/mcp", app.issuer);

    // PKCE S256 and the authorization URL; the person signs in and
    // approves by form post.
    let browser = app.signed_in(&user).await;
    let connect = async |scopes: &[&str]| {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state) = client
            .authorize_url(CsrfToken::new_random)
            .add_scopes(scopes.iter().map(|s| Scope::new((*s).to_owned())))
            .add_extra_param("resource", resource.clone())
            .set_pkce_challenge(challenge)
            .url();
        assert!(url.as_str().contains("code_challenge_method=S256"));
        let path = format!("{}?{}", url.path(), url.query().unwrap());
        let html = browser.open_consent(&path).await;
        let response = browser.answer_consent(&html, "approve", scopes).await;
        assert_eq!(response.status(), 303);
        let callback = url::Url::parse(&location(&response)).unwrap();
        let params: std::collections::HashMap<String, String> =
            callback.query_pairs().into_owned().collect();
        assert_eq!(params["state"], *state.secret(), "state comes back");
        assert_eq!(params["iss"], app.issuer, "iss names this server");
        client
            .exchange_code(AuthorizationCode::new(params["code"].clone()))
            .set_pkce_verifier(verifier)
            .add_extra_param("resource", resource.clone())
            .request_async(&http_client)
            .await
            .unwrap()
    };

    let refresh_is_refused = async |token: &RefreshToken| {
        let err = client
            .exchange_refresh_token(token)
            .request_async(&http_client)
            .await
            .unwrap_err();
        assert_eq!(error_code(err), BasicErrorResponseType::InvalidGrant);
    };

    // Exchange.
    let tokens = connect(&["farm:read", "daily-entries:write"]).await;
    assert!(tokens.expires_in().is_some());
    let scopes: Vec<String> = tokens
        .scopes()
        .unwrap()
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(scopes, ["farm:read", "daily-entries:write"]);
    let first = tokens.refresh_token().unwrap().clone();

    // Refresh rotates the refresh token.
    let refreshed = client
        .exchange_refresh_token(&first)
        .request_async(&http_client)
        .await
        .unwrap();
    let second = refreshed.refresh_token().unwrap().clone();
    assert_ne!(first.secret(), second.secret());
    assert_ne!(
        tokens.access_token().secret(),
        refreshed.access_token().secret()
    );

    // The family moves on once more.
    let third = client
        .exchange_refresh_token(&second)
        .request_async(&http_client)
        .await
        .unwrap()
        .refresh_token()
        .unwrap()
        .clone();

    // Reuse detection: the spent token, whose successor was used since, is
    // refused, and the grant is revoked, so the latest token is dead too.
    refresh_is_refused(&first).await;
    refresh_is_refused(&third).await;
    assert_eq!(app.audit_count("token_reuse_detected").await, 1);

    // Connect again (the revoked grant asks for consent anew), then revoke
    // the refresh token: the grant ends and refreshing is refused.
    let tokens = connect(&["farm:read"]).await;
    let refresh = tokens.refresh_token().unwrap().clone();
    client
        .revoke_token(StandardRevocableToken::RefreshToken(refresh.clone()))
        .unwrap()
        .request_async(&http_client)
        .await
        .unwrap();
    refresh_is_refused(&refresh).await;
    assert_eq!(app.audit_count("grant_revoked").await, 1);

    // An unknown token is revoked without complaint (RFC 7009 §2.2).
    let unknown = RefreshToken::new("never-issued".to_owned());
    let revoked: Result<(), RequestTokenError<_, BasicRevocationErrorResponse>> = client
        .revoke_token(StandardRevocableToken::RefreshToken(unknown))
        .unwrap()
        .request_async(&http_client)
        .await;
    assert!(revoked.is_ok(), "{revoked:?}");
}
