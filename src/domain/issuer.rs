//! The issuer: the public origin every URL Coop prints starts with.

use std::net::SocketAddr;

use url::Url;

/// Why a string is not an issuer, in words for the operator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IssuerError(pub String);

/// The public origin of the server, exactly as clients must see it:
/// `scheme://host[:port]`, no path, no query, no trailing slash.
///
/// MCP clients compare the authorization server's `issuer`, the resource
/// metadata's `authorization_servers[0]` and the `iss` response parameter
/// character for character, so this string is built once and reused verbatim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issuer(String);

impl Issuer {
    pub fn parse(raw: &str) -> Result<Self, IssuerError> {
        let trimmed = raw.trim().trim_end_matches('/');
        let url =
            Url::parse(trimmed).map_err(|e| IssuerError(format!("not an absolute URL ({e})")))?;
        if url.scheme() != "https" && url.scheme() != "http" {
            return Err(IssuerError("the scheme must be https or http".to_owned()));
        }
        if url.host_str().is_none() {
            return Err(IssuerError("a host is required".to_owned()));
        }
        if url.path() != "/" && !url.path().is_empty() {
            return Err(IssuerError(
                "must be an origin only, without a path".to_owned(),
            ));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(IssuerError(
                "must be an origin only, without a query or fragment".to_owned(),
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(IssuerError("must not carry credentials".to_owned()));
        }
        // `Url` normalises the scheme and host to lower case and drops a
        // default port; its origin serialisation has no trailing slash.
        Ok(Self(url.origin().ascii_serialization()))
    }

    /// The issuer that a server bound to `addr` answers as when none is set.
    pub fn from_bound_address(addr: SocketAddr) -> Self {
        Self(format!("http://{addr}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_https(&self) -> bool {
        self.0.starts_with("https://")
    }

    /// `<issuer><path>`, for every URL Coop prints.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.0, path)
    }

    /// The one protected resource: the MCP endpoint.
    pub fn mcp_resource(&self) -> String {
        self.url("/mcp")
    }

    /// `host[:port]` as a `Host` header would carry it.
    pub fn authority(&self) -> &str {
        self.0
            .split_once("://")
            .map(|(_, rest)| rest)
            .unwrap_or(&self.0)
    }
}

impl std::fmt::Display for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
