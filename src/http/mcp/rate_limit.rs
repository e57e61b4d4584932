//! The request budgets on `/mcp` (threat 25): `--mcp-rate-limit` requests
//! per minute per grant, and `--mcp-subject-rate-limit` per subject (the
//! person, or the automation, the token speaks for) over all its grants,
//! so registering more clients does not multiply what one person may send.
//! All of a budget may come at once; `0` turns it off (for benchmarks).
//!
//! Keyed by the grant and the subject the token names, checked right after
//! the signature (so a flood with a valid token costs no database work once
//! spent), and kept in memory per replica like the other limits.

use std::time::Duration;

use uuid::Uuid;

use crate::http::rate_limit::KeyedLimit;
use crate::mcp::admission;

/// One budget, keyed by a grant or a subject id.
pub type Budget = KeyedLimit<Uuid>;

impl admission::Budget for Budget {
    fn spend(&self, key: Uuid) -> Result<(), Duration> {
        self.check(key)
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
