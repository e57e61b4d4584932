//! What a real `coop serve` logs at debug level while a client goes through
//! the whole authorization flow: never a code, a PKCE verifier, an access
//! or refresh token, or a client secret (threat 27), also when they are
//! refused.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

use crate::helpers::{Engine, TestDatabase, browser, form_value, location, run_cli};
use crate::oauth_client::{Pkce, REDIRECT_URI};

const PATIENCE: Duration = Duration::from_secs(60);

/// Pulls `name: value` off the CLI's output.
fn printed(out: &str, name: &str) -> String {
    out.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name} in {out}"))
        .trim()
        .to_owned()
}

#[tokio::test]
async fn no_token_code_or_secret_reaches_the_logs_even_at_debug_level() {
    let db = TestDatabase::create(Engine::Sqlite).await;
    let database_url = db.url_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_coop"))
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("COOP_DATABASE_URL", &database_url)
        .env("RUST_LOG", "debug")
        // The replay below must be reuse at once, not a retry.
        .env("COOP_REFRESH_REUSE_WINDOW", "0")
        .env_remove("COOP_LOG_FORMAT")
        .env_remove("COOP_ISSUER")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let logs = Arc::new(Mutex::new(String::new()));
    let mut stderr = child.stderr.take().unwrap();
    let collector = tokio::spawn({
        let logs = logs.clone();
        async move {
            let mut buf = [0u8; 8192];
            while let Ok(n @ 1..) = stderr.read(&mut buf).await {
                logs.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        }
    });
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let issuer = tokio::time::timeout(PATIENCE, async {
        loop {
            let mut line = String::new();
            assert!(
                stdout.read_line(&mut line).await.unwrap() > 0,
                "serve exited"
            );
            if let Some(rest) = line.strip_prefix("Coop is serving at ") {
                break rest.split_whitespace().next().unwrap().to_owned();
            }
        }
    })
    .await
    .unwrap();
    let url = |path: &str| format!("{issuer}{path}");

    // Fixtures through the real command line, on the server's database.
    let (code, farm, err) = run_cli(
        &database_url,
        &["admin", "farm", "add", "--name", "Hillside Farm"],
        None,
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let password = "correct horse battery staple";
    let email = "owner@hillside.example";
    let (code, _, err) = run_cli(
        &database_url,
        &[
            "admin",
            "user",
            "add",
            "--farm",
            farm.trim(),
            "--email",
            email,
            "--role",
            "owner",
            "--password-stdin",
        ],
        Some(password),
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run_cli(
        &database_url,
        &[
            "admin",
            "client",
            "add",
            "--name",
            "Office",
            "--redirect-uri",
            REDIRECT_URI,
            "--confidential",
        ],
        None,
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let client_id = printed(&out, "client_id");
    let secret = printed(&out, "client_secret");

    // Sign in, authorize, consent.
    let person = browser();
    let page = person.get(url("/login")).send().await.unwrap();
    let csrf = form_value(&page.text().await.unwrap(), "csrf").unwrap();
    let response = person
        .post(url("/login"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("email", email),
            ("password", password),
            ("return_to", "/"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    let pkce = Pkce::new();
    let query = serde_urlencoded::to_string([
        ("response_type", "code"),
        ("client_id", client_id.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("code_challenge", pkce.challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("scope", "farm:read"),
        ("state", "s"),
    ])
    .unwrap();
    let html = person
        .get(url(&format!("/authorize?{query}")))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let response = person
        .post(url("/authorize/consent"))
        .form(&[
            ("csrf", form_value(&html, "csrf").unwrap().as_str()),
            ("request", form_value(&html, "request").unwrap().as_str()),
            ("decision", "approve"),
            ("scope", "farm:read"),
        ])
        .send()
        .await
        .unwrap();
    let callback = url::Url::parse(&location(&response)).unwrap();
    let auth_code = callback
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();

    // The client: a refused exchange (wrong verifier), the exchange with
    // Basic, the secret in the body (refused), a refresh, a replay,
    // revocations.
    let client = reqwest::Client::new();
    let token = |form: Vec<(&'static str, String)>| {
        client
            .post(url("/token"))
            .basic_auth(&client_id, Some(&secret))
            .form(&form)
            .send()
    };
    let wrong_verifier = Pkce::new().verifier;
    let refused = token(vec![
        ("grant_type", "authorization_code".into()),
        ("code", auth_code.clone()),
        ("code_verifier", wrong_verifier.clone()),
    ])
    .await
    .unwrap();
    assert_eq!(refused.status(), 400);
    let body: serde_json::Value = token(vec![
        ("grant_type", "authorization_code".into()),
        ("code", auth_code.clone()),
        ("code_verifier", pkce.verifier.clone()),
    ])
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let access = body["access_token"].as_str().unwrap().to_owned();
    let first_refresh = body["refresh_token"].as_str().unwrap().to_owned();
    // The secret in the body: refused, since the client registered Basic.
    let in_body = client
        .post(url("/token"))
        .form(&[
            ("grant_type", "refresh_token"),
            ("client_id", client_id.as_str()),
            ("client_secret", secret.as_str()),
            ("refresh_token", first_refresh.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(in_body.status(), 401);
    let refresh = |refresh: &str| {
        client
            .post(url("/token"))
            .basic_auth(&client_id, Some(&secret))
            .form(&[("grant_type", "refresh_token"), ("refresh_token", refresh)])
            .send()
    };
    let body: serde_json::Value = refresh(&first_refresh).await.unwrap().json().await.unwrap();
    let second_refresh = body["refresh_token"].as_str().unwrap().to_owned();
    let wrong_secret = format!("{secret}-wrong");
    let refused = client
        .post(url("/token"))
        .basic_auth(&client_id, Some(&wrong_secret))
        .form(&[("grant_type", "refresh_token"), ("refresh_token", "x")])
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let revoke = |token: String| {
        client
            .post(url("/revoke"))
            .basic_auth(&client_id, Some(&secret))
            .form(&[("token", token)])
            .send()
    };
    assert_eq!(revoke(access.clone()).await.unwrap().status(), 200);
    // The replay: reuse detected, the grant revoked.
    assert_eq!(refresh(&first_refresh).await.unwrap().status(), 400);
    assert_eq!(revoke(second_refresh.clone()).await.unwrap().status(), 200);

    let pid = child.id().unwrap();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    collector.await.unwrap();
    let logs = logs.lock().unwrap().clone();

    // Really at debug level, covering the flow and its refusals...
    assert!(logs.contains("DEBUG"), "{logs}");
    assert!(logs.contains("/token"), "{logs}");
    assert!(logs.contains("reuse detected"), "{logs}");
    assert!(logs.contains("client authentication failed"), "{logs}");
    // ...and not one secret.
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{client_id}:{secret}"));
    assert!(!logs.contains(&basic), "the Basic credentials were logged");
    for (what, secret) in [
        ("the code", auth_code.as_str()),
        ("the PKCE verifier", pkce.verifier.as_str()),
        ("a wrong PKCE verifier", wrong_verifier.as_str()),
        ("the access token", access.as_str()),
        ("the first refresh token", first_refresh.as_str()),
        ("the second refresh token", second_refresh.as_str()),
        ("the client secret", secret.as_str()),
        ("a wrong client secret", wrong_secret.as_str()),
        ("the password", password),
    ] {
        assert!(!logs.contains(secret), "{what} was logged");
    }
}
