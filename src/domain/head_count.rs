//! How many birds a flock has.

use serde::Serialize;

/// 0 to [`HeadCount::MAX`] birds: more than any one flock holds, few enough
/// that sums over a farm's flocks and days stay far inside an `i64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct HeadCount(i64);

impl HeadCount {
    pub const MAX: i64 = 10_000_000;

    pub fn new(count: i64) -> Result<Self, String> {
        if (0..=Self::MAX).contains(&count) {
            Ok(Self(count))
        } else {
            Err(format!("{count} is not a head count (0 to 10,000,000)"))
        }
    }

    /// A head count typed by a person (surrounding spaces allowed).
    pub fn parse(raw: &str) -> Result<Self, String> {
        raw.trim()
            .parse()
            .ok()
            .and_then(|n| Self::new(n).ok())
            .ok_or_else(|| format!("{raw:?} is not a head count (0 to 10,000,000)"))
    }

    pub fn get(self) -> i64 {
        self.0
    }
}

impl std::fmt::Display for HeadCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_counts_are_bounded_and_whole() {
        assert_eq!(HeadCount::parse(" 0 ").unwrap().get(), 0);
        assert_eq!(HeadCount::new(HeadCount::MAX).unwrap().get(), 10_000_000);
        assert!(HeadCount::new(-1).is_err());
        assert!(HeadCount::new(HeadCount::MAX + 1).is_err());
        for bad in ["", "-1", "1.5", "ten", "10000001", "1e3"] {
            assert!(HeadCount::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
