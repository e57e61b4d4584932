//! Users, their membership of a farm, and the credential epoch.

use time::OffsetDateTime;
use uuid::Uuid;

use super::{Exec, Sql, StoreError, Tx};
use crate::domain::{Email, FarmId, FarmSlug, FlockId, Name, Role, UserId};

crate::record! {
    /// A user with their farm and role: what sign-in and every page need.
    #[derive(Clone, Debug)]
    pub struct Account {
        pub id: Uuid,
        pub email: String,
        pub password_hash: String,
        pub credential_epoch: i64,
        pub disabled: bool,
        pub must_change_password: bool,
        pub farm_id: Uuid,
        pub farm_slug: FarmSlug,
        pub farm_name: Name,
        pub farm_suspended: bool,
        /// Why the farm is suspended, when the operator said.
        pub farm_suspended_reason: Option<String>,
        pub role: Role,
        pub flock_restricted: bool,
    }
}

impl Account {
    pub fn user_id(&self) -> UserId {
        UserId(self.id)
    }

    pub fn farm(&self) -> FarmId {
        FarmId(self.farm_id)
    }
}

const ACCOUNT_SELECT: &str =
    "select u.id, u.email, u.password_hash, u.credential_epoch, u.disabled,
        u.must_change_password, m.farm_id, f.slug as farm_slug, f.name as farm_name,
        f.suspended as farm_suspended, f.suspended_reason as farm_suspended_reason,
        m.role, m.flock_restricted
    from users u
    join memberships m on m.user_id = u.id
    join farms f on f.id = m.farm_id";

pub async fn find_by_email(
    db: &mut impl Exec,
    email: &Email,
) -> Result<Option<Account>, StoreError> {
    Sql::new(format!("{ACCOUNT_SELECT} where u.email = $1"))
        .bind(email.as_str())
        .fetch_optional(db)
        .await
}

pub async fn find(db: &mut impl Exec, user: UserId) -> Result<Option<Account>, StoreError> {
    Sql::new(format!("{ACCOUNT_SELECT} where u.id = $1"))
        .bind(user.0)
        .fetch_optional(db)
        .await
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

/// Creates the user and membership; within the caller's transaction, so a
/// refused insert (a duplicate email) leaves nothing behind.
pub async fn create_member(
    tx: &mut Tx,
    member: &NewMember<'_>,
    now: OffsetDateTime,
) -> Result<UserId, StoreError> {
    let id = UserId::new();
    Sql::new(
        "insert into users (id, email, password_hash, must_change_password, created_at, updated_at)
         values ($1, $2, $3, $4, $5, $5)",
    )
    .bind(id.0)
    .bind(member.email.as_str())
    .bind(member.password_hash)
    .bind(member.must_change_password)
    .bind(now)
    .execute(tx)
    .await?;
    Sql::new(
        "insert into memberships (user_id, farm_id, role, flock_restricted, created_at)
         values ($1, $2, $3, $4, $5)",
    )
    .bind(id.0)
    .bind(member.farm.0)
    .bind(member.role)
    .bind(member.flocks.is_some())
    .bind(now)
    .execute(tx)
    .await?;
    for flock in member.flocks.unwrap_or_default() {
        Sql::new("insert into membership_flocks (user_id, flock_id) values ($1, $2)")
            .bind(id.0)
            .bind(flock.0)
            .execute(tx)
            .await?;
    }
    Ok(id)
}

/// Applies one change to the user with this email and returns the user id;
/// `NotFound` when there is no such user.
async fn update_by_email(
    tx: &mut Tx,
    email: &Email,
    set: &str,
    now: OffsetDateTime,
) -> Result<UserId, StoreError> {
    Sql::new(format!(
        "update users set {set}, updated_at = $2 where email = $1 returning id"
    ))
    .bind(email.as_str())
    .bind(now)
    .fetch_scalar::<Uuid>(tx)
    .await
    .map(UserId)
}

pub async fn set_disabled(
    tx: &mut Tx,
    email: &Email,
    disabled: bool,
    now: OffsetDateTime,
) -> Result<UserId, StoreError> {
    let set = if disabled {
        "disabled = true"
    } else {
        "disabled = false"
    };
    update_by_email(tx, email, set, now).await
}

/// Moves the credential epoch: every session and token of the user dies.
pub async fn move_epoch(
    tx: &mut Tx,
    email: &Email,
    now: OffsetDateTime,
) -> Result<UserId, StoreError> {
    update_by_email(tx, email, "credential_epoch = credential_epoch + 1", now).await
}

pub async fn require_password_change(
    tx: &mut Tx,
    email: &Email,
    now: OffsetDateTime,
) -> Result<UserId, StoreError> {
    update_by_email(tx, email, "must_change_password = true", now).await
}

/// Stores a new password hash, clears the must-change flag and moves the
/// epoch in one statement; returns the new epoch. Only succeeds if the epoch
/// is still `expected_epoch`, so a change racing a sign-out-everywhere
/// cannot resurrect the session that asked for it.
pub async fn change_password(
    tx: &mut Tx,
    user: UserId,
    expected_epoch: i64,
    new_hash: &str,
    now: OffsetDateTime,
) -> Result<i64, StoreError> {
    Sql::new(
        "update users set password_hash = $1, must_change_password = false,
             credential_epoch = credential_epoch + 1, updated_at = $2
         where id = $3 and credential_epoch = $4
         returning credential_epoch",
    )
    .bind(new_hash)
    .bind(now)
    .bind(user.0)
    .bind(expected_epoch)
    .fetch_scalar(tx)
    .await
}
