//! `/admin/members`: each member's role, flock restriction and state, and
//! the forms that change them, one member at a time. What a change does
//! and refuses (the farm always keeps an enabled owner: disabling or
//! demoting the last one is a 409 page) is
//! [`crate::admin::pages::members`]'s.
//!
//! "Reset password" (`/admin/members/{id}/password-reset`) answers with
//! the members page showing the new link once, to copy and hand to the
//! member: Coop keeps only its hash ([`crate::admin::pages::reset`]).

use askama::Template;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};

use super::{Frame, OwnerPage, OwnerPost};
use crate::admin::pages::automations::AutomationView;
use crate::admin::pages::members::{self, After, MemberForm, MemberView};
use crate::admin::pages::reset::{self, LinkView};
use crate::domain::Role;
use crate::http::error::{PageError, render};
use crate::http::form;
use crate::http::pages::apps::notice;
use crate::http::pages::view::Nav;
use crate::http::session::SignedIn;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "admin_members.html")]
struct MembersPage {
    frame: Frame,
    members: Vec<MemberView>,
    roles: [Role; 4],
    /// The farm's automations: not members, but they act with a role too.
    automations: Vec<AutomationView>,
    /// A password reset link just made, shown this once.
    reset_link: Option<LinkView>,
}

/// The page in `frame`, with the reset link just made shown once.
async fn members_page(
    state: &AppState,
    owner: &SignedIn,
    frame: Frame,
    reset_link: Option<LinkView>,
) -> Result<Response, PageError> {
    let view = members::show(&state.store, &owner.account).await?;
    Ok(render(&MembersPage {
        frame,
        members: view.members,
        roles: Role::ALL,
        automations: view.automations,
        reset_link,
    }))
}

pub async fn show(State(state): State<AppState>, page: OwnerPage) -> Result<Response, PageError> {
    let (owner, frame) = page.split("members", notice);
    members_page(&state, &owner, frame, None).await
}

/// Makes a reset link for the member and shows it once (the page answers
/// `no-store`, like every page).
pub async fn reset_link(
    State(state): State<AppState>,
    Path(raw_id): Path<String>,
    OwnerPost { owner, .. }: OwnerPost,
) -> Result<Response, PageError> {
    let now = state.clock.now();
    let link = reset::make_link(&state.store, &owner.account, &raw_id, &state.issuer, now).await?;
    let frame = Frame {
        nav: Nav::new(&owner, "admin").await?,
        tab: "members",
        notice: None,
    };
    members_page(&state, &owner, frame, Some(link)).await
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
