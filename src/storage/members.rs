//! A farm's members as its owner manages them: list, and change one member
//! (role, disabled, credential epoch, must-change-password) under the rule
//! that a farm always keeps at least one enabled owner.
//!
//! Every change names the farm and the user: a user of another farm is
//! [`MemberOutcome::NotFound`], never touched.

use time::OffsetDateTime;
use uuid::Uuid;

use super::{Store, StoreResult, unix};
use crate::domain::{FarmId, Role, UserId};
use crate::on_pool;

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Member {
    pub user_id: Uuid,
    pub email: String,
    pub role: String,
    pub flock_restricted: bool,
    pub disabled: bool,
    pub must_change_password: bool,
}

impl Member {
    pub fn id(&self) -> UserId {
        UserId(self.user_id)
    }

    pub fn role(&self) -> Role {
        Role::parse(&self.role).unwrap_or(Role::Viewer)
    }
}

const SELECT: &str = "select u.id as user_id, u.email, m.role, m.flock_restricted, u.disabled,
        u.must_change_password
    from memberships m join users u on u.id = m.user_id
    where m.farm_id = $1";

/// The farm's members, by email.
pub async fn list(store: &Store, farm: FarmId) -> StoreResult<Vec<Member>> {
    let sql = format!("{SELECT} order by u.email limit 1000");
    let rows = on_pool!(store, |pool| {
        sqlx::query_as::<_, Member>(&sql)
            .bind(farm.0)
            .fetch_all(pool)
            .await?
    });
    Ok(rows)
}

pub async fn find(store: &Store, farm: FarmId, user: UserId) -> StoreResult<Option<Member>> {
    let sql = format!("{SELECT} and u.id = $2");
    let row = on_pool!(store, |pool| {
        sqlx::query_as::<_, Member>(&sql)
            .bind(farm.0)
            .bind(user.0)
            .fetch_optional(pool)
            .await?
    });
    Ok(row)
}

/// (user id, flock name) for every flock-restricted member of the farm.
pub async fn restricted_flocks(store: &Store, farm: FarmId) -> StoreResult<Vec<(Uuid, String)>> {
    let rows: Vec<(Uuid, String)> = on_pool!(store, |pool| {
        sqlx::query_as(
            "select mf.user_id, f.name from membership_flocks mf
             join flocks f on f.id = mf.flock_id
             where f.farm_id = $1
             order by f.name",
        )
        .bind(farm.0)
        .fetch_all(pool)
        .await?
    });
    Ok(rows)
}

/// One change to one member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberChange {
    Disable,
    Enable,
    /// Moves the credential epoch: every session and token of the user dies.
    SignOutEverywhere,
    RequirePasswordChange,
    /// A new role. A worker's flock restriction ends with the role: only
    /// workers may be restricted.
    SetRole(Role),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberOutcome {
    Done,
    /// No such member on this farm.
    NotFound,
    /// The change would leave the farm without an enabled owner.
    LastOwner,
}

/// Applies `change` to `user` on `farm` in one transaction.
///
/// The transaction first writes the farm row: on PostgreSQL that locks it,
/// so two owners demoting each other at once are serialised and the second
/// sees the first's change; SQLite serialises every writing transaction
/// anyway. Then the last-owner rule is checked against committed state.
pub async fn change(
    store: &Store,
    farm: FarmId,
    user: UserId,
    change: MemberChange,
    now: OffsetDateTime,
) -> StoreResult<MemberOutcome> {
    let outcome = on_pool!(store, |pool| {
        let mut tx = pool.begin().await?;
        sqlx::query("update farms set name = name where id = $1")
            .bind(farm.0)
            .execute(&mut *tx)
            .await?;
        let target: Option<(String, bool)> = sqlx::query_as(
            "select m.role, u.disabled from memberships m join users u on u.id = m.user_id
             where m.farm_id = $1 and m.user_id = $2",
        )
        .bind(farm.0)
        .bind(user.0)
        .fetch_optional(&mut *tx)
        .await?;
        let outcome = match target {
            None => MemberOutcome::NotFound,
            Some((role, disabled)) => {
                let removes_an_owner = role == Role::Owner.as_str()
                    && !disabled
                    && matches!(
                        change,
                        MemberChange::Disable
                            | MemberChange::SetRole(Role::Manager | Role::Worker | Role::Viewer)
                    );
                let other_owners: i64 = if removes_an_owner {
                    sqlx::query_scalar(
                        "select count(*) from memberships m join users u on u.id = m.user_id
                         where m.farm_id = $1 and m.role = 'owner' and not u.disabled
                           and m.user_id <> $2",
                    )
                    .bind(farm.0)
                    .bind(user.0)
                    .fetch_one(&mut *tx)
                    .await?
                } else {
                    1
                };
                if other_owners == 0 {
                    MemberOutcome::LastOwner
                } else {
                    let statement = match change {
                        MemberChange::Disable => {
                            "update users set disabled = true, updated_at = $2 where id = $1"
                        }
                        MemberChange::Enable => {
                            "update users set disabled = false, updated_at = $2 where id = $1"
                        }
                        MemberChange::SignOutEverywhere => {
                            "update users set credential_epoch = credential_epoch + 1,
                                 updated_at = $2 where id = $1"
                        }
                        MemberChange::RequirePasswordChange => {
                            "update users set must_change_password = true, updated_at = $2
                             where id = $1"
                        }
                        MemberChange::SetRole(_) => {
                            "update users set updated_at = $2 where id = $1"
                        }
                    };
                    sqlx::query(statement)
                        .bind(user.0)
                        .bind(unix(now))
                        .execute(&mut *tx)
                        .await?;
                    if let MemberChange::SetRole(new_role) = change {
                        let keeps_restriction = new_role.may_be_flock_restricted();
                        sqlx::query(
                            "update memberships set role = $2,
                                 flock_restricted = flock_restricted and $3
                             where user_id = $1",
                        )
                        .bind(user.0)
                        .bind(new_role.as_str())
                        .bind(keeps_restriction)
                        .execute(&mut *tx)
                        .await?;
                        if !keeps_restriction {
                            sqlx::query("delete from membership_flocks where user_id = $1")
                                .bind(user.0)
                                .execute(&mut *tx)
                                .await?;
                        }
                    }
                    MemberOutcome::Done
                }
            }
        };
        tx.commit().await?;
        outcome
    });
    Ok(outcome)
}
