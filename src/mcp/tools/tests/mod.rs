//! Unit tests of the tools against real databases: a temporary SQLite file
//! always, and a fresh PostgreSQL database when one is reachable (required
//! when `COOP_TEST_REQUIRE_POSTGRES=1`). Fixtures go through the operator's
//! admin functions and the storage functions, as the server's would.

mod bounded_reads;
mod flocks;
mod lists;
mod next_door;
mod record;
mod reports;
mod schemas;

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

use super::{ToolError, ToolReply, call};
use crate::admin::{self, FlockInput};
use crate::domain::{ClientId, Email, FarmId, FlockId, GrantId, Role, Scope, ScopeSet, UserId};
use crate::mcp::{CallContext, Caller, FlockScope};
pub(crate) use crate::on_both_engines;
use crate::storage::Store;
use crate::storage::flocks as flock_store;
use crate::storage::users::{self, NewMember};
use crate::testing::TestStore;
pub use crate::testing::databases::Engine;
use next_door::NextDoor;

/// The instant every test runs at unless it moves on.
pub const NOW: OffsetDateTime = datetime!(2026-03-10 12:00 UTC);

/// A farm made through the admin functions.
pub struct TestFarm {
    pub id: FarmId,
    pub slug: String,
}

pub async fn farm(store: &Store, name: &str) -> TestFarm {
    let slug = admin::add_farm(store, name, None, NOW).await.unwrap();
    let id = admin::farm(store, &slug).await.unwrap().farm_id();
    TestFarm {
        id,
        slug: slug.to_string(),
    }
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
/// "Bravo" (North) and "Charlie" (South), and an owner; and in the same
/// database a farm [`NextDoor`] whose records look like Hillside's.
pub struct World {
    pub db: TestStore,
    pub farm: TestFarm,
    pub alpha: FlockId,
    pub bravo: FlockId,
    pub charlie: FlockId,
    pub owner: CallContext,
    pub next_door: NextDoor,
}

impl World {
    pub async fn new(engine: Engine) -> Self {
        let db = TestStore::new(engine).await;
        let store = &db.store;
        let farm = farm(store, "Hillside").await;
        house(store, &farm, "North").await;
        house(store, &farm, "South").await;
        let alpha = flock(store, &farm, "North", "Alpha", "2025-09-01", 1000).await;
        let bravo = flock(store, &farm, "North", "Bravo", "2025-10-01", 500).await;
        let charlie = flock(store, &farm, "South", "Charlie", "2026-01-05", 800).await;
        let owner_id = member(store, &farm, "owner@hillside.example", Role::Owner, None).await;
        let owner = context(&farm, owner_id, Role::Owner, None);
        let next_door = NextDoor::new(store).await;
        Self {
            next_door,
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

    /// Calls a tool as the farm's owner; it must succeed ([`ok`]).
    pub async fn ok(&self, tool: &str, arguments: Value) -> Value {
        ok(self.store(), &self.owner, tool, arguments).await
    }

    /// Calls a tool as the farm's owner; it must be refused ([`refused`]).
    pub async fn refused(&self, tool: &str, arguments: Value) -> String {
        refused(self.store(), &self.owner, tool, arguments).await
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
    let db = store.read().await.unwrap();
    call(store, db, ctx, tool, arguments, now).await
}

/// Runs `change` in a transaction of its own and commits it.
pub async fn in_tx<T>(
    store: &Store,
    change: impl AsyncFnOnce(&mut crate::storage::Tx) -> Result<T, crate::storage::StoreError>,
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

/// The owner's page after `page` of `tool` called with `arguments`: the
/// same arguments with `page`'s `next_cursor`.
pub async fn next_page(w: &World, tool: &str, mut arguments: Value, page: &Value) -> Value {
    arguments["cursor"] = page["next_cursor"].clone();
    w.ok(tool, arguments).await
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

/// The arguments of `record_daily_entry` for `eggs` collected from `flock`
/// on `date`, and nothing else.
fn entry(flock: &str, date: &str, eggs: i64) -> Value {
    json!({ "flock": flock, "date": date, "eggs_collected": eggs })
}

/// Records an entry through the tool as `ctx`, at NOW.
pub async fn record(store: &Store, ctx: &CallContext, flock: &str, date: &str, eggs: i64) -> Value {
    let arguments = entry(flock, date, eggs);
    ok(store, ctx, "record_daily_entry", arguments).await
}

/// The refusal of recording that entry as `ctx`, at NOW.
pub async fn record_refused(
    store: &Store,
    ctx: &CallContext,
    flock: &str,
    date: &str,
    eggs: i64,
) -> String {
    let arguments = entry(flock, date, eggs);
    refused(store, ctx, "record_daily_entry", arguments).await
}
