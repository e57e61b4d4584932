//! OAuth as a client does it, over HTTP, one [`TestApp`] method per step:
//! register a client, build an `/authorize` path, exchange a code, refresh,
//! revoke; [`TestApp::connect`] does them all. `/token` requests, the
//! tables of refusals among them, are built with [`TokenRequest`].
//!
//! ```ignore
//! let user = app.farm_with_member("manager").await;
//! let tokens = app.connect(&user, "farm:read daily-entries:write").await;
//! // tokens.access_token: a real JWT for `<issuer>/mcp`
//! // tokens.refresh_token, tokens.client_id, tokens.expires_in
//! ```
//!
//! [`TestApp::connect`] does what an MCP client and a person do: registers
//! a public client at `/register` (redirect URI [`REDIRECT_URI`]), signs the
//! person in with a fresh cookie jar, opens `/authorize` with PKCE S256,
//! the `resource` `<issuer>/mcp` and the asked scopes, approves the consent
//! form by POST ticking exactly those scopes, reads the code off the
//! redirect, and exchanges it at `/token`. Nothing is shortcut through the
//! database.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::app::{TestApp, TestUser};
use super::browser::{assert_no_store, location};

/// The redirect URI the harness registers: a loopback address nothing
/// listens on (the tests read the code off the `Location` header).
pub const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

/// The https redirect URI of [`TestApp::register_https_client`] (which
/// nothing serves: the tests read the `Location`).
pub const HTTPS_REDIRECT: &str = "https://web.example/cb";

/// What [`TestApp::connect`] obtains.
#[derive(Clone, Debug)]
pub struct Tokens {
    pub access_token: String,
    pub refresh_token: String,
    pub client_id: String,
    pub expires_in: i64,
}

impl Tokens {
    /// Their refresh as a public client, to send as is or changed.
    pub fn refresh_request(&self) -> TokenRequest {
        TokenRequest::refresh(&self.client_id, &self.refresh_token)
    }
}

/// A PKCE verifier and its S256 challenge.
#[derive(Clone, Debug)]
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    pub fn new() -> Self {
        let verifier = coop::secrets::random_token(32);
        let challenge = coop::oauth::pkce::s256(&verifier);
        Self {
            verifier,
            challenge,
        }
    }
}

impl Default for Pkce {
    fn default() -> Self {
        Self::new()
    }
}

/// A `POST /token` (or `/revoke`) being built: its form fields in order (a
/// name may repeat), HTTP Basic client authentication, `DPoP` headers. A
/// table of refusals starts each row from one of the constructors and
/// changes the field the row is about.
#[derive(Clone, Debug, Default)]
pub struct TokenRequest {
    form: Vec<(String, String)>,
    basic: Option<(String, String)>,
    proofs: Vec<String>,
}

impl TokenRequest {
    /// These fields, in this order.
    pub fn fields(form: &[(&str, &str)]) -> Self {
        let mut request = Self::default();
        for (name, value) in form {
            request = request.field(name, value);
        }
        request
    }

    /// A public client's authorization-code exchange without
    /// `redirect_uri` or `resource`: grant_type, client_id, code,
    /// code_verifier.
    pub fn code(client_id: &str, code: &str, verifier: &str) -> Self {
        Self::fields(&[
            ("grant_type", "authorization_code"),
            ("client_id", client_id),
            ("code", code),
            ("code_verifier", verifier),
        ])
    }

    /// An exchange that names no client (one authenticating with
    /// [`Self::basic`], or adding its own fields): grant_type, code,
    /// code_verifier.
    pub fn confidential_code(code: &str, verifier: &str) -> Self {
        Self::fields(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("code_verifier", verifier),
        ])
    }

    /// A public client's refresh: grant_type, client_id, refresh_token.
    pub fn refresh(client_id: &str, refresh_token: &str) -> Self {
        Self::fields(&[
            ("grant_type", "refresh_token"),
            ("client_id", client_id),
            ("refresh_token", refresh_token),
        ])
    }

    /// Adds a field after the others (a name already there repeats).
    pub fn field(mut self, name: &str, value: &str) -> Self {
        self.form.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Gives `name` this one value: in place of the first, the others
    /// removed; added at the end when it was not there.
    pub fn set(mut self, name: &str, value: &str) -> Self {
        match self.form.iter().position(|(n, _)| n == name) {
            Some(at) => {
                self.form[at].1 = value.to_owned();
                let mut seen = 0;
                self.form.retain(|(n, _)| {
                    if n == name {
                        seen += 1;
                        seen == 1
                    } else {
                        true
                    }
                });
                self
            }
            None => self.field(name, value),
        }
    }

    /// Leaves `name` out.
    pub fn without(mut self, name: &str) -> Self {
        self.form.retain(|(n, _)| n != name);
        self
    }

    /// Authenticates the client with HTTP Basic.
    pub fn basic(mut self, client_id: &str, secret: &str) -> Self {
        self.basic = Some((client_id.to_owned(), secret.to_owned()));
        self
    }

    /// Adds a `DPoP` header (one per call, in order).
    pub fn dpop(mut self, proof: &str) -> Self {
        self.proofs.push(proof.to_owned());
        self
    }

    /// Sends it to `app`'s `/token` from a client of its own (no cookies).
    pub async fn send(&self, app: &TestApp) -> reqwest::Response {
        self.send_to(app, "/token").await
    }

    /// Sends it to `path` (`/revoke`, say) of `app`.
    pub async fn send_to(&self, app: &TestApp, path: &str) -> reqwest::Response {
        self.request(app, path).send().await.unwrap()
    }

    /// The POST to `path` of `app` from a client of its own, not yet sent
    /// (a test may add a header, or see the send fail).
    pub fn request(&self, app: &TestApp, path: &str) -> reqwest::RequestBuilder {
        let mut request = reqwest::Client::new().post(app.url(path)).form(&self.form);
        if let Some((id, secret)) = &self.basic {
            request = request.basic_auth(id, Some(secret));
        }
        for proof in &self.proofs {
            request = request.header("dpop", proof);
        }
        request
    }
}

impl TestApp {
    /// `<issuer>/mcp`, the resource tokens are for.
    pub fn resource(&self) -> String {
        format!("{}/mcp", self.issuer)
    }

    /// `POST /register` with `body`; returns the raw response.
    pub async fn register(&self, body: &Value) -> reqwest::Response {
        reqwest::Client::new()
            .post(self.url("/register"))
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// Registers `body`, asserting a 201; returns the registration.
    pub async fn registered(&self, body: &Value) -> Value {
        let response = self.register(body).await;
        assert_eq!(response.status(), 201);
        response.json().await.unwrap()
    }

    /// Registers a confidential client with [`REDIRECT_URI`] that
    /// authenticates with `method`; returns (client_id, client_secret).
    pub async fn register_confidential(&self, method: &str) -> (String, String) {
        let body = self
            .registered(&json!({
                "client_name": "Server App",
                "redirect_uris": [REDIRECT_URI],
                "token_endpoint_auth_method": method,
            }))
            .await;
        (
            body["client_id"].as_str().unwrap().to_owned(),
            body["client_secret"].as_str().unwrap().to_owned(),
        )
    }

    /// Registers a public client with [`REDIRECT_URI`]; returns its
    /// client_id.
    pub async fn register_public_client(&self) -> String {
        let body = self
            .registered(&json!({
                "client_name": "Test Assistant",
                "redirect_uris": [REDIRECT_URI],
                "token_endpoint_auth_method": "none",
            }))
            .await;
        body["client_id"].as_str().unwrap().to_owned()
    }

    /// Registers a public client whose only redirect URI is
    /// [`HTTPS_REDIRECT`] (the redirect proves the client, so its consent
    /// may be remembered), with `extra` metadata; returns its client_id.
    pub async fn register_https_client(&self, extra: Value) -> String {
        let mut body = json!({"client_name": "Web App", "redirect_uris": [HTTPS_REDIRECT]});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        let registered = self.registered(&body).await;
        registered["client_id"].as_str().unwrap().to_owned()
    }

    /// `/authorize?…` for `client_id` with the usual parameters
    /// (response_type code, [`REDIRECT_URI`], PKCE S256, the MCP resource,
    /// `scope`, `state`) plus/replacing `overrides` (a value of `None`
    /// removes the parameter).
    pub fn authorize_path(
        &self,
        client_id: &str,
        pkce: &Pkce,
        scope: &str,
        overrides: &[(&str, Option<&str>)],
    ) -> String {
        let mut params: Vec<(String, String)> = vec![
            ("response_type".into(), "code".into()),
            ("client_id".into(), client_id.into()),
            ("redirect_uri".into(), REDIRECT_URI.into()),
            ("code_challenge".into(), pkce.challenge.clone()),
            ("code_challenge_method".into(), "S256".into()),
            ("resource".into(), self.resource()),
            ("scope".into(), scope.into()),
            ("state".into(), "state-123".into()),
        ];
        for (name, value) in overrides {
            params.retain(|(k, _)| k != name);
            if let Some(value) = value {
                params.push(((*name).into(), (*value).into()));
            }
        }
        format!(
            "/authorize?{}",
            serde_urlencoded::to_string(&params).unwrap()
        )
    }

    /// Sends `request` to `/token`.
    pub async fn token(&self, request: &TokenRequest) -> reqwest::Response {
        request.send(self).await
    }

    /// `POST /token` with these form fields and no client authentication.
    pub async fn token_request(&self, form: &[(&str, &str)]) -> reqwest::Response {
        self.token(&TokenRequest::fields(form)).await
    }

    /// The exchange of a public client's code, with [`REDIRECT_URI`] and
    /// the MCP resource.
    pub fn exchange_request(&self, client_id: &str, code: &str, verifier: &str) -> TokenRequest {
        TokenRequest::code(client_id, code, verifier)
            .field("redirect_uri", REDIRECT_URI)
            .field("resource", &self.resource())
    }

    /// Exchanges a code as a public client, with the MCP resource.
    pub async fn exchange_code(
        &self,
        client_id: &str,
        code: &str,
        verifier: &str,
    ) -> reqwest::Response {
        self.token(&self.exchange_request(client_id, code, verifier))
            .await
    }

    /// Refreshes as a public client.
    pub async fn refresh(&self, client_id: &str, refresh_token: &str) -> reqwest::Response {
        self.token(&TokenRequest::refresh(client_id, refresh_token))
            .await
    }

    /// Revokes as a public client.
    pub async fn revoke(&self, client_id: &str, token: &str) -> reqwest::Response {
        reqwest::Client::new()
            .post(self.url("/revoke"))
            .form(&[("client_id", client_id), ("token", token)])
            .send()
            .await
            .unwrap()
    }

    /// A client registered for introspection ("Gateway"): (client_id,
    /// client_secret).
    pub async fn introspector(&self) -> (String, String) {
        let added = self
            .add_client(&["--name", "Gateway", "--introspection"])
            .await;
        (added.field("client_id"), added.field("client_secret"))
    }

    /// `POST /introspect` of `token`, with Basic `client` credentials when
    /// given.
    pub async fn introspect_as(
        &self,
        client: Option<(&str, &str)>,
        token: &str,
    ) -> reqwest::Response {
        let request = TokenRequest::fields(&[("token", token)]);
        let request = match client {
            Some((id, secret)) => request.basic(id, secret),
            None => request,
        };
        request.send_to(self, "/introspect").await
    }

    /// The browser part for `client_id`: `user` signs in with a fresh
    /// browser and approves exactly `scopes`; returns (code, verifier).
    pub async fn approved_code_for(
        &self,
        user: &TestUser,
        client_id: &str,
        scopes: &str,
    ) -> (String, String) {
        let browser = self.signed_in(user).await;
        let pkce = Pkce::new();
        let path = self.authorize_path(client_id, &pkce, scopes, &[]);
        let params = browser.approve(&path, scopes).await;
        let code = params.get("code").expect("a code in the redirect").clone();
        (code, pkce.verifier)
    }

    /// The whole flow with a new public client; see the module
    /// documentation.
    pub async fn connect(&self, user: &TestUser, scopes: &str) -> Tokens {
        let client_id = self.register_public_client().await;
        self.connect_client(user, &client_id, scopes).await
    }

    /// The whole flow for an already registered public client.
    pub async fn connect_client(&self, user: &TestUser, client_id: &str, scopes: &str) -> Tokens {
        let (code, verifier) = self.approved_code_for(user, client_id, scopes).await;
        let response = self.exchange_code(client_id, &code, &verifier).await;
        assert_eq!(response.status(), 200, "code exchange failed");
        let body: Value = response.json().await.unwrap();
        Tokens {
            access_token: body["access_token"].as_str().unwrap().to_owned(),
            refresh_token: body["refresh_token"].as_str().unwrap().to_owned(),
            client_id: client_id.to_owned(),
            expires_in: body["expires_in"].as_i64().unwrap(),
        }
    }
}

/// The query parameters of a redirect to the client, asserting the
/// redirect goes to [`REDIRECT_URI`].
pub fn callback(response: &reqwest::Response) -> HashMap<String, String> {
    assert_eq!(response.status(), 303, "expected a redirect to the client");
    let target = location(response);
    let url = url::Url::parse(&target).unwrap();
    assert_eq!(
        format!("{}://{}{}", url.scheme(), url.authority(), url.path()),
        REDIRECT_URI,
        "{target}"
    );
    url.query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The query of a redirect to [`HTTPS_REDIRECT`].
pub fn https_callback(response: &reqwest::Response) -> HashMap<String, String> {
    redirect_params(response, HTTPS_REDIRECT)
}

/// The query of a redirect (303) to `redirect`.
pub fn redirect_params(response: &reqwest::Response, redirect: &str) -> HashMap<String, String> {
    assert_eq!(response.status(), 303, "expected a redirect to the client");
    let target = location(response);
    assert!(target.starts_with(&format!("{redirect}?")), "{target}");
    url::Url::parse(&target)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect()
}

/// The claims of a JWT, unverified (tests check what Coop put in them).
pub fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

/// The header of a JWT.
pub fn jwt_header(jwt: &str) -> Value {
    let header = jwt.split('.').next().unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap()
}

/// The key id (`kid`) in a JWT's header.
pub fn kid(jwt: &str) -> String {
    jwt_header(jwt)["kid"].as_str().unwrap().to_owned()
}

/// Asserts a JSON OAuth error: status, `error` code, `Cache-Control:
/// no-store`. Returns the body.
pub async fn assert_oauth_error(response: reqwest::Response, status: u16, code: &str) -> Value {
    assert_eq!(response.status(), status, "expected {status} {code}");
    assert_no_store(&response, &format!("{code} without no-store"));
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], code, "{body}");
    assert!(body["error_description"].is_string(), "{body}");
    body
}
