//! The time claims of a JWT (`exp`, `iat`, `nbf`: RFC 7519 NumericDate)
//! against Coop's clock, with no arithmetic that can overflow.
//!
//! A claim holds whatever its signer wrote, and anyone can sign one: a
//! client registers its own keys for `private_key_jwt`, and a DPoP proof
//! carries its own key. So a claim may be `0`, negative, `i64::MAX` or a
//! second before the year 10000, where `time` stops: adding a duration to
//! it would panic or wrap. Here a claim is never moved; the duration moves
//! `now`, and the comparison is made in `i128`, where the sum of two `i64`
//! cannot overflow, so it is exact for every claim. The one conversion of
//! a claim to an instant ([`instant`]) is checked.
//!
//! Coop reads a NumericDate as a JSON integer that fits an `i64`
//! ([`numeric_date`]): a fraction, an exponent (`1.7e9`), a string, or a
//! number beyond `i64` is not one. Every JWT Coop checks (client
//! assertions, DPoP proofs, its own access tokens) goes through here, and
//! so will ID tokens.

use std::cmp::Ordering;

use serde_json::Value;
use time::{Duration, OffsetDateTime};

/// A claim's value as a NumericDate in whole Unix seconds, if it is one.
pub fn numeric_date(value: &Value) -> Option<i64> {
    value.as_i64()
}

/// How the claim `seconds` stands against `now` moved by `offset` (either
/// way): `Less`, it is earlier; `Greater`, later. Exact for any claim and
/// any offset. `now` counts in whole seconds, which for a whole-second
/// claim changes neither `claim > now + offset` nor `claim <= now + offset`.
pub fn compare(seconds: i64, now: OffsetDateTime, offset: Duration) -> Ordering {
    let bound = i128::from(now.unix_timestamp()) + i128::from(offset.whole_seconds());
    i128::from(seconds).cmp(&bound)
}

/// The instant the claim `seconds` names, moved by `offset`; `None` when
/// that is outside what `time` holds (years -9999 to 9999).
pub fn instant(seconds: i64, offset: Duration) -> Option<OffsetDateTime> {
    OffsetDateTime::from_unix_timestamp(seconds)
        .ok()?
        .checked_add(offset)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use time::macros::datetime;

    use super::*;

    const NOW: OffsetDateTime = datetime!(2026-12-01 12:00:00.5 UTC);

    #[test]
    fn only_a_json_integer_that_fits_an_i64_is_a_numeric_date() {
        for (value, read) in [
            (json!(0), Some(0)),
            (json!(-1), Some(-1)),
            (json!(1_764_590_400), Some(1_764_590_400)),
            (json!(i64::MAX), Some(i64::MAX)),
            (json!(i64::MIN), Some(i64::MIN)),
            (json!(u64::MAX), None),
            (json!(1_764_590_400.0), None),
            (json!(1.5), None),
            (json!(1e300), None),
            (json!("1764590400"), None),
            (json!(null), None),
            (json!([1]), None),
        ] {
            assert_eq!(numeric_date(&value), read, "{value}");
        }
        // An exponent is a float to the JSON reader, whatever its value.
        let exponent: Value = serde_json::from_str("1.7e9").unwrap();
        assert_eq!(numeric_date(&exponent), None);
    }

    #[test]
    fn a_claim_is_compared_exactly_with_now_moved_either_way() {
        let now = NOW.unix_timestamp();
        let minute = Duration::minutes(1);
        assert_eq!(compare(now + 60, NOW, minute), Ordering::Equal);
        assert_eq!(compare(now + 61, NOW, minute), Ordering::Greater);
        assert_eq!(compare(now + 59, NOW, minute), Ordering::Less);
        assert_eq!(compare(now - 60, NOW, -minute), Ordering::Equal);
        assert_eq!(compare(now - 61, NOW, -minute), Ordering::Less);
        assert_eq!(compare(now, NOW, Duration::ZERO), Ordering::Equal);
        // The ends of i64, and offsets that would take `now` past them.
        assert_eq!(compare(i64::MAX, NOW, minute), Ordering::Greater);
        assert_eq!(compare(i64::MIN, NOW, -minute), Ordering::Less);
        assert_eq!(compare(i64::MAX, NOW, Duration::MAX), Ordering::Less);
        assert_eq!(compare(i64::MIN, NOW, Duration::MIN), Ordering::Less);
        let before_1970 = datetime!(1900-01-01 00:00 UTC);
        assert_eq!(
            compare(i64::MIN, before_1970, Duration::MIN),
            Ordering::Greater
        );
        assert_eq!(compare(0, NOW, Duration::ZERO), Ordering::Less);
    }

    #[test]
    fn a_claim_becomes_an_instant_only_within_times_range() {
        let end = datetime!(9999-12-31 23:59:59 UTC).unix_timestamp();
        assert_eq!(
            instant(end, Duration::ZERO),
            Some(datetime!(9999-12-31 23:59:59 UTC))
        );
        assert_eq!(instant(end, Duration::seconds(1)), None);
        assert_eq!(instant(end + 1, Duration::ZERO), None);
        assert_eq!(instant(i64::MAX, Duration::ZERO), None);
        assert_eq!(instant(i64::MIN, Duration::ZERO), None);
        let start = datetime!(-9999-01-01 00:00:00 UTC).unix_timestamp();
        assert_eq!(instant(start, -Duration::seconds(1)), None);
        assert_eq!(
            instant(NOW.unix_timestamp(), Duration::minutes(1)),
            Some(datetime!(2026-12-01 12:01:00 UTC))
        );
    }
}
