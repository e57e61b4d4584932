//! The seam on a real SQLite file: binding by name, typed round trips,
//! transactions that commit whole or not at all, and writers that queue
//! instead of failing. (PostgreSQL is exercised by the integration suite,
//! which runs every test on both engines.)

use std::sync::Arc;

use time::macros::date;
use uuid::Uuid;

use super::*;
use crate::testing::TestStore;

async fn store() -> (Store, TestStore) {
    let db = TestStore::sqlite().await;
    let store = db.store.clone();
    let mut tx = store.write().await.unwrap();
    Sql::new(
        "create table t (id blob primary key, n integer not null, s text, d text, b boolean not null)",
    )
    .execute(&mut tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    (store, db)
}

/// Inserts the row `id` of `t` with its counter at `n`.
async fn insert(db: &mut impl Exec, id: Uuid, n: i64) -> Result<u64, StoreError> {
    Sql::new("insert into t (id, n, b) values ($1, $2, false)")
        .bind(id)
        .bind(n)
        .execute(db)
        .await
}

/// The counter of the row `id` of `t`.
async fn counter(db: &mut impl Exec, id: Uuid) -> Result<i64, StoreError> {
    Sql::new("select n from t where id = $1")
        .bind(id)
        .fetch_scalar(db)
        .await
}

crate::record! {
    #[derive(Debug, PartialEq)]
    struct Row {
        id: Uuid,
        n: i64,
        s: Option<String>,
        d: Option<time::Date>,
        b: bool,
    }
}

#[tokio::test]
async fn values_round_trip_and_placeholders_bind_by_name() {
    let (store, _db) = store().await;
    let id = Uuid::new_v4();
    let mut tx = store.write().await.unwrap();
    // `$2` appears before `$1`: SQLite numbers parameters by appearance,
    // the seam binds them by name.
    Sql::new("insert into t (n, id, s, d, b) values ($2, $1, $3, $4, $5)")
        .bind(id)
        .bind(7i64)
        .bind(None::<&str>)
        .bind(date!(2026 - 03 - 01))
        .bind(true)
        .execute(&mut tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let mut db = store.read().await.unwrap();
    let row: Row = Sql::new("select * from t where id = $1")
        .bind(id)
        .fetch_one(&mut db)
        .await
        .unwrap();
    assert_eq!(
        row,
        Row {
            id,
            n: 7,
            s: None,
            d: Some(date!(2026 - 03 - 01)),
            b: true
        }
    );
    let (n, b): (i64, bool) = Sql::new("select n, b from t where id = $1")
        .bind(id)
        .fetch_one(&mut db)
        .await
        .unwrap();
    assert_eq!((n, b), (7, true));
    let missing = counter(&mut db, Uuid::new_v4()).await;
    assert!(matches!(missing, Err(StoreError::NotFound)));
}

#[tokio::test]
async fn a_dropped_transaction_leaves_nothing_and_a_conflict_is_named() {
    let (store, _db) = store().await;
    let id = Uuid::new_v4();
    {
        let mut tx = store.write().await.unwrap();
        insert(&mut tx, id, 1).await.unwrap();
        // dropped without commit
    }
    let mut db = store.read().await.unwrap();
    let count = Sql::new("select count(*) from t")
        .fetch_scalar::<i64>(&mut db)
        .await
        .unwrap();
    assert_eq!(count, 0);

    let mut tx = store.write().await.unwrap();
    insert(&mut tx, id, 1).await.unwrap();
    assert!(insert(&mut tx, id, 1).await.unwrap_err().is_conflict());
}

#[tokio::test]
async fn readers_cannot_write() {
    let (store, _db) = store().await;
    let mut db = store.read().await.unwrap();
    let refused = insert(&mut db, Uuid::new_v4(), 1).await;
    assert!(refused.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_read_then_write_transactions_queue_instead_of_failing() {
    let (store, _db) = store().await;
    let id = Uuid::new_v4();
    let mut tx = store.write().await.unwrap();
    insert(&mut tx, id, 0).await.unwrap();
    tx.commit().await.unwrap();

    // 64 tasks each read the counter and write it back plus one: with
    // deferred transactions on several connections this loses updates or
    // fails with "database is locked"; with one writer it cannot.
    let store = Arc::new(store);
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut tx = store.write().await.unwrap();
            let n = counter(&mut tx, id).await.unwrap();
            tokio::task::yield_now().await;
            Sql::new("update t set n = $2 where id = $1")
                .bind(id)
                .bind(n + 1)
                .execute(&mut tx)
                .await
                .unwrap();
            tx.commit().await.unwrap();
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let mut db = store.read().await.unwrap();
    let n = counter(&mut db, id).await.unwrap();
    assert_eq!(n, 64);
}
