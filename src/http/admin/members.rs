//! `/admin/members`: each member's role, flock restriction and state, and
//! the forms that change them, one member at a time. What a change does
//! and refuses (the farm always keeps an enabled owner: disabling or
//! demoting the last one is a 409 page) is
//! [`crate::admin::pages::members`]'s.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};

use super::{Frame, OwnerPage, OwnerPost};
use crate::admin::pages::automations::AutomationView;
use crate::admin::pages::members::{self, After, MemberForm, MemberView};
use crate::domain::Role;
use crate::http::error::{PageError, render};
use crate::http::form;
use crate::http::pages::apps::notice;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "admin_members.html")]
struct MembersPage {
    frame: Frame,
    members: Vec<MemberView>,
    roles: [Role; 4],
    /// The farm's automations: not members, but they act with a role too.
    automations: Vec<AutomationView>,
}

pub async fn show(State(state): State<AppState>, page: OwnerPage) -> Result<Response, PageError> {
    let view = members::show(&state.store, &page.owner.account).await?;
    Ok(render(&MembersPage {
        frame: page.frame("members", notice),
        members: view.members,
        roles: Role::ALL,
        automations: view.automations,
    }))
}

pub async fn change(
    State(state): State<AppState>,
    Path(raw_id): Path<String>,
    OwnerPost { owner, form }: OwnerPost,
) -> Result<Response, PageError> {
    let params = form.params();
    let [action, role, flocks] = form::singles(params, ["action", "role", "flocks"])?;
    let input = MemberForm {
        action,
        role,
        flocks,
        ticked: params.all("flock"),
    };
    let now = state.clock.now();
    let target = match members::change(&state.store, &owner.account, &raw_id, &input, now).await? {
        After::SignedOut => "/login",
        After::NoLongerOwner => "/",
        After::Updated => "/admin/members?done=member",
    };
    Ok(Redirect::to(target).into_response())
}
