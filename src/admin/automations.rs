//! Automations as a farm's owner (on `/admin/automations`) and the operator
//! (`coop admin automation …`) manage them: add, list, disable, enable,
//! delete. Both go through these functions, so the rules are one set:
//!
//! - a name of 1 to 100 printable characters, unique on the farm;
//! - a role of `manager`, `worker` or `viewer`: **never `owner`** (an
//!   automation holds no farm administration, and an owner cannot make a
//!   machine more powerful than a manager); a worker may be limited to
//!   some of the farm's flocks, as a member is;
//! - at least one scope it may hold;
//! - a credential: a client secret, generated here and shown once (only
//!   its SHA-256 is kept), or a public key set for `private_key_jwt`,
//!   pasted (`jwks`) or at an https `jwks_uri`, checked like a client's.
//!
//! Disabling moves the automation's credential epoch: every token it holds
//! is refused on its next call, on every replica, and stays refused after
//! it is enabled again (it asks for a new one). Each change is audited in
//! the transaction that makes it.

use time::OffsetDateTime;

use super::apps::Actor;
use super::{AdminError, check_name, refused};
use crate::domain::{Access, AccessError, AutomationId, FarmId, FlockId, Role, Scope, ScopeSet};
use crate::oauth::cimd::{fetch_url, key_set};
use crate::oauth::client::disguises_text;
use crate::secrets::{self, ClientSecret};
use crate::storage::audit::{self, AuditEvent, AuditKind};
use crate::storage::automations::{self, AutomationRow, Inserted, NewAutomation, NewCredential};
use crate::storage::{Store, Tx};

/// How a new automation will prove itself.
#[derive(Clone, Debug)]
pub enum CredentialInput<'a> {
    /// Generate a client secret (`client_secret_basic`), shown once.
    Secret,
    /// `private_key_jwt` with this key set (JWKS JSON).
    Jwks(&'a str),
    /// `private_key_jwt` with the key set at this https URL.
    JwksUri(&'a str),
}

/// What the owner or operator asked for.
#[derive(Clone, Debug)]
pub struct AutomationInput<'a> {
    pub name: &'a str,
    pub role: &'a str,
    /// `None`: the whole farm; `Some`: a worker limited to these flocks.
    pub flocks: Option<Vec<FlockId>>,
    /// The scopes it may hold, space- or comma-separated.
    pub scopes: &'a str,
    pub credential: CredentialInput<'a>,
}

/// A new automation: what to tell the one who made it.
#[derive(Clone, Debug)]
pub struct Created {
    pub client_id: String,
    /// The client secret, shown this once; `None` for `private_key_jwt`.
    pub secret: Option<ClientSecret>,
}

/// The role an automation may have: any but owner.
pub fn parse_role(raw: &str) -> Result<Role, AdminError> {
    let role = Role::parse(raw).map_err(refused)?;
    if role == Role::Owner {
        return Err(refused(
            "an automation cannot be an owner: choose manager, worker or viewer",
        ));
    }
    Ok(role)
}

/// The roles offered for an automation, in the order a form shows them.
pub const ROLES: [Role; 3] = [Role::Manager, Role::Worker, Role::Viewer];

/// At least one known scope.
pub fn parse_scopes(raw: &str) -> Result<ScopeSet, AdminError> {
    let mut scopes = Vec::new();
    for word in raw
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
    {
        scopes.push(Scope::parse(word).ok_or_else(|| {
            refused(format!(
                "{word:?} is not a scope (farm:read, daily-entries:write)"
            ))
        })?);
    }
    let set = ScopeSet::from_scopes(scopes);
    if set.is_empty() {
        return Err(refused("choose at least one scope the automation may hold"));
    }
    Ok(set)
}

/// Adds an automation to `farm`, audited as done `by`.
pub async fn add(
    store: &Store,
    farm: FarmId,
    input: &AutomationInput<'_>,
    by: Actor<'_>,
    now: OffsetDateTime,
) -> Result<Created, AdminError> {
    let name = check_name("automation", input.name)?;
    // Pages show the name to the owner and in the audit log: nothing in it
    // may reorder or hide what is around it (threat 37).
    if name.chars().any(disguises_text) {
        return Err(refused(
            "the automation name has an invisible or text-reordering character",
        ));
    }
    let role = parse_role(input.role)?;
    let access = Access::new(role, input.flocks.clone()).map_err(|err| match err {
        AccessError::OnlyWorkersAreLimited => {
            refused("only a worker can be limited to some flocks")
        }
        AccessError::NoFlockChosen => refused("choose at least one flock, or all of them"),
    })?;
    let scopes = parse_scopes(input.scopes)?;
    let secret = matches!(input.credential, CredentialInput::Secret)
        .then(|| ClientSecret::new(secrets::random_token(32)));
    let secret_hash = secret.as_ref().map(|s| secrets::hash_secret(s.expose()));
    let jwks_text;
    let credential = match (&input.credential, &secret_hash) {
        (CredentialInput::Secret, Some(hash)) => NewCredential::SecretHash(hash),
        (CredentialInput::Jwks(raw), _) => {
            let value: serde_json::Value = serde_json::from_str(raw)
                .map_err(|_| refused("the key set is not JSON (paste the JWKS document)"))?;
            key_set::from_value(&value).map_err(|err| refused(err.to_string()))?;
            jwks_text = value.to_string();
            NewCredential::Jwks(&jwks_text)
        }
        (CredentialInput::JwksUri(raw), _) => {
            fetch_url::parse_key_set_url(raw.trim()).map_err(|err| refused(err.to_string()))?;
            NewCredential::JwksUri(raw.trim())
        }
        (CredentialInput::Secret, None) => return Err(refused("no secret was generated")),
    };
    let id = AutomationId::new();
    let scope_wire = scopes.to_wire();
    let new = NewAutomation {
        id,
        farm,
        name: &name,
        access: &access,
        scope: &scope_wire,
        credential,
        created_by: by.user(),
    };
    let mut tx = store.write().await?;
    match automations::insert(&mut tx, &new, now).await? {
        Inserted::Done => {}
        Inserted::NameTaken => {
            return Err(refused(format!(
                "the farm already has an automation named {name:?}"
            )));
        }
        Inserted::UnknownFlock => return Err(refused("that flock is not on this farm")),
    }
    let detail = serde_json::json!({
        "name": name,
        "role": role.as_str(),
        "flocks": if access.limited_to().is_some() { "some" } else { "all" },
        "scopes": scope_wire,
        "credential": if secret.is_some() { "client_secret_basic" } else { "private_key_jwt" },
    });
    record(&mut tx, farm, id, "automation_added", detail, by, now).await?;
    tx.commit().await?;
    Ok(Created {
        client_id: id.client_id(),
        secret,
    })
}

/// Disables or enables `id` on `farm`; a refusal if it is not the farm's
/// or already in that state.
pub async fn set_disabled(
    store: &Store,
    farm: FarmId,
    id: AutomationId,
    disabled: bool,
    by: Actor<'_>,
    now: OffsetDateTime,
) -> Result<AutomationRow, AdminError> {
    let row = find(store, farm, id).await?;
    let mut tx = store.write().await?;
    if !automations::set_disabled(&mut tx, farm, id, disabled).await? {
        let state = if disabled { "disabled" } else { "enabled" };
        return Err(refused(format!("{:?} is {state} already", row.name)));
    }
    let action = if disabled {
        "automation_disabled"
    } else {
        "automation_enabled"
    };
    audit_and_commit(tx, row, action, by, now).await
}

/// Deletes `id` on `farm`: its tokens are refused from their next call.
pub async fn delete(
    store: &Store,
    farm: FarmId,
    id: AutomationId,
    by: Actor<'_>,
    now: OffsetDateTime,
) -> Result<AutomationRow, AdminError> {
    let row = find(store, farm, id).await?;
    let mut tx = store.write().await?;
    if !automations::delete(&mut tx, farm, id).await? {
        return Err(no_such(id));
    }
    audit_and_commit(tx, row, "automation_deleted", by, now).await
}

/// Audits `action` on `row`, named, in the transaction that made it, and
/// commits the two.
async fn audit_and_commit(
    mut tx: Tx,
    row: AutomationRow,
    action: &str,
    by: Actor<'_>,
    now: OffsetDateTime,
) -> Result<AutomationRow, AdminError> {
    let detail = serde_json::json!({ "name": row.name });
    record(
        &mut tx,
        row.farm(),
        row.automation(),
        action,
        detail,
        by,
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(row)
}

/// The automation `id` of `farm`.
pub async fn find(
    store: &Store,
    farm: FarmId,
    id: AutomationId,
) -> Result<AutomationRow, AdminError> {
    automations::find(&mut store.read().await?, farm, id)
        .await?
        .ok_or_else(|| no_such(id))
}

/// The farm of the automation a command names (by `client_id` or id).
pub async fn farm_of(store: &Store, raw: &str) -> Result<(FarmId, AutomationId), AdminError> {
    let id = AutomationId::from_client_id(raw.trim())
        .or_else(|| AutomationId::parse(raw))
        .ok_or_else(|| refused(format!("{raw:?} is not an automation's client_id")))?;
    let found = automations::find_credential(&mut store.read().await?, id).await?;
    found.map(|c| (c.farm(), id)).ok_or_else(|| no_such(id))
}

fn no_such(id: AutomationId) -> super::AdminError {
    refused(format!(
        "no automation has the client_id {}",
        id.client_id()
    ))
}

async fn record(
    tx: &mut Tx,
    farm: FarmId,
    id: AutomationId,
    action: &str,
    mut detail: serde_json::Value,
    by: Actor<'_>,
    now: OffsetDateTime,
) -> Result<(), AdminError> {
    if let Some(object) = detail.as_object_mut() {
        object.insert("action".into(), action.into());
        object.insert("by".into(), by.describe().into());
    }
    let client_id = id.client_id();
    let mut event = AuditEvent::new(AuditKind::AdminAction);
    event.farm = Some(farm);
    event.user = by.user();
    event.client_id = Some(&client_id);
    event.automation = Some(id);
    event.detail = detail;
    audit::record(tx, &event, now).await?;
    Ok(())
}

/// One line of `coop admin automation list`, tab-separated: client_id,
/// name, role, flocks (`all` or `some`), scopes (comma-separated),
/// credential, state, last used (RFC 3339, or `never`).
pub fn list_line(row: &AutomationRow) -> String {
    let last_used = super::rfc3339_or_never(row.last_used_at);
    format!(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        row.client_id(),
        row.name,
        row.role,
        if row.flock_restricted { "some" } else { "all" },
        row.scope.join(","),
        row.auth_method,
        if row.disabled { "disabled" } else { "enabled" },
        last_used
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_automation_is_never_an_owner_and_holds_some_scope() {
        assert!(parse_role("owner").is_err());
        assert!(parse_role("Owner").is_err());
        for role in ROLES {
            assert_eq!(parse_role(role.as_str()).unwrap(), role);
        }
        assert_eq!(
            parse_scopes("farm:read, daily-entries:write").unwrap(),
            ScopeSet::all()
        );
        assert!(parse_scopes("").is_err());
        assert!(parse_scopes("admin").is_err());
    }
}
