//! Which network a client address belongs to, for budgets counted per
//! requester.
//!
//! IPv4 addresses count as they are. IPv6 addresses are grouped by their
//! /64: one subscriber is usually given a whole /64, so counting single
//! addresses would hand a requester 2^64 fresh buckets. IPv4-mapped IPv6
//! (a dual-stack listener) counts as the IPv4 address it carries.

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
}
