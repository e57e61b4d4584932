//! Whether a URL leads to the computer the browser runs on.
//!
//! Two decisions rest on it. A redirect URI there proves nothing about
//! which program is asking, over https as over http (RFC 8252 §8.6): the
//! code goes to whatever program listens on the port, so such a client is
//! asked every time and the consent page warns of it. And a page served
//! from there (an `Origin` such as the MCP Inspector's
//! `http://localhost:6274`) is a program the person runs, not a web site,
//! so only such a page may register a client from a browser.

use url::{Host, Url};

/// Whether `raw` is a URL whose host is this computer, whatever its
/// scheme or port: a loopback address (`127.0.0.0/8`, `[::1]`, also spelt
/// as an IPv4-mapped address), an unspecified one (`0.0.0.0`, `[::]`,
/// which browsers reach as this computer), or `localhost` and any name
/// under it (RFC 6761 §6.3: browsers answer them with loopback without
/// asking DNS).
pub fn is_on_this_computer(raw: &str) -> bool {
    let Ok(url) = Url::parse(raw) else {
        return false;
    };
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback() || ip.is_unspecified(),
        Some(Host::Ipv6(ip)) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.is_loopback() || v4.is_unspecified())
        }
        Some(Host::Domain(name)) => {
            let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_to_this_computer_is_recognised_whatever_its_scheme() {
        for here in [
            "http://localhost:8080/cb",
            "http://127.0.0.1/cb",
            "http://[::1]/cb",
            "https://127.0.0.1/cb",
            "https://localhost/cb",
            "https://[::1]/cb",
            "https://127.0.0.2:8443/cb",
            "https://127.255.255.254/cb",
            "https://[::ffff:127.0.0.1]/cb",
            "https://0.0.0.0/cb",
            "https://[::]/cb",
            "https://[::ffff:0.0.0.0]/cb",
            "https://LocalHost/cb",
            "https://localhost./cb",
            "https://app.localhost/cb",
            "https://a.b.localhost:3000/cb",
            "myapp://localhost/cb",
            "http://localhost:6274",
        ] {
            assert!(is_on_this_computer(here), "{here}");
        }
        for elsewhere in [
            "http://192.168.1.1/cb",
            "https://app.example/cb",
            "https://128.0.0.1/cb",
            "https://126.255.255.255/cb",
            "https://[::2]/cb",
            "https://[::ffff:128.0.0.1]/cb",
            "https://localhost.example/cb",
            "https://notlocalhost/cb",
            "https://localhostx/cb",
            "https://evil.example",
            "myapp:/cb",
            "null",
            "not a uri",
        ] {
            assert!(!is_on_this_computer(elsewhere), "{elsewhere}");
        }
    }
}
