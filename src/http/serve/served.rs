//! The connections being served, counted per network, and which one to
//! close when a newcomer needs its place.
//!
//! Two caps decide whether a new connection is served: the server's
//! (`--max-connections`) and its network's (`--max-connections-per-network`;
//! an IPv4 address, an IPv6 /64, the grouping the per-address budgets use).
//! At either, a kept-alive connection that sits idle between requests
//! makes room before anyone is refused: the one idle longest, of the same
//! network when that network is at its cap, of any network when the server
//! is. Closing an idle kept-alive connection is ordinary HTTP (clients
//! expect a server to close one, and open another), while refusing the
//! newcomer would let whoever holds idle connections keep everyone else
//! out: one address with 512 idle connections made every newcomer get 503
//! (issue 31). Connections in the middle of a request, or that have not
//! sent one yet, are never closed for a newcomer; the timeouts deal with
//! those.
//!
//! Only the accept loop touches this, so it needs no lock: a connection is
//! entered when its task is spawned and removed when the task ends, by its
//! task id. A connection asked to close stops counting at once (its place
//! goes to the newcomer); it closes as soon as hyper sees no request under
//! way, or answers the one that began meanwhile.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::Notify;
use tokio::task;

use super::activity::Activity;
use crate::config::ConnectionLimits;
use crate::domain::network::Network;

/// Why a connection is not served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    /// Its network holds its share, none of it idle.
    Network,
    /// The server holds its cap, none of it idle.
    Server,
}

/// The network a peer counts in.
pub fn network_of(peer: SocketAddr) -> Network {
    Network::of(peer.ip())
}

/// What the accept loop hands a connection it serves: where it tracks
/// its phase, and the signal that asks it to close.
#[derive(Clone)]
pub struct Handle {
    pub activity: Arc<Activity>,
    pub close: Arc<Notify>,
}

struct Entry {
    network: Network,
    handle: Handle,
    /// Asked to close: counted out already, never asked again.
    leaving: bool,
}

pub struct Served {
    max: usize,
    /// `0`: no cap per network.
    per_network: usize,
    entries: HashMap<task::Id, Entry>,
    per_network_count: HashMap<Network, usize>,
    /// Entries not leaving.
    counted: usize,
}

impl Served {
    pub fn new(limits: &ConnectionLimits) -> Self {
        Self {
            max: limits.max_connections,
            per_network: limits.max_connections_per_network,
            entries: HashMap::new(),
            per_network_count: HashMap::new(),
            counted: 0,
        }
    }

    /// Whether a connection from `network` may be served now. At a cap,
    /// the idlest kept-alive connection in its scope is asked to close and
    /// counted out, and the newcomer takes its place.
    pub fn admit(&mut self, network: Network) -> Result<(), Full> {
        if self.per_network > 0
            && self.count_of(network) >= self.per_network
            && !self.close_idlest(|entry| entry.network == network)
        {
            return Err(Full::Network);
        }
        if self.counted >= self.max && !self.close_idlest(|_| true) {
            return Err(Full::Server);
        }
        Ok(())
    }

    /// Counts in a connection just spawned as task `id`.
    pub fn enter(&mut self, id: task::Id, network: Network, handle: Handle) {
        *self.per_network_count.entry(network).or_default() += 1;
        self.counted += 1;
        self.entries.insert(
            id,
            Entry {
                network,
                handle,
                leaving: false,
            },
        );
    }

    /// Counts out the connection of task `id`, which has ended.
    pub fn leave(&mut self, id: task::Id) {
        if let Some(entry) = self.entries.remove(&id)
            && !entry.leaving
        {
            self.count_out(entry.network);
        }
    }

    fn count_of(&self, network: Network) -> usize {
        self.per_network_count.get(&network).copied().unwrap_or(0)
    }

    fn count_out(&mut self, network: Network) {
        self.counted = self.counted.saturating_sub(1);
        if let Some(count) = self.per_network_count.get_mut(&network) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.per_network_count.remove(&network);
            }
        }
    }

    /// Asks the connection idle longest among those `eligible` to close;
    /// false when none is idle.
    fn close_idlest(&mut self, eligible: impl Fn(&Entry) -> bool) -> bool {
        let idlest = self
            .entries
            .iter()
            .filter(|(_, entry)| !entry.leaving && eligible(entry))
            .filter_map(|(id, entry)| entry.handle.activity.idle_since().map(|since| (since, *id)))
            .min();
        let Some((_, id)) = idlest else {
            return false;
        };
        let Some(entry) = self.entries.get_mut(&id) else {
            return false;
        };
        entry.leaving = true;
        // A permit is stored if the task is not waiting on it right now.
        entry.handle.close.notify_one();
        let network = entry.network;
        self.count_out(network);
        tracing::debug!(%network, "closing an idle kept-alive connection to make room");
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::*;

    fn limits(max: usize, per_network: usize) -> ConnectionLimits {
        ConnectionLimits {
            max_connections: max,
            max_connections_per_network: per_network,
            ..ConnectionLimits::default()
        }
    }

    fn ip(raw: &str) -> Network {
        Network::of(raw.parse().unwrap())
    }

    /// Task ids are only made by spawning.
    async fn task_ids(n: usize) -> Vec<task::Id> {
        let mut ids = Vec::new();
        for _ in 0..n {
            ids.push(tokio::spawn(async {}).id());
        }
        ids
    }

    /// A connection accepted at `t0`; answered (idle since) `answered`.
    fn handle(t0: Instant, answered: Option<Instant>) -> Handle {
        let activity = Arc::new(Activity::new(t0));
        if let Some(at) = answered {
            activity.request_started();
            activity.request_answered(at);
        }
        Handle {
            activity,
            close: Arc::new(Notify::new()),
        }
    }

    /// Whether `handle` was asked to close.
    async fn asked_to_close(handle: &Handle) -> bool {
        tokio::time::timeout(Duration::from_millis(10), handle.close.notified())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn a_network_at_its_cap_is_refused_unless_one_of_its_own_is_idle() {
        let t0 = Instant::now();
        let mut served = Served::new(&limits(10, 2));
        let ids = task_ids(4).await;
        let busy = handle(t0, None);
        let idle = handle(t0, Some(t0));
        served.admit(ip("192.0.2.1")).unwrap();
        served.enter(ids[0], ip("192.0.2.1"), busy.clone());
        served.admit(ip("192.0.2.1")).unwrap();
        served.enter(ids[1], ip("192.0.2.1"), idle.clone());
        // Another network's idle connection is not the full network's to close.
        served.admit(ip("192.0.2.9")).unwrap();
        served.enter(ids[2], ip("192.0.2.9"), handle(t0, Some(t0)));

        assert_eq!(served.admit(ip("192.0.2.1")), Ok(()));
        assert!(asked_to_close(&idle).await);
        assert!(!asked_to_close(&busy).await);
        served.enter(ids[3], ip("192.0.2.1"), handle(t0, None));
        assert_eq!(served.admit(ip("192.0.2.1")), Err(Full::Network));
        // The server has room: another network is served.
        assert_eq!(served.admit(ip("192.0.2.2")), Ok(()));
        // Off, the network may hold everything.
        let mut uncapped = Served::new(&limits(10, 0));
        for id in task_ids(9).await {
            uncapped.admit(ip("192.0.2.1")).unwrap();
            uncapped.enter(id, ip("192.0.2.1"), handle(t0, None));
        }
        assert_eq!(uncapped.admit(ip("192.0.2.1")), Ok(()));
    }

    #[tokio::test]
    async fn a_full_server_closes_the_connection_idle_longest_first() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut served = Served::new(&limits(3, 0));
        let ids = task_ids(3).await;
        let recent = handle(t0, Some(t0 + s(5)));
        let oldest = handle(t0, Some(t0 + s(1)));
        let never_used = handle(t0, None);
        for (id, h) in ids.iter().zip([&recent, &oldest, &never_used]) {
            served.admit(ip("192.0.2.1")).unwrap();
            served.enter(*id, ip("192.0.2.1"), h.clone());
        }

        assert_eq!(served.admit(ip("198.51.100.7")), Ok(()));
        assert!(asked_to_close(&oldest).await);
        assert!(!asked_to_close(&recent).await);
        // The one asked counts out at once; when its task ends it is not
        // counted out twice.
        served.leave(ids[1]);
        let newcomer = task_ids(1).await[0];
        served.enter(newcomer, ip("198.51.100.7"), handle(t0, None));
        assert_eq!(served.admit(ip("198.51.100.7")), Ok(()));
        assert!(asked_to_close(&recent).await);
        served.enter(task_ids(1).await[0], ip("198.51.100.7"), handle(t0, None));
        // Nothing idle is left: a connection that never sent a request, or
        // one in the middle of one, is not closed for a newcomer.
        assert_eq!(served.admit(ip("198.51.100.7")), Err(Full::Server));
        assert!(!asked_to_close(&never_used).await);
        // One that ends frees its place.
        served.leave(ids[2]);
        assert_eq!(served.admit(ip("198.51.100.7")), Ok(()));
    }

    #[test]
    fn ipv6_peers_count_per_64() {
        let peer = |raw: &str| SocketAddr::new(raw.parse().unwrap(), 443);
        assert_eq!(
            network_of(peer("2001:db8:1:2::1")),
            network_of(peer("2001:db8:1:2:ffff::9"))
        );
        assert_ne!(
            network_of(peer("2001:db8:1:2::1")),
            network_of(peer("2001:db8:1:3::1"))
        );
    }
}
