//! Random secrets, their storage hashes, and constant-time comparison.
//!
//! Codes, refresh tokens and client secrets leave Coop once and are stored
//! only as SHA-256 hashes: they are 256-bit random values, so a fast hash is
//! enough (no password stretching needed), and a database dump yields nothing
//! usable. Each kind of secret has its own type, whose `Debug` hides it
//! (`redacted.rs`).

use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use aws_lc_rs::{digest, hmac};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use subtle::ConstantTimeEq;

mod redacted;
pub use redacted::{
    AccessToken, AuthorizationCode, ClientAssertion, ClientSecret, CodeVerifier, CsrfToken,
    DeviceCookie, MasterSecret, Password, PresentedToken, RefreshToken, ResetToken,
};

/// `bytes` random bytes, base64url without padding.
pub fn random_token(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    fill_random(&mut buf);
    URL_SAFE_NO_PAD.encode(buf)
}

/// The stored form of a token, code or client secret: SHA-256, hex.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(digest::digest(&digest::SHA256, secret.as_bytes()).as_ref())
}

/// The refresh token that succeeds `presented`: HMAC-SHA256 keyed by the
/// presented token over a per-rotation random `nonce`, base64url (the same
/// length as [`random_token(32)`](random_token)). Only whoever holds the
/// presented token can compute it, and the nonce (stored, unlike any token)
/// is worthless alone; a fresh nonce per rotation means a stolen old token
/// does not yield the tokens after its successor.
pub fn successor_token(presented: &RefreshToken, nonce: &str) -> RefreshToken {
    let key = hmac::Key::new(hmac::HMAC_SHA256, presented.expose().as_bytes());
    let mut message = b"coop refresh successor v1\0".to_vec();
    message.extend_from_slice(nonce.as_bytes());
    RefreshToken::new(URL_SAFE_NO_PAD.encode(hmac::sign(&key, &message).as_ref()))
}

/// A key for the message authentication codes of values Coop hands to a
/// browser and takes back unchanged (its signed cookies): HMAC-SHA256, one
/// key per purpose, derived from a master secret every replica shares, so
/// a tag made by one replica checks on the other and a tag made for one
/// purpose never checks for another.
#[derive(Clone)]
pub struct MacKey(hmac::Key);

impl std::fmt::Debug for MacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MacKey(..)")
    }
}

impl MacKey {
    /// The key for `purpose`: HMAC-SHA256 of the purpose under `master`.
    pub fn derive(master: &[u8], purpose: &str) -> Self {
        let master = hmac::Key::new(hmac::HMAC_SHA256, master);
        let mut label = b"coop mac key v1\0".to_vec();
        label.extend_from_slice(purpose.as_bytes());
        let derived = hmac::sign(&master, &label);
        Self(hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref()))
    }

    /// The tag of `parts`, base64url. Each part is length-prefixed, so no
    /// two different lists of parts have the same message.
    pub fn tag(&self, parts: &[&str]) -> String {
        URL_SAFE_NO_PAD.encode(hmac::sign(&self.0, &Self::message(parts)).as_ref())
    }

    /// Whether `tag` is the tag of `parts`, compared in constant time.
    pub fn verify(&self, parts: &[&str], tag: &str) -> bool {
        let Ok(tag) = URL_SAFE_NO_PAD.decode(tag) else {
            return false;
        };
        hmac::verify(&self.0, &Self::message(parts), &tag).is_ok()
    }

    fn message(parts: &[&str]) -> Vec<u8> {
        let mut message = Vec::new();
        for part in parts {
            message.extend_from_slice(&(part.len() as u64).to_be_bytes());
            message.extend_from_slice(part.as_bytes());
        }
        message
    }
}

/// Compares two secrets (or their hashes) without leaking where they differ.
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// The characters of a generated password: no look-alikes (no `i`, `l`,
/// `o`, `I`, `O`, `0`, `1`).
const PASSWORD_ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
const PASSWORD_LEN: usize = 20;

/// A human-friendly generated password: 20 characters drawn uniformly from
/// [`PASSWORD_ALPHABET`] (55 symbols, about 115 bits).
pub fn generate_password() -> Password {
    let mut password = String::with_capacity(PASSWORD_LEN);
    while password.len() < PASSWORD_LEN {
        let mut buf = [0u8; 32];
        fill_random(&mut buf);
        push_uniform(&mut password, &buf, PASSWORD_LEN);
    }
    Password::new(password)
}

/// Appends a symbol for each usable byte until `password` is `len` long.
/// Rejection sampling: 256 is not a multiple of 55, so `byte % 55` would
/// make the first 36 symbols a quarter more likely than the rest; bytes at
/// or above the largest multiple of 55 (220) are skipped instead.
fn push_uniform(password: &mut String, bytes: &[u8], len: usize) {
    let symbols = PASSWORD_ALPHABET.len();
    let limit = 256 - 256 % symbols;
    for &byte in bytes {
        if password.len() == len {
            break;
        }
        let byte = usize::from(byte);
        if byte < limit {
            password.push(char::from(PASSWORD_ALPHABET[byte % symbols]));
        }
    }
}

/// Fills `buf` from the OS generator. SystemRandom fails only if the OS has
/// none, in which case a zeroed buffer would be worse than stopping, so it
/// falls back to rand's OS-seeded generator.
/// Fills `buf` from the system's secure random source.
pub fn fill_random(buf: &mut [u8]) {
    if SystemRandom::new().fill(buf).is_err() {
        use rand::RngCore;
        rand::rng().fill_bytes(buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_hashes_are_stable() {
        let a = random_token(32);
        assert_eq!(a.len(), 43);
        assert_ne!(a, random_token(32));
        assert_eq!(hash_secret("x"), hash_secret("x"));
        assert!(constant_time_eq(&hash_secret("x"), &hash_secret("x")));
        assert!(!constant_time_eq(&hash_secret("x"), &hash_secret("y")));
        assert_eq!(generate_password().expose().len(), 20);
    }

    #[test]
    fn a_mac_checks_only_its_parts_under_its_purpose() {
        let master = b"a master secret of the store";
        let key = MacKey::derive(master, "device");
        let tag = key.tag(&["ann@farm.example", "d1"]);
        assert!(key.verify(&["ann@farm.example", "d1"], &tag));
        assert!(MacKey::derive(master, "device").verify(&["ann@farm.example", "d1"], &tag));
        assert!(!key.verify(&["bob@farm.example", "d1"], &tag));
        // Length prefixes: moving a boundary changes the message.
        assert!(!key.verify(&["ann@farm.exampled", "1"], &tag));
        assert!(!MacKey::derive(master, "csrf").verify(&["ann@farm.example", "d1"], &tag));
        assert!(!MacKey::derive(b"another", "device").verify(&["ann@farm.example", "d1"], &tag));
        assert!(!key.verify(&["ann@farm.example", "d1"], "not base64!"));
        assert!(!key.verify(&["ann@farm.example", "d1"], ""));
    }

    #[test]
    fn generated_passwords_draw_every_symbol_equally_often() {
        // Every byte value once: each symbol must come out exactly as often
        // as every other (4 times); plain `byte % 55` gives 36 symbols 5.
        let every_byte: Vec<u8> = (0..=255).collect();
        let mut drawn = String::new();
        push_uniform(&mut drawn, &every_byte, usize::MAX);
        assert_eq!(drawn.len(), 220);
        for symbol in PASSWORD_ALPHABET {
            let count = drawn.bytes().filter(|b| b == symbol).count();
            assert_eq!(count, 4, "{}", char::from(*symbol));
        }
        // Bytes past the last whole multiple are skipped, not folded.
        let mut drawn = String::new();
        push_uniform(&mut drawn, &[255, 220, 0, 54], 2);
        assert_eq!(drawn, "a9");
        let password = generate_password();
        assert_eq!(password.expose().len(), PASSWORD_LEN);
        assert!(
            password
                .expose()
                .bytes()
                .all(|b| PASSWORD_ALPHABET.contains(&b))
        );
    }
}
