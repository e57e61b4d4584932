//! The outbound proxy (`--outbound-proxy`), for servers that reach the
//! internet only through one: an `http://` proxy that opens tunnels with
//! `CONNECT` (RFC 9110 §9.3.6), optionally with a user name and password
//! (sent as `Proxy-Authorization: Basic`).
//!
//! The proxy is asked for a tunnel to an *address*, never to a name: the
//! fetcher resolves the document host itself and checks every address
//! ([`super::resolver`]) exactly as without a proxy, then asks for
//! `CONNECT <checked address>:<port>`. Were the name handed over, the proxy
//! would resolve it again, and a DNS answer that changed in between (or a
//! proxy that sees other names than Coop) would open a tunnel inside the
//! network the proxy sits in. TLS then runs through the tunnel with the
//! host's name (SNI and certificate check) as on a direct connection. The
//! proxy's own address is the operator's choice and is not checked: it is
//! usually on the private network.

use std::net::SocketAddr;

use base64::Engine as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use url::{Host, Url};

use super::CimdError;

/// The setting, quoted in its errors.
pub const OUTBOUND_PROXY_SETTING: &str = "--outbound-proxy / COOP_OUTBOUND_PROXY";

/// The longest proxy answer to a `CONNECT` read before giving up.
const MAX_ANSWER_BYTES: usize = 8 * 1024;

/// Where the proxy is, and how to authenticate to it. Its `Debug` shows no
/// credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct OutboundProxy {
    host: Host<String>,
    port: u16,
    /// The `Proxy-Authorization` value, when the URL carries credentials.
    authorization: Option<String>,
}

impl std::fmt::Debug for OutboundProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundProxy")
            .field("address", &self.address())
            .field(
                "credentials",
                &self.authorization.as_ref().map(|_| "redacted"),
            )
            .finish()
    }
}

impl OutboundProxy {
    /// Reads `http://[user:password@]host[:port]` (port 80 when absent).
    pub fn parse(raw: &str) -> Result<Self, String> {
        let url = Url::parse(raw.trim()).map_err(|e| format!("not a URL ({e})"))?;
        if url.scheme() != "http" {
            return Err("must be an http:// URL (a proxy that opens tunnels with CONNECT)".into());
        }
        if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
            return Err("must be http://host:port, without a path or query".into());
        }
        let (Some(host), Some(port)) = (url.host(), url.port_or_known_default()) else {
            return Err("must name the proxy's host".into());
        };
        let authorization = if url.username().is_empty() && url.password().is_none() {
            None
        } else {
            let decode = |part: &str| {
                percent_encoding::percent_decode_str(part)
                    .decode_utf8()
                    .map(|decoded| decoded.into_owned())
                    .map_err(|_| "its user name or password is not UTF-8".to_owned())
            };
            let credentials = format!(
                "{}:{}",
                decode(url.username())?,
                decode(url.password().unwrap_or_default())?
            );
            Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(credentials)
            ))
        };
        Ok(Self {
            host: host.to_owned(),
            port,
            authorization,
        })
    }

    /// `host:port`, for the log.
    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// A connection to `target` through the proxy, ready for TLS.
    pub async fn tunnel(&self, target: SocketAddr) -> Result<TcpStream, CimdError> {
        let unreachable = |e: std::io::Error| {
            CimdError::Fetch(format!(
                "cannot connect to the outbound proxy {}: {e}",
                self.address()
            ))
        };
        let mut stream = match &self.host {
            Host::Domain(name) => TcpStream::connect((name.as_str(), self.port)).await,
            Host::Ipv4(ip) => TcpStream::connect((*ip, self.port)).await,
            Host::Ipv6(ip) => TcpStream::connect((*ip, self.port)).await,
        }
        .map_err(unreachable)?;
        stream
            .write_all(self.connect_request(target).as_bytes())
            .await
            .map_err(unreachable)?;
        let status = read_answer(&mut stream).await.map_err(|why| {
            CimdError::Fetch(format!("the outbound proxy {}: {why}", self.address()))
        })?;
        if !(200..300).contains(&status) {
            return Err(CimdError::Fetch(format!(
                "the outbound proxy {} answered {status} to CONNECT {target}",
                self.address()
            )));
        }
        Ok(stream)
    }

    fn connect_request(&self, target: SocketAddr) -> String {
        // SocketAddr's Display brackets an IPv6 address, as the
        // authority-form of a request target wants.
        let mut request = format!(
            "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nUser-Agent: {}\r\n",
            super::transport::USER_AGENT
        );
        if let Some(authorization) = &self.authorization {
            request.push_str(&format!("Proxy-Authorization: {authorization}\r\n"));
        }
        request.push_str("\r\n");
        request
    }
}

/// Reads the proxy's answer head and returns its status. The tunnel's
/// first bytes are Coop's (the TLS hello), so a proxy that sends anything
/// after its head is not one to trust with the tunnel.
async fn read_answer(stream: &mut TcpStream) -> Result<u16, String> {
    let mut head = Vec::with_capacity(256);
    let mut chunk = [0_u8; 512];
    let end = loop {
        let read = stream
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading its answer: {e}"))?;
        if read == 0 {
            return Err("it closed the connection without answering".into());
        }
        head.extend_from_slice(&chunk[..read]);
        if let Some(at) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if head.len() > MAX_ANSWER_BYTES {
            return Err("its answer is too long".into());
        }
    };
    if end != head.len() {
        return Err("it sent data before the tunnel was used".into());
    }
    let status_line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let status_line = String::from_utf8_lossy(status_line);
    let mut parts = status_line.split(' ');
    match (parts.next(), parts.next().map(str::parse::<u16>)) {
        (Some(version), Some(Ok(status))) if version.starts_with("HTTP/1.") => Ok(status),
        _ => Err(format!("its answer is not HTTP: {status_line:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxy_is_an_http_url_with_a_host_and_port() {
        let proxy = OutboundProxy::parse("http://proxy.internal:3128").unwrap();
        assert_eq!(proxy.address(), "proxy.internal:3128");
        assert_eq!(proxy.authorization, None);
        assert_eq!(
            OutboundProxy::parse(" http://10.0.0.8/ ")
                .unwrap()
                .address(),
            "10.0.0.8:80"
        );
        assert_eq!(
            OutboundProxy::parse("http://[fd00::8]:8080")
                .unwrap()
                .address(),
            "[fd00::8]:8080"
        );
        for bad in [
            "https://proxy.internal:3128",
            "socks5://proxy.internal:1080",
            "proxy.internal:3128",
            "http://proxy.internal:3128/path",
            "http://proxy.internal:3128/?a=b",
            "http://",
            "",
        ] {
            assert!(OutboundProxy::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn credentials_become_basic_authorization_and_are_never_shown() {
        let proxy = OutboundProxy::parse("http://coop:s%40cret@proxy.internal:3128").unwrap();
        // base64("coop:s@cret")
        assert_eq!(
            proxy.authorization.as_deref(),
            Some("Basic Y29vcDpzQGNyZXQ=")
        );
        let shown = format!("{proxy:?}");
        assert!(
            !shown.contains("s@cret") && !shown.contains("Y29vcD"),
            "{shown}"
        );
        assert!(shown.contains("redacted"), "{shown}");
        let request = proxy.connect_request("203.0.113.9:443".parse().unwrap());
        assert_eq!(
            request,
            format!(
                "CONNECT 203.0.113.9:443 HTTP/1.1\r\nHost: 203.0.113.9:443\r\nUser-Agent: {}\r\n\
                 Proxy-Authorization: Basic Y29vcDpzQGNyZXQ=\r\n\r\n",
                super::super::transport::USER_AGENT
            )
        );
    }

    #[test]
    fn an_ipv6_target_is_bracketed() {
        let proxy = OutboundProxy::parse("http://proxy.internal:3128").unwrap();
        let request = proxy.connect_request("[2001:4860::8888]:443".parse().unwrap());
        assert!(
            request.starts_with("CONNECT [2001:4860::8888]:443 HTTP/1.1\r\n"),
            "{request}"
        );
    }
}
