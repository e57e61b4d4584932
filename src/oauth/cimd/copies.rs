//! The last good copy of each document and key set, served while its host
//! is down (issue 31 item 10).
//!
//! Claude's and ChatGPT's client documents live on their own hosts, and
//! their clients do not fall back to registration: while Coop cannot fetch
//! a document, nobody can connect with that client. So each document and
//! key set a known client relies on is kept in the shared store, as fetched
//! and with when ([`crate::storage::last_good_copies`]); when fetching it
//! again fails because **the host is down**, the copy is served instead,
//! for as long as it is younger than the grace (`--cimd-stale-grace`,
//! default [`DEFAULT_GRACE`]).
//!
//! # Down, or refused
//!
//! The host is down ([`host_is_down`]) when no answer came from it: the name
//! did not resolve or resolved to an address Coop does not connect to, the
//! connection or the TLS handshake failed (through the outbound proxy
//! too), the time ran out, the connection broke before the answer was
//! whole; or when its answer says "not now": a 5xx, 408 or 429. None of
//! these is the host's word on the document, and a copy that passed every
//! check earlier is safer to use than nothing.
//!
//! The host refused when it answered anything else: another status (a 404
//! or 410 withdraws the document; 401 and 403 refuse it), a redirect, a
//! body too large, or a document or key set that fails validation (a
//! changed `client_id` among them). Its answer is final: the copy is
//! deleted, so a later outage cannot bring it back, and the request fails
//! as it would without copies.
//!
//! # Where the copies live, and how many
//!
//! In the shared store rather than per process: a replica that starts (or
//! restarts) during an outage, which is when deployments and crash loops
//! happen, has the copies the others kept. A copy is written after each
//! good fetch of a URL a known client relies on, and when a document
//! client is recorded at its consent step (so a host that goes down right
//! after the first connection is covered). Each copy is at most 5 KiB
//! (document) or 16 KiB (key set); their number is bounded by the known
//! clients and automations, since anonymous requests naming other URLs
//! write nothing; housekeeping deletes copies older than the grace.
//!
//! # What is said
//!
//! Each time a copy is served after a failed fetch, a `WARN` line names the
//! URL, the age of the copy and the failure, and the counter
//! `coop_cimd_stale_served_total{kind="document"|"key_set"}` goes up. The
//! copy then stands in for the fetched one for
//! [`FAILURE_FRESHNESS`](super::cache::FAILURE_FRESHNESS)
//! (the host is tried again no more than twice a minute), so both count
//! fetches that failed, not requests.

use std::sync::Arc;

use time::OffsetDateTime;

use super::CimdError;
use crate::storage::last_good_copies::{self, CopyKind};
use crate::storage::{Store, StoreError};

/// How long a copy may be served after it was last fetched, by default.
pub const DEFAULT_GRACE: time::Duration = time::Duration::days(7);
/// The counter of copies served, labelled `kind`.
pub const STALE_SERVED_TOTAL: &str = "coop_cimd_stale_served_total";
/// Its description.
pub const STALE_SERVED_HELP: &str = "Fetches of a client metadata document or key set that failed because the host was down, \
     answered with the last good copy instead, by kind";

/// Whether `err` means the host is down (serve the copy) rather than that
/// it refused (delete the copy). See the module documentation.
pub fn host_is_down(err: &CimdError) -> bool {
    match err {
        CimdError::Resolve(_)
        | CimdError::ForbiddenAddress(_)
        | CimdError::Fetch(_)
        | CimdError::Timeout => true,
        CimdError::Status(status) => (500..600).contains(status) || matches!(status, 408 | 429),
        CimdError::NotHttpsUrl
        | CimdError::Redirect
        | CimdError::TooLarge
        | CimdError::ClientIdMismatch
        | CimdError::SharedSecretAuth
        | CimdError::NoCommonAuthMethod(_)
        | CimdError::Invalid(_)
        | CimdError::InvalidKeySet(_)
        | CimdError::Throttled(_)
        | CimdError::Settings(_) => false,
    }
}

/// A copy found for serving.
struct Found {
    body: String,
    fetched_at: OffsetDateTime,
    age: time::Duration,
}

/// The copies in the store, the grace, and the counters of copies served.
#[derive(Debug)]
pub struct LastGoodCopies {
    store: Store,
    grace: time::Duration,
    served_documents: metrics::Counter,
    served_key_sets: metrics::Counter,
}

impl LastGoodCopies {
    /// Copies in `store`, served while younger than `grace` (zero: never),
    /// counted by `counter(kind label)`.
    pub fn new(
        store: Store,
        grace: time::Duration,
        counter: impl Fn(&'static str) -> metrics::Counter,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            grace,
            served_documents: counter(CopyKind::Document.as_str()),
            served_key_sets: counter(CopyKind::KeySet.as_str()),
        })
    }

    /// After a good fetch: keeps `body` as the copy if a known client
    /// relies on it. A store that fails is logged; the fetch stands.
    pub async fn keep(&self, kind: CopyKind, url: &str, body: &[u8], fetched_at: OffsetDateTime) {
        // Validated JSON is UTF-8.
        let Ok(body) = std::str::from_utf8(body) else {
            return;
        };
        let kept = async {
            if !last_good_copies::is_relied_on(&mut self.store.read().await?, kind, url).await? {
                return Ok(false);
            }
            let mut tx = self.store.write().await?;
            last_good_copies::save(&mut tx, kind, url, body, fetched_at).await?;
            tx.commit().await?;
            Ok::<_, StoreError>(true)
        }
        .await;
        if let Err(err) = kept {
            tracing::warn!(url, error = %err, "could not keep the last good copy of a {}", label(kind));
        }
    }

    /// After a failed fetch: the copy to serve instead, when the host is
    /// down and the copy is younger than the grace. Counts and logs it;
    /// `build` checks it again (from the body and when it was fetched; an
    /// error: not served).
    pub async fn serve<R>(
        &self,
        kind: CopyKind,
        url: &str,
        failure: &CimdError,
        now: OffsetDateTime,
        build: impl FnOnce(&[u8], OffsetDateTime) -> Result<R, CimdError>,
    ) -> Option<R> {
        if !host_is_down(failure) {
            return None;
        }
        let found = match self.find(kind, url, now).await {
            Ok(found) => found?,
            Err(err) => {
                tracing::warn!(url, error = %err, "could not read the last good copy of a {}", label(kind));
                return None;
            }
        };
        let value = match build(found.body.as_bytes(), found.fetched_at) {
            Ok(value) => value,
            Err(err) => {
                tracing::warn!(url, error = %err, "the last good copy of a {} is no longer valid", label(kind));
                return None;
            }
        };
        tracing::warn!(
            url,
            age_seconds = found.age.whole_seconds(),
            error = %failure,
            "the host of a {} is down: serving its last good copy, fetched {} ago",
            label(kind),
            found.age,
        );
        match kind {
            CopyKind::Document => self.served_documents.increment(1),
            CopyKind::KeySet => self.served_key_sets.increment(1),
        }
        Some(value)
    }

    async fn find(
        &self,
        kind: CopyKind,
        url: &str,
        now: OffsetDateTime,
    ) -> Result<Option<Found>, StoreError> {
        let Some(copy) = last_good_copies::find(&mut self.store.read().await?, kind, url).await?
        else {
            return Ok(None);
        };
        let fetched_at = OffsetDateTime::from_unix_timestamp(copy.fetched_at).unwrap_or(now);
        let age = now - fetched_at;
        Ok((age < self.grace).then_some(Found {
            body: copy.body,
            fetched_at,
            age,
        }))
    }

    /// After a refusal: the host's answer is final, the copy goes.
    pub async fn forget(&self, kind: CopyKind, url: &str) {
        let forgotten = async {
            // Most refused URLs never had a copy: no write for them.
            if last_good_copies::find(&mut self.store.read().await?, kind, url)
                .await?
                .is_none()
            {
                return Ok(0);
            }
            let mut tx = self.store.write().await?;
            let deleted = last_good_copies::delete(&mut tx, kind, url).await?;
            tx.commit().await?;
            Ok::<_, StoreError>(deleted)
        }
        .await;
        match forgotten {
            Ok(0) => {}
            Ok(_) => tracing::info!(
                url,
                "the host refused its {}: its last good copy is deleted",
                label(kind)
            ),
            Err(err) => {
                tracing::warn!(url, error = %err, "could not delete the last good copy of a {}", label(kind))
            }
        }
    }

    /// Deletes copies past the grace (housekeeping); returns how many.
    pub async fn sweep(&self, now: OffsetDateTime) -> Result<u64, StoreError> {
        let mut tx = self.store.write().await?;
        let deleted = last_good_copies::delete_fetched_before(&mut tx, now - self.grace).await?;
        tx.commit().await?;
        Ok(deleted)
    }
}

fn label(kind: CopyKind) -> &'static str {
    match kind {
        CopyKind::Document => "client metadata document",
        CopyKind::KeySet => "key set",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::cimd::limits::{Limit, Throttle};

    #[test]
    fn no_answer_and_not_now_answers_mean_the_host_is_down() {
        for err in [
            CimdError::Resolve("app.example: no addresses".into()),
            CimdError::ForbiddenAddress("app.example resolves to 10.0.0.1".into()),
            CimdError::Fetch("connection refused".into()),
            CimdError::Timeout,
            CimdError::Status(500),
            CimdError::Status(502),
            CimdError::Status(503),
            CimdError::Status(504),
            CimdError::Status(599),
            CimdError::Status(408),
            CimdError::Status(429),
        ] {
            assert!(host_is_down(&err), "{err:?}");
        }
    }

    #[test]
    fn any_other_answer_is_a_refusal() {
        for err in [
            CimdError::Status(400),
            CimdError::Status(401),
            CimdError::Status(403),
            CimdError::Status(404),
            CimdError::Status(410),
            CimdError::Status(204),
            CimdError::Status(600),
            CimdError::Redirect,
            CimdError::TooLarge,
            CimdError::ClientIdMismatch,
            CimdError::SharedSecretAuth,
            CimdError::Invalid("client_name is missing".into()),
            CimdError::InvalidKeySet("no keys".into()),
            CimdError::NotHttpsUrl,
            CimdError::Throttled(Throttle {
                limit: Limit::InFlight,
                retry_after: std::time::Duration::from_secs(5),
            }),
            CimdError::Settings("x".into()),
        ] {
            assert!(!host_is_down(&err), "{err:?}");
        }
    }
}
