//! The `jti`s of client assertions (`private_key_jwt`) already accepted,
//! each kept until its assertion expires, so that no assertion is accepted
//! twice by any replica. The primary key (client, `jti` hash) is the check:
//! a second insert of a live row changes nothing, and that is the replay.
//! Housekeeping deletes expired rows.

use time::OffsetDateTime;

use super::{Sql, StoreError, Tx};

/// Records `jti_hash` for `client_id` until `until`. `true` when it was not
/// recorded (or only by an expired row, which it replaces); `false` when a
/// live row holds it: a replay.
pub async fn record_jti(
    tx: &mut Tx,
    client_id: &str,
    jti_hash: &str,
    until: OffsetDateTime,
    now: OffsetDateTime,
) -> Result<bool, StoreError> {
    let changed = Sql::new(
        "insert into client_assertion_jtis (client_id, jti_hash, expires_at) values ($1, $2, $3)
         on conflict (client_id, jti_hash) do update set expires_at = excluded.expires_at
         where client_assertion_jtis.expires_at < $4",
    )
    .bind(client_id)
    .bind(jti_hash)
    .bind(until)
    .bind(now)
    .execute(tx)
    .await?;
    Ok(changed == 1)
}

/// Deletes the rows whose assertion has expired; returns how many.
pub async fn delete_expired(tx: &mut Tx, now: OffsetDateTime) -> Result<u64, StoreError> {
    Sql::new("delete from client_assertion_jtis where expires_at < $1")
        .bind(now)
        .execute(tx)
        .await
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::str::FromStr;

    use sqlx::Connection;

    use crate::config::DatabaseUrl;
    use crate::storage::{Sql, Store};
    use crate::testing::databases::{Engine, TestDatabase};

    /// SQLite's 0007 rebuilds `oauth_clients`: a database with grants made
    /// before it keeps them, and the grants still reference the (new) table.
    #[tokio::test]
    async fn the_rebuilt_clients_table_keeps_its_rows_and_references() {
        let db = TestDatabase::create(Engine::Sqlite).await;
        let raw = db.url_string();
        let all = sqlx::migrate!("./migrations/sqlite");
        let before = sqlx::migrate::Migrator {
            migrations: Cow::Owned(
                all.migrations
                    .iter()
                    .filter(|m| m.version < 7)
                    .cloned()
                    .collect(),
            ),
            ..sqlx::migrate::Migrator::DEFAULT
        };
        let options = sqlx::sqlite::SqliteConnectOptions::from_str(&raw)
            .unwrap()
            .create_if_missing(true)
            .foreign_keys(true);
        let mut conn = sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap();
        before.run(&mut conn).await.unwrap();
        for statement in [
            "insert into farms (id, slug, name, created_at) values (x'01', 'f', 'F', 0)",
            "insert into users (id, email, password_hash, created_at, updated_at)
             values (x'02', 'a@example.com', 'h', 0, 0)",
            "insert into oauth_clients (client_id, kind, client_name, redirect_uris,
                 token_endpoint_auth_method, created_at)
             values ('c', 'dynamic', 'C', '[]', 'none', 0)",
            "insert into grants (id, farm_id, user_id, client_id, scope, resource,
                 credential_epoch, created_at)
             values (x'03', x'01', x'02', 'c', 'farm:read', 'r', 0, 0)",
        ] {
            sqlx::query(statement).execute(&mut conn).await.unwrap();
        }
        conn.close().await.unwrap();

        let store = Store::connect(&DatabaseUrl::Sqlite(raw)).await.unwrap();
        let mut tx = store.write().await.unwrap();
        let count = |sql: &'static str| Sql::new(sql);
        assert_eq!(
            count("select count(*) from grants")
                .fetch_scalar::<i64>(&mut tx)
                .await
                .unwrap(),
            1
        );
        Sql::new(
            "insert into oauth_clients (client_id, kind, client_name, redirect_uris,
                 token_endpoint_auth_method, created_at)
             values ('k', 'registered', 'K', '[]', 'private_key_jwt', 0)",
        )
        .execute(&mut tx)
        .await
        .unwrap();
        // The reference holds: deleting the client still takes its grant.
        Sql::new("delete from oauth_clients where client_id = 'c'")
            .execute(&mut tx)
            .await
            .unwrap();
        assert_eq!(
            count("select count(*) from grants")
                .fetch_scalar::<i64>(&mut tx)
                .await
                .unwrap(),
            0
        );
        assert_eq!(
            count("select count(*) from pragma_foreign_key_list('grants') where \"table\" = 'oauth_clients'")
                .fetch_scalar::<i64>(&mut tx)
                .await
                .unwrap(),
            1
        );
        tx.commit().await.unwrap();
    }
}
