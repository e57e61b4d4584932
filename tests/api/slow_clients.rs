//! Connections that cannot exhaust the server (threat 32): raw TCP clients
//! that are slow with a head, slow with a body, idle, too many, or still
//! connected at SIGTERM, each cut off as `src/http/serve/` says.
//!
//! Timeouts are set to a second or so in each test's configuration; what
//! is asserted is what the client receives and that the socket is closed,
//! never how fast.

use std::time::Duration;

use coop::config::ConnectionLimits;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{Engine, TestApp, TestDatabase, run_cli};
use crate::on_both_engines;
use crate::serve::Server;

on_both_engines!(
    a_slow_or_silent_head_is_closed_without_an_answer,
    a_slow_body_is_answered_408_and_closed,
    an_idle_connection_is_closed_at_the_idle_timeout,
    a_kept_alive_connection_outlives_the_header_timeout,
    a_request_not_answered_in_time_gets_503,
    sigterm_with_slow_clients_exits_zero_at_the_drain_deadline,
);

/// Longer than any timeout a test sets: a socket not closed by then was
/// not cut off.
const PATIENCE: Duration = Duration::from_secs(30);
const SECOND: Duration = Duration::from_secs(1);
const MINUTE: Duration = Duration::from_secs(60);

/// Limits that never fire unless a test shortens one.
pub fn patient() -> ConnectionLimits {
    ConnectionLimits {
        header_timeout: MINUTE,
        body_timeout: MINUTE,
        request_timeout: MINUTE,
        idle_timeout: MINUTE,
        max_connections: 512,
        max_connections_per_network: 128,
        drain_timeout: Duration::from_secs(5),
    }
}

/// A fresh app with [`patient`] limits changed by `shorten`.
pub async fn spawn(engine: Engine, shorten: impl FnOnce(&mut ConnectionLimits)) -> TestApp {
    let mut limits = patient();
    shorten(&mut limits);
    TestApp::spawn_with(engine, |config| config.connections = limits).await
}

pub fn authority(app: &TestApp) -> &str {
    app.address.strip_prefix("http://").unwrap()
}

async fn connect(app: &TestApp) -> TcpStream {
    TcpStream::connect(authority(app)).await.unwrap()
}

/// Everything the server sent until it closed the connection, and whether
/// it closed with a reset rather than a FIN.
#[derive(Debug, PartialEq, Eq)]
pub struct Closed {
    pub received: String,
    reset: bool,
}

impl Closed {
    pub fn quietly() -> Self {
        Self {
            received: String::new(),
            reset: false,
        }
    }
}

pub async fn until_closed(stream: &mut TcpStream) -> Closed {
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    let reset = tokio::time::timeout(PATIENCE, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) => return false,
                Ok(n) => received.extend_from_slice(&buf[..n]),
                Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => return true,
                Err(err) => panic!("reading: {err}"),
            }
        }
    })
    .await
    .expect("the server closed the connection");
    Closed {
        received: String::from_utf8(received).unwrap(),
        reset,
    }
}

/// One response read off a kept-alive connection (a `Content-Length`
/// body), the connection left open.
pub struct Answer {
    pub status_line: String,
    headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    fn parse(text: &str) -> Self {
        let (head, body) = text.split_once("\r\n\r\n").expect("a whole head");
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap().to_owned();
        let headers = lines
            .map(|line| {
                let (name, value) = line.split_once(':').unwrap();
                (name.trim().to_ascii_lowercase(), value.trim().to_owned())
            })
            .collect();
        Self {
            status_line,
            headers,
            body: body.to_owned(),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub async fn read(stream: &mut TcpStream) -> Self {
        let mut received = Vec::new();
        let mut buf = [0u8; 4096];
        tokio::time::timeout(PATIENCE, async {
            loop {
                let n = stream.read(&mut buf).await.unwrap();
                assert!(n > 0, "closed before a whole response");
                received.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&received);
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let answer = Self::parse(&format!("{head}\r\n\r\n"));
                    let length: usize = answer.header("content-length").unwrap().parse().unwrap();
                    if body.len() >= length {
                        return Self::parse(&text);
                    }
                }
            }
        })
        .await
        .expect("a response in time")
    }
}

/// Writes a whole `GET /healthz` on `stream`.
pub async fn send_healthz(stream: &mut TcpStream, app: &TestApp) {
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", authority(app));
    stream.write_all(request.as_bytes()).await.unwrap();
}

/// A head cut short and a connection that sends nothing: both are closed
/// at the header timeout without a byte of answer (there was no request to
/// answer). A fresh connection is served meanwhile.
async fn a_slow_or_silent_head_is_closed_without_an_answer(engine: Engine) {
    let app = spawn(engine, |l| l.header_timeout = SECOND).await;
    let mut slow = connect(&app).await;
    slow.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n", authority(&app)).as_bytes())
        .await
        .unwrap();
    let mut silent = connect(&app).await;

    let healthz = app.get("/healthz").await;
    assert_eq!(healthz.status(), 200);

    assert_eq!(until_closed(&mut slow).await, Closed::quietly());
    assert_eq!(until_closed(&mut silent).await, Closed::quietly());
}

/// A body that stops coming: `408 Request Timeout`, `Connection: close`,
/// then the connection is closed.
async fn a_slow_body_is_answered_408_and_closed(engine: Engine) {
    let app = spawn(engine, |l| l.body_timeout = SECOND).await;
    let body = r#"{"redirect_uris":["https://app.example/cb"],"client_name":"Slow"}"#;
    let mut stream = connect(&app).await;
    let head = format!(
        "POST /register HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{}",
        authority(&app),
        body.len(),
        &body[..12]
    );
    stream.write_all(head.as_bytes()).await.unwrap();

    let closed = until_closed(&mut stream).await;
    assert!(!closed.reset, "{closed:?}");
    let answer = Answer::parse(&closed.received);
    assert_eq!(answer.status_line, "HTTP/1.1 408 Request Timeout");
    assert_eq!(answer.header("connection"), Some("close"));
    assert_eq!(
        answer.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(answer.body, "The request was not received in time.\n");
}

/// After an answer, a kept-alive connection with no next request is
/// closed at the idle timeout, without a byte more.
async fn an_idle_connection_is_closed_at_the_idle_timeout(engine: Engine) {
    let app = spawn(engine, |l| l.idle_timeout = SECOND).await;
    let mut stream = connect(&app).await;
    send_healthz(&mut stream, &app).await;
    let answer = Answer::read(&mut stream).await;
    assert_eq!(answer.status_line, "HTTP/1.1 200 OK");
    assert_eq!(answer.header("connection"), None, "kept alive");

    assert_eq!(until_closed(&mut stream).await, Closed::quietly());
}

/// The wait between requests is the idle timeout's, not the header
/// timeout's: a kept-alive connection quiet for longer than the header
/// timeout still carries the next request.
async fn a_kept_alive_connection_outlives_the_header_timeout(engine: Engine) {
    let app = spawn(engine, |l| l.header_timeout = SECOND).await;
    let mut stream = connect(&app).await;
    send_healthz(&mut stream, &app).await;
    assert_eq!(
        Answer::read(&mut stream).await.status_line,
        "HTTP/1.1 200 OK"
    );
    tokio::time::sleep(SECOND * 2).await;
    send_healthz(&mut stream, &app).await;
    let again = Answer::read(&mut stream).await;
    assert_eq!(again.status_line, "HTTP/1.1 200 OK");
    assert_eq!(again.body, "ok");
}

/// Holds the write lock on the clients table from outside the server, so a
/// registration waits on the database; released on drop of the guard's
/// connection (the transaction is never committed).
enum ClientsLock {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

impl ClientsLock {
    async fn hold(db: &TestDatabase) -> Self {
        use sqlx::Connection;
        match &db.url {
            coop::config::DatabaseUrl::Sqlite(url) => {
                let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
                let begin = sqlx::raw_sql("begin immediate");
                begin.execute(&mut conn).await.unwrap();
                Self::Sqlite(conn)
            }
            coop::config::DatabaseUrl::Postgres(url) => {
                let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
                let lock =
                    sqlx::raw_sql("begin; lock table oauth_clients in access exclusive mode");
                lock.execute(&mut conn).await.unwrap();
                Self::Postgres(conn)
            }
        }
    }

    async fn release(self) {
        match self {
            Self::Sqlite(mut conn) => {
                sqlx::raw_sql("rollback").execute(&mut conn).await.unwrap();
            }
            Self::Postgres(mut conn) => {
                sqlx::raw_sql("rollback").execute(&mut conn).await.unwrap();
            }
        }
    }
}

/// A request stuck on the database past the request timeout is dropped and
/// answered `503` with `Connection: close`; the server goes on serving.
async fn a_request_not_answered_in_time_gets_503(engine: Engine) {
    let app = spawn(engine, |l| l.request_timeout = SECOND).await;
    let registration = serde_json::json!({
        "redirect_uris": ["https://app.example/cb"],
        "client_name": "Patient"
    });
    let lock = ClientsLock::hold(&app.db).await;
    let response = app
        .browser
        .post(app.url("/register"))
        .json(&registration)
        .timeout(PATIENCE)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["connection"], "close");
    assert_eq!(
        response.text().await.unwrap(),
        "The request could not be answered in time.\n"
    );
    lock.release().await;

    assert_eq!(app.register(&registration).await.status(), 201);
}

pub const SHED: &str = "HTTP/1.1 503 Service Unavailable\r\n\
Content-Length: 0\r\n\
Retry-After: 1\r\n\
Connection: close\r\n\r\n";

/// 500 slow sockets against a cap of 50: the 50 first are served (and
/// closed at the header timeout), the 450 others get the fixed 503 at once
/// and are closed; `/healthz` is refused the same way while the cap is full
/// and answers once the slow ones are cut off, with all 500 sockets still
/// held open by the client. The database plays no part in accepting
/// connections, so this runs on SQLite only, which keeps the suite's open
/// descriptors in bounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_answers_while_500_slow_sockets_are_held() {
    const CAP: usize = 50;
    const SOCKETS: usize = 500;
    let app = spawn(Engine::Sqlite, |l| {
        l.header_timeout = SECOND * 3;
        l.max_connections = CAP;
    })
    .await;
    let half_head = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n", authority(&app));
    let mut sockets = Vec::with_capacity(SOCKETS);
    for _ in 0..SOCKETS {
        let mut stream = connect(&app).await;
        // A shed socket may be closed before this is written; that is fine.
        let _ = stream.write_all(half_head.as_bytes()).await;
        sockets.push(stream);
    }

    // While the cap is full, a new connection is refused, not left waiting.
    let refused = app.get("/healthz").await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    assert_eq!(refused.headers()["connection"], "close");

    let mut fates = Vec::with_capacity(SOCKETS);
    for stream in &mut sockets {
        fates.push(until_closed(stream).await);
    }
    let served = &fates[..CAP];
    for fate in served {
        assert_eq!(fate, &Closed::quietly(), "a served slow socket");
    }
    for fate in &fates[CAP..] {
        assert_eq!(fate.received, SHED, "a shed socket: {fate:?}");
    }

    // The client still holds all 500 sockets; the server holds none.
    assert_eq!(sockets.len(), SOCKETS);
    let healthz = app.get("/healthz").await;
    assert_eq!(healthz.status(), 200);
    assert_eq!(healthz.text().await.unwrap(), "ok");
}

/// SIGTERM with a slow head, a slow body (a request under way) and an idle
/// kept-alive connection: the idle one is closed at once, the other two at
/// the drain deadline, long before their own timeouts, and the process
/// exits 0.
async fn sigterm_with_slow_clients_exits_zero_at_the_drain_deadline(engine: Engine) {
    let db = TestDatabase::create(engine).await;
    let server = Server::start(
        &db.url_string(),
        &[
            "--drain-timeout",
            "1",
            "--header-timeout",
            "300",
            "--body-timeout",
            "300",
            "--request-timeout",
            "300",
            "--idle-timeout",
            "300",
        ],
        &[("RUST_LOG", "info,tower_http=debug")],
    )
    .await;
    let authority = server.issuer.strip_prefix("http://").unwrap().to_owned();
    let connect = || TcpStream::connect(authority.clone());

    let mut slow_head = connect().await.unwrap();
    slow_head
        .write_all(format!("GET /healthz HTTP/1.1\r\nHost: {authority}\r\n").as_bytes())
        .await
        .unwrap();
    let mut idle = connect().await.unwrap();
    idle.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {authority}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    assert_eq!(Answer::read(&mut idle).await.status_line, "HTTP/1.1 200 OK");
    let mut slow_body = connect().await.unwrap();
    slow_body
        .write_all(
            format!(
                "POST /register HTTP/1.1\r\nHost: {authority}\r\n\
                 Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"redir"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    // Accepted in order, so the slow head's connection is being served too.
    server
        .wait_for_log(&[
            "method=POST",
            "path=\"/register\"",
            "started processing request",
        ])
        .await;

    server.send_sigterm();
    assert_eq!(until_closed(&mut idle).await, Closed::quietly());
    let (status, logs) = server.wait().await;
    assert_eq!(status.code(), Some(0), "{logs}");
    assert!(
        logs.contains("drain deadline passed: closing the connections left"),
        "{logs}"
    );
    assert_eq!(until_closed(&mut slow_head).await, Closed::quietly());
    assert_eq!(until_closed(&mut slow_body).await, Closed::quietly());
}

/// Each setting's bad values, through its flag and its variable, refused
/// with one line naming it before anything is created.
#[tokio::test]
async fn bad_connection_settings_are_refused_in_one_line() {
    let cases: [(&[&str], &str); 10] = [
        (
            &["--header-timeout", "0"],
            "--header-timeout / COOP_HEADER_TIMEOUT: must be between 1 and 300 seconds",
        ),
        (
            &["--body-timeout", "soon"],
            "--body-timeout / COOP_BODY_TIMEOUT: \"soon\" is not a whole number of seconds",
        ),
        (
            &["--request-timeout", "601"],
            "--request-timeout / COOP_REQUEST_TIMEOUT: must be between 1 and 600 seconds",
        ),
        (
            &["--idle-timeout", "-1"],
            "--idle-timeout / COOP_IDLE_TIMEOUT: \"-1\" is not a whole number of seconds",
        ),
        (
            &["--idle-timeout", "3601"],
            "--idle-timeout / COOP_IDLE_TIMEOUT: must be between 1 and 3600 seconds",
        ),
        (
            &["--max-connections", "0"],
            "--max-connections / COOP_MAX_CONNECTIONS: must be between 1 and 1000000",
        ),
        (
            &["--max-connections", "lots"],
            "--max-connections / COOP_MAX_CONNECTIONS: \"lots\" is not a whole number",
        ),
        (
            &["--max-connections-per-network", "-1"],
            "--max-connections-per-network / COOP_MAX_CONNECTIONS_PER_NETWORK: \"-1\" is not a whole number",
        ),
        (
            &["--max-connections-per-network", "1000001"],
            "--max-connections-per-network / COOP_MAX_CONNECTIONS_PER_NETWORK: must be between 0 and 1000000",
        ),
        (
            &["--drain-timeout", "601"],
            "--drain-timeout / COOP_DRAIN_TIMEOUT: must be between 0 and 600 seconds",
        ),
    ];
    for (args, line) in cases {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("never.db");
        let url = format!("sqlite://{}", db.display());
        let mut full = vec!["serve"];
        full.extend_from_slice(args);
        let (code, _, err) = run_cli(&url, &full, None).await;
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(err, format!("error: {line}\n"), "{args:?}");
        assert!(!db.exists(), "{args:?} created the database");
    }

    // The variables feed the same checks.
    let dir = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_coop"))
        .arg("serve")
        .env(
            "COOP_DATABASE_URL",
            format!("sqlite://{}", dir.path().join("never.db").display()),
        )
        .env("COOP_MAX_CONNECTIONS", "0")
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: --max-connections / COOP_MAX_CONNECTIONS: must be between 1 and 1000000\n"
    );
}
