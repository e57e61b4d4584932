//! `coop admin house` and `coop admin flock`: a farm's houses and the
//! flocks placed in them.

use clap::Subcommand;
use time::OffsetDateTime;

use crate::admin::{self, AdminError, FlockInput};
use crate::storage::Store;

#[derive(Subcommand)]
pub(crate) enum HouseCommand {
    Add {
        #[arg(long)]
        farm: String,
        #[arg(long)]
        name: String,
    },
}

#[derive(Subcommand)]
pub(crate) enum FlockCommand {
    Add {
        #[arg(long)]
        farm: String,
        #[arg(long)]
        house: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        breed: String,
        /// YYYY-MM-DD
        #[arg(long)]
        placed: String,
        // Negative numbers reach the check, which explains the refusal.
        #[arg(long, allow_negative_numbers = true)]
        head_count: String,
    },
}

pub(crate) async fn house(
    store: &Store,
    command: HouseCommand,
    now: OffsetDateTime,
) -> Result<(), AdminError> {
    let HouseCommand::Add { farm, name } = command;
    admin::add_house(store, &farm, &name, now).await?;
    println!("house {name} added to {farm}");
    Ok(())
}

pub(crate) async fn flock(
    store: &Store,
    command: FlockCommand,
    now: OffsetDateTime,
) -> Result<(), AdminError> {
    let FlockCommand::Add {
        farm,
        house,
        name,
        breed,
        placed,
        head_count,
    } = command;
    let input = FlockInput {
        farm: &farm,
        house: &house,
        name: &name,
        breed: &breed,
        placed: &placed,
        head_count: &head_count,
    };
    admin::add_flock(store, &input, now).await?;
    println!("flock {name} added to {house} on {farm}");
    Ok(())
}
