//! Client ID Metadata Documents: a `client_id` that is an https URL names a
//! JSON document describing the client, which Coop fetches.
//!
//! # The defence (threat 13, SSRF)
//!
//! The URL comes from whoever starts an authorization request, so fetching
//! it would let a stranger make Coop open connections inside its network.
//! The fetcher therefore:
//!
//! 1. accepts only `https://host/path` URLs: a non-root path, no fragment, no
//!    user information, at most 2048 bytes, and already in canonical form (so
//!    the URL fetched is byte for byte the `client_id` compared later);
//! 2. refuses an IP-literal host outright when its address is not public
//!    ([`address`]), before any connection;
//! 3. resolves a host name itself, through the one resolver its HTTP client
//!    has, and refuses the host if *any* address it resolves to is not
//!    public. The client connects only to the addresses that resolver
//!    returned, so a DNS answer that changes between check and use cannot
//!    slip in another address, and no proxy is ever used;
//! 4. verifies TLS with rustls against the platform's root certificates;
//! 5. refuses redirects (a 3xx is an error, not followed), any status but
//!    200, more than 5 KiB of body (read in chunks and cut off), and anything
//!    that takes longer than 5 s in total, from resolving to the last byte;
//! 6. validates the document ([`document`]) and caches it for between one
//!    minute and one day according to its cache headers ([`cache`]), which
//!    also bounds how often one URL can make Coop fetch.
//!
//! For tests and development only, [`CimdTestSettings`] may add a trusted CA
//! certificate and admit loopback addresses (and nothing else: private
//! ranges stay refused). Both are off by default and logged as a warning at
//! start when on.

pub mod address;
pub mod cache;
pub mod document;
mod resolver;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Certificate;
use reqwest::header::{CACHE_CONTROL, CONTENT_LENGTH, DATE, EXPIRES, HeaderMap};
use time::OffsetDateTime;
use url::{Host, Url};

use crate::config::CimdTestSettings;
use cache::DocumentCache;
use resolver::{AddressRefused, CheckedResolver, ResolveFailed};

/// The whole fetch, from resolving the host to the last byte of the body.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest document accepted.
pub const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// The longest `client_id` URL accepted.
pub const MAX_CLIENT_ID_BYTES: usize = 2048;
/// How many documents the cache holds.
pub const CACHE_CAPACITY: usize = 1024;

/// The setting that names the extra CA, quoted in its errors.
pub const EXTRA_CA_SETTING: &str = "--cimd-test-extra-ca / COOP_CIMD_TEST_EXTRA_CA";

/// What Coop keeps of a fetched document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientMetadataDocument {
    /// Equal to the URL it was fetched from.
    pub client_id: String,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    /// The host the document was served from (with `:port` when the URL
    /// names one), shown on the consent page.
    pub document_host: String,
    /// Until when the cached copy may be used without fetching again.
    pub fresh_until: OffsetDateTime,
}

/// Why a document cannot be used. Every variant but `Settings` is a client
/// error (`invalid_client` / an error page); the variant is for the log.
#[derive(Debug, thiserror::Error)]
pub enum CimdError {
    #[error("client_id is not an https URL with a path")]
    NotHttpsUrl,
    #[error("the host resolves to an address Coop does not fetch from: {0}")]
    ForbiddenAddress(String),
    #[error("the host does not resolve: {0}")]
    Resolve(String),
    #[error("fetch failed: {0}")]
    Fetch(String),
    #[error("the document answered {0}")]
    Status(u16),
    #[error("redirects are not followed")]
    Redirect,
    #[error("the document is larger than 5 KiB")]
    TooLarge,
    #[error("the fetch took longer than the time allowed")]
    Timeout,
    #[error("the document's client_id is not the URL it was fetched from")]
    ClientIdMismatch,
    #[error("the document asks for shared-secret client authentication")]
    SharedSecretAuth,
    #[error("the document is not valid: {0}")]
    Invalid(String),
    /// The fetcher cannot be built from its settings (a start-up error).
    #[error("{0}")]
    Settings(String),
}

/// Fetches and caches metadata documents; shared by every handler.
#[derive(Clone, Debug)]
pub struct CimdFetcher {
    shared: Arc<Shared>,
    timeout: Duration,
}

#[derive(Debug)]
struct Shared {
    client: reqwest::Client,
    allow_loopback: bool,
    cache: DocumentCache,
}

impl CimdFetcher {
    /// A fetcher with the production limits and, when set, the test settings.
    pub fn new(settings: CimdTestSettings) -> Result<Self, CimdError> {
        let extra_roots = match &settings.extra_ca_pem {
            Some(path) => load_extra_ca(path)
                .map_err(|why| CimdError::Settings(format!("{EXTRA_CA_SETTING}: {why}")))?,
            None => Vec::new(),
        };
        let client = reqwest::Client::builder()
            .https_only(true)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .referer(false)
            .dns_resolver(Arc::new(CheckedResolver::new(settings.allow_loopback)))
            .pool_max_idle_per_host(0)
            .user_agent(concat!(
                "Coop/",
                env!("CARGO_PKG_VERSION"),
                " (client metadata fetcher)"
            ))
            .tls_certs_merge(extra_roots)
            .build()
            .map_err(|e| {
                CimdError::Settings(format!(
                    "cannot build the HTTPS client for client metadata documents: {}",
                    error_chain(&e)
                ))
            })?;
        Ok(Self {
            shared: Arc::new(Shared {
                client,
                allow_loopback: settings.allow_loopback,
                cache: DocumentCache::new(CACHE_CAPACITY),
            }),
            timeout: FETCH_TIMEOUT,
        })
    }

    /// The same fetcher (sharing its cache) with another total time limit.
    /// Production uses [`FETCH_TIMEOUT`]; tests shorten it so a slow host
    /// need not keep them waiting five seconds.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The document for `client_id`, from the cache while fresh.
    pub async fn fetch(
        &self,
        client_id: &str,
        now: OffsetDateTime,
    ) -> Result<ClientMetadataDocument, CimdError> {
        let url = parse_client_id(client_id)?;
        if let Some(doc) = self.shared.cache.get(client_id, now) {
            return Ok(doc);
        }
        self.refuse_literal_address(&url)?;
        let fetched = tokio::time::timeout(self.timeout, self.fetch_body(url.clone()))
            .await
            .map_err(|_| CimdError::Timeout)??;
        let valid = document::validate(&fetched.body, client_id)?;
        let fresh_for = cache::freshness(
            joined(&fetched.headers, CACHE_CONTROL).as_deref(),
            header(&fetched.headers, EXPIRES),
            header(&fetched.headers, DATE),
            now,
        );
        let doc = ClientMetadataDocument {
            client_id: client_id.to_owned(),
            client_name: valid.client_name,
            redirect_uris: valid.redirect_uris,
            document_host: document_host(&url),
            fresh_until: now + fresh_for,
        };
        tracing::info!(
            client_id,
            fresh_seconds = fresh_for.whole_seconds(),
            "fetched a client metadata document"
        );
        self.shared.cache.insert(doc.clone(), now);
        Ok(doc)
    }

    /// An IP-literal host never reaches the resolver, so it is checked here.
    fn refuse_literal_address(&self, url: &Url) -> Result<(), CimdError> {
        let ip = match url.host() {
            Some(Host::Ipv4(v4)) => v4.into(),
            Some(Host::Ipv6(v6)) => v6.into(),
            Some(Host::Domain(_)) => return Ok(()),
            None => return Err(CimdError::NotHttpsUrl),
        };
        address::permitted(ip, self.shared.allow_loopback)
            .map_err(|reason| CimdError::ForbiddenAddress(format!("{ip} ({reason})")))
    }

    async fn fetch_body(&self, url: Url) -> Result<Fetched, CimdError> {
        let mut response = self
            .shared
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .timeout(self.timeout)
            .send()
            .await
            .map_err(request_error)?;
        let status = response.status();
        if status.is_redirection() {
            return Err(CimdError::Redirect);
        }
        if status != reqwest::StatusCode::OK {
            return Err(CimdError::Status(status.as_u16()));
        }
        let declared = header(response.headers(), CONTENT_LENGTH)
            .and_then(|length| length.trim().parse::<u64>().ok());
        if declared.is_some_and(|length| length > MAX_DOCUMENT_BYTES as u64) {
            return Err(CimdError::TooLarge);
        }
        let headers = response.headers().clone();
        let mut body = Vec::with_capacity(MAX_DOCUMENT_BYTES.min(1024));
        while let Some(chunk) = response.chunk().await.map_err(request_error)? {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(CimdError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched { headers, body })
    }
}

struct Fetched {
    headers: HeaderMap,
    body: Vec<u8>,
}

/// Reads the extra CA bundle: at least one certificate, each a valid trust
/// anchor. Used to check the setting at start as well as to build the client.
pub fn load_extra_ca(path: &Path) -> Result<Vec<Certificate>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let certificates = Certificate::from_pem_bundle(&pem)
        .map_err(|e| format!("{} is not a PEM certificate bundle: {e}", path.display()))?;
    if certificates.is_empty() {
        return Err(format!(
            "{} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            path.display()
        ));
    }
    // A client trusting only these roots parses each one as a trust anchor,
    // without loading the platform's roots.
    reqwest::Client::builder()
        .tls_certs_only(certificates.clone())
        .build()
        .map_err(|e| {
            format!(
                "{} holds a certificate that is not a usable CA: {}",
                path.display(),
                error_chain(&e)
            )
        })?;
    Ok(certificates)
}

/// Checks the shape of a `client_id` before anything else happens.
fn parse_client_id(client_id: &str) -> Result<Url, CimdError> {
    if client_id.len() > MAX_CLIENT_ID_BYTES {
        return Err(CimdError::NotHttpsUrl);
    }
    let url = Url::parse(client_id).map_err(|_| CimdError::NotHttpsUrl)?;
    let acceptable = url.scheme() == "https"
        && url.host().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.fragment().is_none()
        && url.path() != "/"
        // Canonical form only: no dot segments, upper-case host, default
        // port or other spelling that the parser would rewrite.
        && url.as_str() == client_id;
    if acceptable {
        Ok(url)
    } else {
        Err(CimdError::NotHttpsUrl)
    }
}

fn document_host(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

fn header(headers: &HeaderMap, name: reqwest::header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Every value of a list header, joined as one.
fn joined(headers: &HeaderMap, name: reqwest::header::HeaderName) -> Option<String> {
    let values: Vec<&str> = headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    (!values.is_empty()).then(|| values.join(","))
}

/// Maps a transport failure to the reason behind it: a refused or
/// unresolvable address is reported as such, wherever in the chain it sits.
fn request_error(err: reqwest::Error) -> CimdError {
    if err.is_timeout() {
        return CimdError::Timeout;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    while let Some(current) = source {
        if let Some(refused) = current.downcast_ref::<AddressRefused>() {
            return CimdError::ForbiddenAddress(refused.to_string());
        }
        if let Some(failed) = current.downcast_ref::<ResolveFailed>() {
            return CimdError::Resolve(failed.to_string());
        }
        source = current.source();
    }
    CimdError::Fetch(error_chain(&err))
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    const NOW: OffsetDateTime = datetime!(2026-12-01 12:00:00 UTC);

    #[test]
    fn client_ids_must_be_canonical_https_urls_with_a_path() {
        assert!(parse_client_id("https://app.example/client.json").is_ok());
        assert!(parse_client_id("https://app.example:8443/c?v=1").is_ok());
        for bad in [
            "http://app.example/client.json",
            "https://app.example",
            "https://app.example/",
            "https://app.example/c#frag",
            "https://user@app.example/c",
            "https://user:pw@app.example/c",
            "https://APP.example/c",
            "https://app.example:443/c",
            "https://app.example/a/../c",
            "ftp://app.example/c",
            "app.example/c",
            "",
        ] {
            assert!(
                matches!(parse_client_id(bad), Err(CimdError::NotHttpsUrl)),
                "{bad}"
            );
        }
        let long = format!("https://app.example/{}", "a".repeat(MAX_CLIENT_ID_BYTES));
        assert!(matches!(
            parse_client_id(&long),
            Err(CimdError::NotHttpsUrl)
        ));
    }

    #[test]
    fn the_document_host_keeps_an_explicit_port() {
        let url = Url::parse("https://app.example:8443/c").unwrap();
        assert_eq!(document_host(&url), "app.example:8443");
        let url = Url::parse("https://app.example/c").unwrap();
        assert_eq!(document_host(&url), "app.example");
    }

    async fn refused_before_connecting(url: &str, allow_loopback: bool) -> CimdError {
        let fetcher = CimdFetcher::new(CimdTestSettings {
            extra_ca_pem: None,
            allow_loopback,
        })
        .unwrap();
        // Port 9 (discard) on these addresses is never contacted: a
        // connection attempt would come back as Fetch or Timeout instead.
        fetcher
            .with_timeout(Duration::from_secs(2))
            .fetch(url, NOW)
            .await
            .unwrap_err()
    }

    #[tokio::test]
    async fn literal_private_addresses_are_refused_before_any_connection() {
        for url in [
            "https://10.0.0.1/x",
            "https://10.0.0.1:9/x",
            "https://172.16.0.1/x",
            "https://192.168.1.1/x",
            "https://169.254.169.254/latest/meta-data",
            "https://100.64.0.1/x",
            "https://0.0.0.0/x",
            "https://224.0.0.1/x",
            "https://[fc00::1]/x",
            "https://[fe80::1]/x",
            // ::ffff:10.0.0.1 and ::ffff:169.254.169.254, spelt canonically
            // (the dotted spelling is refused earlier, as non-canonical).
            "https://[::ffff:a00:1]/x",
            "https://[::ffff:a9fe:a9fe]/x",
        ] {
            let err = refused_before_connecting(url, false).await;
            assert!(
                matches!(err, CimdError::ForbiddenAddress(_)),
                "{url}: {err:?}"
            );
            // Loopback permission does not open private ranges.
            let err = refused_before_connecting(url, true).await;
            assert!(
                matches!(err, CimdError::ForbiddenAddress(_)),
                "{url}: {err:?}"
            );
        }
    }

    #[tokio::test]
    async fn literal_loopback_is_refused_unless_allowed() {
        for url in ["https://127.0.0.1:9/x", "https://[::1]:9/x"] {
            let err = refused_before_connecting(url, false).await;
            assert!(
                matches!(err, CimdError::ForbiddenAddress(_)),
                "{url}: {err:?}"
            );
        }
    }

    #[tokio::test]
    async fn an_http_client_id_is_refused() {
        let err = refused_before_connecting("http://app.example/c", true).await;
        assert!(matches!(err, CimdError::NotHttpsUrl), "{err:?}");
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_by_the_resolver() {
        let err = refused_before_connecting("https://localhost:9/x", false).await;
        assert!(matches!(err, CimdError::ForbiddenAddress(_)), "{err:?}");
    }

    #[tokio::test]
    async fn a_name_that_does_not_resolve_is_reported() {
        let err = refused_before_connecting("https://coop-test.invalid/x", false).await;
        assert!(matches!(err, CimdError::Resolve(_)), "{err:?}");
    }

    #[test]
    fn a_missing_extra_ca_is_a_settings_error_naming_the_setting() {
        let err = CimdFetcher::new(CimdTestSettings {
            extra_ca_pem: Some("/nonexistent/ca.pem".into()),
            allow_loopback: false,
        })
        .unwrap_err();
        match err {
            CimdError::Settings(why) => assert!(why.contains("COOP_CIMD_TEST_EXTRA_CA"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_extra_ca_file_without_a_certificate_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate").unwrap();
        assert!(
            load_extra_ca(&path)
                .unwrap_err()
                .contains("no PEM certificate")
        );
        let garbage = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        std::fs::write(&path, garbage).unwrap();
        assert!(load_extra_ca(&path).is_err());
    }
}
