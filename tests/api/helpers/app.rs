//! A running Coop ([`TestApp`]): spawned on port 0 over a fresh database
//! (or attached to a `coop serve` child), the `coop` command against its
//! database, the fixtures an operator would make with that command, and
//! direct queries of the database for what a request left behind.

use std::process::Stdio;
use std::sync::{Arc, OnceLock};

use coop::clock::Clock;
use coop::config::{Config, DatabaseUrl};
use coop::startup::Application;
use coop::storage::Store;
use tokio::io::AsyncWriteExt;
use tokio::sync::oneshot;

use super::browser::Browser;
use super::databases::{Engine, TestDatabase};

/// `$body` with `$pool` a pool on the app's database, of whichever engine
/// (the two pool types differ, the statements do not), closed afterwards.
macro_rules! with_pool {
    ($app:expr, |$pool:ident| $body:expr) => {
        match &$app.db.url {
            DatabaseUrl::Sqlite(url) => {
                let $pool = sqlx::SqlitePool::connect(url).await.unwrap();
                let value = $body;
                $pool.close().await;
                value
            }
            DatabaseUrl::Postgres(url) => {
                let $pool = sqlx::PgPool::connect(url).await.unwrap();
                let value = $body;
                $pool.close().await;
                value
            }
        }
    };
}

/// The password every fixture member has.
pub const PASSWORD: &str = "correct horse battery staple";

/// A running Coop and its own browser (cookies on, redirects off).
pub struct TestApp {
    pub address: String,
    pub issuer: String,
    pub clock: Clock,
    pub browser: Browser,
    pub db: Arc<TestDatabase>,
    /// The server's own store, for a test that must hold its connections
    /// (`None` for a `coop serve` child).
    store: Option<Store>,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A member made by a fixture: their farm's slug, email and password.
#[derive(Clone, Debug)]
pub struct TestUser {
    pub farm: String,
    pub email: String,
    pub password: String,
}

impl TestUser {
    /// The sign-in form's fields for this member with `csrf`.
    pub fn login_form<'a>(&'a self, csrf: &'a str) -> [(&'a str, &'a str); 3] {
        [
            ("csrf", csrf),
            ("email", &self.email),
            ("password", &self.password),
        ]
    }
}

/// A farm with an owner and a worker (see [`TestApp::farm`]).
pub struct Farm {
    pub slug: String,
    pub owner: TestUser,
    pub worker: TestUser,
}

/// What a successful `coop admin … add` printed: `name: value` lines on
/// stdout (a secret among them), and what it said on stderr.
pub struct Printed {
    pub out: String,
    pub err: String,
}

impl Printed {
    /// The value printed as `name: value`, if any.
    pub fn get(&self, name: &str) -> Option<String> {
        printed(&self.out, name)
    }

    /// The value printed as `name: value` (asserting there is one).
    pub fn field(&self, name: &str) -> String {
        self.get(name)
            .unwrap_or_else(|| panic!("no {name} in {}", self.out))
    }
}

/// The value of the `name: value` line in `out`, if any.
pub fn printed(out: &str, name: &str) -> Option<String> {
    out.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}: ")))
        .map(|value| value.trim().to_owned())
}

/// Logs to stderr when `TEST_LOG` is set (once per test binary).
pub fn init_logs() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        if std::env::var("TEST_LOG").is_ok() {
            coop::telemetry::init();
        }
    });
}

impl TestApp {
    pub async fn spawn(engine: Engine) -> Self {
        Self::spawn_with(engine, |_| {}).await
    }

    /// A fresh app with [`Self::farm_with_member`]'s farm and member.
    pub async fn with_member(engine: Engine, role: &str) -> (Self, TestUser) {
        let app = Self::spawn(engine).await;
        let user = app.farm_with_member(role).await;
        (app, user)
    }

    /// A fresh app with [`Self::farm_with_flocks`]'s farm, flocks and
    /// member.
    pub async fn with_flocks(engine: Engine, role: &str) -> (Self, TestUser) {
        let app = Self::spawn(engine).await;
        let user = app.farm_with_flocks(role).await;
        (app, user)
    }

    /// A fresh app with [`Self::farm`]'s farm `name`, its owner and worker.
    pub async fn with_farm(engine: Engine, name: &str) -> (Self, Farm) {
        let app = Self::spawn(engine).await;
        let farm = app.farm(name).await;
        (app, farm)
    }

    /// Spawns with a configuration adjusted by `tweak`.
    pub async fn spawn_with(engine: Engine, tweak: impl FnOnce(&mut Config)) -> Self {
        let db = Arc::new(TestDatabase::create(engine).await);
        Self::spawn_on(db, tweak).await
    }

    /// Spawns another server on an existing database (a second replica).
    pub async fn spawn_on(db: Arc<TestDatabase>, tweak: impl FnOnce(&mut Config)) -> Self {
        init_logs();
        let mut config = Config::with_defaults(db.url.clone());
        config.bind = "127.0.0.1:0".parse().unwrap();
        config.password_hash_concurrency = 2;
        tweak(&mut config);
        let clock = Clock::adjustable();
        let app = Application::build(config, clock.clone()).await.unwrap();
        let address = format!("http://{}", app.address());
        let issuer = app.issuer().to_string();
        let store = app.state().store.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(app.run_until(async move {
            let _ = stopped.await;
        }));
        Self {
            browser: Browser::at(&address, &issuer),
            address,
            issuer,
            clock,
            db,
            store: Some(store),
            stop: Some(stop),
        }
    }

    /// The harness's view of a server running elsewhere (a `coop serve`
    /// child process) at `issuer` on `db`; its clock is the real one.
    pub fn attach(issuer: &str, db: Arc<TestDatabase>) -> Self {
        Self {
            address: issuer.to_owned(),
            issuer: issuer.to_owned(),
            clock: Clock::adjustable(),
            browser: Browser::at(issuer, issuer),
            db,
            store: None,
            stop: None,
        }
    }

    /// The store the server itself uses (a spawned app only).
    pub fn store(&self) -> &Store {
        self.store
            .as_ref()
            .expect("the store of a server running in this process")
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    /// GETs `path` with the app's own browser.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.browser.open(path).await
    }

    /// GETs `path` from a plain client (no cookies) with one more header
    /// (`name: value`).
    pub async fn get_with(&self, path: &str, (name, value): (&str, &str)) -> reqwest::Response {
        reqwest::Client::new()
            .get(self.url(path))
            .header(name, value)
            .send()
            .await
            .unwrap()
    }

    /// GETs `path` with `MCP-Protocol-Version: version` (a version no
    /// metadata endpoint may refuse) and asserts a 200.
    pub async fn get_despite_mcp_version(&self, path: &str, version: &str) -> reqwest::Response {
        let response = self.get_with(path, ("mcp-protocol-version", version)).await;
        assert_eq!(response.status(), 200, "{path}");
        response
    }

    /// A CORS preflight of a POST to `path` from the page `origin`, asking
    /// to send `request_headers`.
    pub async fn preflight(
        &self,
        path: &str,
        origin: &str,
        request_headers: &str,
    ) -> reqwest::Response {
        reqwest::Client::new()
            .request(reqwest::Method::OPTIONS, self.url(path))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", request_headers)
            .send()
            .await
            .unwrap()
    }

    /// Signs in with the app's own browser (see [`Browser::sign_in`]);
    /// returns the POST's answer.
    pub async fn sign_in(&self, email: &str, password: &str) -> reqwest::Response {
        self.browser.sign_in(email, password).await
    }

    /// GETs `path` with the app's own browser and reads its JSON.
    pub async fn get_json(&self, path: &str) -> serde_json::Value {
        self.get(path).await.json().await.unwrap()
    }

    /// Runs `coop <args>` against this app's database; returns
    /// (exit code, stdout, stderr).
    pub async fn cli(&self, args: &[&str]) -> (i32, String, String) {
        self.cli_with_stdin(args, None).await
    }

    pub async fn cli_with_stdin(
        &self,
        args: &[&str],
        stdin: Option<&str>,
    ) -> (i32, String, String) {
        run_cli(&self.db.url_string(), args, stdin).await
    }

    /// Runs `coop admin <args>`, asserting success.
    pub async fn admin(&self, args: &[&str]) {
        let mut full = vec!["admin"];
        full.extend_from_slice(args);
        let (code, _, err) = self.cli(&full).await;
        assert_eq!(code, 0, "{args:?}: {err}");
    }

    /// Runs `coop admin client add <args>`, asserting success; what it
    /// printed.
    pub async fn add_client(&self, args: &[&str]) -> Printed {
        let mut full = vec!["admin", "client", "add"];
        full.extend_from_slice(args);
        let (code, out, err) = self.cli(&full).await;
        assert_eq!(code, 0, "{err}");
        Printed { out, err }
    }

    /// Creates a farm and returns its slug.
    pub async fn add_farm(&self, name: &str) -> String {
        let (code, out, err) = self.cli(&["admin", "farm", "add", "--name", name]).await;
        assert_eq!(code, 0, "farm add failed: {err}");
        out.trim().to_owned()
    }

    /// Creates a member of `farm` with a known password.
    pub async fn add_user(&self, farm: &str, email: &str, role: &str, password: &str) {
        self.user_add(farm, email, role, password, None).await;
    }

    /// Creates a member of `farm` with [`PASSWORD`] and `role`, limited to
    /// `flocks` (`--flocks`) when given.
    pub async fn add_member(
        &self,
        farm: &str,
        email: &str,
        role: &str,
        flocks: Option<&str>,
    ) -> TestUser {
        self.user_add(farm, email, role, PASSWORD, flocks).await;
        TestUser {
            farm: farm.to_owned(),
            email: email.to_owned(),
            password: PASSWORD.to_owned(),
        }
    }

    async fn user_add(
        &self,
        farm: &str,
        email: &str,
        role: &str,
        password: &str,
        flocks: Option<&str>,
    ) {
        let mut args = vec![
            "admin",
            "user",
            "add",
            "--farm",
            farm,
            "--email",
            email,
            "--role",
            role,
            "--password-stdin",
        ];
        if let Some(flocks) = flocks {
            args.extend(["--flocks", flocks]);
        }
        let (code, _, err) = self.cli_with_stdin(&args, Some(password)).await;
        assert_eq!(code, 0, "user add failed: {err}");
    }

    /// A fresh farm "Hillside Farm" with one member of `role`
    /// (`<role>@hillside.example`, [`PASSWORD`]).
    pub async fn farm_with_member(&self, role: &str) -> TestUser {
        let farm = self.add_farm("Hillside Farm").await;
        self.add_member(&farm, &format!("{role}@hillside.example"), role, None)
            .await
    }

    /// A farm named `name` with owner@ and worker@ (email domain from the
    /// slug).
    pub async fn farm(&self, name: &str) -> Farm {
        let slug = self.add_farm(name).await;
        let owner = self
            .add_member(&slug, &format!("owner@{slug}.example"), "owner", None)
            .await;
        let worker = self
            .add_member(&slug, &format!("worker@{slug}.example"), "worker", None)
            .await;
        Farm {
            slug,
            owner,
            worker,
        }
    }

    /// Adds flock `name` (ISA Brown, 1000 birds) to `house` of `farm`.
    pub async fn add_flock(&self, farm: &str, house: &str, name: &str) {
        let args = flock_add(farm, house, name, "2025-01-06", "1000");
        self.admin(&args[1..]).await;
    }

    /// House "North" on `farm` with a flock of each name in it.
    pub async fn add_flocks(&self, farm: &Farm, names: &[&str]) {
        self.admin(&["house", "add", "--farm", &farm.slug, "--name", "North"])
            .await;
        for name in names {
            self.add_flock(&farm.slug, "North", name).await;
        }
    }

    /// A farm with houses "North" and "South": flocks "Hens A" (North),
    /// "Hens B" (South), and "Layers" in both houses; and a member of
    /// `role`.
    pub async fn farm_with_flocks(&self, role: &str) -> TestUser {
        let user = self.farm_with_member(role).await;
        for house in ["North", "South"] {
            self.admin(&["house", "add", "--farm", &user.farm, "--name", house])
                .await;
            self.add_flock(&user.farm, house, "Layers").await;
        }
        self.add_flock(&user.farm, "North", "Hens A").await;
        self.add_flock(&user.farm, "South", "Hens B").await;
        user
    }

    /// `coop keys rotate`, asserting success; the new key's id.
    pub async fn rotate_keys(&self) -> String {
        let (code, out, err) = self.cli(&["keys", "rotate"]).await;
        assert_eq!(code, 0, "{err}");
        out.trim().to_owned()
    }

    /// The grant id of the only active grant of `email`.
    pub async fn grant_of(&self, email: &str) -> String {
        let (code, out, err) = self.cli(&["admin", "apps", "list", "--user", email]).await;
        assert_eq!(code, 0, "{err}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 1, "{out}");
        lines[0].split('\t').next().unwrap().to_owned()
    }

    /// The one value `sql` selects from the app's database.
    pub async fn db_scalar<T>(&self, sql: &str) -> T
    where
        T: for<'r> sqlx::Decode<'r, sqlx::Sqlite>
            + sqlx::Type<sqlx::Sqlite>
            + for<'r> sqlx::Decode<'r, sqlx::Postgres>
            + sqlx::Type<sqlx::Postgres>
            + Send
            + Unpin,
    {
        with_pool!(self, |pool| sqlx::query_scalar(sql)
            .fetch_one(&pool)
            .await
            .unwrap())
    }

    /// The rows `sql` selects from the app's database, as tuples.
    pub async fn db_rows<T>(&self, sql: &str) -> Vec<T>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow>
            + for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>
            + Send
            + Unpin,
    {
        with_pool!(self, |pool| sqlx::query_as(sql)
            .fetch_all(&pool)
            .await
            .unwrap())
    }

    /// Runs a query returning one integer against the app's database
    /// (for assertions about what a refused request left behind).
    pub async fn db_count(&self, sql: &str) -> i64 {
        self.db_scalar(sql).await
    }

    /// Asserts that `sql`, a `select count(*)`, counts `expected` rows (the
    /// failure names the query).
    pub async fn assert_count(&self, sql: &str, expected: i64) {
        assert_eq!(self.db_count(sql).await, expected, "{sql}");
    }

    /// How many OAuth clients are stored (registered, pre-registered or
    /// remembered from a metadata document).
    pub async fn client_count(&self) -> i64 {
        self.db_count("select count(*) from oauth_clients").await
    }

    /// The one text value `sql` selects.
    pub async fn db_text(&self, sql: &str) -> String {
        self.db_scalar(sql).await
    }

    /// Runs a statement against the app's database (to break or mend it).
    pub async fn db_execute(&self, sql: &str) {
        with_pool!(self, |pool| {
            sqlx::query(sql).execute(&pool).await.unwrap();
        })
    }

    /// How many audit entries of `kind` exist.
    pub async fn audit_count(&self, kind: &str) -> i64 {
        self.db_count(&format!(
            "select count(*) from audit_log where kind = '{kind}'"
        ))
        .await
    }

    /// Coop's active signing key, read out of the database as a thief
    /// would: (kid, PKCS#8 DER).
    pub async fn stolen_signing_key(&self) -> (String, Vec<u8>) {
        let kid = self
            .db_scalar("select kid from signing_keys where active")
            .await;
        let key = self
            .db_scalar("select private_pkcs8 from signing_keys where active")
            .await;
        (kid, key)
    }
}

/// `coop admin flock add` of an ISA Brown flock `name` in `house` of
/// `farm`, placed on `placed` with `head_count` birds (as given: a test may
/// give bad values).
pub fn flock_add<'a>(
    farm: &'a str,
    house: &'a str,
    name: &'a str,
    placed: &'a str,
    head_count: &'a str,
) -> Vec<&'a str> {
    vec![
        "admin",
        "flock",
        "add",
        "--farm",
        farm,
        "--house",
        house,
        "--name",
        name,
        "--breed",
        "ISA Brown",
        "--placed",
        placed,
        "--head-count",
        head_count,
    ]
}

/// Runs the `coop` binary with `args` against `database_url`, feeding
/// `stdin` when given; returns (exit code, stdout, stderr).
pub async fn run_cli(
    database_url: &str,
    args: &[&str],
    stdin: Option<&str>,
) -> (i32, String, String) {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_coop"));
    command
        .args(args)
        .env("COOP_DATABASE_URL", database_url)
        .env_remove("RUST_LOG")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(input.as_bytes()).await.unwrap();
        drop(pipe);
    }
    let output = child.wait_with_output().await.unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
