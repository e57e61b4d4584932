//! `coop admin automation`: a farm's machine clients (the
//! `client_credentials` grant, [`crate::admin::automations`]): add one
//! with a generated secret or a key set, list, disable, enable, delete.

use clap::Subcommand;
use time::OffsetDateTime;

use crate::admin::apps::Actor;
use crate::admin::automations::{self, AutomationInput, CredentialInput};
use crate::admin::{self, AdminError};
use crate::storage::Store;

#[derive(Subcommand)]
pub(crate) enum AutomationCommand {
    /// Add an automation to a farm; prints its client_id (and, with
    /// --secret, its client secret: shown this once, stored only hashed).
    #[command(group(clap::ArgGroup::new("credential").required(true)))]
    Add {
        #[arg(long)]
        farm: String,
        #[arg(long)]
        name: String,
        /// manager, worker or viewer (never owner)
        #[arg(long)]
        role: String,
        /// Limit a worker to these flocks (comma-separated names).
        #[arg(long)]
        flocks: Option<String>,
        /// The scopes it may hold: farm:read, daily-entries:write (comma-separated).
        #[arg(long)]
        scope: String,
        /// Authenticate with a generated client secret (client_secret_basic).
        #[arg(long, group = "credential")]
        secret: bool,
        /// Authenticate with private_key_jwt against this key set (a JWKS file).
        #[arg(long, group = "credential", value_name = "PATH")]
        jwks_file: Option<String>,
        /// Authenticate with private_key_jwt against the key set at this https URL.
        #[arg(long, group = "credential", value_name = "URL")]
        jwks_uri: Option<String>,
    },
    /// One line per automation of the farm: client_id, name, role, flocks,
    /// scopes, credential, state, last used.
    List {
        #[arg(long)]
        farm: String,
    },
    /// Refuse its tokens from their next call; they stay refused when it is
    /// enabled again.
    Disable {
        client_id: String,
    },
    Enable {
        client_id: String,
    },
    Delete {
        client_id: String,
    },
}

pub(crate) async fn run(
    store: &Store,
    command: AutomationCommand,
    now: OffsetDateTime,
) -> Result<(), AdminError> {
    match command {
        AutomationCommand::Add {
            farm,
            name,
            role,
            flocks,
            scope,
            secret: _,
            jwks_file,
            jwks_uri,
        } => {
            let farm = admin::farm(store, &farm).await?;
            let flocks = match flocks {
                Some(list) => Some(admin::resolve_flocks(store, farm.farm_id(), &list).await?),
                None => None,
            };
            let jwks = match &jwks_file {
                Some(path) => Some(std::fs::read_to_string(path).map_err(|e| {
                    AdminError::Refused(format!("cannot read the key set {path:?}: {e}"))
                })?),
                None => None,
            };
            let credential = match (&jwks, &jwks_uri) {
                (Some(set), _) => CredentialInput::Jwks(set),
                (None, Some(uri)) => CredentialInput::JwksUri(uri),
                (None, None) => CredentialInput::Secret,
            };
            let input = AutomationInput {
                name: &name,
                role: &role,
                flocks,
                scopes: &scope,
                credential,
            };
            let created =
                automations::add(store, farm.farm_id(), &input, Actor::Operator, now).await?;
            println!("client_id: {}", created.client_id);
            if let Some(secret) = created.secret {
                println!("client_secret: {}", secret.expose());
                eprintln!("The secret is shown this once; Coop keeps only its hash.");
            }
        }
        AutomationCommand::List { farm } => {
            let farm = admin::farm(store, &farm).await?;
            let rows =
                crate::storage::automations::list(&mut store.read().await?, farm.farm_id()).await?;
            for row in rows {
                println!("{}", automations::list_line(&row));
            }
        }
        AutomationCommand::Disable { client_id } => {
            let (farm, id) = automations::farm_of(store, &client_id).await?;
            let row =
                automations::set_disabled(store, farm, id, true, Actor::Operator, now).await?;
            println!("automation {} disabled ({})", row.client_id(), row.name);
        }
        AutomationCommand::Enable { client_id } => {
            let (farm, id) = automations::farm_of(store, &client_id).await?;
            let row =
                automations::set_disabled(store, farm, id, false, Actor::Operator, now).await?;
            println!("automation {} enabled ({})", row.client_id(), row.name);
        }
        AutomationCommand::Delete { client_id } => {
            let (farm, id) = automations::farm_of(store, &client_id).await?;
            let row = automations::delete(store, farm, id, Actor::Operator, now).await?;
            println!("automation {} deleted ({})", row.client_id(), row.name);
        }
    }
    Ok(())
}
