//! Protected resource metadata (RFC 9728) for `/mcp`.

use serde_json::{Value, json};

use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(both_forms_serve_the_resource_exactly);

async fn both_forms_serve_the_resource_exactly(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = app.get_despite_mcp_version(path, "2099-01-01").await;
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
        assert_eq!(response.headers()["access-control-allow-origin"], "*");
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            body,
            json!({
                "resource": format!("{}/mcp", app.issuer),
                "authorization_servers": [app.issuer],
                "scopes_supported": ["farm:read", "daily-entries:write"],
                "bearer_methods_supported": ["header"],
                "resource_name": "Coop farm records",
                "dpop_signing_alg_values_supported": ["ES256", "EdDSA", "RS256", "PS256"],
                "dpop_bound_access_tokens_required": false,
            }),
            "{path}"
        );
    }
    // The authorization server metadata names the same issuer, byte for byte.
    let server: Value = app
        .get_json("/.well-known/oauth-authorization-server")
        .await;
    assert_eq!(server["issuer"], app.issuer);
}
