//! Client ID Metadata Documents: a `client_id` that is an https URL names a
//! JSON document describing the client, which Coop fetches; and the key sets
//! (RFC 7517) behind a client's `jwks_uri`, fetched the same way.
//!
//! # The defence against pointing the fetch inward (threat 13, SSRF)
//!
//! The URL comes from whoever starts an authorization request, so fetching
//! it would let a stranger make Coop open connections inside its network.
//! The fetcher therefore:
//!
//! 1. accepts only `https://host/path` URLs: no fragment, no user
//!    information, at most 2048 bytes, and already in canonical form, so the
//!    URL fetched is byte for byte the `client_id` compared later
//!    ([`fetch_url`]);
//! 2. refuses an IP-literal host outright when its address is not public
//!    ([`address`]), before any connection;
//! 3. resolves a host name itself and refuses the host if *any* address it
//!    resolves to is not public ([`resolver`]). The transport connects only
//!    to the addresses returned, so a DNS answer that changes between check
//!    and use cannot slip in another address; behind the outbound proxy
//!    ([`proxy`]) it asks for a tunnel to the checked address, never to the
//!    name, so the proxy resolves nothing;
//! 4. verifies TLS with rustls against the platform's root certificates,
//!    with the host's name ([`tls`]);
//! 5. refuses redirects (a 3xx is an error, not followed), any status but
//!    200, a body larger than 5 KiB (documents) or 16 KiB (key sets), read
//!    in chunks and cut off, and anything that takes longer than 5 s in
//!    total, from resolving to the last byte ([`transport`]);
//! 6. validates what it fetched ([`document`], [`key_set`]) and caches it
//!    for between one minute and one day according to its cache headers
//!    ([`cache`]).
//!
//! # The defence against amplification (threat 33)
//!
//! Nobody needs to be signed in to make Coop fetch a URL, so what one
//! request can make Coop do is bounded too:
//!
//! - a fresh copy in the cache costs nothing; so does a failure, which is
//!   remembered for 30 s ([`cache::FAILURE_FRESHNESS`]);
//! - concurrent requests for a URL being fetched wait for that one fetch
//!   and share its result ([`single_flight`]);
//! - a request that would start a fetch must pass four limits
//!   ([`limits`]): per requesting network (an IPv4 address, an IPv6 /64),
//!   per target host, a cap on fetches in flight and each network's share
//!   of them; beyond them it is refused at once with
//!   [`CimdError::Throttled`] and when to try again;
//! - a key set is fetched again before its freshness ends only when a `kid`
//!   is not in it, and then at most once per [`KEY_SET_REFETCH_INTERVAL`].
//!
//! The per-network limits need the address, so the fetcher is used through
//! [`CimdFetcher::for_peer`], which every handler calls with the peer
//! address of its connection.
//!
//! # When a host is down
//!
//! The last good copy of each document and key set a known client relies on
//! is kept in the shared store and served, within a grace period, when
//! fetching it again fails because its host is down; never when the host
//! answered with a refusal or a document that fails the checks
//! ([`copies`]).
//!
//! For tests and development only, [`CimdTestSettings`] may add a trusted CA
//! certificate and admit loopback addresses (and nothing else: private
//! ranges stay refused). Both are off by default and logged as a warning at
//! start when on.

pub mod address;
pub mod cache;
pub mod copies;
pub mod document;
pub mod fetch_url;
pub mod key_set;
pub mod limits;
pub mod proxy;
mod resolver;
mod single_flight;
mod tls;
mod transport;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use http::header::{CACHE_CONTROL, DATE, EXPIRES};
use jsonwebtoken::jwk::JwkSet;
use time::OffsetDateTime;
use url::{Host, Url};

use crate::config::CimdTestSettings;
use crate::oauth::client::{AssertionKeys, AuthMethod, NoCommonMethod};
use cache::Cache;
use copies::LastGoodCopies;
pub use document::AuthMetadata;
pub use key_set::MAX_KEY_SET_BYTES;
pub use limits::{Limit, Throttle};
use limits::{Limits, Permit};
pub use proxy::{OUTBOUND_PROXY_SETTING, OutboundProxy};
use single_flight::{Decision, SingleFlight};
pub use tls::{EXTRA_CA_SETTING, load_extra_ca};
use transport::{Transport, header, joined};

use crate::storage::last_good_copies::CopyKind;

/// The whole fetch, from resolving the host to the last byte of the body.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest document accepted.
pub const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// The longest `client_id` URL accepted.
pub const MAX_CLIENT_ID_BYTES: usize = fetch_url::MAX_URL_BYTES;
/// How many documents the cache holds.
pub const CACHE_CAPACITY: usize = 1024;
/// How many key sets the cache holds (each up to 16 KiB).
pub const KEY_SET_CACHE_CAPACITY: usize = 256;
/// How many failures are remembered, per kind.
pub const FAILURE_CACHE_CAPACITY: usize = 1024;
/// The shortest time between two fetches of one key set caused by `kid`s
/// it does not hold: the same as the shortest freshness, so unknown `kid`s
/// cannot make Coop fetch a key set more often than a host that forbids
/// caching already can.
pub const KEY_SET_REFETCH_INTERVAL: time::Duration = cache::MIN_FRESHNESS;

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
    /// How the client authenticates at the token endpoint, as the document
    /// says.
    pub auth: AuthMetadata,
    /// The method negotiated from `auth` ([`document`]).
    pub auth_method: AuthMethod,
    /// With `private_key_jwt`, where its keys are and its algorithm.
    pub assertion_keys: Option<AssertionKeys>,
    /// Until when the cached copy may be used without fetching again.
    pub fresh_until: OffsetDateTime,
    /// What it was read from, kept as its last good copy when its client
    /// is recorded.
    pub source: Source,
}

/// The body a document was read from and when it was fetched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub body: Arc<str>,
    pub fetched_at: OffsetDateTime,
}

/// Why a document or key set cannot be used. `Throttled` means "not now"
/// (the caller answers 429 or 503 with `Retry-After`); `Settings` is a
/// start-up error; every other variant is a client error (`invalid_client`
/// / an error page), the variant being for the log.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CimdError {
    #[error("the URL is not a canonical https URL Coop fetches")]
    NotHttpsUrl,
    #[error("the host resolves to an address Coop does not fetch from: {0}")]
    ForbiddenAddress(String),
    #[error("the host does not resolve: {0}")]
    Resolve(String),
    #[error("fetch failed: {0}")]
    Fetch(String),
    #[error("the URL answered {0}")]
    Status(u16),
    #[error("redirects are not followed")]
    Redirect,
    #[error("the body is larger than Coop accepts")]
    TooLarge,
    #[error("the fetch took longer than the time allowed")]
    Timeout,
    #[error("the document's client_id is not the URL it was fetched from")]
    ClientIdMismatch,
    #[error("the document asks for shared-secret client authentication")]
    SharedSecretAuth,
    /// The document offers only methods Coop lacks.
    #[error("{0}")]
    NoCommonAuthMethod(NoCommonMethod),
    #[error("the document is not valid: {0}")]
    Invalid(String),
    #[error("the key set is not valid: {0}")]
    InvalidKeySet(String),
    /// A fetch would be needed, and a limit refuses it now.
    #[error("not fetched now: {0}")]
    Throttled(Throttle),
    /// The fetcher cannot be built from its settings (a start-up error).
    #[error("{0}")]
    Settings(String),
}

/// Fetches and caches documents and key sets; shared by every handler
/// (clones share everything).
#[derive(Clone, Debug)]
pub struct CimdFetcher {
    shared: Arc<Shared>,
    timeout: Duration,
    /// Where last good copies are kept; none: nothing is kept or served.
    copies: Option<Arc<LastGoodCopies>>,
}

#[derive(Debug)]
struct Shared {
    transport: Transport,
    allow_loopback: bool,
    limits: Limits,
    documents: Kept<ClientMetadataDocument>,
    key_sets: Kept<JwkSet>,
}

/// Everything kept about one kind of resource.
#[derive(Debug)]
struct Kept<R> {
    fresh: Cache<Arc<R>>,
    failed: Cache<CimdError>,
    pending: SingleFlight<Result<Arc<R>, CimdError>>,
}

impl<R> Kept<R> {
    fn new(capacity: usize) -> Self {
        Self {
            fresh: Cache::new(capacity),
            failed: Cache::new(FAILURE_CACHE_CAPACITY),
            pending: SingleFlight::default(),
        }
    }

    /// The cached copy if fresh and, when `refetch_after` is given, fetched
    /// less than that long ago.
    fn usable(
        &self,
        url: &str,
        now: OffsetDateTime,
        refetch_after: Option<time::Duration>,
    ) -> Option<Arc<R>> {
        let entry = self.fresh.entry(url, now)?;
        match refetch_after {
            Some(interval) if now - entry.fetched_at >= interval => None,
            _ => Some(entry.value),
        }
    }

    /// What a request gets without fetching: a usable copy or a
    /// remembered failure.
    fn known(
        &self,
        url: &str,
        now: OffsetDateTime,
        refetch_after: Option<time::Duration>,
    ) -> Option<Result<Arc<R>, CimdError>> {
        if let Some(kept) = self.usable(url, now, refetch_after) {
            return Some(Ok(kept));
        }
        self.failed.get(url, now).map(Err)
    }
}

/// One kind of thing the fetcher fetches.
trait Resource: Sized + Send + Sync + 'static {
    /// For the log.
    const WHAT: &'static str;
    /// Its last good copies' kind.
    const KIND: CopyKind;
    const ACCEPT: &'static str;
    const MAX_BYTES: usize;
    fn parse_url(raw: &str) -> Result<Url, CimdError>;
    fn kept(shared: &Shared) -> &Kept<Self>;
    /// Checks the body fetched from `url` (`raw` as given) at `fetched_at`.
    fn build(
        body: &[u8],
        raw: &str,
        url: &Url,
        fetched_at: OffsetDateTime,
        fresh_until: OffsetDateTime,
    ) -> Result<Self, CimdError>;
}

impl Resource for ClientMetadataDocument {
    const WHAT: &'static str = "client metadata document";
    const KIND: CopyKind = CopyKind::Document;
    const ACCEPT: &'static str = "application/json";
    const MAX_BYTES: usize = MAX_DOCUMENT_BYTES;

    fn parse_url(raw: &str) -> Result<Url, CimdError> {
        fetch_url::parse_client_id(raw)
    }

    fn kept(shared: &Shared) -> &Kept<Self> {
        &shared.documents
    }

    fn build(
        body: &[u8],
        raw: &str,
        url: &Url,
        fetched_at: OffsetDateTime,
        fresh_until: OffsetDateTime,
    ) -> Result<Self, CimdError> {
        let valid = document::validate(body, raw)?;
        let body =
            std::str::from_utf8(body).map_err(|_| CimdError::Invalid("not UTF-8".to_owned()))?;
        Ok(Self {
            client_id: raw.to_owned(),
            client_name: valid.client_name,
            redirect_uris: valid.redirect_uris,
            document_host: fetch_url::document_host(url),
            auth: valid.auth,
            auth_method: valid.auth_method,
            assertion_keys: valid.assertion_keys,
            fresh_until,
            source: Source {
                body: Arc::from(body),
                fetched_at,
            },
        })
    }
}

impl Resource for JwkSet {
    const WHAT: &'static str = "key set";
    const KIND: CopyKind = CopyKind::KeySet;
    const ACCEPT: &'static str = "application/jwk-set+json, application/json";
    const MAX_BYTES: usize = MAX_KEY_SET_BYTES;

    fn parse_url(raw: &str) -> Result<Url, CimdError> {
        fetch_url::parse_key_set_url(raw)
    }

    fn kept(shared: &Shared) -> &Kept<Self> {
        &shared.key_sets
    }

    fn build(
        body: &[u8],
        _: &str,
        _: &Url,
        _: OffsetDateTime,
        _: OffsetDateTime,
    ) -> Result<Self, CimdError> {
        key_set::parse(body)
    }
}

impl CimdFetcher {
    /// A fetcher with the production limits and, when set, the test
    /// settings, connecting directly.
    pub fn new(settings: CimdTestSettings) -> Result<Self, CimdError> {
        Self::with_proxy(settings, None)
    }

    /// A fetcher that reaches document hosts through `proxy`, when given.
    pub fn with_proxy(
        settings: CimdTestSettings,
        proxy: Option<OutboundProxy>,
    ) -> Result<Self, CimdError> {
        Ok(Self {
            shared: Arc::new(Shared {
                transport: Transport::new(&settings, proxy)?,
                allow_loopback: settings.allow_loopback,
                limits: Limits::default(),
                documents: Kept::new(CACHE_CAPACITY),
                key_sets: Kept::new(KEY_SET_CACHE_CAPACITY),
            }),
            timeout: FETCH_TIMEOUT,
            copies: None,
        })
    }

    /// The same fetcher, keeping last good copies in `copies` and serving
    /// them while a host is down.
    pub fn keeping_copies(mut self, copies: Arc<LastGoodCopies>) -> Self {
        self.copies = Some(copies);
        self
    }

    /// Deletes last good copies past their grace (housekeeping).
    pub async fn sweep_copies(
        &self,
        now: OffsetDateTime,
    ) -> Result<u64, crate::storage::StoreError> {
        match &self.copies {
            Some(copies) => copies.sweep(now).await,
            None => Ok(0),
        }
    }

    /// The same fetcher (sharing its caches and limits) with another total
    /// time limit. Production uses [`FETCH_TIMEOUT`]; tests shorten it so a
    /// slow host need not keep them waiting five seconds.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The fetcher as used by a request from `address` (the peer address of
    /// its connection), whose network the per-network limits count.
    pub fn for_peer(&self, address: IpAddr) -> CimdRequest<'_> {
        CimdRequest {
            fetcher: self,
            from: address,
        }
    }

    /// How many requests are waiting on the fetch of `url` in progress
    /// besides the one that started it (0 when none is in progress): what
    /// coalescing saved, for tests and diagnostics.
    pub fn joined(&self, url: &str) -> usize {
        self.shared.documents.pending.joined(url) + self.shared.key_sets.pending.joined(url)
    }

    /// How many fetches are in progress.
    pub fn in_flight(&self) -> usize {
        self.shared.limits.in_flight()
    }

    /// The resource at `raw`: a usable cached copy, a remembered failure,
    /// the result of the fetch in progress, or a new fetch if the limits
    /// admit it. `refetch_after`: treat a copy fetched that long ago as
    /// absent (the `kid` refetch).
    async fn get<R: Resource>(
        &self,
        raw: &str,
        from: IpAddr,
        now: OffsetDateTime,
        refetch_after: Option<time::Duration>,
    ) -> Result<Arc<R>, CimdError> {
        let url = R::parse_url(raw)?;
        let kept = R::kept(&self.shared);
        if let Some(known) = kept.known(raw, now, refetch_after) {
            return known;
        }
        self.refuse_literal_address(&url)?;
        let host = fetch_url::host_key(&url);
        let answer = kept
            .pending
            .run(raw, || {
                // A fetch may have ended between the look above and now.
                if let Some(known) = kept.known(raw, now, refetch_after) {
                    return Decision::Answer(known);
                }
                match self.shared.limits.admit(from, &host, now) {
                    Ok(permit) => Decision::Start(self.clone().fetch_and_keep::<R>(
                        url,
                        raw.to_owned(),
                        now,
                        permit,
                    )),
                    Err(throttle) => {
                        tracing::info!(
                            url = raw,
                            %from,
                            limit = ?throttle.limit,
                            "{} not fetched: a fetch limit is reached",
                            R::WHAT
                        );
                        Decision::Answer(Err(CimdError::Throttled(throttle)))
                    }
                }
            })
            .await;
        answer.unwrap_or_else(|| Err(CimdError::Fetch("the fetch ended without a result".into())))
    }

    /// One fetch, run in a task of its own while `permit` holds its place
    /// among the fetches in flight; its result is kept either way.
    async fn fetch_and_keep<R: Resource>(
        self,
        url: Url,
        raw: String,
        now: OffsetDateTime,
        permit: Permit,
    ) -> Result<Arc<R>, CimdError> {
        let shared = &self.shared;
        let result = async {
            let fetched = tokio::time::timeout(
                self.timeout,
                shared.transport.get(&url, R::ACCEPT, R::MAX_BYTES),
            )
            .await
            .map_err(|_| CimdError::Timeout)??;
            let fresh_for = cache::freshness(
                joined(&fetched.headers, CACHE_CONTROL).as_deref(),
                header(&fetched.headers, EXPIRES),
                header(&fetched.headers, DATE),
                now,
            );
            let value = R::build(&fetched.body, &raw, &url, now, now + fresh_for)?;
            Ok::<_, CimdError>((Arc::new(value), fresh_for, fetched.body))
        }
        .await;
        drop(permit);
        let kept = R::kept(shared);
        match result {
            Ok((value, fresh_for, body)) => {
                tracing::info!(
                    url = raw,
                    fresh_seconds = fresh_for.whole_seconds(),
                    "fetched a {}",
                    R::WHAT
                );
                kept.fresh.insert(&raw, value.clone(), now, now + fresh_for);
                if let Some(copies) = &self.copies {
                    copies.keep(R::KIND, &raw, &body, now).await;
                }
                Ok(value)
            }
            Err(err) => {
                tracing::info!(
                    url = raw,
                    error = %err,
                    remembered_seconds = cache::FAILURE_FRESHNESS.whole_seconds(),
                    "fetching a {} failed",
                    R::WHAT
                );
                if let Some(copy) = self.copy_instead::<R>(&url, &raw, &err, now).await {
                    return Ok(copy);
                }
                kept.failed
                    .insert(&raw, err.clone(), now, now + cache::FAILURE_FRESHNESS);
                Err(err)
            }
        }
    }

    /// After a failed fetch of `raw`: the last good copy if the host is
    /// down ([`copies`]), standing in for a fetched one until the host is
    /// tried again. A host that refused loses its copy.
    async fn copy_instead<R: Resource>(
        &self,
        url: &Url,
        raw: &str,
        failure: &CimdError,
        now: OffsetDateTime,
    ) -> Option<Arc<R>> {
        let copies = self.copies.as_ref()?;
        let kept = R::kept(&self.shared);
        if !copies::host_is_down(failure) {
            copies.forget(R::KIND, raw).await;
            return None;
        }
        // A copy still fresh (a `kid` refetch) stays what is held.
        if kept.fresh.entry(raw, now).is_some() {
            return None;
        }
        let until = now + cache::FAILURE_FRESHNESS;
        let copy = copies
            .serve(R::KIND, raw, failure, now, |body, fetched_at| {
                R::build(body, raw, url, fetched_at, until)
            })
            .await?;
        let copy = Arc::new(copy);
        kept.fresh.insert(raw, copy.clone(), now, until);
        Some(copy)
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
}

/// One request's use of the fetcher: the fetcher and the address the
/// request came from.
#[derive(Clone, Copy, Debug)]
pub struct CimdRequest<'a> {
    fetcher: &'a CimdFetcher,
    from: IpAddr,
}

impl CimdRequest<'_> {
    /// The address this request came from, whose network the limits count.
    pub fn address(&self) -> IpAddr {
        self.from
    }

    /// The document for `client_id`, from the cache while fresh.
    pub async fn fetch(
        &self,
        client_id: &str,
        now: OffsetDateTime,
    ) -> Result<ClientMetadataDocument, CimdError> {
        let doc = self
            .fetcher
            .get::<ClientMetadataDocument>(client_id, self.from, now, None)
            .await?;
        Ok((*doc).clone())
    }

    /// The key set at `jwks_uri`, from the cache while fresh.
    pub async fn key_set(
        &self,
        jwks_uri: &str,
        now: OffsetDateTime,
    ) -> Result<Arc<JwkSet>, CimdError> {
        self.fetcher
            .get::<JwkSet>(jwks_uri, self.from, now, None)
            .await
    }

    /// The key set at `jwks_uri` for verifying a signature by key `kid`: the
    /// cached set when it holds `kid`; otherwise the set fetched again (the
    /// client may have rotated its keys), but at most once per
    /// [`KEY_SET_REFETCH_INTERVAL`] per URL, so that a stream of unknown
    /// `kid`s cannot make Coop fetch on every request. The set returned may
    /// still lack `kid`: the caller refuses the signature then.
    pub async fn key_set_with_kid(
        &self,
        jwks_uri: &str,
        kid: &str,
        now: OffsetDateTime,
    ) -> Result<Arc<JwkSet>, CimdError> {
        let kept = &self.fetcher.shared.key_sets;
        if let Some(set) = kept.usable(jwks_uri, now, None)
            && set.find(kid).is_some()
        {
            return Ok(set);
        }
        self.fetcher
            .get::<JwkSet>(jwks_uri, self.from, now, Some(KEY_SET_REFETCH_INTERVAL))
            .await
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use time::macros::datetime;

    use super::*;

    const NOW: OffsetDateTime = datetime!(2026-12-01 12:00:00 UTC);
    const PEER: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));

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
            .for_peer(PEER)
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

    /// What the limit is for: a `private_key_jwt` client that carries its
    /// keys inline (the current 2048-bit RSA key beside its successor, as
    /// during a rotation), with a web, a desktop and a mobile redirect,
    /// must fit. (The HTTP-level tests size their bodies from the constant,
    /// so they hold it to nothing.)
    #[test]
    fn a_document_with_two_rsa_keys_inline_fits_the_size_limit() {
        let client_id = "https://assistant.example/.well-known/oauth-client/connector.json";
        let modulus = "q".repeat(342); // 2048 bits, base64url
        let keys: Vec<serde_json::Value> = ["2026-11", "2026-12"]
            .iter()
            .map(|kid| {
                serde_json::json!({
                    "kty": "RSA", "alg": "RS256", "use": "sig",
                    "kid": kid, "e": "AQAB", "n": modulus
                })
            })
            .collect();
        let document = serde_json::json!({
            "client_id": client_id,
            "client_name": "Assistant Farm Connector",
            "client_uri": "https://assistant.example/connectors/farm",
            "logo_uri": "https://assistant.example/static/connectors/farm/logo-512.png",
            "redirect_uris": [
                "https://assistant.example/connector/oauth/callback",
                "https://eu.assistant.example/connector/oauth/callback",
                "http://127.0.0.1/oauth/callback",
                "https://assistant.example/mobile/oauth/callback"
            ],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "private_key_jwt",
            "token_endpoint_auth_signing_alg": "RS256",
            "jwks": { "keys": keys }
        });
        let body = serde_json::to_vec_pretty(&document).unwrap();
        assert!(body.len() <= MAX_DOCUMENT_BYTES, "{} bytes", body.len());
        let valid = document::validate(&body, client_id).unwrap();
        assert_eq!(valid.auth_method, AuthMethod::PrivateKeyJwt);
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
