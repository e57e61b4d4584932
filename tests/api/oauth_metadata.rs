//! Discovery: both metadata documents and the key set.

use serde_json::Value;

use crate::helpers::oauth;
use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(
    both_metadata_documents_are_the_same_exact_document,
    unknown_mcp_protocol_versions_are_ignored_on_the_well_knowns,
    metadata_urls_come_from_the_configured_issuer_not_the_host_header,
    the_jwks_publishes_the_key_that_signs_access_tokens,
);

const FIELDS: [&str; 17] = [
    "issuer",
    "authorization_endpoint",
    "token_endpoint",
    "registration_endpoint",
    "revocation_endpoint",
    "introspection_endpoint",
    "introspection_endpoint_auth_methods_supported",
    "jwks_uri",
    "response_types_supported",
    "grant_types_supported",
    "code_challenge_methods_supported",
    "token_endpoint_auth_methods_supported",
    "token_endpoint_auth_signing_alg_values_supported",
    "scopes_supported",
    "client_id_metadata_document_supported",
    "authorization_response_iss_parameter_supported",
    "dpop_signing_alg_values_supported",
];

async fn both_metadata_documents_are_the_same_exact_document(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let mut documents = Vec::new();
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        let response = app.get(path).await;
        assert_eq!(response.status(), 200, "{path}");
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
        let text = response.text().await.unwrap();
        assert!(!text.contains("null"), "{text}");
        documents.push(serde_json::from_str::<Value>(&text).unwrap());
    }
    assert_eq!(documents[0], documents[1]);
    let doc = &documents[0];
    let mut keys: Vec<&str> = doc
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    let mut want = FIELDS.to_vec();
    want.sort_unstable();
    assert_eq!(keys, want);

    // Byte-exact: no trailing slash, the very string clients compare.
    assert_eq!(doc["issuer"].as_str().unwrap(), app.issuer);
    assert!(!app.issuer.ends_with('/'));
    let i = &app.issuer;
    assert_eq!(doc["authorization_endpoint"], format!("{i}/authorize"));
    assert_eq!(doc["token_endpoint"], format!("{i}/token"));
    assert_eq!(doc["registration_endpoint"], format!("{i}/register"));
    assert_eq!(doc["revocation_endpoint"], format!("{i}/revoke"));
    assert_eq!(doc["jwks_uri"], format!("{i}/jwks.json"));
    assert_eq!(doc["response_types_supported"], serde_json::json!(["code"]));
    assert_eq!(
        doc["grant_types_supported"],
        serde_json::json!(["authorization_code", "refresh_token", "client_credentials"])
    );
    assert_eq!(doc["introspection_endpoint"], format!("{i}/introspect"));
    assert_eq!(
        doc["introspection_endpoint_auth_methods_supported"],
        serde_json::json!(["client_secret_basic"])
    );
    assert_eq!(
        doc["code_challenge_methods_supported"],
        serde_json::json!(["S256"])
    );
    assert_eq!(
        doc["token_endpoint_auth_methods_supported"],
        serde_json::json!([
            "none",
            "client_secret_basic",
            "client_secret_post",
            "private_key_jwt"
        ])
    );
    assert_eq!(
        doc["token_endpoint_auth_signing_alg_values_supported"],
        serde_json::json!(["ES256", "RS256", "PS256", "EdDSA"])
    );
    assert_eq!(
        doc["scopes_supported"],
        serde_json::json!(["farm:read", "daily-entries:write"])
    );
    assert_eq!(doc["client_id_metadata_document_supported"], true);
    assert_eq!(doc["authorization_response_iss_parameter_supported"], true);
}

async fn unknown_mcp_protocol_versions_are_ignored_on_the_well_knowns(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
        "/jwks.json",
    ] {
        app.get_despite_mcp_version(path, "1999-01-01").await;
    }
}

async fn metadata_urls_come_from_the_configured_issuer_not_the_host_header(engine: Engine) {
    let app = TestApp::spawn_with(engine, |config| {
        config.issuer = Some(coop::config::Issuer::parse("https://coop.example").unwrap());
    })
    .await;
    let doc: Value = app
        .get_with(
            "/.well-known/oauth-authorization-server",
            ("Host", "evil.example"),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(doc["issuer"], "https://coop.example");
    assert_eq!(doc["token_endpoint"], "https://coop.example/token");
}

async fn the_jwks_publishes_the_key_that_signs_access_tokens(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    let tokens = app.connect(&user, "farm:read").await;
    let header = oauth::jwt_header(&tokens.access_token);
    assert_eq!(header["alg"], "ES256");
    assert_eq!(header["typ"], "at+jwt");

    let jwks: Value = app.get_json("/jwks.json").await;
    let keys = jwks["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0]["kid"], header["kid"]);
    assert_eq!(keys[0]["kty"], "EC");
    assert_eq!(keys[0]["crv"], "P-256");
    assert_eq!(keys[0]["alg"], "ES256");
    assert!(keys[0].get("d").is_none(), "private part published!");
}
