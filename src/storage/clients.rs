//! OAuth clients: registered from the command line, self-registered through
//! `/register`, or cached copies of Client ID Metadata Documents.

use time::OffsetDateTime;

use super::{Exec, Sql, StoreError, Tx};
use crate::domain::{AuthMethod, ClientKind};

crate::record! {
    #[derive(Clone, Debug)]
    pub struct ClientRow {
        pub client_id: String,
        pub kind: ClientKind,
        pub client_name: String,
        /// JSON array of strings.
        pub redirect_uris: String,
        pub token_endpoint_auth_method: AuthMethod,
        pub secret_hash: Option<String>,
        /// The registered metadata (RFC 7591 fields Coop keeps), JSON.
        pub metadata: String,
        pub created_at: i64,
        pub last_used_at: Option<i64>,
        pub cache_expires_at: Option<i64>,
    }
}

pub struct NewClient<'a> {
    pub client_id: &'a str,
    /// `Registered` or `Dynamic`.
    pub kind: ClientKind,
    pub client_name: &'a str,
    pub redirect_uris: &'a [String],
    pub auth_method: AuthMethod,
    pub secret_hash: Option<&'a str>,
    pub metadata: &'a serde_json::Value,
}

const SELECT: &str =
    "select client_id, kind, client_name, redirect_uris, token_endpoint_auth_method,
        secret_hash, metadata, created_at, last_used_at, cache_expires_at
    from oauth_clients";

pub async fn insert(
    tx: &mut Tx,
    client: &NewClient<'_>,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    let uris = serde_json::Value::from(client.redirect_uris.to_vec()).to_string();
    Sql::new(
        "insert into oauth_clients (client_id, kind, client_name, redirect_uris,
             token_endpoint_auth_method, secret_hash, metadata, created_at, jwks_uri)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(client.client_id)
    .bind(client.kind)
    .bind(client.client_name)
    .bind(uris)
    .bind(client.auth_method)
    .bind(client.secret_hash)
    .bind(client.metadata.to_string())
    .bind(now)
    .bind(client.metadata.get("jwks_uri").and_then(|uri| uri.as_str()))
    .execute(tx)
    .await?;
    Ok(())
}

pub async fn find(db: &mut impl Exec, client_id: &str) -> Result<Option<ClientRow>, StoreError> {
    Sql::new(format!("{SELECT} where client_id = $1"))
        .bind(client_id)
        .fetch_optional(db)
        .await
}

/// Lets `client_id` call `/introspect` (set once, at its registration).
pub async fn allow_introspection(tx: &mut Tx, client_id: &str) -> Result<(), StoreError> {
    Sql::new("update oauth_clients set introspection = true where client_id = $1")
        .bind(client_id)
        .execute(tx)
        .await?;
    Ok(())
}

/// Whether `client_id` was registered to call `/introspect`.
pub async fn may_introspect(db: &mut impl Exec, client_id: &str) -> Result<bool, StoreError> {
    let allowed: Option<bool> =
        Sql::new("select introspection from oauth_clients where client_id = $1")
            .bind(client_id)
            .fetch_optional_scalar(db)
            .await?;
    Ok(allowed == Some(true))
}

/// Records the first real use (a code redeemed): from then on a
/// self-registered client no longer expires.
pub async fn mark_used(
    tx: &mut Tx,
    client_id: &str,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    Sql::new(
        "update oauth_clients set last_used_at = $2
         where client_id = $1 and last_used_at is null",
    )
    .bind(client_id)
    .bind(now)
    .execute(tx)
    .await?;
    Ok(())
}

/// A metadata document as last fetched. The row exists so grants, codes
/// and the connected-apps page can name the client; the fetcher's cache,
/// not this row, decides when the document is fetched again.
pub struct DocumentClient<'a> {
    pub client_id: &'a str,
    pub client_name: &'a str,
    pub redirect_uris: &'a [String],
    /// The method negotiated with the document.
    pub auth_method: AuthMethod,
    pub document_host: &'a str,
    pub fresh_until: OffsetDateTime,
    /// Where its keys are, when the document names a `jwks_uri`.
    pub jwks_uri: Option<&'a str>,
}

pub async fn upsert_metadata_document(
    tx: &mut Tx,
    doc: &DocumentClient<'_>,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    let uris = serde_json::Value::from(doc.redirect_uris.to_vec()).to_string();
    let metadata = serde_json::json!({ "document_host": doc.document_host }).to_string();
    Sql::new(
        "insert into oauth_clients (client_id, kind, client_name, redirect_uris,
             token_endpoint_auth_method, metadata, created_at, cache_expires_at, jwks_uri)
         values ($1, 'metadata_document', $2, $3, $7, $4, $5, $6, $8)
         on conflict (client_id) do update set
             client_name = excluded.client_name,
             redirect_uris = excluded.redirect_uris,
             token_endpoint_auth_method = excluded.token_endpoint_auth_method,
             metadata = excluded.metadata,
             cache_expires_at = excluded.cache_expires_at,
             jwks_uri = excluded.jwks_uri
         where oauth_clients.kind = 'metadata_document'",
    )
    .bind(doc.client_id)
    .bind(doc.client_name)
    .bind(uris)
    .bind(metadata)
    .bind(now)
    .bind(doc.fresh_until)
    .bind(doc.auth_method)
    .bind(doc.jwks_uri)
    .execute(tx)
    .await?;
    Ok(())
}

/// Deletes self-registered clients created before `created_before` and
/// never used; returns how many.
pub async fn delete_unused_dynamic(
    tx: &mut Tx,
    created_before: OffsetDateTime,
) -> Result<u64, StoreError> {
    Sql::new(
        "delete from oauth_clients
         where kind = 'dynamic' and last_used_at is null and created_at < $1",
    )
    .bind(created_before)
    .execute(tx)
    .await
}
