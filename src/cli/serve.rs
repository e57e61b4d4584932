//! `coop serve`: its flags (each with its environment variable), the checks
//! that turn them into a [`Config`] (a mistake names the flag and the
//! variable), and the start of the server, with the demo farm on
//! `--demo`.

use clap::Args;

use super::DatabaseArgs;
use crate::admin;
use crate::clock::Clock;
use crate::config::{self, Config, DatabaseUrl, Issuer};
use crate::startup::Application;

#[derive(Args)]
pub(super) struct ServeArgs {
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
    /// Token requests per minute per network (an IPv4 address, an IPv6 /64),
    /// and as many revocations (a budget of their own); 0 turns both off.
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
    /// Introspection requests per minute per network (an IPv4 address, an
    /// IPv6 /64); 0 turns the limit off.
    #[arg(
        long,
        env = "COOP_INTROSPECTION_RATE_LIMIT",
        default_value = "1200",
        allow_negative_numbers = true
    )]
    introspection_rate_limit: String,
    /// Client registrations per hour per network (an IPv4 address, an IPv6
    /// /64); 0 turns the limit off.
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
    /// Fetch client metadata documents and key sets through this proxy: an
    /// http:// URL (user:password@ optional) of a proxy that opens tunnels
    /// with CONNECT.
    #[arg(long, env = "COOP_OUTBOUND_PROXY", value_name = "URL")]
    outbound_proxy: Option<String>,
    /// Seconds the last good copy of a client metadata document or key set
    /// is served while its host is down (unreachable, timing out, or
    /// answering 5xx); 0 turns it off (0–2592000).
    #[arg(
        long,
        env = "COOP_CIMD_STALE_GRACE",
        default_value = "604800",
        allow_negative_numbers = true
    )]
    cimd_stale_grace: String,
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
    /// Connections served at once from one network (an IPv4 address, an
    /// IPv6 /64); past it a new one gets 429 (0–1000000, 0 turns it off).
    #[arg(
        long,
        env = "COOP_MAX_CONNECTIONS_PER_NETWORK",
        default_value = "128",
        allow_negative_numbers = true
    )]
    max_connections_per_network: String,
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
            max_connections_per_network: config::parse_concurrency(
                "--max-connections-per-network / COOP_MAX_CONNECTIONS_PER_NETWORK",
                &self.max_connections_per_network,
                0..=1_000_000,
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
    if let Some(raw) = &args.outbound_proxy {
        config.outbound_proxy = config::parse_outbound_proxy(raw)?;
    }
    config.cimd_stale_grace = config::parse_seconds(
        "--cimd-stale-grace / COOP_CIMD_STALE_GRACE",
        &args.cimd_stale_grace,
        0..=30 * 86_400,
    )?;
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

pub(super) async fn run(database: &DatabaseArgs, args: ServeArgs) -> Result<(), String> {
    let config = serve_config(database, &args).map_err(|e| e.to_string())?;
    crate::telemetry::init();
    let app = Application::build(config, Clock::system())
        .await
        .map_err(|e| e.to_string())?;
    // `/metrics` has no setting to hide it, so the operator is told where
    // they look first that anyone who reaches the listener can read it.
    tracing::info!(
        issuer = %app.issuer(),
        address = %app.address(),
        metrics = %format_args!("{}/metrics", app.issuer()),
        "Coop is serving; /metrics is public (request counts and timings) to anyone who reaches this address: block the path at the proxy in front to keep it private"
    );
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
