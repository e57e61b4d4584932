//! Which network a client address belongs to: the one grouping every
//! budget counted per requester uses (the sign-in throttle, the rate limits
//! of `/register`, `/token`, `/revoke` and `/introspect`, the metadata
//! document fetch budgets and their share of fetches in flight, and the
//! share of the server's connections).
//!
//! IPv4 addresses count as they are. IPv6 addresses are grouped by their
//! /64: one subscriber is usually given a whole /64, so counting single
//! addresses would hand a requester 2^64 fresh buckets. IPv4-mapped IPv6
//! (a dual-stack listener) counts as the IPv4 address it carries.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

/// The bucket an address is counted in: the address itself (IPv4), or the
/// first address of its /64 (IPv6).
pub fn address_group(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !(u128::MAX >> 64);
                IpAddr::V6(Ipv6Addr::from(prefix))
            }
        },
    }
}

/// A requester's network, the key of every per-requester budget. Made only
/// from an address by [`Network::of`], so a budget keyed by `Network`
/// cannot count single IPv6 addresses by mistake.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Network(IpAddr);

impl Network {
    /// The network `address` belongs to ([`address_group`]).
    pub fn of(address: IpAddr) -> Self {
        Self(address_group(address))
    }
}

/// The group's address (`2001:db8:1:2::` for a /64): the form the sign-in
/// throttle's stored keys were made from, so they stay the same.
impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(raw: &str) -> IpAddr {
        raw.parse().unwrap()
    }

    #[test]
    fn ipv4_counts_alone_ipv6_per_64_and_mapped_as_ipv4() {
        assert_eq!(address_group(ip("192.0.2.7")), ip("192.0.2.7"));
        assert_ne!(
            address_group(ip("192.0.2.7")),
            address_group(ip("192.0.2.8"))
        );
        assert_eq!(
            address_group(ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd")),
            ip("2001:db8:1:2::")
        );
        assert_eq!(
            address_group(ip("2001:db8:1:2::1")),
            address_group(ip("2001:db8:1:2:ffff:ffff:ffff:ffff"))
        );
        assert_ne!(
            address_group(ip("2001:db8:1:2::1")),
            address_group(ip("2001:db8:1:3::1"))
        );
        assert_eq!(address_group(ip("::ffff:192.0.2.7")), ip("192.0.2.7"));
    }

    #[test]
    fn a_network_is_its_group_and_reads_as_the_groups_address() {
        let one_64 = Network::of(ip("2001:db8:1:2::1"));
        assert_eq!(one_64, Network::of(ip("2001:db8:1:2:ffff::9")));
        assert_ne!(one_64, Network::of(ip("2001:db8:1:3::1")));
        assert_eq!(one_64.to_string(), "2001:db8:1:2::");
        assert_eq!(Network::of(ip("::ffff:192.0.2.7")).to_string(), "192.0.2.7");
        assert_eq!(
            Network::of(ip("192.0.2.7")),
            Network::of(ip("::ffff:192.0.2.7"))
        );
    }
}
