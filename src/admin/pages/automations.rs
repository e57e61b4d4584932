//! `/admin/automations`: the farm's automations as cards, what the add
//! form offers, and the owner's disable, enable and delete. The rules of
//! an automation are [`crate::admin::automations`]'s, shared with the
//! command line; this file only loads and words them for the page.

use time::OffsetDateTime;

use super::flocks::Limits;
use super::words::{last_used, scope_words, scopes_in_words};
use super::{PageRefusal, invalid};
use crate::admin::apps::Actor;
use crate::admin::automations as automation_admin;
use crate::domain::{AutomationAuth, AutomationId, FarmId, Scope};
use crate::storage::automations::{self, AutomationRow};
use crate::storage::users::Account;
use crate::storage::{Exec, Store, StoreError};
use crate::storage::{farm_admin, flock_limits};

/// One automation as its card shows it.
pub struct AutomationView {
    pub id: String,
    pub client_id: String,
    pub name: String,
    pub role: String,
    /// `None`: every flock.
    pub flocks: Option<String>,
    pub scopes: Vec<&'static str>,
    /// "client secret" or "private key JWT".
    pub credential: &'static str,
    pub disabled: bool,
    pub last_used: String,
}

impl AutomationView {
    fn new(row: &AutomationRow, flocks: Option<String>) -> Self {
        Self {
            id: row.id.to_string(),
            client_id: row.client_id(),
            name: row.name.to_string(),
            role: row.role.to_string(),
            flocks,
            scopes: scopes_in_words(&row.scope),
            credential: if row.auth_method == AutomationAuth::PrivateKeyJwt {
                "private key JWT"
            } else {
                "client secret"
            },
            disabled: row.disabled,
            last_used: last_used(row.last_used_at),
        }
    }
}

/// The farm's automations as cards, each with the names of its flocks.
pub(crate) async fn views(
    db: &mut impl Exec,
    farm: FarmId,
) -> Result<Vec<AutomationView>, StoreError> {
    let rows = automations::list(db, farm).await?;
    let farm_flocks = farm_admin::flocks(db, farm).await?;
    let limits = Limits::new(flock_limits::AUTOMATIONS.of_farm(db, farm).await?);
    Ok(rows
        .iter()
        .map(|row| {
            let flocks = row
                .flock_restricted
                .then(|| limits.names(row.id, &farm_flocks));
            AutomationView::new(row, flocks)
        })
        .collect())
}

/// A flock the add form offers (none that is depleted).
pub struct FlockOption {
    pub id: String,
    pub name: String,
    pub house: String,
}

pub struct ScopeOption {
    pub value: &'static str,
    pub words: &'static str,
}

/// What the automations page shows.
pub struct AutomationsView {
    pub automations: Vec<AutomationView>,
    pub flocks: Vec<FlockOption>,
    pub scopes: Vec<ScopeOption>,
}

pub async fn show(store: &Store, owner: &Account) -> Result<AutomationsView, PageRefusal> {
    let farm = owner.farm();
    let mut db = store.read().await?;
    let flocks = farm_admin::flocks(&mut db, farm)
        .await?
        .into_iter()
        .filter(|f| !f.status.is_depleted())
        .map(|f| FlockOption {
            id: f.id.to_string(),
            name: f.name.into_string(),
            house: f.house.into_string(),
        })
        .collect();
    Ok(AutomationsView {
        automations: views(&mut db, farm).await?,
        flocks,
        scopes: Scope::ALL
            .iter()
            .map(|s| ScopeOption {
                value: s.as_str(),
                words: scope_words(*s),
            })
            .collect(),
    })
}

/// What an owner did to an automation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Done {
    Disabled,
    Enabled,
    Deleted,
}

/// The automation `raw_id` of the owner's farm. Another farm's automation
/// is not found, never touched.
pub async fn of_farm(
    store: &Store,
    owner: &Account,
    raw_id: &str,
) -> Result<AutomationId, PageRefusal> {
    let id = AutomationId::parse(raw_id).ok_or(PageRefusal::NotFound)?;
    automations::find(&mut store.read().await?, owner.farm(), id)
        .await?
        .ok_or(PageRefusal::NotFound)?;
    Ok(id)
}

/// Applies `action` (`disable`, or `disconnect` from the connected-apps
/// page; `enable`; `delete`) to the owner's farm's automation `id` (found
/// by [`of_farm`]).
pub async fn change(
    store: &Store,
    owner: &Account,
    id: AutomationId,
    action: &str,
    now: OffsetDateTime,
) -> Result<Done, PageRefusal> {
    let farm = owner.farm();
    let by = Actor::member(owner);
    match action {
        "disable" | "disconnect" => {
            automation_admin::set_disabled(store, farm, id, true, by, now).await?;
            Ok(Done::Disabled)
        }
        "enable" => {
            automation_admin::set_disabled(store, farm, id, false, by, now).await?;
            Ok(Done::Enabled)
        }
        "delete" => {
            automation_admin::delete(store, farm, id, by, now).await?;
            Ok(Done::Deleted)
        }
        _ => Err(invalid("Choose an action.")),
    }
}
