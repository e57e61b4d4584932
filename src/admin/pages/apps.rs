//! Connected apps on the pages: a person's own (`/account/apps`) and every
//! one of the farm's with the farm's switch (`/admin`), and the one way a
//! page disconnects one, [`crate::admin::apps::disconnect`].
//!
//! Which grants a page reaches is its [`Reach`]: a grant id that is not
//! one of them (another member's, another farm's, revoked, or unknown) is
//! [`PageRefusal::NotFound`], so the answer does not tell a grant of
//! someone else from no grant.

use time::OffsetDateTime;

use super::automations::{self, AutomationView};
use super::words::AppView;
use super::{OwnerAction, PageRefusal, audit_action};
use crate::admin::apps::{self as app_admin, Actor};
use crate::domain::GrantId;
use crate::storage::connected_apps::{self, AppFilter, ConnectedApp};
use crate::storage::users::Account;
use crate::storage::{Store, farms};

/// Whose active grants a page reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The signed-in person's own.
    Own,
    /// Every one of the farm's (its owner's pages).
    Farm,
}

impl Reach {
    fn filter(self, account: &Account) -> AppFilter<'static> {
        match self {
            Self::Own => AppFilter {
                user: Some(account.user_id()),
                ..AppFilter::default()
            },
            Self::Farm => AppFilter {
                farm: Some(account.farm()),
                ..AppFilter::default()
            },
        }
    }

    fn reaches(self, account: &Account, app: &ConnectedApp) -> bool {
        match self {
            Self::Own => app.user() == account.user_id(),
            Self::Farm => app.farm() == account.farm(),
        }
    }
}

/// The apps `reach` shows `account`.
async fn list(store: &Store, account: &Account, reach: Reach) -> Result<Vec<AppView>, PageRefusal> {
    let filter = reach.filter(account);
    let apps = connected_apps::list(&mut store.read().await?, &filter).await?;
    Ok(apps.iter().map(AppView::from_app).collect())
}

/// What `/account/apps` shows.
pub struct OwnAppsView {
    pub apps: Vec<AppView>,
    /// The farm's switch: off, every app is refused.
    pub farm_apps_enabled: bool,
}

pub async fn own(store: &Store, person: &Account) -> Result<OwnAppsView, PageRefusal> {
    let apps = list(store, person, Reach::Own).await?;
    let farm_apps_enabled = farms::find(&mut store.read().await?, person.farm())
        .await?
        .is_none_or(|f| f.connected_apps_enabled);
    Ok(OwnAppsView {
        apps,
        farm_apps_enabled,
    })
}

/// What `/admin` shows.
pub struct FarmAppsView {
    pub farm_name: String,
    pub apps_enabled: bool,
    pub apps: Vec<AppView>,
    pub automations: Vec<AutomationView>,
}

pub async fn farm(store: &Store, owner: &Account) -> Result<FarmAppsView, PageRefusal> {
    let farm = farms::find(&mut store.read().await?, owner.farm())
        .await?
        .ok_or(PageRefusal::NotFound)?;
    let apps = list(store, owner, Reach::Farm).await?;
    Ok(FarmAppsView {
        farm_name: farm.name.into_string(),
        apps_enabled: farm.connected_apps_enabled,
        apps,
        automations: automations::views(&mut store.read().await?, owner.farm()).await?,
    })
}

/// Turns the owner's farm's connected apps on or off, audited.
pub async fn switch(
    store: &Store,
    owner: &Account,
    enabled: bool,
    now: OffsetDateTime,
) -> Result<(), PageRefusal> {
    let mut tx = store.write().await?;
    farms::set_connected_apps(&mut tx, &owner.farm_slug, enabled).await?;
    let action = if enabled {
        "connected_apps_on"
    } else {
        "connected_apps_off"
    };
    let done = OwnerAction::new(action, serde_json::json!({}));
    audit_action(&mut tx, owner, done, now).await?;
    tx.commit().await?;
    Ok(())
}

/// The grant `raw_id`, if `reach` reaches it.
async fn reached(
    store: &Store,
    account: &Account,
    reach: Reach,
    raw_id: &str,
) -> Result<ConnectedApp, PageRefusal> {
    let id = GrantId::parse(raw_id).ok_or(PageRefusal::NotFound)?;
    connected_apps::find_active(&mut store.read().await?, id)
        .await?
        .filter(|app| reach.reaches(account, app))
        .ok_or(PageRefusal::NotFound)
}

/// What the confirmation step before a disconnect shows.
pub struct ConfirmView {
    pub app: AppView,
    /// Who would approve it again: "you" or the member's email.
    pub who: String,
}

pub async fn confirm(
    store: &Store,
    account: &Account,
    reach: Reach,
    raw_id: &str,
) -> Result<ConfirmView, PageRefusal> {
    let app = reached(store, account, reach, raw_id).await?;
    let who = if app.user() == account.user_id() {
        "you".to_owned()
    } else {
        app.email.clone()
    };
    Ok(ConfirmView {
        app: AppView::from_app(&app),
        who,
    })
}

/// Disconnects the grant `raw_id`, if `reach` reaches it.
pub async fn disconnect(
    store: &Store,
    account: &Account,
    reach: Reach,
    raw_id: &str,
    now: OffsetDateTime,
) -> Result<(), PageRefusal> {
    let app = reached(store, account, reach, raw_id).await?;
    app_admin::disconnect(store, &app, Actor::member(account), now).await?;
    Ok(())
}
