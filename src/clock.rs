//! The current time, passed in.
//!
//! Protocol code never reads the system clock itself: it takes `now` as an
//! argument so that expiry, rotation and "recent sign-in" rules can be tested
//! at fixed instants. [`Clock`] is what the running server hands to them.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use time::OffsetDateTime;

/// A source of the current time, shared by every request handler.
#[derive(Clone)]
pub struct Clock(Arc<Source>);

enum Source {
    System,
    /// Seconds added to the system time: lets an embedding test move time
    /// forward (a code expiring, a sign-in growing old) without sleeping.
    Shifted(AtomicI64),
}

impl Clock {
    pub fn system() -> Self {
        Self(Arc::new(Source::System))
    }

    /// A clock that starts at the system time and can be moved forward with
    /// [`Clock::advance`].
    pub fn adjustable() -> Self {
        Self(Arc::new(Source::Shifted(AtomicI64::new(0))))
    }

    pub fn now(&self) -> OffsetDateTime {
        let real = OffsetDateTime::now_utc();
        match &*self.0 {
            Source::System => real,
            Source::Shifted(offset) => {
                real + time::Duration::seconds(offset.load(Ordering::Relaxed))
            }
        }
    }

    /// Moves an adjustable clock forward; a system clock ignores it.
    pub fn advance(&self, by: time::Duration) {
        if let Source::Shifted(offset) = &*self.0 {
            offset.fetch_add(by.whole_seconds(), Ordering::Relaxed);
        }
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clock").field("now", &self.now()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_adjustable_clock_moves_forward_and_a_system_clock_does_not() {
        let system = Clock::system();
        let before = system.now();
        system.advance(time::Duration::hours(1));
        assert!(system.now() - before < time::Duration::minutes(1));

        let adjustable = Clock::adjustable();
        let before = adjustable.now();
        adjustable.advance(time::Duration::hours(1));
        assert!(adjustable.now() - before >= time::Duration::hours(1));
    }
}
