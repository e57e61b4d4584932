//! A farm's members as its owner manages them: list, and change one member
//! (role and flock restriction, disabled, credential epoch,
//! must-change-password) under the rule that a farm always keeps at least
//! one enabled owner.
//!
//! Every change names the farm and the user: a user of another farm is
//! [`MemberOutcome::NotFound`], never touched.

use time::OffsetDateTime;
use uuid::Uuid;

use super::{Exec, Sql, StoreError, Tx, flock_limits};
use crate::domain::{Access, FarmId, Role, UserId};

crate::record! {
    #[derive(Clone, Debug)]
    pub struct Member {
        pub user_id: Uuid,
        pub email: String,
        pub role: Role,
        pub flock_restricted: bool,
        pub disabled: bool,
        pub must_change_password: bool,
    }
}

impl Member {
    pub fn id(&self) -> UserId {
        UserId(self.user_id)
    }
}

const SELECT: &str = "select u.id as user_id, u.email, m.role, m.flock_restricted, u.disabled,
        u.must_change_password
    from memberships m join users u on u.id = m.user_id
    where m.farm_id = $1";

/// The farm's members, by email.
pub async fn list(db: &mut impl Exec, farm: FarmId) -> Result<Vec<Member>, StoreError> {
    Sql::new(format!("{SELECT} order by u.email limit 1000"))
        .bind(farm.0)
        .fetch_all(db)
        .await
}

pub async fn find(
    db: &mut impl Exec,
    farm: FarmId,
    user: UserId,
) -> Result<Option<Member>, StoreError> {
    Sql::new(format!("{SELECT} and u.id = $2"))
        .bind(farm.0)
        .bind(user.0)
        .fetch_optional(db)
        .await
}

/// One change to one member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberChange {
    Disable,
    Enable,
    /// Moves the credential epoch: every session and token of the user dies.
    SignOutEverywhere,
    RequirePasswordChange,
    /// A new role and flock restriction, always set together so that a
    /// role change never silently widens or narrows what a worker sees.
    SetAccess(Access),
}

impl MemberChange {
    /// Whether applying this to an enabled owner leaves them no longer an
    /// enabled owner.
    fn removes_an_owner(&self) -> bool {
        match self {
            Self::Disable => true,
            Self::SetAccess(access) => access.role() != Role::Owner,
            Self::Enable | Self::SignOutEverywhere | Self::RequirePasswordChange => false,
        }
    }

    fn user_statement(&self) -> &'static str {
        match self {
            Self::Disable => "update users set disabled = true, updated_at = $2 where id = $1",
            Self::Enable => "update users set disabled = false, updated_at = $2 where id = $1",
            Self::SignOutEverywhere => {
                "update users set credential_epoch = credential_epoch + 1, updated_at = $2
                 where id = $1"
            }
            Self::RequirePasswordChange => {
                "update users set must_change_password = true, updated_at = $2 where id = $1"
            }
            Self::SetAccess(_) => "update users set updated_at = $2 where id = $1",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberOutcome {
    Done,
    /// No such member on this farm.
    NotFound,
    /// The change would leave the farm without an enabled owner.
    LastOwner,
    /// One of the flocks named is not a flock of this farm; nothing changed.
    UnknownFlock,
}

/// Applies `change` to `user` on `farm` in the caller's transaction. Only
/// [`MemberOutcome::Done`] leaves a change worth committing: on any other
/// outcome the transaction may hold part of it and must be dropped.
///
/// The transaction first writes the farm row: on PostgreSQL that locks it,
/// so two owners demoting each other at once are serialised and the second
/// sees the first's change; SQLite serialises every writing transaction
/// anyway. Then the last-owner rule is checked against committed state.
pub async fn change(
    tx: &mut Tx,
    farm: FarmId,
    user: UserId,
    change: &MemberChange,
    now: OffsetDateTime,
) -> Result<MemberOutcome, StoreError> {
    Sql::new("update farms set name = name where id = $1")
        .bind(farm.0)
        .execute(tx)
        .await?;
    let target: Option<(Role, bool)> = Sql::new(
        "select m.role, u.disabled from memberships m join users u on u.id = m.user_id
         where m.farm_id = $1 and m.user_id = $2",
    )
    .bind(farm.0)
    .bind(user.0)
    .fetch_optional(tx)
    .await?;
    let Some((role, disabled)) = target else {
        return Ok(MemberOutcome::NotFound);
    };
    if role == Role::Owner && !disabled && change.removes_an_owner() {
        let other_owners: i64 = Sql::new(
            "select count(*) from memberships m join users u on u.id = m.user_id
             where m.farm_id = $1 and m.role = 'owner' and not u.disabled
               and m.user_id <> $2",
        )
        .bind(farm.0)
        .bind(user.0)
        .fetch_scalar(tx)
        .await?;
        if other_owners == 0 {
            return Ok(MemberOutcome::LastOwner);
        }
    }
    Sql::new(change.user_statement())
        .bind(user.0)
        .bind(now)
        .execute(tx)
        .await?;
    if let MemberChange::SetAccess(access) = change {
        Sql::new(
            "update memberships set role = $3, flock_restricted = $4
             where user_id = $1 and farm_id = $2",
        )
        .bind(user.0)
        .bind(farm.0)
        .bind(access.role())
        .bind(access.limited_to().is_some())
        .execute(tx)
        .await?;
        Sql::new("delete from membership_flocks where user_id = $1")
            .bind(user.0)
            .execute(tx)
            .await?;
        let flocks = access.limited_to().unwrap_or_default();
        let linked = flock_limits::MEMBERS.link(tx, user.0, farm, flocks).await?;
        if !linked {
            return Ok(MemberOutcome::UnknownFlock);
        }
    }
    Ok(MemberOutcome::Done)
}
