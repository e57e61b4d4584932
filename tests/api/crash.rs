//! Nothing acknowledged is lost in a crash. A real `coop serve`
//! takes a stream of `record_daily_entry` calls and refresh-token
//! rotations from several clients at once and is killed with SIGKILL at a
//! moment nobody chose; it is started again on the same database and
//! address, and then:
//!
//! - every call answered 200 is there, exactly as sent, with its audit row;
//! - nothing is half-written: every entry has its audit row and every
//!   audit row its entry (the calls in flight at the kill are either whole
//!   or absent);
//! - no refresh-token family (grant) has two live tokens, none was taken
//!   for reuse and revoked, and the last refresh token each client was
//!   given still works (if the rotation in flight at the kill committed
//!   unanswered, the reuse window hands its successor out again).
//!
//! In CI each engine is killed twice, a few seconds in all.
//! `bench/crash.sh` runs many kills against the release build through the
//! same test (`COOP_CRASH_RUNS`, `COOP_CRASH_BIN`) and prints the line each
//! run ends with: runs, calls acknowledged, lost.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::mcp::{self, BOTH_SCOPES, Wire};
use crate::helpers::oauth::Tokens;
use crate::helpers::{Engine, TestApp, TestDatabase, flock_add};
use crate::on_both_engines;
use crate::serve::{NO_RATE_LIMITS, Server};

on_both_engines!(kill_9_loses_no_acknowledged_call_and_leaves_one_live_token_per_family);

const WRITERS: usize = 4;
const GRANTS: usize = 2;
const FLOCKS: [&str; 4] = ["Crash 1", "Crash 2", "Crash 3", "Crash 4"];
/// The flocks' placement: each write takes the next free (flock, day).
const FIRST_DAY: time::Date = time::macros::date!(2000 - 01 - 01);

/// One acknowledged `record_daily_entry`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Entry {
    flock: String,
    date: String,
    eggs: i64,
    notes: String,
}

impl Entry {
    fn numbered(key: usize) -> Option<Self> {
        let day = FIRST_DAY + time::Duration::days((key / FLOCKS.len()) as i64);
        if day >= time::OffsetDateTime::now_utc().date() {
            return None;
        }
        Some(Self {
            flock: FLOCKS[key % FLOCKS.len()].to_owned(),
            date: day.to_string(),
            eggs: (key % 5000) as i64,
            notes: format!("crash test call {key}"),
        })
    }

    fn key(&self) -> (String, String) {
        (self.flock.clone(), self.date.clone())
    }
}

/// What the clients were told, over every run.
#[derive(Default)]
struct Ledger {
    written: Vec<Entry>,
    refreshes: usize,
    /// Each grant's tokens as last answered.
    tokens: Vec<Tokens>,
    in_flight: usize,
    /// Entries stored whole although their call got no answer (committed
    /// just before the kill), as of the last check.
    stored_unanswered: usize,
}

type Shared = Arc<Mutex<Ledger>>;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn free_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// A kill moment from 200 to 800 ms into the stream, different every run.
fn kill_after() -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    Duration::from_millis(200 + u64::from(nanos % 600))
}

async fn kill_9_loses_no_acknowledged_call_and_leaves_one_live_token_per_family(engine: Engine) {
    let runs: usize = env_or("COOP_CRASH_RUNS", 2);
    let binary =
        std::env::var("COOP_CRASH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_coop").to_owned());
    let db = Arc::new(TestDatabase::create(engine).await);
    let bind = free_address();
    let database_url = db.url_string();
    let start = || Server::start_binary(&binary, &bind, &database_url, &NO_RATE_LIMITS, &[]);
    let mut server = start().await;
    let app = Arc::new(TestApp::attach(&server.issuer, db.clone()));

    let user = app.farm_with_member("manager").await;
    app.admin(&["house", "add", "--farm", &user.farm, "--name", "Barn"])
        .await;
    for flock in FLOCKS {
        let args = flock_add(&user.farm, "Barn", flock, "2000-01-01", "1000");
        app.admin(&args[1..]).await;
    }
    let ledger: Shared = Arc::default();
    for _ in 0..GRANTS {
        let tokens = app.connect(&user, BOTH_SCOPES).await;
        ledger.lock().unwrap().tokens.push(tokens);
    }
    let next_key = Arc::new(AtomicUsize::new(0));

    let mut failures = Vec::new();
    for run in 1..=runs {
        let mut streams = Vec::new();
        for writer in 0..WRITERS {
            streams.push(tokio::spawn(write_until_gone(
                app.clone(),
                ledger.clone(),
                next_key.clone(),
                writer % GRANTS,
            )));
        }
        for grant in 0..GRANTS {
            streams.push(tokio::spawn(refresh_until_gone(
                app.clone(),
                ledger.clone(),
                grant,
            )));
        }
        tokio::time::sleep(kill_after()).await;
        server.kill().await;
        for stream in streams {
            stream.await.unwrap();
        }
        server = start().await;
        failures.extend(
            check(&app, &ledger)
                .await
                .into_iter()
                .map(|f| format!("run {run}: {f}")),
        );
    }

    let ledger = ledger.lock().unwrap();
    let lost = failures.iter().filter(|f| f.contains("lost")).count();
    println!(
        "crash runs: {runs} on {engine:?}, calls acknowledged: {} ({} record_daily_entry, {} refreshes), unanswered at the kills: {} (entries among them stored whole: {}), lost: {lost}",
        ledger.written.len() + ledger.refreshes,
        ledger.written.len(),
        ledger.refreshes,
        ledger.in_flight,
        ledger.stored_unanswered,
    );
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(
        !ledger.written.is_empty() && ledger.refreshes > 0,
        "the stream acknowledged nothing before the kills"
    );
    drop(server);
}

/// Records entries, one at a time, until the server is gone.
async fn write_until_gone(
    app: Arc<TestApp>,
    ledger: Shared,
    next_key: Arc<AtomicUsize>,
    grant: usize,
) {
    let client = reqwest::Client::new();
    loop {
        let Some(entry) = Entry::numbered(next_key.fetch_add(1, Ordering::Relaxed)) else {
            return;
        };
        let token = ledger.lock().unwrap().tokens[grant].access_token.clone();
        let body = mcp::request_body(
            Wire::V2025_11_25,
            1,
            "tools/call",
            json!({"name": "record_daily_entry", "arguments": {
                "flock": entry.flock, "date": entry.date,
                "eggs_collected": entry.eggs, "notes": entry.notes,
            }}),
        );
        let mut request = client.post(app.url("/mcp")).bearer_auth(&token).json(&body);
        for (name, value) in mcp::wire_headers(Wire::V2025_11_25, &body) {
            request = request.header(name, value);
        }
        let answer = match request.send().await {
            Ok(response) => {
                let status = response.status();
                response.text().await.map(|text| (status, text))
            }
            Err(err) => Err(err),
        };
        let Ok((status, text)) = answer else {
            // No answer: the call was in flight at the kill (or sent after).
            ledger.lock().unwrap().in_flight += 1;
            return;
        };
        assert_eq!(status, 200, "{text}");
        let reply: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            reply["result"]["structuredContent"]["change"], "created",
            "{reply}"
        );
        ledger.lock().unwrap().written.push(entry);
    }
}

/// Rotates grant `grant`'s refresh token, again and again, until the
/// server is gone.
async fn refresh_until_gone(app: Arc<TestApp>, ledger: Shared, grant: usize) {
    loop {
        let tokens = ledger.lock().unwrap().tokens[grant].clone();
        let answer = match try_refresh(&app, &tokens).await {
            Ok(answer) => answer,
            Err(()) => {
                ledger.lock().unwrap().in_flight += 1;
                return;
            }
        };
        let mut ledger = ledger.lock().unwrap();
        ledger.tokens[grant] = answer;
        ledger.refreshes += 1;
    }
}

/// A refresh: the new tokens, or `Err` when no whole answer came back. Any
/// answer but 200 fails the test.
async fn try_refresh(app: &TestApp, tokens: &Tokens) -> Result<Tokens, ()> {
    let request = tokens.refresh_request().request(app, "/token");
    let response = request.send().await.map_err(|_| ())?;
    let status = response.status();
    let text = response.text().await.map_err(|_| ())?;
    assert_eq!(status, 200, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    Ok(Tokens {
        access_token: body["access_token"].as_str().unwrap().to_owned(),
        refresh_token: body["refresh_token"].as_str().unwrap().to_owned(),
        ..tokens.clone()
    })
}

/// What the restarted server's database holds, against what the clients
/// were told; each failure as a sentence ("lost" for an acknowledged call
/// that is missing).
async fn check(app: &TestApp, ledger: &Shared) -> Vec<String> {
    let mut failures = Vec::new();
    let stored: HashMap<(String, String), Entry> = entries(app)
        .await
        .into_iter()
        .map(|entry| (entry.key(), entry))
        .collect();
    let audited: HashSet<(String, String)> = audited_writes(app).await;
    let written = ledger.lock().unwrap().written.clone();
    ledger.lock().unwrap().stored_unanswered = stored.len().saturating_sub(written.len());
    for entry in &written {
        match stored.get(&entry.key()) {
            Some(found) if found == entry => {}
            Some(found) => failures.push(format!("lost: {entry:?} is stored as {found:?}")),
            None => failures.push(format!("lost: {entry:?} is not stored")),
        }
        if !audited.contains(&entry.key()) {
            failures.push(format!("lost: {entry:?} has no audit row"));
        }
    }
    for key in stored.keys() {
        if !audited.contains(key) {
            failures.push(format!("half-written: the entry {key:?} has no audit row"));
        }
    }
    for key in &audited {
        if !stored.contains_key(key) {
            failures.push(format!(
                "half-written: the audit row of {key:?} has no entry"
            ));
        }
    }

    let families = "select count(*) from (select grant_id from refresh_tokens
         where used_at is null group by grant_id having count(*) > 1) doubled";
    let doubled = app.db_count(families).await;
    if doubled > 0 {
        failures.push(format!(
            "{doubled} refresh-token families have two live tokens"
        ));
    }
    let revoked = app
        .db_count("select count(*) from grants where revoked_at is not null")
        .await;
    if revoked > 0 {
        failures.push(format!("{revoked} grants were revoked"));
    }
    // The last refresh token each client holds still works, once.
    for grant in 0..GRANTS {
        let tokens = ledger.lock().unwrap().tokens[grant].clone();
        match try_refresh(app, &tokens).await {
            Ok(next) => {
                let mut ledger = ledger.lock().unwrap();
                ledger.tokens[grant] = next;
                ledger.refreshes += 1;
            }
            Err(()) => failures.push(format!("lost: grant {grant}'s refresh got no answer")),
        }
    }
    if app.db_count(families).await > 0 {
        failures.push("after the refreshes, a family has two live tokens".to_owned());
    }
    failures
}

const ENTRIES: &str = "select f.name, cast(e.entry_date as text), e.eggs_collected, e.notes
     from daily_entries e join flocks f on f.id = e.flock_id";
const AUDITED: &str = "select detail from audit_log where kind = 'tool_write'";

async fn entries(app: &TestApp) -> Vec<Entry> {
    let rows: Vec<(String, String, i64, String)> = app.db_rows(ENTRIES).await;
    rows.into_iter()
        .map(|(flock, date, eggs, notes)| Entry {
            flock,
            date,
            eggs,
            notes,
        })
        .collect()
}

async fn audited_writes(app: &TestApp) -> HashSet<(String, String)> {
    let details: Vec<(String,)> = app.db_rows(AUDITED).await;
    details
        .iter()
        .map(|(detail,)| {
            let detail: Value = serde_json::from_str(detail).unwrap();
            (
                detail["flock"].as_str().unwrap().to_owned(),
                detail["date"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}
