//! `/admin/members`: each member's role, flock restriction and state, and
//! what the owner can do to them: change the role, sign them out
//! everywhere (moves the credential epoch: every session and token of
//! theirs dies), require a password change, disable or enable. The farm
//! always keeps an enabled owner: disabling or demoting the last one is a
//! 409 page.

use std::collections::HashMap;

use askama::Template;
use axum::Form;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::{RequireOwner, audit_action};
use crate::domain::{Role, UserId};
use crate::http::error::{PageError, render};
use crate::http::pages::apps::{NoticeQuery, notice};
use crate::http::pages::view::Nav;
use crate::http::session;
use crate::state::AppState;
use crate::storage::members::{self, MemberChange, MemberOutcome};

struct MemberView {
    id: String,
    email: String,
    role: &'static str,
    /// `None`: sees the whole farm.
    flocks: Option<String>,
    disabled: bool,
    must_change_password: bool,
    is_you: bool,
}

#[derive(Template)]
#[template(path = "admin_members.html")]
struct MembersPage {
    nav: Nav,
    tab: &'static str,
    members: Vec<MemberView>,
    roles: [Role; 4],
    notice: Option<&'static str>,
}

pub async fn show(
    State(state): State<AppState>,
    RequireOwner(owner): RequireOwner,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let farm = owner.account.farm();
    let rows = members::list(&state.store, farm).await?;
    let mut flocks: HashMap<uuid::Uuid, Vec<String>> = HashMap::new();
    for (user, name) in members::restricted_flocks(&state.store, farm).await? {
        flocks.entry(user).or_default().push(name);
    }
    let members = rows
        .iter()
        .map(|m| MemberView {
            id: m.user_id.to_string(),
            email: m.email.clone(),
            role: m.role().as_str(),
            flocks: m.flock_restricted.then(|| {
                let names = flocks.get(&m.user_id).cloned().unwrap_or_default();
                if names.is_empty() {
                    "no flocks".to_owned()
                } else {
                    names.join(", ")
                }
            }),
            disabled: m.disabled,
            must_change_password: m.must_change_password,
            is_you: m.id() == owner.account.user_id(),
        })
        .collect();
    Ok(render(&MembersPage {
        nav: Nav::new(&owner, "admin").await?,
        tab: "members",
        members,
        roles: Role::ALL,
        notice: notice(query.done.as_deref()),
    }))
}

#[derive(Deserialize)]
pub struct MemberForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    action: String,
    #[serde(default)]
    role: String,
}

pub async fn change(
    State(state): State<AppState>,
    RequireOwner(owner): RequireOwner,
    Path(raw_id): Path<String>,
    Form(form): Form<MemberForm>,
) -> Result<Response, PageError> {
    session::verify_csrf(&owner.session, &form.csrf).await?;
    let user = UserId::parse(&raw_id).ok_or(PageError::NotFound)?;
    let change = match form.action.as_str() {
        "disable" => MemberChange::Disable,
        "enable" => MemberChange::Enable,
        "sign_out_everywhere" => MemberChange::SignOutEverywhere,
        "require_password_change" => MemberChange::RequirePasswordChange,
        "role" => MemberChange::SetRole(Role::parse(&form.role).map_err(PageError::BadRequest)?),
        _ => return Err(PageError::BadRequest("Choose an action.".to_owned())),
    };
    let farm = owner.account.farm();
    match members::change(&state.store, farm, user, change, state.clock.now()).await? {
        MemberOutcome::Done => {}
        MemberOutcome::NotFound => return Err(PageError::NotFound),
        MemberOutcome::LastOwner => {
            return Err(PageError::Conflict(
                "The farm needs at least one owner who can sign in. Make another member owner first."
                    .to_owned(),
            ));
        }
    }
    let detail = match change {
        MemberChange::SetRole(role) => serde_json::json!({ "role": role.as_str() }),
        _ => serde_json::json!({}),
    };
    let action = match change {
        MemberChange::Disable => "member_disabled",
        MemberChange::Enable => "member_enabled",
        MemberChange::SignOutEverywhere => "member_signed_out_everywhere",
        MemberChange::RequirePasswordChange => "member_must_change_password",
        MemberChange::SetRole(_) => "member_role_changed",
    };
    audit_action(&state, &owner, Some(user), action, detail).await?;
    // Signing oneself out everywhere ends this session too; an owner who
    // stepped down can no longer see this page.
    let target = match change {
        MemberChange::SignOutEverywhere | MemberChange::Disable
            if user == owner.account.user_id() =>
        {
            "/login"
        }
        MemberChange::SetRole(role) if user == owner.account.user_id() && role != Role::Owner => {
            "/"
        }
        _ => "/admin/members?done=member",
    };
    Ok(Redirect::to(target).into_response())
}
