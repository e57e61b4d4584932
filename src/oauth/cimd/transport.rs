//! The one guarded HTTPS client and the GET it makes: https only, no proxy,
//! no redirects, no pooling, Coop's checked resolver, status 200 only, the
//! body read in chunks and cut off at the size cap of what is fetched.
//! The total time limit is applied by the caller around [`Transport::get`].

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Certificate;
use reqwest::header::{CONTENT_LENGTH, HeaderMap, HeaderName};
use url::Url;

use super::CimdError;
use super::resolver::{AddressRefused, CheckedResolver, ResolveFailed};
use crate::config::CimdTestSettings;

/// The setting that names the extra CA, quoted in its errors.
pub const EXTRA_CA_SETTING: &str = "--cimd-test-extra-ca / COOP_CIMD_TEST_EXTRA_CA";

/// A response that passed the transport's checks.
pub struct Fetched {
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

#[derive(Debug)]
pub struct Transport {
    client: reqwest::Client,
}

impl Transport {
    pub fn new(settings: &CimdTestSettings) -> Result<Self, CimdError> {
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
        Ok(Self { client })
    }

    /// GETs `url`, accepting at most `max_bytes` of body.
    pub async fn get(
        &self,
        url: Url,
        accept: &'static str,
        max_bytes: usize,
        timeout: Duration,
    ) -> Result<Fetched, CimdError> {
        let mut response = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, accept)
            .timeout(timeout)
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
        if declared.is_some_and(|length| length > max_bytes as u64) {
            return Err(CimdError::TooLarge);
        }
        let headers = response.headers().clone();
        let mut body = Vec::with_capacity(max_bytes.min(1024));
        while let Some(chunk) = response.chunk().await.map_err(request_error)? {
            if body.len() + chunk.len() > max_bytes {
                return Err(CimdError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched { headers, body })
    }
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

pub fn header(headers: &HeaderMap, name: HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Every value of a list header, joined as one.
pub fn joined(headers: &HeaderMap, name: HeaderName) -> Option<String> {
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
