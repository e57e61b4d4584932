//! Calendar days as the farm records them, and bounded periods of them.
//!
//! A daily entry belongs to a day, not an instant, so the type is a plain
//! `time::Date` parsed from `YYYY-MM-DD` and nothing else. Periods are capped
//! because every report aggregates over one: a bounded period is what keeps
//! each query's reads bounded.

use time::{Date, Duration, OffsetDateTime, UtcOffset};

const FORMAT: &[time::format_description::BorrowedFormatItem<'static>] =
    time::macros::format_description!("[year]-[month]-[day]");

/// The longest period a report or a list may span, in days (a leap year).
pub const MAX_PERIOD_DAYS: i64 = 366;

/// A calendar day, `YYYY-MM-DD`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryDate(Date);

impl EntryDate {
    pub fn parse(raw: &str) -> Result<Self, String> {
        Date::parse(raw.trim(), FORMAT)
            .map(Self)
            .map_err(|_| format!("{raw:?} is not a date like 2026-03-01"))
    }

    pub fn from_date(date: Date) -> Self {
        Self(date)
    }

    pub fn date(self) -> Date {
        self.0
    }

    /// Today in UTC: the day reads default to and ages count up to.
    pub fn today(now: OffsetDateTime) -> Self {
        Self(now.to_offset(UtcOffset::UTC).date())
    }

    /// The latest day that has already begun somewhere on Earth (UTC+14).
    /// Coop does not know a farm's time zone, so a day is "in the future"
    /// only once no time zone has reached it yet: a farmer east of UTC can
    /// record this morning's collection while it is still yesterday in UTC.
    pub fn latest_started(now: OffsetDateTime) -> Self {
        Self((now.to_offset(UtcOffset::UTC) + Duration::hours(14)).date())
    }

    /// `self - days`, saturating at the calendar's start.
    pub fn minus_days(self, days: i64) -> Self {
        Self(
            self.0
                .checked_sub(Duration::days(days))
                .unwrap_or(Date::MIN),
        )
    }

    /// Whole days from `earlier` to `self` (negative when `earlier` is later).
    pub fn days_since(self, earlier: EntryDate) -> i64 {
        (self.0 - earlier.0).whole_days()
    }
}

impl std::fmt::Display for EntryDate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (y, m, d) = (self.0.year(), u8::from(self.0.month()), self.0.day());
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

/// An inclusive period of days, `from` ≤ `to`, at most [`MAX_PERIOD_DAYS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    from: EntryDate,
    to: EntryDate,
}

impl Period {
    /// Checks order and length; the message names the problem.
    pub fn new(from: EntryDate, to: EntryDate) -> Result<Self, String> {
        if from > to {
            return Err(format!(
                "the period is reversed: from {from} is after to {to}"
            ));
        }
        let days = to.days_since(from) + 1;
        if days > MAX_PERIOD_DAYS {
            return Err(format!(
                "the period from {from} to {to} spans {days} days; at most {MAX_PERIOD_DAYS} are allowed"
            ));
        }
        Ok(Self { from, to })
    }

    /// The period from optional ends: `to` defaults to `today`, `from` to
    /// `default_days` days ending at `to`.
    pub fn from_parts(
        from: Option<EntryDate>,
        to: Option<EntryDate>,
        today: EntryDate,
        default_days: i64,
    ) -> Result<Self, String> {
        let to = to.unwrap_or(today);
        let from = from.unwrap_or_else(|| to.minus_days(default_days - 1));
        Self::new(from, to)
    }

    pub fn from(self) -> EntryDate {
        self.from
    }

    pub fn to(self) -> EntryDate {
        self.to
    }

    /// How many days the period holds, both ends included.
    pub fn days(self) -> i64 {
        self.to.days_since(self.from) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn day(raw: &str) -> EntryDate {
        EntryDate::parse(raw).unwrap()
    }

    #[test]
    fn only_iso_days_parse() {
        assert_eq!(day("2026-03-01").to_string(), "2026-03-01");
        for bad in [
            "2026-02-30",
            "2026-3-1",
            "01/03/2026",
            "",
            "2026-03-01T00:00",
        ] {
            assert!(EntryDate::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn periods_are_ordered_and_capped() {
        assert_eq!(
            Period::new(day("2026-01-01"), day("2026-01-07"))
                .unwrap()
                .days(),
            7
        );
        let reversed = Period::new(day("2026-01-07"), day("2026-01-01")).unwrap_err();
        assert!(reversed.contains("reversed"), "{reversed}");
        assert!(Period::new(day("2024-01-01"), day("2024-12-31")).is_ok());
        let long = Period::new(day("2024-01-01"), day("2025-01-01")).unwrap_err();
        assert!(long.contains("367 days"), "{long}");
    }

    #[test]
    fn defaults_end_today_and_span_the_default_length() {
        let p = Period::from_parts(None, None, day("2026-03-31"), 30).unwrap();
        assert_eq!((p.from(), p.to()), (day("2026-03-02"), day("2026-03-31")));
    }

    #[test]
    fn the_latest_started_day_is_ahead_of_utc_by_fourteen_hours() {
        let now = datetime!(2026-03-01 09:59 UTC);
        assert_eq!(EntryDate::latest_started(now), day("2026-03-01"));
        let now = datetime!(2026-03-01 10:00 UTC);
        assert_eq!(EntryDate::latest_started(now), day("2026-03-02"));
        assert_eq!(EntryDate::today(now), day("2026-03-01"));
    }
}
