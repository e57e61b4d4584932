//! Authorization server metadata (RFC 8414), served at both
//! `/.well-known/oauth-authorization-server` and
//! `/.well-known/openid-configuration`.
//!
//! Every URL is built from the configured issuer, never from the request's
//! `Host` (threat 18), and `issuer` is that string byte for byte: MCP
//! clients compare it with the resource metadata's authorization server and
//! with the `iss` response parameter without normalising. The struct has no
//! optional field, so the document never contains a `null`.

use serde::Serialize;

use crate::domain::Issuer;
use crate::domain::Scope;
use crate::oauth::client_assertion;

#[derive(Debug, Serialize)]
pub struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: String,
    pub revocation_endpoint: String,
    /// RFC 7662, for confidential clients registered for it.
    pub introspection_endpoint: String,
    pub introspection_endpoint_auth_methods_supported: [&'static str; 1],
    pub jwks_uri: String,
    pub response_types_supported: [&'static str; 1],
    /// `client_credentials` for automations only.
    pub grant_types_supported: [&'static str; 3],
    pub code_challenge_methods_supported: [&'static str; 1],
    pub token_endpoint_auth_methods_supported: [&'static str; 4],
    /// The algorithms a `private_key_jwt` assertion may be signed with.
    pub token_endpoint_auth_signing_alg_values_supported: [&'static str; 4],
    /// `offline_access` is deliberately absent: refresh tokens are always
    /// issued, and MCP asks servers not to advertise it.
    pub scopes_supported: Vec<&'static str>,
    pub client_id_metadata_document_supported: bool,
    pub authorization_response_iss_parameter_supported: bool,
    /// The DPoP proof algorithms `/token` accepts (RFC 9449 §5.1).
    pub dpop_signing_alg_values_supported: [&'static str; 4],
}

pub fn document(issuer: &Issuer) -> ServerMetadata {
    ServerMetadata {
        issuer: issuer.as_str().to_owned(),
        authorization_endpoint: issuer.url("/authorize"),
        token_endpoint: issuer.url("/token"),
        registration_endpoint: issuer.url("/register"),
        revocation_endpoint: issuer.url("/revoke"),
        introspection_endpoint: issuer.url("/introspect"),
        introspection_endpoint_auth_methods_supported: ["client_secret_basic"],
        jwks_uri: issuer.url("/jwks.json"),
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code", "refresh_token", "client_credentials"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: [
            "none",
            "client_secret_basic",
            "client_secret_post",
            "private_key_jwt",
        ],
        token_endpoint_auth_signing_alg_values_supported: client_assertion::SIGNING_ALGORITHM_NAMES,
        scopes_supported: Scope::ALL.iter().map(|s| s.as_str()).collect(),
        client_id_metadata_document_supported: true,
        authorization_response_iss_parameter_supported: true,
        dpop_signing_alg_values_supported: crate::oauth::dpop::ALGORITHMS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_names_every_endpoint_from_the_issuer() {
        let issuer = Issuer::parse("https://coop.example").unwrap();
        let json = serde_json::to_value(document(&issuer)).unwrap();
        assert_eq!(json["issuer"], "https://coop.example");
        assert_eq!(json["token_endpoint"], "https://coop.example/token");
        assert_eq!(json["jwks_uri"], "https://coop.example/jwks.json");
        assert_eq!(
            json["scopes_supported"],
            serde_json::json!(["farm:read", "daily-entries:write"])
        );
        assert_eq!(
            json["introspection_endpoint"],
            "https://coop.example/introspect"
        );
        assert_eq!(
            json["grant_types_supported"],
            serde_json::json!(["authorization_code", "refresh_token", "client_credentials"])
        );
        assert_eq!(
            json["token_endpoint_auth_methods_supported"],
            serde_json::json!([
                "none",
                "client_secret_basic",
                "client_secret_post",
                "private_key_jwt"
            ])
        );
        assert_eq!(
            json["token_endpoint_auth_signing_alg_values_supported"],
            serde_json::json!(["ES256", "RS256", "PS256", "EdDSA"])
        );
        assert_eq!(
            json["dpop_signing_alg_values_supported"],
            serde_json::json!(["ES256", "EdDSA", "RS256", "PS256"])
        );
        assert_eq!(json.as_object().unwrap().len(), 17);
    }
}
