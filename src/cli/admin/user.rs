//! `coop admin user`: add a member to a farm (with a generated password,
//! or one read from standard input), the switches on a person: disable,
//! enable, sign out everywhere, require a password change; and their
//! password: a one-time reset link, printed, or a new password read from
//! standard input.

use std::io::{BufRead, Read};

use clap::Subcommand;
use time::OffsetDateTime;

use crate::admin::{self, AdminError, UserChange, UserInput, passwords};
use crate::config::{self, Issuer};
use crate::identity::Passwords;
use crate::identity::reset::LIFETIME;
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
    /// Print a one-time link with which the user chooses a new password
    /// (valid 24 hours; their older links stop working).
    PasswordReset {
        email: String,
        /// Only if the user is a member of this farm.
        #[arg(long)]
        farm: Option<String>,
        /// The public origin the link starts with, as `coop serve` has it.
        #[arg(long, env = "COOP_ISSUER")]
        issuer: Option<String>,
        /// Without --issuer, the link starts with http:// and this address,
        /// as `coop serve`'s issuer does.
        #[arg(long, env = "COOP_BIND", default_value = "127.0.0.1:8080")]
        bind: String,
    },
    /// Set the user's password to the first line of standard input; every
    /// session and app token of theirs stops.
    SetPassword {
        email: String,
        /// Read the password from standard input (the only way to give it).
        #[arg(long)]
        password_stdin: bool,
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
        UserCommand::PasswordReset {
            email,
            farm,
            issuer,
            bind,
        } => {
            let issuer = link_origin(issuer.as_deref(), &bind)?;
            let link = passwords::reset_link(store, &email, farm.as_deref(), now).await?;
            println!("reset_link: {}", link.url(&issuer));
            println!(
                "expires_at: {}",
                admin::rfc3339_or_never(Some(link.expires_at.unix_timestamp()))
            );
            eprintln!(
                "Give the link to {email} only: it lets whoever opens it choose their password, once, within {} hours. Coop keeps only its hash.",
                LIFETIME.whole_hours()
            );
            return Ok(());
        }
        UserCommand::SetPassword {
            email,
            password_stdin,
        } => {
            // Never an argument: `ps` and shell histories would show it.
            if !password_stdin {
                return Err(AdminError::Refused(
                    "--password-stdin is required: the password is read from standard input"
                        .to_owned(),
                ));
            }
            let password = read_password_line()?;
            let passwords = Passwords::new(1)?;
            passwords::set_password(store, &passwords, &email, &password, now).await?;
            println!("{email}: password set; signed out everywhere");
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

/// The origin a printed link starts with: `--issuer` as `coop serve` reads
/// it, or else, as `coop serve` derives it, `http://` and `--bind`.
fn link_origin(issuer: Option<&str>, bind: &str) -> Result<Issuer, AdminError> {
    let refuse = |e: config::ConfigError| AdminError::Refused(e.to_string());
    if let Some(issuer) = issuer {
        return Issuer::parse(issuer)
            .map_err(config::ConfigError::from)
            .map_err(refuse);
    }
    let bound = config::parse_bind(bind).map_err(refuse)?;
    if bound.port() == 0 || bound.ip().is_unspecified() {
        return Err(AdminError::Refused(format!(
            "{}: needed to print the link (the server's address {bound} is not one a browser can open)",
            config::ISSUER_SETTING
        )));
    }
    Ok(Issuer::from_bound_address(bound))
}

/// The first line of standard input, without its line ending.
fn read_password_line() -> Result<Password, AdminError> {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).map_err(|e| {
        AdminError::Refused(format!("cannot read the password from standard input: {e}"))
    })?;
    Ok(Password::new(line.trim_end_matches(['\n', '\r'])))
}

fn read_password_from_stdin() -> Result<Password, AdminError> {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).map_err(|e| {
        AdminError::Refused(format!("cannot read the password from standard input: {e}"))
    })?;
    Ok(Password::new(input.trim_end_matches(['\n', '\r'])))
}
