//! Automations: machine clients a farm owner controls (a barn scale, a
//! farm-management system), with a role, a worker's flocks, the scopes they
//! may hold and their credential.
//!
//! Every function names the farm, except the two the token endpoint and
//! the per-call check use ([`find_credential`], [`touch_last_used`]), which
//! start from the automation's own id. Disabling moves the automation's
//! credential epoch, so tokens made before stay dead even when it is
//! enabled again; the per-call check reads both.

use time::OffsetDateTime;
use uuid::Uuid;

use super::{Exec, Sql, StoreError, Tx, flock_limits};
use crate::domain::{
    Access, AutomationAuth, AutomationId, FarmId, FarmSlug, Name, Role, ScopeSet, UserId,
};

crate::record! {
    /// An automation as its owner's page and the command line show it.
    #[derive(Clone, Debug)]
    pub struct AutomationRow {
        pub id: Uuid,
        pub farm_id: Uuid,
        pub farm_slug: FarmSlug,
        pub name: Name,
        pub role: Role,
        pub flock_restricted: bool,
        /// The scopes it may hold.
        pub scope: ScopeSet,
        pub auth_method: AutomationAuth,
        pub jwks_uri: Option<String>,
        pub disabled: bool,
        pub created_at: i64,
        pub last_used_at: Option<i64>,
    }
}

impl AutomationRow {
    pub fn automation(&self) -> AutomationId {
        AutomationId(self.id)
    }

    pub fn farm(&self) -> FarmId {
        FarmId(self.farm_id)
    }

    pub fn client_id(&self) -> String {
        self.automation().client_id()
    }
}

crate::record! {
    /// What the token endpoint needs to authenticate an automation and decide
    /// whether it may have a token now.
    #[derive(Clone, Debug)]
    pub struct AutomationCredential {
        pub id: Uuid,
        pub farm_id: Uuid,
        pub name: Name,
        pub scope: ScopeSet,
        pub auth_method: AutomationAuth,
        pub secret_hash: Option<String>,
        pub jwks: Option<String>,
        pub jwks_uri: Option<String>,
        pub credential_epoch: i64,
        pub disabled: bool,
        pub farm_suspended: bool,
        pub farm_apps_enabled: bool,
    }
}

impl AutomationCredential {
    pub fn automation(&self) -> AutomationId {
        AutomationId(self.id)
    }

    pub fn farm(&self) -> FarmId {
        FarmId(self.farm_id)
    }
}

/// How a new automation proves itself at `/token`.
#[derive(Clone, Debug)]
pub enum NewCredential<'a> {
    /// `client_secret_basic`: the SHA-256 of the secret.
    SecretHash(&'a str),
    /// `private_key_jwt` with a key set given in full (JWKS JSON).
    Jwks(&'a str),
    /// `private_key_jwt` with a key set fetched from this https URL.
    JwksUri(&'a str),
}

pub struct NewAutomation<'a> {
    pub id: AutomationId,
    pub farm: FarmId,
    pub name: &'a str,
    /// Never an owner: the caller's check, and the table's.
    pub access: &'a Access,
    pub scope: &'a str,
    pub credential: NewCredential<'a>,
    pub created_by: Option<UserId>,
}

/// The result of [`insert`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inserted {
    Done,
    /// The farm has an automation of that name already; nothing was written.
    NameTaken,
    /// A flock named is not this farm's; the caller drops the transaction.
    UnknownFlock,
}

/// Stores a new automation and its flocks in the caller's transaction.
pub async fn insert(
    tx: &mut Tx,
    new: &NewAutomation<'_>,
    now: OffsetDateTime,
) -> Result<Inserted, StoreError> {
    let (method, secret_hash, jwks, jwks_uri) = match new.credential {
        NewCredential::SecretHash(hash) => {
            (AutomationAuth::ClientSecretBasic, Some(hash), None, None)
        }
        NewCredential::Jwks(set) => (AutomationAuth::PrivateKeyJwt, None, Some(set), None),
        NewCredential::JwksUri(uri) => (AutomationAuth::PrivateKeyJwt, None, None, Some(uri)),
    };
    let taken: i64 = Sql::new("select count(*) from automations where farm_id = $1 and name = $2")
        .bind(new.farm.0)
        .bind(new.name)
        .fetch_scalar(tx)
        .await?;
    if taken > 0 {
        return Ok(Inserted::NameTaken);
    }
    let inserted = Sql::new(
        "insert into automations (id, farm_id, name, role, flock_restricted, scope,
             auth_method, secret_hash, jwks, jwks_uri, created_by, created_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(new.id.0)
    .bind(new.farm.0)
    .bind(new.name)
    .bind(new.access.role())
    .bind(new.access.limited_to().is_some())
    .bind(new.scope)
    .bind(method)
    .bind(secret_hash)
    .bind(jwks)
    .bind(jwks_uri)
    .bind(new.created_by.map(|u| u.0))
    .bind(now)
    .execute(tx)
    .await;
    match inserted {
        Ok(_) => {}
        // Two owners adding the same name at once: the unique key decides.
        Err(StoreError::Conflict(_)) => return Ok(Inserted::NameTaken),
        Err(err) => return Err(err),
    }
    let flocks = new.access.limited_to().unwrap_or_default();
    let linked = flock_limits::AUTOMATIONS
        .link(tx, new.id.0, new.farm, flocks)
        .await?;
    if !linked {
        return Ok(Inserted::UnknownFlock);
    }
    Ok(Inserted::Done)
}

const SELECT: &str = "select a.id, a.farm_id, f.slug as farm_slug, a.name, a.role,
        a.flock_restricted, a.scope, a.auth_method, a.jwks_uri, a.disabled, a.created_at,
        a.last_used_at
    from automations a join farms f on f.id = a.farm_id";

/// The farm's automations, by name.
pub async fn list(db: &mut impl Exec, farm: FarmId) -> Result<Vec<AutomationRow>, StoreError> {
    Sql::new(format!(
        "{SELECT} where a.farm_id = $1 order by a.name limit 500"
    ))
    .bind(farm.0)
    .fetch_all(db)
    .await
}

/// The automation `id` if it is `farm`'s.
pub async fn find(
    db: &mut impl Exec,
    farm: FarmId,
    id: AutomationId,
) -> Result<Option<AutomationRow>, StoreError> {
    Sql::new(format!("{SELECT} where a.farm_id = $1 and a.id = $2"))
        .bind(farm.0)
        .bind(id.0)
        .fetch_optional(db)
        .await
}

/// The automation's credential and what decides whether it may get a
/// token, with its farm's state, in one query.
pub async fn find_credential(
    db: &mut impl Exec,
    id: AutomationId,
) -> Result<Option<AutomationCredential>, StoreError> {
    Sql::new(
        "select a.id, a.farm_id, a.name, a.scope, a.auth_method, a.secret_hash, a.jwks,
             a.jwks_uri, a.credential_epoch, a.disabled, f.suspended as farm_suspended,
             f.connected_apps_enabled as farm_apps_enabled
         from automations a join farms f on f.id = a.farm_id
         where a.id = $1",
    )
    .bind(id.0)
    .fetch_optional(db)
    .await
}

/// Disables (moving the epoch: its tokens die for good) or enables `id` on
/// `farm`. Returns whether the state changed.
pub async fn set_disabled(
    tx: &mut Tx,
    farm: FarmId,
    id: AutomationId,
    disabled: bool,
) -> Result<bool, StoreError> {
    let statement = if disabled {
        "update automations set disabled = true, credential_epoch = credential_epoch + 1
         where farm_id = $1 and id = $2 and not disabled"
    } else {
        "update automations set disabled = false where farm_id = $1 and id = $2 and disabled"
    };
    let changed = Sql::new(statement)
        .bind(farm.0)
        .bind(id.0)
        .execute(tx)
        .await?;
    Ok(changed > 0)
}

/// Deletes `id` on `farm` (its flocks with it); whether it existed.
pub async fn delete(tx: &mut Tx, farm: FarmId, id: AutomationId) -> Result<bool, StoreError> {
    let deleted = Sql::new("delete from automations where farm_id = $1 and id = $2")
        .bind(farm.0)
        .bind(id.0)
        .execute(tx)
        .await?;
    Ok(deleted > 0)
}

/// Records that `id` was used at `now`, at most once a minute (as for grants).
pub async fn touch_last_used(
    tx: &mut Tx,
    id: AutomationId,
    now: OffsetDateTime,
) -> Result<bool, StoreError> {
    let affected = Sql::new(
        "update automations set last_used_at = $2
         where id = $1 and (last_used_at is null or last_used_at < $3)",
    )
    .bind(id.0)
    .bind(now)
    .bind(now - super::grants::LAST_USED_RESOLUTION)
    .execute(tx)
    .await?;
    Ok(affected > 0)
}
