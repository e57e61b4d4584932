//! `/admin`: farm administration, for the farm's owners only.
//!
//! | page | file |
//! |---|---|
//! | `/admin`: every active grant on the farm, Disconnect, the connected-apps switch | [`apps`] |
//! | `/admin/members`: role, flock restriction, sign out everywhere, require a password change, disable/enable | [`members`] |
//! | `/admin/farm`: houses and flocks: add, rename, mark a flock depleted | [`records`] |
//! | `/admin/audit`: the audit log, newest first, paged and filtered | [`audit`] |
//!
//! [`RequireOwner`] lets owners through; anyone else signed in gets a 403
//! page (and never sees the links). Every action is a POST carrying the
//! session's CSRF token, behind the same-origin check of every page, and
//! is audited with who did it. An id naming something of another farm, or
//! nothing, is a 404 page.

pub mod apps;
pub mod audit;
pub mod members;
pub mod records;

use axum::Router;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::routing::{get, post};

use crate::admin::AdminError;
use crate::domain::{Role, UserId};
use crate::http::error::PageError;
use crate::http::session::{RequireUser, RequireUserRejection, SignedIn};
use crate::state::AppState;
use crate::storage::StoreError;
use crate::storage::audit::{self as audit_log, AuditEvent, AuditKind};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin", get(apps::show))
        .route("/admin/connected-apps", post(apps::switch))
        .route(
            "/admin/apps/{grant}/disconnect",
            get(apps::confirm).post(apps::disconnect),
        )
        .route("/admin/members", get(members::show))
        .route("/admin/members/{user}", post(members::change))
        .route("/admin/farm", get(records::show))
        .route("/admin/houses", post(records::add_house))
        .route("/admin/houses/{house}", post(records::rename_house))
        .route("/admin/flocks", post(records::add_flock))
        .route("/admin/flocks/{flock}", post(records::change_flock))
        .route("/admin/audit", get(audit::show))
}

/// A signed-in owner of their farm. Signed out: the sign-in redirect of
/// [`RequireUser`]; signed in with another role: 403.
pub struct RequireOwner(pub SignedIn);

impl FromRequestParts<AppState> for RequireOwner {
    type Rejection = RequireUserRejection;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let RequireUser(user) = RequireUser::from_request_parts(parts, state).await?;
        if user.account.role() != Role::Owner {
            return Err(RequireUserRejection::Page(PageError::Forbidden(
                "Only the farm's owner can use farm administration.".to_owned(),
            )));
        }
        Ok(Self(user))
    }
}

/// An admin-layer refusal as a page: a refused input is 400 with its
/// reason, an id of nothing on this farm is 404.
fn page_error(err: AdminError) -> PageError {
    match err {
        AdminError::Refused(reason) => PageError::BadRequest(reason),
        AdminError::Store(StoreError::NotFound) => PageError::NotFound,
        other => PageError::Internal(other.to_string()),
    }
}

/// Audits an owner's action. `about` is the member the action concerns
/// (the owner themself when it concerns no member).
async fn audit_action(
    state: &AppState,
    owner: &SignedIn,
    about: Option<UserId>,
    action: &str,
    mut detail: serde_json::Value,
) -> Result<(), PageError> {
    if let Some(object) = detail.as_object_mut() {
        object.insert("action".into(), action.into());
        object.insert("by".into(), owner.account.email.clone().into());
    }
    let mut event = AuditEvent::new(AuditKind::AdminAction);
    event.farm = Some(owner.account.farm());
    event.user = Some(about.unwrap_or(owner.account.user_id()));
    event.detail = detail;
    audit_log::record(&state.store, &event, state.clock.now()).await?;
    Ok(())
}
