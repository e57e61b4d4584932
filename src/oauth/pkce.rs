//! PKCE (RFC 7636), `S256` only (threat 2: an intercepted code is useless
//! without the verifier that only the client holds).

use aws_lc_rs::digest;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::secrets::constant_time_eq;

/// A `code_challenge` as the authorization request carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeChallenge(String);

/// Why a challenge is refused (each is `invalid_request`).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PkceRefusal {
    #[error("code_challenge is required")]
    Missing,
    #[error("code_challenge_method must be S256")]
    MethodNotS256,
    #[error("code_challenge must be the 43-character base64url SHA-256 of the verifier")]
    Malformed,
}

impl CodeChallenge {
    /// Checks the challenge and its method: both present, method `S256`
    /// (a missing method means `plain` in RFC 7636, so it is refused too).
    pub fn parse(challenge: Option<&str>, method: Option<&str>) -> Result<Self, PkceRefusal> {
        let challenge = challenge
            .filter(|c| !c.is_empty())
            .ok_or(PkceRefusal::Missing)?;
        if method != Some("S256") {
            return Err(PkceRefusal::MethodNotS256);
        }
        let well_formed = challenge.len() == 43
            && challenge
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !well_formed {
            return Err(PkceRefusal::Malformed);
        }
        Ok(Self(challenge.to_owned()))
    }

    /// A challenge read back from storage (checked when it was stored).
    pub fn from_stored(raw: String) -> Self {
        Self(raw)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `verifier` is the one this challenge was made from. The
    /// verifier must have RFC 7636's shape (43–128 unreserved characters)
    /// before it is hashed; the comparison is constant-time.
    pub fn is_satisfied_by(&self, verifier: &str) -> bool {
        let shaped = (43..=128).contains(&verifier.len())
            && verifier
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
        shaped && constant_time_eq(&s256(verifier), &self.0)
    }
}

/// `BASE64URL(SHA256(verifier))`.
pub fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(digest::digest(&digest::SHA256, verifier.as_bytes()).as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 7636 Appendix B.
    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    #[test]
    fn the_rfc_example_verifies() {
        let challenge = CodeChallenge::parse(Some(CHALLENGE), Some("S256")).unwrap();
        assert!(challenge.is_satisfied_by(VERIFIER));
        assert!(!challenge.is_satisfied_by(&VERIFIER.replace('d', "e")));
        assert!(!challenge.is_satisfied_by(CHALLENGE));
        assert!(!challenge.is_satisfied_by("short"));
        // What is stored is the challenge as sent.
        assert_eq!(challenge.as_str(), CHALLENGE);
    }

    #[test]
    fn a_verifier_of_the_wrong_shape_is_refused_even_when_its_hash_matches() {
        let too_short = &VERIFIER[..42];
        let too_long = "a".repeat(129);
        let bad_character = format!("{}+", &VERIFIER[..42]);
        for verifier in [too_short, too_long.as_str(), bad_character.as_str()] {
            let challenge = CodeChallenge::from_stored(s256(verifier));
            assert!(!challenge.is_satisfied_by(verifier), "{verifier}");
        }
        let longest = "a".repeat(128);
        assert!(CodeChallenge::from_stored(s256(&longest)).is_satisfied_by(&longest));
    }

    #[test]
    fn plain_missing_and_malformed_challenges_are_refused() {
        assert_eq!(
            CodeChallenge::parse(None, Some("S256")),
            Err(PkceRefusal::Missing)
        );
        assert_eq!(
            CodeChallenge::parse(Some(CHALLENGE), Some("plain")),
            Err(PkceRefusal::MethodNotS256)
        );
        assert_eq!(
            CodeChallenge::parse(Some(CHALLENGE), None),
            Err(PkceRefusal::MethodNotS256)
        );
        assert_eq!(
            CodeChallenge::parse(Some("abc"), Some("S256")),
            Err(PkceRefusal::Malformed)
        );
        assert_eq!(
            CodeChallenge::parse(Some(&format!("{}+", &CHALLENGE[..42])), Some("S256")),
            Err(PkceRefusal::Malformed)
        );
    }
}
