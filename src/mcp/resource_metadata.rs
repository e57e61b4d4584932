//! Protected resource metadata (RFC 9728) for `/mcp`, served at
//! `/.well-known/oauth-protected-resource/mcp` and at the root form.
//!
//! `resource` is `<issuer>/mcp` byte for byte (clients compare it with the
//! URL they used without normalising) and `authorization_servers` holds the
//! issuer exactly as the authorization server metadata names it. Both forms
//! serve the same document: Coop has one resource, and a token for it is
//! what a client that fell back to the root form needs too. Every URL comes
//! from the configured issuer, never from the request (threat 18).

use serde::Serialize;

use crate::domain::Issuer;
use crate::domain::Scope;

/// The path a 401's `resource_metadata` names.
pub const PATH: &str = "/.well-known/oauth-protected-resource/mcp";
/// The root form, for clients that fall back to it.
pub const ROOT_PATH: &str = "/.well-known/oauth-protected-resource";

#[derive(Debug, Serialize)]
pub struct ResourceMetadata {
    pub resource: String,
    pub authorization_servers: [String; 1],
    /// `offline_access` is deliberately absent (MCP asks resources not to
    /// advertise it: refresh tokens are not a resource requirement).
    pub scopes_supported: Vec<&'static str>,
    pub bearer_methods_supported: [&'static str; 1],
    pub resource_name: &'static str,
    /// The DPoP proof algorithms `/mcp` accepts (RFC 9449 §5.1).
    pub dpop_signing_alg_values_supported: [&'static str; 4],
    /// Bearer tokens stay welcome; a DPoP-bound token needs its proof.
    pub dpop_bound_access_tokens_required: bool,
}

pub fn document(issuer: &Issuer) -> ResourceMetadata {
    ResourceMetadata {
        resource: issuer.mcp_resource(),
        authorization_servers: [issuer.as_str().to_owned()],
        scopes_supported: Scope::ALL.iter().map(|s| s.as_str()).collect(),
        bearer_methods_supported: ["header"],
        resource_name: "Coop farm records",
        dpop_signing_alg_values_supported: crate::oauth::dpop::ALGORITHMS,
        dpop_bound_access_tokens_required: false,
    }
}

/// The URL of the document, for `WWW-Authenticate: Bearer resource_metadata=…`.
pub fn url(issuer: &Issuer) -> String {
    issuer.url(PATH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_names_the_resource_and_issuer_exactly() {
        let issuer = Issuer::parse("https://coop.example/").unwrap();
        let json = serde_json::to_value(document(&issuer)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "resource": "https://coop.example/mcp",
                "authorization_servers": ["https://coop.example"],
                "scopes_supported": ["farm:read", "daily-entries:write"],
                "bearer_methods_supported": ["header"],
                "resource_name": "Coop farm records",
                "dpop_signing_alg_values_supported": ["ES256", "EdDSA", "RS256", "PS256"],
                "dpop_bound_access_tokens_required": false,
            })
        );
        assert_eq!(
            url(&issuer),
            "https://coop.example/.well-known/oauth-protected-resource/mcp"
        );
    }
}
