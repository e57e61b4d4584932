//! Configuration mistakes are one-line errors naming the setting, and
//! nothing is created when the configuration is refused.

use crate::helpers::run_cli;

/// Runs `coop serve` with `args`, which must be refused in one line naming
/// `setting`, leaving no database behind; returns the line.
pub async fn serve_refuses(args: &[&str], setting: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("never.db");
    let url = format!("sqlite://{}", db.display());
    let mut full = vec!["serve"];
    full.extend_from_slice(args);
    let (code, _out, err) = run_cli(&url, &full, None).await;
    assert_eq!(code, 1, "{args:?}: {err}");
    let line = err.trim();
    assert_eq!(line.lines().count(), 1, "one line: {line}");
    assert!(line.contains(setting), "{line} should name {setting}");
    assert!(!db.exists(), "a refused configuration created the database");
    line.to_owned()
}

#[tokio::test]
async fn an_issuer_with_a_path_is_refused() {
    serve_refuses(&["--issuer", "https://coop.example/tenant"], "COOP_ISSUER").await;
}

#[tokio::test]
async fn an_issuer_with_a_query_is_refused() {
    serve_refuses(&["--issuer", "https://coop.example?x=1"], "COOP_ISSUER").await;
}

#[tokio::test]
async fn a_bad_bind_address_is_refused() {
    serve_refuses(&["--bind", "not-an-address"], "COOP_BIND").await;
}

#[tokio::test]
async fn a_bad_token_lifetime_is_refused() {
    serve_refuses(&["--access-token-ttl", "5"], "COOP_ACCESS_TOKEN_TTL").await;
}

#[tokio::test]
async fn a_bad_database_url_is_refused() {
    let (code, _out, err) = run_cli("mysql://x", &["serve"], None).await;
    assert_eq!(code, 1);
    assert!(err.contains("COOP_DATABASE_URL"), "{err}");
}

#[tokio::test]
async fn the_issuer_defaults_to_the_bound_address_and_drops_a_trailing_slash() {
    let db = crate::helpers::TestDatabase::create(crate::helpers::Engine::Sqlite).await;
    let app = crate::helpers::TestApp::spawn_on(std::sync::Arc::new(db), |c| {
        c.issuer = Some(coop::config::Issuer::parse("https://Coop.Example/").unwrap());
    })
    .await;
    assert_eq!(app.issuer, "https://coop.example");
    let derived = crate::helpers::TestApp::spawn(crate::helpers::Engine::Sqlite).await;
    assert_eq!(derived.issuer, derived.address);
}

#[tokio::test]
async fn a_bad_rate_limit_is_refused() {
    serve_refuses(&["--mcp-rate-limit", "-1"], "COOP_MCP_RATE_LIMIT").await;
    serve_refuses(&["--mcp-rate-limit", "lots"], "COOP_MCP_RATE_LIMIT").await;
    serve_refuses(&["--token-rate-limit", "-1"], "COOP_TOKEN_RATE_LIMIT").await;
    serve_refuses(
        &["--register-rate-limit", "lots"],
        "COOP_REGISTER_RATE_LIMIT",
    )
    .await;
}

#[tokio::test]
async fn a_bad_refresh_reuse_window_is_refused() {
    for bad in ["-1", "301", "soon"] {
        serve_refuses(
            &["--refresh-reuse-window", bad],
            "COOP_REFRESH_REUSE_WINDOW",
        )
        .await;
    }
}

#[tokio::test]
async fn a_bad_password_hash_concurrency_is_refused() {
    for bad in ["0", "65", "lots"] {
        serve_refuses(
            &["--password-hash-concurrency", bad],
            "COOP_PASSWORD_HASH_CONCURRENCY",
        )
        .await;
    }
}

/// A database that cannot be opened is reported as a mistake in the
/// database setting, with the cause, on one line, by `serve` and `admin`.
#[tokio::test]
async fn a_database_that_cannot_be_opened_names_the_setting_and_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let missing_dir = format!("sqlite://{}/no/such/dir/coop.db", dir.path().display());
    let cases = [
        (missing_dir.as_str(), "unable to open database file"),
        // Nothing listens on port 1: the cause is the refused connection,
        // not a pool timeout.
        ("postgres://postgres@127.0.0.1:1/coop", "Connection refused"),
    ];
    for (url, cause) in cases {
        // Port 0: the check must not depend on the default port being free.
        let serve = ["serve", "--bind", "127.0.0.1:0"];
        for args in [&serve[..], &["admin", "farm", "add", "--name", "X"][..]] {
            let (code, out, err) = run_cli(url, args, None).await;
            assert_eq!(code, 1, "{url} {args:?}: {out}");
            let line = err.trim_end();
            assert_eq!(line.lines().count(), 1, "{line}");
            assert!(
                line.starts_with(
                    "error: --database-url / COOP_DATABASE_URL: cannot open the database"
                ),
                "{line}"
            );
            assert!(line.contains(cause), "{line}");
        }
    }
}

#[tokio::test]
async fn a_port_already_taken_is_refused_naming_the_setting() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    serve_refuses(&["--bind", &address], "COOP_BIND").await;
}

#[tokio::test]
async fn a_bad_signin_setting_is_refused() {
    for (flag, bad, setting) in [
        (
            "--signin-account-failures",
            "0",
            "COOP_SIGNIN_ACCOUNT_FAILURES",
        ),
        (
            "--signin-account-failures",
            "1001",
            "COOP_SIGNIN_ACCOUNT_FAILURES",
        ),
        (
            "--signin-address-failures",
            "many",
            "COOP_SIGNIN_ADDRESS_FAILURES",
        ),
        (
            "--signin-device-failures",
            "-1",
            "COOP_SIGNIN_DEVICE_FAILURES",
        ),
        ("--signin-window", "9", "COOP_SIGNIN_WINDOW"),
        ("--signin-window", "86401", "COOP_SIGNIN_WINDOW"),
    ] {
        serve_refuses(&[flag, bad], setting).await;
    }
}
