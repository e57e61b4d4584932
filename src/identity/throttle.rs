//! Sign-in throttling, per account and per client address.
//!
//! Every attempt spends a cell from both buckets *before* the password is
//! checked, so a throttled guess costs no argon2 work. The counters live in
//! memory and are per replica (documented in docs/operations.md): an attacker
//! spreading guesses over N replicas gets N times the budget, which the
//! per-account bucket still keeps to a few guesses a minute.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// How many attempts each bucket allows at once, and how fast it refills.
#[derive(Clone, Copy, Debug)]
pub struct ThrottlePolicy {
    pub per_account_burst: u32,
    pub per_account_refill: Duration,
    pub per_address_burst: u32,
    pub per_address_refill: Duration,
}

impl Default for ThrottlePolicy {
    fn default() -> Self {
        Self {
            // Five tries, then one a minute: a person mistyping is not
            // bothered, a guesser gets ~1,440 a day per account.
            per_account_burst: 5,
            per_account_refill: Duration::from_secs(60),
            // A shared office address gets more room than one account.
            per_address_burst: 20,
            per_address_refill: Duration::from_secs(6),
        }
    }
}

pub struct LoginThrottle {
    accounts: DefaultKeyedRateLimiter<String>,
    addresses: DefaultKeyedRateLimiter<IpAddr>,
}

impl std::fmt::Debug for LoginThrottle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LoginThrottle")
    }
}

fn quota(burst: u32, refill: Duration) -> Quota {
    let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
    Quota::with_period(refill)
        .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
        .allow_burst(burst)
}

impl LoginThrottle {
    pub fn new(policy: ThrottlePolicy) -> Self {
        Self {
            accounts: RateLimiter::keyed(quota(
                policy.per_account_burst,
                policy.per_account_refill,
            )),
            addresses: RateLimiter::keyed(quota(
                policy.per_address_burst,
                policy.per_address_refill,
            )),
        }
    }

    /// Spends one attempt for this account and address. `Err(wait)` when
    /// either bucket is empty: try again after `wait`.
    pub fn attempt(&self, account: &str, address: IpAddr) -> Result<(), Duration> {
        let now = DefaultClock::default().now();
        let by_address = self.addresses.check_key(&address);
        let by_account = self.accounts.check_key(&account.to_owned());
        let wait = [by_address.err(), by_account.err()]
            .into_iter()
            .flatten()
            .map(|not_until| not_until.wait_time_from(now))
            .max();
        match wait {
            Some(wait) => Err(wait.max(Duration::from_secs(1))),
            None => Ok(()),
        }
    }

    /// Drops idle keys so the maps do not grow without bound.
    pub fn prune(&self) {
        self.accounts.retain_recent();
        self.addresses.retain_recent();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_is_throttled_after_its_burst_and_others_are_not() {
        let throttle = LoginThrottle::new(ThrottlePolicy::default());
        let ip: IpAddr = [127, 0, 0, 1].into();
        for _ in 0..5 {
            assert!(throttle.attempt("ann@farm.example", ip).is_ok());
        }
        let wait = throttle.attempt("ann@farm.example", ip).unwrap_err();
        assert!(wait >= Duration::from_secs(1) && wait <= Duration::from_secs(60));
        assert!(throttle.attempt("bob@farm.example", ip).is_ok());
    }

    #[test]
    fn an_address_is_throttled_across_accounts() {
        let throttle = LoginThrottle::new(ThrottlePolicy::default());
        let ip: IpAddr = [10, 0, 0, 1].into();
        for n in 0..20 {
            assert!(
                throttle
                    .attempt(&format!("user{n}@farm.example"), ip)
                    .is_ok()
            );
        }
        assert!(throttle.attempt("fresh@farm.example", ip).is_err());
    }
}
