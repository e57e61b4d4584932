//! `coop keys`: rotate, list and withdraw the signing keys
//! ([`crate::oauth::keys`]).

use clap::Subcommand;

use crate::clock::Clock;
use crate::oauth::keys::Keys;
use crate::storage::Store;
use crate::storage::keys::Withdrawal;

#[derive(Subcommand)]
pub(super) enum KeysCommand {
    /// Make a new active signing key; the old public key stays in /jwks.json
    /// until every token it signed has expired. Prints the new key id.
    Rotate,
    /// Every key: id, created, and active, retired or withdrawn.
    List,
    /// Withdraw a retired key at once (a compromised key): it leaves
    /// /jwks.json and every replica refuses its tokens on their next call.
    /// The active key cannot be withdrawn: rotate first.
    Retire {
        /// A key id is base64url and may start with `-`.
        #[arg(allow_hyphen_values = true)]
        kid: String,
        /// Required: a key retires by itself at rotation; this withdraws it now.
        #[arg(long, required = true)]
        now: bool,
    },
}

pub(super) async fn run(store: &Store, command: KeysCommand) -> Result<(), String> {
    match command {
        KeysCommand::List => list(store).await,
        KeysCommand::Retire { kid, now: _ } => {
            let result = Keys::withdraw(store, &kid, Clock::system().now()).await;
            match result.map_err(|e| e.to_string())? {
                Withdrawal::Withdrawn => {
                    println!("{kid} withdrawn: its tokens are refused from their next call");
                    Ok(())
                }
                Withdrawal::Unknown => Err(format!("no signing key has the id {kid:?}")),
                Withdrawal::Active => Err(format!(
                    "{kid} is the active signing key; run `coop keys rotate` first, then retire it"
                )),
                Withdrawal::AlreadyWithdrawn => Err(format!("{kid} was withdrawn already")),
            }
        }
        KeysCommand::Rotate => {
            let kid = Keys::rotate(store, Clock::system().now())
                .await
                .map_err(|e| e.to_string())?;
            println!("{kid}");
            Ok(())
        }
    }
}

/// `coop keys list`: one line per key, tab-separated: id, created (RFC
/// 3339), state (`active`, `retired`, `withdrawn`).
async fn list(store: &Store) -> Result<(), String> {
    let mut db = store.read().await.map_err(|e| e.to_string())?;
    let keys = crate::storage::keys::all(&mut db)
        .await
        .map_err(|e| e.to_string())?;
    for key in keys {
        let created = time::OffsetDateTime::from_unix_timestamp(key.created_at)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            })
            .unwrap_or_default();
        let state = if key.withdrawn_at.is_some() {
            "withdrawn"
        } else if key.active {
            "active"
        } else {
            "retired"
        };
        println!("{}\t{created}\t{state}", key.kid);
    }
    Ok(())
}
