//! `coop admin client add` and `coop keys rotate`.

use serde_json::Value;

use crate::helpers::oauth::{self, Pkce, REDIRECT_URI, TokenRequest};
use crate::helpers::{Engine, Printed, TestApp, TestUser};
use crate::on_both_engines;

on_both_engines!(
    a_pre_registered_public_client_connects,
    a_pre_registered_confidential_client_gets_a_secret_once,
    client_add_refuses_bad_input,
    a_rotated_key_stays_published_until_its_tokens_expired,
    a_withdrawn_key_is_unpublished_and_its_tokens_refused,
);

/// A fresh app with a manager, and a client the operator added with `coop
/// admin client add <args>`: (app, manager, what the command printed).
async fn with_client(engine: Engine, args: &[&str]) -> (TestApp, TestUser, Printed) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let added = app.add_client(args).await;
    (app, user, added)
}

async fn a_pre_registered_public_client_connects(engine: Engine) {
    let (app, user, added) = with_client(
        engine,
        &[
            "--name",
            "Farm Office",
            "--redirect-uri",
            "https://office.example/cb",
            "--redirect-uri",
            REDIRECT_URI,
        ],
    )
    .await;
    let client_id = added.field("client_id");
    assert!(added.get("client_secret").is_none());
    let tokens = app.connect_client(&user, &client_id, "farm:read").await;
    assert_eq!(
        oauth::claims(&tokens.access_token)["client_id"],
        client_id.as_str()
    );
    // Pre-registered clients do not expire unused.
    app.clock.advance(time::Duration::hours(48));
    let idle = app
        .add_client(&["--name", "Idle", "--redirect-uri", REDIRECT_URI])
        .await
        .field("client_id");
    app.clock.advance(time::Duration::hours(48));
    let browser = app.signed_in(&user).await;
    let path = app.authorize_path(&idle, &Pkce::new(), "farm:read", &[]);
    browser.open_consent(&path).await;
}

async fn a_pre_registered_confidential_client_gets_a_secret_once(engine: Engine) {
    let (app, user, added) = with_client(
        engine,
        &[
            "--name",
            "Reports",
            "--redirect-uri",
            REDIRECT_URI,
            "--confidential",
        ],
    )
    .await;
    assert!(added.err.contains("shown this once"));
    let client_id = added.field("client_id");
    let secret = added.field("client_secret");

    let (code, verifier) = app.approved_code_for(&user, &client_id, "farm:read").await;
    // Without the secret: refused, and the code survives.
    let response = app.exchange_code(&client_id, &code, &verifier).await;
    oauth::assert_oauth_error(response, 401, "invalid_client").await;
    let response = app
        .token(&TokenRequest::confidential_code(&code, &verifier).basic(&client_id, &secret))
        .await;
    assert_eq!(response.status(), 200);
}

async fn client_add_refuses_bad_input(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    for (args, message) in [
        (
            vec![
                "admin",
                "client",
                "add",
                "--name",
                "X",
                "--redirect-uri",
                "http://app.example/cb",
            ],
            "must be https",
        ),
        (
            vec![
                "admin",
                "client",
                "add",
                "--name",
                "",
                "--redirect-uri",
                REDIRECT_URI,
            ],
            "printable",
        ),
        (
            vec!["admin", "client", "add", "--name", "X"],
            "--redirect-uri",
        ),
    ] {
        let (code, out, err) = app.cli(&args).await;
        assert_ne!(code, 0, "{args:?}");
        assert!(out.is_empty(), "{out}");
        assert!(err.contains(message), "{args:?}: {err}");
    }
    assert_eq!(app.client_count().await, 0);
}

async fn kids(app: &TestApp) -> Vec<String> {
    let jwks: Value = app.get_json("/jwks.json").await;
    jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_owned())
        .collect()
}

async fn a_rotated_key_stays_published_until_its_tokens_expired(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let old_kid = oauth::kid(&tokens.access_token);

    let new_kid = app.rotate_keys().await;
    assert_ne!(new_kid, old_kid);
    // The key set is re-read at most once a second.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let published = kids(&app).await;
    assert!(
        published.contains(&old_kid) && published.contains(&new_kid),
        "{published:?}"
    );

    // New tokens are signed with the new key.
    let response = app.token(&tokens.refresh_request()).await;
    let body: Value = response.json().await.unwrap();
    let access = body["access_token"].as_str().unwrap();
    assert_eq!(oauth::jwt_header(access)["kid"], new_kid.as_str());

    // Once every token the old key could have signed has expired, it goes.
    app.clock
        .advance(time::Duration::hours(24) + time::Duration::minutes(1));
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(kids(&app).await, vec![new_kid]);
}

/// `coop keys retire KID --now`: a compromised key is withdrawn at once
/// (issue 13), and every refusal of the command leaves the keys as they are.
async fn a_withdrawn_key_is_unpublished_and_its_tokens_refused(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let old_kid = oauth::kid(&tokens.access_token);
    let new_kid = app.rotate_keys().await;

    for (args, message) in [
        (
            vec!["keys", "retire", &new_kid, "--now"],
            "is the active signing key",
        ),
        (
            vec!["keys", "retire", "no-such-key", "--now"],
            "no signing key has the id",
        ),
        // A key id is base64url, so one in 64 starts with `-`: it is
        // still an id, not an option.
        (
            vec!["keys", "retire", "-L0-no-such-key", "--now"],
            "no signing key has the id \"-L0-no-such-key\"",
        ),
        (vec!["keys", "retire", &old_kid], "--now"),
    ] {
        let (code, out, err) = app.cli(&args).await;
        assert_eq!(code, 1, "{args:?}: {out}");
        assert!(err.contains(message), "{args:?}: {err}");
    }
    assert_eq!(
        app.mcp_list(&tokens.access_token).await.status(),
        200,
        "a refused retire withdrew nothing"
    );

    let (code, _, err) = app.cli(&["keys", "retire", &old_kid, "--now"]).await;
    assert_eq!(code, 0, "{err}");
    app.assert_invalid_token(&tokens.access_token, "withdrawn key")
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(kids(&app).await, vec![new_kid.clone()]);
    let (_, listed, _) = app.cli(&["keys", "list"]).await;
    let states: Vec<(&str, &str)> = listed
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            (fields[0], fields[2])
        })
        .collect();
    assert_eq!(
        states,
        vec![
            (new_kid.as_str(), "active"),
            (old_kid.as_str(), "withdrawn")
        ]
    );
    let (code, _, err) = app.cli(&["keys", "retire", &old_kid, "--now"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("withdrawn already"), "{err}");
    app.assert_count(
        "select count(*) from audit_log where detail like '%signing_key_withdrawn%'",
        1,
    )
    .await;
}

#[tokio::test]
async fn the_rate_limit_settings_are_checked_at_start() {
    for flag in ["--token-rate-limit", "--register-rate-limit"] {
        let (code, _, err) = crate::helpers::run_cli(
            "sqlite::memory:",
            &["serve", "--bind", "127.0.0.1:0", flag, "lots"],
            None,
        )
        .await;
        assert_ne!(code, 0);
        assert!(err.contains(flag) && err.contains("whole number"), "{err}");
    }
}
