//! IPv6 source addresses for the tests of per-network budgets: fresh /64s
//! whose addresses are added to `lo` for one test and removed when it ends,
//! so the server sees requests from several addresses of one /64 and from
//! another /64. Adding addresses needs root, as CI has; elsewhere the tests
//! skip, saying why, unless `COOP_TEST_REQUIRE_IPV6=1` (`.ci/run` sets it)
//! makes them fail instead.
//!
//! Each set of networks gets /64s of its own (`fdc0:<process id>:<n>::/64`,
//! in the unique local range), so tests running at once, in this process or
//! in another test run on the machine, never add or remove each other's
//! addresses. The server listens on `[::1]`, which every host with IPv6 has.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::process::Command;
use std::sync::atomic::{AtomicU16, Ordering};

/// Where a server listens for these tests.
pub const LISTEN: &str = "[::1]:0";

/// Some /64 networks, each with a few addresses on `lo`, removed on drop.
pub struct Ipv6Networks {
    prefixes: Vec<u128>,
    added: Vec<Ipv6Addr>,
}

impl Ipv6Networks {
    /// One network per entry of `hosts`, holding that many addresses
    /// (numbered from 1). `None`, after saying why, when they cannot be
    /// added here.
    pub fn add(hosts: &[u16]) -> Option<Self> {
        static NEXT: AtomicU16 = AtomicU16::new(0);
        if !loopback_listens() {
            skip(&format!("nothing can listen on {LISTEN} (no IPv6 here)"));
            return None;
        }
        let process = u128::from(std::process::id());
        let mut networks = Self {
            prefixes: Vec::new(),
            added: Vec::new(),
        };
        for &count in hosts {
            let n = u128::from(NEXT.fetch_add(1, Ordering::Relaxed));
            let prefix = (0xfdc0_u128 << 112) | (process << 80) | (n << 64);
            networks.prefixes.push(prefix);
            for host in 1..=count {
                let address = Ipv6Addr::from(prefix | u128::from(host));
                // A host address alone (/128), so no route for the /64 is
                // added; `nodad` makes it usable at once. One left by a
                // killed run of a process with this id is taken over.
                let address_arg = format!("{address}/128");
                run("ip", &["-6", "addr", "del", &address_arg, "dev", "lo"]);
                let added = run(
                    "ip",
                    &["-6", "addr", "add", &address_arg, "dev", "lo", "nodad"],
                );
                if !added {
                    skip(&format!(
                        "{address} cannot be added to lo (needs root and IPv6)"
                    ));
                    return None;
                }
                networks.added.push(address);
            }
        }
        Some(networks)
    }

    /// Address `host` (from 1) of network `network` (from 0).
    pub fn address(&self, network: usize, host: u16) -> IpAddr {
        IpAddr::V6(Ipv6Addr::from(self.prefixes[network] | u128::from(host)))
    }

    /// A client whose requests come from [`Self::address`] (no redirects
    /// followed, no cookies).
    pub fn client(&self, network: usize, host: u16) -> reqwest::Client {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .local_address(self.address(network, host))
            .build()
            .unwrap()
    }
}

impl Drop for Ipv6Networks {
    fn drop(&mut self) {
        for address in &self.added {
            run(
                "ip",
                &["-6", "addr", "del", &format!("{address}/128"), "dev", "lo"],
            );
        }
    }
}

/// Whether a server can listen on [`LISTEN`] here (IPv6 on `lo`).
fn loopback_listens() -> bool {
    LISTEN
        .parse::<SocketAddr>()
        .is_ok_and(|at| std::net::TcpListener::bind(at).is_ok())
}

fn run(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|out| out.status.success())
}

fn skip(why: &str) {
    if std::env::var("COOP_TEST_REQUIRE_IPV6").is_ok_and(|v| v == "1") {
        panic!("COOP_TEST_REQUIRE_IPV6=1 but {why}");
    }
    eprintln!("skipping: {why}");
}
