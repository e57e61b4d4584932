//! What a fetched metadata document must say before Coop uses it.
//!
//! The document is untrusted input from whoever controls the `client_id`
//! URL. It must be a JSON object whose `client_id` is the URL it was fetched
//! from, character for character (the draft's "simple string comparison":
//! no normalisation, so one document cannot speak for another URL). Its
//! `client_name` is shown on the consent page, so it is bounded and free of
//! control, bidirectional and zero-width characters that could disguise it.
//! Its `redirect_uris` are where codes are sent, so each is an absolute
//! https URI, or http on a loopback host for native apps (RFC 8252), with no
//! fragment and no user information.
//!
//! A document client has no way to receive a shared secret, so a document
//! that asks for a secret-based `token_endpoint_auth_method` or carries a
//! `client_secret` is refused. Unknown members are ignored.
//!
//! The members that describe how a client authenticates at the token
//! endpoint are parsed and kept ([`AuthMetadata`]):
//! `token_endpoint_auth_method`, `token_endpoint_auth_methods_supported`
//! (OpenID Connect "RP Metadata Choices"), `token_endpoint_auth_signing_alg`,
//! and the client's keys as a `jwks_uri` (a URL the fetcher accepts) or an
//! inline `jwks` (a key set, [`super::key_set`]), never both (RFC 7591 §2).
//! A malformed one refuses the document. From them the method is
//! negotiated ([`crate::oauth::client::negotiate`]): Coop offers a document
//! client `none` and, when the document gives keys and names no algorithm
//! outside [`crate::oauth::client_assertion::SIGNING_ALGORITHMS`],
//! `private_key_jwt`. A document that offers only methods Coop lacks is
//! refused here, before anything is stored, with both lists in the log.

use jsonwebtoken::jwk::JwkSet;
use serde_json::{Map, Value};
use url::Url;

use super::{CimdError, fetch_url, key_set};
use crate::oauth::client::disguises_text;
use crate::oauth::client::{AssertionKeys, AuthMethod, ClientKeys, negotiate};
use crate::oauth::client_assertion;

/// The longest `client_name` accepted, in characters.
pub const MAX_CLIENT_NAME_CHARS: usize = 200;
/// The most redirect URIs one document may list.
pub const MAX_REDIRECT_URIS: usize = 20;
/// The longest redirect URI accepted, in bytes.
pub const MAX_REDIRECT_URI_BYTES: usize = 2000;
/// The most entries `token_endpoint_auth_methods_supported` may list.
pub const MAX_AUTH_METHODS: usize = 16;
/// The longest method or algorithm name accepted, in bytes.
pub const MAX_NAME_BYTES: usize = 64;

/// Authentication methods built on a secret shared with the server.
const SHARED_SECRET_METHODS: &[&str] = &[
    "client_secret_basic",
    "client_secret_post",
    "client_secret_jwt",
];

/// The parts of a document Coop keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidDocument {
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub auth: AuthMetadata,
    /// The method negotiated from `auth`.
    pub auth_method: AuthMethod,
    /// With `private_key_jwt`, the keys its assertions are checked with.
    pub assertion_keys: Option<AssertionKeys>,
}

/// How the document says its client authenticates at the token endpoint,
/// each member as the document gave it (absent: `None`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthMetadata {
    /// The client's preferred method (never a shared-secret one: those
    /// refuse the document).
    pub token_endpoint_auth_method: Option<String>,
    /// Every method the client can use, in its order of preference.
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// The JWS algorithm its assertions are signed with.
    pub token_endpoint_auth_signing_alg: Option<String>,
    /// Where its public keys are published (fetch with
    /// [`super::CimdRequest::key_set`]).
    pub jwks_uri: Option<String>,
    /// Its public keys, inline.
    pub jwks: Option<JwkSet>,
}

/// Parses and checks the body fetched from `url`.
pub fn validate(body: &[u8], url: &str) -> Result<ValidDocument, CimdError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| CimdError::Invalid(format!("not JSON: {e}")))?;
    let Value::Object(members) = value else {
        return Err(CimdError::Invalid("not a JSON object".to_owned()));
    };
    check_client_id(&members, url)?;
    check_no_shared_secret(&members)?;
    let client_name = client_name(&members)?;
    let redirect_uris = redirect_uris(&members)?;
    let auth = auth_metadata(&members)?;
    let (auth_method, assertion_keys) = negotiated(&auth)?;
    Ok(ValidDocument {
        client_name,
        redirect_uris,
        auth,
        auth_method,
        assertion_keys,
    })
}

/// The method Coop and the document agree on, and for `private_key_jwt`
/// the keys. Coop offers `private_key_jwt` only to a document that gives
/// keys and, if it names its signing algorithm, one Coop verifies.
fn negotiated(auth: &AuthMetadata) -> Result<(AuthMethod, Option<AssertionKeys>), CimdError> {
    let keys = match (&auth.jwks, &auth.jwks_uri) {
        (Some(set), _) => Some(ClientKeys::Inline(std::sync::Arc::new(set.clone()))),
        (None, Some(uri)) => Some(ClientKeys::Uri(uri.clone())),
        (None, None) => None,
    };
    let algorithm = auth
        .token_endpoint_auth_signing_alg
        .as_deref()
        .map(client_assertion::algorithm);
    let assertion_keys = match (keys, algorithm) {
        (Some(keys), None) => Some(AssertionKeys {
            keys,
            algorithm: None,
        }),
        (Some(keys), Some(Some(algorithm))) => Some(AssertionKeys {
            keys,
            algorithm: Some(algorithm),
        }),
        // No keys, or an algorithm Coop does not verify.
        _ => None,
    };
    let offered: &[AuthMethod] = if assertion_keys.is_some() {
        &[AuthMethod::None, AuthMethod::PrivateKeyJwt]
    } else {
        &[AuthMethod::None]
    };
    let method = negotiate(
        auth.token_endpoint_auth_method.as_deref(),
        auth.token_endpoint_auth_methods_supported.as_deref(),
        offered,
        AuthMethod::None,
    )
    .map_err(CimdError::NoCommonAuthMethod)?;
    let keys = (method == AuthMethod::PrivateKeyJwt)
        .then_some(assertion_keys)
        .flatten();
    Ok((method, keys))
}

fn auth_metadata(members: &Map<String, Value>) -> Result<AuthMetadata, CimdError> {
    let jwks_uri = match members.get("jwks_uri") {
        None => None,
        Some(Value::String(uri)) => {
            fetch_url::parse_key_set_url(uri).map_err(|_| {
                CimdError::Invalid(
                    "jwks_uri is not a canonical https URL Coop can fetch".to_owned(),
                )
            })?;
            Some(uri.clone())
        }
        Some(_) => return Err(CimdError::Invalid("jwks_uri is not a string".to_owned())),
    };
    let jwks = match members.get("jwks") {
        None => None,
        Some(value) => Some(key_set::from_value(value).map_err(|err| match err {
            CimdError::InvalidKeySet(why) => CimdError::Invalid(format!("jwks: {why}")),
            other => other,
        })?),
    };
    if jwks.is_some() && jwks_uri.is_some() {
        return Err(CimdError::Invalid(
            "jwks and jwks_uri are both present".to_owned(),
        ));
    }
    let methods = match members.get("token_endpoint_auth_methods_supported") {
        None => None,
        Some(Value::Array(list)) => {
            if list.len() > MAX_AUTH_METHODS {
                return Err(CimdError::Invalid(format!(
                    "token_endpoint_auth_methods_supported lists more than {MAX_AUTH_METHODS} methods"
                )));
            }
            // Each entry is `Some(name)` or an error: collecting gives
            // `Some(names)` or the first error.
            list.iter()
                .map(|entry| name(Some(entry), "token_endpoint_auth_methods_supported"))
                .collect::<Result<Option<Vec<String>>, _>>()?
        }
        Some(_) => {
            return Err(CimdError::Invalid(
                "token_endpoint_auth_methods_supported is not an array".to_owned(),
            ));
        }
    };
    Ok(AuthMetadata {
        token_endpoint_auth_method: name(
            members.get("token_endpoint_auth_method"),
            "token_endpoint_auth_method",
        )?,
        token_endpoint_auth_methods_supported: methods,
        token_endpoint_auth_signing_alg: name(
            members.get("token_endpoint_auth_signing_alg"),
            "token_endpoint_auth_signing_alg",
        )?,
        jwks_uri,
        jwks,
    })
}

/// A method or algorithm name: a non-empty, bounded string of visible ASCII.
fn name(value: Option<&Value>, member: &str) -> Result<Option<String>, CimdError> {
    let refuse = |why: &str| Err(CimdError::Invalid(format!("{member} {why}")));
    match value {
        None => Ok(None),
        Some(Value::String(name)) => {
            if name.is_empty() || name.len() > MAX_NAME_BYTES {
                return refuse(&format!(
                    "holds a name that is empty or longer than {MAX_NAME_BYTES} bytes"
                ));
            }
            if !name.bytes().all(|b| b.is_ascii_graphic()) {
                return refuse("holds a name that is not plain ASCII");
            }
            Ok(Some(name.clone()))
        }
        Some(_) => refuse("holds something that is not a string"),
    }
}

fn check_client_id(members: &Map<String, Value>, url: &str) -> Result<(), CimdError> {
    match members.get("client_id") {
        None => Err(CimdError::Invalid("client_id is missing".to_owned())),
        Some(Value::String(id)) if id == url => Ok(()),
        Some(Value::String(_)) => Err(CimdError::ClientIdMismatch),
        Some(_) => Err(CimdError::Invalid("client_id is not a string".to_owned())),
    }
}

fn check_no_shared_secret(members: &Map<String, Value>) -> Result<(), CimdError> {
    if members.contains_key("client_secret") || members.contains_key("client_secret_expires_at") {
        return Err(CimdError::SharedSecretAuth);
    }
    match members.get("token_endpoint_auth_method") {
        Some(Value::String(method)) if SHARED_SECRET_METHODS.contains(&method.as_str()) => {
            Err(CimdError::SharedSecretAuth)
        }
        // Any other name is negotiated (and a malformed one refused) later.
        _ => Ok(()),
    }
}

fn client_name(members: &Map<String, Value>) -> Result<String, CimdError> {
    let name = match members.get("client_name") {
        None => return Err(CimdError::Invalid("client_name is missing".to_owned())),
        Some(Value::String(name)) => name.trim(),
        Some(_) => return Err(CimdError::Invalid("client_name is not a string".to_owned())),
    };
    if name.is_empty() {
        return Err(CimdError::Invalid("client_name is empty".to_owned()));
    }
    if name.chars().count() > MAX_CLIENT_NAME_CHARS {
        return Err(CimdError::Invalid(format!(
            "client_name is longer than {MAX_CLIENT_NAME_CHARS} characters"
        )));
    }
    if name.chars().any(disguises_text) {
        return Err(CimdError::Invalid(
            "client_name contains control, bidirectional or invisible formatting characters"
                .to_owned(),
        ));
    }
    Ok(name.to_owned())
}

fn redirect_uris(members: &Map<String, Value>) -> Result<Vec<String>, CimdError> {
    let list = match members.get("redirect_uris") {
        None => return Err(CimdError::Invalid("redirect_uris is missing".to_owned())),
        Some(Value::Array(list)) => list,
        Some(_) => {
            return Err(CimdError::Invalid(
                "redirect_uris is not an array".to_owned(),
            ));
        }
    };
    if list.is_empty() {
        return Err(CimdError::Invalid("redirect_uris is empty".to_owned()));
    }
    if list.len() > MAX_REDIRECT_URIS {
        return Err(CimdError::Invalid(format!(
            "more than {MAX_REDIRECT_URIS} redirect_uris"
        )));
    }
    list.iter()
        .map(|entry| match entry {
            Value::String(uri) => check_redirect_uri(uri).map(|()| uri.clone()),
            _ => Err(CimdError::Invalid(
                "a redirect_uri is not a string".to_owned(),
            )),
        })
        .collect()
}

fn check_redirect_uri(raw: &str) -> Result<(), CimdError> {
    let refuse = |why: &str| Err(CimdError::Invalid(format!("redirect_uri {raw:?} {why}")));
    if raw.len() > MAX_REDIRECT_URI_BYTES {
        return Err(CimdError::Invalid(format!(
            "a redirect_uri is longer than {MAX_REDIRECT_URI_BYTES} bytes"
        )));
    }
    let Ok(uri) = Url::parse(raw) else {
        return refuse("is not an absolute URI");
    };
    if uri.fragment().is_some() {
        return refuse("has a fragment");
    }
    if !uri.username().is_empty() || uri.password().is_some() {
        return refuse("carries user information");
    }
    if !matches!(uri.scheme(), "https" | "http") {
        return refuse("is neither https nor loopback http");
    }
    let Some(host) = uri.host_str() else {
        return refuse("has no host");
    };
    if uri.scheme() == "http" && !matches!(host, "localhost" | "127.0.0.1" | "[::1]") {
        return refuse("is http on a host that is not loopback");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const URL: &str = "https://app.example/oauth/client.json";

    fn good() -> Value {
        json!({
            "client_id": URL,
            "client_name": "Example App",
            "redirect_uris": ["https://app.example/callback", "http://127.0.0.1/cb"],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "logo_uri": "https://app.example/logo.png"
        })
    }

    fn check(doc: &Value) -> Result<ValidDocument, CimdError> {
        validate(doc.to_string().as_bytes(), URL)
    }

    fn with(key: &str, value: Value) -> Value {
        let mut doc = good();
        doc[key] = value;
        doc
    }

    fn without(key: &str) -> Value {
        let mut doc = good();
        doc.as_object_mut().unwrap().remove(key);
        doc
    }

    fn invalid_because(doc: &Value, part: &str) {
        match check(doc) {
            Err(CimdError::Invalid(why)) => assert!(why.contains(part), "{why} / {part}"),
            other => panic!("expected Invalid({part}), got {other:?}"),
        }
    }

    #[test]
    fn a_good_document_is_kept() {
        let doc = check(&good()).unwrap();
        assert_eq!(doc.client_name, "Example App");
        assert_eq!(
            doc.redirect_uris,
            vec!["https://app.example/callback", "http://127.0.0.1/cb"]
        );
        assert_eq!(
            doc.auth,
            AuthMetadata {
                token_endpoint_auth_method: Some("none".to_owned()),
                ..AuthMetadata::default()
            }
        );
        assert_eq!(doc.auth_method, AuthMethod::None);
        assert_eq!(doc.assertion_keys, None);
    }

    /// The members of ChatGPT's published document that describe its
    /// authentication, with `none` preferred.
    fn choices(doc: &mut Value) {
        doc["token_endpoint_auth_methods_supported"] = json!(["none", "private_key_jwt"]);
        doc["token_endpoint_auth_signing_alg"] = json!("RS256");
        doc["jwks_uri"] = json!("https://app.example/.well-known/jwks.json");
    }

    #[test]
    fn the_authentication_members_are_kept_as_given() {
        let mut doc = good();
        choices(&mut doc);
        let auth = check(&doc).unwrap().auth;
        assert_eq!(auth.token_endpoint_auth_method.as_deref(), Some("none"));
        assert_eq!(
            auth.token_endpoint_auth_methods_supported,
            Some(vec!["none".to_owned(), "private_key_jwt".to_owned()])
        );
        assert_eq!(
            auth.token_endpoint_auth_signing_alg.as_deref(),
            Some("RS256")
        );
        assert_eq!(
            auth.jwks_uri.as_deref(),
            Some("https://app.example/.well-known/jwks.json")
        );
        assert_eq!(auth.jwks, None);

        let auth = check(&without("token_endpoint_auth_method")).unwrap().auth;
        assert_eq!(auth, AuthMetadata::default(), "absent members stay absent");
    }

    #[test]
    fn inline_keys_are_read_as_a_key_set() {
        let keys = crate::oauth::cimd::key_set::tests::public_keys(&["k1", "k2"]);
        let auth = check(&with("jwks", keys)).unwrap().auth;
        let jwks = auth.jwks.unwrap();
        assert!(jwks.find("k1").is_some() && jwks.find("k2").is_some());
        invalid_because(
            &with("jwks", json!({"keys": []})),
            "jwks: the key set holds no keys",
        );
        invalid_because(
            &with("jwks", json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]})),
            "jwks: a key is symmetric",
        );
        invalid_because(&with("jwks", json!("keys")), "jwks: not a JSON object");
    }

    #[test]
    fn keys_are_given_one_way_only() {
        let mut doc = good();
        choices(&mut doc);
        doc["jwks"] = crate::oauth::cimd::key_set::tests::public_keys(&["k1"]);
        invalid_because(&doc, "jwks and jwks_uri are both present");
    }

    #[test]
    fn a_jwks_uri_must_be_a_url_the_fetcher_accepts() {
        for bad in [
            "http://app.example/jwks.json",
            "https://APP.example/jwks.json",
            "https://app.example/jwks.json#k",
            "/jwks.json",
        ] {
            invalid_because(
                &with("jwks_uri", json!(bad)),
                "jwks_uri is not a canonical https URL",
            );
        }
        invalid_because(
            &with("jwks_uri", json!(["https://app.example/j"])),
            "jwks_uri is not a string",
        );
    }

    #[test]
    fn malformed_method_and_algorithm_members_refuse_the_document() {
        let member = "token_endpoint_auth_methods_supported";
        invalid_because(&with(member, json!("none")), "is not an array");
        invalid_because(&with(member, json!(["none", 7])), "not a string");
        invalid_because(&with(member, json!([""])), "empty");
        invalid_because(&with(member, json!(["pri vate"])), "plain ASCII");
        let most: Vec<String> = (1..=MAX_AUTH_METHODS).map(|i| format!("m{i}")).collect();
        let kept = check(&with(member, json!(most))).unwrap().auth;
        assert_eq!(
            kept.token_endpoint_auth_methods_supported.map(|m| m.len()),
            Some(MAX_AUTH_METHODS)
        );
        let many: Vec<String> = (0..=MAX_AUTH_METHODS).map(|i| format!("m{i}")).collect();
        invalid_because(&with(member, json!(many)), "more than");
        let empty = check(&with(member, json!([]))).unwrap().auth;
        assert_eq!(
            empty.token_endpoint_auth_methods_supported,
            Some(Vec::new())
        );

        let member = "token_endpoint_auth_signing_alg";
        invalid_because(&with(member, json!(256)), "not a string");
        let longest = "A".repeat(MAX_NAME_BYTES);
        let kept = check(&with(member, json!(longest))).unwrap().auth;
        assert_eq!(kept.token_endpoint_auth_signing_alg, Some(longest));
        invalid_because(
            &with(member, json!("A".repeat(MAX_NAME_BYTES + 1))),
            "longer than",
        );
        invalid_because(&with(member, json!("ES256\n")), "plain ASCII");
    }

    /// ChatGPT's published document: `private_key_jwt` preferred, `none`
    /// offered, RS256, a `jwks_uri`.
    fn chatgpt() -> Value {
        let mut doc = good();
        choices(&mut doc);
        doc["token_endpoint_auth_method"] = json!("private_key_jwt");
        doc
    }

    fn no_common_method(doc: &Value) -> crate::oauth::client::NoCommonMethod {
        match check(doc) {
            Err(CimdError::NoCommonAuthMethod(refusal)) => refusal,
            other => panic!("expected NoCommonAuthMethod, got {other:?}"),
        }
    }

    #[test]
    fn chatgpts_document_gets_private_key_jwt_with_its_keys() {
        let doc = check(&chatgpt()).unwrap();
        assert_eq!(doc.auth_method, AuthMethod::PrivateKeyJwt);
        assert_eq!(
            doc.assertion_keys,
            Some(AssertionKeys {
                keys: ClientKeys::Uri("https://app.example/.well-known/jwks.json".into()),
                algorithm: Some(jsonwebtoken::Algorithm::RS256),
            })
        );
        // Inline keys serve as well.
        let mut inline = chatgpt();
        inline.as_object_mut().unwrap().remove("jwks_uri");
        inline["jwks"] = crate::oauth::cimd::key_set::tests::public_keys(&["k1"]);
        let doc = check(&inline).unwrap();
        assert!(matches!(
            doc.assertion_keys.unwrap().keys,
            ClientKeys::Inline(set) if set.find("k1").is_some()
        ));
        // Naming no algorithm: any Coop verifies, checked per assertion.
        let mut unnamed = chatgpt();
        unnamed
            .as_object_mut()
            .unwrap()
            .remove("token_endpoint_auth_signing_alg");
        let doc = check(&unnamed).unwrap();
        assert_eq!(doc.auth_method, AuthMethod::PrivateKeyJwt);
        assert_eq!(
            doc.assertion_keys,
            Some(AssertionKeys {
                keys: ClientKeys::Uri("https://app.example/.well-known/jwks.json".into()),
                algorithm: None,
            })
        );
    }

    #[test]
    fn without_usable_keys_the_next_method_the_document_offers_is_used() {
        // An algorithm Coop does not verify: private_key_jwt is not offered.
        let mut doc = chatgpt();
        doc["token_endpoint_auth_signing_alg"] = json!("ES512");
        let valid = check(&doc).unwrap();
        assert_eq!(valid.auth_method, AuthMethod::None);
        assert_eq!(valid.assertion_keys, None);
        // No keys at all.
        let mut doc = chatgpt();
        doc.as_object_mut().unwrap().remove("jwks_uri");
        assert_eq!(check(&doc).unwrap().auth_method, AuthMethod::None);
        // The client prefers none although it could sign.
        let mut doc = chatgpt();
        doc["token_endpoint_auth_method"] = json!("none");
        let valid = check(&doc).unwrap();
        assert_eq!(valid.auth_method, AuthMethod::None);
        assert_eq!(valid.assertion_keys, None);
    }

    #[test]
    fn a_document_offering_only_methods_coop_lacks_is_refused_naming_both_lists() {
        let mut doc = chatgpt();
        doc["token_endpoint_auth_methods_supported"] =
            json!(["private_key_jwt", "tls_client_auth"]);
        doc.as_object_mut().unwrap().remove("jwks_uri");
        let refusal = no_common_method(&doc);
        assert_eq!(refusal.preferred, "\"private_key_jwt\"");
        assert_eq!(
            refusal.supported,
            "\"private_key_jwt\", \"tls_client_auth\""
        );
        assert_eq!(refusal.offered, "\"none\"");
        let refusal = no_common_method(&with(
            "token_endpoint_auth_method",
            json!("tls_client_auth"),
        ));
        assert_eq!(refusal.supported, "nothing");
    }

    #[test]
    fn the_auth_method_may_be_absent() {
        assert!(check(&without("token_endpoint_auth_method")).is_ok());
    }

    #[test]
    fn the_body_must_be_a_json_object() {
        assert!(matches!(
            validate(b"not json", URL),
            Err(CimdError::Invalid(_))
        ));
        invalid_because(&json!(["client_id"]), "object");
        invalid_because(&json!("x"), "object");
    }

    #[test]
    fn client_id_must_equal_the_url_exactly() {
        for other in [
            "https://app.example/oauth/client.json/",
            "https://APP.example/oauth/client.json",
            "https://app.example:443/oauth/client.json",
            "https://app.example/oauth/other.json",
            "https://evil.example/oauth/client.json",
        ] {
            assert!(
                matches!(
                    check(&with("client_id", json!(other))),
                    Err(CimdError::ClientIdMismatch)
                ),
                "{other}"
            );
        }
        invalid_because(&without("client_id"), "client_id is missing");
        invalid_because(&with("client_id", json!(7)), "client_id is not a string");
    }

    #[test]
    fn client_name_is_required_non_empty_and_bounded() {
        invalid_because(&without("client_name"), "client_name is missing");
        invalid_because(&with("client_name", json!("")), "empty");
        invalid_because(&with("client_name", json!("   ")), "empty");
        invalid_because(&with("client_name", json!(["x"])), "not a string");
        let longest = "n".repeat(MAX_CLIENT_NAME_CHARS);
        assert!(check(&with("client_name", json!(longest))).is_ok());
        let too_long = "n".repeat(MAX_CLIENT_NAME_CHARS + 1);
        invalid_because(&with("client_name", json!(too_long)), "longer");
        invalid_because(
            &with("client_name", json!("Good\u{202E}ppa")),
            "bidirectional",
        );
        invalid_because(&with("client_name", json!("Good\nApp")), "control");
    }

    #[test]
    fn redirect_uris_are_required_and_non_empty() {
        invalid_because(&without("redirect_uris"), "redirect_uris is missing");
        invalid_because(&with("redirect_uris", json!([])), "empty");
        invalid_because(
            &with("redirect_uris", json!("https://app.example/cb")),
            "not an array",
        );
        invalid_because(&with("redirect_uris", json!([1])), "not a string");
        let most: Vec<String> = (1..=MAX_REDIRECT_URIS)
            .map(|i| format!("https://app.example/cb{i}"))
            .collect();
        let kept = check(&with("redirect_uris", json!(most))).unwrap();
        assert_eq!(kept.redirect_uris, most);
        let many: Vec<String> = (0..=MAX_REDIRECT_URIS)
            .map(|i| format!("https://app.example/cb{i}"))
            .collect();
        invalid_because(&with("redirect_uris", json!(many)), "more than");
    }

    #[test]
    fn a_redirect_uri_may_be_as_long_as_the_limit_and_no_longer() {
        let prefix = "https://app.example/cb?state=";
        let longest = format!(
            "{prefix}{}",
            "s".repeat(MAX_REDIRECT_URI_BYTES - prefix.len())
        );
        assert_eq!(longest.len(), MAX_REDIRECT_URI_BYTES);
        let kept = check(&with("redirect_uris", json!([longest]))).unwrap();
        assert_eq!(kept.redirect_uris, std::slice::from_ref(&longest));
        invalid_because(
            &with("redirect_uris", json!([format!("{longest}s")])),
            "longer than",
        );
    }

    #[test]
    fn redirect_uris_are_https_or_loopback_http() {
        for ok in [
            "https://app.example/cb",
            "https://app.example:8443/cb?x=1",
            "http://127.0.0.1/cb",
            "http://127.0.0.1:43123/cb",
            "http://[::1]:8080/cb",
            "http://localhost:3000/callback",
        ] {
            assert!(check(&with("redirect_uris", json!([ok]))).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("/relative/cb", "absolute"),
            ("http://app.example/cb", "not loopback"),
            ("http://10.0.0.1/cb", "not loopback"),
            ("javascript:alert(1)", "neither"),
            ("com.example.app:/cb", "neither"),
            ("https://app.example/cb#frag", "fragment"),
            ("https://user@app.example/cb", "user information"),
        ] {
            invalid_because(
                &with("redirect_uris", json!(["https://app.example/ok", bad])),
                why,
            );
        }
    }

    #[test]
    fn shared_secret_authentication_is_refused() {
        for method in SHARED_SECRET_METHODS {
            assert!(
                matches!(
                    check(&with("token_endpoint_auth_method", json!(method))),
                    Err(CimdError::SharedSecretAuth)
                ),
                "{method}"
            );
        }
        assert!(matches!(
            check(&with("client_secret", json!("s3cret"))),
            Err(CimdError::SharedSecretAuth)
        ));
        assert!(matches!(
            check(&with("client_secret_expires_at", json!(0))),
            Err(CimdError::SharedSecretAuth)
        ));
    }

    #[test]
    fn other_auth_methods_are_refused_not_downgraded() {
        // Preferred alone, with nothing to verify it by: no fallback to none.
        no_common_method(&with(
            "token_endpoint_auth_method",
            json!("private_key_jwt"),
        ));
        invalid_because(
            &with("token_endpoint_auth_method", json!(1)),
            "not a string",
        );
    }
}
