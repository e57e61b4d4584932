//! Argon2id password hashing, off the async runtime and bounded.
//!
//! Hashing is deliberately slow (about 20 MiB and tens of milliseconds per
//! hash), so it runs on tokio's blocking pool, and a semaphore sized to the
//! cores caps how many run at once: a flood of sign-ins queues here instead
//! of occupying every blocking thread and every core, and `/mcp`, which never
//! hashes a password, keeps answering.
//!
//! Every hash and verification works in memory kept between calls, one
//! buffer per permit at most, so the process never holds more argon2
//! memory than permits × 19 MiB. Allocating 19 MiB afresh for each left
//! glibc's per-thread arenas holding freed blocks they could not hand back:
//! a sign-in flood grew a 2-core server from 30 MB to 480 MB resident
//! (`bench/signin-flood.sh`), and `serve --demo`'s four new members left it
//! at 96 MB.

use std::sync::{Arc, Mutex};

use argon2::password_hash::phc::PasswordHash;
use argon2::{Algorithm, Argon2, Block, Params, Version};
use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use subtle::ConstantTimeEq;
use tokio::sync::Semaphore;

use crate::secrets::Password;

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
    /// Argon2's working memory, taken by a verification and put back after.
    memory: Arc<Mutex<Vec<Vec<Block>>>>,
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

/// A new argon2id hash of `password` with a fresh 16-byte salt, working in
/// `memory`, as a PHC string (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`,
/// base64 without padding, as the PHC format and the argon2 crate write it).
fn hash_with_memory(password: &str, memory: &mut Vec<Block>) -> Result<String, PasswordError> {
    let mut salt = [0u8; 16];
    crate::secrets::fill_random(&mut salt);
    hash_with_salt(password, &salt, memory)
}

fn hash_with_salt(
    password: &str,
    salt: &[u8],
    memory: &mut Vec<Block>,
) -> Result<String, PasswordError> {
    let argon2 = argon2()?;
    let params = argon2.params();
    let blocks = params.block_count();
    if memory.len() < blocks {
        memory.resize(blocks, Block::default());
    }
    let mut output = [0u8; 32];
    argon2
        .hash_password_into_with_memory(
            password.as_bytes(),
            salt,
            &mut output,
            &mut memory[..blocks],
        )
        .map_err(hasher_error)?;
    Ok(format!(
        "$argon2id$v=19$m={},t={},p={}${}${}",
        params.m_cost(),
        params.t_cost(),
        params.p_cost(),
        STANDARD_NO_PAD.encode(salt),
        STANDARD_NO_PAD.encode(output)
    ))
}

fn hasher_error(err: impl std::fmt::Display) -> PasswordError {
    PasswordError::Hasher(err.to_string())
}

/// Checks `password` against the PHC string `phc`, working in `memory`
/// (grown when the stored parameters need more). The algorithm, version and
/// parameters come from the stored string, so hashes made with older
/// parameters still verify.
fn verify_blocking(
    password: &str,
    phc: &str,
    memory: &mut Vec<Block>,
) -> Result<bool, PasswordError> {
    let stored = PasswordHash::new(phc).map_err(hasher_error)?;
    let (Some(salt), Some(expected)) = (&stored.salt, &stored.hash) else {
        return Err(PasswordError::Hasher(
            "the stored hash has no salt or output".into(),
        ));
    };
    let algorithm = Algorithm::try_from(stored.algorithm.as_str()).map_err(hasher_error)?;
    let version = stored
        .version
        .map(Version::try_from)
        .transpose()
        .map_err(hasher_error)?
        .unwrap_or_default();
    let params = Params::try_from(&stored).map_err(hasher_error)?;
    let blocks = params.block_count();
    if memory.len() < blocks {
        memory.resize(blocks, Block::default());
    }
    let mut computed = vec![0u8; expected.len()];
    Argon2::new(algorithm, version, params)
        .hash_password_into_with_memory(
            password.as_bytes(),
            salt,
            &mut computed,
            &mut memory[..blocks],
        )
        .map_err(hasher_error)?;
    Ok(computed.as_slice().ct_eq(expected.as_bytes()).into())
}

impl Passwords {
    pub fn new(concurrency: usize) -> Result<Self, PasswordError> {
        let decoy = crate::secrets::random_token(16);
        let mut memory = Vec::new();
        let decoy_hash = hash_with_memory(&decoy, &mut memory)?.into();
        Ok(Self {
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            // The decoy's buffer is the pool's first.
            memory: Arc::new(Mutex::new(vec![memory])),
            decoy_hash,
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

    pub async fn hash(&self, password: &Password) -> Result<String, PasswordError> {
        let password = password.expose().to_owned();
        self.with_memory(move |memory| hash_with_memory(&password, memory))
            .await
    }

    /// Runs `job` under a permit with one of the pooled argon2 buffers.
    async fn with_memory<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Vec<Block>) -> Result<T, PasswordError> + Send + 'static,
    ) -> Result<T, PasswordError> {
        let pool = Arc::clone(&self.memory);
        self.run(move || {
            // Under a permit, so the pool never holds more buffers than
            // there are permits.
            let mut memory = lock(&pool).pop().unwrap_or_default();
            let done = job(&mut memory);
            lock(&pool).push(memory);
            done
        })
        .await
    }

    /// Checks `password` against `stored`, or against the decoy when there
    /// is no account, so both paths cost one argon2 verification.
    pub async fn verify(
        &self,
        password: &Password,
        stored: Option<&str>,
    ) -> Result<bool, PasswordError> {
        let exists = stored.is_some();
        let phc = stored.unwrap_or(&self.decoy_hash).to_owned();
        let password = password.expose().to_owned();
        let matched = self
            .with_memory(move |memory| verify_blocking(&password, &phc, memory))
            .await?;
        Ok(exists && matched)
    }
}

/// The pool's lock; a panic elsewhere while holding it leaves only a list of
/// buffers behind, which is still sound to use.
fn lock(pool: &Mutex<Vec<Vec<Block>>>) -> std::sync::MutexGuard<'_, Vec<Vec<Block>>> {
    pool.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A new password must be at least this long; length beats composition rules
/// (NIST SP 800-63B).
pub const MIN_PASSWORD_LEN: usize = 12;
/// Argon2 takes any length, but a megabyte "password" is a denial of service.
pub const MAX_PASSWORD_LEN: usize = 1024;

/// Why a proposed password is refused, in words a person can act on.
pub fn check_new_password(password: &Password) -> Result<(), String> {
    let len = password.expose().chars().count();
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

    /// A hasher with `permits` permits and its hash of `password`.
    async fn hashed(permits: usize, password: &str) -> (Passwords, String) {
        let passwords = Passwords::new(permits).unwrap();
        let hash = passwords.hash(&Password::new(password)).await.unwrap();
        (passwords, hash)
    }

    async fn verify(
        passwords: &Passwords,
        password: &str,
        stored: Option<&str>,
    ) -> Result<bool, PasswordError> {
        passwords.verify(&Password::new(password), stored).await
    }

    #[test]
    fn a_pooled_hash_is_the_argon2_crates_own_phc_string() {
        use argon2::password_hash::PasswordHasher;
        let salt = [7u8; 16];
        let ours = hash_with_salt("correct horse battery", &salt, &mut Vec::new()).unwrap();
        let theirs: PasswordHash = argon2()
            .unwrap()
            .hash_password_with_salt(b"correct horse battery", &salt)
            .unwrap();
        assert_eq!(ours, theirs.to_string());
    }

    #[tokio::test]
    async fn a_hash_verifies_its_password_only() {
        let (passwords, hash) = hashed(2, "correct horse battery").await;
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        assert!(
            verify(&passwords, "correct horse battery", Some(&hash))
                .await
                .unwrap()
        );
        assert!(
            !verify(&passwords, "wrong horse battery", Some(&hash))
                .await
                .unwrap()
        );
    }

    #[tokio::test]
    async fn other_parameters_verify_in_the_reused_memory() {
        use argon2::password_hash::PasswordHasher;
        let (passwords, current) = hashed(1, "the current parameters").await;
        let made_with = |m_cost, t_cost, password: &[u8]| {
            Argon2::new(
                Algorithm::Argon2id,
                Version::V0x13,
                Params::new(m_cost, t_cost, 1, None).unwrap(),
            )
            .hash_password(password)
            .unwrap()
            .to_string()
        };
        let older = made_with(4096, 3, b"made with older ones");
        // A hash made with more memory than today's (a future raise, read
        // back after a downgrade) grows the buffer instead of failing.
        let larger = made_with(32 * 1024, 1, b"made with larger ones");
        // Current, smaller, current, larger: the one buffer serves each.
        for (password, hash, expected) in [
            ("the current parameters", &current, true),
            ("made with older ones", &older, true),
            ("made with older one", &older, false),
            ("the current parameter", &current, false),
            ("made with larger ones", &larger, true),
            ("made with larger one", &larger, false),
        ] {
            assert_eq!(
                verify(&passwords, password, Some(hash)).await.unwrap(),
                expected,
                "{password}"
            );
        }
        assert_eq!(lock(&passwords.memory).len(), 1, "one buffer per permit");
    }

    #[tokio::test]
    async fn a_damaged_stored_hash_is_an_error_not_a_match() {
        let (passwords, hash) = hashed(1, "correct horse battery").await;
        let (head, _) = hash.rsplit_once('$').unwrap();
        for damaged in [
            "not a hash",
            head,
            "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$",
        ] {
            assert!(
                verify(&passwords, "correct horse battery", Some(damaged))
                    .await
                    .is_err(),
                "{damaged}"
            );
        }
    }

    #[tokio::test]
    async fn an_unknown_account_never_verifies() {
        let passwords = Passwords::new(1).unwrap();
        assert!(!verify(&passwords, "anything at all", None).await.unwrap());
    }

    #[test]
    fn a_new_password_is_counted_in_characters_between_the_limits() {
        let of = |n: usize, c: char| Password::new(c.to_string().repeat(n));
        assert!(check_new_password(&Password::new("short")).is_err());
        assert!(check_new_password(&of(MIN_PASSWORD_LEN - 1, 'a')).is_err());
        assert!(check_new_password(&of(MIN_PASSWORD_LEN, 'a')).is_ok());
        // Characters, not bytes: twelve two-byte letters are long enough,
        // and six of them (twelve bytes) are not.
        assert!(check_new_password(&of(MIN_PASSWORD_LEN, 'é')).is_ok());
        assert!(check_new_password(&of(MIN_PASSWORD_LEN / 2, 'é')).is_err());
        assert!(check_new_password(&of(MAX_PASSWORD_LEN, 'a')).is_ok());
        assert_eq!(
            check_new_password(&of(MAX_PASSWORD_LEN + 1, 'a')),
            Err("Use at most 1024 characters.".to_owned())
        );
    }

    #[test]
    fn the_hasher_prints_its_free_permits_and_nothing_else() {
        let passwords = Passwords::new(3).unwrap();
        assert_eq!(
            format!("{passwords:?}"),
            "Passwords { available_permits: 3 }"
        );
    }
}
