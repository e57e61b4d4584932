//! `private_key_jwt` client authentication (RFC 7523 §2.2) and the
//! negotiation of methods: for a Client ID Metadata Document in ChatGPT's
//! published shape (served by `tls_host`, its keys behind a `jwks_uri` on the
//! same host), for self-registered clients (`jwks` in the registration) and
//! for pre-registered ones (`coop admin client add --jwks-file/--jwks-uri`).
//!
//! Every refusal of an assertion is 401 `invalid_client` with no
//! `WWW-Authenticate: Basic` (the client did not try Basic), and leaves the
//! code it came with unspent.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::helpers::client_keys::key_set;
use crate::helpers::dpop::{ProofKey, nonce_asked_for, token_proof_with_nonce};
use crate::helpers::mcp::{BOTH_SCOPES, Wire};
use crate::helpers::oauth::{self, Pkce, TokenRequest, assert_oauth_error};
use crate::helpers::{ClientKey, Engine, TestApp, location};
use crate::on_both_engines;
use crate::tls_host::{Reply, TlsHost};

on_both_engines!(
    chatgpts_document_connects_with_a_private_key_jwt_assertion,
    chatgpts_document_connects_with_none_when_coop_cannot_verify_its_algorithm,
    every_bad_assertion_is_invalid_client_and_spends_nothing,
    an_assertion_is_accepted_once_even_by_two_replicas,
    an_unknown_kid_fetches_the_key_set_again_once,
    a_document_offering_only_methods_coop_lacks_is_refused_before_anything_is_stored,
    a_self_registered_client_with_jwks_authenticates_with_assertions_only,
    registration_negotiates_from_the_methods_a_client_supports,
    preregistered_clients_authenticate_with_a_jwks_file_or_uri,
    assertions_with_times_at_the_edges_are_invalid_client,
    a_client_sent_back_for_a_dpop_nonce_retries_with_the_same_assertion,
);

pub const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const DOCUMENT: &str = "/oauth/chatgpt/client.json";
const JWKS: &str = "/oauth/jwks.json";
const REDIRECT: &str = "https://chatgpt.example/connector/oauth/abc";

/// Good assertion claims for `client_id` at `app`: `aud` the token
/// endpoint, a fresh `jti`, expiring in a minute of the app's clock.
pub fn claims(app: &TestApp, client_id: &str) -> Value {
    let now = app.clock.now().unix_timestamp();
    json!({
        "iss": client_id,
        "sub": client_id,
        "aud": format!("{}/token", app.issuer),
        "iat": now,
        "exp": now + 60,
        "jti": uuid::Uuid::new_v4().to_string(),
    })
}

/// ChatGPT's published document for `client_id`: `private_key_jwt`
/// preferred, `none` offered, RS256, keys at [`JWKS`], an https redirect.
fn chatgpt_document(host: &TlsHost, client_id: &str, alg: &str) -> Value {
    json!({
        "client_id": client_id,
        "client_name": "ChatGPT",
        "client_uri": "https://chatgpt.example",
        "logo_uri": "https://chatgpt.example/logo.png",
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "private_key_jwt",
        "token_endpoint_auth_methods_supported": ["none", "private_key_jwt"],
        "token_endpoint_auth_signing_alg": alg,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "jwks_uri": host.url(JWKS),
    })
}

/// A host serving ChatGPT's document (signing with `alg`) and `key`'s set,
/// and Coop trusting it.
async fn chatgpt(engine: Engine, key: &ClientKey, alg: &str) -> (TlsHost, TestApp, String) {
    let host = TlsHost::start().await;
    let client_id = host.url(DOCUMENT);
    host.serve(
        DOCUMENT,
        Reply::json(&chatgpt_document(&host, &client_id, alg)),
    );
    host.serve(JWKS, Reply::json(&key_set(&[key])));
    let settings = host.cimd_settings(true);
    let app = TestApp::spawn_with(engine, |c| c.cimd_test = settings).await;
    (host, app, client_id)
}

/// Signs a member in and approves both scopes for `client_id` (redirected
/// to `redirect`); returns the code and its PKCE.
async fn approve(app: &TestApp, client_id: &str, redirect: &str) -> (String, Pkce) {
    let user = app.farm_with_member("manager").await;
    let browser = app.signed_in(&user).await;
    let pkce = Pkce::new();
    let path = app.authorize_path(
        client_id,
        &pkce,
        BOTH_SCOPES,
        &[("redirect_uri", Some(redirect))],
    );
    let html = browser.open_consent(&path).await;
    let ticked: Vec<&str> = BOTH_SCOPES.split_whitespace().collect();
    let response = browser.accept(&html, &ticked).await;
    assert_eq!(response.status(), 303);
    let target = url::Url::parse(&location(&response)).unwrap();
    assert!(target.as_str().starts_with(redirect), "{target}");
    let code = target
        .query_pairs()
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    (code, pkce)
}

/// The code exchange's form, with `auth` as the client's authentication.
async fn exchange(
    app: &TestApp,
    code: &str,
    pkce: &Pkce,
    redirect: &str,
    auth: &[(&str, &str)],
) -> reqwest::Response {
    let resource = format!("{}/mcp", app.issuer);
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("code_verifier", pkce.verifier.as_str()),
        ("redirect_uri", redirect),
        ("resource", resource.as_str()),
    ];
    form.extend_from_slice(auth);
    app.token_request(&form).await
}

fn with_assertion(assertion: &str) -> [(&'static str, &str); 2] {
    [
        ("client_assertion_type", ASSERTION_TYPE),
        ("client_assertion", assertion),
    ]
}

/// A 401 `invalid_client` with no Basic challenge.
async fn assert_refused(response: reqwest::Response, what: &str) {
    assert_eq!(response.status(), 401, "{what}");
    assert!(
        response.headers().get("www-authenticate").is_none(),
        "{what}: no Basic challenge for an assertion"
    );
    assert_oauth_error(response, 401, "invalid_client").await;
}

/// `POST /revoke` of a token nobody issued, with `auth`: 200 when the
/// client authenticates (RFC 7009 §2.2), 401 when it does not.
async fn revoke_nothing(app: &TestApp, auth: &[(&str, &str)]) -> reqwest::Response {
    let mut form = vec![("token", "not-a-token")];
    form.extend_from_slice(auth);
    reqwest::Client::new()
        .post(app.url("/revoke"))
        .form(&form)
        .send()
        .await
        .unwrap()
}

async fn chatgpts_document_connects_with_a_private_key_jwt_assertion(engine: Engine) {
    let key = ClientKey::rs256("chatgpt-1", 0);
    let (host, app, client_id) = chatgpt(engine, &key, "RS256").await;
    let (code, pkce) = approve(&app, &client_id, REDIRECT).await;

    // Without the assertion the negotiated method is not used: refused.
    let public = [("client_id", client_id.as_str())];
    assert_refused(
        exchange(&app, &code, &pkce, REDIRECT, &public).await,
        "no assertion",
    )
    .await;

    // With it (and, as RFC 7523 §3 allows, no client_id), the code.
    let assertion = key.sign(&claims(&app, &client_id));
    let response = exchange(&app, &code, &pkce, REDIRECT, &with_assertion(&assertion)).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let access = body["access_token"].as_str().unwrap();
    assert_eq!(oauth::claims(access)["client_id"], client_id.as_str());
    assert_eq!(host.hits(JWKS), 1, "the key set was fetched once");

    // The token works at /mcp.
    let tools = app.tool_names(access, Wire::V2025_11_25).await;
    assert!(!tools.is_empty());

    // Refresh with a new assertion addressed to the issuer, client_id given.
    let refresh_token = body["refresh_token"].as_str().unwrap();
    let mut to_issuer = claims(&app, &client_id);
    to_issuer["aud"] = json!(app.issuer);
    let assertion = key.sign(&to_issuer);
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("client_id", client_id.as_str()),
        ("refresh_token", refresh_token),
    ];
    form.extend_from_slice(&with_assertion(&assertion));
    let response = app.token_request(&form).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(host.hits(JWKS), 1, "the cached key set served again");

    // Revocation authenticates the same way, and ends the grant.
    let refresh_token = body["refresh_token"].as_str().unwrap();
    let assertion = key.sign(&claims(&app, &client_id));
    let mut form = vec![("token", refresh_token)];
    form.extend_from_slice(&with_assertion(&assertion));
    let response = reqwest::Client::new()
        .post(app.url("/revoke"))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let grants = app
        .db_count("select count(*) from grants where revoked_at is null")
        .await;
    assert_eq!(grants, 0);
}

async fn chatgpts_document_connects_with_none_when_coop_cannot_verify_its_algorithm(
    engine: Engine,
) {
    // The same document, signing with an algorithm Coop does not verify:
    // Coop cannot offer private_key_jwt, so the next method the document
    // offers, none, is negotiated.
    let key = ClientKey::rs256("chatgpt-1", 0);
    let (host, app, client_id) = chatgpt(engine, &key, "ES512").await;
    let (code, pkce) = approve(&app, &client_id, REDIRECT).await;

    // An assertion is not what this client was agreed to use.
    let assertion = key.sign(&claims(&app, &client_id));
    assert_refused(
        exchange(&app, &code, &pkce, REDIRECT, &with_assertion(&assertion)).await,
        "an assertion from a client negotiated to none",
    )
    .await;

    let public = [("client_id", client_id.as_str())];
    let response = exchange(&app, &code, &pkce, REDIRECT, &public).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let access = body["access_token"].as_str().unwrap();
    assert!(!app.tool_names(access, Wire::V2025_11_25).await.is_empty());
    assert_eq!(host.hits(JWKS), 0, "no key set is needed for none");
}

async fn every_bad_assertion_is_invalid_client_and_spends_nothing(engine: Engine) {
    let key = ClientKey::rs256("chatgpt-1", 0);
    let (_host, app, client_id) = chatgpt(engine, &key, "RS256").await;
    let (code, pkce) = approve(&app, &client_id, REDIRECT).await;
    let good = || claims(&app, &client_id);
    let now = app.clock.now().unix_timestamp();
    let changed = |name: &str, value: Value| {
        let mut claims = good();
        claims[name] = value;
        key.sign(&claims)
    };

    // This client's key under a kid it never published; another client's
    // key under its own kid, and under this client's.
    let stranger = ClientKey::rs256("someone-else", 0);
    let other_client = ClientKey::rs256("other-client", 1);
    let impostor = ClientKey::rs256("chatgpt-1", 1);
    let unsigned = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"none","kid":"chatgpt-1"}"#),
        URL_SAFE_NO_PAD.encode(good().to_string())
    );
    // HS256 keyed with the RSA modulus everyone can read.
    let jsonwebtoken::jwk::AlgorithmParameters::RSA(rsa) = &key.public.algorithm else {
        unreachable!()
    };
    let mut hs_header = Header::new(Algorithm::HS256);
    hs_header.kid = Some("chatgpt-1".into());
    let hmac = jsonwebtoken::encode(
        &hs_header,
        &good(),
        &EncodingKey::from_secret(rsa.n.as_bytes()).unwrap(),
    )
    .unwrap();
    let cases: Vec<(&str, String)> = vec![
        (
            "aud another server",
            changed("aud", json!("https://elsewhere.example/token")),
        ),
        (
            "aud the MCP resource",
            changed("aud", json!(format!("{}/mcp", app.issuer))),
        ),
        ("aud missing", {
            let mut claims = good();
            claims.as_object_mut().unwrap().remove("aud");
            key.sign(&claims)
        }),
        ("expired", changed("exp", json!(now - 120))),
        ("exp missing", {
            let mut claims = good();
            claims.as_object_mut().unwrap().remove("exp");
            key.sign(&claims)
        }),
        ("exp an hour ahead", changed("exp", json!(now + 3600))),
        ("jti missing", {
            let mut claims = good();
            claims.as_object_mut().unwrap().remove("jti");
            key.sign(&claims)
        }),
        (
            "iss another client",
            changed("iss", json!("https://other.example/c.json")),
        ),
        ("unknown kid", stranger.sign(&good())),
        ("another client's key", other_client.sign(&good())),
        (
            "another client's key under this kid",
            impostor.sign(&good()),
        ),
        (
            "an algorithm other than the registered one",
            ClientKey::es256("chatgpt-1").sign(&good()),
        ),
        ("alg none", unsigned),
        ("alg HS256", hmac),
        ("not a JWT", "not-a-jwt".to_owned()),
    ];
    // Every case is sent before any is judged, so that a check removed
    // shows as its own case (client authentication comes before the code,
    // so a case let through cannot hide another).
    let mut not_refused = Vec::new();
    for (what, assertion) in &cases {
        let response = exchange(&app, &code, &pkce, REDIRECT, &with_assertion(assertion)).await;
        let status = response.status();
        let basic = response.headers().contains_key("www-authenticate");
        let body: Value = response.json().await.unwrap();
        if status != 401 || basic || body["error"] != "invalid_client" {
            not_refused.push(format!("{what}: {status} {body}"));
        }
    }
    assert!(not_refused.is_empty(), "not refused: {not_refused:#?}");
    // The assertion type is compared exactly.
    let assertion = key.sign(&good());
    let wrong_type = [
        (
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:saml2-bearer",
        ),
        ("client_assertion", assertion.as_str()),
    ];
    assert_refused(
        exchange(&app, &code, &pkce, REDIRECT, &wrong_type).await,
        "wrong client_assertion_type",
    )
    .await;
    // An assertion beside a secret is two methods at once.
    let mut two = with_assertion(&assertion).to_vec();
    two.push(("client_secret", "s"));
    assert_oauth_error(
        exchange(&app, &code, &pkce, REDIRECT, &two).await,
        400,
        "invalid_request",
    )
    .await;

    // None of that spent the code, nor any jti: the good assertion works.
    let response = exchange(&app, &code, &pkce, REDIRECT, &with_assertion(&assertion)).await;
    assert_eq!(response.status(), 200);
    app.assert_count("select count(*) from client_assertion_jtis", 1)
        .await;
}

async fn an_assertion_is_accepted_once_even_by_two_replicas(engine: Engine) {
    let key = ClientKey::rs256("chatgpt-1", 0);
    let (host, app, client_id) = chatgpt(engine, &key, "RS256").await;
    let settings = host.cimd_settings(true);
    let second = TestApp::spawn_on(app.db.clone(), |c| c.cimd_test = settings).await;
    let (code, pkce) = approve(&app, &client_id, REDIRECT).await;

    let assertion = key.sign(&claims(&app, &client_id));
    let response = exchange(&app, &code, &pkce, REDIRECT, &with_assertion(&assertion)).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let refresh_token = body["refresh_token"].as_str().unwrap();

    // The same assertion again, at the same replica and at another one.
    for replica in [&app, &second] {
        let mut form = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
        ];
        form.extend_from_slice(&with_assertion(&assertion));
        assert_refused(replica.token_request(&form).await, "replayed jti").await;
    }
    // The refresh token was not spent by the refused requests.
    let fresh = key.sign(&claims(&second, &client_id));
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
    ];
    form.extend_from_slice(&with_assertion(&fresh));
    assert_eq!(second.token_request(&form).await.status(), 200);
}

async fn an_unknown_kid_fetches_the_key_set_again_once(engine: Engine) {
    // Sets that may be cached for an hour: only an unknown kid explains a
    // second fetch.
    let cached = |set: &Value| Reply::json(set).header("cache-control", "max-age=3600");
    let first = ClientKey::es256("k1");
    let host = TlsHost::start().await;
    host.serve(JWKS, cached(&key_set(&[&first])));
    let settings = host.cimd_settings(true);
    let app = TestApp::spawn_with(engine, |c| c.cimd_test = settings).await;
    let added = app
        .add_client(&[
            "--name",
            "Barn Sync",
            "--redirect-uri",
            "https://barn.example/cb",
            "--jwks-uri",
            &host.url(JWKS),
        ])
        .await;
    assert!(!added.out.contains("client_secret"), "{}", added.out);
    assert_eq!(host.hits(JWKS), 0, "registering fetches nothing");
    let client_id = added.field("client_id");
    let with = |key: &ClientKey| {
        let assertion = key.sign(&claims(&app, &client_id));
        [
            ("client_id".to_owned(), client_id.clone()),
            (
                "client_assertion_type".to_owned(),
                ASSERTION_TYPE.to_owned(),
            ),
            ("client_assertion".to_owned(), assertion),
        ]
    };
    let send = |form: [(String, String); 3]| {
        let app = &app;
        async move {
            let form: Vec<(&str, &str)> =
                form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            revoke_nothing(app, &form).await
        }
    };
    assert_eq!(send(with(&first)).await.status(), 200);
    assert_eq!(host.hits(JWKS), 1);

    // The client rotates to k2. Its first assertion names a kid the cached
    // set lacks: the set is fetched again, once a minute at most.
    let second = ClientKey::es256("k2");
    host.serve(JWKS, cached(&key_set(&[&second])));
    app.clock.advance(time::Duration::seconds(61));
    assert_eq!(send(with(&second)).await.status(), 200);
    assert_eq!(host.hits(JWKS), 2);
    // A kid in no set: refused, and no third fetch so soon.
    let unknown = ClientKey::es256("k3");
    assert_refused(send(with(&unknown)).await, "a kid in no set").await;
    assert_refused(send(with(&unknown)).await, "a kid in no set, again").await;
    assert_eq!(
        host.hits(JWKS),
        2,
        "unknown kids do not make Coop fetch on every request"
    );
    // The retired key no longer verifies.
    assert_refused(send(with(&first)).await, "a retired key").await;
}

async fn a_document_offering_only_methods_coop_lacks_is_refused_before_anything_is_stored(
    engine: Engine,
) {
    let host = TlsHost::start().await;
    let client_id = host.url(DOCUMENT);
    let mut document = chatgpt_document(&host, &client_id, "RS256");
    document["token_endpoint_auth_method"] = json!("tls_client_auth");
    document["token_endpoint_auth_methods_supported"] =
        json!(["tls_client_auth", "self_signed_tls_client_auth"]);
    host.serve(DOCUMENT, Reply::json(&document));
    let settings = host.cimd_settings(true);
    let app = TestApp::spawn_with(engine, |c| c.cimd_test = settings).await;
    let user = app.farm_with_member("manager").await;
    let browser = app.signed_in(&user).await;
    let path = app.authorize_path(
        &client_id,
        &Pkce::new(),
        "farm:read",
        &[("redirect_uri", Some(REDIRECT))],
    );
    let response = browser.open(&path).await;
    assert_eq!(response.status(), 400);
    assert!(response.headers().get("location").is_none());
    let page = response.text().await.unwrap();
    for named in [
        "tls_client_auth",
        "self_signed_tls_client_auth",
        "private_key_jwt",
        "none",
    ] {
        assert!(page.contains(named), "the refusal names {named}: {page}");
    }
    assert_eq!(app.client_count().await, 0);
    app.assert_count("select count(*) from authorization_codes", 0)
        .await;
    // And at the token endpoint it is no client.
    let response = app
        .token(&TokenRequest::code(&client_id, "x", &Pkce::new().verifier))
        .await;
    assert_oauth_error(response, 401, "invalid_client").await;
}

const WEB: &str = "https://web.example/cb";

/// Registers a `private_key_jwt` client at `app` (`/register`, anyone may)
/// whose set is `key` (EdDSA), redirected to [`WEB`]; returns its id.
async fn register_signed(app: &TestApp, key: &ClientKey) -> String {
    let response = app
        .register(&json!({
            "client_name": "Signed App",
            "redirect_uris": [WEB],
            "token_endpoint_auth_method": "private_key_jwt",
            "token_endpoint_auth_signing_alg": "EdDSA",
            "jwks": key_set(&[key]),
        }))
        .await;
    assert_eq!(response.status(), 201);
    let registered: Value = response.json().await.unwrap();
    assert_eq!(registered["token_endpoint_auth_method"], "private_key_jwt");
    assert_eq!(registered["token_endpoint_auth_signing_alg"], "EdDSA");
    assert!(registered["jwks"]["keys"].is_array());
    assert!(registered.get("client_secret").is_none(), "{registered}");
    registered["client_id"].as_str().unwrap().to_owned()
}

async fn a_self_registered_client_with_jwks_authenticates_with_assertions_only(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let key = ClientKey::ed25519("reg-1");
    let client_id = register_signed(&app, &key).await;

    let (code, pkce) = approve(&app, &client_id, WEB).await;
    let public = [("client_id", client_id.as_str())];
    assert_refused(
        exchange(&app, &code, &pkce, WEB, &public).await,
        "no assertion",
    )
    .await;
    let secret = [
        ("client_id", client_id.as_str()),
        ("client_secret", "guess"),
    ];
    assert_refused(exchange(&app, &code, &pkce, WEB, &secret).await, "a secret").await;
    // Signed with another registered algorithm's key.
    let es = ClientKey::es256("reg-1");
    let assertion = es.sign(&claims(&app, &client_id));
    assert_refused(
        exchange(&app, &code, &pkce, WEB, &with_assertion(&assertion)).await,
        "not the registered algorithm",
    )
    .await;
    let assertion = key.sign(&claims(&app, &client_id));
    let response = exchange(&app, &code, &pkce, WEB, &with_assertion(&assertion)).await;
    assert_eq!(response.status(), 200);
}

async fn registration_negotiates_from_the_methods_a_client_supports(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    // Preferred unknown; the first supported one Coop offers is chosen.
    let response = app.register(&json!({
            "redirect_uris": [WEB],
            "token_endpoint_auth_method": "tls_client_auth",
            "token_endpoint_auth_methods_supported": ["tls_client_auth", "client_secret_post", "none"],
        }))
    .await;
    assert_eq!(response.status(), 201);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_endpoint_auth_method"], "client_secret_post");
    assert!(body["client_secret"].is_string());

    // private_key_jwt preferred without keys: the next one, none.
    let key = ClientKey::es256("k");
    let response = app
        .register(&json!({
            "redirect_uris": [WEB],
            "token_endpoint_auth_method": "private_key_jwt",
            "token_endpoint_auth_methods_supported": ["none", "private_key_jwt"],
        }))
        .await;
    assert_eq!(response.status(), 201);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_endpoint_auth_method"], "none");
    assert!(body.get("client_secret").is_none());

    // Nothing in common: refused, naming both lists.
    let before = app.client_count().await;
    for (request, named) in [
        (
            json!({"redirect_uris": [WEB], "token_endpoint_auth_method": "tls_client_auth",
                   "token_endpoint_auth_methods_supported": ["self_signed_tls_client_auth"]}),
            "self_signed_tls_client_auth",
        ),
        (
            json!({"redirect_uris": [WEB], "token_endpoint_auth_method": "private_key_jwt"}),
            "private_key_jwt needs jwks or jwks_uri",
        ),
        (
            json!({"redirect_uris": [WEB], "token_endpoint_auth_method": "private_key_jwt",
                   "jwks": key_set(&[&key]), "token_endpoint_auth_signing_alg": "HS256"}),
            "token_endpoint_auth_signing_alg",
        ),
        (
            json!({"redirect_uris": [WEB], "token_endpoint_auth_method": "private_key_jwt",
                   "jwks": {"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}}),
            "symmetric",
        ),
        (
            json!({"redirect_uris": [WEB], "token_endpoint_auth_method": "private_key_jwt",
                   "jwks_uri": "http://keys.example/jwks.json"}),
            "jwks_uri",
        ),
    ] {
        let body =
            assert_oauth_error(app.register(&request).await, 400, "invalid_client_metadata").await;
        let description = body["error_description"].as_str().unwrap();
        assert!(description.contains(named), "{description} / {named}");
    }
    assert_eq!(app.client_count().await, before);
}

async fn preregistered_clients_authenticate_with_a_jwks_file_or_uri(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let key = ClientKey::es256("file-1");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jwks.json");
    std::fs::write(&file, key_set(&[&key]).to_string()).unwrap();
    let add = |extra: Vec<String>| {
        let app = &app;
        async move {
            let mut args: Vec<String> = [
                "admin",
                "client",
                "add",
                "--name",
                "Barn Sync",
                "--redirect-uri",
                WEB,
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            args.extend(extra);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            app.cli(&args).await
        }
    };
    let (status, stdout, stderr) =
        add(vec!["--jwks-file".into(), file.display().to_string()]).await;
    assert_eq!(status, 0, "{stderr}");
    assert!(!stdout.contains("client_secret"), "{stdout}");
    let client_id = stdout
        .lines()
        .find_map(|l| l.strip_prefix("client_id: "))
        .unwrap()
        .to_owned();

    let assertion = key.sign(&claims(&app, &client_id));
    let auth = with_assertion(&assertion);
    assert_eq!(revoke_nothing(&app, &auth).await.status(), 200);
    // Replayed at /revoke too.
    assert_refused(revoke_nothing(&app, &auth).await, "replayed at /revoke").await;
    // No assertion: refused.
    assert_refused(
        revoke_nothing(&app, &[("client_id", client_id.as_str())]).await,
        "no assertion at /revoke",
    )
    .await;

    // One-line refusals.
    for (extra, words) in [
        (
            vec![
                "--jwks-uri".to_owned(),
                "http://keys.example/j.json".to_owned(),
            ],
            "--jwks-uri",
        ),
        (
            vec![
                "--jwks-file".to_owned(),
                "/nonexistent/jwks.json".to_owned(),
            ],
            "--jwks-file",
        ),
        (
            vec![
                "--jwks-uri".to_owned(),
                "https://keys.example/j.json".to_owned(),
                "--confidential".to_owned(),
            ],
            "cannot be used with",
        ),
    ] {
        let (status, _, stderr) = add(extra).await;
        assert_eq!(status, 1, "{stderr}");
        assert!(stderr.contains(words), "{stderr} / {words}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    std::fs::write(&file, r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#).unwrap();
    let (status, _, stderr) = add(vec!["--jwks-file".into(), file.display().to_string()]).await;
    assert_eq!(status, 1);
    assert!(stderr.contains("symmetric"), "{stderr}");
}

async fn assertions_with_times_at_the_edges_are_invalid_client(engine: Engine) {
    // Anyone can register keys and sign whatever claims they like.
    let app = TestApp::spawn(engine).await;
    let key = ClientKey::ed25519("reg-1");
    let client_id = register_signed(&app, &key).await;
    let (code, pkce) = approve(&app, &client_id, WEB).await;
    // 9999-12-31T23:59:59Z, the last second the clock's type holds: `exp`
    // plus the skew once overflowed it, and the request panicked.
    let end_of_time = 253_402_300_799_i64;
    let cases = [
        ("exp", json!(end_of_time)),
        ("exp", json!(end_of_time - 30)),
        ("exp", json!(end_of_time + 1)),
        ("exp", json!(i64::MAX)),
        ("exp", json!(i64::MIN)),
        ("exp", json!(0)),
        ("exp", json!(-1)),
        ("exp", json!(1e300)),
        ("exp", json!(u64::MAX)),
        ("iat", json!(end_of_time)),
        ("iat", json!(i64::MAX)),
        ("nbf", json!(end_of_time)),
        ("nbf", json!(1.5)),
    ];
    for (name, value) in cases {
        let mut claims = claims(&app, &client_id);
        claims[name] = value.clone();
        let response = exchange(&app, &code, &pkce, WEB, &with_assertion(&key.sign(&claims))).await;
        assert_refused(response, &format!("{name} {value}")).await;
    }
    // The server is still serving, and nothing was spent.
    let assertion = key.sign(&claims(&app, &client_id));
    let response = exchange(&app, &code, &pkce, WEB, &with_assertion(&assertion)).await;
    assert_eq!(response.status(), 200);
}

async fn a_client_sent_back_for_a_dpop_nonce_retries_with_the_same_assertion(engine: Engine) {
    let app = TestApp::spawn_with(engine, |c| c.dpop_require_nonce = true).await;
    let key = ClientKey::ed25519("reg-1");
    let client_id = register_signed(&app, &key).await;
    let (code, pkce) = approve(&app, &client_id, WEB).await;
    let assertion = key.sign(&claims(&app, &client_id));
    let request = TokenRequest::fields(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("code_verifier", &pkce.verifier),
        ("redirect_uri", WEB),
        ("resource", &app.resource()),
        ("client_assertion_type", ASSERTION_TYPE),
        ("client_assertion", &assertion),
    ]);
    let proof_key = ProofKey::es256();

    // The assertion and a proof without the nonce Coop requires: sent back
    // for the nonce, having spent nothing.
    let nonce = nonce_asked_for(&app, &request, &proof_key).await;
    app.assert_count("select count(*) from client_assertion_jtis", 0)
        .await;
    // The retry RFC 9449 §8 asks for: the same request, the same
    // assertion, a new proof with the nonce.
    let retry = || {
        request
            .clone()
            .dpop(&token_proof_with_nonce(&app, &proof_key, &nonce))
    };
    let response = retry().send(&app).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_type"], "DPoP");
    // Once used, the assertion is spent: the same again is a replay.
    assert_refused(retry().send(&app).await, "the assertion again").await;
}
