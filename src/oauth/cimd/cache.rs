//! Documents and key sets already fetched, kept in memory until their
//! freshness runs out; and, briefly, the fetches that failed.
//!
//! How long a copy stays fresh comes from the response's `Cache-Control:
//! max-age` (or, failing that, `Expires` minus `Date`), clamped to between
//! one minute and one day. The floor applies even to `no-store`, `no-cache`
//! and responses without cache headers: the point of the cache here is as
//! much to stop Coop from being used to hammer a host (one fetch per URL per
//! minute at most) as to save time, and a one-minute copy of a public client
//! description is harmless. The ceiling bounds how long a changed or
//! withdrawn document keeps working.
//!
//! A failed fetch is remembered too, for [`FAILURE_FRESHNESS`], so a URL
//! that fails (a host that times out, a document that is not valid) is not
//! fetched again on every request that names it.
//!
//! Each cache is per process, keyed by the exact URL, and holds at most
//! `capacity` entries: when full, stale entries go first, then the one that
//! would expire soonest. Every decision takes `now` as an argument.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use time::format_description::FormatItem;
use time::macros::format_description;
use time::{Duration, OffsetDateTime, PrimitiveDateTime};

/// The shortest time a fetched document is kept.
pub const MIN_FRESHNESS: Duration = Duration::seconds(60);
/// The longest time a fetched document is kept.
pub const MAX_FRESHNESS: Duration = Duration::hours(24);

/// How long a failed fetch is remembered: long enough that a URL named by
/// every request of a flood is fetched twice a minute at most, short enough
/// that a client who fixes its document is not kept waiting.
pub const FAILURE_FRESHNESS: Duration = Duration::seconds(30);

/// The HTTP date format (RFC 9110 IMF-fixdate), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
const HTTP_DATE: &[FormatItem<'static>] = format_description!(
    "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
);

/// How long a response with these headers stays fresh, within the bounds.
///
/// `cache_control`, `expires` and `date` are the header values (several
/// `Cache-Control` headers joined with commas), absent when not sent.
pub fn freshness(
    cache_control: Option<&str>,
    expires: Option<&str>,
    date: Option<&str>,
    now: OffsetDateTime,
) -> Duration {
    let lifetime = match cache_control.map(CacheControl::parse) {
        Some(cc) if cc.no_store || cc.no_cache => Duration::ZERO,
        Some(CacheControl {
            max_age: Some(max_age),
            ..
        }) => max_age,
        _ => expires.map_or(Duration::ZERO, |expires| {
            // An Expires that does not parse means "already expired" (RFC 9111 §5.3).
            let Some(expires) = parse_http_date(expires) else {
                return Duration::ZERO;
            };
            let origin_now = date.and_then(parse_http_date).unwrap_or(now);
            expires - origin_now
        }),
    };
    lifetime.clamp(MIN_FRESHNESS, MAX_FRESHNESS)
}

#[derive(Debug, Default)]
struct CacheControl {
    no_store: bool,
    no_cache: bool,
    max_age: Option<Duration>,
}

impl CacheControl {
    fn parse(raw: &str) -> Self {
        let mut parsed = Self::default();
        for directive in raw.split(',') {
            let (name, value) = match directive.split_once('=') {
                Some((name, value)) => (name.trim(), Some(value.trim().trim_matches('"'))),
                None => (directive.trim(), None),
            };
            if name.eq_ignore_ascii_case("no-store") {
                parsed.no_store = true;
            } else if name.eq_ignore_ascii_case("no-cache") {
                parsed.no_cache = true;
            } else if name.eq_ignore_ascii_case("max-age") {
                // Conflicting max-age directives: believe the shortest.
                if let Some(seconds) = value.and_then(|v| v.parse::<u32>().ok()) {
                    let age = Duration::seconds(i64::from(seconds));
                    parsed.max_age = Some(parsed.max_age.map_or(age, |m| m.min(age)));
                }
            }
        }
        parsed
    }
}

fn parse_http_date(raw: &str) -> Option<OffsetDateTime> {
    PrimitiveDateTime::parse(raw.trim(), HTTP_DATE)
        .ok()
        .map(PrimitiveDateTime::assume_utc)
}

/// What the cache holds for one URL.
#[derive(Clone, Debug)]
pub struct Entry<V> {
    pub value: V,
    /// When it was fetched (for "refetch at most once per interval").
    pub fetched_at: OffsetDateTime,
    /// Until when it may be used.
    pub fresh_until: OffsetDateTime,
}

/// Values by URL, each until its `fresh_until`: fetched documents and key
/// sets, and (with a short freshness of their own) failures.
#[derive(Debug)]
pub struct Cache<V> {
    entries: Mutex<HashMap<String, Entry<V>>>,
    capacity: usize,
}

impl<V: Clone> Cache<V> {
    pub fn new(capacity: usize) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<String, Entry<V>>> {
        // The map stays consistent even if a holder panicked: every change
        // is a single insert, remove or retain.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The entry for `url` if it is still fresh at `now`.
    pub fn entry(&self, url: &str, now: OffsetDateTime) -> Option<Entry<V>> {
        let mut entries = self.entries();
        match entries.get(url) {
            Some(entry) if now < entry.fresh_until => Some(entry.clone()),
            Some(_) => {
                entries.remove(url);
                None
            }
            None => None,
        }
    }

    /// The value for `url` if it is still fresh at `now`.
    pub fn get(&self, url: &str, now: OffsetDateTime) -> Option<V> {
        self.entry(url, now).map(|entry| entry.value)
    }

    /// Keeps `value` for `url`, fetched at `now`, until `fresh_until`.
    pub fn insert(&self, url: &str, value: V, now: OffsetDateTime, fresh_until: OffsetDateTime) {
        let mut entries = self.entries();
        if !entries.contains_key(url) && entries.len() >= self.capacity {
            entries.retain(|_, kept| now < kept.fresh_until);
            if entries.len() >= self.capacity {
                let soonest = entries
                    .iter()
                    .min_by_key(|(_, kept)| kept.fresh_until)
                    .map(|(url, _)| url.clone());
                if let Some(url) = soonest {
                    entries.remove(&url);
                }
            }
        }
        entries.insert(
            url.to_owned(),
            Entry {
                value,
                fetched_at: now,
                fresh_until,
            },
        );
    }

    pub fn len(&self) -> usize {
        self.entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    const NOW: OffsetDateTime = datetime!(2026-12-01 12:00:00 UTC);

    fn fresh(cc: Option<&str>, expires: Option<&str>, date: Option<&str>) -> i64 {
        freshness(cc, expires, date, NOW).whole_seconds()
    }

    #[test]
    fn max_age_sets_the_freshness_within_bounds() {
        assert_eq!(fresh(Some("max-age=600"), None, None), 600);
        assert_eq!(fresh(Some("public, MAX-AGE=\"900\""), None, None), 900);
        assert_eq!(fresh(Some("max-age=60"), None, None), 60);
        assert_eq!(fresh(Some("max-age=86400"), None, None), 86_400);
        assert_eq!(
            fresh(Some("max-age=5"), None, None),
            60,
            "raised to the floor"
        );
        assert_eq!(fresh(Some("max-age=0"), None, None), 60);
        assert_eq!(
            fresh(Some("max-age=31536000"), None, None),
            86_400,
            "cut to a day"
        );
        assert_eq!(
            fresh(Some("max-age=99999999999"), None, None),
            60,
            "unparsable"
        );
        assert_eq!(fresh(Some("max-age=3600, max-age=120"), None, None), 120);
    }

    #[test]
    fn no_store_and_no_cache_keep_the_minimum() {
        assert_eq!(fresh(Some("no-store"), None, None), 60);
        assert_eq!(fresh(Some("max-age=3600, no-store"), None, None), 60);
        assert_eq!(fresh(Some("No-Cache, max-age=3600"), None, None), 60);
    }

    #[test]
    fn without_cache_headers_the_minimum_applies() {
        assert_eq!(fresh(None, None, None), 60);
        assert_eq!(fresh(Some("public"), None, None), 60);
    }

    #[test]
    fn expires_is_measured_from_the_date_header_or_now() {
        let date = "Tue, 01 Dec 2026 12:00:00 GMT";
        assert_eq!(
            fresh(None, Some("Tue, 01 Dec 2026 13:00:00 GMT"), Some(date)),
            3600
        );
        // The origin's clock is 30 minutes behind ours: still one hour.
        assert_eq!(
            fresh(
                None,
                Some("Tue, 01 Dec 2026 12:30:00 GMT"),
                Some("Tue, 01 Dec 2026 11:30:00 GMT")
            ),
            3600
        );
        assert_eq!(
            fresh(None, Some("Tue, 01 Dec 2026 12:10:00 GMT"), None),
            600
        );
        assert_eq!(fresh(None, Some("Mon, 01 Dec 2025 12:00:00 GMT"), None), 60);
        assert_eq!(
            fresh(None, Some("Sat, 01 Jan 2028 00:00:00 GMT"), None),
            86_400
        );
        assert_eq!(fresh(None, Some("0"), None), 60, "invalid means expired");
    }

    #[test]
    fn max_age_wins_over_expires() {
        assert_eq!(
            fresh(
                Some("max-age=120"),
                Some("Tue, 01 Dec 2026 18:00:00 GMT"),
                None
            ),
            120
        );
    }

    /// A cache of names, like the fetcher's caches of documents and key sets.
    fn put(cache: &Cache<String>, url: &str, fresh_for: i64, now: OffsetDateTime) {
        cache.insert(
            url,
            format!("value of {url}"),
            now,
            now + Duration::seconds(fresh_for),
        );
    }

    #[test]
    fn a_document_is_served_until_its_freshness_ends() {
        let cache = Cache::new(8);
        assert!(cache.is_empty());
        put(&cache, "https://a.example/c", 300, NOW);
        assert!(!cache.is_empty());
        assert_eq!(
            cache.get("https://a.example/c", NOW).as_deref(),
            Some("value of https://a.example/c")
        );
        let entry = cache.entry("https://a.example/c", NOW).unwrap();
        assert_eq!(entry.fetched_at, NOW);
        assert_eq!(entry.fresh_until, NOW + Duration::seconds(300));
        assert!(
            cache
                .get("https://a.example/c", NOW + Duration::seconds(299))
                .is_some()
        );
        assert!(
            cache
                .get("https://a.example/c", NOW + Duration::seconds(300))
                .is_none()
        );
        assert!(cache.is_empty(), "a stale entry is dropped when seen");
        assert!(cache.get("https://b.example/c", NOW).is_none());
    }

    #[test]
    fn the_key_is_the_exact_url() {
        let cache = Cache::new(8);
        put(&cache, "https://a.example/c", 300, NOW);
        assert!(cache.get("https://a.example/c/", NOW).is_none());
        assert!(cache.get("https://A.example/c", NOW).is_none());
    }

    #[test]
    fn a_full_cache_drops_stale_entries_first_then_the_soonest_to_expire() {
        let cache = Cache::new(3);
        put(&cache, "https://a.example/1", 60, NOW);
        put(&cache, "https://a.example/2", 600, NOW);
        put(&cache, "https://a.example/3", 300, NOW);
        let later = NOW + Duration::seconds(120);
        // /1 is stale by now: it makes room.
        put(&cache, "https://a.example/4", 900, later);
        assert_eq!(cache.len(), 3);
        assert!(cache.get("https://a.example/2", later).is_some());
        assert!(cache.get("https://a.example/3", later).is_some());
        assert!(cache.get("https://a.example/4", later).is_some());
        // Nothing stale: /3 expires soonest and goes.
        put(&cache, "https://a.example/5", 900, later);
        assert_eq!(cache.len(), 3);
        assert!(cache.get("https://a.example/3", later).is_none());
        assert!(cache.get("https://a.example/2", later).is_some());
        assert!(cache.get("https://a.example/5", later).is_some());
    }

    #[test]
    fn refreshing_an_entry_in_a_full_cache_evicts_nothing() {
        let cache = Cache::new(2);
        put(&cache, "https://a.example/1", 60, NOW);
        put(&cache, "https://a.example/2", 600, NOW);
        put(&cache, "https://a.example/1", 900, NOW);
        assert_eq!(cache.len(), 2);
        assert!(cache.get("https://a.example/2", NOW).is_some());
        // Not even the entry that would expire soonest (now /2).
        put(&cache, "https://a.example/1", 1200, NOW);
        assert_eq!(cache.len(), 2);
        assert!(cache.get("https://a.example/2", NOW).is_some());
    }

    #[test]
    fn an_entry_is_stale_from_its_last_second_when_room_is_made() {
        let cache = Cache::new(3);
        put(&cache, "https://a.example/1", 60, NOW);
        put(&cache, "https://a.example/2", 120, NOW);
        put(&cache, "https://a.example/3", 900, NOW);
        // /2 expires exactly now and /1 before: both make room.
        let later = NOW + Duration::seconds(120);
        put(&cache, "https://a.example/4", 900, later);
        assert_eq!(cache.len(), 2);
        assert!(cache.get("https://a.example/3", later).is_some());
        assert!(cache.get("https://a.example/4", later).is_some());
    }
}
