//! One fetch per URL at a time: concurrent requests for a URL that is being
//! fetched wait for that fetch and get its result, instead of each starting
//! their own (threat 33: forty requests for one uncached URL must not hold
//! forty connections).
//!
//! The fetch runs in a task of its own, not in the request that started it:
//! a request that gives up (its client disconnected) neither cancels the
//! fetch the others wait on nor leaves behind a half-done entry holding a
//! place among the fetches in flight. The entry leaves the map when the task
//! ends, whatever happens to it; the task stores its result where later
//! requests find it (the caches) before it leaves, so no request arriving in
//! between starts a second fetch.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

/// What to do about a key nobody is fetching, decided under the map's lock
/// (so two requests cannot both decide to start).
pub enum Decision<V, F> {
    /// No fetch needed, or refused: this is the answer.
    Answer(V),
    /// Start this fetch; every request for the key until it ends gets its
    /// output.
    Start(F),
}

struct Flight<V> {
    result: watch::Receiver<Option<V>>,
    /// Requests that joined this fetch rather than starting it.
    joined: Arc<AtomicUsize>,
}

type Pending<V> = Arc<Mutex<HashMap<String, Flight<V>>>>;

/// The fetches in progress, by key.
pub struct SingleFlight<V> {
    pending: Pending<V>,
}

impl<V> std::fmt::Debug for SingleFlight<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SingleFlight")
            .field("in_progress", &lock(&self.pending).len())
            .finish()
    }
}

impl<V> Default for SingleFlight<V> {
    fn default() -> Self {
        Self {
            pending: Arc::default(),
        }
    }
}

fn lock<V>(pending: &Pending<V>) -> MutexGuard<'_, HashMap<String, Flight<V>>> {
    // Every change is one insert or one remove: consistent after a panic.
    pending
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes the key when the fetch's task ends, even by panic or abort.
struct Leave<V> {
    pending: Pending<V>,
    key: String,
}

impl<V> Drop for Leave<V> {
    fn drop(&mut self) {
        lock(&self.pending).remove(&self.key);
    }
}

impl<V: Clone + Send + Sync + 'static> SingleFlight<V> {
    /// The result for `key`: that of the fetch in progress if there is one;
    /// otherwise `decide` says whether to answer at once or start a fetch.
    /// `None` when the fetch ended without a result (its task panicked or
    /// the runtime is shutting down).
    pub async fn run<F>(&self, key: &str, decide: impl FnOnce() -> Decision<V, F>) -> Option<V>
    where
        F: Future<Output = V> + Send + 'static,
    {
        let mut result = {
            let mut pending = lock(&self.pending);
            if let Some(flight) = pending.get(key) {
                flight.joined.fetch_add(1, Ordering::Relaxed);
                flight.result.clone()
            } else {
                let fetch = match decide() {
                    Decision::Answer(answer) => return Some(answer),
                    Decision::Start(fetch) => fetch,
                };
                let (send, result) = watch::channel(None);
                pending.insert(
                    key.to_owned(),
                    Flight {
                        result: result.clone(),
                        joined: Arc::default(),
                    },
                );
                let leave = Leave {
                    pending: self.pending.clone(),
                    key: key.to_owned(),
                };
                tokio::spawn(async move {
                    let output = fetch.await;
                    drop(leave);
                    // Nobody waiting (every request gave up) is fine.
                    let _ = send.send(Some(output));
                });
                result
            }
        };
        result.wait_for(Option::is_some).await.ok()?.clone()
    }

    /// How many requests joined the fetch of `key` in progress (0 when none
    /// is in progress).
    pub fn joined(&self, key: &str) -> usize {
        lock(&self.pending)
            .get(key)
            .map_or(0, |flight| flight.joined.load(Ordering::Relaxed))
    }

    /// How many fetches are in progress.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        lock(&self.pending).len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::sync::oneshot;

    use super::*;

    type Fetch = std::pin::Pin<Box<dyn Future<Output = u32> + Send>>;

    fn ready(value: u32) -> Fetch {
        Box::pin(async move { value })
    }

    /// Polls `condition` until it holds (bounded, so a broken one fails).
    async fn until(condition: impl Fn() -> bool) {
        for _ in 0..500 {
            if condition() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("condition never held");
    }

    #[tokio::test]
    async fn concurrent_requests_for_one_key_share_one_fetch() {
        let flights = Arc::new(SingleFlight::<u32>::default());
        let started = Arc::new(AtomicUsize::new(0));
        let (release, released) = oneshot::channel::<u32>();
        let released = Arc::new(Mutex::new(Some(released)));
        let mut requests = Vec::new();
        for _ in 0..8 {
            let flights = flights.clone();
            let started = started.clone();
            let released = released.clone();
            requests.push(tokio::spawn(async move {
                flights
                    .run("k", move || {
                        started.fetch_add(1, Ordering::SeqCst);
                        let released = released.lock().unwrap().take().unwrap();
                        let fetch: Fetch = Box::pin(async move { released.await.unwrap() });
                        Decision::Start(fetch)
                    })
                    .await
            }));
        }
        until(|| flights.joined("k") == 7).await;
        release.send(42).unwrap();
        for request in requests {
            assert_eq!(request.await.unwrap(), Some(42));
        }
        assert_eq!(started.load(Ordering::SeqCst), 1, "one fetch started");
        assert_eq!(flights.len(), 0, "the entry left when the fetch ended");
        assert_eq!(flights.joined("k"), 0);
    }

    #[tokio::test]
    async fn once_a_fetch_has_ended_the_next_request_decides_again() {
        let flights = SingleFlight::<u32>::default();
        let first = flights.run("k", || Decision::Start(ready(1))).await;
        assert_eq!(first, Some(1));
        let second = flights.run("k", || Decision::Start(ready(2))).await;
        assert_eq!(second, Some(2));
        let answered = flights.run("k", || Decision::<u32, Fetch>::Answer(3)).await;
        assert_eq!(answered, Some(3));
        assert_eq!(flights.len(), 0, "an answer leaves nothing behind");
    }

    /// Starts a fetch of `key` that lasts until the sender returned is
    /// used or dropped, and waits until it is in progress.
    async fn start_held(
        flights: &Arc<SingleFlight<u32>>,
        key: &'static str,
    ) -> (oneshot::Sender<u32>, tokio::task::JoinHandle<Option<u32>>) {
        let (hold, held) = oneshot::channel::<u32>();
        let request = {
            let flights = flights.clone();
            tokio::spawn(async move {
                flights
                    .run(key, || {
                        Decision::Start(Box::pin(async move { held.await.unwrap_or(0) }) as Fetch)
                    })
                    .await
            })
        };
        until(|| flights.len() == 1).await;
        (hold, request)
    }

    #[tokio::test]
    async fn its_debug_form_counts_the_fetches_in_progress() {
        let flights = Arc::new(SingleFlight::<u32>::default());
        assert_eq!(format!("{flights:?}"), "SingleFlight { in_progress: 0 }");
        let (_hold, slow) = start_held(&flights, "slow").await;
        assert_eq!(format!("{flights:?}"), "SingleFlight { in_progress: 1 }");
        slow.abort();
    }

    #[tokio::test]
    async fn other_keys_do_not_wait_on_each_other() {
        let flights = Arc::new(SingleFlight::<u32>::default());
        let (_hold, slow) = start_held(&flights, "slow").await;
        let quick = flights.run("quick", || Decision::Start(ready(5))).await;
        assert_eq!(quick, Some(5));
        slow.abort();
    }

    #[tokio::test]
    async fn a_request_that_gives_up_does_not_cancel_the_fetch() {
        let flights = Arc::new(SingleFlight::<u32>::default());
        let finished = Arc::new(AtomicUsize::new(0));
        let (release, released) = oneshot::channel::<u32>();
        let starter = {
            let flights = flights.clone();
            let finished = finished.clone();
            tokio::spawn(async move {
                flights
                    .run("k", move || {
                        Decision::Start(Box::pin(async move {
                            let value = released.await.unwrap();
                            finished.fetch_add(1, Ordering::SeqCst);
                            value
                        }) as Fetch)
                    })
                    .await
            })
        };
        until(|| flights.len() == 1).await;
        let joiner = {
            let flights = flights.clone();
            tokio::spawn(
                async move { flights.run("k", || Decision::<u32, Fetch>::Answer(0)).await },
            )
        };
        until(|| flights.joined("k") == 1).await;
        // The request that started the fetch goes away.
        starter.abort();
        let _ = starter.await;
        release.send(9).unwrap();
        assert_eq!(joiner.await.unwrap(), Some(9));
        until(|| finished.load(Ordering::SeqCst) == 1).await;
        assert_eq!(flights.len(), 0);
    }

    #[tokio::test]
    async fn a_fetch_that_panics_leaves_no_entry_and_its_waiters_get_none() {
        let flights = SingleFlight::<u32>::default();
        let answer = flights
            .run("k", || {
                Decision::Start(Box::pin(async {
                    let failed = true;
                    if failed {
                        panic!("the fetch failed badly");
                    }
                    0_u32
                }) as Fetch)
            })
            .await;
        assert_eq!(answer, None);
        assert_eq!(flights.len(), 0);
        let next = flights.run("k", || Decision::Start(ready(4))).await;
        assert_eq!(next, Some(4));
    }
}
