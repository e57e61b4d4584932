//! The only name resolver the fetcher's HTTP client has.
//!
//! It resolves a host with the system resolver and hands the client the
//! addresses only if every one of them is permitted ([`super::address`]).
//! Because the client connects to exactly the addresses returned here, the
//! check and the connection cannot disagree (no second lookup that a DNS
//! rebinding answer could change). One forbidden address refuses the whole
//! host rather than being filtered out: a name that points inside the
//! network is not a client's public document host.

use std::net::SocketAddr;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::address;

/// A host whose addresses include one Coop does not connect to.
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves to {ip} ({reason})")]
pub struct AddressRefused {
    host: String,
    ip: std::net::IpAddr,
    reason: &'static str,
}

/// A host that does not resolve.
#[derive(Debug, thiserror::Error)]
#[error("{host}: {reason}")]
pub struct ResolveFailed {
    host: String,
    reason: String,
}

#[derive(Debug)]
pub struct CheckedResolver {
    allow_loopback: bool,
}

impl CheckedResolver {
    pub fn new(allow_loopback: bool) -> Self {
        Self { allow_loopback }
    }
}

/// `Ok(addresses)` only when every address is permitted.
pub fn check_all(
    host: &str,
    addresses: Vec<SocketAddr>,
    allow_loopback: bool,
) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
    if addresses.is_empty() {
        return Err(Box::new(ResolveFailed {
            host: host.to_owned(),
            reason: "no addresses".to_owned(),
        }));
    }
    for addr in &addresses {
        if let Err(reason) = address::permitted(addr.ip(), allow_loopback) {
            return Err(Box::new(AddressRefused {
                host: host.to_owned(),
                ip: addr.ip(),
                reason,
            }));
        }
    }
    Ok(addresses)
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_loopback = self.allow_loopback;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|e| ResolveFailed {
                    host: host.clone(),
                    reason: e.to_string(),
                })?;
            let checked = check_all(&host, found.collect(), allow_loopback)?;
            let addrs: Addrs = Box::new(checked.into_iter());
            Ok(addrs)
        })
    }
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
        let refused = err.downcast_ref::<AddressRefused>().unwrap();
        assert_eq!(refused.ip.to_string(), "10.0.0.1");
        let err =
            check_all("mixed.example", addrs(&["127.0.0.1", "192.168.0.1"]), true).unwrap_err();
        assert!(err.downcast_ref::<AddressRefused>().is_some());
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
        assert!(err.downcast_ref::<ResolveFailed>().is_some());
    }
}
