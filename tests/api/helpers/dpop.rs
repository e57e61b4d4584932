//! A DPoP client (RFC 9449): the proof keys and proofs of
//! `src/testing/dpop_keys.rs` (the unit tests' own), tokens obtained with a
//! proof, `/mcp` calls with the `DPoP` scheme, and the exact challenges of
//! a DPoP refusal.

use serde_json::Value;

pub use crate::testing::dpop_keys::{ProofKey, claims};

use super::app::{TestApp, TestUser};
use super::mcp::{Wire, call_body, request_body};
use super::oauth::TokenRequest;

/// The algorithms Coop advertises, as its challenges spell them.
pub const ALGS: &str = "ES256 EdDSA RS256 PS256";

/// What a token request with a proof got.
#[derive(Clone, Debug)]
pub struct Bound {
    pub access_token: String,
    pub refresh_token: String,
    pub client_id: String,
    pub token_type: String,
}

/// The tokens of a successful token request (asserting its 200).
pub async fn bound_from(response: reqwest::Response, client_id: &str) -> Bound {
    assert_eq!(response.status(), 200, "token request refused");
    let body: Value = response.json().await.unwrap();
    Bound {
        access_token: body["access_token"].as_str().unwrap().to_owned(),
        refresh_token: body["refresh_token"].as_str().unwrap().to_owned(),
        client_id: client_id.to_owned(),
        token_type: body["token_type"].as_str().unwrap().to_owned(),
    }
}

/// The nonce a response hands out in `DPoP-Nonce`.
pub fn nonce_of(response: &reqwest::Response) -> String {
    response.headers()["dpop-nonce"]
        .to_str()
        .unwrap()
        .to_owned()
}

/// Sends `request` to `/token` with a proof by `key` that carries no
/// nonce, asserting the answer `use_dpop_nonce` (400); returns the nonce
/// it handed out.
pub async fn nonce_asked_for(app: &TestApp, request: &TokenRequest, key: &ProofKey) -> String {
    let proof = key.proof("POST", &app.token_url(), None);
    let response = request.clone().dpop(&proof).send(app).await;
    let nonce = nonce_of(&response);
    super::oauth::assert_oauth_error(response, 400, "use_dpop_nonce").await;
    nonce
}

/// A proof by `key` for `POST <issuer>/token` carrying `nonce`.
pub fn token_proof_with_nonce(app: &TestApp, key: &ProofKey, nonce: &str) -> String {
    key.proof_with(&app.token_url(), None, |c| c["nonce"] = nonce.into())
}

/// Every `WWW-Authenticate` field of a response, in order.
pub fn challenges(response: &reqwest::Response) -> Vec<String> {
    response
        .headers()
        .get_all("www-authenticate")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

/// Asserts a 401 DPoP refusal with `error`: exact challenges and body.
pub async fn assert_dpop_refusal(
    response: reqwest::Response,
    app: &TestApp,
    error: &str,
    what: &str,
) {
    assert_eq!(response.status(), 401, "{what}");
    assert_eq!(challenges(&response), app.dpop_challenges(error), "{what}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], error, "{what}: {body}");
}

impl TestApp {
    /// `<issuer>/token`, the `htu` of a token request's proof.
    pub fn token_url(&self) -> String {
        format!("{}/token", self.issuer)
    }

    /// `<issuer>/mcp`, the `htu` of an MCP call's proof.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.issuer)
    }

    /// An approved authorization for a new public client: (client_id,
    /// code, verifier).
    pub async fn approved_code(&self, user: &TestUser, scopes: &str) -> (String, String, String) {
        let client_id = self.register_public_client().await;
        let (code, verifier) = self.approved_code_for(user, &client_id, scopes).await;
        (client_id, code, verifier)
    }

    /// `POST /token` with `form` and these `DPoP` header values.
    pub async fn token_with_proofs(
        &self,
        form: &[(&str, &str)],
        proofs: &[&str],
    ) -> reqwest::Response {
        let request = proofs
            .iter()
            .fold(TokenRequest::fields(form), |request, proof| {
                request.dpop(proof)
            });
        self.token(&request).await
    }

    /// The code exchange of a public client with `proof` (none: no
    /// header).
    pub async fn exchange_with(
        &self,
        client_id: &str,
        code: &str,
        verifier: &str,
        proof: Option<&str>,
    ) -> reqwest::Response {
        let request = self.exchange_request(client_id, code, verifier);
        self.token(&with_proof(request, proof)).await
    }

    /// A public client's refresh with a fresh proof by `key` for
    /// `/token` (none: no header).
    pub async fn refresh_with(
        &self,
        client_id: &str,
        refresh_token: &str,
        key: Option<&ProofKey>,
    ) -> reqwest::Response {
        let proof = key.map(|key| key.proof("POST", &self.token_url(), None));
        let request = TokenRequest::refresh(client_id, refresh_token);
        self.token(&with_proof(request, proof.as_deref())).await
    }

    /// The whole flow of a public client with `key`: a DPoP-bound token.
    pub async fn connect_bound(&self, user: &TestUser, scopes: &str, key: &ProofKey) -> Bound {
        let (client_id, code, verifier) = self.approved_code(user, scopes).await;
        let proof = key.proof("POST", &self.token_url(), None);
        let response = self
            .exchange_with(&client_id, &code, &verifier, Some(&proof))
            .await;
        bound_from(response, &client_id).await
    }

    /// `body` to `/mcp` on the 2025-11-25 wire with `Authorization:
    /// <scheme> <token>` and these `DPoP` header values.
    async fn mcp_as(
        &self,
        scheme: &str,
        token: &str,
        proofs: &[&str],
        body: &Value,
    ) -> reqwest::Response {
        let authorization = format!("{scheme} {token}");
        let mut request = self.mcp_post_with(
            None,
            Wire::V2025_11_25,
            &body.to_string(),
            &[("authorization", Some(&authorization))],
        );
        for proof in proofs {
            request = request.header("dpop", *proof);
        }
        request.send().await.unwrap()
    }

    /// A `tools/list` on the 2025-11-25 wire with `Authorization: <scheme>
    /// <token>` and these `DPoP` header values.
    pub async fn list_as(&self, scheme: &str, token: &str, proofs: &[&str]) -> reqwest::Response {
        let body = request_body(Wire::V2025_11_25, 1, "tools/list", Value::Null);
        self.mcp_as(scheme, token, proofs, &body).await
    }

    /// A `tools/list` with the DPoP scheme and a fresh good proof by `key`.
    pub async fn list_with_key(&self, token: &str, key: &ProofKey) -> reqwest::Response {
        let proof = key.proof("POST", &self.mcp_url(), Some(token));
        self.list_as("DPoP", token, &[&proof]).await
    }

    /// A `tools/call` with the DPoP scheme and a fresh proof; (status,
    /// body).
    pub async fn call_with_key(
        &self,
        token: &str,
        key: &ProofKey,
        tool: &str,
        arguments: Value,
    ) -> (u16, Value) {
        let body = call_body(Wire::V2025_11_25, tool, arguments);
        let proof = key.proof("POST", &self.mcp_url(), Some(token));
        let response = self.mcp_as("DPoP", token, &[&proof], &body).await;
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }

    /// The two challenges of a DPoP refusal with `error`.
    pub fn dpop_challenges(&self, error: &str) -> Vec<String> {
        let metadata = self.metadata_url();
        vec![
            format!(r#"DPoP algs="{ALGS}", error="{error}", resource_metadata="{metadata}""#),
            format!(r#"Bearer resource_metadata="{metadata}""#),
        ]
    }
}

fn with_proof(request: TokenRequest, proof: Option<&str>) -> TokenRequest {
    match proof {
        Some(proof) => request.dpop(proof),
        None => request,
    }
}
