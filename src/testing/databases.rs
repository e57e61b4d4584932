//! A fresh database per test on either engine, for the unit tests and the
//! integration suite alike: a temporary SQLite file always, and a
//! PostgreSQL database of its own when the server is reachable (required
//! when `COOP_TEST_REQUIRE_POSTGRES=1`, as CI sets it), dropped with the
//! test. `on_both_engines!` turns one `async fn(Engine)` into a test per
//! engine.
// Shared with the integration suite, which uses what the unit tests do not.
#![allow(dead_code)]

use super::DatabaseUrl;

/// Expands each named `async fn(Engine)` into a module with a `sqlite` and
/// a `postgres` test (test names `name::sqlite`, `name::postgres`).
#[macro_export]
macro_rules! on_both_engines {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$name($crate::testing::databases::Engine::Sqlite).await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if $crate::testing::databases::postgres_available().await {
                        super::$name($crate::testing::databases::Engine::Postgres).await
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

/// The server tests make their databases on (`COOP_TEST_POSTGRES_URL`).
pub fn pg_admin_url() -> String {
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
