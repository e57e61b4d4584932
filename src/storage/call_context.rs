//! The one look-up behind every `/mcp` call: a token's grant with its user,
//! the user's membership of the grant's farm, the farm, the member's flock
//! list, whether the token itself was revoked and whether its signing key
//! was withdrawn, in a single indexed query.
//!
//! Every join is by primary key (`grants.id`, `users.id`,
//! `memberships.user_id`, `farms.id`, `membership_flocks (user_id, …)`,
//! `revoked_access_tokens.jti`, `signing_keys.kid`), so the cost does not grow with the number of
//! grants or farms. A restricted member yields one row per flock (at least
//! one row, the flock column then null); the rows differ only in that
//! column. Nothing is cached: the next call after a revocation, a moved
//! credential epoch, a suspension or the farm's switch turned off sees it,
//! on every replica (threat 8). Deciding what the answer means is the MCP
//! layer's job (`mcp::bearer`). An automation's token has its own look-up
//! of the same shape ([`load_automation`]): the automation instead of the
//! grant, user and membership.

use uuid::Uuid;

use super::engine::Field;
use super::{Exec, FromRecord, Record, Sql, StoreError};
use crate::domain::{AutomationId, FlockId, GrantId, Name, Role, ScopeSet};

crate::record! {
    /// What the store says about a token's grant, its user, membership and farm.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct StoredCallContext {
        pub grant_id: Uuid,
        pub farm_id: Uuid,
        pub user_id: Uuid,
        pub client_id: String,
        /// The grant's scopes now (a later consent may have narrowed them).
        pub grant_scope: ScopeSet,
        pub grant_revoked: bool,
        pub last_used_at: Option<i64>,
        pub user_epoch: i64,
        pub user_disabled: bool,
        pub must_change_password: bool,
        pub role: Role,
        pub flock_restricted: bool,
        /// The member's flocks when restricted (possibly none); empty otherwise.
        pub flocks: Vec<FlockId>,
        pub farm_suspended: bool,
        pub connected_apps_enabled: bool,
        /// The token's `jti` was revoked on its own (RFC 7009).
        pub token_revoked: bool,
        /// The key that signed the token was withdrawn (`coop keys retire --now`).
        pub key_withdrawn: bool,
    }
}

/// One row's `flocks` column: its one flock, or none when null. [`fetch`]
/// gathers them over the rows of a restricted caller.
impl Field for Vec<FlockId> {
    fn read(record: &Record<'_>, name: &str) -> Result<Self, StoreError> {
        let flock: Option<Uuid> = record.get(name)?;
        Ok(flock.map(FlockId).into_iter().collect())
    }
}

/// The columns both look-ups end with: whether the token's own `jti`
/// (`$2`) was revoked and whether its signing key (`$3`) was withdrawn.
macro_rules! token_checks {
    () => {
        "exists (select 1 from revoked_access_tokens r where r.jti = $2) as token_revoked,
        exists (select 1 from signing_keys k where k.kid = $3 and k.withdrawn_at is not null)
            as key_withdrawn"
    };
}

const SQL: &str = concat!(
    "select g.id as grant_id, g.farm_id as farm_id, g.user_id as user_id,
        g.client_id as client_id, g.scope as grant_scope,
        g.revoked_at is not null as grant_revoked, g.last_used_at as last_used_at,
        u.credential_epoch as user_epoch, u.disabled as user_disabled,
        u.must_change_password as must_change_password,
        m.role as role, m.flock_restricted as flock_restricted,
        f.suspended as farm_suspended, f.connected_apps_enabled as connected_apps_enabled,
        mf.flock_id as flocks,
        ",
    token_checks!(),
    "
    from grants g
    join users u on u.id = g.user_id
    join memberships m on m.user_id = g.user_id and m.farm_id = g.farm_id
    join farms f on f.id = g.farm_id
    left join membership_flocks mf on mf.user_id = m.user_id and m.flock_restricted
    where g.id = $1"
);

/// Runs one of the look-ups for the caller `id`, the token's `jti` and
/// its `kid`: the first row, with the flocks of every row (a restricted
/// caller has one row per flock; the rows differ only in that column).
async fn fetch<R: FromRecord>(
    db: &mut impl Exec,
    sql: &'static str,
    id: Uuid,
    jti: &str,
    kid: &str,
    flocks: fn(&mut R) -> &mut Vec<FlockId>,
) -> Result<Option<R>, StoreError> {
    let rows: Vec<R> = Sql::new(sql)
        .bind(id)
        .bind(jti)
        .bind(kid)
        .fetch_all(db)
        .await?;
    let mut rows = rows.into_iter();
    let Some(mut first) = rows.next() else {
        return Ok(None);
    };
    for mut row in rows {
        flocks(&mut first).append(flocks(&mut row));
    }
    Ok(Some(first))
}

/// The call context of a token naming `grant` and `jti`, signed by `kid`;
/// `None` when the grant, its user, the user's membership of its farm or
/// the farm is gone.
pub async fn load(
    db: &mut impl Exec,
    grant: GrantId,
    jti: &str,
    kid: &str,
) -> Result<Option<StoredCallContext>, StoreError> {
    fetch(db, SQL, grant.0, jti, kid, |c: &mut StoredCallContext| {
        &mut c.flocks
    })
    .await
}

crate::record! {
    /// What the store says about an automation's token: the automation, its
    /// flocks and farm, and the token's own revocation and key, in one query
    /// of primary-key joins like [`load`].
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct StoredAutomationContext {
        pub automation_id: Uuid,
        pub farm_id: Uuid,
        pub name: Name,
        pub role: Role,
        pub flock_restricted: bool,
        /// The automation's flocks when restricted (possibly none); empty otherwise.
        pub flocks: Vec<FlockId>,
        /// The scopes it may hold now (its owner may have narrowed them).
        pub scope: ScopeSet,
        pub epoch: i64,
        pub disabled: bool,
        pub last_used_at: Option<i64>,
        pub farm_suspended: bool,
        pub connected_apps_enabled: bool,
        pub token_revoked: bool,
        pub key_withdrawn: bool,
    }
}

const AUTOMATION_SQL: &str = concat!(
    "select a.id as automation_id, a.farm_id as farm_id, a.name as name,
        a.role as role, a.flock_restricted as flock_restricted, a.scope as scope,
        a.credential_epoch as epoch, a.disabled as disabled, a.last_used_at as last_used_at,
        f.suspended as farm_suspended, f.connected_apps_enabled as connected_apps_enabled,
        af.flock_id as flocks,
        ",
    token_checks!(),
    "
    from automations a
    join farms f on f.id = a.farm_id
    left join automation_flocks af on af.automation_id = a.id and a.flock_restricted
    where a.id = $1"
);

/// The call context of an automation's token naming `jti`, signed by
/// `kid`; `None` when the automation (or its farm) is gone.
pub async fn load_automation(
    db: &mut impl Exec,
    automation: AutomationId,
    jti: &str,
    kid: &str,
) -> Result<Option<StoredAutomationContext>, StoreError> {
    fetch(
        db,
        AUTOMATION_SQL,
        automation.0,
        jti,
        kid,
        |c: &mut StoredAutomationContext| &mut c.flocks,
    )
    .await
}
