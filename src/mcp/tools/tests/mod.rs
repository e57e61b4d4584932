//! Unit tests of the tools against real databases: a temporary SQLite file
//! always, and a fresh PostgreSQL database when one is reachable (required
//! when `COOP_TEST_REQUIRE_POSTGRES=1`). Fixtures go through the operator's
//! admin functions and the storage functions, as the server's would.

mod bounded_reads;
mod flocks;
mod lists;
mod record;
mod reports;
mod schemas;

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

use super::{ToolError, ToolReply, call};
use crate::admin::{self, FlockInput};
use crate::config::DatabaseUrl;
use crate::domain::{ClientId, Email, FarmId, FlockId, GrantId, Role, Scope, ScopeSet, UserId};
use crate::mcp::{CallContext, Caller, FlockScope};
use crate::storage::Store;
use crate::storage::flocks as flock_store;
use crate::storage::users::{self, NewMember};

/// The instant every test runs at unless it moves on.
pub const NOW: OffsetDateTime = datetime!(2026-03-10 12:00 UTC);

/// Expands one `async fn(Engine)` into a SQLite test and a PostgreSQL test.
macro_rules! on_both_engines {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$name($crate::mcp::tools::tests::Engine::Sqlite).await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if $crate::mcp::tools::tests::postgres_available().await {
                        super::$name($crate::mcp::tools::tests::Engine::Postgres).await
                    }
                }
            }
        )+
    };
}
pub(crate) use on_both_engines;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

fn pg_admin_url() -> String {
    std::env::var("COOP_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

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
    available
}

/// A migrated store on a database of its own, dropped with it.
pub struct TestDb {
    pub store: Store,
    pg_name: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

impl TestDb {
    pub async fn new(engine: Engine) -> Self {
        match engine {
            Engine::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let url = format!("sqlite://{}", dir.path().join("coop.db").display());
                let store = Store::connect(&DatabaseUrl::Sqlite(url)).await.unwrap();
                Self {
                    store,
                    pg_name: None,
                    _dir: Some(dir),
                }
            }
            Engine::Postgres => {
                use sqlx::Connection;
                let name = format!("coop_unit_{}", uuid::Uuid::new_v4().simple());
                let admin = pg_admin_url();
                let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap();
                sqlx::query(&format!(r#"create database "{name}""#))
                    .execute(&mut conn)
                    .await
                    .unwrap();
                let root = admin.rsplit_once('/').map(|(r, _)| r).unwrap_or(&admin);
                let url = DatabaseUrl::Postgres(format!("{root}/{name}"));
                let store = Store::connect(&url).await.unwrap();
                Self {
                    store,
                    pg_name: Some(name),
                    _dir: None,
                }
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some(name) = self.pg_name.take() else {
            return;
        };
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

/// A farm made through the admin functions.
pub struct TestFarm {
    pub id: FarmId,
    pub slug: String,
}

pub async fn farm(store: &Store, name: &str) -> TestFarm {
    let slug = admin::add_farm(store, name, None, NOW).await.unwrap();
    let id = admin::farm(store, &slug).await.unwrap().farm_id();
    TestFarm { id, slug }
}

pub async fn house(store: &Store, farm: &TestFarm, name: &str) {
    admin::add_house(store, &farm.slug, name, NOW)
        .await
        .unwrap();
}

/// Adds a flock (the house must exist) and returns its id.
pub async fn flock(
    store: &Store,
    farm: &TestFarm,
    house: &str,
    name: &str,
    placed: &str,
    head_count: i64,
) -> FlockId {
    let input = FlockInput {
        farm: &farm.slug,
        house,
        name,
        breed: "Lohmann Brown",
        placed,
        head_count: &head_count.to_string(),
    };
    admin::add_flock(store, &input, NOW).await.unwrap();
    let whole = FlockScope::resolve(false, vec![]);
    let found = flock_store::named(
        &mut store.read().await.unwrap(),
        farm.id,
        &whole,
        name,
        Some(house),
    )
    .await
    .unwrap();
    found[0].flock_id()
}

/// A member with a placeholder password hash (these tests never sign in).
pub async fn member(
    store: &Store,
    farm: &TestFarm,
    email: &str,
    role: Role,
    flocks: Option<&[FlockId]>,
) -> UserId {
    let email = Email::parse(email).unwrap();
    let member = NewMember {
        farm: farm.id,
        email: &email,
        password_hash: "not-a-hash",
        role,
        flocks,
        must_change_password: false,
    };
    in_tx(store, async |tx| {
        users::create_member(tx, &member, NOW).await
    })
    .await
}

/// The call context the bearer check would build for this member.
pub fn context(
    farm: &TestFarm,
    user: UserId,
    role: Role,
    flocks: Option<&[FlockId]>,
) -> CallContext {
    CallContext {
        farm: farm.id,
        caller: Caller::Member {
            user,
            grant: GrantId::new(),
        },
        role,
        flocks: FlockScope::resolve(flocks.is_some(), flocks.unwrap_or_default().to_vec()),
        scopes: ScopeSet::from_scopes([Scope::FarmRead, Scope::DailyEntriesWrite]),
        client_id: ClientId("https://client.example/meta.json".to_owned()),
    }
}

/// A farm "Hillside" with houses "North" and "South", flocks "Alpha" and
/// "Bravo" (North) and "Charlie" (South), and an owner.
pub struct World {
    pub db: TestDb,
    pub farm: TestFarm,
    pub alpha: FlockId,
    pub bravo: FlockId,
    pub charlie: FlockId,
    pub owner: CallContext,
}

impl World {
    pub async fn new(engine: Engine) -> Self {
        let db = TestDb::new(engine).await;
        let store = &db.store;
        let farm = farm(store, "Hillside").await;
        house(store, &farm, "North").await;
        house(store, &farm, "South").await;
        let alpha = flock(store, &farm, "North", "Alpha", "2025-09-01", 1000).await;
        let bravo = flock(store, &farm, "North", "Bravo", "2025-10-01", 500).await;
        let charlie = flock(store, &farm, "South", "Charlie", "2026-01-05", 800).await;
        let owner_id = member(store, &farm, "owner@hillside.example", Role::Owner, None).await;
        let owner = context(&farm, owner_id, Role::Owner, None);
        Self {
            db,
            farm,
            alpha,
            bravo,
            charlie,
            owner,
        }
    }

    pub fn store(&self) -> &Store {
        &self.db.store
    }

    /// A worker restricted to `flocks`, and their context.
    pub async fn worker(&self, email: &str, flocks: &[FlockId]) -> CallContext {
        let id = member(self.store(), &self.farm, email, Role::Worker, Some(flocks)).await;
        context(&self.farm, id, Role::Worker, Some(flocks))
    }
}

/// Calls a tool with JSON arguments at `now`.
pub async fn run(
    store: &Store,
    ctx: &CallContext,
    tool: &str,
    arguments: Value,
    now: OffsetDateTime,
) -> Result<ToolReply, ToolError> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    let mut db = store.read().await.unwrap();
    call(store, &mut db, ctx, tool, arguments, now).await
}

/// Runs `change` in a transaction of its own and commits it.
pub async fn in_tx<T>(
    store: &Store,
    change: impl AsyncFnOnce(&mut crate::storage::Tx) -> crate::storage::StoreResult<T>,
) -> T {
    let mut tx = store.write().await.unwrap();
    let done = change(&mut tx).await.unwrap();
    tx.commit().await.unwrap();
    done
}

/// Calls a tool that must succeed; returns its structured reply.
pub async fn ok(store: &Store, ctx: &CallContext, tool: &str, arguments: Value) -> Value {
    match run(store, ctx, tool, arguments, NOW).await {
        Ok(reply) => {
            assert!(!reply.text.is_empty());
            reply.structured
        }
        Err(err) => panic!("{tool} failed: {err:?}"),
    }
}

/// The refusal message of a call that must be refused (an `isError` result).
pub async fn refused(store: &Store, ctx: &CallContext, tool: &str, arguments: Value) -> String {
    match run(store, ctx, tool, arguments, NOW).await {
        Err(ToolError::Refused(message)) => message,
        other => panic!("{tool} should be refused, got {other:?}"),
    }
}

/// The message of a call whose arguments must be rejected (-32602).
pub async fn invalid(store: &Store, ctx: &CallContext, tool: &str, arguments: Value) -> String {
    match run(store, ctx, tool, arguments, NOW).await {
        Err(ToolError::InvalidArguments(message)) => message,
        other => panic!("{tool} should reject its arguments, got {other:?}"),
    }
}

/// Names of the items under `key` (`name` or `flock` field).
pub fn names(reply: &Value, key: &str, field: &str) -> Vec<String> {
    reply[key]
        .as_array()
        .unwrap_or_else(|| panic!("no list {key} in {reply}"))
        .iter()
        .map(|item| item[field].as_str().unwrap().to_owned())
        .collect()
}

/// Records an entry through the tool as `ctx`, at NOW.
pub async fn record(store: &Store, ctx: &CallContext, flock: &str, date: &str, eggs: i64) -> Value {
    ok(
        store,
        ctx,
        "record_daily_entry",
        json!({ "flock": flock, "date": date, "eggs_collected": eggs }),
    )
    .await
}
