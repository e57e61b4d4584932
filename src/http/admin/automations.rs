//! `/admin/automations`: the farm's automations (machine clients that use
//! the client credentials grant), and the form that adds one.
//!
//! Adding one shows its `client_id` and, for a secret, the secret, on the
//! answer page only: Coop keeps just its hash, so it is never shown again.
//! Disable, enable and delete are POSTs to `/admin/automations/{id}`; the
//! connected-apps page's Disconnect for an automation is its Disable. The
//! rules (never an owner, a worker's flocks, at least one scope, a usable
//! credential) are [`crate::admin::automations`]'s, shared with the
//! command line; what the page shows is [`crate::admin::pages::automations`].

use askama::Template;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};

use super::{Frame, OwnerPage, OwnerPost};
use crate::admin::apps::Actor;
use crate::admin::automations::{
    self as automation_admin, AutomationInput, CredentialInput, ROLES,
};
use crate::admin::pages::automations::{self, AutomationView, Done, FlockOption, ScopeOption};
use crate::admin::pages::{PageRefusal, flocks};
use crate::domain::{Role, ScopeSet};
use crate::http::error::{PageError, render};
use crate::http::form;
use crate::http::pages::view::Nav;
use crate::http::session::SignedIn;
use crate::secrets::ClientSecret;
use crate::state::AppState;

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
    frame: Frame,
    automations: Vec<AutomationView>,
    roles: [Role; 3],
    flocks: Vec<FlockOption>,
    scopes: Vec<ScopeOption>,
    created: Option<CreatedView>,
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

/// The page in `frame`, with the automation just added shown once.
async fn automations_page(
    state: &AppState,
    owner: &SignedIn,
    frame: Frame,
    created: Option<CreatedView>,
) -> Result<Response, PageError> {
    let view = automations::show(&state.store, &owner.account).await?;
    Ok(render(&AutomationsPage {
        frame,
        automations: view.automations,
        roles: ROLES,
        flocks: view.flocks,
        scopes: view.scopes,
        created,
        token_endpoint: state.issuer.url("/token"),
    }))
}

pub async fn show(State(state): State<AppState>, page: OwnerPage) -> Result<Response, PageError> {
    let (owner, frame) = page.split("automations", notice);
    automations_page(&state, &owner, frame, None).await
}

pub async fn add(
    State(state): State<AppState>,
    OwnerPost { owner, form }: OwnerPost,
) -> Result<Response, PageError> {
    let params = form.params();
    let one = |name| form::single(params, name);
    let flocks = match one("flocks")? {
        "some" => Some(flocks::chosen(&params.all("flock"))?),
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
    let actor = Actor::member(&owner.account);
    let created = automation_admin::add(
        &state.store,
        owner.account.farm(),
        &input,
        actor,
        state.clock.now(),
    )
    .await
    .map_err(PageRefusal::from)?;
    let shown = CreatedView {
        name: input.name.trim().to_owned(),
        client_id: created.client_id,
        secret: created.secret,
    };
    let frame = Frame {
        nav: Nav::new(&owner, "admin").await?,
        tab: "automations",
        notice: None,
    };
    let mut response = automations_page(&state, &owner, frame, Some(shown)).await?;
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
    let id = automations::of_farm(&state.store, &owner.account, &raw_id).await?;
    let action = form::single(form.params(), "action")?;
    let now = state.clock.now();
    let target = match automations::change(&state.store, &owner.account, id, action, now).await? {
        // Disconnect on the connected-apps page goes back there.
        Done::Disabled if form::single(form.params(), "back")? == "apps" => {
            "/admin?done=disconnected"
        }
        Done::Disabled => "/admin/automations?done=disabled",
        Done::Enabled => "/admin/automations?done=enabled",
        Done::Deleted => "/admin/automations?done=deleted",
    };
    Ok(Redirect::to(target).into_response())
}
