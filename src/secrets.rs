//! Random secrets, their storage hashes, and constant-time comparison.
//!
//! Codes, refresh tokens and client secrets leave Coop once and are stored
//! only as SHA-256 hashes: they are 256-bit random values, so a fast hash is
//! enough (no password stretching needed), and a database dump yields nothing
//! usable.

use aws_lc_rs::digest;
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use subtle::ConstantTimeEq;

/// `bytes` random bytes, base64url without padding.
pub fn random_token(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    // SystemRandom reads the OS generator; it fails only if the OS has none,
    // in which case nothing secure can be made and the zeroed buffer would be
    // worse than stopping, so fall back to rand's OS-seeded generator.
    if SystemRandom::new().fill(&mut buf).is_err() {
        use rand::RngCore;
        rand::rng().fill_bytes(&mut buf);
    }
    URL_SAFE_NO_PAD.encode(buf)
}

/// The stored form of a token, code or client secret: SHA-256, hex.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(digest::digest(&digest::SHA256, secret.as_bytes()).as_ref())
}

/// Compares two secrets (or their hashes) without leaking where they differ.
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// A human-friendly generated password: 20 characters from an alphabet
/// without look-alikes (about 110 bits).
pub fn generate_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut buf = [0u8; 20];
    if SystemRandom::new().fill(&mut buf).is_err() {
        use rand::RngCore;
        rand::rng().fill_bytes(&mut buf);
    }
    buf.iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
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
        assert_eq!(generate_password().len(), 20);
    }
}
