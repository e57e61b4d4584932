//! The last good copy of each client metadata document and key set that a
//! client Coop knows relies on: the body as fetched (it passed validation)
//! and when it was fetched, keyed by kind and URL. The fetcher serves one
//! while the host is down, within the grace (`oauth::cimd::copies`);
//! housekeeping deletes copies older than the grace.
//!
//! Only what a known client relies on is kept, so nobody can fill the table
//! by naming URLs: a document whose client has a row (written once a
//! signed-in person reaches its consent step), and a key set named as its
//! `jwks_uri` by such a client, by a registered client, by a self-registered
//! client that has been used, or by an automation.

use time::OffsetDateTime;

use super::{Exec, Sql, StoreError, Tx};

/// What a copy is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyKind {
    Document,
    KeySet,
}

impl CopyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Document => "document",
            Self::KeySet => "key_set",
        }
    }
}

crate::record! {
    /// One copy.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Copy {
        pub body: String,
        pub fetched_at: i64,
    }
}

/// Whether a known client relies on the `kind` at `url`.
pub async fn is_relied_on(
    db: &mut impl Exec,
    kind: CopyKind,
    url: &str,
) -> Result<bool, StoreError> {
    let query = match kind {
        CopyKind::Document => {
            "select count(*) from oauth_clients
             where client_id = $1 and kind = 'metadata_document'"
        }
        CopyKind::KeySet => {
            "select (select count(*) from oauth_clients
                     where jwks_uri = $1 and (kind <> 'dynamic' or last_used_at is not null))
                  + (select count(*) from automations where jwks_uri = $1)"
        }
    };
    let count: i64 = Sql::new(query).bind(url).fetch_scalar(db).await?;
    Ok(count > 0)
}

/// Keeps `body`, fetched at `fetched_at`, as the copy of the `kind` at
/// `url`, unless the copy kept is more recent (another replica fetched
/// it since).
pub async fn save(
    tx: &mut Tx,
    kind: CopyKind,
    url: &str,
    body: &str,
    fetched_at: OffsetDateTime,
) -> Result<(), StoreError> {
    Sql::new(
        "insert into last_good_copies (kind, url, body, fetched_at) values ($1, $2, $3, $4)
         on conflict (kind, url) do update set
             body = excluded.body,
             fetched_at = excluded.fetched_at
         where last_good_copies.fetched_at <= excluded.fetched_at",
    )
    .bind(kind.as_str())
    .bind(url)
    .bind(body)
    .bind(fetched_at)
    .execute(tx)
    .await?;
    Ok(())
}

/// The copy of the `kind` at `url`, if one is kept.
pub async fn find(
    db: &mut impl Exec,
    kind: CopyKind,
    url: &str,
) -> Result<Option<Copy>, StoreError> {
    Sql::new("select body, fetched_at from last_good_copies where kind = $1 and url = $2")
        .bind(kind.as_str())
        .bind(url)
        .fetch_optional(db)
        .await
}

/// Forgets the copy of the `kind` at `url` (its host refused it).
pub async fn delete(tx: &mut Tx, kind: CopyKind, url: &str) -> Result<u64, StoreError> {
    Sql::new("delete from last_good_copies where kind = $1 and url = $2")
        .bind(kind.as_str())
        .bind(url)
        .execute(tx)
        .await
}

/// Forgets copies fetched before `cutoff` (past the grace); returns how
/// many.
pub async fn delete_fetched_before(tx: &mut Tx, cutoff: OffsetDateTime) -> Result<u64, StoreError> {
    Sql::new("delete from last_good_copies where fetched_at < $1")
        .bind(cutoff)
        .execute(tx)
        .await
}
