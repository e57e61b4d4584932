//! How many fetches anonymous requests may make Coop start (threat 33).
//!
//! Naming a URL as `client_id` (or, later, a `jwks_uri`) is enough to make
//! Coop fetch it, and nobody needs to be signed in to do so. Only requests
//! that *start* a fetch are counted here: a cache hit, a remembered failure
//! or a request that joins a fetch already in progress costs nothing. Three
//! limits, all checked before any is spent, so a request refused by one does
//! not use up the others:
//!
//! - **per requesting address**: [`FETCHES_PER_ADDRESS`] per
//!   [`WINDOW`], IPv4 addresses as they are, IPv6 grouped by /64 (one
//!   subscriber is usually given a whole /64, so single addresses would be
//!   free buckets), IPv4-mapped IPv6 as the IPv4 address;
//! - **per target host**: [`FETCHES_PER_HOST`] per [`WINDOW`], keyed by the
//!   URL's host without its port, so Coop cannot be used to hammer (or, port
//!   by port, scan) one third party however many addresses ask;
//! - **in flight**: at most [`MAX_IN_FLIGHT`] fetches at once over all
//!   requesters; beyond that a request is refused at once rather than
//!   queued, so slow hosts cannot pile up connections or waiting requests.
//!
//! Each rate is a GCRA bucket (the whole budget may be spent at once, then
//! it refills evenly over the window), computed from the `now` passed in.
//! The counts are per process; N replicas allow N times as much, which still
//! bounds a flood.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use time::{Duration, OffsetDateTime};

/// The window both rates are measured over.
pub const WINDOW: Duration = Duration::minutes(10);
/// Fetches one address (IPv6: one /64) may start per [`WINDOW`]: twenty at
/// once, then one every 30 s. Only a document or key set that is not in the
/// cache causes a fetch, and each is cached for at least a minute (usually
/// far longer), so people connecting apps cause a handful per window even
/// behind one NAT or proxy, and a client's servers refreshing tokens for
/// all its users cause one per stale document; a flood of varied URLs from
/// one address is cut at twenty.
pub const FETCHES_PER_ADDRESS: u32 = 20;
/// Fetches of one host per [`WINDOW`], over all requesters: sixty at once,
/// then one every 10 s. A host serving its client's document and key set
/// needs two per freshness period; one serving documents for many clients
/// one per client.
pub const FETCHES_PER_HOST: u32 = 60;
/// Fetches in progress at once. Each holds one outbound connection for at
/// most the 5 s time limit; sixteen is far beyond what people connecting
/// apps need and small enough that a flood holds few sockets.
pub const MAX_IN_FLIGHT: usize = 16;
/// Above this many tracked addresses or hosts, the idle ones are forgotten.
const PRUNE_ABOVE: usize = 10_000;

/// Which limit refused a fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The requesting address started too many fetches.
    Address,
    /// The URL's host was fetched too often.
    Host,
    /// Too many fetches are in progress.
    InFlight,
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

/// The bucket an address is counted in (IPv6: its /64).
pub use crate::domain::network::address_group;

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
    addresses: Buckets<IpAddr>,
    hosts: Buckets<String>,
}

/// The three limits, shared by every fetch of one fetcher.
#[derive(Debug)]
pub struct Limits {
    counters: Mutex<Counters>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: usize,
}

/// One admitted fetch's place among those in flight; given back when dropped.
#[derive(Debug)]
pub struct Permit {
    in_flight: Arc<AtomicUsize>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::new(FETCHES_PER_ADDRESS, FETCHES_PER_HOST, MAX_IN_FLIGHT, WINDOW)
    }
}

impl Limits {
    /// Limits with other figures than the production ones (unit tests).
    fn new(per_address: u32, per_host: u32, max_in_flight: usize, window: Duration) -> Self {
        Self {
            counters: Mutex::new(Counters {
                addresses: Buckets::new(Rate::new(per_address, window)),
                hosts: Buckets::new(Rate::new(per_host, window)),
            }),
            in_flight: Arc::new(AtomicUsize::new(0)),
            max_in_flight,
        }
    }

    fn counters(&self) -> MutexGuard<'_, Counters> {
        // Each change is a single insert or retain: consistent even if a
        // holder panicked.
        self.counters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Admits one fetch of a URL on `host` started by a request from `from`
    /// at `now`, spending from every limit, or refuses it spending nothing.
    pub fn admit(&self, from: IpAddr, host: &str, now: OffsetDateTime) -> Result<Permit, Throttle> {
        let group = address_group(from);
        let mut counters = self.counters();
        let address_tat = counters
            .addresses
            .check(&group, now)
            .map_err(|wait| Throttle::new(Limit::Address, wait))?;
        let host_key = host.to_ascii_lowercase();
        let host_tat = counters
            .hosts
            .check(&host_key, now)
            .map_err(|wait| Throttle::new(Limit::Host, wait))?;
        // Only `admit` adds, and only under the lock, so the check and the
        // increment cannot be overtaken; a concurrent release only lowers it.
        if self.in_flight.load(Ordering::Acquire) >= self.max_in_flight {
            // A place frees up within one fetch's time limit at most.
            return Err(Throttle::new(
                Limit::InFlight,
                Duration::try_from(super::FETCH_TIMEOUT).unwrap_or(Duration::seconds(5)),
            ));
        }
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        counters.addresses.commit(group, address_tat, now);
        counters.hosts.commit(host_key, host_tat, now);
        Ok(Permit {
            in_flight: self.in_flight.clone(),
        })
    }

    /// Fetches in progress now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
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

    // How addresses are grouped is `domain::network`'s, tested there.

    #[test]
    fn an_address_may_start_its_budget_at_once_then_waits_for_it_to_refill() {
        let limits = Limits::new(3, 100, 100, MINUTE);
        let a = ip("192.0.2.1");
        let mut permits = Vec::new();
        for _ in 0..3 {
            permits.push(limits.admit(a, "h.example", NOW).unwrap());
        }
        let refused = limits.admit(a, "h.example", NOW).unwrap_err();
        assert_eq!(refused.limit, Limit::Address);
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
        let limits = Limits::new(2, 100, 100, MINUTE);
        for from in ["2001:db8::1", "2001:db8::2:3"] {
            assert!(limits.admit(ip(from), "h.example", NOW).is_ok());
        }
        let refused = limits
            .admit(ip("2001:db8::ffff"), "h.example", NOW)
            .unwrap_err();
        assert_eq!(refused.limit, Limit::Address);
        assert!(
            limits
                .admit(ip("2001:db8:0:1::1"), "h.example", NOW)
                .is_ok()
        );
        assert!(limits.admit(ip("192.0.2.1"), "h.example", NOW).is_ok());
    }

    #[test]
    fn a_host_is_limited_over_every_requester_whatever_the_port() {
        let limits = Limits::new(100, 2, 100, MINUTE);
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
        let limits = Limits::new(100, 100, 2, MINUTE);
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
    fn a_refusal_spends_nothing_from_the_other_limits() {
        let limits = Limits::new(2, 1, 100, MINUTE);
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
            Limit::Address
        );
        // Refused by the address limit: third.example was not spent.
        assert!(limits.admit(ip("192.0.2.2"), "third.example", NOW).is_ok());

        let limits = Limits::new(1, 1, 1, MINUTE);
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
    }

    #[test]
    fn idle_buckets_are_forgotten_once_many_are_tracked() {
        let limits = Limits::new(1, 1_000_000, 1_000_000, MINUTE);
        for i in 0..PRUNE_ABOVE as u32 {
            let from = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            drop(limits.admit(from, "h.example", NOW).unwrap());
        }
        assert_eq!(limits.counters().addresses.tats.len(), PRUNE_ABOVE);
        // A minute later every one of them is idle: the next insert prunes.
        let later = NOW + MINUTE;
        drop(limits.admit(ip("192.0.2.1"), "h.example", later).unwrap());
        assert_eq!(limits.counters().addresses.tats.len(), 1);
    }

    #[test]
    fn after_a_prune_that_kept_most_the_next_waits_until_the_map_has_doubled() {
        let limits = Limits::new(1, 1_000_000, 1_000_000, MINUTE);
        let admit = |i: u32, at| {
            let from = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            drop(limits.admit(from, "h.example", at).unwrap());
        };
        // One past the threshold, all busy: the prune keeps every one.
        for i in 0..=PRUNE_ABOVE as u32 {
            admit(i, NOW);
        }
        let kept = PRUNE_ABOVE + 1;
        assert_eq!(limits.counters().addresses.tats.len(), kept);
        // A minute later all are idle, but the map has not doubled since.
        let later = NOW + MINUTE;
        for i in 0..10 {
            admit(1_000_000 + i, later);
        }
        assert_eq!(limits.counters().addresses.tats.len(), kept + 10);
        assert_eq!(limits.counters().addresses.prune_at, kept * 2);
    }

    #[test]
    fn the_production_figures_refill_one_fetch_every_30_s_per_address_and_10_s_per_host() {
        let limits = Limits::default();
        let a = ip("192.0.2.1");
        for i in 0..FETCHES_PER_ADDRESS {
            drop(limits.admit(a, &format!("h{i}.example"), NOW).unwrap());
        }
        let refused = limits.admit(a, "other.example", NOW).unwrap_err();
        assert_eq!(refused.limit, Limit::Address);
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
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(
            Throttle::new(Limit::Address, Duration::milliseconds(2100)).retry_after,
            std::time::Duration::from_secs(3)
        );
        assert_eq!(
            Throttle::new(Limit::Address, Duration::milliseconds(10)).retry_after,
            std::time::Duration::from_secs(1)
        );
    }
}
