//! Where a fetch may connect: the host's addresses, each one checked.
//!
//! A host name is resolved with the system resolver, and the addresses are
//! used only if every one of them is permitted ([`super::address`]). The
//! transport connects to exactly the addresses returned here, directly or
//! by asking the outbound proxy for a tunnel to one of them, so the check
//! and the connection cannot disagree: there is no second lookup, by Coop
//! or by a proxy, that a DNS rebinding answer could change. One forbidden
//! address refuses the whole host rather than being filtered out: a name
//! that points inside the network is not a client's public document host.
//! An IP-literal host is checked the same way, without a lookup.

use std::net::{IpAddr, SocketAddr};

use url::{Host, Url};

use super::{CimdError, address};

/// The addresses to connect to for `url`, every one of them permitted.
pub async fn addresses(url: &Url, allow_loopback: bool) -> Result<Vec<SocketAddr>, CimdError> {
    let port = url.port_or_known_default().ok_or(CimdError::NotHttpsUrl)?;
    let (host, found) = match url.host() {
        Some(Host::Domain(name)) => {
            let found = tokio::net::lookup_host((name, port))
                .await
                .map_err(|e| CimdError::Resolve(format!("{name}: {e}")))?;
            (name.to_owned(), found.collect())
        }
        Some(Host::Ipv4(ip)) => (ip.to_string(), vec![SocketAddr::new(IpAddr::V4(ip), port)]),
        Some(Host::Ipv6(ip)) => (ip.to_string(), vec![SocketAddr::new(IpAddr::V6(ip), port)]),
        None => return Err(CimdError::NotHttpsUrl),
    };
    check_all(&host, found, allow_loopback)
}

/// `Ok(addresses)` only when there is one and every one is permitted.
pub fn check_all(
    host: &str,
    addresses: Vec<SocketAddr>,
    allow_loopback: bool,
) -> Result<Vec<SocketAddr>, CimdError> {
    if addresses.is_empty() {
        return Err(CimdError::Resolve(format!("{host}: no addresses")));
    }
    for addr in &addresses {
        if let Err(reason) = address::permitted(addr.ip(), allow_loopback) {
            return Err(CimdError::ForbiddenAddress(format!(
                "{host} resolves to {} ({reason})",
                addr.ip()
            )));
        }
    }
    Ok(addresses)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter()
            .map(|ip| SocketAddr::new(ip.parse().unwrap(), 0))
            .collect()
    }

    #[test]
    fn one_forbidden_address_refuses_the_whole_host() {
        let err = check_all("mixed.example", addrs(&["8.8.8.8", "10.0.0.1"]), false).unwrap_err();
        assert_eq!(
            err,
            CimdError::ForbiddenAddress(
                "mixed.example resolves to 10.0.0.1 (private (10/8))".into()
            )
        );
        let err =
            check_all("mixed.example", addrs(&["127.0.0.1", "192.168.0.1"]), true).unwrap_err();
        assert!(matches!(err, CimdError::ForbiddenAddress(_)), "{err:?}");
    }

    #[test]
    fn public_addresses_pass_through_unchanged() {
        let list = addrs(&["8.8.8.8", "2606:4700:4700::1111"]);
        assert_eq!(check_all("ok.example", list.clone(), false).unwrap(), list);
    }

    #[test]
    fn loopback_passes_only_when_allowed() {
        let list = addrs(&["127.0.0.1", "::1"]);
        assert!(check_all("localhost", list.clone(), false).is_err());
        assert_eq!(check_all("localhost", list.clone(), true).unwrap(), list);
    }

    #[test]
    fn no_addresses_is_a_resolution_failure() {
        let err = check_all("empty.example", Vec::new(), false).unwrap_err();
        assert_eq!(
            err,
            CimdError::Resolve("empty.example: no addresses".into())
        );
    }

    #[tokio::test]
    async fn an_ip_literal_is_checked_without_a_lookup() {
        let url = Url::parse("https://10.1.2.3:8443/x").unwrap();
        let err = addresses(&url, true).await.unwrap_err();
        assert!(matches!(err, CimdError::ForbiddenAddress(_)), "{err:?}");
        let url = Url::parse("https://[::1]/x").unwrap();
        assert_eq!(
            addresses(&url, true).await.unwrap(),
            vec!["[::1]:443".parse::<SocketAddr>().unwrap()]
        );
    }
}
