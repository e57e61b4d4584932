//! `/admin/members`: each member's role, flock restriction and state, and
//! what the owner can do to them: set the role and the flocks a worker sees
//! (one form, so a role change never silently changes what a worker sees),
//! sign them out everywhere (moves the credential epoch: every session and
//! token of theirs dies), require a password change, disable or enable. The
//! farm always keeps an enabled owner: disabling or demoting the last one is
//! a 409 page.

use std::collections::{HashMap, HashSet};

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};

use super::automations::AutomationView;
use super::{OwnerPost, RequireOwner, audit_action};
use crate::domain::{Access, FarmId, FlockId, Role, UserId};
use crate::http::error::{PageError, render};
use crate::http::form;
use crate::http::pages::apps::{NoticeQuery, notice};
use crate::http::pages::view::Nav;
use crate::oauth::params::Params;
use crate::state::AppState;
use crate::storage::Tx;
use crate::storage::farm_admin::{self, FlockAdminRow};
use crate::storage::members::{self, MemberChange, MemberOutcome};

struct MemberView {
    id: String,
    email: String,
    role: &'static str,
    /// `None`: sees the whole farm.
    flocks: Option<String>,
    /// Every flock of the farm, ticked when this member is limited to it.
    choices: Vec<FlockChoice>,
    disabled: bool,
    must_change_password: bool,
    is_you: bool,
}

struct FlockChoice {
    id: String,
    name: String,
    house: String,
    depleted: bool,
    ticked: bool,
}

#[derive(Template)]
#[template(path = "admin_members.html")]
struct MembersPage {
    nav: Nav,
    tab: &'static str,
    members: Vec<MemberView>,
    roles: [Role; 4],
    /// The farm's automations: not members, but they act with a role too.
    automations: Vec<AutomationView>,
    notice: Option<&'static str>,
}

pub async fn show(
    State(state): State<AppState>,
    RequireOwner(owner): RequireOwner,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let farm = owner.account.farm();
    let rows = members::list(&mut state.store.read().await?, farm).await?;
    let farm_flocks = farm_admin::flocks(&mut state.store.read().await?, farm).await?;
    let mut limited: HashMap<uuid::Uuid, HashSet<uuid::Uuid>> = HashMap::new();
    for (user, flock) in members::restricted_flocks(&mut state.store.read().await?, farm).await? {
        limited.entry(user).or_default().insert(flock);
    }
    let none = HashSet::new();
    let members = rows
        .iter()
        .map(|m| {
            let theirs = limited.get(&m.user_id).unwrap_or(&none);
            MemberView {
                id: m.user_id.to_string(),
                email: m.email.clone(),
                role: m.role.as_str(),
                flocks: m
                    .flock_restricted
                    .then(|| flock_names(&farm_flocks, theirs)),
                choices: farm_flocks
                    .iter()
                    .map(|f| choice(f, m.flock_restricted && theirs.contains(&f.id)))
                    .collect(),
                disabled: m.disabled,
                must_change_password: m.must_change_password,
                is_you: m.id() == owner.account.user_id(),
            }
        })
        .collect();
    Ok(render(&MembersPage {
        nav: Nav::new(&owner, "admin").await?,
        tab: "members",
        members,
        roles: Role::ALL,
        automations: super::automations::views(&state, farm).await?,
        notice: notice(query.done.as_deref()),
    }))
}

/// The names of the farm's flocks in `theirs`, or "no flocks".
pub(super) fn flock_names(farm_flocks: &[FlockAdminRow], theirs: &HashSet<uuid::Uuid>) -> String {
    let names: Vec<&str> = farm_flocks
        .iter()
        .filter(|f| theirs.contains(&f.id))
        .map(|f| f.name.as_str())
        .collect();
    if names.is_empty() {
        "no flocks".to_owned()
    } else {
        names.join(", ")
    }
}

fn choice(flock: &FlockAdminRow, ticked: bool) -> FlockChoice {
    FlockChoice {
        id: flock.id.to_string(),
        name: flock.name.to_string(),
        house: flock.house.to_string(),
        depleted: flock.status.is_depleted(),
        ticked,
    }
}

/// The fields of a member's forms. Read as pairs because a limited
/// worker's flocks arrive as one `flock` field per ticked box.
struct MemberForm<'a> {
    action: &'a str,
    role: &'a str,
    /// `all` or `some`.
    flocks: &'a str,
    ticked: Vec<&'a str>,
}

fn member_form(params: &Params) -> Result<MemberForm<'_>, PageError> {
    let one = |name| form::single(params, name);
    Ok(MemberForm {
        action: one("action")?,
        role: one("role")?,
        flocks: one("flocks")?,
        ticked: params.all("flock"),
    })
}

/// The role and flocks chosen on the form. A worker's flocks must be
/// chosen (all, or some), never assumed; another role needs no choice.
fn chosen_access(form: &MemberForm<'_>) -> Result<Access, PageError> {
    let role = Role::parse(form.role).map_err(PageError::BadRequest)?;
    let limited_to = match form.flocks {
        "all" => None,
        "some" => Some(
            form.ticked
                .iter()
                .map(|raw| FlockId::parse(raw).ok_or_else(unknown_flock))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        "" if !role.may_be_flock_restricted() => None,
        _ => {
            return Err(PageError::BadRequest(
                "Choose which flocks this worker sees: all flocks, or only some.".to_owned(),
            ));
        }
    };
    Access::new(role, limited_to).map_err(|err| PageError::BadRequest(err.to_string()))
}

fn unknown_flock() -> PageError {
    PageError::BadRequest("That flock is not on this farm.".to_owned())
}

pub async fn change(
    State(state): State<AppState>,
    Path(raw_id): Path<String>,
    OwnerPost { owner, form }: OwnerPost,
) -> Result<Response, PageError> {
    let form = member_form(form.params())?;
    let user = UserId::parse(&raw_id).ok_or(PageError::NotFound)?;
    let change = match form.action {
        "disable" => MemberChange::Disable,
        "enable" => MemberChange::Enable,
        "sign_out_everywhere" => MemberChange::SignOutEverywhere,
        "require_password_change" => MemberChange::RequirePasswordChange,
        "role" => MemberChange::SetAccess(chosen_access(&form)?),
        _ => return Err(PageError::BadRequest("Choose an action.".to_owned())),
    };
    let farm = owner.account.farm();
    let mut tx = state.store.write().await?;
    // Any outcome but `Done` returns early and drops the transaction.
    match members::change(&mut tx, farm, user, &change, state.clock.now()).await? {
        MemberOutcome::Done => {}
        MemberOutcome::NotFound => return Err(PageError::NotFound),
        MemberOutcome::UnknownFlock => return Err(unknown_flock()),
        MemberOutcome::LastOwner => {
            return Err(PageError::Conflict(
                "The farm needs at least one owner who can sign in. Make another member owner first."
                    .to_owned(),
            ));
        }
    }
    let (action, detail) = match &change {
        MemberChange::Disable => ("member_disabled", serde_json::json!({})),
        MemberChange::Enable => ("member_enabled", serde_json::json!({})),
        MemberChange::SignOutEverywhere => ("member_signed_out_everywhere", serde_json::json!({})),
        MemberChange::RequirePasswordChange => {
            ("member_must_change_password", serde_json::json!({}))
        }
        MemberChange::SetAccess(access) => (
            "member_role_changed",
            serde_json::json!({
                "role": access.role().as_str(),
                "flocks": flock_words(&mut tx, farm, access).await?,
            }),
        ),
    };
    audit_action(&mut tx, &state, &owner, Some(user), action, detail).await?;
    tx.commit().await?;
    // Signing oneself out everywhere ends this session too; an owner who
    // stepped down can no longer see this page.
    let is_me = user == owner.account.user_id();
    let target = match &change {
        MemberChange::SignOutEverywhere | MemberChange::Disable if is_me => "/login",
        MemberChange::SetAccess(access) if is_me && access.role() != Role::Owner => "/",
        _ => "/admin/members?done=member",
    };
    Ok(Redirect::to(target).into_response())
}

/// "all" or the names of the flocks a worker is limited to, for the log.
async fn flock_words(tx: &mut Tx, farm: FarmId, access: &Access) -> Result<String, PageError> {
    let Some(limited_to) = access.limited_to() else {
        return Ok("all".to_owned());
    };
    let names: Vec<String> = farm_admin::flocks(tx, farm)
        .await?
        .into_iter()
        .filter(|f| limited_to.contains(&FlockId(f.id)))
        .map(|f| f.name.into_string())
        .collect();
    Ok(names.join(", "))
}
