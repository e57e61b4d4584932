//! Which URLs the fetcher fetches at all, checked before anything else
//! happens: `https://host/path`, no fragment, no user information, at most
//! [`MAX_URL_BYTES`], and already in canonical form (so the URL fetched is
//! byte for byte the string compared later: a metadata document's
//! `client_id`, a client's `jwks_uri`).

use url::{Host, Url};

use super::CimdError;

/// The longest URL accepted (`client_id` or `jwks_uri`).
pub const MAX_URL_BYTES: usize = 2048;

/// A `client_id` naming a metadata document: a path other than `/` too.
pub fn parse_client_id(client_id: &str) -> Result<Url, CimdError> {
    let url = parse(client_id)?;
    if url.path() == "/" {
        return Err(CimdError::NotHttpsUrl);
    }
    Ok(url)
}

/// A `jwks_uri`: any path, `/` included.
pub fn parse_key_set_url(jwks_uri: &str) -> Result<Url, CimdError> {
    parse(jwks_uri)
}

fn parse(raw: &str) -> Result<Url, CimdError> {
    if raw.len() > MAX_URL_BYTES {
        return Err(CimdError::NotHttpsUrl);
    }
    let url = Url::parse(raw).map_err(|_| CimdError::NotHttpsUrl)?;
    let acceptable = url.scheme() == "https"
        && url.host().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.fragment().is_none()
        // Canonical form only: no dot segments, upper-case host, default
        // port or other spelling that the parser would rewrite.
        && url.as_str() == raw;
    if acceptable {
        Ok(url)
    } else {
        Err(CimdError::NotHttpsUrl)
    }
}

/// The host with `:port` when the URL names one, as the consent page shows it.
pub fn document_host(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// The host without its port: what the per-host limit counts, so that one
/// host cannot be reached port by port.
pub fn host_key(url: &Url) -> String {
    match url.host() {
        Some(Host::Domain(name)) => name.to_ascii_lowercase(),
        Some(Host::Ipv4(v4)) => v4.to_string(),
        Some(Host::Ipv6(v6)) => format!("[{v6}]"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_of_the_longest_length_is_read_and_one_byte_more_is_not() {
        let base = "https://app.example/";
        let longest = format!("{base}{}", "a".repeat(MAX_URL_BYTES - base.len()));
        assert_eq!(longest.len(), MAX_URL_BYTES);
        assert!(parse_client_id(&longest).is_ok());
        assert!(parse_key_set_url(&longest).is_ok());
        let longer = format!("{longest}a");
        assert_eq!(parse_client_id(&longer), Err(CimdError::NotHttpsUrl));
        assert_eq!(parse_key_set_url(&longer), Err(CimdError::NotHttpsUrl));
    }

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
        let long = format!("https://app.example/{}", "a".repeat(MAX_URL_BYTES));
        assert!(matches!(
            parse_client_id(&long),
            Err(CimdError::NotHttpsUrl)
        ));
    }

    #[test]
    fn key_set_urls_follow_the_same_rules_but_may_be_the_root() {
        assert!(parse_key_set_url("https://keys.example/").is_ok());
        assert!(parse_key_set_url("https://app.example/.well-known/jwks.json").is_ok());
        for bad in [
            "http://keys.example/jwks.json",
            "https://keys.example",
            "https://KEYS.example/jwks.json",
            "https://keys.example/jwks.json#k",
            "https://u@keys.example/jwks.json",
        ] {
            assert!(
                matches!(parse_key_set_url(bad), Err(CimdError::NotHttpsUrl)),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_document_host_keeps_an_explicit_port() {
        let url = Url::parse("https://app.example:8443/c").unwrap();
        assert_eq!(document_host(&url), "app.example:8443");
        let url = Url::parse("https://app.example/c").unwrap();
        assert_eq!(document_host(&url), "app.example");
    }

    #[test]
    fn the_host_key_drops_the_port() {
        for (url, key) in [
            ("https://app.example:8443/c", "app.example"),
            ("https://app.example/c", "app.example"),
            ("https://192.0.2.1:9/c", "192.0.2.1"),
            ("https://[2001:db8::1]:9/c", "[2001:db8::1]"),
        ] {
            assert_eq!(host_key(&Url::parse(url).unwrap()), key, "{url}");
        }
    }
}
