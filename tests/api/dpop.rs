//! DPoP (RFC 9449) at `/token` and `/mcp`: bound tokens for a proof, every
//! refusal of a bad proof with its exact status, error and challenge, a
//! replay on another replica, a bound token sent as a bearer token, bound
//! refresh tokens, server nonces, and the metadata that advertises it.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::helpers::dpop::{
    self, ALGS, Bound, ProofKey, assert_dpop_refusal, bound_from, challenges,
};
use crate::helpers::mcp::{self, BOTH_SCOPES, challenge};
use crate::helpers::oauth::{self, assert_oauth_error, claims};
use crate::helpers::{Engine, TestApp, TestUser};
use crate::on_both_engines;

on_both_engines!(
    a_code_exchanged_with_a_proof_gives_a_token_bound_to_its_key,
    each_algorithm_binds_and_calls,
    a_token_request_without_a_proof_still_gets_a_bearer_token,
    a_bad_proof_at_the_token_endpoint_is_refused_and_spends_nothing,
    the_token_endpoints_htu_is_the_issuers_not_the_host,
    a_public_clients_refresh_token_is_bound_to_its_key,
    a_confidential_clients_refresh_token_is_not_bound,
    each_wrong_proof_at_mcp_is_invalid_dpop_proof,
    a_replayed_proof_is_refused_on_every_replica,
    a_bound_token_sent_as_bearer_is_refused,
    a_bearer_token_sent_with_the_dpop_scheme_is_refused,
    a_bound_token_short_of_scope_gets_the_dpop_challenge,
    nonces_are_required_at_both_endpoints_when_configured,
    both_metadata_documents_advertise_dpop,
    seen_proofs_are_forgotten_once_too_old,
    a_browser_client_may_send_a_proof_and_read_the_nonce,
    an_automations_token_is_bound_for_a_proof,
    introspection_describes_a_bound_token_with_its_key,
);

/// A fresh app where a viewer connected with a fresh ES256 key for
/// `farm:read`: (app, viewer, key, the bound tokens).
async fn bound_viewer(engine: Engine) -> (TestApp, TestUser, ProofKey, Bound) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    let key = ProofKey::es256();
    let bound = app.connect_bound(&user, "farm:read", &key).await;
    (app, user, key, bound)
}

/// A fresh app where a manager of a farm with flocks connected with a
/// fresh ES256 key for `scopes`: (app, manager, key, the bound tokens).
async fn bound_manager(engine: Engine, scopes: &str) -> (TestApp, TestUser, ProofKey, Bound) {
    let (app, user) = TestApp::with_flocks(engine, "manager").await;
    let key = ProofKey::es256();
    let bound = app.connect_bound(&user, scopes, &key).await;
    (app, user, key, bound)
}

async fn a_code_exchanged_with_a_proof_gives_a_token_bound_to_its_key(engine: Engine) {
    let (app, _, key, bound) = bound_manager(engine, BOTH_SCOPES).await;
    assert_eq!(bound.token_type, "DPoP");
    assert_eq!(
        claims(&bound.access_token)["cnf"],
        json!({"jkt": key.thumbprint()})
    );

    let response = app.list_with_key(&bound.access_token, &key).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["result"]["tools"].as_array().unwrap().len() > 3,
        "{body}"
    );
    let (status, body) = app
        .call_with_key(&bound.access_token, &key, "list_flocks", json!({}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_ne!(body["result"]["isError"], true, "{body}");
    // Every call needs its own proof, on the cached signature as on the first.
    for _ in 0..2 {
        assert_eq!(
            app.list_with_key(&bound.access_token, &key).await.status(),
            200
        );
    }
}

async fn each_algorithm_binds_and_calls(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    for key in [ProofKey::ed25519(), ProofKey::rs256(), ProofKey::ps256()] {
        let bound = app.connect_bound(&user, "farm:read", &key).await;
        assert_eq!(
            claims(&bound.access_token)["cnf"]["jkt"],
            key.thumbprint(),
            "{}",
            key.alg
        );
        let response = app.list_with_key(&bound.access_token, &key).await;
        assert_eq!(response.status(), 200, "{}", key.alg);
    }
}

async fn a_token_request_without_a_proof_still_gets_a_bearer_token(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    let (client_id, code, verifier) = app.approved_code(&user, "farm:read").await;
    let response = app.exchange_with(&client_id, &code, &verifier, None).await;
    assert!(response.headers().get("dpop-nonce").is_none());
    let bearer = bound_from(response, &client_id).await;
    assert_eq!(bearer.token_type, "Bearer");
    assert!(claims(&bearer.access_token).get("cnf").is_none());
    assert_eq!(app.list_with(&bearer.access_token).await.status(), 200);
    // Its refresh token is not bound: refreshed without a proof, a bearer again.
    let response = app
        .refresh_with(&client_id, &bearer.refresh_token, None)
        .await;
    assert_eq!(bound_from(response, &client_id).await.token_type, "Bearer");
}

async fn a_bad_proof_at_the_token_endpoint_is_refused_and_spends_nothing(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    let (client_id, code, verifier) = app.approved_code(&user, "farm:read").await;
    let key = ProofKey::es256();
    let token = app.token_url();
    let header_without_jwk = {
        let mut h = key.header();
        h.as_object_mut().unwrap().remove("jwk");
        h
    };
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("htm GET", vec![key.proof("GET", &token, None)]),
        ("htu of /mcp", vec![key.proof("POST", &app.mcp_url(), None)]),
        (
            "iat an hour ago",
            vec![key.proof_with(&token, None, |c| {
                c["iat"] = (c["iat"].as_i64().unwrap() - 3600).into()
            })],
        ),
        (
            "no jwk",
            vec![key.sign_with_header(&header_without_jwk, &claims_for(&token))],
        ),
        (
            "two proofs",
            vec![
                key.proof("POST", &token, None),
                key.proof("POST", &token, None),
            ],
        ),
        ("not a JWT", vec!["nonsense".to_owned()]),
    ];
    for (what, proofs) in cases {
        let proofs: Vec<&str> = proofs.iter().map(String::as_str).collect();
        let form = exchange_form(&app, &client_id, &code, &verifier);
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let response = app.token_with_proofs(&form, &proofs).await;
        assert_eq!(response.status(), 400, "{what}");
        assert!(response.headers().get("dpop-nonce").is_none(), "{what}");
        assert_oauth_error(response, 400, "invalid_dpop_proof").await;
    }
    // A replayed proof: the first use spends its jti (the grant refuses for
    // another reason, a wrong resource), the second is a replay.
    let proof = key.proof("POST", &token, None);
    let wrong_resource = [
        ("grant_type", "authorization_code"),
        ("client_id", client_id.as_str()),
        ("code", code.as_str()),
        ("code_verifier", verifier.as_str()),
        ("resource", "https://elsewhere.example/mcp"),
    ];
    let response = app.token_with_proofs(&wrong_resource, &[&proof]).await;
    assert_oauth_error(response, 400, "invalid_target").await;
    let response = app
        .exchange_with(&client_id, &code, &verifier, Some(&proof))
        .await;
    assert_oauth_error(response, 400, "invalid_dpop_proof").await;
    // Nothing was spent: the code still exchanges with a good proof.
    let good = key.proof("POST", &token, None);
    let bound = bound_from(
        app.exchange_with(&client_id, &code, &verifier, Some(&good))
            .await,
        &client_id,
    )
    .await;
    assert_eq!(bound.token_type, "DPoP");
}

fn claims_for(htu: &str) -> Value {
    dpop::claims("POST", htu, None)
}

fn exchange_form(
    app: &TestApp,
    client_id: &str,
    code: &str,
    verifier: &str,
) -> Vec<(&'static str, String)> {
    vec![
        ("grant_type", "authorization_code".to_owned()),
        ("client_id", client_id.to_owned()),
        ("code", code.to_owned()),
        ("code_verifier", verifier.to_owned()),
        ("redirect_uri", oauth::REDIRECT_URI.to_owned()),
        ("resource", app.mcp_url()),
    ]
}

async fn the_token_endpoints_htu_is_the_issuers_not_the_host(engine: Engine) {
    let app = TestApp::spawn_with(engine, |c| {
        c.issuer = Some(coop::config::Issuer::parse("https://coop.example").unwrap());
    })
    .await;
    let user = app.farm_with_member("viewer").await;
    let (client_id, code, verifier) = app.approved_code(&user, "farm:read").await;
    let key = ProofKey::es256();
    // The address the request went to (its Host) is not the issuer.
    let by_host = key.proof("POST", &app.url("/token"), None);
    let response = app
        .exchange_with(&client_id, &code, &verifier, Some(&by_host))
        .await;
    assert_oauth_error(response, 400, "invalid_dpop_proof").await;
    let by_issuer = key.proof("POST", "https://coop.example/token", None);
    let response = app
        .exchange_with(&client_id, &code, &verifier, Some(&by_issuer))
        .await;
    assert_eq!(bound_from(response, &client_id).await.token_type, "DPoP");
}

async fn a_public_clients_refresh_token_is_bound_to_its_key(engine: Engine) {
    let (app, _, key, bound) = bound_viewer(engine).await;
    let rows = || {
        app.db_count(
            "select count(*) from refresh_tokens where used_at is null and dpop_jkt is not null",
        )
    };
    assert_eq!(rows().await, 1);

    // Another key, or none: invalid_grant, and nothing is spent.
    let other = ProofKey::es256();
    let response = app
        .refresh_with(&bound.client_id, &bound.refresh_token, Some(&other))
        .await;
    assert_oauth_error(response, 400, "invalid_grant").await;
    let response = app
        .refresh_with(&bound.client_id, &bound.refresh_token, None)
        .await;
    assert_oauth_error(response, 400, "invalid_grant").await;
    app.assert_count(
        "select count(*) from refresh_tokens where used_at is not null",
        0,
    )
    .await;
    app.assert_count(
        "select count(*) from grants where revoked_at is not null",
        0,
    )
    .await;

    // Its own key: a new bound pair, the successor bound as well.
    let response = app
        .refresh_with(&bound.client_id, &bound.refresh_token, Some(&key))
        .await;
    let next = bound_from(response, &bound.client_id).await;
    assert_eq!(next.token_type, "DPoP");
    assert_eq!(claims(&next.access_token)["cnf"]["jkt"], key.thumbprint());
    let response = app
        .refresh_with(&bound.client_id, &next.refresh_token, None)
        .await;
    assert_oauth_error(response, 400, "invalid_grant").await;
    let response = app
        .refresh_with(&bound.client_id, &next.refresh_token, Some(&other))
        .await;
    assert_oauth_error(response, 400, "invalid_grant").await;
    assert_eq!(rows().await, 1);
    // The rotated-away token presented again within the reuse window with
    // its key gets the same successor, never with another key.
    let response = app
        .refresh_with(&bound.client_id, &bound.refresh_token, Some(&other))
        .await;
    assert_oauth_error(response, 400, "invalid_grant").await;
    let response = app
        .refresh_with(&bound.client_id, &bound.refresh_token, Some(&key))
        .await;
    assert_eq!(
        bound_from(response, &bound.client_id).await.refresh_token,
        next.refresh_token
    );
}

async fn a_confidential_clients_refresh_token_is_not_bound(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    let response = app
        .register(&json!({
            "client_name": "Server App",
            "redirect_uris": [oauth::REDIRECT_URI],
            "token_endpoint_auth_method": "client_secret_post",
        }))
        .await;
    assert_eq!(response.status(), 201);
    let registered: Value = response.json().await.unwrap();
    let client_id = registered["client_id"].as_str().unwrap();
    let secret = registered["client_secret"].as_str().unwrap();
    let (code, verifier) = app.approved_code_for(&user, client_id, "farm:read").await;
    let key = ProofKey::es256();
    let token = app.token_url();
    let mut form = exchange_form(&app, client_id, &code, &verifier);
    form.push(("client_secret", secret.to_owned()));
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let proof = key.proof("POST", &token, None);
    let bound = bound_from(app.token_with_proofs(&form, &[&proof]).await, client_id).await;
    assert_eq!(bound.token_type, "DPoP");
    app.assert_count(
        "select count(*) from refresh_tokens where dpop_jkt is not null",
        0,
    )
    .await;
    // Its secret binds its refresh token: a refresh without a proof is a bearer token.
    let refresh = [
        ("grant_type", "refresh_token"),
        ("client_id", client_id),
        ("client_secret", secret),
        ("refresh_token", bound.refresh_token.as_str()),
    ];
    let next = bound_from(app.token_with_proofs(&refresh, &[]).await, client_id).await;
    assert_eq!(next.token_type, "Bearer");
}

async fn each_wrong_proof_at_mcp_is_invalid_dpop_proof(engine: Engine) {
    let (app, _, key, bound) = bound_viewer(engine).await;
    let at = bound.access_token.as_str();
    let mcp = app.mcp_url();
    let now = || time::OffsetDateTime::now_utc().unix_timestamp();
    let header = |change: &dyn Fn(&mut Value)| {
        let mut h = key.header();
        change(&mut h);
        h
    };
    let good_claims = || dpop::claims("POST", &mcp, Some(at));
    let other = ProofKey::es256();
    let tampered = {
        let proof = key.proof("POST", &mcp, Some(at));
        let parts: Vec<&str> = proof.split('.').collect();
        let mut c = good_claims();
        c["htm"] = "POST".into();
        c["jti"] = "changed".into();
        use base64::Engine;
        let c = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(c.to_string());
        format!("{}.{c}.{}", parts[0], parts[2])
    };
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("no proof", vec![]),
        (
            "two proofs",
            vec![
                key.proof("POST", &mcp, Some(at)),
                key.proof("POST", &mcp, Some(at)),
            ],
        ),
        (
            "typ JWT",
            vec![key.sign_with_header(&header(&|h| h["typ"] = "JWT".into()), &good_claims())],
        ),
        (
            "alg none",
            vec![key.sign_with_header(&header(&|h| h["alg"] = "none".into()), &good_claims())],
        ),
        (
            "alg HS256",
            vec![key.sign_with_header(&header(&|h| h["alg"] = "HS256".into()), &good_claims())],
        ),
        (
            "private jwk",
            vec![key.sign_with_header(
                &header(&|h| h["jwk"]["d"] = "c2VjcmV0".into()),
                &good_claims(),
            )],
        ),
        (
            "another key's jwk",
            vec![key.sign_with_header(&header(&|h| h["jwk"] = other.public_jwk()), &good_claims())],
        ),
        ("altered claims", vec![tampered]),
        ("htm GET", vec![key.proof("GET", &mcp, Some(at))]),
        (
            "htu /token",
            vec![key.proof("POST", &app.token_url(), Some(at))],
        ),
        (
            "htu another host",
            vec![key.proof("POST", "http://evil.example/mcp", Some(at))],
        ),
        (
            "iat too old",
            vec![key.proof_with(&mcp, Some(at), |c| c["iat"] = (now() - 301).into())],
        ),
        (
            "iat in the future",
            vec![key.proof_with(&mcp, Some(at), |c| c["iat"] = (now() + 120).into())],
        ),
        (
            "ath of another token",
            vec![key.proof("POST", &mcp, Some("another token"))],
        ),
        ("no ath", vec![key.proof("POST", &mcp, None)]),
        (
            "no jti",
            vec![key.proof_with(&mcp, Some(at), |c| {
                drop(c.as_object_mut().unwrap().remove("jti"))
            })],
        ),
        (
            "another key (not the token's)",
            vec![other.proof("POST", &mcp, Some(at))],
        ),
    ];
    for (what, proofs) in cases {
        let proofs: Vec<&str> = proofs.iter().map(String::as_str).collect();
        let response = app.list_as("DPoP", at, &proofs).await;
        assert_dpop_refusal(response, &app, "invalid_dpop_proof", what).await;
    }
    // The query and fragment of htu are not compared.
    let proof = key.proof("POST", &format!("{mcp}?x=1#top"), Some(at));
    assert_eq!(app.list_as("DPoP", at, &[&proof]).await.status(), 200);
}

async fn a_replayed_proof_is_refused_on_every_replica(engine: Engine) {
    let a = TestApp::spawn(engine).await;
    let issuer = coop::config::Issuer::parse(&a.issuer).unwrap();
    let b = TestApp::spawn_on(Arc::clone(&a.db), |c| c.issuer = Some(issuer)).await;
    let user = a.farm_with_member("viewer").await;
    let key = ProofKey::es256();
    let bound = a.connect_bound(&user, "farm:read", &key).await;
    let proof = key.proof("POST", &a.mcp_url(), Some(&bound.access_token));
    // The issuer is a's address; b is reached at its own address with a's Host.
    let send = |app: &TestApp| {
        let wire = mcp::Wire::V2025_11_25;
        let body = mcp::request_body(wire, 1, "tools/list", Value::Null).to_string();
        let authorization = format!("DPoP {}", bound.access_token);
        let host = a.issuer.trim_start_matches("http://").to_owned();
        reqwest::Client::new()
            .post(app.url("/mcp"))
            .header("host", host)
            .header("authorization", authorization)
            .header("dpop", proof.clone())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", wire.version())
            .body(body)
            .send()
    };
    assert_eq!(send(&a).await.unwrap().status(), 200);
    let replay = send(&b).await.unwrap();
    assert_dpop_refusal(
        replay,
        &b,
        "invalid_dpop_proof",
        "replayed on the other replica",
    )
    .await;
    let replay = send(&a).await.unwrap();
    assert_dpop_refusal(
        replay,
        &a,
        "invalid_dpop_proof",
        "replayed on the same replica",
    )
    .await;
}

async fn a_bound_token_sent_as_bearer_is_refused(engine: Engine) {
    let (app, _, key, bound) = bound_viewer(engine).await;
    let metadata = app.metadata_url();
    // Without a proof, and even with a good one: the scheme says bearer.
    let proof = key.proof("POST", &app.mcp_url(), Some(&bound.access_token));
    for proofs in [vec![], vec![proof.as_str()]] {
        let response = app.list_as("Bearer", &bound.access_token, &proofs).await;
        assert_eq!(response.status(), 401);
        assert_eq!(
            challenges(&response),
            vec![
                app.invalid_token_challenge(),
                format!(
                    r#"DPoP algs="{ALGS}", error="invalid_token", resource_metadata="{metadata}""#
                ),
            ]
        );
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "invalid_token");
    }
}

async fn a_bearer_token_sent_with_the_dpop_scheme_is_refused(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    let tokens = app.connect(&user, "farm:read").await;
    let key = ProofKey::es256();
    let response = app.list_with_key(&tokens.access_token, &key).await;
    assert_dpop_refusal(response, &app, "invalid_token", "an unbound token as DPoP").await;
    // And an expired bound token with a good proof is invalid_token, in the DPoP challenge.
    let bound = app.connect_bound(&user, "farm:read", &key).await;
    let forged = app
        .forge(&bound.access_token, |c| {
            c["exp"] = (c["iat"].as_i64().unwrap() - 1).into()
        })
        .await;
    let response = app.list_with_key(&forged, &key).await;
    assert_dpop_refusal(response, &app, "invalid_token", "expired").await;
    assert_eq!(
        challenge(&app.list_with(&forged).await),
        app.invalid_token_challenge()
    );
}

async fn a_bound_token_short_of_scope_gets_the_dpop_challenge(engine: Engine) {
    let (app, _, key, bound) = bound_manager(engine, "farm:read").await;
    let (status, _) = app
        .call_with_key(&bound.access_token, &key, "record_daily_entry", json!({}))
        .await;
    assert_eq!(status, 403);
    let wire = mcp::Wire::V2025_11_25;
    let body = mcp::request_body(
        wire,
        1,
        "tools/call",
        json!({"name": "record_daily_entry", "arguments": {}}),
    );
    let proof = key.proof("POST", &app.mcp_url(), Some(&bound.access_token));
    let authorization = format!("DPoP {}", bound.access_token);
    let response = app
        .mcp_post_with(
            None,
            wire,
            &body.to_string(),
            &[("authorization", Some(&authorization))],
        )
        .header("dpop", proof)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let metadata = app.metadata_url();
    assert_eq!(
        challenges(&response),
        vec![
            format!(
                r#"DPoP algs="{ALGS}", error="insufficient_scope", scope="daily-entries:write", resource_metadata="{metadata}""#
            ),
            format!(r#"Bearer resource_metadata="{metadata}""#),
        ]
    );
}

async fn nonces_are_required_at_both_endpoints_when_configured(engine: Engine) {
    let app = TestApp::spawn_with(engine, |c| c.dpop_require_nonce = true).await;
    let user = app.farm_with_member("viewer").await;
    let (client_id, code, verifier) = app.approved_code(&user, "farm:read").await;
    let key = ProofKey::es256();
    let token = app.token_url();

    // The token endpoint: no nonce, use_dpop_nonce with one to use.
    let response = app
        .exchange_with(
            &client_id,
            &code,
            &verifier,
            Some(&key.proof("POST", &token, None)),
        )
        .await;
    let nonce = dpop::nonce_of(&response);
    assert_oauth_error(response, 400, "use_dpop_nonce").await;
    // A nonce Coop did not issue is no better: this window, another tag.
    let window = nonce.split_once('.').unwrap().0;
    let forged = key.proof_with(&token, None, |c| {
        c["nonce"] = format!("{window}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA").into()
    });
    let response = app
        .exchange_with(&client_id, &code, &verifier, Some(&forged))
        .await;
    assert_oauth_error(response, 400, "use_dpop_nonce").await;
    let with_nonce = key.proof_with(&token, None, |c| c["nonce"] = nonce.clone().into());
    let response = app
        .exchange_with(&client_id, &code, &verifier, Some(&with_nonce))
        .await;
    assert!(response.headers().get("dpop-nonce").is_some());
    let bound = bound_from(response, &client_id).await;

    // The resource: the same, with the challenge.
    let at = bound.access_token.as_str();
    let mcp = app.mcp_url();
    let response = app
        .list_as("DPoP", at, &[&key.proof("POST", &mcp, Some(at))])
        .await;
    let nonce = dpop::nonce_of(&response);
    assert_dpop_refusal(response, &app, "use_dpop_nonce", "no nonce at /mcp").await;
    let proof = key.proof_with(&mcp, Some(at), |c| c["nonce"] = nonce.clone().into());
    let response = app.list_as("DPoP", at, &[&proof]).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("dpop-nonce").is_some());

    // Ten minutes on, that nonce is too old; the one handed out then is good.
    app.clock.advance(time::Duration::minutes(10));
    let later = app.clock.now().unix_timestamp();
    let stale = key.proof_with(&mcp, Some(at), |c| {
        c["nonce"] = nonce.clone().into();
        c["iat"] = later.into();
    });
    let response = app.list_as("DPoP", at, &[&stale]).await;
    let fresh = dpop::nonce_of(&response);
    assert_ne!(fresh, nonce);
    assert_dpop_refusal(response, &app, "use_dpop_nonce", "a stale nonce").await;
    // A bearer client is not asked for anything.
    let bearer = app.connect(&user, "farm:read").await;
    let response = app.list_with(&bearer.access_token).await;
    assert!(response.headers().get("dpop-nonce").is_none());
}

async fn both_metadata_documents_advertise_dpop(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let algs = json!(["ES256", "EdDSA", "RS256", "PS256"]);
    let server: Value = app
        .get_json("/.well-known/oauth-authorization-server")
        .await;
    assert_eq!(server["dpop_signing_alg_values_supported"], algs);
    let resource: Value = app
        .get_json("/.well-known/oauth-protected-resource/mcp")
        .await;
    assert_eq!(resource["dpop_signing_alg_values_supported"], algs);
    assert_eq!(resource["dpop_bound_access_tokens_required"], false);
}

async fn seen_proofs_are_forgotten_once_too_old(engine: Engine) {
    let (app, _, key, bound) = bound_viewer(engine).await;
    assert_eq!(
        app.list_with_key(&bound.access_token, &key).await.status(),
        200
    );
    assert_eq!(app.db_count("select count(*) from dpop_proofs").await, 2);
    let store = coop::storage::Store::connect(&app.db.url).await.unwrap();
    let now = app.clock.now();
    coop::oauth::housekeeping::sweep(&store, now).await.unwrap();
    assert_eq!(app.db_count("select count(*) from dpop_proofs").await, 2);
    let swept = coop::oauth::housekeeping::sweep(&store, now + time::Duration::minutes(6))
        .await
        .unwrap();
    assert_eq!(swept.dpop_proofs, 2);
    assert_eq!(app.db_count("select count(*) from dpop_proofs").await, 0);
}

async fn a_browser_client_may_send_a_proof_and_read_the_nonce(engine: Engine) {
    let app = TestApp::spawn_with(engine, |c| c.dpop_require_nonce = true).await;
    let preflight = app
        .preflight("/token", "https://inspector.example", "content-type, dpop")
        .await;
    assert_eq!(preflight.status(), 204);
    let allowed = preflight.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(allowed.split(", ").any(|h| h == "dpop"), "{allowed}");
    let key = ProofKey::es256();
    let response = app
        .token_with_proofs(
            &[
                ("grant_type", "refresh_token"),
                ("client_id", "nobody"),
                ("refresh_token", "x"),
            ],
            &[&key.proof("POST", &app.token_url(), None)],
        )
        .await;
    assert_eq!(
        response.headers()["access-control-expose-headers"],
        "dpop-nonce"
    );
}

async fn an_automations_token_is_bound_for_a_proof(engine: Engine) {
    let (app, owner) = TestApp::with_flocks(engine, "owner").await;
    let (client_id, secret) =
        crate::automations::add_automation(&app, &owner.farm, "Scale", "viewer", "farm:read", None)
            .await;
    let key = ProofKey::es256();
    let send = |proofs: Vec<String>| {
        let mut request = reqwest::Client::new()
            .post(app.url("/token"))
            .basic_auth(&client_id, Some(&secret))
            .form(&[("grant_type", "client_credentials")]);
        for proof in proofs {
            request = request.header("dpop", proof);
        }
        request.send()
    };
    let response = send(vec![key.proof("POST", &app.token_url(), None)])
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_type"], "DPoP");
    let token = body["access_token"].as_str().unwrap();
    assert_eq!(claims(token)["cnf"]["jkt"], key.thumbprint());
    assert_eq!(app.list_with_key(token, &key).await.status(), 200);
    let response = app.list_as("Bearer", token, &[]).await;
    assert_eq!(response.status(), 401);
    assert_eq!(challenge(&response), app.invalid_token_challenge());
    // A bad proof is refused before any token is made.
    let response = send(vec![key.proof("GET", &app.token_url(), None)])
        .await
        .unwrap();
    assert_oauth_error(response, 400, "invalid_dpop_proof").await;
}

async fn introspection_describes_a_bound_token_with_its_key(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    let (gateway, secret) = app.introspector().await;
    let gateway = Some((gateway.as_str(), secret.as_str()));
    let key = ProofKey::es256();
    let bound = app.connect_bound(&user, "farm:read", &key).await;
    let body: Value = app
        .introspect_as(gateway, &bound.access_token)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["active"], true, "{body}");
    assert_eq!(body["token_type"], "DPoP");
    assert_eq!(body["cnf"], json!({"jkt": key.thumbprint()}));
    let bearer = app.connect(&user, "farm:read").await;
    let body: Value = app
        .introspect_as(gateway, &bearer.access_token)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["token_type"], "Bearer");
    assert!(body.get("cnf").is_none(), "{body}");
}
