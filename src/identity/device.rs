//! Device cookies: a browser that signed in as an account before is
//! recognised, and judged by its own failed sign-ins rather than by the
//! account's (OWASP, "Slow Down Online Guessing Attacks with Device
//! Cookies"), so a stranger's guesses cannot lock the owner out.
//!
//! The cookie is `1.<device id>.<issued at>.<tag>`: a random id, the Unix
//! second it was issued, and a MAC over both and the account's email under
//! a key every replica shares. Only a right password gets one; it names no
//! account in clear; it counts only for the account it was issued for, and
//! for [`LIFETIME`]. Each successful sign-in issues a fresh one.
//!
//! What a cookie grants is small on purpose: its own failure budget on one
//! account. It never signs anyone in, so a stolen one gives a guesser a
//! budget like the account's, nothing more.

use time::OffsetDateTime;

use crate::secrets::{self, DeviceCookie, MacKey};

/// How long a device cookie is honoured after it was issued.
pub const LIFETIME: time::Duration = time::Duration::days(180);

const VERSION: &str = "1";

/// A browser whose device cookie checked for the account typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    id: String,
}

impl Device {
    /// The id its failures are counted under.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// A new device cookie value for a browser that just signed in as `email`
/// (normalised, as stored).
pub fn issue(key: &MacKey, email: &str, now: OffsetDateTime) -> DeviceCookie {
    let id = secrets::random_token(16);
    let issued = now.unix_timestamp().to_string();
    let tag = key.tag(&[VERSION, email, &id, &issued]);
    DeviceCookie::new(format!("{VERSION}.{id}.{issued}.{tag}"))
}

/// The device `cookie` names, if it was issued for `email` by a server
/// sharing `key`, within [`LIFETIME`] of `now`. Anything else (another
/// account's, expired, altered, garbage) is no device.
pub fn recognise(
    key: &MacKey,
    cookie: &DeviceCookie,
    email: &str,
    now: OffsetDateTime,
) -> Option<Device> {
    let mut parts = cookie.expose().split('.');
    let (Some(version), Some(id), Some(issued), Some(tag), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    if version != VERSION || !key.verify(&[version, email, id, issued], tag) {
        return None;
    }
    let issued = OffsetDateTime::from_unix_timestamp(issued.parse().ok()?).ok()?;
    // A cookie from the future is as suspect as an old one.
    let fresh = issued <= now + time::Duration::minutes(5) && now - issued <= LIFETIME;
    fresh.then(|| Device { id: id.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> MacKey {
        MacKey::derive(b"master", "device cookie")
    }

    fn now() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
    }

    #[test]
    fn a_device_cookie_counts_for_its_account_within_its_lifetime() {
        let cookie = issue(&key(), "ann@farm.example", now());
        assert!(!cookie.expose().contains("ann"), "{}", cookie.expose());
        let device = recognise(&key(), &cookie, "ann@farm.example", now()).unwrap();
        assert_eq!(
            recognise(&key(), &cookie, "ann@farm.example", now() + LIFETIME),
            Some(device.clone())
        );
        assert_ne!(
            recognise(
                &key(),
                &issue(&key(), "ann@farm.example", now()),
                "ann@farm.example",
                now()
            ),
            Some(device),
            "each sign-in makes a new device id"
        );
        let later = now() + LIFETIME + time::Duration::SECOND;
        assert_eq!(recognise(&key(), &cookie, "ann@farm.example", later), None);
        // A server whose clock runs up to five minutes behind still honours
        // it; one more second behind and the cookie is from the future.
        let behind = now() - time::Duration::minutes(5);
        assert!(recognise(&key(), &cookie, "ann@farm.example", behind).is_some());
        let earlier = behind - time::Duration::SECOND;
        assert_eq!(
            recognise(&key(), &cookie, "ann@farm.example", earlier),
            None
        );
    }

    #[test]
    fn a_cookie_of_another_version_is_no_device_even_when_its_tag_checks() {
        let id = "device-id";
        let issued = now().unix_timestamp().to_string();
        let tagged = |version: &str| {
            let tag = key().tag(&[version, "ann@farm.example", id, &issued]);
            DeviceCookie::new(format!("{version}.{id}.{issued}.{tag}"))
        };
        assert!(recognise(&key(), &tagged(VERSION), "ann@farm.example", now()).is_some());
        assert_eq!(
            recognise(&key(), &tagged("2"), "ann@farm.example", now()),
            None
        );
    }

    #[test]
    fn another_accounts_or_an_altered_or_foreign_cookie_is_no_device() {
        let cookie = issue(&key(), "ann@farm.example", now());
        assert_eq!(recognise(&key(), &cookie, "bob@farm.example", now()), None);
        let other_key = MacKey::derive(b"another master", "device cookie");
        assert_eq!(
            recognise(&other_key, &cookie, "ann@farm.example", now()),
            None
        );
        let parts: Vec<&str> = cookie.expose().split('.').collect();
        let altered = [
            format!("2.{}.{}.{}", parts[1], parts[2], parts[3]),
            format!("1.{}x.{}.{}", parts[1], parts[2], parts[3]),
            format!(
                "1.{}.{}.{}",
                parts[1],
                now().unix_timestamp() + 60,
                parts[3]
            ),
            format!("{}.extra", cookie.expose()),
            parts[..3].join("."),
            String::new(),
            "garbage".to_owned(),
        ];
        for cookie in altered {
            assert_eq!(
                recognise(
                    &key(),
                    &DeviceCookie::from(cookie.as_str()),
                    "ann@farm.example",
                    now()
                ),
                None,
                "{cookie}"
            );
        }
    }
}
