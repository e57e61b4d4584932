//! Server nonces for DPoP proofs (RFC 9449 §8 and §9), stateless so that
//! every replica accepts what any replica issued.
//!
//! A nonce names a time window of [`PERIOD`] and carries an HMAC of that
//! window under a key every replica derives alike (from the master secret
//! kept in the store, `server_secrets`, in `crate::startup`): nothing is
//! stored per nonce. One is good in its own window and the next, so a
//! client holding one is never more than one refresh behind; Coop hands out
//! the current nonce on every response to a DPoP request while nonces are
//! required. A nonce bounds how far ahead a stolen signing capability could
//! have made proofs; replay of a proof is stopped by its `jti` (see
//! [`super`]), not by the nonce.

use time::OffsetDateTime;

use crate::secrets::MacKey;

/// The length of a nonce's window; a nonce is accepted in its window and
/// the next, so for between one and two periods.
pub const PERIOD: i64 = 300;

/// What the nonce MAC is computed over, besides the window.
const CONTEXT: &str = "dpop nonce v1";

/// The shared nonce key. Its `Debug` shows nothing of it.
#[derive(Clone, Debug)]
pub struct NonceKey {
    key: MacKey,
}

impl NonceKey {
    pub fn new(key: MacKey) -> Self {
        Self { key }
    }

    /// The nonce for the window `now` falls in: `<window>.<tag>`.
    pub fn issue(&self, now: OffsetDateTime) -> String {
        let window = now.unix_timestamp().div_euclid(PERIOD).to_string();
        let tag = self.key.tag(&[CONTEXT, &window]);
        format!("{window}.{tag}")
    }

    /// Whether `nonce` was issued by a holder of this key for the current
    /// window or the one before.
    pub fn accepts(&self, nonce: &str, now: OffsetDateTime) -> bool {
        let Some((window, tag)) = nonce.split_once('.') else {
            return false;
        };
        let Ok(issued) = window.parse::<i64>() else {
            return false;
        };
        let current = now.unix_timestamp().div_euclid(PERIOD);
        // The window as Coop writes it, so only one spelling has a tag.
        if issued.to_string() != window || (issued != current && issued != current - 1) {
            return false;
        }
        self.key.verify(&[CONTEXT, window], tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-03-10 12:00 UTC);

    fn key(secret: &[u8]) -> NonceKey {
        NonceKey::new(MacKey::derive(secret, "dpop nonce"))
    }

    #[test]
    fn a_nonce_is_good_for_its_window_and_the_next_only() {
        let key = key(b"shared secret");
        let nonce = key.issue(NOW);
        assert!(key.accepts(&nonce, NOW));
        assert!(key.accepts(&nonce, NOW + time::Duration::seconds(PERIOD)));
        assert!(!key.accepts(&nonce, NOW + time::Duration::seconds(2 * PERIOD)));
        assert!(!key.accepts(&nonce, NOW - time::Duration::seconds(PERIOD)));
    }

    #[test]
    fn every_replica_with_the_key_accepts_it_and_no_one_else() {
        let nonce = key(b"shared secret").issue(NOW);
        assert!(key(b"shared secret").accepts(&nonce, NOW));
        assert!(!key(b"another secret").accepts(&nonce, NOW));
    }

    #[test]
    fn altered_or_malformed_nonces_are_refused() {
        let key = key(b"shared secret");
        let nonce = key.issue(NOW);
        let (window, tag) = nonce.split_once('.').unwrap();
        // The next window with this window's tag; the window respelt.
        let next: i64 = window.parse::<i64>().unwrap() + 1;
        assert!(!key.accepts(
            &format!("{next}.{tag}"),
            NOW + time::Duration::seconds(PERIOD)
        ));
        assert!(!key.accepts(&format!("+{window}.{tag}"), NOW));
        assert!(!key.accepts(&format!("0{window}.{tag}"), NOW));
        for bad in ["", "!!!", "AAAA", "1.2.3", &nonce[..nonce.len() - 2]] {
            assert!(!key.accepts(bad, NOW), "{bad}");
        }
    }
}
