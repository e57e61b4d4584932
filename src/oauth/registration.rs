//! Client registration: Dynamic Client Registration (RFC 7591) at
//! `/register`, and pre-registration from the command line.
//!
//! What `/register` accepts (threat 14, and MCP's "what real clients need"):
//! - `redirect_uris`: 1 to [`MAX_REDIRECT_URIS`], each https or http on a
//!   loopback host, no fragment, at most 2000 bytes, written in the
//!   canonical form the URL parser gives it (stored as such);
//! - `token_endpoint_auth_method`: `none` (the default: a client gets a
//!   secret only when it asks for one), `client_secret_basic` or
//!   `client_secret_post` (the secret is shown once and stored hashed), or
//!   `private_key_jwt` with its public keys as `jwks` (a key set) or
//!   `jwks_uri` (an https URL Coop fetches through the SSRF guard), and
//!   optionally `token_endpoint_auth_signing_alg` from
//!   [`client_assertion::SIGNING_ALGORITHM_NAMES`]; with
//!   `token_endpoint_auth_methods_supported` (OpenID Connect "RP Metadata
//!   Choices") the method is negotiated ([`negotiate`]) and the response
//!   says which;
//! - `grant_types` ⊆ {`authorization_code`, `refresh_token`} and including
//!   the first (default: both); `response_types` = [`code`];
//! - `client_name` (at most [`MAX_NAME_CHARS`] printable characters, none
//!   of them a bidirectional, zero-width or other invisible formatting
//!   character; it is shown on the consent page marked "unverified" and
//!   isolated in `<bdi>` on every page), `application_type`
//!   (`web` or `native`), `software_id`, `software_version`.
//!
//! Any other field is ignored and not echoed. The response echoes exactly
//! what was registered and contains no `null`. The body size and the rate
//! per network are limited by the HTTP layer.

use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::domain::ClientKind as StoredKind;
use crate::oauth::cimd::{fetch_url, key_set};
use crate::oauth::client::{AuthMethod, disguises_text, negotiate};
use crate::oauth::client_assertion;
use crate::oauth::error::OAuthError;
use crate::oauth::redirect_uri;
use crate::secrets::{self, ClientSecret};
use crate::storage::Store;
use crate::storage::clients::{self, NewClient};

pub const MAX_REDIRECT_URIS: usize = 10;
pub const MAX_NAME_CHARS: usize = 100;
/// Short free-text fields (`software_id`, `software_version`).
pub const MAX_TEXT_CHARS: usize = 200;

/// The name shown for a client that registered without one.
pub const UNNAMED: &str = "Unnamed app";

/// A registration that passed every check.
#[derive(Clone, Debug, PartialEq)]
pub struct Registration {
    pub client_name: Option<String>,
    pub redirect_uris: Vec<String>,
    pub auth_method: AuthMethod,
    pub grant_types: Vec<&'static str>,
    /// The other registered fields, echoed as sent.
    pub extra: Map<String, Value>,
}

fn metadata_error(why: impl Into<String>) -> OAuthError {
    OAuthError::InvalidClientMetadata(why.into())
}

/// The registration body's declared media type must be `application/json`
/// (any parameters, such as `charset`, allowed). `None`: no `Content-Type`.
pub fn check_media_type(content_type: Option<&str>) -> Result<(), OAuthError> {
    let essence = content_type
        .and_then(|v| v.split(';').next())
        .map(str::trim);
    if essence.is_some_and(|e| e.eq_ignore_ascii_case("application/json")) {
        return Ok(());
    }
    Err(OAuthError::UnsupportedMediaType(
        "a registration must be sent as application/json".into(),
    ))
}

/// Parses the body as JSON, refusing a member named twice in any object
/// (which `serde_json::Value` would silently resolve to the last one, so
/// that two readers of one body could disagree on what was registered).
pub fn parse_body(body: &[u8]) -> Result<Value, OAuthError> {
    serde_json::from_slice::<UniqueKeys>(body)
        .map(|parsed| parsed.0)
        .map_err(|_| metadata_error("the body must be one JSON object naming each member once"))
}

/// A JSON value whose objects each name a member at most once.
struct UniqueKeys(Value);

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueKeysVisitor).map(UniqueKeys)
    }
}

struct UniqueKeysVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueKeysVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(UniqueKeys(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if members.contains_key(&key) {
                return Err(serde::de::Error::custom("a member is named twice"));
            }
            let UniqueKeys(value) = map.next_value()?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

/// Checks a registration request body.
pub fn validate(body: &Value) -> Result<Registration, OAuthError> {
    let Some(fields) = body.as_object() else {
        return Err(metadata_error("the body must be a JSON object"));
    };

    let redirect_uris = match fields.get("redirect_uris") {
        Some(Value::Array(uris)) if !uris.is_empty() => uris,
        Some(Value::Array(_)) | None => {
            return Err(OAuthError::InvalidRedirectUri(
                "redirect_uris must list at least one URI".into(),
            ));
        }
        Some(_) => {
            return Err(OAuthError::InvalidRedirectUri(
                "redirect_uris must be an array of strings".into(),
            ));
        }
    };
    if redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(OAuthError::InvalidRedirectUri(format!(
            "at most {MAX_REDIRECT_URIS} redirect URIs"
        )));
    }
    let mut uris: Vec<String> = Vec::with_capacity(redirect_uris.len());
    for uri in redirect_uris {
        let Some(uri) = uri.as_str() else {
            return Err(OAuthError::InvalidRedirectUri(
                "redirect_uris must be an array of strings".into(),
            ));
        };
        let canonical = redirect_uri::check_registrable(uri)
            .map_err(|why| OAuthError::InvalidRedirectUri(format!("{uri:.80}: {why}")))?;
        if !uris.contains(&canonical) {
            uris.push(canonical);
        }
    }

    let mut extra = Map::new();
    let auth_method = auth_method(fields, &mut extra)?;

    let grant_types = match fields.get("grant_types") {
        None => vec!["authorization_code", "refresh_token"],
        Some(value) => {
            let listed = string_list(value, "grant_types", 4)?;
            let mut types = Vec::new();
            for grant in listed {
                let known = match grant {
                    "authorization_code" => "authorization_code",
                    "refresh_token" => "refresh_token",
                    other => {
                        return Err(metadata_error(format!(
                            "grant type {other:.40} is not supported"
                        )));
                    }
                };
                if !types.contains(&known) {
                    types.push(known);
                }
            }
            if !types.contains(&"authorization_code") {
                return Err(metadata_error(
                    "grant_types must include authorization_code",
                ));
            }
            types
        }
    };

    if let Some(value) = fields.get("response_types")
        && string_list(value, "response_types", 4)?
            .iter()
            .any(|t| *t != "code")
    {
        return Err(metadata_error("response_types must be [\"code\"]"));
    }

    let client_name = match fields.get("client_name") {
        None => None,
        Some(Value::String(name)) => Some(text(name, "client_name", MAX_NAME_CHARS)?),
        Some(_) => return Err(metadata_error("client_name must be a string")),
    };

    for key in ["software_id", "software_version"] {
        match fields.get(key) {
            None => {}
            Some(Value::String(value)) => {
                extra.insert(
                    key.to_owned(),
                    Value::String(text(value, key, MAX_TEXT_CHARS)?),
                );
            }
            Some(_) => return Err(metadata_error(format!("{key} must be a string"))),
        }
    }
    match fields.get("application_type") {
        None => {}
        Some(Value::String(t)) if t == "web" || t == "native" => {
            extra.insert("application_type".into(), Value::String(t.clone()));
        }
        Some(_) => return Err(metadata_error("application_type must be web or native")),
    }

    Ok(Registration {
        client_name,
        redirect_uris: uris,
        auth_method,
        grant_types,
        extra,
    })
}

/// The method negotiated from what the client offers, and, for
/// `private_key_jwt`, its keys and algorithm added to `extra` (stored and
/// echoed). Keys sent with another method are not kept.
fn auth_method(
    fields: &Map<String, Value>,
    extra: &mut Map<String, Value>,
) -> Result<AuthMethod, OAuthError> {
    let preferred = match fields.get("token_endpoint_auth_method") {
        None => None,
        Some(Value::String(raw)) => Some(raw.as_str()),
        Some(_) => {
            return Err(metadata_error(
                "token_endpoint_auth_method must be a string",
            ));
        }
    };
    let supported = match fields.get("token_endpoint_auth_methods_supported") {
        None => None,
        Some(value) => Some(
            string_list(value, "token_endpoint_auth_methods_supported", 16)?
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>(),
        ),
    };
    let mut keys = Map::new();
    match (fields.get("jwks"), fields.get("jwks_uri")) {
        (Some(_), Some(_)) => {
            return Err(metadata_error("send jwks or jwks_uri, not both"));
        }
        (Some(set), None) => {
            key_set::from_value(set).map_err(|e| metadata_error(format!("jwks: {e}")))?;
            keys.insert("jwks".into(), set.clone());
        }
        (None, Some(Value::String(uri))) => {
            fetch_url::parse_key_set_url(uri).map_err(|_| {
                metadata_error("jwks_uri must be a canonical https URL Coop can fetch")
            })?;
            keys.insert("jwks_uri".into(), Value::String(uri.clone()));
        }
        (None, Some(_)) => return Err(metadata_error("jwks_uri must be a string")),
        (None, None) => {}
    }
    match fields.get("token_endpoint_auth_signing_alg") {
        None => {}
        Some(Value::String(alg)) if client_assertion::algorithm(alg).is_some() => {
            keys.insert(
                "token_endpoint_auth_signing_alg".into(),
                Value::String(alg.clone()),
            );
        }
        Some(_) => {
            return Err(metadata_error(format!(
                "token_endpoint_auth_signing_alg must be one of {}",
                client_assertion::SIGNING_ALGORITHM_NAMES.join(", ")
            )));
        }
    }
    // private_key_jwt is offered to a client that sent its keys.
    let with_keys = [
        AuthMethod::None,
        AuthMethod::ClientSecretBasic,
        AuthMethod::ClientSecretPost,
        AuthMethod::PrivateKeyJwt,
    ];
    let offered = if keys.contains_key("jwks") || keys.contains_key("jwks_uri") {
        &with_keys[..]
    } else {
        &with_keys[..3]
    };
    let method = negotiate(preferred, supported.as_deref(), offered, AuthMethod::None).map_err(
        |refusal| {
            let hint = if offered.contains(&AuthMethod::PrivateKeyJwt) {
                ""
            } else {
                " (private_key_jwt needs jwks or jwks_uri)"
            };
            metadata_error(format!("{refusal}{hint}"))
        },
    )?;
    if method == AuthMethod::PrivateKeyJwt {
        extra.extend(keys);
    }
    Ok(method)
}

fn string_list<'a>(value: &'a Value, field: &str, max: usize) -> Result<Vec<&'a str>, OAuthError> {
    let Some(items) = value.as_array() else {
        return Err(metadata_error(format!(
            "{field} must be an array of strings"
        )));
    };
    if items.len() > max {
        return Err(metadata_error(format!("{field} lists too many values")));
    }
    items
        .iter()
        .map(|v| {
            v.as_str()
                .ok_or_else(|| metadata_error(format!("{field} must be an array of strings")))
        })
        .collect()
}

/// A short printable text: trimmed, bounded, and nothing that could
/// disguise it ([`disguises_text`]: control, bidirectional and zero-width
/// characters), so the name a person reads is the name that was sent.
fn text(raw: &str, field: &str, max: usize) -> Result<String, OAuthError> {
    let trimmed = raw.trim();
    if trimmed.is_empty() || trimmed.chars().count() > max || trimmed.chars().any(disguises_text) {
        return Err(metadata_error(format!(
            "{field} must be 1 to {max} printable characters"
        )));
    }
    Ok(trimmed.to_owned())
}

/// What a registration returns: the new id, the secret (shown this once),
/// and the registered metadata to echo.
#[derive(Debug)]
pub struct Registered {
    pub client_id: String,
    pub client_secret: Option<ClientSecret>,
    pub issued_at: i64,
    /// The registered fields, as the response echoes them.
    pub metadata: Map<String, Value>,
}

impl Registered {
    /// The RFC 7591 §3.2.1 response body.
    pub fn response(&self) -> Value {
        let mut body = Map::new();
        body.insert("client_id".into(), Value::String(self.client_id.clone()));
        body.insert("client_id_issued_at".into(), Value::from(self.issued_at));
        if let Some(secret) = &self.client_secret {
            body.insert(
                "client_secret".into(),
                Value::String(secret.expose().to_owned()),
            );
            // 0: the secret does not expire.
            body.insert("client_secret_expires_at".into(), Value::from(0));
        }
        body.extend(self.metadata.clone());
        Value::Object(body)
    }
}

/// Stores a self-registered client.
pub async fn register(
    store: &Store,
    registration: &Registration,
    now: OffsetDateTime,
) -> Result<Registered, OAuthError> {
    let mut metadata = registration.extra.clone();
    metadata.insert(
        "redirect_uris".into(),
        Value::from(registration.redirect_uris.clone()),
    );
    metadata.insert(
        "token_endpoint_auth_method".into(),
        Value::from(registration.auth_method.as_str()),
    );
    metadata.insert(
        "grant_types".into(),
        Value::from(registration.grant_types.clone()),
    );
    metadata.insert("response_types".into(), Value::from(vec!["code"]));
    if let Some(name) = &registration.client_name {
        metadata.insert("client_name".into(), Value::String(name.clone()));
    }
    store_client(
        store,
        StoredKind::Dynamic,
        registration.client_name.as_deref().unwrap_or(UNNAMED),
        &registration.redirect_uris,
        registration.auth_method,
        metadata,
        now,
    )
    .await
}

/// How a pre-registered client authenticates.
#[derive(Clone, Debug, PartialEq)]
pub enum PreregisteredAuth {
    /// `none`: PKCE only.
    Public,
    /// `client_secret_basic` (or `_post`): a secret, shown once.
    Secret,
    /// `private_key_jwt`, with the key set given (`--jwks-file`).
    KeySet(Value),
    /// `private_key_jwt`, with the keys published at a URL (`--jwks-uri`).
    KeySetUri(String),
}

/// What the operator pre-registers: how the client authenticates, and
/// whether it may call `/introspect` (a resource server or gateway: then
/// never public, and redirect URIs become optional).
#[derive(Clone, Debug, PartialEq)]
pub struct Preregistration {
    pub auth: PreregisteredAuth,
    pub introspection: bool,
}

/// `coop admin client add`: a client the operator vouches for.
/// Confidential clients authenticate with `client_secret_basic` (or
/// `_post`), or with `private_key_jwt` and the keys given.
pub async fn register_preregistered(
    store: &Store,
    name: &str,
    redirect_uris: &[String],
    kind: &Preregistration,
    now: OffsetDateTime,
) -> Result<Registered, OAuthError> {
    let name = text(name, "name", MAX_NAME_CHARS)?;
    if redirect_uris.is_empty() && !kind.introspection {
        return Err(OAuthError::InvalidRedirectUri(
            "at least one --redirect-uri is required".into(),
        ));
    }
    let redirect_uris = redirect_uris
        .iter()
        .map(|uri| {
            redirect_uri::check_registrable(uri)
                .map_err(|why| OAuthError::InvalidRedirectUri(format!("{uri:?}: {why}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut metadata = Map::new();
    let method = match &kind.auth {
        // An introspecting client always proves who it is.
        PreregisteredAuth::Public if kind.introspection => AuthMethod::ClientSecretBasic,
        PreregisteredAuth::Public => AuthMethod::None,
        PreregisteredAuth::Secret => AuthMethod::ClientSecretBasic,
        PreregisteredAuth::KeySet(set) => {
            key_set::from_value(set).map_err(|e| metadata_error(format!("--jwks-file: {e}")))?;
            metadata.insert("jwks".into(), set.clone());
            AuthMethod::PrivateKeyJwt
        }
        PreregisteredAuth::KeySetUri(uri) => {
            fetch_url::parse_key_set_url(uri).map_err(|_| {
                metadata_error("--jwks-uri must be a canonical https URL Coop can fetch")
            })?;
            metadata.insert("jwks_uri".into(), Value::String(uri.clone()));
            AuthMethod::PrivateKeyJwt
        }
    };
    metadata.insert("client_name".into(), Value::String(name.clone()));
    metadata.insert("redirect_uris".into(), Value::from(redirect_uris.clone()));
    metadata.insert(
        "token_endpoint_auth_method".into(),
        Value::from(method.as_str()),
    );
    if kind.introspection {
        metadata.insert("introspection".into(), Value::Bool(true));
    }
    store_client(
        store,
        StoredKind::Registered,
        &name,
        &redirect_uris,
        method,
        metadata,
        now,
    )
    .await
}

async fn store_client(
    store: &Store,
    kind: StoredKind,
    name: &str,
    redirect_uris: &[String],
    method: AuthMethod,
    metadata: Map<String, Value>,
    now: OffsetDateTime,
) -> Result<Registered, OAuthError> {
    let client_id = secrets::random_token(16);
    let secret = method
        .uses_secret()
        .then(|| ClientSecret::new(secrets::random_token(32)));
    let secret_hash = secret.as_ref().map(|s| secrets::hash_secret(s.expose()));
    let stored = Value::Object(metadata.clone());
    let mut tx = store.write().await?;
    clients::insert(
        &mut tx,
        &NewClient {
            client_id: &client_id,
            kind,
            client_name: name,
            redirect_uris,
            auth_method: method,
            secret_hash: secret_hash.as_deref(),
            metadata: &stored,
        },
        now,
    )
    .await?;
    // Only the operator's registration can make an introspecting client:
    // `/register` keeps no field it does not know.
    if kind == StoredKind::Registered && metadata.get("introspection") == Some(&Value::Bool(true)) {
        clients::allow_introspection(&mut tx, &client_id).await?;
    }
    tx.commit().await?;
    Ok(Registered {
        client_id,
        client_secret: secret,
        issued_at: now.unix_timestamp(),
        metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_public_client_is_the_default_and_unknown_fields_are_dropped() {
        let r = validate(&json!({
            "redirect_uris": ["http://127.0.0.1:3000/cb", "http://127.0.0.1:3000/cb"],
            "client_name": "  Claude  ",
            "logo_uri": "https://evil.example/logo.png",
            "scope": "farm:read",
            "application_type": "native",
            "whatever": {"nested": true}
        }))
        .unwrap();
        assert_eq!(r.auth_method, AuthMethod::None);
        assert_eq!(r.redirect_uris, vec!["http://127.0.0.1:3000/cb".to_owned()]);
        assert_eq!(r.client_name.as_deref(), Some("Claude"));
        assert_eq!(r.grant_types, vec!["authorization_code", "refresh_token"]);
        assert_eq!(r.extra.len(), 1);
        assert_eq!(r.extra["application_type"], "native");
    }

    #[test]
    fn refused_registrations_name_the_field() {
        let cases = [
            (json!([]), "invalid_client_metadata"),
            (json!({}), "invalid_redirect_uri"),
            (json!({"redirect_uris": []}), "invalid_redirect_uri"),
            (
                json!({"redirect_uris": "https://a.example/cb"}),
                "invalid_redirect_uri",
            ),
            (json!({"redirect_uris": [1]}), "invalid_redirect_uri"),
            (
                json!({"redirect_uris": ["http://a.example/cb"]}),
                "invalid_redirect_uri",
            ),
            (
                json!({"redirect_uris": ["myapp://cb"]}),
                "invalid_redirect_uri",
            ),
            (
                json!({"redirect_uris": (0..11).map(|i| format!("https://a.example/cb{i}")).collect::<Vec<_>>()}),
                "invalid_redirect_uri",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "grant_types": ["implicit"]}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "grant_types": ["refresh_token"]}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "response_types": ["token"]}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "client_name": "x".repeat(101)}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "client_name": "a\u{0007}b"}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "client_name": "Good\u{202E}ppa"}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "client_name": "Cla\u{200B}ude"}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "client_name": "\u{2067}Claude\u{2069}"}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": [" https://a.example/cb"]}),
                "invalid_redirect_uri",
            ),
            (
                json!({"redirect_uris": ["https:///cb"]}),
                "invalid_redirect_uri",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "application_type": "desktop"}),
                "invalid_client_metadata",
            ),
            (
                json!({"redirect_uris": ["https://a.example/cb"], "software_id": "s".repeat(201)}),
                "invalid_client_metadata",
            ),
        ];
        for (body, code) in cases {
            assert_eq!(validate(&body).unwrap_err().code(), code, "{body}");
        }
    }

    /// Keys make `private_key_jwt` possible and are kept only when it is
    /// the method chosen; the signing algorithm must be one Coop verifies.
    #[test]
    fn keys_are_kept_only_for_private_key_jwt() {
        let key = crate::testing::client_keys::ClientKey::es256("k1");
        let jwks = json!({"keys": [key.public]});
        let uri = "https://app.example/jwks.json";
        let redirect = json!(["https://app.example/cb"]);
        for keys in [json!({"jwks": jwks}), json!({"jwks_uri": uri})] {
            let mut body = keys.clone();
            body["redirect_uris"] = redirect.clone();
            body["token_endpoint_auth_method"] = json!("private_key_jwt");
            body["token_endpoint_auth_signing_alg"] = json!("ES256");
            let r = validate(&body).unwrap();
            assert_eq!(r.auth_method, AuthMethod::PrivateKeyJwt, "{keys}");
            for (name, value) in keys.as_object().unwrap() {
                assert_eq!(&r.extra[name], value);
            }
            assert_eq!(r.extra["token_endpoint_auth_signing_alg"], "ES256");

            // Another method chosen: the keys are not kept.
            body["token_endpoint_auth_method"] = json!("client_secret_basic");
            let r = validate(&body).unwrap();
            assert_eq!(r.auth_method, AuthMethod::ClientSecretBasic);
            assert!(r.extra.is_empty(), "{:?}", r.extra);

            for alg in ["HS256", "none", "ES512"] {
                body["token_endpoint_auth_method"] = json!("private_key_jwt");
                body["token_endpoint_auth_signing_alg"] = json!(alg);
                assert_eq!(
                    validate(&body).unwrap_err().code(),
                    "invalid_client_metadata",
                    "{alg}"
                );
            }
        }
    }

    /// Each limit admits its maximum and refuses one more: a limit off by
    /// one would refuse a client that registers at the edge.
    #[test]
    fn each_limit_admits_its_maximum_and_no_more() {
        let uris: Vec<String> = (0..MAX_REDIRECT_URIS)
            .map(|i| format!("https://a.example/cb{i}"))
            .collect();
        let methods: Vec<&str> = std::iter::repeat_n("client_secret_post", 15)
            .chain(["none"])
            .collect();
        let at_the_limits = json!({
            "redirect_uris": uris,
            "client_name": "n".repeat(MAX_NAME_CHARS),
            "software_id": "s".repeat(MAX_TEXT_CHARS),
            "software_version": "v".repeat(MAX_TEXT_CHARS),
            "grant_types": ["authorization_code", "refresh_token", "authorization_code", "refresh_token"],
            "response_types": ["code", "code", "code", "code"],
            "token_endpoint_auth_methods_supported": methods,
            "application_type": "web",
        });
        let r = validate(&at_the_limits).unwrap();
        assert_eq!(r.redirect_uris, uris);
        assert_eq!(r.client_name.map(|n| n.len()), Some(MAX_NAME_CHARS));
        assert_eq!(r.grant_types, vec!["authorization_code", "refresh_token"]);
        assert_eq!(r.auth_method, AuthMethod::ClientSecretPost);
        assert_eq!(r.extra["software_id"], "s".repeat(MAX_TEXT_CHARS));
        assert_eq!(r.extra["software_version"], "v".repeat(MAX_TEXT_CHARS));
        assert_eq!(r.extra["application_type"], "web");

        let one_more = |field: &str, value: Value| {
            let mut body = at_the_limits.clone();
            body[field] = value;
            validate(&body).unwrap_err().code()
        };
        let mut too_many_uris = uris.clone();
        too_many_uris.push("https://a.example/one-more".into());
        assert_eq!(
            one_more("redirect_uris", json!(too_many_uris)),
            "invalid_redirect_uri"
        );
        for (field, value) in [
            ("client_name", json!("n".repeat(MAX_NAME_CHARS + 1))),
            ("client_name", json!("   ")),
            ("software_version", json!("v".repeat(MAX_TEXT_CHARS + 1))),
            ("software_version", json!(7)),
            ("grant_types", json!(vec!["authorization_code"; 5])),
            ("response_types", json!(vec!["code"; 5])),
            (
                "token_endpoint_auth_methods_supported",
                json!(vec!["none"; 17]),
            ),
        ] {
            assert_eq!(
                one_more(field, value.clone()),
                "invalid_client_metadata",
                "{field}: {value}"
            );
        }
    }

    #[test]
    fn only_json_with_each_member_named_once_is_read() {
        for ok in [
            Some("application/json"),
            Some("application/json; charset=utf-8"),
            Some("Application/JSON"),
        ] {
            assert_eq!(check_media_type(ok), Ok(()), "{ok:?}");
        }
        for bad in [
            None,
            Some("text/plain"),
            Some("text/plain; charset=application/json"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("application/jsonx"),
            Some(""),
        ] {
            assert_eq!(
                check_media_type(bad).unwrap_err().code(),
                "invalid_request",
                "{bad:?}"
            );
        }
        let parsed =
            parse_body(br#"{"a": [1, -2, 3.5, "x", null, true, {"b": {}}], "c": {"d": 1}}"#)
                .unwrap();
        assert_eq!(
            parsed,
            json!({"a": [1, -2, 3.5, "x", null, true, {"b": {}}], "c": {"d": 1}})
        );
        for bad in [
            &br#"{"redirect_uris": ["https://a.example/cb"], "redirect_uris": ["https://b.example/cb"]}"#[..],
            br#"{"client_name": "A", "x": {"k": 1, "k": 2}}"#,
            br#"[{"k": 1, "k": 1}]"#,
            b"{",
            b"not json",
            br#"{"a": 1} {"b": 2}"#,
        ] {
            assert_eq!(
                parse_body(bad).unwrap_err().code(),
                "invalid_client_metadata",
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn the_response_echoes_what_was_registered_without_nulls() {
        let registered = Registered {
            client_id: "id".into(),
            client_secret: Some("s".into()),
            issued_at: 5,
            metadata: json!({"redirect_uris": ["https://a.example/cb"]})
                .as_object()
                .unwrap()
                .clone(),
        };
        let body = registered.response();
        assert_eq!(body["client_secret_expires_at"], 0);
        assert_eq!(body["redirect_uris"][0], "https://a.example/cb");
        assert!(!body.to_string().contains("null"));
    }
}
