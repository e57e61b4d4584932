//! Finding a client by its `client_id`, whichever way it became known.
//!
//! - A `client_id` that is an https URL names a Client ID Metadata Document:
//!   it is resolved through the fetcher ([`crate::oauth::cimd`], with its
//!   SSRF guard and cache) on every use, never from the store, so a
//!   withdrawn or changed document takes effect once the cached copy is
//!   stale. The client has no secret; it authenticates with the method
//!   negotiated from its document (`none`, or `private_key_jwt` with the
//!   document's keys), is named and redirected as the document says, and
//!   is shown with the host that served the document.
//!   [`record_document`] keeps a copy in the store once a person is about
//!   to consent: grants reference it, and the consent and connected-apps
//!   pages name the client from it.
//! - Any other `client_id` is a stored client (registered or
//!   self-registered); a self-registered client never used within
//!   [`UNUSED_REGISTRATION_TTL`] of its registration is treated as unknown
//!   (and deleted by housekeeping), so a flood of registrations leaves
//!   nothing usable behind (threat 14).

use time::OffsetDateTime;

use crate::domain::ClientKind as StoredKind;
use crate::oauth::cimd::key_set;
use crate::oauth::cimd::{CimdError, CimdRequest, ClientMetadataDocument, Throttle};
use crate::oauth::client::{
    AssertionKeys, AuthMethod, Client, ClientKeys, ClientKind, DocumentAuth, Origin, SecretMethod,
};
use crate::oauth::client_assertion;
use crate::storage::clients::{self as stored, ClientRow, DocumentClient};
use crate::storage::last_good_copies::{self, CopyKind};
use crate::storage::{Store, StoreError};

/// How long a self-registered client may go unused before it expires.
pub const UNUSED_REGISTRATION_TTL: time::Duration = time::Duration::hours(24);

#[derive(Debug, thiserror::Error)]
pub enum ClientLookupError {
    /// The client names a metadata document that could not be used. The
    /// text is a plain reason fit for the person's error page; the detail
    /// (addresses, TLS errors) went to the log only.
    #[error("client metadata document: {0}")]
    Document(String),
    /// The client names a metadata document that Coop would have to fetch,
    /// and one of the fetch limits refuses that now (threat 33).
    #[error("client metadata document not fetched now: {0}")]
    Throttled(Throttle),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A client found for a request; for a metadata-document client, also the
/// document it came from (for [`record_document`]).
#[derive(Clone, Debug)]
pub struct Resolved {
    pub client: Client,
    pub document: Option<ClientMetadataDocument>,
}

/// Whether `client_id` names a metadata document (an https URL) rather
/// than a stored client. Stored ids are random base64url and never are.
pub fn is_document_id(client_id: &str) -> bool {
    client_id.starts_with("https://")
}

/// The client `client_id`: a metadata document through `cimd` (the
/// fetcher as used by this request's peer), otherwise the stored client.
/// `Ok(None)`: no such stored client.
pub async fn resolve(
    store: &Store,
    cimd: &CimdRequest<'_>,
    client_id: &str,
    now: OffsetDateTime,
) -> Result<Option<Resolved>, ClientLookupError> {
    if !is_document_id(client_id) {
        let client = find_stored(store, client_id, now).await?;
        return Ok(client.map(|client| Resolved {
            client,
            document: None,
        }));
    }
    let document = cimd.fetch(client_id, now).await.map_err(|err| match err {
        CimdError::Throttled(throttle) => ClientLookupError::Throttled(throttle),
        err => {
            tracing::info!(client_id, error = %err, "client metadata document refused");
            ClientLookupError::Document(plain_reason(&err))
        }
    })?;
    let Some(client) = document_client(&document) else {
        tracing::error!(client_id, "a document negotiated a shared-secret method");
        return Err(ClientLookupError::Document(
            "it offers no client authentication method Coop has".to_owned(),
        ));
    };
    Ok(Some(Resolved {
        client,
        document: Some(document),
    }))
}

/// A metadata document as a client, authenticating with the negotiated
/// method and refreshing like any other. Its keys stay in the document
/// ([`Resolved::document`]). `None` if the negotiated method needs a
/// secret, which a document never has (negotiation offers it only `none`
/// and `private_key_jwt`, so this does not happen).
pub fn document_client(document: &ClientMetadataDocument) -> Option<Client> {
    Some(Client {
        client_id: document.client_id.clone(),
        kind: ClientKind::MetadataDocument {
            document_host: document.document_host.clone(),
            auth: document_auth(document.auth_method)?,
        },
        name: document.client_name.clone(),
        redirect_uris: document.redirect_uris.clone(),
        may_refresh: true,
        native: false,
    })
}

/// A document's method, if it is one a document may use.
fn document_auth(method: AuthMethod) -> Option<DocumentAuth> {
    match method {
        AuthMethod::None => Some(DocumentAuth::None),
        AuthMethod::PrivateKeyJwt => Some(DocumentAuth::PrivateKeyJwt),
        AuthMethod::ClientSecretBasic | AuthMethod::ClientSecretPost => None,
    }
}

/// Stores (or refreshes) the copy of a document client that grants
/// reference and the consent and connected-apps pages read, and the
/// document's last good copy: from now on a known client relies on it, so
/// it is served while its host is down (`cimd::copies`), from the first
/// connection on.
pub async fn record_document(
    store: &Store,
    document: &ClientMetadataDocument,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    let jwks_uri = match &document.assertion_keys {
        Some(AssertionKeys {
            keys: ClientKeys::Uri(uri),
            ..
        }) => Some(uri.as_str()),
        _ => None,
    };
    let mut tx = store.write().await?;
    stored::upsert_metadata_document(
        &mut tx,
        &DocumentClient {
            client_id: &document.client_id,
            client_name: &document.client_name,
            redirect_uris: &document.redirect_uris,
            auth_method: document.auth_method,
            document_host: &document.document_host,
            fresh_until: document.fresh_until,
            jwks_uri,
        },
        now,
    )
    .await?;
    last_good_copies::save(
        &mut tx,
        CopyKind::Document,
        &document.client_id,
        &document.source.body,
        document.source.fetched_at,
    )
    .await?;
    tx.commit().await
}

/// What the person is told about an unusable document. Deliberately
/// coarse: the exact failure (an address refused by the SSRF guard, a name
/// that does not resolve, a TLS error) would tell whoever chose the URL
/// about Coop's network, so it is logged and not shown. A refused method
/// negotiation is shown in full: it names only what the document itself
/// says and what Coop advertises, and tells the client's author the fix.
fn plain_reason(err: &CimdError) -> String {
    if let CimdError::NoCommonAuthMethod(refusal) = err {
        return refusal.to_string();
    }
    let reason = match err {
        CimdError::NotHttpsUrl => "its client_id is not an https address Coop accepts",
        CimdError::ClientIdMismatch => "the document names another client_id than its own address",
        CimdError::SharedSecretAuth | CimdError::Invalid(_) | CimdError::InvalidKeySet(_) => {
            "the document is not a valid client description"
        }
        CimdError::Throttled(_) => "Coop cannot fetch the document right now",
        CimdError::NoCommonAuthMethod(_) => "it offers no client authentication method Coop has",
        CimdError::ForbiddenAddress(_)
        | CimdError::Resolve(_)
        | CimdError::Fetch(_)
        | CimdError::Status(_)
        | CimdError::Redirect
        | CimdError::TooLarge
        | CimdError::Timeout
        | CimdError::Settings(_) => "the document could not be fetched from its address",
    };
    reason.to_owned()
}

/// The stored client `client_id`, unless unknown or expired.
pub async fn find_stored(
    store: &Store,
    client_id: &str,
    now: OffsetDateTime,
) -> Result<Option<Client>, StoreError> {
    let Some(row) = stored::find(&mut store.read().await?, client_id).await? else {
        return Ok(None);
    };
    if is_expired_registration(&row, now) {
        return Ok(None);
    }
    Ok(from_row(row))
}

fn is_expired_registration(row: &ClientRow, now: OffsetDateTime) -> bool {
    row.kind == StoredKind::Dynamic
        && row.last_used_at.is_none()
        && row.created_at + UNUSED_REGISTRATION_TTL.whole_seconds() < now.unix_timestamp()
}

/// A stored row as a [`Client`]: the storage boundary, where the row's
/// kind, method and secret become one [`ClientKind`]. `None` (logged) if
/// the row is unusable: unreadable redirect URIs, a confidential client
/// without its secret's hash, a public one with one, a `private_key_jwt`
/// client without usable keys, a metadata-document client with a secret.
/// (A kind or method that is no word Coop knows does not get this far:
/// reading the row is a [`StoreError`].)
fn from_row(row: ClientRow) -> Option<Client> {
    let metadata: serde_json::Value = serde_json::from_str(&row.metadata).unwrap_or_default();
    let unusable = |why: &str| {
        tracing::error!(client_id = %row.client_id, "stored client {why}");
    };
    let Ok(redirect_uris) = serde_json::from_str::<Vec<String>>(&row.redirect_uris) else {
        unusable("has unreadable redirect URIs");
        return None;
    };
    let auth_method = row.token_endpoint_auth_method;
    let origin = match row.kind {
        StoredKind::Registered => Some(Origin::Registered),
        StoredKind::Dynamic => Some(Origin::Dynamic),
        StoredKind::MetadataDocument => None,
    };
    let kind = match (origin, auth_method, row.secret_hash) {
        (Some(origin), AuthMethod::None, None) => ClientKind::Public { origin },
        (
            Some(origin),
            AuthMethod::ClientSecretBasic | AuthMethod::ClientSecretPost,
            Some(hash),
        ) => ClientKind::Confidential {
            origin,
            method: if auth_method == AuthMethod::ClientSecretBasic {
                SecretMethod::Basic
            } else {
                SecretMethod::Post
            },
            secret_hash: hash,
        },
        (Some(origin), AuthMethod::PrivateKeyJwt, None) => {
            let Some(keys) = stored_assertion_keys(&metadata) else {
                unusable("is private_key_jwt without usable keys");
                return None;
            };
            ClientKind::PrivateKeyJwt { origin, keys }
        }
        // A document client's stored copy only names it: its keys are read
        // from the document at each use.
        (None, AuthMethod::None | AuthMethod::PrivateKeyJwt, None) => {
            ClientKind::MetadataDocument {
                document_host: metadata["document_host"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                auth: document_auth(auth_method)?,
            }
        }
        (_, method, hash) => {
            unusable(&format!(
                "is {} {} a secret hash",
                method.as_str(),
                if hash.is_some() { "with" } else { "without" }
            ));
            return None;
        }
    };
    let may_refresh = match metadata.get("grant_types").and_then(|g| g.as_array()) {
        Some(types) => types.iter().any(|t| t == "refresh_token"),
        None => true,
    };
    let native = metadata.get("application_type").and_then(|t| t.as_str()) == Some("native");
    Some(Client {
        client_id: row.client_id,
        kind,
        name: row.client_name,
        redirect_uris,
        may_refresh,
        native,
    })
}

/// The keys a `private_key_jwt` client registered (`jwks` or `jwks_uri`)
/// and its `token_endpoint_auth_signing_alg`, as kept in its metadata.
fn stored_assertion_keys(metadata: &serde_json::Value) -> Option<AssertionKeys> {
    let keys = match (metadata.get("jwks"), metadata.get("jwks_uri")) {
        (Some(set), None) => {
            ClientKeys::Inline(std::sync::Arc::new(key_set::from_value(set).ok()?))
        }
        (None, Some(uri)) => ClientKeys::Uri(uri.as_str()?.to_owned()),
        _ => return None,
    };
    let algorithm = match metadata.get("token_endpoint_auth_signing_alg") {
        None => None,
        Some(name) => Some(client_assertion::algorithm(name.as_str()?)?),
    };
    Some(AssertionKeys { keys, algorithm })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: &str, created_at: i64, last_used_at: Option<i64>) -> ClientRow {
        ClientRow {
            client_id: "c".into(),
            kind: StoredKind::parse(kind).unwrap(),
            client_name: "n".into(),
            redirect_uris: r#"["https://a.example/cb"]"#.into(),
            token_endpoint_auth_method: AuthMethod::None,
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
        // Exactly a day old: still usable (expired only once past it).
        assert!(!is_expired_registration(
            &row("dynamic", t - day, None),
            now
        ));
    }

    #[test]
    fn only_an_https_client_id_names_a_document() {
        assert!(is_document_id("https://app.example/client.json"));
        assert!(!is_document_id("http://app.example/client.json"));
        assert!(!is_document_id("q2vN0x-random"));
        assert!(!is_document_id("xhttps://app.example/"));
    }

    fn document(auth_method: AuthMethod) -> ClientMetadataDocument {
        ClientMetadataDocument {
            client_id: "https://app.example/client.json".into(),
            client_name: "App".into(),
            redirect_uris: vec!["https://app.example/cb".into()],
            document_host: "app.example".into(),
            auth: Default::default(),
            auth_method,
            assertion_keys: None,
            fresh_until: OffsetDateTime::UNIX_EPOCH,
            source: crate::oauth::cimd::Source {
                body: "{}".into(),
                fetched_at: OffsetDateTime::UNIX_EPOCH,
            },
        }
    }

    #[test]
    fn a_document_is_a_client_that_refreshes_and_never_holds_a_secret() {
        let client = document_client(&document(AuthMethod::None)).unwrap();
        assert_eq!(client.client_id, "https://app.example/client.json");
        assert_eq!(
            client.kind,
            ClientKind::MetadataDocument {
                document_host: "app.example".into(),
                auth: DocumentAuth::None,
            }
        );
        assert_eq!(client.name, "App");
        assert_eq!(
            client.redirect_uris,
            vec!["https://app.example/cb".to_owned()]
        );
        assert!(client.may_refresh);
        assert!(!client.native);
        let client = document_client(&document(AuthMethod::PrivateKeyJwt)).unwrap();
        assert!(matches!(
            client.kind,
            ClientKind::MetadataDocument {
                auth: DocumentAuth::PrivateKeyJwt,
                ..
            }
        ));
        for secret in [AuthMethod::ClientSecretBasic, AuthMethod::ClientSecretPost] {
            assert!(document_client(&document(secret)).is_none());
        }
    }

    #[test]
    fn an_unusable_document_is_explained_without_the_network_detail() {
        let fetch = "the document could not be fetched from its address";
        let invalid = "the document is not a valid client description";
        for (err, reason) in [
            (
                CimdError::NotHttpsUrl,
                "its client_id is not an https address Coop accepts",
            ),
            (
                CimdError::ClientIdMismatch,
                "the document names another client_id than its own address",
            ),
            (CimdError::SharedSecretAuth, invalid),
            (CimdError::Invalid("x".into()), invalid),
            (CimdError::InvalidKeySet("x".into()), invalid),
            (CimdError::ForbiddenAddress("10.0.0.1".into()), fetch),
            (CimdError::Resolve("x".into()), fetch),
            (CimdError::Fetch("x".into()), fetch),
            (CimdError::Status(404), fetch),
            (CimdError::Redirect, fetch),
            (CimdError::TooLarge, fetch),
            (CimdError::Timeout, fetch),
        ] {
            assert_eq!(plain_reason(&err), reason, "{err:?}");
        }
        let refusal = crate::oauth::client::NoCommonMethod {
            preferred: "tls_client_auth".into(),
            supported: "none".into(),
            offered: "none, private_key_jwt".into(),
        };
        assert_eq!(
            plain_reason(&CimdError::NoCommonAuthMethod(refusal.clone())),
            refusal.to_string()
        );
    }

    #[test]
    fn rows_become_clients() {
        let mut r = row("dynamic", 0, None);
        r.metadata = r#"{"grant_types":["authorization_code"]}"#.into();
        let c = from_row(r).unwrap();
        assert!(c.is_unverified());
        assert!(!c.may_refresh);
        assert!(!c.native);
        assert_eq!(c.redirect_uris, vec!["https://a.example/cb".to_owned()]);
        let mut r = row("dynamic", 0, None);
        r.metadata = r#"{"application_type":"native"}"#.into();
        let c = from_row(r).unwrap();
        assert!(c.native);
        // No grant_types registered: refreshing is the default.
        assert!(c.may_refresh);
        let mut r = row("dynamic", 0, None);
        r.metadata = r#"{"grant_types":["authorization_code","refresh_token"]}"#.into();
        assert!(from_row(r).unwrap().may_refresh);
        let mut r = row("dynamic", 0, None);
        r.redirect_uris = "not json".into();
        assert!(from_row(r).is_none());
        let mut r = row("metadata_document", 0, None);
        r.metadata = r#"{"document_host":"app.example"}"#.into();
        assert_eq!(
            from_row(r).unwrap().kind,
            ClientKind::MetadataDocument {
                document_host: "app.example".into(),
                auth: DocumentAuth::None,
            }
        );
    }

    #[test]
    fn a_row_becomes_one_kind_or_nothing() {
        let with = |kind: &str, method: &str, hash: Option<&str>| {
            let mut r = row(kind, 0, None);
            r.token_endpoint_auth_method = AuthMethod::parse(method).unwrap();
            r.secret_hash = hash.map(str::to_owned);
            from_row(r).map(|c| c.kind)
        };
        assert_eq!(
            with("registered", "client_secret_post", Some("h")),
            Some(ClientKind::Confidential {
                origin: Origin::Registered,
                method: SecretMethod::Post,
                secret_hash: "h".into(),
            })
        );
        assert_eq!(
            with("dynamic", "none", None),
            Some(ClientKind::Public {
                origin: Origin::Dynamic
            })
        );
        assert_eq!(
            with("metadata_document", "private_key_jwt", None),
            Some(ClientKind::MetadataDocument {
                document_host: String::new(),
                auth: DocumentAuth::PrivateKeyJwt,
            })
        );
        // What no kind can be: confidential without its secret, public with
        // one, private_key_jwt without keys, a document with a secret.
        for (kind, method, hash) in [
            ("registered", "client_secret_basic", None),
            ("dynamic", "client_secret_post", None),
            ("dynamic", "none", Some("h")),
            ("registered", "private_key_jwt", None),
            ("registered", "private_key_jwt", Some("h")),
            ("metadata_document", "client_secret_basic", None),
            ("metadata_document", "none", Some("h")),
        ] {
            assert_eq!(with(kind, method, hash), None, "{kind} {method} {hash:?}");
        }
        assert_eq!(
            with("dynamic", "client_secret_basic", Some("h")),
            Some(ClientKind::Confidential {
                origin: Origin::Dynamic,
                method: SecretMethod::Basic,
                secret_hash: "h".into(),
            })
        );
    }

    #[test]
    fn a_private_key_jwt_row_carries_its_keys_and_algorithm() {
        let with = |metadata: serde_json::Value| {
            let mut r = row("registered", 0, None);
            r.token_endpoint_auth_method = AuthMethod::PrivateKeyJwt;
            r.metadata = metadata.to_string();
            from_row(r).map(|c| c.kind)
        };
        let set = crate::oauth::cimd::key_set::tests::public_keys(&["k1"]);
        let Some(ClientKind::PrivateKeyJwt { origin, keys }) = with(serde_json::json!({
            "jwks": set, "token_endpoint_auth_signing_alg": "ES256"
        })) else {
            panic!("an inline key set makes a private_key_jwt client");
        };
        assert_eq!(origin, Origin::Registered);
        assert!(matches!(&keys.keys, ClientKeys::Inline(set) if set.keys.len() == 1));
        assert_eq!(keys.algorithm, Some(jsonwebtoken::Algorithm::ES256));
        assert_eq!(
            with(serde_json::json!({ "jwks_uri": "https://app.example/jwks" })),
            Some(ClientKind::PrivateKeyJwt {
                origin: Origin::Registered,
                keys: AssertionKeys {
                    keys: ClientKeys::Uri("https://app.example/jwks".into()),
                    algorithm: None,
                },
            })
        );
        for unusable in [
            serde_json::json!({ "jwks": set, "jwks_uri": "https://app.example/jwks" }),
            serde_json::json!({ "jwks": { "keys": [] } }),
            serde_json::json!({ "jwks_uri": 7 }),
            serde_json::json!({ "jwks_uri": "https://app.example/jwks",
                                "token_endpoint_auth_signing_alg": "HS256" }),
            serde_json::json!({ "jwks_uri": "https://app.example/jwks",
                                "token_endpoint_auth_signing_alg": 7 }),
        ] {
            assert_eq!(with(unusable.clone()), None, "{unusable}");
        }
    }
}
