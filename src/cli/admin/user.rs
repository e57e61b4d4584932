//! `coop admin user`: add a member to a farm (with a generated password,
//! or one read from standard input), and the switches on a person:
//! disable, enable, sign out everywhere, require a password change.

use std::io::Read;

use clap::Subcommand;
use time::OffsetDateTime;

use crate::admin::{self, AdminError, UserChange, UserInput};
use crate::identity::Passwords;
use crate::secrets::Password;
use crate::storage::Store;

#[derive(Subcommand)]
pub(crate) enum UserCommand {
    /// Add a member to a farm; prints a generated password unless --password-stdin.
    Add {
        #[arg(long)]
        farm: String,
        #[arg(long)]
        email: String,
        /// owner, manager, worker or viewer
        #[arg(long)]
        role: String,
        /// Limit a worker to these flocks (comma-separated names).
        #[arg(long)]
        flocks: Option<String>,
        /// Read the password from standard input.
        #[arg(long)]
        password_stdin: bool,
    },
    Disable {
        email: String,
    },
    Enable {
        email: String,
    },
    /// End every browser session and access token of the user.
    SignOutEverywhere {
        email: String,
    },
    /// Make the user choose a new password at next sign-in.
    RequirePasswordChange {
        email: String,
    },
}

pub(crate) async fn run(
    store: &Store,
    command: UserCommand,
    now: OffsetDateTime,
) -> Result<(), AdminError> {
    let (email, change, done) = match command {
        UserCommand::Add {
            farm,
            email,
            role,
            flocks,
            password_stdin,
        } => {
            let typed = if password_stdin {
                Some(read_password_from_stdin()?)
            } else {
                None
            };
            let passwords = Passwords::new(1)?;
            let input = UserInput {
                farm: &farm,
                email: &email,
                role: &role,
                flocks: flocks.as_deref(),
                password: typed.as_ref(),
            };
            match admin::add_user(store, &passwords, &input, now).await? {
                Some(generated) => println!("{email}\t{}", generated.expose()),
                None => println!("{email}"),
            }
            return Ok(());
        }
        UserCommand::Disable { email } => (email, UserChange::Disable, "disabled"),
        UserCommand::Enable { email } => (email, UserChange::Enable, "enabled"),
        UserCommand::SignOutEverywhere { email } => (
            email,
            UserChange::SignOutEverywhere,
            "signed out everywhere",
        ),
        UserCommand::RequirePasswordChange { email } => (
            email,
            UserChange::RequirePasswordChange,
            "must change password at next sign-in",
        ),
    };
    admin::change_user(store, &email, change, now).await?;
    println!("{email}: {done}");
    Ok(())
}

fn read_password_from_stdin() -> Result<Password, AdminError> {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).map_err(|e| {
        AdminError::Refused(format!("cannot read the password from standard input: {e}"))
    })?;
    Ok(Password::new(input.trim_end_matches(['\n', '\r'])))
}
