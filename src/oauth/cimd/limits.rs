//! How many fetches anonymous requests may make Coop start (threats 33
//! and 48).
//!
//! Naming a URL as `client_id` (or, later, a `jwks_uri`) is enough to make
//! Coop fetch it, and nobody needs to be signed in to do so. Only requests
//! that *start* a fetch are counted here: a cache hit, a remembered failure
//! or a request that joins a fetch already in progress costs nothing. Four
//! limits, all checked before any is spent, so a request refused by one does
//! not use up the others:
//!
//! - **per requesting network**: [`FETCHES_PER_NETWORK`] per [`WINDOW`],
//!   keyed by [`Network`] (an IPv4 address, an IPv6 /64);
//! - **per target host**: [`FETCHES_PER_HOST`] per [`WINDOW`], keyed by the
//!   URL's host without its port, so Coop cannot be used to hammer (or, port
//!   by port, scan) one third party however many addresses ask;
//! - **in flight**: at most [`MAX_IN_FLIGHT`] fetches at once over all
//!   requesters; beyond that a request is refused at once rather than
//!   queued, so slow hosts cannot pile up connections or waiting requests;
//! - **a network's share of those in flight**: at most
//!   [`MAX_IN_FLIGHT_PER_NETWORK`] of them started by one network, so one
//!   network naming hosts that stall cannot take every place and leave every
//!   other new client unable to connect.
//!
//! Each rate is a GCRA bucket (the whole budget may be spent at once, then
//! it refills evenly over the window), computed from the `now` passed in.
//! The counts are per process; N replicas allow N times as much, which still
//! bounds a flood.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use time::{Duration, OffsetDateTime};

use crate::domain::network::Network;

/// The window both rates are measured over.
pub const WINDOW: Duration = Duration::minutes(10);
/// Fetches one network (an IPv4 address, an IPv6 /64) may start per
/// [`WINDOW`]: twenty at once, then one every 30 s. Only a document or key
/// set that is not in the cache causes a fetch, and each is cached for at
/// least a minute (usually far longer), so people connecting apps cause a
/// handful per window even behind one NAT or proxy, and a client's servers
/// refreshing tokens for all its users cause one per stale document; a
/// flood of varied URLs from one network is cut at twenty.
pub const FETCHES_PER_NETWORK: u32 = 20;
/// Fetches of one host per [`WINDOW`], over all requesters: sixty at once,
/// then one every 10 s. A host serving its client's document and key set
/// needs two per freshness period; one serving documents for many clients
/// one per client.
pub const FETCHES_PER_HOST: u32 = 60;
/// Fetches in progress at once. Each holds one outbound connection for at
/// most the 5 s time limit; sixteen is far beyond what people connecting
/// apps need and small enough that a flood holds few sockets.
pub const MAX_IN_FLIGHT: usize = 16;
/// Fetches in progress at once started by one network. Connecting an app
/// starts one fetch at a time (its document, then its key set), so four
/// serve four people behind one address connecting in the same seconds,
/// while filling [`MAX_IN_FLIGHT`] takes four networks.
pub const MAX_IN_FLIGHT_PER_NETWORK: usize = 4;
/// Above this many tracked networks or hosts, the idle ones are forgotten.
const PRUNE_ABOVE: usize = 10_000;

/// Which limit refused a fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The requesting network started too many fetches.
    Network,
    /// The URL's host was fetched too often.
    Host,
    /// Too many fetches are in progress.
    InFlight,
    /// The requesting network has its share of the fetches in progress.
    NetworkInFlight,
}

/// A refused fetch: which limit, and when to try again.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{limit:?} limit reached; retry in {retry_after:?}")]
pub struct Throttle {
    pub limit: Limit,
    /// Whole seconds, at least one.
    pub retry_after: std::time::Duration,
}

impl Throttle {
    fn new(limit: Limit, wait: Duration) -> Self {
        // Round up: retrying after the rounded-down figure would be refused.
        let seconds = wait.whole_seconds() + i64::from(wait.subsec_nanoseconds() > 0);
        Self {
            limit,
            retry_after: std::time::Duration::from_secs(seconds.max(1).unsigned_abs()),
        }
    }
}

/// `count` events per `window`, all of which may come at once.
#[derive(Clone, Copy, Debug)]
struct Rate {
    /// The time one event adds to the bucket.
    interval: Duration,
    /// How far ahead of now the bucket may run.
    tolerance: Duration,
}

impl Rate {
    fn new(count: u32, window: Duration) -> Self {
        let interval = window / count.max(1);
        Self {
            interval,
            tolerance: window - interval,
        }
    }

    /// The bucket's next state if one more event is allowed at `now`
    /// (`tat`: the theoretical arrival time, `None` for a fresh bucket);
    /// otherwise how long until it would be.
    fn next(
        self,
        tat: Option<OffsetDateTime>,
        now: OffsetDateTime,
    ) -> Result<OffsetDateTime, Duration> {
        let tat = tat.map_or(now, |tat| tat.max(now));
        let ahead = tat - now;
        if ahead > self.tolerance {
            Err(ahead - self.tolerance)
        } else {
            Ok(tat + self.interval)
        }
    }
}

/// Buckets by key; an entry whose time has passed is a full bucket again.
#[derive(Debug)]
struct Buckets<K> {
    rate: Rate,
    tats: HashMap<K, OffsetDateTime>,
    prune_at: usize,
}

impl<K: std::hash::Hash + Eq + Clone> Buckets<K> {
    fn new(rate: Rate) -> Self {
        Self {
            rate,
            tats: HashMap::new(),
            prune_at: PRUNE_ABOVE,
        }
    }

    fn check(&self, key: &K, now: OffsetDateTime) -> Result<OffsetDateTime, Duration> {
        self.rate.next(self.tats.get(key).copied(), now)
    }

    fn commit(&mut self, key: K, tat: OffsetDateTime, now: OffsetDateTime) {
        self.tats.insert(key, tat);
        if self.tats.len() > self.prune_at {
            self.tats.retain(|_, kept| *kept > now);
            // Pruning again only once the map has doubled keeps the cost
            // per insert constant while a flood keeps it large.
            self.prune_at = PRUNE_ABOVE.max(self.tats.len() * 2);
        }
    }
}

#[derive(Debug)]
struct Counters {
    networks: Buckets<Network>,
    hosts: Buckets<String>,
}

/// The fetches in progress: how many in all, and how many each network
/// started (only networks with one at least: never more entries than
/// [`MAX_IN_FLIGHT`]).
#[derive(Debug, Default)]
struct InFlight {
    total: usize,
    by_network: HashMap<Network, usize>,
}

/// The four limits, shared by every fetch of one fetcher.
#[derive(Debug)]
pub struct Limits {
    counters: Mutex<Counters>,
    in_flight: Arc<Mutex<InFlight>>,
    max_in_flight: usize,
    max_in_flight_per_network: usize,
}

/// One admitted fetch's place among those in flight, and its network's;
/// given back when dropped.
#[derive(Debug)]
pub struct Permit {
    in_flight: Arc<Mutex<InFlight>>,
    network: Network,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut in_flight = lock(&self.in_flight);
        in_flight.total = in_flight.total.saturating_sub(1);
        if let Some(count) = in_flight.by_network.get_mut(&self.network) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                in_flight.by_network.remove(&self.network);
            }
        }
    }
}

/// Every change under these locks is a single insert, retain or counter
/// step: consistent even if a holder panicked.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Default for Limits {
    fn default() -> Self {
        Self::new(
            FETCHES_PER_NETWORK,
            FETCHES_PER_HOST,
            (MAX_IN_FLIGHT, MAX_IN_FLIGHT_PER_NETWORK),
            WINDOW,
        )
    }
}

impl Limits {
    /// Limits with other figures than the production ones (unit tests);
    /// `in_flight`: over all networks, and per network.
    fn new(
        per_network: u32,
        per_host: u32,
        (max_in_flight, max_in_flight_per_network): (usize, usize),
        window: Duration,
    ) -> Self {
        Self {
            counters: Mutex::new(Counters {
                networks: Buckets::new(Rate::new(per_network, window)),
                hosts: Buckets::new(Rate::new(per_host, window)),
            }),
            in_flight: Arc::default(),
            max_in_flight,
            max_in_flight_per_network,
        }
    }

    fn counters(&self) -> MutexGuard<'_, Counters> {
        lock(&self.counters)
    }

    /// Admits one fetch of a URL on `host` started by a request from `from`
    /// at `now`, spending from every limit, or refuses it spending nothing.
    pub fn admit(&self, from: IpAddr, host: &str, now: OffsetDateTime) -> Result<Permit, Throttle> {
        let network = Network::of(from);
        let mut counters = self.counters();
        let network_tat = counters
            .networks
            .check(&network, now)
            .map_err(|wait| Throttle::new(Limit::Network, wait))?;
        let host_key = host.to_ascii_lowercase();
        let host_tat = counters
            .hosts
            .check(&host_key, now)
            .map_err(|wait| Throttle::new(Limit::Host, wait))?;
        // The counts are checked and raised under one lock; a permit given
        // back meanwhile only lowers them.
        let mut in_flight = lock(&self.in_flight);
        // A place frees up within one fetch's time limit at most.
        let in_flight_wait =
            Duration::try_from(super::FETCH_TIMEOUT).unwrap_or(Duration::seconds(5));
        if in_flight.total >= self.max_in_flight {
            return Err(Throttle::new(Limit::InFlight, in_flight_wait));
        }
        let of_network = in_flight.by_network.entry(network).or_default();
        if *of_network >= self.max_in_flight_per_network {
            return Err(Throttle::new(Limit::NetworkInFlight, in_flight_wait));
        }
        *of_network += 1;
        in_flight.total += 1;
        drop(in_flight);
        counters.networks.commit(network, network_tat, now);
        counters.hosts.commit(host_key, host_tat, now);
        Ok(Permit {
            in_flight: self.in_flight.clone(),
            network,
        })
    }

    /// Fetches in progress now.
    pub fn in_flight(&self) -> usize {
        lock(&self.in_flight).total
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    const NOW: OffsetDateTime = datetime!(2026-12-01 12:00:00 UTC);
    /// The unit tests' window: round figures.
    const MINUTE: Duration = Duration::minutes(1);

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn secs(n: i64) -> Duration {
        Duration::seconds(n)
    }

    // How addresses are grouped into networks is `domain::network`'s,
    // tested there.

    #[test]
    fn an_address_may_start_its_budget_at_once_then_waits_for_it_to_refill() {
        let limits = Limits::new(3, 100, (100, 100), MINUTE);
        let a = ip("192.0.2.1");
        let mut permits = Vec::new();
        for _ in 0..3 {
            permits.push(limits.admit(a, "h.example", NOW).unwrap());
        }
        let refused = limits.admit(a, "h.example", NOW).unwrap_err();
        assert_eq!(refused.limit, Limit::Network);
        // Three per minute refill one every 20 s.
        assert_eq!(refused.retry_after, std::time::Duration::from_secs(20));
        let refused = limits.admit(a, "h.example", NOW + secs(15)).unwrap_err();
        assert_eq!(refused.retry_after, std::time::Duration::from_secs(5));
        assert!(limits.admit(a, "h.example", NOW + secs(20)).is_ok());
        assert!(limits.admit(a, "h.example", NOW + secs(21)).is_err());
        // After a whole idle window the whole budget is back.
        let later = NOW + secs(20) + MINUTE;
        for _ in 0..3 {
            assert!(limits.admit(a, "h.example", later).is_ok());
        }
    }

    #[test]
    fn another_address_has_its_own_budget_but_one_64_shares_one() {
        let limits = Limits::new(2, 100, (100, 100), MINUTE);
        for from in ["2001:db8::1", "2001:db8::2:3"] {
            assert!(limits.admit(ip(from), "h.example", NOW).is_ok());
        }
        let refused = limits
            .admit(ip("2001:db8::ffff"), "h.example", NOW)
            .unwrap_err();
        assert_eq!(refused.limit, Limit::Network);
        assert!(
            limits
                .admit(ip("2001:db8:0:1::1"), "h.example", NOW)
                .is_ok()
        );
        assert!(limits.admit(ip("192.0.2.1"), "h.example", NOW).is_ok());
    }

    #[test]
    fn a_host_is_limited_over_every_requester_whatever_the_port() {
        let limits = Limits::new(100, 2, (100, 100), MINUTE);
        assert!(limits.admit(ip("192.0.2.1"), "victim.example", NOW).is_ok());
        assert!(limits.admit(ip("192.0.2.2"), "Victim.Example", NOW).is_ok());
        let refused = limits
            .admit(ip("192.0.2.3"), "victim.example", NOW)
            .unwrap_err();
        assert_eq!(refused.limit, Limit::Host);
        assert_eq!(refused.retry_after, std::time::Duration::from_secs(30));
        assert!(limits.admit(ip("192.0.2.3"), "other.example", NOW).is_ok());
    }

    #[test]
    fn fetches_in_flight_are_capped_and_a_finished_one_frees_its_place() {
        let limits = Limits::new(100, 100, (2, 2), MINUTE);
        let first = limits.admit(ip("192.0.2.1"), "a.example", NOW).unwrap();
        let _second = limits.admit(ip("192.0.2.2"), "b.example", NOW).unwrap();
        assert_eq!(limits.in_flight(), 2);
        let refused = limits.admit(ip("192.0.2.3"), "c.example", NOW).unwrap_err();
        assert_eq!(refused.limit, Limit::InFlight);
        assert_eq!(refused.retry_after, std::time::Duration::from_secs(5));
        drop(first);
        assert_eq!(limits.in_flight(), 1);
        assert!(limits.admit(ip("192.0.2.3"), "c.example", NOW).is_ok());
    }

    #[test]
    fn a_network_holds_at_most_its_share_of_the_fetches_in_flight() {
        let limits = Limits::new(100, 100, (4, 2), MINUTE);
        // Two addresses of one /64 are one network.
        let first = limits.admit(ip("2001:db8::1"), "a.example", NOW).unwrap();
        let _second = limits.admit(ip("2001:db8::2"), "b.example", NOW).unwrap();
        let refused = limits
            .admit(ip("2001:db8::3"), "c.example", NOW)
            .unwrap_err();
        assert_eq!(refused.limit, Limit::NetworkInFlight);
        assert_eq!(refused.retry_after, std::time::Duration::from_secs(5));
        // Other networks still have places, up to the cap over all.
        let _third = limits
            .admit(ip("2001:db8:0:1::1"), "c.example", NOW)
            .unwrap();
        let fourth = limits.admit(ip("192.0.2.1"), "c.example", NOW).unwrap();
        assert_eq!(limits.in_flight(), 4);
        drop(fourth);
        // A finished fetch gives its network its place back.
        drop(first);
        assert_eq!(limits.in_flight(), 2);
        assert!(limits.admit(ip("2001:db8::3"), "c.example", NOW).is_ok());
        // A network with nothing in flight is forgotten.
        assert_eq!(lock(&limits.in_flight).by_network.len(), 2);
    }

    #[test]
    fn a_refusal_spends_nothing_from_the_other_limits() {
        let limits = Limits::new(2, 1, (100, 100), MINUTE);
        let a = ip("192.0.2.1");
        assert!(limits.admit(a, "busy.example", NOW).is_ok());
        // Refused by the host limit: the address keeps its second fetch.
        assert_eq!(
            limits.admit(a, "busy.example", NOW).unwrap_err().limit,
            Limit::Host
        );
        assert!(limits.admit(a, "quiet.example", NOW).is_ok());
        assert_eq!(
            limits.admit(a, "third.example", NOW).unwrap_err().limit,
            Limit::Network
        );
        // Refused by the address limit: third.example was not spent.
        assert!(limits.admit(ip("192.0.2.2"), "third.example", NOW).is_ok());

        let limits = Limits::new(1, 1, (1, 1), MINUTE);
        let held = limits.admit(a, "x.example", NOW).unwrap();
        assert_eq!(
            limits
                .admit(ip("192.0.2.9"), "y.example", NOW)
                .unwrap_err()
                .limit,
            Limit::InFlight
        );
        drop(held);
        // Neither the address nor the host was spent by the refusal.
        assert!(limits.admit(ip("192.0.2.9"), "y.example", NOW).is_ok());

        // Refused by its network's share of those in flight: nothing spent.
        let limits = Limits::new(2, 2, (100, 1), MINUTE);
        let held = limits.admit(a, "x.example", NOW).unwrap();
        assert_eq!(
            limits.admit(a, "x.example", NOW).unwrap_err().limit,
            Limit::NetworkInFlight
        );
        drop(held);
        assert!(limits.admit(a, "x.example", NOW).is_ok());
    }

    #[test]
    fn idle_buckets_are_forgotten_once_many_are_tracked() {
        let limits = Limits::new(1, 1_000_000, (1_000_000, 1_000_000), MINUTE);
        for i in 0..PRUNE_ABOVE as u32 {
            let from = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            drop(limits.admit(from, "h.example", NOW).unwrap());
        }
        assert_eq!(limits.counters().networks.tats.len(), PRUNE_ABOVE);
        // A minute later every one of them is idle: the next insert prunes.
        let later = NOW + MINUTE;
        drop(limits.admit(ip("192.0.2.1"), "h.example", later).unwrap());
        assert_eq!(limits.counters().networks.tats.len(), 1);
    }

    #[test]
    fn after_a_prune_that_kept_most_the_next_waits_until_the_map_has_doubled() {
        let limits = Limits::new(1, 1_000_000, (1_000_000, 1_000_000), MINUTE);
        let admit = |i: u32, at| {
            let from = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            drop(limits.admit(from, "h.example", at).unwrap());
        };
        // One past the threshold, all busy: the prune keeps every one.
        for i in 0..=PRUNE_ABOVE as u32 {
            admit(i, NOW);
        }
        let kept = PRUNE_ABOVE + 1;
        assert_eq!(limits.counters().networks.tats.len(), kept);
        // A minute later all are idle, but the map has not doubled since.
        let later = NOW + MINUTE;
        for i in 0..10 {
            admit(1_000_000 + i, later);
        }
        assert_eq!(limits.counters().networks.tats.len(), kept + 10);
        assert_eq!(limits.counters().networks.prune_at, kept * 2);
    }

    #[test]
    fn the_production_figures_refill_one_fetch_every_30_s_per_network_and_10_s_per_host() {
        let limits = Limits::default();
        let a = ip("192.0.2.1");
        for i in 0..FETCHES_PER_NETWORK {
            drop(limits.admit(a, &format!("h{i}.example"), NOW).unwrap());
        }
        let refused = limits.admit(a, "other.example", NOW).unwrap_err();
        assert_eq!(refused.limit, Limit::Network);
        assert_eq!(refused.retry_after, std::time::Duration::from_secs(30));
        for i in 0..FETCHES_PER_HOST {
            let from = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            drop(limits.admit(from, "busy.example", NOW).unwrap());
        }
        let refused = limits
            .admit(ip("192.0.2.2"), "busy.example", NOW)
            .unwrap_err();
        assert_eq!(refused.limit, Limit::Host);
        assert_eq!(refused.retry_after, std::time::Duration::from_secs(10));
    }

    #[test]
    fn the_production_figures_take_four_networks_to_fill_the_fetches_in_flight() {
        let limits = Limits::default();
        let mut held = Vec::new();
        for network in 0..4 {
            // Addresses of the /64 2001:db8:0:`network`::.
            let from = |host| IpAddr::from([0x2001, 0xdb8, 0, network, 0, 0, 0, host]);
            for host in 0..MAX_IN_FLIGHT_PER_NETWORK as u16 {
                held.push(limits.admit(from(host), "h.example", NOW).unwrap());
            }
            if limits.in_flight() < MAX_IN_FLIGHT {
                let refused = limits.admit(from(200), "h.example", NOW).unwrap_err();
                assert_eq!(refused.limit, Limit::NetworkInFlight);
            }
        }
        assert_eq!(limits.in_flight(), MAX_IN_FLIGHT);
        let refused = limits.admit(ip("198.51.100.1"), "h.example", NOW);
        assert_eq!(refused.unwrap_err().limit, Limit::InFlight);
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(
            Throttle::new(Limit::Network, Duration::milliseconds(2100)).retry_after,
            std::time::Duration::from_secs(3)
        );
        assert_eq!(
            Throttle::new(Limit::Network, Duration::milliseconds(10)).retry_after,
            std::time::Duration::from_secs(1)
        );
    }
}
