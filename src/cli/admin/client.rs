//! `coop admin client add`: pre-register an OAuth client — public, with a
//! secret, `private_key_jwt` (a key set in a file or at a URL), or a
//! resource server that may introspect
//! ([`crate::oauth::registration::register_preregistered`]).

use clap::Subcommand;
use time::OffsetDateTime;

use crate::admin::AdminError;
use crate::oauth::error::OAuthError;
use crate::oauth::registration::{self, PreregisteredAuth, Preregistration};
use crate::storage::Store;

#[derive(Subcommand)]
pub(crate) enum ClientCommand {
    /// Pre-register an OAuth client; prints its client_id (and, with
    /// --confidential, its secret: shown this once, stored only hashed).
    Add {
        #[arg(long)]
        name: String,
        /// An exact redirect URI (https, or http on 127.0.0.1, [::1] or localhost); repeatable.
        #[arg(long = "redirect-uri", required_unless_present = "introspection")]
        redirect_uris: Vec<String>,
        /// A confidential client, authenticating with client_secret_basic or client_secret_post.
        #[arg(long, conflicts_with_all = ["jwks_uri", "jwks_file"])]
        confidential: bool,
        /// A resource server or gateway that may call /introspect (confidential;
        /// redirect URIs are then optional).
        #[arg(long)]
        introspection: bool,
        /// A private_key_jwt client whose public keys are published at this https URL.
        #[arg(long, value_name = "URL", conflicts_with = "jwks_file")]
        jwks_uri: Option<String>,
        /// A private_key_jwt client whose public keys (a JWK Set) are in this file.
        #[arg(long, value_name = "FILE")]
        jwks_file: Option<std::path::PathBuf>,
    },
}

pub(crate) async fn run(
    store: &Store,
    command: ClientCommand,
    now: OffsetDateTime,
) -> Result<(), AdminError> {
    let ClientCommand::Add {
        name,
        redirect_uris,
        confidential,
        introspection,
        jwks_uri,
        jwks_file,
    } = command;
    let auth = match (confidential, jwks_uri, jwks_file) {
        (_, Some(uri), _) => PreregisteredAuth::KeySetUri(uri),
        (_, None, Some(path)) => PreregisteredAuth::KeySet(read_jwks_file(&path)?),
        (true, None, None) => PreregisteredAuth::Secret,
        (false, None, None) => PreregisteredAuth::Public,
    };
    let registered = registration::register_preregistered(
        store,
        &name,
        &redirect_uris,
        &Preregistration {
            auth,
            introspection,
        },
        now,
    )
    .await
    .map_err(|e| match e {
        OAuthError::ServerError(detail) => AdminError::Refused(format!("database: {detail}")),
        refused => AdminError::Refused(refused.to_string()),
    })?;
    println!("client_id: {}", registered.client_id);
    if let Some(secret) = registered.client_secret {
        println!("client_secret: {}", secret.expose());
        eprintln!("The secret is shown this once; Coop keeps only its hash.");
    }
    Ok(())
}

/// The key set of `--jwks-file`, as JSON (checked as a key set later).
fn read_jwks_file(path: &std::path::Path) -> Result<serde_json::Value, AdminError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        AdminError::Refused(format!("--jwks-file: cannot read {}: {e}", path.display()))
    })?;
    serde_json::from_str(&text).map_err(|e| {
        AdminError::Refused(format!("--jwks-file: {} is not JSON: {e}", path.display()))
    })
}
