//! Access tokens whose signature this process already checked.
//!
//! Every `/mcp` call presents its token again; checking an ES256 signature
//! costs more than the rest of the JWT work together. This cache remembers,
//! by the SHA-256 of the whole token (header, claims and signature, so
//! only byte-identical tokens match), the claims a successful verification
//! produced. It answers only one question, "did Coop sign exactly these
//! bytes?", never "is this token still good": the store check (grant, epoch,
//! user, farm, revocation) runs on every call regardless, so no revocation
//! can be outlived by this cache. The claims kept include a bound token's
//! `cnf`, never a DPoP proof: the proof is per request, so the caller checks
//! it against `cnf.jkt` on every call, cache hit or not.
//!
//! An entry is never used at or after the token's `exp` (checked against
//! the caller's clock on each hit), never once its signing key left the
//! verification set (the caller passes the key set it holds now, and
//! [`VerifiedTokens::forget_keys_except`] drops entries when the set
//! shrinks), and the cache holds at most [`CAPACITY`] entries: when full,
//! expired entries go first, then arbitrary ones (hash order), so a flood
//! of distinct valid tokens costs only signature checks, never memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::access_token::AccessClaims;

/// Entries kept at most (a few hundred bytes each).
pub const CAPACITY: usize = 4096;

pub type TokenHash = [u8; 32];

#[derive(Clone, Debug)]
struct Entry {
    claims: Arc<AccessClaims>,
    kid: Arc<str>,
}

#[derive(Debug, Default)]
pub struct VerifiedTokens {
    entries: Mutex<HashMap<TokenHash, Entry>>,
}

/// The SHA-256 of a presented token.
pub fn token_hash(token: &str) -> TokenHash {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, token.as_bytes());
    let mut hash = [0u8; 32];
    hash.copy_from_slice(digest.as_ref());
    hash
}

impl VerifiedTokens {
    /// The claims of a token verified before, if it has not expired at
    /// `now` (Unix seconds) and its key is still one of `live_kids`.
    pub fn get(
        &self,
        hash: &TokenHash,
        now: i64,
        live_kid: impl Fn(&str) -> bool,
    ) -> Option<Arc<AccessClaims>> {
        let mut entries = self.entries.lock().ok()?;
        let entry = entries.get(hash)?;
        if entry.claims.exp > now && live_kid(&entry.kid) {
            return Some(entry.claims.clone());
        }
        entries.remove(hash);
        None
    }

    /// Remembers a token whose signature by `kid` was just verified.
    pub fn insert(&self, hash: TokenHash, kid: &str, claims: AccessClaims, now: i64) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= CAPACITY {
            entries.retain(|_, e| e.claims.exp > now);
        }
        if entries.len() >= CAPACITY {
            let excess = entries.len() + 1 - CAPACITY / 2;
            let victims: Vec<TokenHash> = entries.keys().take(excess).copied().collect();
            for victim in victims {
                entries.remove(&victim);
            }
        }
        entries.insert(
            hash,
            Entry {
                claims: Arc::new(claims),
                kid: Arc::from(kid),
            },
        );
    }

    /// Drops every entry signed by a key no longer in the set.
    pub fn forget_keys_except(&self, live_kid: impl Fn(&str) -> bool) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|_, e| live_kid(&e.kid));
        }
    }

    pub fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: i64) -> AccessClaims {
        AccessClaims {
            iss: "https://coop.example".into(),
            sub: "u".into(),
            aud: "https://coop.example/mcp".into(),
            client_id: "c".into(),
            scope: "farm:read".into(),
            iat: 0,
            exp,
            jti: "j".into(),
            grant_id: "g".into(),
            epoch: 0,
            cnf: None,
            kid: "k1".into(),
        }
    }

    #[test]
    fn an_entry_is_never_used_at_or_after_exp() {
        let cache = VerifiedTokens::default();
        let hash = token_hash("a.b.c");
        cache.insert(hash, "k1", claims(100), 0);
        assert!(cache.get(&hash, 99, |_| true).is_some());
        assert!(cache.get(&hash, 100, |_| true).is_none());
        // And it is gone, not only hidden.
        assert!(cache.get(&hash, 50, |_| true).is_none());
    }

    #[test]
    fn an_entry_dies_with_its_key() {
        let cache = VerifiedTokens::default();
        let hash = token_hash("a.b.c");
        cache.insert(hash, "k1", claims(100), 0);
        assert!(cache.get(&hash, 1, |kid| kid == "k2").is_none());

        cache.insert(hash, "k1", claims(100), 0);
        assert!(!cache.is_empty());
        cache.forget_keys_except(|kid| kid == "k2");
        assert!(cache.is_empty());
    }

    #[test]
    fn only_identical_bytes_match() {
        let cache = VerifiedTokens::default();
        cache.insert(token_hash("a.b.c"), "k1", claims(100), 0);
        assert!(cache.get(&token_hash("a.b.d"), 1, |_| true).is_none());
    }

    #[test]
    fn the_cache_stays_bounded_and_sheds_expired_entries_first() {
        let cache = VerifiedTokens::default();
        for i in 0..CAPACITY - 1 {
            cache.insert(token_hash(&format!("old-{i}")), "k1", claims(20), 0);
        }
        let live = token_hash("live");
        cache.insert(live, "k1", claims(1_000), 0);
        assert_eq!(cache.len(), CAPACITY);
        // At t=20 every "old" entry has expired (an entry is dead at its
        // exp): the next insert sheds them and keeps the live one.
        cache.insert(token_hash("new"), "k1", claims(1_000), 20);
        assert!(cache.get(&live, 20, |_| true).is_some());
        assert_eq!(cache.len(), 2);
        for i in 0..(3 * CAPACITY) {
            cache.insert(token_hash(&format!("flood-{i}")), "k1", claims(1_000), 20);
            assert!(cache.len() <= CAPACITY);
        }
    }

    #[test]
    fn a_cache_full_of_live_entries_is_cut_to_half_at_the_next_insert() {
        let cache = VerifiedTokens::default();
        for i in 0..CAPACITY {
            cache.insert(token_hash(&format!("live-{i}")), "k1", claims(1_000), 0);
        }
        assert_eq!(cache.len(), CAPACITY);
        let newest = token_hash("newest");
        cache.insert(newest, "k1", claims(1_000), 0);
        assert_eq!(cache.len(), CAPACITY / 2);
        assert!(cache.get(&newest, 0, |_| true).is_some());
    }
}
