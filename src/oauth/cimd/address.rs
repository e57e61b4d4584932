//! Which IP addresses Coop may connect to when it fetches a metadata document.
//!
//! A `client_id` URL is chosen by whoever starts an authorization request, so
//! fetching it lets a stranger make Coop open connections. Only addresses on
//! the public internet are acceptable: every private, loopback, link-local,
//! multicast, reserved or documentation range is refused, as are the cloud
//! metadata services (most sit in link-local or shared space; Azure's wire
//! server does not, so it is listed by address). IPv6 forms that carry an
//! IPv4 address (mapped, NAT64, 6to4) are judged by the address they carry,
//! so a refused IPv4 range cannot be reached through its IPv6 spelling; the
//! deprecated IPv4-compatible block and anything outside global unicast
//! (`2000::/3`) are refused outright.
//!
//! Loopback is a verdict of its own because the test and development setting
//! `allow_loopback` admits it, and nothing else.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Where an address leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A public unicast address: may be fetched from.
    Public,
    /// This machine: only with the test setting `allow_loopback`.
    Loopback,
    /// Never fetched from; the reason names the range, for the log.
    Forbidden(&'static str),
}

/// Classifies `ip`.
pub fn classify(ip: IpAddr) -> Verdict {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

/// `Ok` when Coop may connect to `ip`; otherwise the reason it may not.
pub fn permitted(ip: IpAddr, allow_loopback: bool) -> Result<(), &'static str> {
    match classify(ip) {
        Verdict::Public => Ok(()),
        Verdict::Loopback if allow_loopback => Ok(()),
        Verdict::Loopback => Err("loopback"),
        Verdict::Forbidden(reason) => Err(reason),
    }
}

/// IPv4 ranges refused, most specific first (the first match names the reason).
const FORBIDDEN_V4: &[([u8; 4], u8, &str)] = &[
    (
        [169, 254, 169, 254],
        32,
        "cloud metadata service (169.254.169.254)",
    ),
    (
        [168, 63, 129, 16],
        32,
        "cloud metadata service (Azure 168.63.129.16)",
    ),
    (
        [100, 100, 100, 200],
        32,
        "cloud metadata service (Alibaba 100.100.100.200)",
    ),
    ([0, 0, 0, 0], 32, "unspecified (0.0.0.0)"),
    ([0, 0, 0, 0], 8, "this network (0/8)"),
    ([10, 0, 0, 0], 8, "private (10/8)"),
    (
        [100, 64, 0, 0],
        10,
        "shared address space, CGNAT (100.64/10)",
    ),
    ([169, 254, 0, 0], 16, "link-local (169.254/16)"),
    ([172, 16, 0, 0], 12, "private (172.16/12)"),
    ([192, 0, 0, 0], 24, "IETF protocol assignments (192.0.0/24)"),
    ([192, 0, 2, 0], 24, "documentation (192.0.2/24)"),
    ([192, 88, 99, 0], 24, "6to4 relay anycast (192.88.99/24)"),
    ([192, 168, 0, 0], 16, "private (192.168/16)"),
    ([198, 18, 0, 0], 15, "benchmarking (198.18/15)"),
    ([198, 51, 100, 0], 24, "documentation (198.51.100/24)"),
    ([203, 0, 113, 0], 24, "documentation (203.0.113/24)"),
    ([224, 0, 0, 0], 4, "multicast (224/4)"),
    ([255, 255, 255, 255], 32, "broadcast (255.255.255.255)"),
    ([240, 0, 0, 0], 4, "reserved (240/4)"),
];

/// IPv6 ranges refused inside global unicast, or with a more precise name
/// than "not global unicast". Checked after the IPv4-carrying forms.
const FORBIDDEN_V6: &[(u128, u8, &str)] = &[
    (
        0xfd00_0ec2_0000_0000_0000_0000_0000_0254,
        128,
        "cloud metadata service (AWS fd00:ec2::254)",
    ),
    (
        0x0064_ff9b_0001_0000_0000_0000_0000_0000,
        48,
        "local-use NAT64 (64:ff9b:1::/48)",
    ),
    (
        0x0100_0000_0000_0000_0000_0000_0000_0000,
        64,
        "discard-only (100::/64)",
    ),
    (
        0x2001_0db8_0000_0000_0000_0000_0000_0000,
        32,
        "documentation (2001:db8::/32)",
    ),
    (
        0x2001_0000_0000_0000_0000_0000_0000_0000,
        23,
        "IETF protocol assignments, Teredo (2001::/23)",
    ),
    (
        0x3fff_0000_0000_0000_0000_0000_0000_0000,
        20,
        "documentation (3fff::/20)",
    ),
    (
        0xfc00_0000_0000_0000_0000_0000_0000_0000,
        7,
        "unique local (fc00::/7)",
    ),
    (
        0xfe80_0000_0000_0000_0000_0000_0000_0000,
        10,
        "link-local (fe80::/10)",
    ),
    (
        0xfec0_0000_0000_0000_0000_0000_0000_0000,
        10,
        "site-local, deprecated (fec0::/10)",
    ),
    (
        0xff00_0000_0000_0000_0000_0000_0000_0000,
        8,
        "multicast (ff00::/8)",
    ),
];

fn in_v4(ip: Ipv4Addr, base: [u8; 4], len: u8) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(base)) & mask
}

fn in_v6(ip: Ipv6Addr, base: u128, len: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
    u128::from(ip) & mask == base & mask
}

fn classify_v4(ip: Ipv4Addr) -> Verdict {
    if ip.octets()[0] == 127 {
        return Verdict::Loopback;
    }
    FORBIDDEN_V4
        .iter()
        .find(|(base, len, _)| in_v4(ip, *base, *len))
        .map_or(Verdict::Public, |(_, _, reason)| Verdict::Forbidden(reason))
}

/// The IPv4 address in the low 32 bits.
fn low_v4(ip: Ipv6Addr) -> Ipv4Addr {
    // Truncation keeps exactly the low 32 bits, which is the point.
    Ipv4Addr::from(u128::from(ip) as u32)
}

fn classify_v6(ip: Ipv6Addr) -> Verdict {
    let bits = u128::from(ip);
    if ip.is_unspecified() {
        return Verdict::Forbidden("unspecified (::)");
    }
    if ip.is_loopback() {
        return Verdict::Loopback;
    }
    // ::ffff:a.b.c.d reaches a.b.c.d itself on a dual-stack socket.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    if in_v6(ip, 0, 96) {
        return Verdict::Forbidden("IPv4-compatible, deprecated (::/96)");
    }
    // A NAT64 or 6to4 gateway forwards to the IPv4 address it carries.
    if in_v6(ip, 0x0064_ff9b_0000_0000_0000_0000_0000_0000, 96) {
        return carried_v4(
            low_v4(ip),
            "NAT64 (64:ff9b::/96) of a non-public IPv4 address",
        );
    }
    if in_v6(ip, 0x2002_0000_0000_0000_0000_0000_0000_0000, 16) {
        let carried = Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32);
        return carried_v4(carried, "6to4 (2002::/16) of a non-public IPv4 address");
    }
    if let Some((_, _, reason)) = FORBIDDEN_V6
        .iter()
        .find(|(base, len, _)| in_v6(ip, *base, *len))
    {
        return Verdict::Forbidden(reason);
    }
    if !in_v6(ip, 0x2000_0000_0000_0000_0000_0000_0000_0000, 3) {
        return Verdict::Forbidden("not global unicast (outside 2000::/3)");
    }
    Verdict::Public
}

/// A translated address is public only when the IPv4 address it carries is;
/// it is never "loopback", since it leaves this machine through a gateway.
fn carried_v4(v4: Ipv4Addr, reason: &'static str) -> Verdict {
    match classify_v4(v4) {
        Verdict::Public => Verdict::Public,
        Verdict::Loopback | Verdict::Forbidden(_) => Verdict::Forbidden(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Verdict {
        classify(s.parse().unwrap())
    }

    fn assert_public(addresses: &[&str]) {
        for a in addresses {
            assert_eq!(v(a), Verdict::Public, "{a} should be public");
        }
    }

    fn assert_forbidden(addresses: &[&str], reason_part: &str) {
        for a in addresses {
            match v(a) {
                Verdict::Forbidden(reason) => {
                    assert!(reason.contains(reason_part), "{a}: {reason}")
                }
                other => panic!("{a} should be forbidden ({reason_part}), got {other:?}"),
            }
        }
    }

    #[test]
    fn public_addresses_are_public() {
        assert_public(&[
            "8.8.8.8",
            "1.1.1.1",
            "93.184.215.14",
            "2606:4700:4700::1111",
            "2a00:1450:4001:82a::200e",
        ]);
    }

    #[test]
    fn private_ranges_and_their_edges() {
        assert_forbidden(&["10.0.0.0", "10.0.0.1", "10.255.255.255"], "10/8");
        assert_public(&["9.255.255.255", "11.0.0.0"]);
        assert_forbidden(&["172.16.0.0", "172.20.1.1", "172.31.255.255"], "172.16/12");
        assert_public(&["172.15.255.255", "172.32.0.0"]);
        assert_forbidden(&["192.168.0.0", "192.168.255.255"], "192.168/16");
        assert_public(&["192.167.255.255", "192.169.0.0"]);
    }

    #[test]
    fn loopback_and_its_edges() {
        for a in ["127.0.0.0", "127.0.0.1", "127.255.255.255", "::1"] {
            assert_eq!(v(a), Verdict::Loopback, "{a}");
        }
        assert_public(&["126.255.255.255", "128.0.0.0"]);
    }

    #[test]
    fn link_local_and_metadata_services() {
        assert_forbidden(&["169.254.0.0", "169.254.255.255"], "169.254/16");
        assert_public(&["169.253.255.255", "169.255.0.0"]);
        assert_forbidden(&["169.254.169.254"], "metadata");
        assert_forbidden(&["168.63.129.16"], "metadata");
        assert_public(&["168.63.129.15", "168.63.129.17"]);
        assert_forbidden(&["100.100.100.200"], "metadata");
        assert_forbidden(&["fd00:ec2::254"], "metadata");
        assert_forbidden(
            &[
                "fe80::",
                "fe80::1",
                "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            ],
            "fe80::/10",
        );
    }

    #[test]
    fn shared_address_space_and_its_edges() {
        assert_forbidden(&["100.64.0.0", "100.127.255.255"], "100.64/10");
        assert_public(&["100.63.255.255", "100.128.0.0"]);
    }

    #[test]
    fn this_network_unspecified_broadcast_and_reserved() {
        assert_forbidden(&["0.0.0.0", "::"], "unspecified");
        assert_forbidden(&["0.0.0.1", "0.255.255.255"], "0/8");
        assert_public(&["1.0.0.0"]);
        assert_forbidden(&["255.255.255.255"], "broadcast");
        assert_forbidden(&["240.0.0.0", "255.255.255.254"], "240/4");
    }

    #[test]
    fn multicast_and_its_edges() {
        assert_forbidden(&["224.0.0.0", "239.255.255.255"], "224/4");
        assert_public(&["223.255.255.255"]);
        assert_forbidden(
            &[
                "ff00::",
                "ff02::1",
                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            ],
            "ff00::/8",
        );
    }

    #[test]
    fn documentation_benchmarking_and_protocol_ranges() {
        assert_forbidden(&["192.0.2.0", "192.0.2.255"], "192.0.2/24");
        assert_public(&["192.0.1.255", "192.0.3.0"]);
        assert_forbidden(&["198.51.100.0", "198.51.100.255"], "198.51.100/24");
        assert_public(&["198.51.99.255", "198.51.101.0"]);
        assert_forbidden(&["203.0.113.0", "203.0.113.255"], "203.0.113/24");
        assert_public(&["203.0.112.255", "203.0.114.0"]);
        assert_forbidden(&["198.18.0.0", "198.19.255.255"], "198.18/15");
        assert_public(&["198.17.255.255", "198.20.0.0"]);
        assert_forbidden(&["192.0.0.0", "192.0.0.255"], "192.0.0/24");
        assert_public(&["191.255.255.255"]);
        assert_forbidden(&["192.88.99.0", "192.88.99.255"], "192.88.99/24");
        assert_public(&["192.88.98.255", "192.88.100.0"]);
        assert_forbidden(
            &["2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"],
            "2001:db8::/32",
        );
        assert_forbidden(
            &["3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff"],
            "3fff::/20",
        );
        assert_public(&["3ffe:ffff::1", "3fff:1000::"]);
        assert_forbidden(
            &["2001::", "2001:0:4136:e378::1", "2001:1ff:ffff::"],
            "2001::/23",
        );
        assert_public(&["2001:200::1", "2001:db7:ffff::1", "2001:db9::"]);
        assert_forbidden(&["100::", "100::ffff:ffff:ffff:ffff"], "100::/64");
    }

    #[test]
    fn unique_local_and_other_non_global_ipv6() {
        assert_forbidden(
            &[
                "fc00::",
                "fd12:3456::1",
                "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            ],
            "fc00::/7",
        );
        assert_forbidden(&["fec0::1", "feff::1"], "fec0::/10");
        assert_forbidden(
            &[
                "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                "4000::",
                "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            ],
            "2000::/3",
        );
        assert_public(&["2000::", "3ffe::"]);
    }

    #[test]
    fn ipv4_mapped_forms_are_judged_by_their_ipv4_address() {
        assert_forbidden(&["::ffff:10.0.0.1"], "10/8");
        assert_forbidden(&["::ffff:172.16.0.1"], "172.16/12");
        assert_forbidden(&["::ffff:192.168.1.1"], "192.168/16");
        assert_forbidden(&["::ffff:169.254.169.254"], "metadata");
        assert_forbidden(&["::ffff:169.254.1.1"], "169.254/16");
        assert_forbidden(&["::ffff:100.64.0.1"], "100.64/10");
        assert_forbidden(&["::ffff:0.0.0.0"], "unspecified");
        assert_forbidden(&["::ffff:224.0.0.1"], "224/4");
        assert_forbidden(&["::ffff:255.255.255.255"], "broadcast");
        assert_forbidden(&["::ffff:192.0.2.1"], "192.0.2/24");
        assert_eq!(v("::ffff:127.0.0.1"), Verdict::Loopback);
        assert_public(&["::ffff:8.8.8.8"]);
    }

    #[test]
    fn ipv4_compatible_forms_are_all_refused() {
        for a in [
            "::10.0.0.1",
            "::127.0.0.1",
            "::169.254.169.254",
            "::192.168.0.1",
            "::8.8.8.8",
            "::2",
        ] {
            assert_forbidden(&[a], "::/96");
        }
    }

    #[test]
    fn nat64_and_6to4_are_judged_by_the_carried_address() {
        assert_forbidden(
            &[
                "64:ff9b::10.0.0.1",
                "64:ff9b::127.0.0.1",
                "64:ff9b::169.254.169.254",
            ],
            "NAT64",
        );
        assert_public(&["64:ff9b::8.8.8.8"]);
        assert_forbidden(&["64:ff9b:1::1"], "64:ff9b:1::/48");
        // 2002:AABB:CCDD:: carries AA.BB.CC.DD.
        assert_forbidden(
            &["2002:a00:1::1", "2002:7f00:1::", "2002:a9fe:a9fe::"],
            "6to4",
        );
        assert_public(&["2002:808:808::1"]);
    }

    #[test]
    fn loopback_is_permitted_only_when_allowed_and_nothing_else_is() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(permitted(lo, false), Err("loopback"));
        assert_eq!(permitted(lo, true), Ok(()));
        assert_eq!(permitted("::1".parse().unwrap(), true), Ok(()));
        for private in [
            "10.0.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "fc00::1",
            "fe80::1",
        ] {
            assert!(
                permitted(private.parse().unwrap(), true).is_err(),
                "{private} must stay refused with allow_loopback"
            );
        }
        assert_eq!(permitted("8.8.8.8".parse().unwrap(), false), Ok(()));
    }
}
