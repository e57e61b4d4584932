//! The real `coop serve` process: the demo a newcomer starts, graceful
//! shutdown on SIGTERM, and what its logs hold (that `/metrics` is public,
//! a request id on every line of a request, never a password).

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};
use tokio::task::JoinHandle;

use crate::helpers::{Browser, Engine, TestDatabase, location};
use crate::on_both_engines;

on_both_engines!(serve_demo_prints_credentials_that_sign_in_and_seeds_once);

const PATIENCE: Duration = Duration::from_secs(60);

/// `coop serve` flags that turn every rate limit off, for tests that load
/// the server hard and must not be answered 429.
pub(crate) const NO_RATE_LIMITS: [&str; 6] = [
    "--mcp-rate-limit",
    "0",
    "--mcp-subject-rate-limit",
    "0",
    "--token-rate-limit",
    "0",
];

/// A `coop serve` child process, its stdout read up to the "serving" line
/// and its stderr collected in the background (so a chatty log can never
/// fill the pipe and stall the server).
pub(crate) struct Server {
    pub(crate) child: Child,
    /// stdout lines up to and including "Coop is serving at …".
    printed: Vec<String>,
    pub(crate) issuer: String,
    _stdout: BufReader<ChildStdout>,
    /// Everything written to stderr so far.
    logs: Arc<Mutex<String>>,
    stderr: JoinHandle<()>,
}

impl Server {
    pub(crate) async fn start(database_url: &str, args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_binary(
            env!("CARGO_BIN_EXE_coop"),
            "127.0.0.1:0",
            database_url,
            args,
            env,
        )
        .await
    }

    /// `binary serve --bind bind`: a fixed address keeps the issuer, and so
    /// the tokens it made, across a restart.
    pub(crate) async fn start_binary(
        binary: &str,
        bind: &str,
        database_url: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let mut command = Command::new(binary);
        command
            .arg("serve")
            .args(["--bind", bind])
            .args(args)
            .env("COOP_DATABASE_URL", database_url)
            .env_remove("RUST_LOG")
            .env_remove("COOP_LOG_FORMAT")
            .env_remove("COOP_ISSUER")
            // The CIMD test settings only when a test asks for them.
            .env_remove("COOP_CIMD_TEST_EXTRA_CA")
            .env_remove("COOP_CIMD_TEST_ALLOW_LOOPBACK")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().unwrap();
        let mut stderr_pipe = child.stderr.take().unwrap();
        let logs = Arc::new(Mutex::new(String::new()));
        let stderr = tokio::spawn({
            let logs = logs.clone();
            async move {
                let mut buf = [0u8; 8192];
                while let Ok(n @ 1..) = stderr_pipe.read(&mut buf).await {
                    logs.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut printed = Vec::new();
        let issuer = tokio::time::timeout(PATIENCE, async {
            loop {
                let mut line = String::new();
                let read = stdout.read_line(&mut line).await.unwrap();
                assert!(read > 0, "coop serve exited early; stdout: {printed:?}");
                let line = line.trim_end().to_owned();
                printed.push(line.clone());
                if let Some(rest) = line.strip_prefix("Coop is serving at ") {
                    break rest.split_whitespace().next().unwrap().to_owned();
                }
            }
        })
        .await
        .expect("coop serve printed its address in time");
        Self {
            child,
            printed,
            issuer,
            _stdout: stdout,
            logs,
            stderr,
        }
    }

    /// Waits until the server has logged a line containing every needle.
    pub(crate) async fn wait_for_log(&self, needles: &[&str]) {
        tokio::time::timeout(PATIENCE, async {
            loop {
                let seen = self
                    .logs
                    .lock()
                    .unwrap()
                    .lines()
                    .any(|line| needles.iter().all(|n| line.contains(n)));
                if seen {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no log line with {needles:?}"));
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.issuer)
    }

    /// SIGKILL, no warning: the process ends between any two instructions.
    pub(crate) async fn kill(mut self) {
        self.child.start_kill().unwrap();
        let _ = tokio::time::timeout(PATIENCE, self.child.wait()).await;
    }

    /// Everything written to stderr so far.
    pub(crate) fn logs(&self) -> String {
        self.logs.lock().unwrap().clone()
    }

    pub(crate) fn send_sigterm(&self) {
        let pid = self.child.id().unwrap();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }

    /// SIGKILL, then all it wrote to stderr.
    pub(crate) async fn kill_returning_logs(mut self) -> String {
        self.child.start_kill().unwrap();
        self.wait().await.1
    }

    /// Sends SIGTERM and waits; returns the exit status and all of stderr.
    pub(crate) async fn terminate(self) -> (ExitStatus, String) {
        self.send_sigterm();
        self.wait().await
    }

    pub(crate) async fn wait(mut self) -> (ExitStatus, String) {
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .expect("coop serve stopped after SIGTERM")
            .unwrap();
        tokio::time::timeout(PATIENCE, self.stderr)
            .await
            .unwrap()
            .unwrap();
        let logs = self.logs.lock().unwrap().clone();
        (status, logs)
    }
}

/// (role, email, password) from the demo's printed instructions.
fn demo_credentials(printed: &[String]) -> Vec<(String, String, String)> {
    printed
        .iter()
        .filter(|line| line.starts_with("  "))
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(words.len(), 3, "{line}");
            (words[0].into(), words[1].into(), words[2].into())
        })
        .collect()
}

/// Signs in with a fresh browser; returns it, still signed in.
async fn sign_in(server: &Server, email: &str, password: &str) -> (reqwest::Client, u16) {
    let browser = Browser::at(&server.issuer, &server.issuer);
    let response = browser.sign_in_returning(email, password, None).await;
    let status = response.status().as_u16();
    if status == 303 {
        assert_eq!(location(&response), "/");
    }
    (browser.client, status)
}

async fn home_page(server: &Server, client: &reqwest::Client) -> String {
    let home = client.get(server.url("/")).send().await.unwrap();
    assert_eq!(home.status(), 200);
    home.text().await.unwrap()
}

async fn serve_demo_prints_credentials_that_sign_in_and_seeds_once(engine: Engine) {
    let db = TestDatabase::create(engine).await;
    let server = Server::start(&db.url_string(), &["--demo"], &[]).await;
    let port = server.issuer.strip_prefix("http://127.0.0.1:").unwrap();
    assert!(port.parse::<u16>().unwrap() > 0, "{}", server.issuer);
    let printed = server.printed.join("\n");
    assert!(
        printed.contains(&format!("Sign in at {}/login", server.issuer)),
        "{printed}"
    );

    let members = demo_credentials(&server.printed);
    let roles: Vec<&str> = members.iter().map(|(r, _, _)| r.as_str()).collect();
    assert_eq!(roles, ["owner", "manager", "worker", "viewer"]);
    for (_, _, password) in &members {
        assert_eq!(password.len(), 20);
    }

    let (_, owner_email, owner_password) = &members[0];
    let (owner, status) = sign_in(&server, owner_email, owner_password).await;
    assert_eq!(status, 303);
    let home = home_page(&server, &owner).await;
    assert!(
        home.contains(&format!(
            "Signed in as <strong>{owner_email}</strong> on farm <strong>Willow Brook Farm</strong>"
        )),
        "{home}"
    );
    let (_, worker_email, worker_password) = &members[2];
    let (worker, status) = sign_in(&server, worker_email, worker_password).await;
    assert_eq!(status, 303);
    assert!(home_page(&server, &worker).await.contains("worker"));

    let (status, _) = server.terminate().await;
    assert!(status.success(), "{status:?}");
    assert_demo_rows(&db).await;

    // A second --demo on a database with a farm adds nothing and says so;
    // the first passwords still work.
    let again = Server::start(&db.url_string(), &["--demo"], &[]).await;
    let printed = again.printed.join("\n");
    assert!(
        printed.contains("The database already has farms; --demo added nothing."),
        "{printed}"
    );
    assert!(demo_credentials(&again.printed).is_empty(), "{printed}");
    let (_, status) = sign_in(&again, owner_email, owner_password).await;
    assert_eq!(status, 303);
    let (status, _) = again.terminate().await;
    assert!(status.success());
    assert_demo_rows(&db).await;
}

/// What the demo wrote, counted in the database itself (no page shows
/// flocks or entries yet).
async fn assert_demo_rows(db: &TestDatabase) {
    let store = coop::storage::Store::connect(&db.url).await.unwrap();
    let count = |sql: &'static str| {
        let store = store.clone();
        async move {
            let mut db = store.read().await.unwrap();
            let n: i64 = coop::storage::Sql::new(sql)
                .fetch_scalar(&mut db)
                .await
                .unwrap();
            n
        }
    };
    assert_eq!(
        count("select count(*) from farms where slug = 'demo'").await,
        1
    );
    assert_eq!(count("select count(*) from farms").await, 1);
    assert_eq!(count("select count(*) from houses").await, 3);
    assert_eq!(count("select count(*) from flocks").await, 5);
    assert_eq!(count("select count(distinct name) from flocks").await, 5);
    assert_eq!(count("select count(*) from daily_entries").await, 5 * 120);
    assert_eq!(
        count("select count(*) from daily_entries where version = 1 and recorded_by is not null")
            .await,
        5 * 120
    );
    assert_eq!(count("select count(*) from memberships").await, 4);
    assert_eq!(
        count("select count(*) from memberships where flock_restricted").await,
        1
    );
    assert_eq!(count("select count(*) from membership_flocks").await, 2);
    assert!(count("select count(*) from egg_lots").await >= 100);
    assert_eq!(
        count("select count(distinct status) from egg_lots").await,
        3
    );
    assert_eq!(
        count("select count(distinct category) from stock_items where currency = 'EUR'").await,
        4
    );
    store.close().await;
}

#[tokio::test]
async fn sigterm_drains_in_flight_requests_and_exits_zero() {
    let db = TestDatabase::create(Engine::Sqlite).await;
    let mut server = Server::start(
        &db.url_string(),
        &[],
        &[("RUST_LOG", "info,tower_http=debug")],
    )
    .await;
    // A sign-in whose body is still on its way when SIGTERM arrives: the
    // server has begun the request and must finish it before exiting.
    let authority = server.issuer.strip_prefix("http://").unwrap().to_owned();
    let mut stream = tokio::net::TcpStream::connect(&authority).await.unwrap();
    let body = "email=nobody%40nowhere.example&password=not+a+real+password";
    let (first, rest) = body.split_at(10);
    let head = format!(
        "POST /login HTTP/1.1\r\nHost: {authority}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\n\r\n{first}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    server
        .wait_for_log(&[
            "method=POST",
            "path=\"/login\"",
            "started processing request",
        ])
        .await;

    server.send_sigterm();
    server
        .wait_for_log(&["shutting down: draining in-flight requests"])
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the server quit with a request in flight"
    );

    stream.write_all(rest.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(PATIENCE, stream.read_to_string(&mut answer))
        .await
        .unwrap()
        .unwrap();
    // No session, so no CSRF token: refused, but answered in full.
    assert!(answer.starts_with("HTTP/1.1 403 "), "{answer}");
    assert!(answer.contains("</html>"), "{answer}");

    let (status, logs) = server.wait().await;
    assert_eq!(status.code(), Some(0), "{logs}");
    assert!(logs.contains("finished processing request"), "{logs}");
}

#[tokio::test]
async fn the_startup_line_says_metrics_is_public() {
    let db = TestDatabase::create(Engine::Sqlite).await;
    let server = Server::start(&db.url_string(), &[], &[]).await;
    let metrics = format!("{}/metrics", server.issuer);
    server
        .wait_for_log(&[
            "Coop is serving; /metrics is public",
            "block the path at the proxy",
            &format!("metrics={metrics}"),
        ])
        .await;
    // As it says: a stranger reads it.
    let health = reqwest::get(server.url("/healthz")).await.unwrap();
    assert_eq!(health.status(), 200);
    let response = reqwest::get(&metrics).await.unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(
        text.contains(r#"coop_http_requests_total{method="GET",route="/healthz",status="200"} 1"#),
        "{text}"
    );
    server.kill().await;
}

#[tokio::test]
async fn no_password_reaches_the_logs_even_at_debug_level() {
    let db = TestDatabase::create(Engine::Sqlite).await;
    let server = Server::start(&db.url_string(), &["--demo"], &[("RUST_LOG", "debug")]).await;
    let members = demo_credentials(&server.printed);
    assert_eq!(members.len(), 4);

    let (_, email, password) = &members[0];
    let (owner, status) = sign_in(&server, email, password).await;
    assert_eq!(status, 303);
    let _ = home_page(&server, &owner).await;
    let wrong_password = "Wr0ng-but-memorable-guess";
    let (_, status) = sign_in(&server, &members[3].1, wrong_password).await;
    assert_eq!(status, 401);
    let (_, status) = sign_in(&server, "nobody@demo.example", wrong_password).await;
    assert_eq!(status, 401);

    let (status, logs) = server.terminate().await;
    assert!(status.success());
    // The logs were really at debug level and covered the sign-ins...
    assert!(logs.contains("DEBUG"), "{logs}");
    assert!(logs.contains("/login"), "{logs}");
    // ...yet hold no password, generated or typed.
    for (_, _, password) in &members {
        assert!(!logs.contains(password.as_str()), "a password was logged");
    }
    assert!(
        !logs.contains(wrong_password),
        "a typed password was logged"
    );
    assert!(!logs.contains("password="), "a form body was logged");
}

#[tokio::test]
async fn every_log_line_of_a_request_carries_its_request_id() {
    let db = TestDatabase::create(Engine::Sqlite).await;
    let server = Server::start(
        &db.url_string(),
        &[],
        &[("COOP_LOG_FORMAT", "json"), ("RUST_LOG", "debug")],
    )
    .await;
    let client = reqwest::Client::new();
    let chosen = "c0ffee00-test-4d0e-8000-000000000001";
    let response = client
        .get(server.url("/login"))
        .header("x-request-id", chosen)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], chosen);
    // Without one, Coop makes an id, returns it and logs it.
    let response = client.get(server.url("/readyz")).send().await.unwrap();
    let generated = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        uuid::Uuid::parse_str(&generated).unwrap().get_version_num(),
        4
    );

    let (_, logs) = server.terminate().await;
    let lines: Vec<Value> = logs
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    // The request's span, as each line lists it among its spans.
    let request_span = |line: &Value| -> Option<Value> {
        line["spans"]
            .as_array()?
            .iter()
            .find(|span| span["name"] == "request")
            .cloned()
    };
    for (id, path) in [(chosen, "/login"), (generated.as_str(), "/readyz")] {
        let of_request: Vec<Value> = lines
            .iter()
            .filter_map(request_span)
            .filter(|span| span["path"] == path)
            .collect();
        // At least the "started" and "finished" lines (and, for /readyz,
        // the database's own).
        assert!(of_request.len() >= 2, "{path}: {of_request:?}");
        for span in of_request {
            assert_eq!(span["request_id"], id, "{span}");
        }
    }
    let finished = lines
        .iter()
        .find(|line| {
            line["span"]["request_id"] == chosen
                && line["fields"]["message"] == "finished processing request"
        })
        .expect("a line for the finished request");
    assert_eq!(finished["level"], "INFO");
    assert_eq!(finished["fields"]["status"], 200);
}
