//! `coop admin`: the operator's commands over the store, one file per
//! group. Each turns its flags into a call on [`crate::admin`] (or
//! [`crate::oauth::registration`] for clients) and prints one line per
//! result; a refusal is an [`AdminError::Refused`] with its one line.

mod apps;
mod automation;
mod client;
mod farm;
mod records;
mod user;

use clap::Subcommand;

use crate::admin::AdminError;
use crate::clock::Clock;
use crate::storage::Store;

#[derive(Subcommand)]
pub(super) enum AdminCommand {
    #[command(subcommand)]
    Farm(farm::FarmCommand),
    #[command(subcommand)]
    User(user::UserCommand),
    #[command(subcommand)]
    House(records::HouseCommand),
    #[command(subcommand)]
    Flock(records::FlockCommand),
    #[command(subcommand)]
    Client(client::ClientCommand),
    /// Connected apps (active grants).
    #[command(subcommand)]
    Apps(apps::AppsCommand),
    /// Automations: machine clients of a farm (the client credentials grant).
    #[command(subcommand)]
    Automation(automation::AutomationCommand),
}

pub(super) async fn run(store: &Store, command: AdminCommand) -> Result<(), AdminError> {
    let now = Clock::system().now();
    match command {
        AdminCommand::Farm(command) => farm::run(store, command, now).await,
        AdminCommand::User(command) => user::run(store, command, now).await,
        AdminCommand::House(command) => records::house(store, command, now).await,
        AdminCommand::Flock(command) => records::flock(store, command, now).await,
        AdminCommand::Client(command) => client::run(store, command, now).await,
        AdminCommand::Apps(command) => apps::run(store, command, now).await,
        AdminCommand::Automation(command) => automation::run(store, command, now).await,
    }
}
