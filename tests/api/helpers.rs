//! The test harness: spawn Coop, make fixtures, drive pages.
// Not every helper is used by every test module at every stage.
#![allow(dead_code)]

use std::process::Stdio;
use std::sync::OnceLock;

use coop::clock::Clock;
use coop::config::{Config, DatabaseUrl};
use coop::startup::Application;
use reqwest::redirect::Policy;
use tokio::io::AsyncWriteExt;
use tokio::sync::oneshot;

/// Expands one async test body into a SQLite test and a PostgreSQL test.
/// The body is an `async fn(Engine)`.
#[macro_export]
macro_rules! on_both_engines {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$name($crate::helpers::Engine::Sqlite).await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if $crate::helpers::postgres_available().await {
                        super::$name($crate::helpers::Engine::Postgres).await
                    }
                }
            }
        )+
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

pub const PG_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

fn pg_admin_url() -> String {
    std::env::var("COOP_TEST_POSTGRES_URL").unwrap_or_else(|_| PG_ADMIN_URL.to_owned())
}

/// Whether PostgreSQL tests run. When CI requires PostgreSQL and it is not
/// there, the test fails instead of being skipped.
pub async fn postgres_available() -> bool {
    static AVAILABLE: tokio::sync::OnceCell<bool> = tokio::sync::OnceCell::const_new();
    let available = *AVAILABLE
        .get_or_init(|| async {
            use sqlx::Connection;
            sqlx::PgConnection::connect(&pg_admin_url()).await.is_ok()
        })
        .await;
    if !available && std::env::var("COOP_TEST_REQUIRE_POSTGRES").is_ok_and(|v| v == "1") {
        panic!("PostgreSQL is required (COOP_TEST_REQUIRE_POSTGRES=1) but not reachable");
    }
    if !available {
        eprintln!("skipping: PostgreSQL not reachable at {}", pg_admin_url());
    }
    available
}

/// A fresh database for one test, dropped afterwards.
pub struct TestDatabase {
    pub url: DatabaseUrl,
    pg_name: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

impl TestDatabase {
    pub async fn create(engine: Engine) -> Self {
        match engine {
            Engine::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("coop.db");
                Self {
                    url: DatabaseUrl::Sqlite(format!("sqlite://{}", path.display())),
                    pg_name: None,
                    _dir: Some(dir),
                }
            }
            Engine::Postgres => {
                use sqlx::Connection;
                let name = format!("coop_test_{}", uuid::Uuid::new_v4().simple());
                let mut conn = sqlx::PgConnection::connect(&pg_admin_url()).await.unwrap();
                sqlx::query(&format!(r#"create database "{name}""#))
                    .execute(&mut conn)
                    .await
                    .unwrap();
                let base = pg_admin_url();
                let root = base.rsplit_once('/').map(|(r, _)| r).unwrap_or(&base);
                Self {
                    url: DatabaseUrl::Postgres(format!("{root}/{name}")),
                    pg_name: Some(name),
                    _dir: None,
                }
            }
        }
    }

    /// A SQLite database at `path`, in a directory the caller keeps (a
    /// test that mounts a small file system there, say).
    pub fn sqlite_file(path: &std::path::Path) -> Self {
        Self {
            url: DatabaseUrl::Sqlite(format!("sqlite://{}", path.display())),
            pg_name: None,
            _dir: None,
        }
    }

    pub fn url_string(&self) -> String {
        match &self.url {
            DatabaseUrl::Sqlite(u) | DatabaseUrl::Postgres(u) => u.clone(),
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let Some(name) = self.pg_name.take() else {
            return;
        };
        // Drop cannot await; a short-lived thread with its own runtime can.
        let handle = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                use sqlx::Connection;
                if let Ok(mut conn) = sqlx::PgConnection::connect(&pg_admin_url()).await {
                    let _ =
                        sqlx::query(&format!(r#"drop database if exists "{name}" with (force)"#))
                            .execute(&mut conn)
                            .await;
                }
            });
        });
        let _ = handle.join();
    }
}

/// A running Coop and a browser-like HTTP client (cookies on, redirects off).
pub struct TestApp {
    pub address: String,
    pub issuer: String,
    pub clock: Clock,
    pub client: reqwest::Client,
    pub db: std::sync::Arc<TestDatabase>,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub fn init_logs() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        if std::env::var("TEST_LOG").is_ok() {
            coop::telemetry::init();
        }
    });
}

pub fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(Policy::none())
        .cookie_store(true)
        .build()
        .unwrap()
}

impl TestApp {
    pub async fn spawn(engine: Engine) -> Self {
        Self::spawn_with(engine, |_| {}).await
    }

    /// Spawns with a configuration adjusted by `tweak`.
    pub async fn spawn_with(engine: Engine, tweak: impl FnOnce(&mut Config)) -> Self {
        let db = std::sync::Arc::new(TestDatabase::create(engine).await);
        Self::spawn_on(db, tweak).await
    }

    /// Spawns another server on an existing database (a second replica).
    pub async fn spawn_on(
        db: std::sync::Arc<TestDatabase>,
        tweak: impl FnOnce(&mut Config),
    ) -> Self {
        init_logs();
        let mut config = Config::with_defaults(db.url.clone());
        config.bind = "127.0.0.1:0".parse().unwrap();
        config.password_hash_concurrency = 2;
        tweak(&mut config);
        let clock = Clock::adjustable();
        let app = Application::build(config, clock.clone()).await.unwrap();
        let address = format!("http://{}", app.address());
        let issuer = app.issuer().to_string();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(app.run_until(async move {
            let _ = stopped.await;
        }));
        Self {
            address,
            issuer,
            clock,
            client: browser(),
            db,
            stop: Some(stop),
        }
    }

    /// The helpers' view of a server running elsewhere (a `coop serve`
    /// child process) at `issuer` on `db`; its clock is the real one.
    pub fn attach(issuer: &str, db: std::sync::Arc<TestDatabase>) -> Self {
        Self {
            address: issuer.to_owned(),
            issuer: issuer.to_owned(),
            clock: Clock::adjustable(),
            client: browser(),
            db,
            stop: None,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.unwrap()
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

    /// Creates a farm and returns its slug.
    pub async fn add_farm(&self, name: &str) -> String {
        let (code, out, err) = self.cli(&["admin", "farm", "add", "--name", name]).await;
        assert_eq!(code, 0, "farm add failed: {err}");
        out.trim().to_owned()
    }

    /// Creates a member with a known password.
    pub async fn add_user(&self, farm: &str, email: &str, role: &str, password: &str) {
        let (code, _, err) = self
            .cli_with_stdin(
                &[
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
                ],
                Some(password),
            )
            .await;
        assert_eq!(code, 0, "user add failed: {err}");
    }

    /// A fresh farm with one member of `role`; returns (slug, email, password).
    pub async fn farm_with_member(&self, role: &str) -> TestUser {
        let farm = self.add_farm("Hillside Farm").await;
        let email = format!("{role}@hillside.example");
        let password = "correct horse battery staple".to_owned();
        self.add_user(&farm, &email, role, &password).await;
        TestUser {
            farm,
            email,
            password,
        }
    }

    /// GETs `/login` and returns its CSRF token (and sets the session cookie).
    pub async fn login_csrf(&self) -> String {
        let page = self.get("/login").await.text().await.unwrap();
        form_value(&page, "csrf").expect("login page has a csrf field")
    }

    /// Signs in with this app's client; returns the response to the POST.
    pub async fn sign_in(&self, email: &str, password: &str) -> reqwest::Response {
        let csrf = self.login_csrf().await;
        self.client
            .post(self.url("/login"))
            .form(&[
                ("csrf", csrf.as_str()),
                ("email", email),
                ("password", password),
                ("return_to", "/"),
            ])
            .send()
            .await
            .unwrap()
    }
}

#[derive(Clone, Debug)]
pub struct TestUser {
    pub farm: String,
    pub email: String,
    pub password: String,
}

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

/// The `value` of the first `<input name="NAME">` in an HTML page.
pub fn form_value(html: &str, name: &str) -> Option<String> {
    let document = scraper::Html::parse_document(html);
    let selector = scraper::Selector::parse(&format!(r#"input[name="{name}"]"#)).ok()?;
    document
        .select(&selector)
        .next()
        .and_then(|el| el.value().attr("value"))
        .map(str::to_owned)
}

pub fn location(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}
