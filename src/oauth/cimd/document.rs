//! What a fetched metadata document must say before Coop uses it.
//!
//! The document is untrusted input from whoever controls the `client_id`
//! URL. It must be a JSON object whose `client_id` is the URL it was fetched
//! from, character for character (the draft's "simple string comparison":
//! no normalisation, so one document cannot speak for another URL). Its
//! `client_name` is shown on the consent page, so it is bounded and free of
//! control and bidirectional-override characters that could disguise it.
//! Its `redirect_uris` are where codes are sent, so each is an absolute
//! https URI, or http on a loopback host for native apps (RFC 8252), with no
//! fragment and no user information.
//!
//! A document client has no way to receive a shared secret, so a document
//! that asks for a secret-based `token_endpoint_auth_method` or carries a
//! `client_secret` is refused. Coop authenticates document clients as public
//! clients only, so any method other than `none` is refused too rather than
//! silently downgraded. Unknown members are ignored.

use serde_json::{Map, Value};
use url::Url;

use super::CimdError;

/// The longest `client_name` accepted, in characters.
pub const MAX_CLIENT_NAME_CHARS: usize = 200;
/// The most redirect URIs one document may list.
pub const MAX_REDIRECT_URIS: usize = 20;
/// The longest redirect URI accepted, in bytes.
pub const MAX_REDIRECT_URI_BYTES: usize = 2000;

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
    Ok(ValidDocument {
        client_name: client_name(&members)?,
        redirect_uris: redirect_uris(&members)?,
    })
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
        None => Ok(()),
        Some(Value::String(method)) if method == "none" => Ok(()),
        Some(Value::String(method)) if SHARED_SECRET_METHODS.contains(&method.as_str()) => {
            Err(CimdError::SharedSecretAuth)
        }
        Some(Value::String(method)) => Err(CimdError::Invalid(format!(
            "token_endpoint_auth_method {method:?} is not supported; only \"none\""
        ))),
        Some(_) => Err(CimdError::Invalid(
            "token_endpoint_auth_method is not a string".to_owned(),
        )),
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
            "client_name contains control or bidirectional formatting characters".to_owned(),
        ));
    }
    Ok(name.to_owned())
}

/// Characters that could make a name render as something it is not.
fn disguises_text(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
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
        let many: Vec<String> = (0..=MAX_REDIRECT_URIS)
            .map(|i| format!("https://app.example/cb{i}"))
            .collect();
        invalid_because(&with("redirect_uris", json!(many)), "more than");
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
        invalid_because(
            &with("token_endpoint_auth_method", json!("private_key_jwt")),
            "not supported",
        );
        invalid_because(
            &with("token_endpoint_auth_method", json!(1)),
            "not a string",
        );
    }
}
