//! `coop admin apps`: the connected apps (active grants), and
//! disconnecting one ([`crate::admin::apps`]).

use clap::Subcommand;
use time::OffsetDateTime;

use crate::admin::{AdminError, apps};
use crate::storage::Store;

#[derive(Subcommand)]
pub(crate) enum AppsCommand {
    /// One line per active grant: grant id, user, client, scopes, last used.
    List {
        #[arg(long)]
        farm: Option<String>,
        #[arg(long)]
        user: Option<String>,
    },
    /// End a grant and every token it issued, at once.
    Disconnect {
        #[arg(value_name = "GRANT_ID")]
        grant_id: String,
    },
}

pub(crate) async fn run(
    store: &Store,
    command: AppsCommand,
    now: OffsetDateTime,
) -> Result<(), AdminError> {
    match command {
        AppsCommand::List { farm, user } => {
            for app in apps::list(store, farm.as_deref(), user.as_deref()).await? {
                println!("{}", apps::list_line(&app));
            }
        }
        AppsCommand::Disconnect { grant_id } => {
            let app = apps::disconnect_by_id(store, &grant_id, now).await?;
            println!(
                "grant {} disconnected ({} for {})",
                app.grant_id, app.client_name, app.email
            );
        }
    }
    Ok(())
}
