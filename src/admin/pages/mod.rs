//! What the owner's `/admin` pages and a person's `/account` pages load,
//! decide and change, with no HTTP in sight: each entry point takes the
//! store, the signed-in account, the input as the form sent it and the
//! time, and returns a view-model the page renders as is, or a typed
//! outcome. The handlers in `http::admin` and `http::pages` only read the
//! request before, and render after.
//!
//! | page | file |
//! |---|---|
//! | `/admin` and `/account/apps`: connected apps, Disconnect, the farm's switch | [`apps`] |
//! | `/admin/members` | [`members`]; a member's password reset link: [`reset`] |
//! | `/admin/automations` | [`automations`] |
//! | `/admin/farm`: houses and flocks | [`farm`] |
//! | `/admin/audit` | [`audit`] |
//! | `/account/password` | [`password`] |
//! | `/`: the start page | [`home`] |
//!
//! What the pages share: a refusal ([`PageRefusal`]), the audit row of an
//! owner's action ([`audit_action`]), and the plain words of [`words`].

pub mod apps;
pub mod audit;
pub mod automations;
pub mod farm;
pub mod flocks;
pub mod home;
pub mod members;
pub mod password;
pub mod reset;
pub mod words;

use time::OffsetDateTime;

use super::AdminError;
use crate::domain::UserId;
use crate::identity::SignInError;
use crate::storage::audit::{self as audit_log, AuditEvent, AuditKind};
use crate::storage::users::Account;
use crate::storage::{StoreError, Tx};

/// Why a page's action or view stopped short; each becomes one kind of
/// page in `http::error`.
#[derive(Debug, thiserror::Error)]
pub enum PageRefusal {
    /// The input was refused; the message is shown as is (400).
    #[error("{0}")]
    Invalid(String),
    /// An id that names nothing of this farm or person (404).
    #[error("not found")]
    NotFound,
    /// The action would break a rule of the farm (409).
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    SignIn(#[from] SignInError),
    #[error("{0}")]
    Internal(String),
}

pub(crate) fn invalid(message: impl Into<String>) -> PageRefusal {
    PageRefusal::Invalid(message.into())
}

/// An admin-layer refusal on a page: a refused input is shown with its
/// reason, an id of nothing on this farm is not found.
impl From<AdminError> for PageRefusal {
    fn from(err: AdminError) -> Self {
        match err {
            AdminError::Refused(reason) => Self::Invalid(reason),
            AdminError::Store(StoreError::NotFound) => Self::NotFound,
            AdminError::Store(err) => Self::Store(err),
            other => Self::Internal(other.to_string()),
        }
    }
}

/// One owner's action for the audit log: `about` is the member the action
/// concerns (the owner themself when it concerns no member).
pub(crate) struct OwnerAction {
    pub about: Option<UserId>,
    pub action: &'static str,
    pub detail: serde_json::Value,
}

impl OwnerAction {
    pub(crate) fn new(action: &'static str, detail: serde_json::Value) -> Self {
        Self {
            about: None,
            action,
            detail,
        }
    }
}

/// Audits an owner's action in the transaction that made it, so the two
/// commit together.
pub(crate) async fn audit_action(
    tx: &mut Tx,
    owner: &Account,
    done: OwnerAction,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    let mut detail = done.detail;
    if let Some(object) = detail.as_object_mut() {
        object.insert("action".into(), done.action.into());
        object.insert("by".into(), owner.email.clone().into());
    }
    let mut event = AuditEvent::new(AuditKind::AdminAction);
    event.farm = Some(owner.farm());
    event.user = Some(done.about.unwrap_or(owner.user_id()));
    event.detail = detail;
    audit_log::record(tx, &event, now).await
}
