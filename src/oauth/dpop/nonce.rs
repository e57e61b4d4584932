//! Server nonces for DPoP proofs (RFC 9449 §8 and §9), stateless so that
//! every replica accepts what any replica issued.
//!
//! A nonce names a time window of [`PERIOD`] and carries an HMAC-SHA256 of
//! that window under a key every replica shares (a random secret kept in
//! the store, [`crate::storage::server_secrets`]): nothing is stored per
//! nonce. One is good in its own window and the next, so a client holding
//! one is never more than one refresh behind; Coop hands out the current
//! nonce on every response to a DPoP request while nonces are required.
//! A nonce bounds how far ahead a stolen signing capability could have
//! made proofs; replay of a proof is stopped by its `jti` (see
//! [`super`]), not by the nonce.

use aws_lc_rs::hmac;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use subtle::ConstantTimeEq;
use time::OffsetDateTime;

/// The length of a nonce's window; a nonce is accepted in its window and
/// the next, so for between one and two periods.
pub const PERIOD: i64 = 300;

/// Bytes of the HMAC kept in a nonce.
const TAG_LEN: usize = 16;

/// What the nonce MAC is computed over, besides the window.
const CONTEXT: &[u8] = b"coop dpop nonce v1\0";

/// The shared nonce key. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct NonceKey {
    key: hmac::Key,
}

impl std::fmt::Debug for NonceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NonceKey(..)")
    }
}

impl NonceKey {
    /// A key from the shared secret's bytes.
    pub fn new(secret: &[u8]) -> Self {
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
        }
    }

    fn tag(&self, window: i64) -> hmac::Tag {
        let mut message = CONTEXT.to_vec();
        message.extend_from_slice(&window.to_be_bytes());
        hmac::sign(&self.key, &message)
    }

    /// The nonce for the window `now` falls in.
    pub fn issue(&self, now: OffsetDateTime) -> String {
        let window = now.unix_timestamp().div_euclid(PERIOD);
        let mut bytes = window.to_be_bytes().to_vec();
        bytes.extend_from_slice(&self.tag(window).as_ref()[..TAG_LEN]);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Whether `nonce` was issued by a holder of this key for the current
    /// window or the one before.
    pub fn accepts(&self, nonce: &str, now: OffsetDateTime) -> bool {
        let Ok(bytes) = URL_SAFE_NO_PAD.decode(nonce) else {
            return false;
        };
        let Some((window, tag)) = bytes.split_first_chunk::<8>() else {
            return false;
        };
        let window = i64::from_be_bytes(*window);
        let current = now.unix_timestamp().div_euclid(PERIOD);
        if window != current && window != current - 1 {
            return false;
        }
        let expected = self.tag(window);
        tag.len() == TAG_LEN && bool::from(tag.ct_eq(&expected.as_ref()[..TAG_LEN]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-03-10 12:00 UTC);

    #[test]
    fn a_nonce_is_good_for_its_window_and_the_next_only() {
        let key = NonceKey::new(b"shared secret");
        let nonce = key.issue(NOW);
        assert!(key.accepts(&nonce, NOW));
        assert!(key.accepts(&nonce, NOW + time::Duration::seconds(PERIOD)));
        assert!(!key.accepts(&nonce, NOW + time::Duration::seconds(2 * PERIOD)));
        assert!(!key.accepts(&nonce, NOW - time::Duration::seconds(PERIOD)));
    }

    #[test]
    fn every_replica_with_the_key_accepts_it_and_no_one_else() {
        let nonce = NonceKey::new(b"shared secret").issue(NOW);
        assert!(NonceKey::new(b"shared secret").accepts(&nonce, NOW));
        assert!(!NonceKey::new(b"another secret").accepts(&nonce, NOW));
    }

    #[test]
    fn altered_or_malformed_nonces_are_refused() {
        let key = NonceKey::new(b"shared secret");
        let nonce = key.issue(NOW);
        let mut bytes = URL_SAFE_NO_PAD.decode(&nonce).unwrap();
        // Another window with the same tag.
        bytes[7] ^= 1;
        assert!(!key.accepts(&URL_SAFE_NO_PAD.encode(&bytes), NOW));
        for bad in ["", "!!!", "AAAA", &nonce[..nonce.len() - 2]] {
            assert!(!key.accepts(bad, NOW), "{bad}");
        }
    }
}
