//! The per-grant request budget on `/mcp` (threat 25): `--mcp-rate-limit`
//! requests per minute per grant, all of which may come at once; `0` turns
//! it off (for benchmarks).
//!
//! Keyed by the grant the token names, checked right after the signature
//! (so a flood with a valid token costs no database work once spent), and
//! kept in memory per replica like the other limits.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use uuid::Uuid;

/// Above this many tracked grants, idle ones are forgotten.
const PRUNE_ABOVE: usize = 10_000;

#[derive(Clone)]
pub struct GrantLimit(Option<Arc<DefaultKeyedRateLimiter<Uuid>>>);

impl GrantLimit {
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

    /// Spends one request of `grant`; `Err(wait)` when none is left.
    pub fn check(&self, grant: Uuid) -> Result<(), Duration> {
        let Some(limiter) = &self.0 else {
            return Ok(());
        };
        let outcome = limiter.check_key(&grant);
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
    fn each_grant_has_its_own_budget_and_zero_is_off() {
        let limit = GrantLimit::per_minute(2);
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        assert!(limit.check(a).is_ok());
        assert!(limit.check(a).is_ok());
        let wait = limit.check(a).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(30));
        assert!(limit.check(b).is_ok());
        let off = GrantLimit::per_minute(0);
        assert!((0..1000).all(|_| off.check(a).is_ok()));
    }
}
