//! `/admin/automations`: the farm's automations (machine clients that use
//! the client credentials grant), and the form that adds one.
//!
//! Adding one shows its `client_id` and, for a secret, the secret, on the
//! answer page only: Coop keeps just its hash, so it is never shown again.
//! Disable, enable and delete are POSTs to `/admin/automations/{id}`; the
//! connected-apps page's Disconnect for an automation is its Disable. The
//! rules (never an owner, a worker's flocks, at least one scope, a usable
//! credential) are [`crate::admin::automations`]'s, shared with the
//! command line.

use std::collections::{HashMap, HashSet};

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};

use super::members::flock_names;
use super::{OwnerPost, RequireOwner, page_error};
use crate::admin::apps::Actor;
use crate::admin::automations::{
    self as automation_admin, AutomationInput, CredentialInput, ROLES,
};
use crate::domain::{AutomationAuth, AutomationId, FarmId, FlockId, Role, Scope, ScopeSet};
use crate::http::error::{PageError, render};
use crate::http::form;
use crate::http::pages::apps::NoticeQuery;
use crate::http::pages::view::{Nav, last_used, scope_words, scopes_in_words};
use crate::http::session::SignedIn;
use crate::secrets::ClientSecret;
use crate::state::AppState;
use crate::storage::automations::{self, AutomationRow};
use crate::storage::farm_admin::{self, FlockAdminRow};

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
    pub fn new(row: &AutomationRow, flocks: Option<String>) -> Self {
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
pub async fn views(state: &AppState, farm: FarmId) -> Result<Vec<AutomationView>, PageError> {
    let rows = automations::list(&mut state.store.read().await?, farm).await?;
    let farm_flocks = farm_admin::flocks(&mut state.store.read().await?, farm).await?;
    let mut limited: HashMap<uuid::Uuid, HashSet<uuid::Uuid>> = HashMap::new();
    for (automation, flock) in
        automations::restricted_flocks(&mut state.store.read().await?, farm).await?
    {
        limited.entry(automation).or_default().insert(flock);
    }
    Ok(rows
        .iter()
        .map(|row| {
            let flocks = row.flock_restricted.then(|| {
                let none = HashSet::new();
                flock_names(&farm_flocks, limited.get(&row.id).unwrap_or(&none))
            });
            AutomationView::new(row, flocks)
        })
        .collect())
}

struct FlockChoice {
    id: String,
    name: String,
    house: String,
}

struct ScopeChoice {
    value: &'static str,
    words: &'static str,
}

/// What the add form showed to its sender once: the new automation's id
/// and secret.
struct CreatedView {
    name: String,
    client_id: String,
    secret: Option<ClientSecret>,
}

#[derive(Template)]
#[template(path = "admin_automations.html")]
struct AutomationsPage {
    nav: Nav,
    tab: &'static str,
    automations: Vec<AutomationView>,
    roles: [Role; 3],
    flocks: Vec<FlockChoice>,
    scopes: Vec<ScopeChoice>,
    created: Option<CreatedView>,
    notice: Option<&'static str>,
    token_endpoint: String,
}

fn notice(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "disabled" => "The automation is disabled. Its tokens are refused from their next call.",
        "enabled" => "The automation is enabled. It must ask for a new token.",
        "deleted" => "The automation is deleted.",
        _ => return None,
    })
}

async fn page(
    state: &AppState,
    owner: &SignedIn,
    created: Option<CreatedView>,
    notice: Option<&'static str>,
) -> Result<Response, PageError> {
    let farm = owner.account.farm();
    let flocks = farm_admin::flocks(&mut state.store.read().await?, farm)
        .await?
        .into_iter()
        .filter(|f| !f.status.is_depleted())
        .map(|f: FlockAdminRow| FlockChoice {
            id: f.id.to_string(),
            name: f.name.into_string(),
            house: f.house.into_string(),
        })
        .collect();
    Ok(render(&AutomationsPage {
        nav: Nav::new(owner, "admin").await?,
        tab: "automations",
        automations: views(state, farm).await?,
        roles: ROLES,
        flocks,
        scopes: Scope::ALL
            .iter()
            .map(|s| ScopeChoice {
                value: s.as_str(),
                words: scope_words(*s),
            })
            .collect(),
        created,
        notice,
        token_endpoint: state.issuer.url("/token"),
    }))
}

pub async fn show(
    State(state): State<AppState>,
    RequireOwner(owner): RequireOwner,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    page(&state, &owner, None, notice(query.done.as_deref())).await
}

pub async fn add(
    State(state): State<AppState>,
    OwnerPost { owner, form }: OwnerPost,
) -> Result<Response, PageError> {
    let params = form.params();
    let one = |name| form::single(params, name);
    let flocks = match one("flocks")? {
        "some" => Some(
            params
                .all("flock")
                .iter()
                .map(|raw| {
                    FlockId::parse(raw).ok_or_else(|| {
                        PageError::BadRequest("That flock is not on this farm.".to_owned())
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        _ => None,
    };
    let scopes = ScopeSet::from_stored(&params.all("scope").join(" ")).to_wire();
    let credential = match one("credential")? {
        "secret" => CredentialInput::Secret,
        "jwks" => CredentialInput::Jwks(one("jwks")?),
        "jwks_uri" => CredentialInput::JwksUri(one("jwks_uri")?),
        _ => {
            return Err(PageError::BadRequest(
                "Choose how the automation proves who it is.".to_owned(),
            ));
        }
    };
    let input = AutomationInput {
        name: one("name")?,
        role: one("role")?,
        flocks,
        scopes: &scopes,
        credential,
    };
    let actor = Actor::Member {
        id: owner.account.user_id(),
        email: &owner.account.email,
    };
    let created = automation_admin::add(
        &state.store,
        owner.account.farm(),
        &input,
        actor,
        state.clock.now(),
    )
    .await
    .map_err(page_error)?;
    let shown = CreatedView {
        name: input.name.trim().to_owned(),
        client_id: created.client_id,
        secret: created.secret,
    };
    let mut response = page(&state, &owner, Some(shown), None).await?;
    // The secret is on this page only: no cache may keep it.
    response.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    Ok(response)
}

pub async fn change(
    State(state): State<AppState>,
    Path(raw_id): Path<String>,
    OwnerPost { owner, form }: OwnerPost,
) -> Result<Response, PageError> {
    let id = AutomationId::parse(&raw_id).ok_or(PageError::NotFound)?;
    let farm = owner.account.farm();
    // Another farm's automation is not found, never touched.
    automations::find(&mut state.store.read().await?, farm, id)
        .await?
        .ok_or(PageError::NotFound)?;
    let actor = Actor::Member {
        id: owner.account.user_id(),
        email: &owner.account.email,
    };
    let now = state.clock.now();
    let action = form::single(form.params(), "action")?;
    let (done, back) = match action {
        "disable" | "disconnect" => {
            automation_admin::set_disabled(&state.store, farm, id, true, actor, now)
                .await
                .map_err(page_error)?;
            ("disabled", form::single(form.params(), "back")?)
        }
        "enable" => {
            automation_admin::set_disabled(&state.store, farm, id, false, actor, now)
                .await
                .map_err(page_error)?;
            ("enabled", "")
        }
        "delete" => {
            automation_admin::delete(&state.store, farm, id, actor, now)
                .await
                .map_err(page_error)?;
            ("deleted", "")
        }
        _ => return Err(PageError::BadRequest("Choose an action.".to_owned())),
    };
    // Disconnect on the connected-apps page goes back there.
    let target = if back == "apps" {
        "/admin?done=disconnected".to_owned()
    } else {
        format!("/admin/automations?done={done}")
    };
    Ok(Redirect::to(&target).into_response())
}
