//! Argon2id password hashing, off the async runtime and bounded.
//!
//! Hashing is deliberately slow (about 20 MiB and tens of milliseconds per
//! hash), so it runs on tokio's blocking pool, and a semaphore sized to the
//! cores caps how many run at once: a flood of sign-ins queues here instead
//! of occupying every blocking thread and every core, and `/mcp`, which never
//! hashes a password, keeps answering.

use std::sync::Arc;

use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params, Version};
use tokio::sync::Semaphore;

#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("the password hasher failed: {0}")]
    Hasher(String),
    #[error("the blocking pool is gone")]
    Shutdown,
}

/// The shared, bounded password hasher.
#[derive(Clone)]
pub struct Passwords {
    permits: Arc<Semaphore>,
    /// A real hash of a random password, verified against when the account
    /// does not exist, so an unknown email costs the same as a wrong password.
    decoy_hash: Arc<str>,
}

impl std::fmt::Debug for Passwords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Passwords")
            .field("available_permits", &self.permits.available_permits())
            .finish()
    }
}

/// OWASP's first argon2id configuration: m = 19 MiB, t = 2, p = 1.
fn argon2() -> Result<Argon2<'static>, PasswordError> {
    let params =
        Params::new(19 * 1024, 2, 1, None).map_err(|e| PasswordError::Hasher(e.to_string()))?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

fn hash_blocking(password: &str) -> Result<String, PasswordError> {
    argon2()?
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| PasswordError::Hasher(e.to_string()))
}

fn verify_blocking(password: &str, phc: &str) -> Result<bool, PasswordError> {
    let parsed = argon2::password_hash::phc::PasswordHash::new(phc)
        .map_err(|e| PasswordError::Hasher(e.to_string()))?;
    // The parameters come from the stored PHC string, so hashes made with
    // older parameters still verify.
    Ok(argon2()?
        .verify_password(password.as_bytes(), &parsed)
        .is_ok())
}

impl Passwords {
    pub fn new(concurrency: usize) -> Result<Self, PasswordError> {
        let decoy = crate::secrets::random_token(16);
        Ok(Self {
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            decoy_hash: hash_blocking(&decoy)?.into(),
        })
    }

    async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> Result<T, PasswordError> + Send + 'static,
    ) -> Result<T, PasswordError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| PasswordError::Shutdown)?;
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || span.in_scope(job))
            .await
            .map_err(|_| PasswordError::Shutdown)?
    }

    pub async fn hash(&self, password: &str) -> Result<String, PasswordError> {
        let password = password.to_owned();
        self.run(move || hash_blocking(&password)).await
    }

    /// Checks `password` against `stored`, or against the decoy when there
    /// is no account, so both paths cost one argon2 verification.
    pub async fn verify(
        &self,
        password: &str,
        stored: Option<&str>,
    ) -> Result<bool, PasswordError> {
        let exists = stored.is_some();
        let phc = stored.unwrap_or(&self.decoy_hash).to_owned();
        let password = password.to_owned();
        let matched = self.run(move || verify_blocking(&password, &phc)).await?;
        Ok(exists && matched)
    }
}

/// A new password must be at least this long; length beats composition rules
/// (NIST SP 800-63B).
pub const MIN_PASSWORD_LEN: usize = 12;
/// Argon2 takes any length, but a megabyte "password" is a denial of service.
pub const MAX_PASSWORD_LEN: usize = 1024;

/// Why a proposed password is refused, in words a person can act on.
pub fn check_new_password(password: &str) -> Result<(), String> {
    let len = password.chars().count();
    if len < MIN_PASSWORD_LEN {
        return Err(format!(
            "Use at least {MIN_PASSWORD_LEN} characters; a few words together work well."
        ));
    }
    if len > MAX_PASSWORD_LEN {
        return Err(format!("Use at most {MAX_PASSWORD_LEN} characters."));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_verifies_its_password_only() {
        let passwords = Passwords::new(2).unwrap();
        let hash = passwords.hash("correct horse battery").await.unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(
            passwords
                .verify("correct horse battery", Some(&hash))
                .await
                .unwrap()
        );
        assert!(
            !passwords
                .verify("wrong horse battery", Some(&hash))
                .await
                .unwrap()
        );
    }

    #[tokio::test]
    async fn an_unknown_account_never_verifies() {
        let passwords = Passwords::new(1).unwrap();
        assert!(!passwords.verify("anything at all", None).await.unwrap());
    }

    #[test]
    fn short_passwords_are_refused() {
        assert!(check_new_password("short").is_err());
        assert!(check_new_password("long enough password").is_ok());
    }
}
