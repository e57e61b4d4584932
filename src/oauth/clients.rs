//! Finding a client by its `client_id`, whichever way it became known.
//!
//! A stored client (registered or self-registered) is read from the store;
//! a self-registered client never used within [`UNUSED_REGISTRATION_TTL`]
//! of its registration is treated as unknown (and deleted by housekeeping),
//! so a flood of registrations leaves nothing usable behind (threat 14).

use time::OffsetDateTime;

use crate::oauth::client::{AuthMethod, Client, ClientKind};
use crate::storage::clients::{self as stored, ClientRow};
use crate::storage::{Store, StoreError};

/// How long a self-registered client may go unused before it expires.
pub const UNUSED_REGISTRATION_TTL: time::Duration = time::Duration::hours(24);

#[derive(Debug, thiserror::Error)]
pub enum ClientLookupError {
    /// The client names a metadata document that could not be used; the
    /// reason is for the log and, in plain words, the error page.
    #[error("client metadata document: {0}")]
    Document(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The stored client `client_id`, unless unknown or expired.
pub async fn find_stored(
    store: &Store,
    client_id: &str,
    now: OffsetDateTime,
) -> Result<Option<Client>, StoreError> {
    let Some(row) = stored::find(store, client_id).await? else {
        return Ok(None);
    };
    if is_expired_registration(&row, now) {
        return Ok(None);
    }
    Ok(from_row(row))
}

fn is_expired_registration(row: &ClientRow, now: OffsetDateTime) -> bool {
    row.kind == "dynamic"
        && row.last_used_at.is_none()
        && row.created_at + UNUSED_REGISTRATION_TTL.whole_seconds() < now.unix_timestamp()
}

/// A stored row as a [`Client`]; `None` (logged) if the row is unusable.
fn from_row(row: ClientRow) -> Option<Client> {
    let metadata: serde_json::Value = serde_json::from_str(&row.metadata).unwrap_or_default();
    let kind = match row.kind.as_str() {
        "registered" => ClientKind::Registered,
        "dynamic" => ClientKind::Dynamic,
        "metadata_document" => ClientKind::MetadataDocument {
            document_host: metadata["document_host"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        },
        other => {
            tracing::error!(kind = other, "stored client of an unknown kind");
            return None;
        }
    };
    let Ok(redirect_uris) = serde_json::from_str::<Vec<String>>(&row.redirect_uris) else {
        tracing::error!(client_id = %row.client_id, "stored client has unreadable redirect URIs");
        return None;
    };
    let Some(auth_method) = AuthMethod::parse(&row.token_endpoint_auth_method) else {
        tracing::error!(client_id = %row.client_id, "stored client has an unknown auth method");
        return None;
    };
    let may_refresh = match metadata.get("grant_types").and_then(|g| g.as_array()) {
        Some(types) => types.iter().any(|t| t == "refresh_token"),
        None => true,
    };
    Some(Client {
        client_id: row.client_id,
        kind,
        name: row.client_name,
        redirect_uris,
        auth_method,
        secret_hash: row.secret_hash,
        may_refresh,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: &str, created_at: i64, last_used_at: Option<i64>) -> ClientRow {
        ClientRow {
            client_id: "c".into(),
            kind: kind.into(),
            client_name: "n".into(),
            redirect_uris: r#"["https://a.example/cb"]"#.into(),
            token_endpoint_auth_method: "none".into(),
            secret_hash: None,
            metadata: "{}".into(),
            created_at,
            last_used_at,
            cache_expires_at: None,
        }
    }

    #[test]
    fn an_unused_self_registration_expires_after_a_day() {
        let now = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let day = 24 * 3600;
        let t = now.unix_timestamp();
        assert!(!is_expired_registration(
            &row("dynamic", t - day + 1, None),
            now
        ));
        assert!(is_expired_registration(
            &row("dynamic", t - day - 1, None),
            now
        ));
        assert!(!is_expired_registration(
            &row("dynamic", t - 10 * day, Some(t - 9 * day)),
            now
        ));
        assert!(!is_expired_registration(
            &row("registered", t - 10 * day, None),
            now
        ));
    }

    #[test]
    fn rows_become_clients() {
        let mut r = row("dynamic", 0, None);
        r.metadata = r#"{"grant_types":["authorization_code"]}"#.into();
        let c = from_row(r).unwrap();
        assert!(c.is_unverified());
        assert!(!c.may_refresh);
        assert_eq!(c.redirect_uris, vec!["https://a.example/cb".to_owned()]);
        let mut r = row("metadata_document", 0, None);
        r.metadata = r#"{"document_host":"app.example"}"#.into();
        assert_eq!(
            from_row(r).unwrap().kind,
            ClientKind::MetadataDocument {
                document_host: "app.example".into()
            }
        );
        assert!(from_row(row("other", 0, None)).is_none());
    }
}
