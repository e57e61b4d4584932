//! The `coop` command line: `serve`, and the operator's `admin` and `keys`
//! commands. Each command group is one file with its clap definitions, the
//! checks that turn its flags into typed settings, and its dispatch; the
//! work itself is in the library (`startup`, `admin`, `oauth`, `storage`).
//! Parsing and printing only: a refusal is one line on stderr and exit
//! code 1, whatever refused it (see [`usage_error`]).
//!
//! - `serve`: `coop serve` and its settings (`config`'s parsers, each
//!   mistake naming its flag and variable).
//! - `keys`: `coop keys rotate | list | retire`.
//! - `admin`: `coop admin farm | user | house | flock | client | apps |
//!   automation`.

mod admin;
mod keys;
mod serve;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::config::{self, DatabaseUrl};
use crate::storage::Store;

#[derive(Parser)]
#[command(
    name = "coop",
    version,
    about = "Connect AI assistants to your farm's records, safely"
)]
pub struct Cli {
    #[command(flatten)]
    database: DatabaseArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct DatabaseArgs {
    /// sqlite://PATH (created if missing) or postgres://…
    #[arg(long, env = "COOP_DATABASE_URL", default_value = DatabaseUrl::DEFAULT, global = true)]
    database_url: String,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server.
    Serve(Box<serve::ServeArgs>),
    /// Operator actions on farms, users, houses, flocks and clients.
    #[command(subcommand)]
    Admin(admin::AdminCommand),
    /// Signing keys.
    #[command(subcommand)]
    Keys(keys::KeysCommand),
}

impl Cli {
    /// Runs the parsed command; `Err` is the one line to print after
    /// `error: `.
    pub async fn run(self) -> Result<(), String> {
        match self.command {
            Command::Serve(args) => serve::run(&self.database, *args).await,
            Command::Keys(command) => {
                let store = self.database.open(|e| e.to_string()).await?;
                let result = keys::run(&store, command).await;
                store.close().await;
                result
            }
            Command::Admin(command) => {
                let store = self
                    .database
                    .open(|e| {
                        format!(
                            "{}: cannot open the database: {e}",
                            config::DATABASE_URL_SETTING
                        )
                    })
                    .await?;
                let result = admin::run(&store, command).await;
                store.close().await;
                result.map_err(|e| match e {
                    crate::admin::AdminError::Refused(reason) => reason,
                    other => other.to_string(),
                })
            }
        }
    }
}

impl DatabaseArgs {
    /// The store at `--database-url`; `connect_failed` words a connection
    /// failure (a malformed URL names its setting by itself).
    async fn open(
        &self,
        connect_failed: impl FnOnce(crate::storage::StoreError) -> String,
    ) -> Result<Store, String> {
        let url = DatabaseUrl::parse(&self.database_url).map_err(|e| e.to_string())?;
        Store::connect(&url).await.map_err(connect_failed)
    }
}

/// Help and version print as clap writes them. A usage mistake (an unknown
/// flag, a missing argument, `on|off` misspelt) is a refusal like any other:
/// one line on stderr and exit code 1, so scripts need to handle one shape.
pub fn usage_error(err: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            ExitCode::FAILURE
        }
        _ => {
            let text = err.render().to_string();
            let line = text
                .lines()
                .map(str::trim)
                .filter(|l| {
                    !l.is_empty()
                        && !l.starts_with("Usage:")
                        && !l.starts_with("For more information")
                })
                .collect::<Vec<_>>()
                .join(" ");
            eprintln!("{line} (see coop --help)");
            ExitCode::FAILURE
        }
    }
}
