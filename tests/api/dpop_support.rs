//! A DPoP client for the tests (RFC 9449): proof keys the test holds, proofs
//! signed with them as a client library would (with any claim changed),
//! tokens obtained with a proof, and `/mcp` calls with the `DPoP` scheme.
#![allow(dead_code)]

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RSA_PKCS1_SHA256,
    RSA_PSS_SHA256, RsaKeyPair, RsaPublicKeyComponents,
};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestUser};
use crate::mcp_support::{Wire, post_with, request_body};
use crate::oauth_client::{
    Pkce, REDIRECT_URI, answer_consent, authorize_path, callback, open_consent,
    register_public_client, sign_in_browser,
};

/// The algorithms Coop advertises, as its challenges spell them.
pub const ALGS: &str = "ES256 EdDSA RS256 PS256";

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

enum Pair {
    Ec(EcdsaKeyPair),
    Ed(Ed25519KeyPair),
    Rsa(RsaKeyPair, bool),
}

/// A client's proof key.
pub struct ProofKey {
    pub alg: &'static str,
    pair: Pair,
}

impl ProofKey {
    pub fn es256() -> Self {
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
        Self {
            alg: "ES256",
            pair: Pair::Ec(pair),
        }
    }

    pub fn ed25519() -> Self {
        Self {
            alg: "EdDSA",
            pair: Pair::Ed(Ed25519KeyPair::generate().unwrap()),
        }
    }

    pub fn rs256() -> Self {
        let pair = RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        Self {
            alg: "RS256",
            pair: Pair::Rsa(pair, false),
        }
    }

    pub fn ps256() -> Self {
        let pair = RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        Self {
            alg: "PS256",
            pair: Pair::Rsa(pair, true),
        }
    }

    pub fn public_jwk(&self) -> Value {
        match &self.pair {
            Pair::Ec(pair) => {
                let point = pair.public_key().as_ref();
                json!({"kty": "EC", "crv": "P-256", "x": b64(&point[1..33]), "y": b64(&point[33..])})
            }
            Pair::Ed(pair) => {
                json!({"kty": "OKP", "crv": "Ed25519", "x": b64(pair.public_key().as_ref())})
            }
            Pair::Rsa(pair, _) => {
                let c = RsaPublicKeyComponents::<Vec<u8>>::from(pair.public_key());
                json!({"kty": "RSA", "n": b64(&c.n), "e": b64(&c.e)})
            }
        }
    }

    /// RFC 7638, computed here independently of Coop.
    pub fn thumbprint(&self) -> String {
        let jwk = self.public_jwk();
        let canonical = match jwk["kty"].as_str().unwrap() {
            "EC" => format!(
                r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
                jwk["x"].as_str().unwrap(),
                jwk["y"].as_str().unwrap()
            ),
            "OKP" => format!(
                r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#,
                jwk["x"].as_str().unwrap()
            ),
            _ => format!(
                r#"{{"e":"{}","kty":"RSA","n":"{}"}}"#,
                jwk["e"].as_str().unwrap(),
                jwk["n"].as_str().unwrap()
            ),
        };
        b64(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, canonical.as_bytes()).as_ref())
    }

    pub fn header(&self) -> Value {
        json!({"typ": "dpop+jwt", "alg": self.alg, "jwk": self.public_jwk()})
    }

    /// Signs `claims` under `header` (which may say anything).
    pub fn sign(&self, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let rng = SystemRandom::new();
        let signature = match &self.pair {
            Pair::Ec(pair) => pair.sign(&rng, input.as_bytes()).unwrap().as_ref().to_vec(),
            Pair::Ed(pair) => pair.sign(input.as_bytes()).as_ref().to_vec(),
            Pair::Rsa(pair, pss) => {
                let mut signature = vec![0; pair.public_modulus_len()];
                let padding: &'static dyn aws_lc_rs::signature::RsaEncoding = if *pss {
                    &RSA_PSS_SHA256
                } else {
                    &RSA_PKCS1_SHA256
                };
                pair.sign(padding, &rng, input.as_bytes(), &mut signature)
                    .unwrap();
                signature
            }
        };
        format!("{input}.{}", b64(&signature))
    }

    /// A good proof for `htm` `htu` (with `ath` when `token` is given).
    pub fn proof(&self, htm: &str, htu: &str, token: Option<&str>) -> String {
        self.sign(&self.header(), &claims(htm, htu, token))
    }

    /// A proof for `htu` with `change` applied to its claims.
    pub fn proof_with(
        &self,
        htu: &str,
        token: Option<&str>,
        change: impl FnOnce(&mut Value),
    ) -> String {
        let mut c = claims("POST", htu, token);
        change(&mut c);
        self.sign(&self.header(), &c)
    }
}

/// `ath`: the SHA-256 of the token, base64url.
pub fn ath(token: &str) -> String {
    b64(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, token.as_bytes()).as_ref())
}

/// The claims of a fresh proof: a random `jti`, `iat` now (the real clock:
/// the test apps' adjustable clocks start at the real time).
pub fn claims(htm: &str, htu: &str, token: Option<&str>) -> Value {
    let mut claims = json!({
        "jti": coop::secrets::random_token(16),
        "htm": htm,
        "htu": htu,
        "iat": time::OffsetDateTime::now_utc().unix_timestamp(),
    });
    if let Some(token) = token {
        claims["ath"] = ath(token).into();
    }
    claims
}

pub fn token_url(app: &TestApp) -> String {
    format!("{}/token", app.issuer)
}

pub fn mcp_url(app: &TestApp) -> String {
    format!("{}/mcp", app.issuer)
}

/// An approved authorization for a new public client: (client_id, code, verifier).
pub async fn approved_code(
    app: &TestApp,
    user: &TestUser,
    scopes: &str,
) -> (String, String, String) {
    let client_id = register_public_client(app).await;
    let (code, verifier) = approved_code_for(app, user, &client_id, scopes).await;
    (client_id, code, verifier)
}

/// An approved authorization for `client_id`: (code, verifier).
pub async fn approved_code_for(
    app: &TestApp,
    user: &TestUser,
    client_id: &str,
    scopes: &str,
) -> (String, String) {
    let browser = sign_in_browser(app, user).await;
    let pkce = Pkce::new();
    let path = authorize_path(app, client_id, &pkce, scopes, &[]);
    let html = open_consent(app, &browser, &path).await;
    let ticked: Vec<&str> = scopes.split_whitespace().collect();
    let response = answer_consent(app, &browser, &html, "approve", &ticked).await;
    let code = callback(&response).get("code").unwrap().clone();
    (code, pkce.verifier)
}

/// `POST /token` with `form` and these `DPoP` header values.
pub async fn token_with_proofs(
    app: &TestApp,
    form: &[(&str, &str)],
    proofs: &[&str],
) -> reqwest::Response {
    let mut request = reqwest::Client::new().post(app.url("/token")).form(form);
    for proof in proofs {
        request = request.header("dpop", *proof);
    }
    request.send().await.unwrap()
}

/// The code exchange of a public client with `proof` (none: no header).
pub async fn exchange_with(
    app: &TestApp,
    client_id: &str,
    code: &str,
    verifier: &str,
    proof: Option<&str>,
) -> reqwest::Response {
    let resource = mcp_url(app);
    let form = [
        ("grant_type", "authorization_code"),
        ("client_id", client_id),
        ("code", code),
        ("code_verifier", verifier),
        ("redirect_uri", REDIRECT_URI),
        ("resource", resource.as_str()),
    ];
    token_with_proofs(app, &form, proof.as_slice()).await
}

/// A public client's refresh with `proof` (none: no header).
pub async fn refresh_with(
    app: &TestApp,
    client_id: &str,
    refresh_token: &str,
    proof: Option<&str>,
) -> reqwest::Response {
    let form = [
        ("grant_type", "refresh_token"),
        ("client_id", client_id),
        ("refresh_token", refresh_token),
    ];
    token_with_proofs(app, &form, proof.as_slice()).await
}

/// What a token request with a proof got.
#[derive(Clone, Debug)]
pub struct Bound {
    pub access_token: String,
    pub refresh_token: String,
    pub client_id: String,
    pub token_type: String,
}

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

/// The whole flow of a public client with `key`: a DPoP-bound token.
pub async fn connect_bound(app: &TestApp, user: &TestUser, scopes: &str, key: &ProofKey) -> Bound {
    let (client_id, code, verifier) = approved_code(app, user, scopes).await;
    let proof = key.proof("POST", &token_url(app), None);
    let response = exchange_with(app, &client_id, &code, &verifier, Some(&proof)).await;
    bound_from(response, &client_id).await
}

/// A `tools/list` on the 2025-11-25 wire with `Authorization: <scheme>
/// <token>` and these `DPoP` header values.
pub async fn list_as(
    app: &TestApp,
    scheme: &str,
    token: &str,
    proofs: &[&str],
) -> reqwest::Response {
    let wire = Wire::V2025_11_25;
    let body = request_body(wire, 1, "tools/list", Value::Null).to_string();
    let authorization = format!("{scheme} {token}");
    let mut request = post_with(
        app,
        None,
        wire,
        &body,
        &[("authorization", Some(&authorization))],
    );
    for proof in proofs {
        request = request.header("dpop", *proof);
    }
    request.send().await.unwrap()
}

/// A `tools/list` with the DPoP scheme and a fresh good proof by `key`.
pub async fn list_with_key(app: &TestApp, token: &str, key: &ProofKey) -> reqwest::Response {
    let proof = key.proof("POST", &mcp_url(app), Some(token));
    list_as(app, "DPoP", token, &[&proof]).await
}

/// A `tools/call` with the DPoP scheme and a fresh proof; (status, body).
pub async fn call_with_key(
    app: &TestApp,
    token: &str,
    key: &ProofKey,
    tool: &str,
    arguments: Value,
) -> (u16, Value) {
    let wire = Wire::V2025_11_25;
    let body = request_body(
        wire,
        1,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    );
    let authorization = format!("DPoP {token}");
    let proof = key.proof("POST", &mcp_url(app), Some(token));
    let response = post_with(
        app,
        None,
        wire,
        &body.to_string(),
        &[("authorization", Some(&authorization))],
    )
    .header("dpop", proof)
    .send()
    .await
    .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
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

/// The two challenges of a DPoP refusal with `error`.
pub fn dpop_challenges(app: &TestApp, error: &str) -> Vec<String> {
    let metadata = crate::mcp_support::metadata_url(app);
    vec![
        format!(r#"DPoP algs="{ALGS}", error="{error}", resource_metadata="{metadata}""#),
        format!(r#"Bearer resource_metadata="{metadata}""#),
    ]
}

/// Asserts a 401 DPoP refusal with `error`: exact challenges and body.
pub async fn assert_dpop_refusal(
    response: reqwest::Response,
    app: &TestApp,
    error: &str,
    what: &str,
) {
    assert_eq!(response.status(), 401, "{what}");
    assert_eq!(challenges(&response), dpop_challenges(app, error), "{what}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], error, "{what}: {body}");
}
