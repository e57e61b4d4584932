//! `coop admin farm`: create a farm, suspend and resume it, turn its
//! connected apps on or off.

use clap::{Subcommand, ValueEnum};
use time::OffsetDateTime;

use crate::admin::{self, AdminError};
use crate::storage::Store;

#[derive(Subcommand)]
pub(crate) enum FarmCommand {
    /// Create a farm; prints its slug.
    Add {
        #[arg(long)]
        name: String,
        #[arg(long)]
        slug: Option<String>,
    },
    /// Suspend a farm: its members' connected apps stop at once, nothing on
    /// the farm can be changed, and its members see why when they sign in.
    Suspend {
        slug: String,
        /// Why, in words the farm's members are shown (one line).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Lift a suspension.
    Resume { slug: String },
    /// Turn the farm's connected apps on or off.
    ConnectedApps { slug: String, state: OnOff },
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum OnOff {
    On,
    Off,
}

pub(crate) async fn run(
    store: &Store,
    command: FarmCommand,
    now: OffsetDateTime,
) -> Result<(), AdminError> {
    match command {
        FarmCommand::Add { name, slug } => {
            let slug = admin::add_farm(store, &name, slug.as_deref(), now).await?;
            println!("{slug}");
        }
        FarmCommand::Suspend { slug, reason } => {
            admin::set_farm_suspended(store, &slug, true, reason.as_deref()).await?;
            println!("farm {slug} suspended");
        }
        FarmCommand::Resume { slug } => {
            admin::set_farm_suspended(store, &slug, false, None).await?;
            println!("farm {slug} resumed");
        }
        FarmCommand::ConnectedApps { slug, state } => {
            let enabled = matches!(state, OnOff::On);
            admin::set_connected_apps(store, &slug, enabled).await?;
            println!(
                "connected apps {} for farm {slug}",
                if enabled { "on" } else { "off" }
            );
        }
    }
    Ok(())
}
