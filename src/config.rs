//! Typed configuration, parsed and checked once at start.
//!
//! Every setting comes from a flag or its `COOP_*` environment variable. A
//! mistake is reported as one line naming the setting, before anything is
//! bound or written. The issuer may be left unset: it is then derived from
//! the address actually bound (see [`crate::startup`]), which is what lets
//! tests bind port 0.

use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use url::Url;

/// A problem with one setting, reported as `<setting>: <reason>`.
#[derive(Debug, thiserror::Error)]
#[error("{setting}: {reason}")]
pub struct ConfigError {
    pub setting: &'static str,
    pub reason: String,
}

impl ConfigError {
    fn new(setting: &'static str, reason: impl Into<String>) -> Self {
        Self {
            setting,
            reason: reason.into(),
        }
    }
}

pub use crate::domain::Issuer;

/// The setting an issuer comes from, named in its errors.
pub const ISSUER_SETTING: &str = "--issuer / COOP_ISSUER";

impl From<crate::domain::IssuerError> for ConfigError {
    fn from(err: crate::domain::IssuerError) -> Self {
        Self::new(ISSUER_SETTING, err.to_string())
    }
}

/// Which database, and where. Its `Debug` hides a PostgreSQL password, so
/// printing the configuration (or the state that holds it) leaks nothing.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    Sqlite(String),
    Postgres(String),
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sqlite(url) => f.debug_tuple("Sqlite").field(url).finish(),
            Self::Postgres(url) => {
                let shown = match Url::parse(url) {
                    Ok(mut parsed) if parsed.password().is_some() => {
                        let _ = parsed.set_password(Some("redacted"));
                        parsed.to_string()
                    }
                    Ok(parsed) => parsed.to_string(),
                    Err(_) => "<unparsable URL>".to_owned(),
                };
                f.debug_tuple("Postgres").field(&shown).finish()
            }
        }
    }
}

/// How errors name the database setting, here and when the database cannot
/// be opened.
pub const DATABASE_URL_SETTING: &str = "--database-url / COOP_DATABASE_URL";

impl DatabaseUrl {
    pub const DEFAULT: &'static str = "sqlite://coop.db";

    pub fn parse(raw: &str) -> Result<Self, ConfigError> {
        const SETTING: &str = DATABASE_URL_SETTING;
        let raw = raw.trim();
        if raw.starts_with("sqlite:") {
            Ok(Self::Sqlite(raw.to_owned()))
        } else if raw.starts_with("postgres://") || raw.starts_with("postgresql://") {
            Url::parse(raw).map_err(|e| ConfigError::new(SETTING, format!("not a URL ({e})")))?;
            Ok(Self::Postgres(raw.to_owned()))
        } else {
            Err(ConfigError::new(
                SETTING,
                "must start with sqlite: or postgres://",
            ))
        }
    }

    pub fn engine(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }
}

/// Test and development only: how Client ID Metadata Documents may be fetched
/// from a local host. Off by default; the server logs a warning when on.
#[derive(Clone, Debug, Default)]
pub struct CimdTestSettings {
    pub extra_ca_pem: Option<PathBuf>,
    pub allow_loopback: bool,
}

impl CimdTestSettings {
    /// Checks the settings as given: the extra CA, when named, must be a
    /// readable PEM bundle of usable CA certificates. An empty path is unset.
    pub fn parse(extra_ca: Option<&str>, allow_loopback: bool) -> Result<Self, ConfigError> {
        let extra_ca_pem = extra_ca
            .map(str::trim)
            .filter(|path| !path.is_empty())
            .map(PathBuf::from);
        if let Some(path) = &extra_ca_pem {
            crate::oauth::cimd::load_extra_ca(path)
                .map_err(|why| ConfigError::new(crate::oauth::cimd::EXTRA_CA_SETTING, why))?;
        }
        Ok(Self {
            extra_ca_pem,
            allow_loopback,
        })
    }

    /// Whether any test-only relaxation is in force.
    pub fn is_on(&self) -> bool {
        self.extra_ca_pem.is_some() || self.allow_loopback
    }
}

/// Everything the server needs to run, checked.
#[derive(Clone, Debug)]
pub struct Config {
    pub bind: SocketAddr,
    /// `None`: derived from the bound address at start.
    pub issuer: Option<Issuer>,
    pub database_url: DatabaseUrl,
    pub access_token_ttl: Duration,
    /// Requests per minute per grant on `/mcp`; 0 turns the limit off.
    pub mcp_rate_limit: u32,
    /// Requests per minute per subject (person or automation) on `/mcp`,
    /// over all its grants; 0 turns the limit off.
    pub mcp_subject_rate_limit: u32,
    /// Token requests per minute per network, and as many revocations
    /// (a budget of their own); 0 turns both off.
    pub token_rate_limit: u32,
    /// Client registrations per hour per network; 0 turns it off.
    pub register_rate_limit: u32,
    /// Introspection requests per minute per network; 0 turns it off.
    pub introspection_rate_limit: u32,
    pub cimd_test: CimdTestSettings,
    /// The proxy client metadata documents and key sets are fetched
    /// through; `None`: directly.
    pub outbound_proxy: Option<crate::oauth::cimd::OutboundProxy>,
    /// How long the last good copy of a document or key set may be served
    /// while its host is down; zero: never.
    pub cimd_stale_grace: Duration,
    /// Concurrent password hashes; defaults to the number of cores.
    pub password_hash_concurrency: usize,
    /// How long a just-rotated refresh token may be presented again and
    /// get the same successor (a retry, a race); zero turns it off.
    pub refresh_reuse_window: Duration,
    /// Whether a DPoP proof must carry a server nonce (`use_dpop_nonce`
    /// otherwise), at `/token` and `/mcp`.
    pub dpop_require_nonce: bool,
    /// How long a connection may take over each part of a request, how many
    /// may be open, and how long a shutdown waits for them.
    pub connections: ConnectionLimits,
    /// `Host` values `/mcp` accepts besides the issuer's authority (a proxy
    /// that rewrites `Host`): lower-case `host` or `host:port`, each
    /// matched exactly.
    pub allowed_hosts: Vec<String>,
    /// How many failed sign-ins each budget allows (threat 15).
    pub signin: SignInLimits,
}

impl Config {
    /// Settings for a server on `database_url` with every other default.
    pub fn with_defaults(database_url: DatabaseUrl) -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            issuer: None,
            database_url,
            access_token_ttl: Duration::from_secs(15 * 60),
            mcp_rate_limit: 300,
            mcp_subject_rate_limit: 600,
            token_rate_limit: 300,
            register_rate_limit: 20,
            introspection_rate_limit: 1200,
            cimd_test: CimdTestSettings::default(),
            outbound_proxy: None,
            cimd_stale_grace: crate::oauth::cimd::copies::DEFAULT_GRACE.unsigned_abs(),
            password_hash_concurrency: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            connections: ConnectionLimits::default(),
            signin: SignInLimits::default(),
            refresh_reuse_window: Duration::from_secs(30),
            allowed_hosts: Vec::new(),
            dpop_require_nonce: false,
        }
    }
}

/// What a connection may cost the server (threat 32). Enforced by
/// `crate::http::serve`; each is a `coop serve` setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// From accepting a connection (or, on a kept-alive one, from the first
    /// byte of the next request) to the end of the request's head.
    pub header_timeout: Duration,
    /// From the end of the head to the end of the body.
    pub body_timeout: Duration,
    /// From the end of the head to the response, whatever the handler does.
    pub request_timeout: Duration,
    /// A kept-alive connection with no request under way, and a response
    /// the client does not take.
    pub idle_timeout: Duration,
    /// Connections served at once. At the cap the connection idle longest
    /// between requests is closed to make room; with none idle the new one
    /// is refused at once.
    pub max_connections: usize,
    /// Connections served at once from one network (an IPv4 address, an
    /// IPv6 /64), so that one network cannot take them all; past it the
    /// network's own idlest kept-alive connection makes room, or the new
    /// one is refused. `0` turns the cap off (behind a proxy every client
    /// is the proxy's address).
    pub max_connections_per_network: usize,
    /// After SIGTERM: how long in-flight requests may take before what is
    /// left is closed.
    pub drain_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(20),
            request_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            // Half of the usual 1,024 descriptors, leaving the rest to the
            // database pool, the log and the files Coop opens.
            max_connections: 512,
            // A quarter: one network holds at most that many, so it takes
            // four to fill the server; an office behind one address still
            // has room for dozens of browsers and programs.
            max_connections_per_network: 128,
            drain_timeout: Duration::from_secs(20),
        }
    }
}

/// How many failed sign-ins are allowed before each further attempt must
/// wait (threat 15; enforced by `crate::identity::throttle`). Each budget
/// may be spent at once and refills evenly over `window`: with the defaults
/// an account regains one try a minute. Only failures count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignInLimits {
    /// Failures of one account from browsers it has not signed in on before.
    pub account_failures: u32,
    /// Failures from one network (an IPv4 address, an IPv6 /64), whatever
    /// the account.
    pub address_failures: u32,
    /// Failures of one browser that signed in before (its device cookie).
    pub device_failures: u32,
    /// How long a spent budget takes to refill completely.
    pub window: Duration,
}

impl Default for SignInLimits {
    fn default() -> Self {
        Self {
            // A person mistyping is not bothered; a guesser gets one try a
            // minute per account once the five are spent.
            account_failures: 5,
            // A shared office or NAT gets room for several people's typos,
            // and one network cannot spray guesses over many accounts.
            address_failures: 20,
            // The owner's own browser: more room than a stranger's.
            device_failures: 10,
            window: Duration::from_secs(300),
        }
    }
}

/// Parses `--outbound-proxy`: an `http://` proxy URL; empty is unset.
pub fn parse_outbound_proxy(
    raw: &str,
) -> Result<Option<crate::oauth::cimd::OutboundProxy>, ConfigError> {
    use crate::oauth::cimd::{OUTBOUND_PROXY_SETTING, OutboundProxy};
    if raw.trim().is_empty() {
        return Ok(None);
    }
    // The reason never quotes the value: it may carry a password.
    OutboundProxy::parse(raw)
        .map(Some)
        .map_err(|why| ConfigError::new(OUTBOUND_PROXY_SETTING, why))
}

/// Parses a bind address, naming the setting on failure.
pub fn parse_bind(raw: &str) -> Result<SocketAddr, ConfigError> {
    SocketAddr::from_str(raw.trim()).map_err(|_| {
        ConfigError::new(
            "--bind / COOP_BIND",
            format!("{raw:?} is not an address like 127.0.0.1:8080"),
        )
    })
}

/// How errors name the allowed-hosts setting.
pub const ALLOWED_HOSTS_SETTING: &str = "--allowed-hosts / COOP_ALLOWED_HOSTS";

/// Parses `--allowed-hosts`: comma-separated `host` or `host:port` values
/// (a DNS name in ASCII, punycode for an international one, an IPv4
/// address, or an IPv6 address in brackets; a port 1–65535). Returned
/// lower-case, without duplicates. Anything else (a URL, a path, a wildcard,
/// user information) is refused, naming the value.
pub fn parse_allowed_hosts(raw: &str) -> Result<Vec<String>, ConfigError> {
    let mut hosts: Vec<String> = Vec::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let host = allowed_host(entry).ok_or_else(|| {
            ConfigError::new(
                ALLOWED_HOSTS_SETTING,
                format!("{entry:?} is not a host or host:port (like coop.internal:8080)"),
            )
        })?;
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    Ok(hosts)
}

/// One `host[:port]`, lower-cased, if it is one.
fn allowed_host(entry: &str) -> Option<String> {
    let entry = entry.to_ascii_lowercase();
    let (host, port) = match entry.strip_prefix('[') {
        Some(rest) => {
            let (address, after) = rest.split_once(']')?;
            address.parse::<std::net::Ipv6Addr>().ok()?;
            let port = match after {
                "" => None,
                _ => Some(after.strip_prefix(':')?),
            };
            (None, port)
        }
        None => match entry.split_once(':') {
            Some((host, port)) => (Some(host), Some(port)),
            None => (Some(entry.as_str()), None),
        },
    };
    if let Some(host) = host {
        let label_ok = |label: &str| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        };
        if host.len() > 253 || !host.split('.').all(label_ok) {
            return None;
        }
    }
    if let Some(port) = port
        && !(port.bytes().all(|b| b.is_ascii_digit()) && port.parse::<u16>().is_ok_and(|p| p > 0))
    {
        return None;
    }
    Some(entry)
}

/// Parses how many of something may run at once, within `range`.
pub fn parse_concurrency(
    setting: &'static str,
    raw: &str,
    range: RangeInclusive<usize>,
) -> Result<usize, ConfigError> {
    whole_number_in(setting, raw, range, None)
}

/// Parses a duration in whole seconds within `range`, naming the setting.
pub fn parse_seconds(
    setting: &'static str,
    raw: &str,
    range: RangeInclusive<u64>,
) -> Result<Duration, ConfigError> {
    whole_number_in(setting, raw, range, Some("seconds")).map(Duration::from_secs)
}

/// A whole number within `range`; the refusals name `unit` (plural) when
/// the number counts one.
fn whole_number_in<T>(
    setting: &'static str,
    raw: &str,
    range: RangeInclusive<T>,
    unit: Option<&str>,
) -> Result<T, ConfigError>
where
    T: FromStr + PartialOrd + std::fmt::Display,
{
    let of_unit = unit.map(|unit| format!(" of {unit}")).unwrap_or_default();
    let number: T = raw.trim().parse().map_err(|_| {
        ConfigError::new(setting, format!("{raw:?} is not a whole number{of_unit}"))
    })?;
    if !range.contains(&number) {
        let unit = unit.map(|unit| format!(" {unit}")).unwrap_or_default();
        return Err(ConfigError::new(
            setting,
            format!(
                "must be between {} and {}{unit}",
                range.start(),
                range.end()
            ),
        ));
    }
    Ok(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issuer_is_an_exact_origin() {
        let cases = [
            ("https://coop.example/", "https://coop.example"),
            ("HTTPS://Coop.Example", "https://coop.example"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("https://coop.example:443", "https://coop.example"),
        ];
        for (raw, want) in cases {
            let issuer = Issuer::parse(raw).unwrap();
            assert_eq!(issuer.as_str(), want, "from {raw}");
        }
    }

    #[test]
    fn an_issuer_with_a_path_query_or_other_scheme_is_refused() {
        for raw in [
            "https://coop.example/tenant",
            "https://coop.example/?a=b",
            "ftp://coop.example",
            "coop.example",
            "https://user:pw@coop.example",
        ] {
            let err = ConfigError::from(Issuer::parse(raw).unwrap_err());
            assert_eq!(err.setting, "--issuer / COOP_ISSUER", "{raw}");
        }
    }

    #[test]
    fn a_database_password_never_prints() {
        let url = DatabaseUrl::parse("postgres://coop:s3cret-pw@db.example/coop").unwrap();
        let shown = format!("{url:?}");
        assert!(!shown.contains("s3cret-pw"), "{shown}");
        assert!(shown.contains("coop:redacted@db.example"), "{shown}");
        let config = Config::with_defaults(url);
        assert!(!format!("{config:?}").contains("s3cret-pw"));
    }

    #[test]
    fn database_urls_pick_their_engine() {
        assert_eq!(
            DatabaseUrl::parse("sqlite://x.db").unwrap().engine(),
            "sqlite"
        );
        assert_eq!(
            DatabaseUrl::parse("postgres://postgres@127.0.0.1/coop")
                .unwrap()
                .engine(),
            "postgres"
        );
        assert!(DatabaseUrl::parse("mysql://x").is_err());
    }

    #[test]
    fn allowed_hosts_are_hosts_with_an_optional_port() {
        assert_eq!(
            parse_allowed_hosts(
                " Coop.Internal:8080, coop , 10.0.0.5:80,[::1]:8080,[FD00::1],coop"
            )
            .unwrap(),
            vec![
                "coop.internal:8080",
                "coop",
                "10.0.0.5:80",
                "[::1]:8080",
                "[fd00::1]"
            ]
        );
        assert!(parse_allowed_hosts("").unwrap().is_empty());
        for bad in [
            "https://coop.example",
            "coop.example/mcp",
            "*.example",
            "*",
            "user@coop.example",
            "coop.example:0",
            "coop.example:65536",
            "coop.example:",
            "coop.example:80:80",
            "coop.example:+80",
            "::1",
            "[::1",
            "[::1]x",
            "[not-ip]:80",
            "coop..example",
            "-coop.example",
            "coop_example",
            "bücher.example",
            "coop example",
        ] {
            let err = parse_allowed_hosts(&format!("ok.example,{bad}")).unwrap_err();
            assert_eq!(err.setting, ALLOWED_HOSTS_SETTING, "{bad}");
            assert!(err.reason.contains(&format!("{bad:?}")), "{bad}: {err}");
        }
    }

    #[test]
    fn an_outbound_proxy_is_an_http_url_and_its_errors_show_no_password() {
        assert_eq!(parse_outbound_proxy(" ").unwrap(), None);
        let proxy = parse_outbound_proxy("http://proxy.internal:3128").unwrap();
        assert_eq!(proxy.unwrap().address(), "proxy.internal:3128");
        for bad in [
            "https://coop:hunter2@proxy.internal:3128",
            "http://coop:hunter2@proxy.internal:3128/x",
            "http://coop:hunter2@[proxy.internal:3128",
        ] {
            let err = parse_outbound_proxy(bad).unwrap_err();
            assert_eq!(err.setting, crate::oauth::cimd::OUTBOUND_PROXY_SETTING);
            assert!(!err.to_string().contains("hunter2"), "{err}");
        }
    }

    #[test]
    fn durations_outside_their_range_are_refused() {
        assert!(parse_seconds("--x", "60", 60..=3600).is_ok());
        assert!(parse_seconds("--x", "59", 60..=3600).is_err());
        assert!(parse_seconds("--x", "ten", 60..=3600).is_err());
        assert_eq!(parse_concurrency("--x", " 2 ", 1..=64).unwrap(), 2);
        for bad in ["0", "65", "-1", "two"] {
            assert!(parse_concurrency("--x", bad, 1..=64).is_err(), "{bad}");
        }
    }
}
