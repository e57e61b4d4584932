//! The `coop` command: `serve`, and the operator's `admin` and `keys`
//! commands. Parsing and printing only; the work is in the library.

use std::io::Read;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use coop::admin::{self, AdminError, FlockInput, UserChange, UserInput};
use coop::clock::Clock;
use coop::config::{self, Config, DatabaseUrl, Issuer};
use coop::identity::Passwords;
use coop::startup::Application;
use coop::storage::Store;

#[derive(Parser)]
#[command(
    name = "coop",
    version,
    about = "Connect AI assistants to your farm's records, safely"
)]
struct Cli {
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
    Serve(Box<ServeArgs>),
    /// Operator actions on farms, users, houses, flocks and clients.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Signing keys.
    #[command(subcommand)]
    Keys(KeysCommand),
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Make a new active signing key; the old public key stays in /jwks.json
    /// until every token it signed has expired. Prints the new key id.
    Rotate,
    /// Every key: id, created, and active, retired or withdrawn.
    List,
    /// Withdraw a retired key at once (a compromised key): it leaves
    /// /jwks.json and every replica refuses its tokens on their next call.
    /// The active key cannot be withdrawn: rotate first.
    Retire {
        kid: String,
        /// Required: a key retires by itself at rotation; this withdraws it now.
        #[arg(long, required = true)]
        now: bool,
    },
}

#[derive(Args)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "COOP_BIND", default_value = "127.0.0.1:8080")]
    bind: String,
    /// Public origin, e.g. https://coop.example (default: http:// + the bound address).
    #[arg(long, env = "COOP_ISSUER")]
    issuer: Option<String>,
    /// Access-token lifetime in seconds (60–86400).
    #[arg(
        long,
        env = "COOP_ACCESS_TOKEN_TTL",
        default_value = "900",
        allow_negative_numbers = true
    )]
    access_token_ttl: String,
    /// Requests per minute per grant on /mcp; 0 turns the limit off.
    #[arg(
        long,
        env = "COOP_MCP_RATE_LIMIT",
        default_value = "300",
        allow_negative_numbers = true
    )]
    mcp_rate_limit: String,
    /// Requests per minute per person (or automation) on /mcp over all their
    /// apps together; 0 turns the limit off.
    #[arg(
        long,
        env = "COOP_MCP_SUBJECT_RATE_LIMIT",
        default_value = "600",
        allow_negative_numbers = true
    )]
    mcp_subject_rate_limit: String,
    /// Token requests per minute per client address; 0 turns the limit off.
    #[arg(
        long,
        env = "COOP_TOKEN_RATE_LIMIT",
        default_value = "300",
        allow_negative_numbers = true
    )]
    token_rate_limit: String,
    /// Seconds a just-rotated refresh token may be presented again and get the
    /// same successor (a retry after a lost response, two processes racing);
    /// 0 turns it off (0–300).
    #[arg(
        long,
        env = "COOP_REFRESH_REUSE_WINDOW",
        default_value = "30",
        allow_negative_numbers = true
    )]
    refresh_reuse_window: String,
    /// Require DPoP proofs to carry a server nonce (use_dpop_nonce and a
    /// DPoP-Nonce header otherwise), at /token and /mcp.
    #[arg(long, env = "COOP_DPOP_REQUIRE_NONCE")]
    dpop_require_nonce: bool,
    /// Introspection requests per minute per client address; 0 turns the limit off.
    #[arg(
        long,
        env = "COOP_INTROSPECTION_RATE_LIMIT",
        default_value = "1200",
        allow_negative_numbers = true
    )]
    introspection_rate_limit: String,
    /// Client registrations per hour per client address; 0 turns the limit off.
    #[arg(
        long,
        env = "COOP_REGISTER_RATE_LIMIT",
        default_value = "20",
        allow_negative_numbers = true
    )]
    register_rate_limit: String,
    /// Password checks run at once (1–64; default: the number of cores).
    /// Fewer leaves more of the machine to /mcp during a sign-in flood.
    #[arg(
        long,
        env = "COOP_PASSWORD_HASH_CONCURRENCY",
        allow_negative_numbers = true
    )]
    password_hash_concurrency: Option<String>,
    /// Host values /mcp accepts besides the issuer's (a proxy that rewrites
    /// Host): comma-separated host or host:port.
    #[arg(long, env = "COOP_ALLOWED_HOSTS", value_name = "HOSTS")]
    allowed_hosts: Option<String>,
    #[command(flatten)]
    connections: ConnectionArgs,
    #[command(flatten)]
    signin: SignInArgs,
    /// Fill an empty database with a demo farm and print how to sign in.
    #[arg(long)]
    demo: bool,
    /// TESTS AND DEVELOPMENT ONLY: also trust this CA certificate (PEM) when
    /// fetching client metadata documents.
    #[arg(long, env = "COOP_CIMD_TEST_EXTRA_CA", value_name = "PATH")]
    cimd_test_extra_ca: Option<String>,
    /// TESTS AND DEVELOPMENT ONLY: allow client metadata documents served
    /// from loopback addresses (never private ranges).
    #[arg(long, env = "COOP_CIMD_TEST_ALLOW_LOOPBACK")]
    cimd_test_allow_loopback: bool,
}

/// What one connection may cost (threat 32): `coop serve` settings.
#[derive(Args)]
struct ConnectionArgs {
    /// Seconds a client has to send a request's head (1–300).
    #[arg(
        long,
        env = "COOP_HEADER_TIMEOUT",
        default_value = "10",
        allow_negative_numbers = true
    )]
    header_timeout: String,
    /// Seconds a client has to send a request's body (1–600).
    #[arg(
        long,
        env = "COOP_BODY_TIMEOUT",
        default_value = "20",
        allow_negative_numbers = true
    )]
    body_timeout: String,
    /// Seconds from a request's head to its response (1–600).
    #[arg(
        long,
        env = "COOP_REQUEST_TIMEOUT",
        default_value = "30",
        allow_negative_numbers = true
    )]
    request_timeout: String,
    /// Seconds a kept-alive connection may sit without a request (1–3600).
    #[arg(
        long,
        env = "COOP_IDLE_TIMEOUT",
        default_value = "60",
        allow_negative_numbers = true
    )]
    idle_timeout: String,
    /// Connections served at once; past it a new one gets 503 (1–1000000).
    #[arg(
        long,
        env = "COOP_MAX_CONNECTIONS",
        default_value = "512",
        allow_negative_numbers = true
    )]
    max_connections: String,
    /// Seconds SIGTERM waits for in-flight requests before closing (0–600).
    #[arg(
        long,
        env = "COOP_DRAIN_TIMEOUT",
        default_value = "20",
        allow_negative_numbers = true
    )]
    drain_timeout: String,
}

impl ConnectionArgs {
    fn limits(&self) -> Result<config::ConnectionLimits, config::ConfigError> {
        Ok(config::ConnectionLimits {
            header_timeout: config::parse_seconds(
                "--header-timeout / COOP_HEADER_TIMEOUT",
                &self.header_timeout,
                1..=300,
            )?,
            body_timeout: config::parse_seconds(
                "--body-timeout / COOP_BODY_TIMEOUT",
                &self.body_timeout,
                1..=600,
            )?,
            request_timeout: config::parse_seconds(
                "--request-timeout / COOP_REQUEST_TIMEOUT",
                &self.request_timeout,
                1..=600,
            )?,
            idle_timeout: config::parse_seconds(
                "--idle-timeout / COOP_IDLE_TIMEOUT",
                &self.idle_timeout,
                1..=3600,
            )?,
            max_connections: config::parse_concurrency(
                "--max-connections / COOP_MAX_CONNECTIONS",
                &self.max_connections,
                1..=1_000_000,
            )?,
            drain_timeout: config::parse_seconds(
                "--drain-timeout / COOP_DRAIN_TIMEOUT",
                &self.drain_timeout,
                0..=600,
            )?,
        })
    }
}

/// How many failed sign-ins each budget allows (threat 15): `coop serve`
/// settings.
#[derive(Args)]
struct SignInArgs {
    /// Failed sign-ins of one account from browsers it has not signed in on
    /// before, before each further try waits (1–1000).
    #[arg(
        long,
        env = "COOP_SIGNIN_ACCOUNT_FAILURES",
        default_value = "5",
        allow_negative_numbers = true
    )]
    signin_account_failures: String,
    /// Failed sign-ins from one network (an IPv4 address, an IPv6 /64) over
    /// every account (1–100000).
    #[arg(
        long,
        env = "COOP_SIGNIN_ADDRESS_FAILURES",
        default_value = "20",
        allow_negative_numbers = true
    )]
    signin_address_failures: String,
    /// Failed sign-ins of one browser that signed in before (its device
    /// cookie), judged instead of the account's (1–1000).
    #[arg(
        long,
        env = "COOP_SIGNIN_DEVICE_FAILURES",
        default_value = "10",
        allow_negative_numbers = true
    )]
    signin_device_failures: String,
    /// Seconds over which a spent budget refills evenly (10–86400).
    #[arg(
        long,
        env = "COOP_SIGNIN_WINDOW",
        default_value = "300",
        allow_negative_numbers = true
    )]
    signin_window: String,
}

impl SignInArgs {
    fn limits(&self) -> Result<config::SignInLimits, config::ConfigError> {
        let count = |setting, raw: &str, most| {
            config::parse_concurrency(setting, raw, 1..=most)
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
        };
        Ok(config::SignInLimits {
            account_failures: count(
                "--signin-account-failures / COOP_SIGNIN_ACCOUNT_FAILURES",
                &self.signin_account_failures,
                1000,
            )?,
            address_failures: count(
                "--signin-address-failures / COOP_SIGNIN_ADDRESS_FAILURES",
                &self.signin_address_failures,
                100_000,
            )?,
            device_failures: count(
                "--signin-device-failures / COOP_SIGNIN_DEVICE_FAILURES",
                &self.signin_device_failures,
                1000,
            )?,
            window: config::parse_seconds(
                "--signin-window / COOP_SIGNIN_WINDOW",
                &self.signin_window,
                10..=86_400,
            )?,
        })
    }
}

#[derive(Subcommand)]
enum AdminCommand {
    #[command(subcommand)]
    Farm(FarmCommand),
    #[command(subcommand)]
    User(UserCommand),
    #[command(subcommand)]
    House(HouseCommand),
    #[command(subcommand)]
    Flock(FlockCommand),
    #[command(subcommand)]
    Client(ClientCommand),
    /// Connected apps (active grants).
    #[command(subcommand)]
    Apps(AppsCommand),
    /// Automations: machine clients of a farm (the client credentials grant).
    #[command(subcommand)]
    Automation(AutomationCommand),
}

#[derive(Subcommand)]
enum AutomationCommand {
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

#[derive(Subcommand)]
enum AppsCommand {
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

#[derive(Subcommand)]
enum ClientCommand {
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

#[derive(Clone, Copy, ValueEnum)]
enum OnOff {
    On,
    Off,
}

#[derive(Subcommand)]
enum FarmCommand {
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

#[derive(Subcommand)]
enum UserCommand {
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

#[derive(Subcommand)]
enum HouseCommand {
    Add {
        #[arg(long)]
        farm: String,
        #[arg(long)]
        name: String,
    },
}

#[derive(Subcommand)]
enum FlockCommand {
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

fn serve_config(database: &DatabaseArgs, args: &ServeArgs) -> Result<Config, config::ConfigError> {
    let database_url = DatabaseUrl::parse(&database.database_url)?;
    let mut config = Config::with_defaults(database_url);
    config.bind = config::parse_bind(&args.bind)?;
    config.issuer = args.issuer.as_deref().map(Issuer::parse).transpose()?;
    config.access_token_ttl = config::parse_seconds(
        "--access-token-ttl / COOP_ACCESS_TOKEN_TTL",
        &args.access_token_ttl,
        60..=86_400,
    )?;
    config.mcp_rate_limit = parse_count(
        "--mcp-rate-limit / COOP_MCP_RATE_LIMIT",
        &args.mcp_rate_limit,
        "requests per minute",
    )?;
    config.mcp_subject_rate_limit = parse_count(
        "--mcp-subject-rate-limit / COOP_MCP_SUBJECT_RATE_LIMIT",
        &args.mcp_subject_rate_limit,
        "requests per minute",
    )?;
    config.token_rate_limit = parse_count(
        "--token-rate-limit / COOP_TOKEN_RATE_LIMIT",
        &args.token_rate_limit,
        "requests per minute",
    )?;
    config.refresh_reuse_window = config::parse_seconds(
        "--refresh-reuse-window / COOP_REFRESH_REUSE_WINDOW",
        &args.refresh_reuse_window,
        0..=300,
    )?;
    config.dpop_require_nonce = args.dpop_require_nonce;
    config.introspection_rate_limit = parse_count(
        "--introspection-rate-limit / COOP_INTROSPECTION_RATE_LIMIT",
        &args.introspection_rate_limit,
        "requests per minute",
    )?;
    config.register_rate_limit = parse_count(
        "--register-rate-limit / COOP_REGISTER_RATE_LIMIT",
        &args.register_rate_limit,
        "registrations per hour",
    )?;
    if let Some(raw) = &args.password_hash_concurrency {
        config.password_hash_concurrency = config::parse_concurrency(
            "--password-hash-concurrency / COOP_PASSWORD_HASH_CONCURRENCY",
            raw,
            1..=64,
        )?;
    }
    config.connections = args.connections.limits()?;
    if let Some(raw) = &args.allowed_hosts {
        config.allowed_hosts = config::parse_allowed_hosts(raw)?;
    }
    config.signin = args.signin.limits()?;
    config.cimd_test = config::CimdTestSettings::parse(
        args.cimd_test_extra_ca.as_deref(),
        args.cimd_test_allow_loopback,
    )?;
    Ok(config)
}

/// A whole number for a rate setting, naming the setting on failure.
fn parse_count(setting: &'static str, raw: &str, unit: &str) -> Result<u32, config::ConfigError> {
    raw.trim().parse().map_err(|_| config::ConfigError {
        setting,
        reason: format!("{raw:?} is not a whole number of {unit}"),
    })
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Help and version print as clap writes them. A usage mistake (an unknown
/// flag, a missing argument, `on|off` misspelt) is a refusal like any other:
/// one line on stderr and exit code 1, so scripts need to handle one shape.
fn usage_error(err: &clap::Error) -> ExitCode {
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

async fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Serve(args) => serve(&cli.database, *args).await,
        Command::Keys(KeysCommand::List) => {
            let url = DatabaseUrl::parse(&cli.database.database_url).map_err(|e| e.to_string())?;
            let store = Store::connect(&url).await.map_err(|e| e.to_string())?;
            let result = list_keys(&store).await;
            store.close().await;
            result
        }
        Command::Keys(KeysCommand::Retire { kid, now: _ }) => {
            let url = DatabaseUrl::parse(&cli.database.database_url).map_err(|e| e.to_string())?;
            let store = Store::connect(&url).await.map_err(|e| e.to_string())?;
            let result =
                coop::oauth::keys::Keys::withdraw(&store, &kid, Clock::system().now()).await;
            store.close().await;
            use coop::storage::keys::Withdrawal;
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
        Command::Keys(KeysCommand::Rotate) => {
            let url = DatabaseUrl::parse(&cli.database.database_url).map_err(|e| e.to_string())?;
            let store = Store::connect(&url).await.map_err(|e| e.to_string())?;
            let result = coop::oauth::keys::Keys::rotate(&store, Clock::system().now()).await;
            store.close().await;
            let kid = result.map_err(|e| e.to_string())?;
            println!("{kid}");
            Ok(())
        }
        Command::Admin(command) => {
            let url = DatabaseUrl::parse(&cli.database.database_url).map_err(|e| e.to_string())?;
            let store = Store::connect(&url).await.map_err(|e| {
                format!(
                    "{}: cannot open the database: {e}",
                    config::DATABASE_URL_SETTING
                )
            })?;
            let result = run_admin(&store, command).await;
            store.close().await;
            result.map_err(|e| match e {
                AdminError::Refused(reason) => reason,
                other => other.to_string(),
            })
        }
    }
}

/// `coop keys list`: one line per key, tab-separated: id, created (RFC
/// 3339), state (`active`, `retired`, `withdrawn`).
async fn list_keys(store: &Store) -> Result<(), String> {
    let mut db = store.read().await.map_err(|e| e.to_string())?;
    let keys = coop::storage::keys::all(&mut db)
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

async fn serve(database: &DatabaseArgs, args: ServeArgs) -> Result<(), String> {
    let config = serve_config(database, &args).map_err(|e| e.to_string())?;
    coop::telemetry::init();
    let app = Application::build(config, Clock::system())
        .await
        .map_err(|e| e.to_string())?;
    tracing::info!(issuer = %app.issuer(), address = %app.address(), "Coop is serving");
    if args.demo {
        let printed = admin::demo::seed_if_empty(
            &app.state().store,
            &app.state().passwords,
            app.state().clock.now(),
        )
        .await
        .map_err(|e| e.to_string())?;
        match printed {
            Some(demo) => println!("{}", demo.sign_in_instructions(app.issuer())),
            None => println!("The database already has farms; --demo added nothing."),
        }
    }
    println!(
        "Coop is serving at {}  (sign in at {}/login)",
        app.issuer(),
        app.issuer()
    );
    app.run_until_stopped().await.map_err(|e| e.to_string())
}

async fn run_automation(
    store: &Store,
    command: AutomationCommand,
    now: time::OffsetDateTime,
) -> Result<(), AdminError> {
    use admin::apps::Actor;
    use admin::automations::{self, AutomationInput, CredentialInput};
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
                println!("client_secret: {secret}");
                eprintln!("The secret is shown this once; Coop keeps only its hash.");
            }
        }
        AutomationCommand::List { farm } => {
            let farm = admin::farm(store, &farm).await?;
            let rows =
                coop::storage::automations::list(&mut store.read().await?, farm.farm_id()).await?;
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

fn read_password_from_stdin() -> Result<String, AdminError> {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).map_err(|e| {
        AdminError::Refused(format!("cannot read the password from standard input: {e}"))
    })?;
    Ok(input.trim_end_matches(['\n', '\r']).to_owned())
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

async fn run_admin(store: &Store, command: AdminCommand) -> Result<(), AdminError> {
    let now = Clock::system().now();
    match command {
        AdminCommand::Farm(FarmCommand::Add { name, slug }) => {
            let slug = admin::add_farm(store, &name, slug.as_deref(), now).await?;
            println!("{slug}");
        }
        AdminCommand::Farm(FarmCommand::Suspend { slug, reason }) => {
            admin::set_farm_suspended(store, &slug, true, reason.as_deref()).await?;
            println!("farm {slug} suspended");
        }
        AdminCommand::Farm(FarmCommand::Resume { slug }) => {
            admin::set_farm_suspended(store, &slug, false, None).await?;
            println!("farm {slug} resumed");
        }
        AdminCommand::Farm(FarmCommand::ConnectedApps { slug, state }) => {
            let enabled = matches!(state, OnOff::On);
            admin::set_connected_apps(store, &slug, enabled).await?;
            println!(
                "connected apps {} for farm {slug}",
                if enabled { "on" } else { "off" }
            );
        }
        AdminCommand::User(UserCommand::Add {
            farm,
            email,
            role,
            flocks,
            password_stdin,
        }) => {
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
                password: typed.as_deref(),
            };
            match admin::add_user(store, &passwords, &input, now).await? {
                Some(generated) => println!("{email}\t{generated}"),
                None => println!("{email}"),
            }
        }
        AdminCommand::User(command) => {
            let (email, change, done) = match command {
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
                UserCommand::Add { .. } => return Ok(()),
            };
            admin::change_user(store, &email, change, now).await?;
            println!("{email}: {done}");
        }
        AdminCommand::House(HouseCommand::Add { farm, name }) => {
            admin::add_house(store, &farm, &name, now).await?;
            println!("house {name} added to {farm}");
        }
        AdminCommand::Flock(FlockCommand::Add {
            farm,
            house,
            name,
            breed,
            placed,
            head_count,
        }) => {
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
        }
        AdminCommand::Apps(AppsCommand::List { farm, user }) => {
            for app in admin::apps::list(store, farm.as_deref(), user.as_deref()).await? {
                println!("{}", admin::apps::list_line(&app));
            }
        }
        AdminCommand::Apps(AppsCommand::Disconnect { grant_id }) => {
            let app = admin::apps::disconnect_by_id(store, &grant_id, now).await?;
            println!(
                "grant {} disconnected ({} for {})",
                app.grant_id, app.client_name, app.email
            );
        }
        AdminCommand::Automation(command) => run_automation(store, command, now).await?,
        AdminCommand::Client(ClientCommand::Add {
            name,
            redirect_uris,
            confidential,
            introspection,
            jwks_uri,
            jwks_file,
        }) => {
            use coop::oauth::registration::PreregisteredAuth;
            let auth = match (confidential, jwks_uri, jwks_file) {
                (_, Some(uri), _) => PreregisteredAuth::KeySetUri(uri),
                (_, None, Some(path)) => PreregisteredAuth::KeySet(read_jwks_file(&path)?),
                (true, None, None) => PreregisteredAuth::Secret,
                (false, None, None) => PreregisteredAuth::Public,
            };
            let registered = coop::oauth::registration::register_preregistered(
                store,
                &name,
                &redirect_uris,
                &coop::oauth::registration::Preregistration {
                    auth,
                    introspection,
                },
                now,
            )
            .await
            .map_err(|e| match e {
                coop::oauth::error::OAuthError::ServerError(detail) => {
                    AdminError::Refused(format!("database: {detail}"))
                }
                refused => AdminError::Refused(refused.to_string()),
            })?;
            println!("client_id: {}", registered.client_id);
            if let Some(secret) = registered.client_secret {
                println!("client_secret: {secret}");
                eprintln!("The secret is shown this once; Coop keeps only its hash.");
            }
        }
    }
    Ok(())
}
