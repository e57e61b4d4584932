//! Password reset links, stored only as the hash of their token.
//!
//! Making a link marks the person's older unused links replaced and inserts
//! the new one, in the caller's transaction, so at most one link of a
//! person works at any time. Using one is one conditional update ("mark
//! used where not used, not replaced, not expired"): of two requests racing
//! with the same link exactly one wins (PostgreSQL makes the second wait
//! for the first's row lock and then see it used; SQLite's writers take
//! turns). Ended rows are kept until housekeeping deletes them, so a used,
//! expired or replaced link can be told apart from one never made.

use time::OffsetDateTime;
use uuid::Uuid;

use super::{Exec, Sql, StoreError, Tx};
use crate::domain::{FarmId, UserId};

/// A link to store: its token's hash, whose it is, and until when it works.
pub struct NewReset<'a> {
    pub token_hash: &'a str,
    pub user: UserId,
    pub farm: FarmId,
    pub expires_at: OffsetDateTime,
}

/// Marks every unused link of the person replaced and stores `reset`
/// under the person's credential epoch as it is in this transaction (the
/// link works only while it holds). `NotFound` when there is no such
/// person.
pub async fn replace(
    tx: &mut Tx,
    reset: &NewReset<'_>,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    Sql::new(
        "update password_resets set replaced_at = $2
         where user_id = $1 and used_at is null and replaced_at is null",
    )
    .bind(reset.user.0)
    .bind(now)
    .execute(tx)
    .await?;
    let inserted = Sql::new(
        "insert into password_resets
             (token_hash, user_id, farm_id, credential_epoch, created_at, expires_at)
         select $1, id, $3, credential_epoch, $4, $5 from users where id = $2",
    )
    .bind(reset.token_hash)
    .bind(reset.user.0)
    .bind(reset.farm.0)
    .bind(now)
    .bind(reset.expires_at)
    .execute(tx)
    .await?;
    if inserted != 1 {
        return Err(super::StoreError::NotFound);
    }
    Ok(())
}

crate::record! {
    /// A stored link with what its person is now.
    #[derive(Clone, Debug)]
    pub struct ResetRow {
        pub user_id: Uuid,
        pub farm_id: Uuid,
        pub email: String,
        /// The epoch the link was made under.
        pub credential_epoch: i64,
        /// The person's epoch now.
        pub current_epoch: i64,
        pub disabled: bool,
        pub expires_at: i64,
        pub used_at: Option<i64>,
        pub replaced_at: Option<i64>,
    }
}

impl ResetRow {
    pub fn user(&self) -> UserId {
        UserId(self.user_id)
    }

    pub fn farm(&self) -> FarmId {
        FarmId(self.farm_id)
    }
}

/// The link whose token hashes to `token_hash`, if one was made (and not
/// yet deleted by housekeeping).
pub async fn find(db: &mut impl Exec, token_hash: &str) -> Result<Option<ResetRow>, StoreError> {
    Sql::new(
        "select r.user_id, r.farm_id, u.email, r.credential_epoch,
             u.credential_epoch as current_epoch, u.disabled, r.expires_at, r.used_at,
             r.replaced_at
         from password_resets r join users u on u.id = r.user_id
         where r.token_hash = $1",
    )
    .bind(token_hash)
    .fetch_optional(db)
    .await
}

/// Spends the link if it still works at `now`: not used, not replaced, not
/// expired. `false` (nothing changed) when it does not.
pub async fn spend(tx: &mut Tx, token_hash: &str, now: OffsetDateTime) -> Result<bool, StoreError> {
    let spent = Sql::new(
        "update password_resets set used_at = $2
         where token_hash = $1 and used_at is null and replaced_at is null and expires_at > $2",
    )
    .bind(token_hash)
    .bind(now)
    .execute(tx)
    .await?;
    Ok(spent == 1)
}

/// Deletes links that expired before `before`; returns how many.
pub async fn delete_expired(tx: &mut Tx, before: OffsetDateTime) -> Result<u64, StoreError> {
    Sql::new("delete from password_resets where expires_at < $1")
        .bind(before)
        .execute(tx)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Email, FarmSlug, Name, Role};
    use crate::on_both_engines;
    use crate::storage::farms;
    use crate::storage::users::{self, NewMember};
    use crate::testing::TestStore;
    use crate::testing::databases::Engine;

    async fn a_link_is_spent_once_and_only_while_it_is_the_newest(engine: Engine) {
        let db = TestStore::new(engine).await;
        let store = &db.store;
        let now = OffsetDateTime::now_utc();
        let mut tx = store.write().await.unwrap();
        let slug = FarmSlug::parse("hillside").unwrap();
        let name = Name::parse("Hillside").unwrap();
        let farm = farms::create(&mut tx, &slug, &name, now).await.unwrap();
        let email = Email::parse("ann@hillside.example").unwrap();
        let member = NewMember {
            farm,
            email: &email,
            password_hash: "not-a-hash",
            role: Role::Worker,
            flocks: None,
            must_change_password: false,
        };
        let user = users::create_member(&mut tx, &member, now).await.unwrap();
        let expires_at = now + time::Duration::hours(24);
        for hash in ["older", "newer"] {
            let reset = NewReset {
                token_hash: hash,
                user,
                farm,
                expires_at,
            };
            replace(&mut tx, &reset, now).await.unwrap();
        }
        // No such person: nothing stored.
        let nobody = NewReset {
            token_hash: "nobody's",
            user: UserId::new(),
            farm,
            expires_at,
        };
        let err = replace(&mut tx, &nobody, now).await.unwrap_err();
        assert!(
            matches!(err, crate::storage::StoreError::NotFound),
            "{err:?}"
        );
        tx.commit().await.unwrap();

        let mut tx = store.write().await.unwrap();
        assert!(!spend(&mut tx, "older", now).await.unwrap(), "replaced");
        assert!(
            !spend(&mut tx, "newer", expires_at).await.unwrap(),
            "expired"
        );
        assert!(spend(&mut tx, "newer", now).await.unwrap());
        assert!(!spend(&mut tx, "newer", now).await.unwrap(), "used");
        assert!(!spend(&mut tx, "never made", now).await.unwrap());
        tx.commit().await.unwrap();

        let row = find(&mut store.read().await.unwrap(), "newer")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.user(), user);
        assert_eq!(row.email, "ann@hillside.example");
        assert_eq!(row.used_at, Some(now.unix_timestamp()));
        assert_eq!((row.credential_epoch, row.current_epoch), (0, 0));
        let older = find(&mut store.read().await.unwrap(), "older")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(older.replaced_at, Some(now.unix_timestamp()));

        let mut tx = store.write().await.unwrap();
        assert_eq!(delete_expired(&mut tx, expires_at).await.unwrap(), 0);
        let later = expires_at + time::Duration::seconds(1);
        assert_eq!(delete_expired(&mut tx, later).await.unwrap(), 2);
        tx.commit().await.unwrap();
    }

    on_both_engines!(a_link_is_spent_once_and_only_while_it_is_the_newest);
}
