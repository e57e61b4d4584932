//! Users, their membership of a farm, and the credential epoch.

use time::OffsetDateTime;
use uuid::Uuid;

use super::{Store, StoreError, StoreResult, unix};
use crate::domain::{Email, FarmId, FlockId, Role, UserId};
use crate::on_pool;

/// A user with their farm and role: what sign-in and every page need.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Account {
    pub id: Uuid,
    pub email: String,
    pub password_hash: String,
    pub credential_epoch: i64,
    pub disabled: bool,
    pub must_change_password: bool,
    pub farm_id: Uuid,
    pub farm_slug: String,
    pub farm_name: String,
    pub farm_suspended: bool,
    pub role: String,
    pub flock_restricted: bool,
}

impl Account {
    pub fn user_id(&self) -> UserId {
        UserId(self.id)
    }

    pub fn farm(&self) -> FarmId {
        FarmId(self.farm_id)
    }

    /// The stored role; the check constraint makes an unknown one impossible,
    /// and a value that somehow is unknown grants the least.
    pub fn role(&self) -> Role {
        Role::parse(&self.role).unwrap_or(Role::Viewer)
    }
}

const ACCOUNT_SELECT: &str =
    "select u.id, u.email, u.password_hash, u.credential_epoch, u.disabled,
        u.must_change_password, m.farm_id, f.slug as farm_slug, f.name as farm_name,
        f.suspended as farm_suspended, m.role, m.flock_restricted
    from users u
    join memberships m on m.user_id = u.id
    join farms f on f.id = m.farm_id";

pub async fn find_by_email(store: &Store, email: &Email) -> StoreResult<Option<Account>> {
    let sql = format!("{ACCOUNT_SELECT} where u.email = $1");
    let row = on_pool!(store, |pool| {
        sqlx::query_as::<_, Account>(&sql)
            .bind(email.as_str())
            .fetch_optional(pool)
            .await?
    });
    Ok(row)
}

pub async fn find(store: &Store, user: UserId) -> StoreResult<Option<Account>> {
    let sql = format!("{ACCOUNT_SELECT} where u.id = $1");
    let row = on_pool!(store, |pool| {
        sqlx::query_as::<_, Account>(&sql)
            .bind(user.0)
            .fetch_optional(pool)
            .await?
    });
    Ok(row)
}

/// A new member of a farm. `flocks`: `None` sees the whole farm; `Some` is
/// restricted to exactly those flocks (only workers may be restricted).
pub struct NewMember<'a> {
    pub farm: FarmId,
    pub email: &'a Email,
    pub password_hash: &'a str,
    pub role: Role,
    pub flocks: Option<&'a [FlockId]>,
    pub must_change_password: bool,
}

/// Creates the user and membership in one transaction, so a refused insert
/// (a duplicate email) leaves nothing behind.
pub async fn create_member(
    store: &Store,
    member: &NewMember<'_>,
    now: OffsetDateTime,
) -> StoreResult<UserId> {
    let id = UserId::new();
    on_pool!(store, |pool| {
        let mut tx = pool.begin().await?;
        sqlx::query(
            "insert into users (id, email, password_hash, must_change_password, created_at, updated_at)
             values ($1, $2, $3, $4, $5, $5)",
        )
        .bind(id.0)
        .bind(member.email.as_str())
        .bind(member.password_hash)
        .bind(member.must_change_password)
        .bind(unix(now))
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "insert into memberships (user_id, farm_id, role, flock_restricted, created_at)
             values ($1, $2, $3, $4, $5)",
        )
        .bind(id.0)
        .bind(member.farm.0)
        .bind(member.role.as_str())
        .bind(member.flocks.is_some())
        .bind(unix(now))
        .execute(&mut *tx)
        .await?;
        for flock in member.flocks.unwrap_or_default() {
            sqlx::query("insert into membership_flocks (user_id, flock_id) values ($1, $2)")
                .bind(id.0)
                .bind(flock.0)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
    });
    Ok(id)
}

/// Applies one change to the user with this email and returns the user id;
/// `NotFound` when there is no such user.
async fn update_by_email(
    store: &Store,
    email: &Email,
    set: &str,
    now: OffsetDateTime,
) -> StoreResult<UserId> {
    let sql = format!("update users set {set}, updated_at = $2 where email = $1 returning id");
    let id: Option<Uuid> = on_pool!(store, |pool| {
        sqlx::query_scalar(&sql)
            .bind(email.as_str())
            .bind(unix(now))
            .fetch_optional(pool)
            .await?
    });
    id.map(UserId).ok_or(StoreError::NotFound)
}

pub async fn set_disabled(
    store: &Store,
    email: &Email,
    disabled: bool,
    now: OffsetDateTime,
) -> StoreResult<UserId> {
    let set = if disabled {
        "disabled = true"
    } else {
        "disabled = false"
    };
    update_by_email(store, email, set, now).await
}

/// Moves the credential epoch: every session and token of the user dies.
pub async fn move_epoch(store: &Store, email: &Email, now: OffsetDateTime) -> StoreResult<UserId> {
    update_by_email(store, email, "credential_epoch = credential_epoch + 1", now).await
}

pub async fn require_password_change(
    store: &Store,
    email: &Email,
    now: OffsetDateTime,
) -> StoreResult<UserId> {
    update_by_email(store, email, "must_change_password = true", now).await
}

/// Stores a new password hash, clears the must-change flag and moves the
/// epoch in one statement; returns the new epoch. Only succeeds if the epoch
/// is still `expected_epoch`, so a change racing a sign-out-everywhere
/// cannot resurrect the session that asked for it.
pub async fn change_password(
    store: &Store,
    user: UserId,
    expected_epoch: i64,
    new_hash: &str,
    now: OffsetDateTime,
) -> StoreResult<i64> {
    let epoch: Option<i64> = on_pool!(store, |pool| {
        sqlx::query_scalar(
            "update users set password_hash = $1, must_change_password = false,
                 credential_epoch = credential_epoch + 1, updated_at = $2
             where id = $3 and credential_epoch = $4
             returning credential_epoch",
        )
        .bind(new_hash)
        .bind(unix(now))
        .bind(user.0)
        .bind(expected_epoch)
        .fetch_optional(pool)
        .await?
    });
    epoch.ok_or(StoreError::NotFound)
}
