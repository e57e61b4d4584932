//! Connected apps from the operator's side and the one way any grant is
//! disconnected: by the person who approved it, by their farm's owner, or
//! by the operator (`coop admin apps …`).
//!
//! Disconnecting revokes the grant; every code, refresh token and access
//! token it issued is checked against the grant on use, so they all stop
//! at once, on every replica. Each disconnect is audited with the client
//! and grant, and who did it.

use time::OffsetDateTime;

use super::{AdminError, refused};
use crate::domain::{Email, GrantId, UserId};
use crate::storage::audit::{self, AuditEvent, AuditKind};
use crate::storage::connected_apps::{self, AppFilter, ConnectedApp};
use crate::storage::users::Account;
use crate::storage::{Store, StoreError, grants};

/// Who disconnects.
#[derive(Clone, Copy, Debug)]
pub enum Actor<'a> {
    /// A signed-in member (the app's own user, or their farm's owner).
    Member { id: UserId, email: &'a str },
    /// The operator, from the command line.
    Operator,
}

impl<'a> Actor<'a> {
    /// A signed-in member acting on their own or their farm's behalf.
    pub fn member(account: &'a Account) -> Self {
        Self::Member {
            id: account.user_id(),
            email: &account.email,
        }
    }

    /// The member who acted, if a member did.
    pub fn user(&self) -> Option<UserId> {
        match self {
            Self::Member { id, .. } => Some(*id),
            Self::Operator => None,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Self::Member { email, .. } => (*email).to_owned(),
            Self::Operator => "operator".to_owned(),
        }
    }
}

/// Ends `app`'s grant and audits it, in one transaction. Returns whether
/// it was still active (a second, racing disconnect changes nothing and
/// audits nothing).
pub async fn disconnect(
    store: &Store,
    app: &ConnectedApp,
    by: Actor<'_>,
    now: OffsetDateTime,
) -> Result<bool, StoreError> {
    let mut tx = store.write().await?;
    let ended = grants::revoke(&mut tx, app.grant(), "disconnected", now).await?;
    if ended {
        let mut event = AuditEvent::new(AuditKind::Disconnect);
        event.farm = Some(app.farm());
        // The entry is about the member whose app it was; `by` says who acted.
        event.user = Some(app.user());
        event.client_id = Some(&app.client_id);
        event.grant = Some(app.grant());
        event.detail = serde_json::json!({ "by": by.describe() });
        audit::record(&mut tx, &event, now).await?;
        tx.commit().await?;
    }
    Ok(ended)
}

/// `coop admin apps list [--farm SLUG] [--user EMAIL]`.
pub async fn list(
    store: &Store,
    farm_slug: Option<&str>,
    email: Option<&str>,
) -> Result<Vec<ConnectedApp>, AdminError> {
    let farm = match farm_slug {
        Some(slug) => Some(super::farm(store, slug).await?.farm_id()),
        None => None,
    };
    let email = email.map(Email::parse).transpose().map_err(refused)?;
    let filter = AppFilter {
        farm,
        email: email.as_ref().map(Email::as_str),
        ..AppFilter::default()
    };
    Ok(connected_apps::list(&mut store.read().await?, &filter).await?)
}

/// `coop admin apps disconnect GRANT_ID`: returns the app disconnected.
pub async fn disconnect_by_id(
    store: &Store,
    raw_id: &str,
    now: OffsetDateTime,
) -> Result<ConnectedApp, AdminError> {
    let id =
        GrantId::parse(raw_id).ok_or_else(|| refused(format!("{raw_id:?} is not a grant id")))?;
    let app = connected_apps::find_active(&mut store.read().await?, id)
        .await?
        .ok_or_else(|| refused(format!("no active grant has the id {id}")))?;
    if !disconnect(store, &app, Actor::Operator, now).await? {
        return Err(refused(format!("no active grant has the id {id}")));
    }
    Ok(app)
}

/// One line of `coop admin apps list`, tab-separated: grant id, user,
/// farm, client name, client id, scopes (comma-separated), last used
/// (RFC 3339, or `never`).
pub fn list_line(app: &ConnectedApp) -> String {
    let last_used = super::rfc3339_or_never(app.last_used_at);
    let scopes = app.scope.join(",");
    format!(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}",
        app.grant_id,
        app.email,
        app.farm_slug,
        app.client_name,
        app.client_id,
        if scopes.is_empty() { "-" } else { &scopes },
        last_used
    )
}
