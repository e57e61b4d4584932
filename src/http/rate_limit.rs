//! One budget of requests per period per key, in memory and per replica:
//! the `/register`, `/token`, `/revoke` and `/introspect` limits per
//! network ([`super::oauth::rate_limit`]) and the `/mcp` budgets per grant and per
//! subject ([`super::mcp::rate_limit`]) are each one of these.

use std::hash::Hash;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// Above this many tracked keys, idle ones are forgotten.
const PRUNE_ABOVE: usize = 10_000;

/// One budget, keyed by `K`; `None` inside means "off".
#[derive(Clone)]
pub struct KeyedLimit<K: Hash + Eq + Clone>(Option<Arc<DefaultKeyedRateLimiter<K>>>);

impl<K: Hash + Eq + Clone> KeyedLimit<K> {
    /// `count` requests per `period`, all of which may come at once; `0`
    /// turns it off.
    pub fn new(count: u32, period: Duration) -> Self {
        let Some(burst) = NonZeroU32::new(count) else {
            return Self(None);
        };
        let per_cell = period / burst.get();
        let quota = Quota::with_period(per_cell)
            .unwrap_or_else(|| Quota::per_second(burst))
            .allow_burst(burst);
        Self(Some(Arc::new(RateLimiter::keyed(quota))))
    }

    /// `count` requests per minute.
    pub fn per_minute(count: u32) -> Self {
        Self::new(count, Duration::from_secs(60))
    }

    /// Spends one request of `key`; `Err(wait)` when none is left.
    pub fn check(&self, key: K) -> Result<(), Duration> {
        let Some(limiter) = &self.0 else {
            return Ok(());
        };
        let outcome = limiter.check_key(&key);
        if limiter.len() > PRUNE_ABOVE {
            limiter.retain_recent();
        }
        outcome.map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }
}
