//! The request budgets on `/mcp` (threat 25): `--mcp-rate-limit` requests
//! per minute per grant, and `--mcp-subject-rate-limit` per subject (the
//! person, or the automation, the token speaks for) over all its grants,
//! so registering more clients does not multiply what one person may send.
//! All of a budget may come at once; `0` turns it off (for benchmarks).
//!
//! Keyed by the grant and the subject the token names, checked right after
//! the signature (so a flood with a valid token costs no database work once
//! spent), and kept in memory per replica like the other limits.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use uuid::Uuid;

/// Above this many tracked grants, idle ones are forgotten.
const PRUNE_ABOVE: usize = 10_000;

/// One budget, keyed by a grant or a subject id.
#[derive(Clone)]
pub struct Budget(Option<Arc<DefaultKeyedRateLimiter<Uuid>>>);

impl Budget {
    pub fn per_minute(count: u32) -> Self {
        let Some(burst) = NonZeroU32::new(count) else {
            return Self(None);
        };
        let per_cell = Duration::from_secs(60) / burst.get();
        let quota = Quota::with_period(per_cell)
            .unwrap_or_else(|| Quota::per_second(burst))
            .allow_burst(burst);
        Self(Some(Arc::new(RateLimiter::keyed(quota))))
    }

    /// Spends one request of `key`; `Err(wait)` when none is left.
    pub fn check(&self, key: Uuid) -> Result<(), Duration> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_has_its_own_budget_and_zero_is_off() {
        let limit = Budget::per_minute(2);
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        assert!(limit.check(a).is_ok());
        assert!(limit.check(a).is_ok());
        let wait = limit.check(a).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(30));
        assert!(limit.check(b).is_ok());
        let off = Budget::per_minute(0);
        assert!((0..1000).all(|_| off.check(a).is_ok()));
    }
}
