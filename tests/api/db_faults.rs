//! A database fault never looks like a revocation. With the
//! database out of reach, `/mcp`, `/token` and the pages answer 503 with
//! `Retry-After` (a JSON-RPC error on `/mcp`, `temporarily_unavailable` at
//! `/token`), never 401 or `invalid_grant`: a client told that would throw
//! its tokens away. `/readyz` says 503 while PostgreSQL is gone. When the
//! database is back, the same tokens work, without a restart, and nothing
//! the failed requests touched was spent or half-written.
//!
//! The faults are real ones. PostgreSQL: the app reaches the machine's
//! server through a proxy the test stops (connections refused, open ones
//! closed) or holds and cuts in the middle of a call ([`crate::pg_proxy`]).
//! SQLite: a real `coop serve` whose file lives on a small tmpfs the test
//! fills to the last byte (the disk full), or whose file and write-ahead
//! log the test makes immutable with `chattr +i` while the server has them
//! open (the file read-only; root ignores permission bits, not that): a
//! tool write, a refresh, a sign-in, a page whose session must be stored
//! and a disconnect posted by a signed-in person are refused, reads go on,
//! and the log names the cause in one line per refused request.
//! Both need root (mount, chattr), as CI has; elsewhere they are skipped
//! unless `COOP_TEST_REQUIRE_FAULTS=1`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use coop::config::DatabaseUrl;
use serde_json::{Value, json};

use crate::helpers::mcp::{self, BOTH_SCOPES, Wire};
use crate::helpers::oauth::{Tokens, assert_oauth_error};
use crate::helpers::{
    Browser, Engine, TestApp, TestDatabase, TestUser, cookie_jar, postgres_available,
};
use crate::pg_proxy::PgProxy;
use crate::serve::{NO_RATE_LIMITS, Server};

/// The `Retry-After` of every answer to a database fault, in seconds.
const RETRY_AFTER: &str = "5";
/// The JSON-RPC code of "unavailable, retry" on `/mcp`.
const UNAVAILABLE: i64 = -32001;

// ---- requests and what their answers must be ----------------------------

async fn tool_call(
    app: &TestApp,
    token: &str,
    tool: &str,
    args: Value,
    id: &str,
) -> reqwest::Response {
    let body = mcp::request_body(
        Wire::V2025_11_25,
        7,
        "tools/call",
        json!({"name": tool, "arguments": args}),
    );
    app.mcp_post(Some(token), Wire::V2025_11_25, &body)
        .header("x-request-id", id)
        .send()
        .await
        .unwrap()
}

fn entry(date: &str) -> Value {
    json!({"flock": "Hens A", "date": date, "eggs_collected": 812, "notes": "fault test"})
}

async fn record(app: &TestApp, tokens: &Tokens, date: &str, id: &str) -> reqwest::Response {
    tool_call(
        app,
        &tokens.access_token,
        "record_daily_entry",
        entry(date),
        id,
    )
    .await
}

async fn list_flocks(app: &TestApp, tokens: &Tokens, id: &str) -> reqwest::Response {
    tool_call(app, &tokens.access_token, "list_flocks", json!({}), id).await
}

async fn refresh(app: &TestApp, tokens: &Tokens, id: &str) -> reqwest::Response {
    let request = tokens.refresh_request().request(app, "/token");
    request.header("x-request-id", id).send().await.unwrap()
}

/// The sign-in page for a new visitor: no session, no database (its form's
/// CSRF token is a cookie), so it shows whatever the database's state.
async fn login_page(app: &TestApp, id: &str) -> reqwest::Response {
    cookie_jar()
        .get(app.url("/login"))
        .header("x-request-id", id)
        .send()
        .await
        .unwrap()
}

/// A sign-in with the right password, from a fresh browser.
async fn sign_in(app: &TestApp, user: &TestUser, id: &str) -> reqwest::Response {
    Browser::new(app)
        .sign_in_request(&user.email, &user.password, Some("/"))
        .await
        .header("x-request-id", id)
        .send()
        .await
        .unwrap()
}

fn retry_after(response: &reqwest::Response) -> Option<&str> {
    response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap())
}

async fn assert_mcp_unavailable(response: reqwest::Response) {
    assert_eq!(response.status(), 503);
    assert_eq!(retry_after(&response), Some(RETRY_AFTER));
    assert!(response.headers().get("www-authenticate").is_none());
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["id"], 7, "{body}");
    assert_eq!(body["error"]["code"], UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["data"]["retryAfterSeconds"], 5, "{body}");
}

async fn assert_token_unavailable(response: reqwest::Response) {
    assert_eq!(retry_after(&response), Some(RETRY_AFTER));
    assert_oauth_error(response, 503, "temporarily_unavailable").await;
}

async fn assert_page_unavailable(response: reqwest::Response) {
    assert_eq!(response.status(), 503);
    assert_eq!(retry_after(&response), Some(RETRY_AFTER));
    let html = response.text().await.unwrap();
    assert!(html.contains("Try again shortly"), "{html}");
}

async fn assert_tool_ok(response: reqwest::Response) -> Value {
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert!(body["result"].is_object(), "{body}");
    assert_ne!(body["result"]["isError"], true, "{body}");
    body
}

/// Sends `request` until it is answered (2xx or 3xx), while every other answer is a
/// 503 with `Retry-After` (a pooled connection the fault killed fails its
/// one request, then is replaced): service resumes without a restart.
async fn until_served<F, Fut>(mut request: F) -> reqwest::Response
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = reqwest::Response>,
{
    for _ in 0..20 {
        let response = request().await;
        if response.status().is_success() || response.status().is_redirection() {
            return response;
        }
        assert_eq!(response.status(), 503, "{:?}", response.text().await);
        assert_eq!(retry_after(&response), Some(RETRY_AFTER));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("service did not resume");
}

async fn entries_on(app: &TestApp, date: &str) -> (i64, i64) {
    let entries = app
        .db_count(&format!(
            "select count(*) from daily_entries where entry_date = '{date}'"
        ))
        .await;
    let audited = app.db_count(&format!(
            "select count(*) from audit_log where kind = 'tool_write' and detail like '%\"date\":\"{date}\"%'"
        ))
    .await;
    (entries, audited)
}

/// The refreshed token set, after a 200 from `/token`.
async fn refreshed(tokens: &Tokens, response: reqwest::Response) -> Tokens {
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    Tokens {
        access_token: body["access_token"].as_str().unwrap().to_owned(),
        refresh_token: body["refresh_token"].as_str().unwrap().to_owned(),
        ..tokens.clone()
    }
}

// ---- PostgreSQL behind a proxy ------------------------------------------

/// A Coop whose PostgreSQL connections all go through a proxy, a manager
/// connected with both scopes, and the manager's signed-in browser.
struct Proxied {
    app: TestApp,
    proxy: PgProxy,
    user: TestUser,
    tokens: Tokens,
    browser: Browser,
}

async fn proxied() -> Proxied {
    let db = Arc::new(TestDatabase::create(Engine::Postgres).await);
    let DatabaseUrl::Postgres(raw) = &db.url else {
        unreachable!()
    };
    let parsed = url::Url::parse(raw).unwrap();
    let upstream: SocketAddr =
        tokio::net::lookup_host((parsed.host_str().unwrap(), parsed.port().unwrap_or(5432)))
            .await
            .unwrap()
            .next()
            .unwrap();
    let proxy = PgProxy::start(upstream).await;
    let via = proxy.url_for(&db.url);
    let app = TestApp::spawn_on(db, move |config| {
        config.database_url = via;
        config.mcp_rate_limit = 0;
        config.mcp_subject_rate_limit = 0;
        config.token_rate_limit = 0;
    })
    .await;
    let user = app.farm_with_flocks("manager").await;
    let tokens = app.connect(&user, BOTH_SCOPES).await;
    let browser = app.signed_in(&user).await;
    assert_tool_ok(list_flocks(&app, &tokens, "warm").await).await;
    Proxied {
        app,
        proxy,
        user,
        tokens,
        browser,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stopped_is_503_with_retry_after_everywhere_and_service_resumes() {
    if !postgres_available().await {
        return;
    }
    let Proxied {
        app,
        proxy,
        user,
        tokens,
        browser,
    } = proxied().await;

    proxy.stop().await;
    let signed_in_page = async { browser.open("/account/apps").await };
    let ready = async { app.get("/readyz").await };
    // At once: each waits for a connection until the pool gives up.
    let (read, write, token, page, signed_in, ready) = tokio::join!(
        list_flocks(&app, &tokens, "read"),
        record(&app, &tokens, "2026-11-02", "write"),
        refresh(&app, &tokens, "refresh"),
        signed_in_page,
        sign_in(&app, &user, "sign in"),
        ready,
    );
    assert_mcp_unavailable(read).await;
    assert_mcp_unavailable(write).await;
    assert_token_unavailable(token).await;
    assert_page_unavailable(page).await;
    assert_page_unavailable(signed_in).await;
    assert_eq!(ready.status(), 503);
    assert_eq!(app.get("/healthz").await.status(), 200);

    proxy.restart().await;
    assert_eq!(until_served(|| app.get("/readyz")).await.status(), 200);
    assert_tool_ok(until_served(|| list_flocks(&app, &tokens, "read again")).await).await;
    assert_tool_ok(until_served(|| record(&app, &tokens, "2026-11-02", "write again")).await).await;
    assert_eq!(entries_on(&app, "2026-11-02").await, (1, 1));
    // The refresh token the refused request carried was not spent.
    let next = refreshed(
        &tokens,
        until_served(|| refresh(&app, &tokens, "again")).await,
    )
    .await;
    assert_tool_ok(list_flocks(&app, &next, "new token").await).await;
    let page = until_served(|| async { browser.open("/account/apps").await }).await;
    assert_eq!(page.status(), 200);
    assert_eq!(
        until_served(|| sign_in(&app, &user, "again"))
            .await
            .status(),
        303
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_connection_cut_mid_call_is_503_and_spends_nothing() {
    if !postgres_available().await {
        return;
    }
    let Proxied {
        app, proxy, tokens, ..
    } = proxied().await;

    // A tool write whose statements are on the wire when the database goes.
    proxy.hold();
    let write = tokio::spawn({
        let (app, tokens) = (TestApp::attach(&app.issuer, app.db.clone()), tokens.clone());
        async move { record(&app, &tokens, "2026-11-03", "cut write").await }
    });
    proxy.until_traffic_is_held().await;
    proxy.stop().await;
    proxy.release();
    assert_mcp_unavailable(write.await.unwrap()).await;
    proxy.restart().await;
    assert_eq!(entries_on(&app, "2026-11-03").await, (0, 0));
    assert_tool_ok(until_served(|| list_flocks(&app, &tokens, "after cut")).await).await;

    // A refresh likewise.
    proxy.hold();
    let refresh_call = tokio::spawn({
        let (app, tokens) = (TestApp::attach(&app.issuer, app.db.clone()), tokens.clone());
        async move { refresh(&app, &tokens, "cut refresh").await }
    });
    proxy.until_traffic_is_held().await;
    proxy.stop().await;
    proxy.release();
    assert_token_unavailable(refresh_call.await.unwrap()).await;
    proxy.restart().await;
    // Not spent, not taken for reuse: the same refresh token works, once.
    let next = refreshed(
        &tokens,
        until_served(|| refresh(&app, &tokens, "retry")).await,
    )
    .await;
    assert_tool_ok(list_flocks(&app, &next, "new token").await).await;
    app.assert_count(
        "select count(*) from grants where revoked_at is not null",
        0,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_signed_by_a_key_another_replica_made_is_not_refused_while_postgres_is_down() {
    if !postgres_available().await {
        return;
    }
    // Replica B, behind the proxy, loads the key set at start.
    let Proxied { app: b, proxy, .. } = proxied().await;
    // A new key, then replica A, which signs with it; B has not seen it.
    let (code, _, err) = b.cli(&["keys", "rotate"]).await;
    assert_eq!(code, 0, "{err}");
    let issuer = coop::config::Issuer::parse(&b.issuer).unwrap();
    let a = TestApp::spawn_on(b.db.clone(), |config| config.issuer = Some(issuer)).await;
    let user = a
        .add_member(&farm_of(&b).await, "a@hillside.example", "manager", None)
        .await;
    let tokens = a.connect(&user, BOTH_SCOPES).await;
    // B reloads its key set for an unknown key at most every 5 seconds.
    tokio::time::sleep(Duration::from_millis(5200)).await;

    proxy.stop().await;
    // B cannot read the key set: that says nothing about the token.
    assert_mcp_unavailable(list_flocks(&b, &tokens, "unknown key").await).await;
    proxy.restart().await;
    assert_tool_ok(until_served(|| list_flocks(&b, &tokens, "key known")).await).await;
}

/// The slug of the one farm in `app`'s database.
async fn farm_of(app: &TestApp) -> String {
    app.db_text("select slug from farms").await
}

// ---- SQLite on a full disk or a read-only file ---------------------------

/// Skips a fault test that needs root, unless CI requires it.
fn skip(why: &str) {
    if std::env::var("COOP_TEST_REQUIRE_FAULTS").is_ok_and(|v| v == "1") {
        panic!("COOP_TEST_REQUIRE_FAULTS=1 but {why}");
    }
    eprintln!("skipping: {why}");
}

fn run(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|out| out.status.success())
}

/// A tmpfs of `size` mounted on a directory, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Self> {
        let path = dir.to_str().unwrap();
        run(
            "mount",
            &["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs", path],
        )
        .then(|| Self(dir.to_owned()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy: the server may still hold its files open.
        run("umount", &["-l", self.0.to_str().unwrap()]);
    }
}

/// Files made immutable, mutable again when dropped.
struct Immutable(Vec<PathBuf>);

impl Immutable {
    fn set(files: &[PathBuf]) -> Option<Self> {
        let mut done = Self(Vec::new());
        for file in files {
            if !run("chattr", &["+i", file.to_str().unwrap()]) {
                return None;
            }
            done.0.push(file.clone());
        }
        Some(done)
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        for file in &self.0 {
            run("chattr", &["-i", file.to_str().unwrap()]);
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum SqliteFault {
    DiskFull,
    ReadOnly,
}

/// What keeps the fault in place; dropping it mends it.
enum Broken {
    Filler(PathBuf),
    Immutable(Immutable),
}

impl SqliteFault {
    /// The words the server's log line must use.
    fn cause(self) -> &'static str {
        match self {
            Self::DiskFull => "the disk is full",
            Self::ReadOnly => "the SQLite file cannot be written",
        }
    }

    async fn apply(self, db: &Path) -> Option<Broken> {
        match self {
            Self::DiskFull => {
                // An empty write-ahead log, so the next commit needs a block
                // the file system no longer has.
                truncate_wal(db).await;
                let filler = db.with_file_name("filler");
                fill(&filler);
                Some(Broken::Filler(filler))
            }
            Self::ReadOnly => {
                let wal = PathBuf::from(format!("{}-wal", db.display()));
                Immutable::set(&[db.to_owned(), wal]).map(Broken::Immutable)
            }
        }
    }
}

impl Broken {
    fn mend(self) {
        match self {
            Self::Filler(filler) => std::fs::remove_file(filler).unwrap(),
            Self::Immutable(immutable) => drop(immutable),
        }
    }
}

async fn truncate_wal(db: &Path) {
    use sqlx::Connection;
    let mut connection = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    for _ in 0..100 {
        let (busy,): (i64,) = sqlx::query_as("pragma wal_checkpoint(truncate)")
            .fetch_one(&mut connection)
            .await
            .unwrap();
        if busy == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    connection.close().await.unwrap();
    let wal = std::fs::metadata(format!("{}-wal", db.display())).unwrap();
    assert_eq!(wal.len(), 0, "the write-ahead log was not truncated");
}

/// Writes `path` until the file system has no byte left.
fn fill(path: &Path) {
    use std::io::Write;
    let mut file = std::fs::File::create(path).unwrap();
    for chunk in [1 << 20, 4096, 512, 1] {
        let bytes = vec![0u8; chunk];
        while file.write_all(&bytes).and_then(|()| file.flush()).is_ok() {}
    }
    let _ = file.sync_all();
}

async fn sqlite_fault_is_503_for_writes_while_reads_go_on(fault: SqliteFault) {
    let dir = tempfile::tempdir().unwrap();
    let _tmpfs = match fault {
        SqliteFault::DiskFull => {
            let Some(mounted) = Tmpfs::mount(dir.path(), "16m") else {
                skip("a tmpfs cannot be mounted here (needs root)");
                return;
            };
            Some(mounted)
        }
        SqliteFault::ReadOnly => None,
    };
    let path = dir.path().join("coop.db");
    let db = Arc::new(TestDatabase::sqlite_file(&path));
    let server = Server::start(&db.url_string(), &NO_RATE_LIMITS, &[]).await;
    let app = TestApp::attach(&server.issuer, db);
    let user = app.farm_with_flocks("manager").await;
    let tokens = app.connect(&user, BOTH_SCOPES).await;
    // Records the grant's last use now, so the calls below do not try to.
    assert_tool_ok(list_flocks(&app, &tokens, "warm").await).await;
    // A signed-in person about to disconnect the app.
    let person = app.signed_in(&user).await;
    let grant = app.grant_of(&user.email).await;
    let disconnect = format!("/account/apps/{grant}/disconnect");
    let csrf = person.csrf(&disconnect).await;
    // Another session of theirs whose CSRF token is gone (as for a session
    // made before it had one): showing a form must store one, after the
    // handler, in the session save.
    let other = app.signed_in(&user).await;
    app.db_execute(&format!(
        "update sessions set data = json_remove(data, '$.csrf') where data not like '%{csrf}%'"
    ))
    .await;

    let Some(broken) = fault.apply(&path).await else {
        skip("chattr +i is refused here (needs root and ext4)");
        return;
    };
    assert_mcp_unavailable(record(&app, &tokens, "2026-11-04", "fault-write").await).await;
    assert_token_unavailable(refresh(&app, &tokens, "fault-refresh").await).await;
    assert_page_unavailable(sign_in(&app, &user, "fault-signin").await).await;
    let needs_saving = other
        .get(app.url(&disconnect))
        .header("x-request-id", "fault-session")
        .send()
        .await
        .unwrap();
    assert_page_unavailable(needs_saving).await;
    let refused = person
        .post(app.url(&disconnect))
        .header("origin", &app.issuer)
        .header("x-request-id", "fault-disconnect")
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_page_unavailable(refused).await;
    // Reads need no new byte on disk: they go on, and so the replica stays
    // ready (on SQLite there is no other replica to send readers to).
    assert_tool_ok(list_flocks(&app, &tokens, "fault-read").await).await;
    assert_eq!(app.get("/readyz").await.status(), 200);
    assert_eq!(login_page(&app, "fault-login").await.status(), 200);

    // One clear line per refused request, naming the cause.
    let logs = server.logs();
    for id in [
        "fault-write",
        "fault-refresh",
        "fault-signin",
        "fault-session",
        "fault-disconnect",
    ] {
        let lines: Vec<&str> = logs
            .lines()
            .filter(|line| line.contains(id) && line.contains(fault.cause()))
            .collect();
        assert_eq!(lines.len(), 1, "{fault:?} {id}: {lines:#?}\n{logs}");
        assert!(lines[0].contains("WARN"), "{}", lines[0]);
    }

    broken.mend();
    assert_eq!(entries_on(&app, "2026-11-04").await, (0, 0));
    assert_tool_ok(until_served(|| record(&app, &tokens, "2026-11-04", "mended")).await).await;
    assert_eq!(entries_on(&app, "2026-11-04").await, (1, 1));
    let next = refreshed(
        &tokens,
        until_served(|| refresh(&app, &tokens, "mended")).await,
    )
    .await;
    assert_tool_ok(list_flocks(&app, &next, "new token").await).await;
    assert_eq!(
        until_served(|| sign_in(&app, &user, "mended"))
            .await
            .status(),
        303
    );
    let saved = until_served(|| async { other.open(&disconnect).await });
    assert_eq!(saved.await.status(), 200);
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_on_a_full_disk_is_503_for_writes_and_says_so_once() {
    sqlite_fault_is_503_for_writes_while_reads_go_on(SqliteFault::DiskFull).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_on_a_read_only_file_is_503_for_writes_and_says_so_once() {
    sqlite_fault_is_503_for_writes_while_reads_go_on(SqliteFault::ReadOnly).await;
}
