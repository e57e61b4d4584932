//! Grants: one active per (user, client), the unit of "connected app".
//!
//! A grant is created (or its scopes replaced) at consent, and ended by
//! revocation, by reuse detection, or by disconnecting. Codes and refresh
//! tokens name their grant; every check that issues a token reads the grant
//! with its user and farm in the same query ([`GrantStatus`]), so a
//! revocation, a moved credential epoch or a suspended farm is seen at once
//! on every replica.

use time::OffsetDateTime;
use uuid::Uuid;

use super::engine::Field;
use super::{Exec, FromRecord, Record, Sql, StoreError, Tx};
use crate::domain::{FarmId, GrantId, ScopeSet, UserId};

crate::record! {
    /// A grant with what decides whether it may still issue tokens.
    #[derive(Clone, Debug)]
    pub struct GrantStatus {
        pub grant_id: Uuid,
        pub grant_farm_id: Uuid,
        pub grant_user_id: Uuid,
        pub grant_client_id: String,
        pub grant_scope: ScopeSet,
        pub grant_resource: String,
        /// The user's credential epoch when the grant was consented to.
        pub grant_epoch: i64,
        pub grant_revoked_at: Option<i64>,
        /// The user's credential epoch now.
        pub user_epoch: i64,
        pub user_disabled: bool,
        /// The person must choose a new password before anything is issued.
        pub user_must_change_password: bool,
        pub farm_suspended: bool,
        pub farm_apps_enabled: bool,
    }
}

/// A row that carries a grant's status ([`GRANT_STATUS_COLUMNS`]) reads it
/// from its own columns, whatever the field is called.
impl Field for GrantStatus {
    fn read(record: &Record<'_>, _: &str) -> Result<Self, StoreError> {
        Self::from_record(record)
    }
}

impl GrantStatus {
    pub fn id(&self) -> GrantId {
        GrantId(self.grant_id)
    }

    pub fn user(&self) -> UserId {
        UserId(self.grant_user_id)
    }

    pub fn farm(&self) -> FarmId {
        FarmId(self.grant_farm_id)
    }
}

/// The columns of [`GrantStatus`], for a query that joins `grants g`,
/// `users u` and `farms f` (see [`GRANT_STATUS_JOIN`]).
pub const GRANT_STATUS_COLUMNS: &str = "g.id as grant_id, g.farm_id as grant_farm_id,
    g.user_id as grant_user_id, g.client_id as grant_client_id, g.scope as grant_scope,
    g.resource as grant_resource, g.credential_epoch as grant_epoch,
    g.revoked_at as grant_revoked_at, u.credential_epoch as user_epoch,
    u.disabled as user_disabled, u.must_change_password as user_must_change_password,
    f.suspended as farm_suspended,
    f.connected_apps_enabled as farm_apps_enabled";

/// Joins the user and farm of grant `g`.
pub const GRANT_STATUS_JOIN: &str =
    "join users u on u.id = g.user_id join farms f on f.id = g.farm_id";

pub async fn status(db: &mut impl Exec, grant: GrantId) -> Result<Option<GrantStatus>, StoreError> {
    Sql::new(format!(
        "select {GRANT_STATUS_COLUMNS} from grants g {GRANT_STATUS_JOIN} where g.id = $1"
    ))
    .bind(grant.0)
    .fetch_optional(db)
    .await
}

/// The active grant of `user` to `client_id`, if any.
pub async fn active_for(
    db: &mut impl Exec,
    user: UserId,
    client_id: &str,
) -> Result<Option<GrantStatus>, StoreError> {
    Sql::new(format!(
        "select {GRANT_STATUS_COLUMNS} from grants g {GRANT_STATUS_JOIN}
         where g.user_id = $1 and g.client_id = $2 and g.revoked_at is null"
    ))
    .bind(user.0)
    .bind(client_id)
    .fetch_optional(db)
    .await
}

/// What a person approved. `scope_after` gives the grant's scopes after
/// this consent from its scopes before (`None`: no grant of this epoch).
pub struct Consent<'a> {
    pub farm: FarmId,
    pub user: UserId,
    pub client_id: &'a str,
    pub scope_after: &'a (dyn Fn(Option<&ScopeSet>) -> ScopeSet + Send + Sync),
    pub resource: &'a str,
    pub epoch: i64,
}

/// What recording a consent did to the (user, client) grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsentOutcome {
    Created(GrantId),
    /// The active grant, made under the same credential epoch, now holds
    /// the scopes `scope_after` gave.
    Updated(GrantId),
    /// The active grant was made under an older credential epoch: it is
    /// revoked (its tokens must stay dead) and a new one created.
    Replaced {
        old: GrantId,
        new: GrantId,
    },
}

impl ConsentOutcome {
    pub fn grant(self) -> GrantId {
        match self {
            Self::Created(g) | Self::Updated(g) | Self::Replaced { new: g, .. } => g,
        }
    }
}

/// Records a consent in the caller's transaction. Two consents racing
/// for the same (user, client) are serialised by the SQLite writer; on
/// PostgreSQL they meet the partial unique index, and the loser's
/// transaction fails with a conflict (the caller retries the whole
/// decision once, and then finds the winner's grant).
pub async fn record_consent(
    tx: &mut Tx,
    consent: &Consent<'_>,
    now: OffsetDateTime,
) -> Result<ConsentOutcome, StoreError> {
    let new_id = GrantId::new();
    let existing: Option<(Uuid, i64, ScopeSet)> = Sql::new(
        "select id, credential_epoch, scope from grants
         where user_id = $1 and client_id = $2 and revoked_at is null",
    )
    .bind(consent.user.0)
    .bind(consent.client_id)
    .fetch_optional(tx)
    .await?;
    let outcome = match existing {
        Some((id, epoch, scope)) if epoch == consent.epoch => {
            Sql::new("update grants set scope = $2 where id = $1")
                .bind(id)
                .bind((consent.scope_after)(Some(&scope)).to_wire())
                .execute(tx)
                .await?;
            ConsentOutcome::Updated(GrantId(id))
        }
        Some((id, _, _)) => {
            Sql::new(
                "update grants set revoked_at = $2, revoked_reason = 'credential epoch moved'
                 where id = $1 and revoked_at is null",
            )
            .bind(id)
            .bind(now)
            .execute(tx)
            .await?;
            ConsentOutcome::Replaced {
                old: GrantId(id),
                new: new_id,
            }
        }
        None => ConsentOutcome::Created(new_id),
    };
    if !matches!(outcome, ConsentOutcome::Updated(_)) {
        Sql::new(
            "insert into grants (id, farm_id, user_id, client_id, scope, resource,
                 credential_epoch, created_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(new_id.0)
        .bind(consent.farm.0)
        .bind(consent.user.0)
        .bind(consent.client_id)
        .bind((consent.scope_after)(None).to_wire())
        .bind(consent.resource)
        .bind(consent.epoch)
        .bind(now)
        .execute(tx)
        .await?;
    }
    Ok(outcome)
}

/// Ends a grant; every code, refresh token and access token it issued dies
/// with it (each check reads the grant). Returns whether it was active.
pub async fn revoke(
    tx: &mut Tx,
    grant: GrantId,
    reason: &str,
    now: OffsetDateTime,
) -> Result<bool, StoreError> {
    let affected = Sql::new(
        "update grants set revoked_at = $2, revoked_reason = $3
         where id = $1 and revoked_at is null",
    )
    .bind(grant.0)
    .bind(now)
    .bind(reason)
    .execute(tx)
    .await?;
    Ok(affected > 0)
}

/// How often a grant's `last_used_at` is written: at most once a minute, so
/// a busy client does not turn every MCP call into a write.
pub const LAST_USED_RESOLUTION: time::Duration = time::Duration::seconds(60);

/// Records that `grant` was used at `now`, unless it was already recorded
/// within the last minute (one conditional update; racing replicas both
/// pass the check and both write, which is harmless). Returns whether a row
/// was written.
pub async fn touch_last_used(
    tx: &mut Tx,
    grant: GrantId,
    now: OffsetDateTime,
) -> Result<bool, StoreError> {
    let affected = Sql::new(
        "update grants set last_used_at = $2
         where id = $1 and (last_used_at is null or last_used_at < $3)",
    )
    .bind(grant.0)
    .bind(now)
    .bind(now - LAST_USED_RESOLUTION)
    .execute(tx)
    .await?;
    Ok(affected > 0)
}
