//! The one guarded HTTPS GET: connect only to checked addresses (directly
//! or through a tunnel of the outbound proxy), TLS with the host's name,
//! HTTP/1.1 on a connection of its own (no pooling), status 200 only, no
//! redirects followed, the body read in chunks and cut off at the size cap
//! of what is fetched. The total time limit is applied by the caller around
//! [`Transport::get`].
//!
//! Coop makes this connection itself (hyper's HTTP/1.1 client over a socket
//! it opened) rather than through a general HTTP client, because the SSRF
//! guard needs to choose the address: a client library resolves names on
//! its own, and behind a proxy hands the name to the proxy to resolve.

use std::net::SocketAddr;

use http::header::{ACCEPT, CONTENT_LENGTH, HOST, HeaderMap, HeaderName, USER_AGENT as UA};
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;
use url::{Host, Url};

use super::proxy::OutboundProxy;
use super::{CimdError, resolver, tls};
use crate::config::CimdTestSettings;

/// How Coop introduces itself to document hosts (and to the proxy).
pub const USER_AGENT: &str = concat!(
    "Coop/",
    env!("CARGO_PKG_VERSION"),
    " (client metadata fetcher)"
);

/// A response that passed the transport's checks.
pub struct Fetched {
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

pub struct Transport {
    tls: TlsConnector,
    allow_loopback: bool,
    proxy: Option<OutboundProxy>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("allow_loopback", &self.allow_loopback)
            .field("proxy", &self.proxy)
            .finish_non_exhaustive()
    }
}

/// Ends the connection's task when the fetch is over or abandoned (its
/// time ran out), whatever the host does.
struct Connection(tokio::task::JoinHandle<()>);

impl Drop for Connection {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Transport {
    pub fn new(
        settings: &CimdTestSettings,
        proxy: Option<OutboundProxy>,
    ) -> Result<Self, CimdError> {
        let extra_roots = match &settings.extra_ca_pem {
            Some(path) => tls::load_extra_ca(path)
                .map_err(|why| CimdError::Settings(format!("{}: {why}", tls::EXTRA_CA_SETTING)))?,
            None => Vec::new(),
        };
        Ok(Self {
            tls: tls::connector(extra_roots)?,
            allow_loopback: settings.allow_loopback,
            proxy,
        })
    }

    /// GETs `url` (a URL the fetcher accepted: https, with a host),
    /// accepting at most `max_bytes` of body. A failure to connect or to
    /// talk names the URL, for the log.
    pub async fn get(
        &self,
        url: &Url,
        accept: &'static str,
        max_bytes: usize,
    ) -> Result<Fetched, CimdError> {
        self.exchange(url, accept, max_bytes)
            .await
            .map_err(|err| match err {
                CimdError::Fetch(why) => CimdError::Fetch(format!("{url}: {why}")),
                other => other,
            })
    }

    async fn exchange(
        &self,
        url: &Url,
        accept: &'static str,
        max_bytes: usize,
    ) -> Result<Fetched, CimdError> {
        let addresses = resolver::addresses(url, self.allow_loopback).await?;
        let socket = self.connect(&addresses).await?;
        let stream = self
            .tls
            .connect(server_name(url)?, socket)
            .await
            .map_err(|e| CimdError::Fetch(format!("TLS: {e}")))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(http_error)?;
        let _connection = Connection(tokio::spawn(async move {
            // How the connection ended shows in the response or its body.
            let _ = connection.await;
        }));
        let request = Request::get(&url[url::Position::BeforePath..url::Position::AfterQuery])
            .header(HOST, authority(url))
            .header(ACCEPT, accept)
            .header(UA, USER_AGENT)
            .body(Empty::<Bytes>::new())
            .map_err(|e| CimdError::Fetch(format!("request: {e}")))?;
        let response = sender.send_request(request).await.map_err(http_error)?;
        let status = response.status();
        if status.is_redirection() {
            return Err(CimdError::Redirect);
        }
        if status != StatusCode::OK {
            return Err(CimdError::Status(status.as_u16()));
        }
        let declared = header(response.headers(), CONTENT_LENGTH)
            .and_then(|length| length.trim().parse::<u64>().ok());
        if declared.is_some_and(|length| length > max_bytes as u64) {
            return Err(CimdError::TooLarge);
        }
        let (head, mut body_stream) = response.into_parts();
        let mut body = Vec::with_capacity(max_bytes.min(1024));
        while let Some(frame) = body_stream.frame().await {
            let Ok(chunk) = frame.map_err(http_error)?.into_data() else {
                continue; // trailers
            };
            if body.len() + chunk.len() > max_bytes {
                return Err(CimdError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched {
            headers: head.headers,
            body,
        })
    }

    /// A connection to the first of `addresses` that answers, directly or
    /// through the proxy's tunnel.
    async fn connect(&self, addresses: &[SocketAddr]) -> Result<TcpStream, CimdError> {
        let mut failure = CimdError::Fetch("no address to connect to".into());
        for &address in addresses {
            let attempt = match &self.proxy {
                Some(proxy) => proxy.tunnel(address).await,
                None => TcpStream::connect(address)
                    .await
                    .map_err(|e| CimdError::Fetch(format!("connecting to {address}: {e}"))),
            };
            match attempt {
                Ok(stream) => return Ok(stream),
                Err(err) => failure = err,
            }
        }
        Err(failure)
    }
}

/// The name TLS checks the certificate against (and sends as SNI): the
/// URL's host, never the address connected to.
fn server_name(url: &Url) -> Result<ServerName<'static>, CimdError> {
    match url.host() {
        Some(Host::Domain(name)) => ServerName::try_from(name.to_owned())
            .map_err(|_| CimdError::Fetch(format!("{name} is not a name TLS accepts"))),
        Some(Host::Ipv4(ip)) => Ok(ServerName::from(std::net::IpAddr::V4(ip))),
        Some(Host::Ipv6(ip)) => Ok(ServerName::from(std::net::IpAddr::V6(ip))),
        None => Err(CimdError::NotHttpsUrl),
    }
}

/// `host[:port]` as the `Host` header wants it (the port only when the URL
/// names one).
fn authority(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

fn http_error(err: hyper::Error) -> CimdError {
    CimdError::Fetch(error_chain(&err))
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
    use super::*;

    #[test]
    fn the_host_header_and_tls_name_are_the_urls_host() {
        let url = Url::parse("https://app.example/c.json").unwrap();
        assert_eq!(authority(&url), "app.example");
        assert_eq!(
            server_name(&url).unwrap(),
            ServerName::try_from("app.example").unwrap()
        );
        let url = Url::parse("https://localhost:8443/c.json").unwrap();
        assert_eq!(authority(&url), "localhost:8443");
        let url = Url::parse("https://[2001:db8::1]:8443/c").unwrap();
        assert_eq!(authority(&url), "[2001:db8::1]:8443");
        assert_eq!(
            server_name(&url).unwrap(),
            ServerName::from("2001:db8::1".parse::<std::net::IpAddr>().unwrap())
        );
    }
}
