//! Sign-in throttling that stops guessers, never the right person
//! (threat 15).
//!
//! - **Only failures count.** An attempt *reserves* one cell of each budget
//!   it is judged by before the password is checked, so a throttled guess
//!   costs no argon2 work and guesses in flight at once cannot overrun a
//!   budget; a right password gives its cells back (and clears the failures
//!   of whoever it was judged as), a wrong one leaves them spent.
//! - **One budget for every replica.** The counters are rows of the shared
//!   store ([`crate::storage::signin_failures`]), spent by one conditional
//!   upsert.
//! - **Who is judged by what.** A browser carrying a device cookie for the
//!   account typed (it signed in as that account before, see
//!   [`super::device`]) is judged by its own failures only, so a stranger's
//!   guesses at the account, or from the same network, cannot lock the
//!   owner out (OWASP, "Slow Down Online Guessing Attacks with Device
//!   Cookies"). Any other attempt is judged by the account's failures from
//!   such browsers *and* by its network's failures over every account
//!   (IPv4 address, IPv6 /64: one network cannot mint fresh buckets).
//! - **A success clears only its own judge's failures.** A right password
//!   from an untrusted browser clears the account's failures; one from a
//!   device clears that device's. The network's cell is given back but its
//!   other failures stay, so signing in to one's own account between
//!   guesses at others does not refill a network's budget, and the owner
//!   signing in on their own device does not hand a stranger fresh guesses.
//!
//! Each budget is a GCRA over whole milliseconds: `failures` may come at
//! once, then one more per `window / failures`. The rules are here, with
//! the time passed in; the store only applies them atomically.

use std::net::IpAddr;
use std::time::Duration;

use time::OffsetDateTime;

use super::device::Device;
use super::signin::SignInError;
use crate::config::SignInLimits;
use crate::domain::network::Network;
use crate::secrets;
use crate::storage::{Store, StoreError, Tx, signin_failures};

/// Where milliseconds that do not fit are held: far enough for any real
/// window or instant, and small enough that adding one window to one instant
/// cannot overflow.
const FAR_MS: i64 = i64::MAX / 4;

/// One budget: how many failures at once, refilled evenly over a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    failures: u32,
    window_ms: i64,
}

impl Budget {
    pub fn new(failures: u32, window: Duration) -> Self {
        Self {
            failures: failures.max(1),
            window_ms: i64::try_from(window.as_millis()).unwrap_or(FAR_MS),
        }
    }

    /// What one failure adds to a bucket's instant (at least 1 ms).
    fn interval_ms(self) -> i64 {
        (self.window_ms / i64::from(self.failures)).max(1)
    }

    /// The latest a bucket's instant may be for one more failure to be
    /// allowed at `now_ms`: a bucket may run `window - interval` ahead.
    fn latest_ms(self, now_ms: i64) -> i64 {
        now_ms + (self.window_ms - self.interval_ms()).max(0)
    }

    /// How long a full bucket at `clear_at_ms` makes the next attempt wait,
    /// in whole seconds rounded up (retrying after a rounded-down figure
    /// would be refused), at least one.
    pub fn wait(self, clear_at_ms: i64, now_ms: i64) -> Duration {
        let ms = (clear_at_ms - self.latest_ms(now_ms)).max(1);
        let seconds = ms.div_euclid(1000) + i64::from(ms.rem_euclid(1000) > 0);
        Duration::from_secs(seconds.max(1).unsigned_abs())
    }
}

/// What an attempt is judged by, decided from what the request carries.
#[derive(Clone, Copy, Debug)]
pub enum Judged<'a> {
    /// A browser whose device cookie names the account typed: its own
    /// failures only.
    Device(&'a Device),
    /// Any other browser: the account's failures (by the email as typed,
    /// known or not, so throttling tells nothing about which accounts
    /// exist) and its network's.
    Untrusted { email: &'a str, address: IpAddr },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Account,
    Network,
    Device,
}

/// One bucket an attempt is counted in, under its stored (hashed) key.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Bucket {
    kind: Kind,
    key: String,
    budget: Budget,
}

fn bucket(kind: Kind, name: &str, budget: Budget) -> Bucket {
    Bucket {
        kind,
        key: bucket_key(kind, name),
        budget,
    }
}

/// The stored key of the bucket of `kind` named `name`.
fn bucket_key(kind: Kind, name: &str) -> String {
    let label = match kind {
        Kind::Account => "account",
        Kind::Network => "network",
        Kind::Device => "device",
    };
    secrets::hash_secret(&format!("{label}:{name}"))
}

/// Forgets the failures counted against the account `email` (from
/// browsers it has not signed in on), in the caller's transaction: a
/// password reset, or an operator setting a password, lets the person who
/// was locked out sign in at once. Networks' and devices' failures stay.
pub async fn forget_account_failures(tx: &mut Tx, email: &str) -> Result<(), StoreError> {
    signin_failures::forget(tx, &bucket_key(Kind::Account, email)).await
}

/// The buckets `judged` is counted in.
fn buckets(judged: Judged<'_>, limits: &SignInLimits) -> Vec<Bucket> {
    let budget = |failures| Budget::new(failures, limits.window);
    match judged {
        Judged::Device(device) => vec![bucket(
            Kind::Device,
            device.id(),
            budget(limits.device_failures),
        )],
        Judged::Untrusted { email, address } => vec![
            bucket(Kind::Account, email, budget(limits.account_failures)),
            bucket(
                Kind::Network,
                &Network::of(address).to_string(),
                budget(limits.address_failures),
            ),
        ],
    }
}

fn millis(now: OffsetDateTime) -> i64 {
    i64::try_from(now.unix_timestamp_nanos() / 1_000_000).unwrap_or(FAR_MS)
}

/// The sign-in throttle, over the shared store.
#[derive(Clone, Debug)]
pub struct LoginThrottle {
    store: Store,
    limits: SignInLimits,
}

/// Cells spent for one attempt whose password is being checked.
#[derive(Debug)]
#[must_use = "settle the reservation once the password is checked"]
pub struct Reservation {
    buckets: Vec<Bucket>,
}

impl LoginThrottle {
    pub fn new(store: Store, limits: SignInLimits) -> Self {
        Self { store, limits }
    }

    /// Spends one cell of every bucket `judged` is counted in, all or none:
    /// [`SignInError::Throttled`] with the longest wait when any is full.
    pub async fn reserve(
        &self,
        judged: Judged<'_>,
        now: OffsetDateTime,
    ) -> Result<Reservation, SignInError> {
        let now_ms = millis(now);
        let buckets = buckets(judged, &self.limits);
        let mut tx = self.store.write().await?;
        let mut wait: Option<Duration> = None;
        for bucket in &buckets {
            let spent = signin_failures::spend(
                &mut tx,
                &bucket.key,
                now_ms,
                bucket.budget.interval_ms(),
                bucket.budget.latest_ms(now_ms),
            )
            .await?;
            if spent.is_none() {
                let clear_at = signin_failures::clear_at(&mut tx, &bucket.key)
                    .await?
                    .unwrap_or(now_ms);
                let this = bucket.budget.wait(clear_at, now_ms);
                wait = Some(wait.map_or(this, |w| w.max(this)));
            }
        }
        if let Some(wait) = wait {
            // Dropped uncommitted: no bucket was spent.
            return Err(SignInError::Throttled(wait));
        }
        tx.commit().await?;
        Ok(Reservation { buckets })
    }

    /// Deletes the buckets that count nothing any more (housekeeping).
    pub async fn forget_cleared(&self, now: OffsetDateTime) -> Result<u64, StoreError> {
        let mut tx = self.store.write().await?;
        let deleted = signin_failures::delete_cleared(&mut tx, millis(now)).await?;
        tx.commit().await?;
        Ok(deleted)
    }
}

impl Reservation {
    /// The password was right: the network's cell is given back, and the
    /// failures of whoever the attempt was judged as (the account from
    /// untrusted browsers, or the device) are cleared. In the caller's
    /// transaction, beside the audit row.
    pub async fn password_right(self, tx: &mut Tx) -> Result<(), StoreError> {
        for bucket in &self.buckets {
            match bucket.kind {
                Kind::Network => {
                    signin_failures::give_back(tx, &bucket.key, bucket.budget.interval_ms())
                        .await?;
                }
                Kind::Account | Kind::Device => signin_failures::forget(tx, &bucket.key).await?,
            }
        }
        Ok(())
    }

    /// The password was wrong: the cells stay spent.
    pub fn password_wrong(self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestStore;

    const SECOND: time::Duration = time::Duration::SECOND;

    fn limits() -> SignInLimits {
        SignInLimits {
            account_failures: 5,
            address_failures: 20,
            device_failures: 3,
            window: Duration::from_secs(300),
        }
    }

    async fn throttle(limits: SignInLimits) -> (LoginThrottle, TestStore) {
        let db = TestStore::sqlite().await;
        (LoginThrottle::new(db.store.clone(), limits), db)
    }

    fn now() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
    }

    fn ip(raw: &str) -> IpAddr {
        raw.parse().unwrap()
    }

    /// A device, as a cookie just issued makes one.
    fn device() -> Device {
        let key = crate::secrets::MacKey::derive(b"test", "device cookie");
        let cookie = super::super::device::issue(&key, "ann@farm.example", now());
        super::super::device::recognise(&key, &cookie, "ann@farm.example", now()).unwrap()
    }

    fn untrusted<'a>(email: &'a str, address: &str) -> Judged<'a> {
        Judged::Untrusted {
            email,
            address: ip(address),
        }
    }

    async fn fail(throttle: &LoginThrottle, judged: Judged<'_>, at: OffsetDateTime) {
        throttle.reserve(judged, at).await.unwrap().password_wrong();
    }

    async fn succeed(throttle: &LoginThrottle, judged: Judged<'_>, at: OffsetDateTime) {
        let reservation = throttle.reserve(judged, at).await.unwrap();
        let mut tx = throttle.store.write().await.unwrap();
        reservation.password_right(&mut tx).await.unwrap();
        tx.commit().await.unwrap();
    }

    fn throttled(result: Result<Reservation, SignInError>) -> Duration {
        match result {
            Err(SignInError::Throttled(wait)) => wait,
            other => panic!("expected a throttled attempt, got {other:?}"),
        }
    }

    #[test]
    fn a_budget_runs_its_failures_at_once_then_one_per_interval() {
        let budget = Budget::new(5, Duration::from_secs(300));
        assert_eq!(budget.interval_ms(), 60_000);
        assert_eq!(budget.latest_ms(0), 240_000);
        // Five failures at 0 put the bucket at 300 s: 60 s to wait.
        assert_eq!(budget.wait(300_000, 0), Duration::from_secs(60));
        assert_eq!(budget.wait(300_000, 59_001), Duration::from_secs(1));
        // Rounded up, never zero.
        assert_eq!(budget.wait(300_000, 1), Duration::from_secs(60));
        assert_eq!(budget.wait(0, 0), Duration::from_secs(1));
        // A budget of one: nothing may run ahead.
        let one = Budget::new(1, Duration::from_secs(60));
        assert_eq!(one.latest_ms(10), 10);
        assert_eq!(Budget::new(0, Duration::from_secs(60)), one);
        // A window too long for milliseconds is held at a bound the
        // arithmetic cannot overflow from: five failures then wait
        // practically for ever, not a moment.
        let endless = Budget::new(5, Duration::MAX);
        let now_ms = 1_800_000_000_000;
        let full = now_ms + 5 * endless.interval_ms();
        let century = Duration::from_secs(100 * 365 * 24 * 3600);
        assert!(endless.wait(full, now_ms) > century);
    }

    #[test]
    fn an_untrusted_attempt_counts_for_the_account_and_the_64_a_device_for_itself() {
        let limits = limits();
        let a = buckets(untrusted("ann@farm.example", "2001:db8:1:2::7"), &limits);
        let b = buckets(
            untrusted("ann@farm.example", "2001:db8:1:2:ffff::1"),
            &limits,
        );
        assert_eq!(a, b, "one /64, one network bucket");
        assert_eq!(
            a.iter().map(|b| b.kind).collect::<Vec<_>>(),
            [Kind::Account, Kind::Network]
        );
        let other = buckets(untrusted("ann@farm.example", "2001:db8:1:3::7"), &limits);
        assert_eq!(a[0], other[0]);
        assert_ne!(a[1], other[1]);
        let device = device();
        let judged = buckets(Judged::Device(&device), &limits);
        assert_eq!(judged.len(), 1);
        assert_eq!(judged[0].kind, Kind::Device);
        // Stored keys are hashes: a password typed as an email is not kept.
        assert!(!a[0].key.contains("ann"));
    }

    #[tokio::test]
    async fn only_failures_count_and_a_success_clears_the_accounts() {
        let (throttle, _db) = throttle(limits()).await;
        let ann = untrusted("ann@farm.example", "192.0.2.1");
        // Eight right passwords in a row: nothing is spent.
        for n in 0..8 {
            succeed(&throttle, ann, now() + SECOND * n).await;
        }
        // Four typos, a success, four typos: the success cleared the four.
        for _ in 0..4 {
            fail(&throttle, ann, now()).await;
        }
        succeed(&throttle, ann, now()).await;
        for _ in 0..4 {
            fail(&throttle, ann, now()).await;
        }
        fail(&throttle, ann, now()).await;
        let wait = throttled(throttle.reserve(ann, now()).await);
        assert_eq!(wait, Duration::from_secs(60));
        // A throttled attempt spends nothing: a minute later one more try.
        fail(&throttle, ann, now() + SECOND * 60).await;
        assert!(throttle.reserve(ann, now() + SECOND * 60).await.is_err());
    }

    #[tokio::test]
    async fn a_reservation_holds_its_cell_while_the_password_is_checked() {
        let (throttle, _db) = throttle(limits()).await;
        let ann = untrusted("ann@farm.example", "192.0.2.1");
        let mut held = Vec::new();
        for _ in 0..5 {
            held.push(throttle.reserve(ann, now()).await.unwrap());
        }
        // Five guesses in flight: a sixth is refused before any is decided.
        assert!(throttle.reserve(ann, now()).await.is_err());
        let mut tx = throttle.store.write().await.unwrap();
        held.pop().unwrap().password_right(&mut tx).await.unwrap();
        tx.commit().await.unwrap();
        assert!(throttle.reserve(ann, now()).await.is_ok());
    }

    #[tokio::test]
    async fn a_network_is_throttled_across_accounts_and_its_failures_outlive_a_success() {
        let (throttle, _db) = throttle(limits()).await;
        for n in 0..20 {
            let email = format!("user{n}@farm.example");
            fail(&throttle, untrusted(&email, "2001:db8::1"), now()).await;
        }
        // Same /64, another account: refused; another network: allowed.
        let fresh = untrusted("fresh@farm.example", "2001:db8::ffff");
        assert!(throttle.reserve(fresh, now()).await.is_err());
        fail(
            &throttle,
            untrusted("fresh@farm.example", "2001:db8:0:1::1"),
            now(),
        )
        .await;
        // A cell later, one's own success gives its cell back but does not
        // refill the network.
        let later = now() + SECOND * 15;
        succeed(
            &throttle,
            untrusted("mine@farm.example", "2001:db8::2"),
            later,
        )
        .await;
        fail(
            &throttle,
            untrusted("user0@farm.example", "2001:db8::2"),
            later,
        )
        .await;
        assert!(
            throttle
                .reserve(untrusted("user1@farm.example", "2001:db8::2"), later)
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_device_is_judged_by_its_own_failures_and_none_of_the_accounts() {
        let (throttle, _db) = throttle(limits()).await;
        let stranger = untrusted("ann@farm.example", "192.0.2.66");
        for _ in 0..5 {
            fail(&throttle, stranger, now()).await;
        }
        assert!(throttle.reserve(stranger, now()).await.is_err());
        let owner = device();
        succeed(&throttle, Judged::Device(&owner), now()).await;
        // The owner's success handed the stranger nothing.
        assert!(throttle.reserve(stranger, now()).await.is_err());
        for _ in 0..3 {
            fail(&throttle, Judged::Device(&owner), now()).await;
        }
        let wait = throttled(throttle.reserve(Judged::Device(&owner), now()).await);
        assert_eq!(wait, Duration::from_secs(100));
        // Another device of the owner is not held back by this one.
        let phone = device();
        succeed(&throttle, Judged::Device(&phone), now()).await;
    }

    #[tokio::test]
    async fn refused_attempts_spend_nothing_anywhere_and_cleared_buckets_are_deleted() {
        let (throttle, _db) = throttle(limits()).await;
        for _ in 0..5 {
            fail(&throttle, untrusted("ann@farm.example", "192.0.2.1"), now()).await;
        }
        // Refused by the account: the network's cell is not spent either.
        for _ in 0..30 {
            assert!(
                throttle
                    .reserve(untrusted("ann@farm.example", "192.0.2.1"), now())
                    .await
                    .is_err()
            );
        }
        for n in 0..15 {
            let email = format!("user{n}@farm.example");
            fail(&throttle, untrusted(&email, "192.0.2.1"), now()).await;
        }
        assert_eq!(throttle.forget_cleared(now()).await.unwrap(), 0);
        // Every bucket has refilled after a whole window.
        let later = now() + time::Duration::seconds(300);
        assert_eq!(throttle.forget_cleared(later).await.unwrap(), 17);
    }
}
