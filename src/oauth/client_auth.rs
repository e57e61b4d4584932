//! Client authentication at `/token` and `/revoke` (RFC 6749 §2.3).
//!
//! A public client (`none`) names itself with `client_id` and proves
//! nothing else: PKCE and refresh-token rotation protect it. A confidential
//! client sends its secret either in the HTTP Basic header
//! (`client_secret_basic`, where `client_id` may appear only in the header)
//! or in the body (`client_secret_post`). Using two methods at once, or a
//! body `client_id` that disagrees with the header, is refused. The method
//! presented must be the one the client registered ([`check_method`]): a
//! `client_secret_basic` client sending its secret in the body, a
//! `client_secret_post` client using the header, a public client sending a
//! secret, or any client but a `private_key_jwt` one sending an assertion
//! (and the reverse), is refused like a wrong secret (threat 29: a secret
//! leaked through the channel the client never uses is still no use).
//! Secrets are compared as SHA-256 hashes in constant time.
//!
//! A `private_key_jwt` client sends `client_assertion_type` (exactly
//! [`ASSERTION_TYPE`]) and `client_assertion`, a JWT it signed, with or
//! without `client_id` (RFC 7523 §3: the assertion's `sub` names it); the
//! assertion is checked by [`client_assertion::verify`] against the
//! client's keys, with Coop's issuer and token endpoint as audiences and
//! the store remembering its `jti`.
//!
//! A metadata document client (its `client_id` an https URL) uses the
//! method negotiated from its document (`none` or `private_key_jwt`): its
//! document is fetched, or taken from the cache, at each request.

use time::OffsetDateTime;

use crate::domain::Issuer;
use crate::oauth::cimd::CimdRequest;
use crate::oauth::client::{AssertionKeys, AuthMethod, Client, ClientKind, DocumentAuth};
use crate::oauth::client_assertion::{
    self, ASSERTION_TYPE, AssertionError, ClientKeySource, Expected, KeySetError,
};
use crate::oauth::clients::{self, ClientLookupError};
use crate::oauth::error::OAuthError;
use crate::oauth::params::Params;
use crate::secrets::{self, ClientAssertion, ClientSecret};
use crate::storage::Store;

/// What the request presented.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Presented {
    pub client_id: String,
    pub secret: Option<ClientSecret>,
    /// Whether the credentials came in the Basic header.
    pub basic: bool,
    /// A client assertion (`client_assertion`, of the JWT type).
    pub assertion: Option<ClientAssertion>,
}

impl Presented {
    /// The `token_endpoint_auth_method` these credentials amount to.
    pub fn method(&self) -> AuthMethod {
        if self.assertion.is_some() {
            return AuthMethod::PrivateKeyJwt;
        }
        match (self.basic, &self.secret) {
            (true, _) => AuthMethod::ClientSecretBasic,
            (false, Some(_)) => AuthMethod::ClientSecretPost,
            (false, None) => AuthMethod::None,
        }
    }
}

/// Collects the client's credentials from the Basic header (already
/// decoded; `Err` if it was malformed) and the body.
pub fn presented(
    basic: Option<Result<(String, ClientSecret), ()>>,
    form: &Params,
) -> Result<Presented, OAuthError> {
    let repeated = |name| OAuthError::invalid_request(format!("{name} is repeated"));
    let form_id = form.single("client_id").map_err(repeated)?;
    let form_secret = form.single("client_secret").map_err(repeated)?;
    let assertion = presented_assertion(form)?;
    if assertion.is_some() && (basic.is_some() || form_secret.is_some()) {
        return Err(OAuthError::invalid_request(
            "use one client authentication method, not two",
        ));
    }
    match basic {
        Some(Err(())) => Err(OAuthError::invalid_client(
            "malformed Basic authorization header",
            true,
        )),
        Some(Ok((id, secret))) => {
            if form_secret.is_some() {
                return Err(OAuthError::invalid_request(
                    "use one client authentication method, not two",
                ));
            }
            if form_id.is_some_and(|form_id| form_id != id) {
                return Err(OAuthError::invalid_request(
                    "client_id in the body differs from the Authorization header",
                ));
            }
            Ok(Presented {
                client_id: id,
                secret: Some(secret),
                basic: true,
                assertion: None,
            })
        }
        None => {
            // Without `client_id`, the assertion's own claim names the
            // client to look up; verifying it checks that claim.
            let id = form_id
                .map(str::to_owned)
                .or_else(|| {
                    assertion
                        .as_ref()
                        .and_then(|jwt| client_assertion::claimed_client_id(jwt.expose()))
                })
                .ok_or_else(|| {
                    OAuthError::invalid_client("no client_id and no client authentication", false)
                })?;
            Ok(Presented {
                client_id: id,
                secret: form_secret.map(ClientSecret::from),
                basic: false,
                assertion,
            })
        }
    }
}

/// `client_assertion`, when the body carries one: both parameters or
/// neither, and the type exactly the JWT one (RFC 7521 §4.2).
fn presented_assertion(form: &Params) -> Result<Option<ClientAssertion>, OAuthError> {
    let repeated = |name| OAuthError::invalid_request(format!("{name} is repeated"));
    let kind = form.single("client_assertion_type").map_err(repeated)?;
    let assertion = form.single("client_assertion").map_err(repeated)?;
    match (kind, assertion) {
        (None, None) => Ok(None),
        (Some(kind), Some(assertion)) if kind == ASSERTION_TYPE => Ok(Some(assertion.into())),
        (Some(_), Some(_)) => Err(OAuthError::invalid_client(
            "client_assertion_type is not the JWT bearer type",
            false,
        )),
        (Some(_), None) => Err(OAuthError::invalid_request(
            "client_assertion_type without client_assertion",
        )),
        (None, Some(_)) => Err(OAuthError::invalid_request(
            "client_assertion without client_assertion_type",
        )),
    }
}

/// Authenticates the presented credentials against the client: stored, or
/// described by its metadata document (fetched, or cached, through `cimd`;
/// a document that cannot be used is `invalid_client`, like an unknown id).
pub async fn authenticate(
    store: &Store,
    cimd: &CimdRequest<'_>,
    issuer: &Issuer,
    presented: &Presented,
    now: OffsetDateTime,
) -> Result<Client, OAuthError> {
    let refuse = |why: &str| OAuthError::invalid_client(why, presented.basic);
    let resolved = match clients::resolve(store, cimd, &presented.client_id, now).await {
        Ok(Some(resolved)) => resolved,
        Ok(None) => return Err(refuse("unknown client")),
        Err(ClientLookupError::Document(why)) => return Err(refuse(&why)),
        Err(ClientLookupError::Throttled(throttle)) => return Err(throttle.into()),
        Err(ClientLookupError::Store(err)) => return Err(err.into()),
    };
    let client = resolved.client;
    check_method(&client, presented)?;
    let assertion_keys = match &client.kind {
        ClientKind::Confidential { secret_hash, .. } => {
            return match &presented.secret {
                Some(secret)
                    if secrets::constant_time_eq(
                        secret_hash,
                        &secrets::hash_secret(secret.expose()),
                    ) =>
                {
                    Ok(client)
                }
                _ => Err(refuse("wrong or missing client secret")),
            };
        }
        ClientKind::Public { .. }
        | ClientKind::MetadataDocument {
            auth: DocumentAuth::None,
            ..
        } => {
            return match presented.secret {
                None => Ok(client),
                Some(_) => Err(refuse("a public client has no secret to send")),
            };
        }
        ClientKind::PrivateKeyJwt { keys, .. } => Some(keys),
        // A document client's keys are its document's, as just resolved.
        ClientKind::MetadataDocument {
            auth: DocumentAuth::PrivateKeyJwt,
            ..
        } => resolved
            .document
            .as_ref()
            .and_then(|document| document.assertion_keys.as_ref()),
    };
    authenticate_assertion(store, cimd, issuer, &client, assertion_keys, presented, now).await?;
    Ok(client)
}

/// `private_key_jwt` (the method already checked): the assertion must pass
/// [`client_assertion::verify`] against the client's keys.
async fn authenticate_assertion(
    store: &Store,
    cimd: &CimdRequest<'_>,
    issuer: &Issuer,
    client: &Client,
    keys: Option<&AssertionKeys>,
    presented: &Presented,
    now: OffsetDateTime,
) -> Result<(), OAuthError> {
    let refuse = |why: &str| OAuthError::invalid_client(why, false);
    let (Some(assertion), Some(keys)) = (&presented.assertion, keys) else {
        return Err(refuse("no client assertion, or no keys to check it with"));
    };
    let token_endpoint = issuer.url("/token");
    let audiences = [issuer.as_str(), token_endpoint.as_str()];
    let expected = Expected {
        client_id: &client.client_id,
        audiences: &audiences,
        algorithm: keys.algorithm,
    };
    let source = ClientKeySource {
        keys: &keys.keys,
        cimd,
    };
    match client_assertion::verify(assertion.expose(), &expected, &source, now, store).await {
        Ok(_) => Ok(()),
        Err(AssertionError::KeySet(KeySetError::Throttled(throttle))) => Err(throttle.into()),
        Err(AssertionError::Store(err)) => Err(err.into()),
        Err(err) => Err(refuse(&format!(
            "client assertion of {} refused: {err}",
            client.client_id
        ))),
    }
}

/// The client authenticates with the method it registered, and no other
/// (RFC 7591 §2 `token_endpoint_auth_method`; RFC 7009 §2.2.1 for
/// `/revoke`): `invalid_client`, with the Basic challenge when the request
/// tried Basic.
pub fn check_method(client: &Client, presented: &Presented) -> Result<(), OAuthError> {
    let used = presented.method();
    if used == client.auth_method() {
        return Ok(());
    }
    Err(OAuthError::invalid_client(
        format!(
            "the client is registered for {} and authenticated with {}",
            client.auth_method().as_str(),
            used.as_str()
        ),
        presented.basic,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(body: &str) -> Params {
        Params::parse(body.as_bytes())
    }

    fn client(auth_method: AuthMethod) -> Client {
        Client {
            client_id: "id".into(),
            ..Client::with_method(auth_method)
        }
    }

    #[test]
    fn only_the_registered_method_is_accepted() {
        let basic = presented(Some(Ok(("id".into(), "s".into()))), &form("")).unwrap();
        let post = presented(None, &form("client_id=id&client_secret=s")).unwrap();
        let none = presented(None, &form("client_id=id")).unwrap();
        let methods = [
            (AuthMethod::ClientSecretBasic, &basic),
            (AuthMethod::ClientSecretPost, &post),
            (AuthMethod::None, &none),
        ];
        for (registered, _) in methods {
            for (used, credentials) in methods {
                let result = check_method(&client(registered), credentials);
                if registered == used {
                    assert_eq!(result, Ok(()), "{registered:?}");
                } else {
                    let err = result.unwrap_err();
                    assert_eq!(err.code(), "invalid_client", "{registered:?} {used:?}");
                    assert_eq!(
                        err,
                        OAuthError::invalid_client(
                            format!(
                                "the client is registered for {} and authenticated with {}",
                                registered.as_str(),
                                used.as_str()
                            ),
                            credentials.basic
                        )
                    );
                }
            }
        }
    }

    #[test]
    fn an_assertion_comes_with_its_exact_type_alone_and_may_name_the_client() {
        use base64::Engine;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let claims = URL_SAFE_NO_PAD.encode(r#"{"sub":"https://app.example/c.json"}"#);
        let jwt = format!("e30.{claims}.c2ln");
        let kind = "urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer";
        let body = format!("client_assertion_type={kind}&client_assertion={jwt}");
        let found = presented(None, &form(&body)).unwrap();
        assert_eq!(found.client_id, "https://app.example/c.json");
        assert_eq!(
            found.assertion.as_ref().map(ClientAssertion::expose),
            Some(jwt.as_str())
        );
        assert_eq!(found.method(), AuthMethod::PrivateKeyJwt);
        let named = presented(None, &form(&format!("client_id=other&{body}"))).unwrap();
        assert_eq!(
            named.client_id, "other",
            "the verifier then refuses the mismatch"
        );
        let code = |basic, body: &str| presented(basic, &form(body)).unwrap_err().code();
        let basic = Some(Ok(("id".to_owned(), "s".into())));
        assert_eq!(code(basic, &body), "invalid_request");
        for refused in [
            format!("{body}&client_secret=s"),
            format!("client_assertion={jwt}"),
            format!("client_assertion_type={kind}"),
            format!("{body}&client_assertion=x"),
        ] {
            assert_eq!(code(None, &refused), "invalid_request", "{refused}");
        }
        let saml = "urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Asaml2-bearer";
        assert_eq!(
            code(
                None,
                &format!("client_assertion_type={saml}&client_assertion={jwt}")
            ),
            "invalid_client"
        );
    }

    #[test]
    fn credentials_come_from_the_header_or_the_body_never_both() {
        let basic = Some(Ok(("id".to_owned(), "s3cret".into())));
        assert_eq!(
            presented(basic.clone(), &form("grant_type=x")).unwrap(),
            Presented {
                client_id: "id".into(),
                secret: Some("s3cret".into()),
                basic: true,
                assertion: None,
            }
        );
        assert!(presented(basic.clone(), &form("client_id=id")).is_ok());
        assert_eq!(
            presented(basic.clone(), &form("client_id=other"))
                .unwrap_err()
                .code(),
            "invalid_request"
        );
        assert_eq!(
            presented(basic, &form("client_secret=s3cret"))
                .unwrap_err()
                .code(),
            "invalid_request"
        );
        assert_eq!(
            presented(None, &form("client_id=id&client_secret=s"))
                .unwrap()
                .secret
                .as_ref()
                .map(ClientSecret::expose),
            Some("s")
        );
        assert_eq!(
            presented(None, &form("grant_type=x")).unwrap_err(),
            OAuthError::invalid_client("no client_id and no client authentication", false)
        );
        assert_eq!(
            presented(Some(Err(())), &form("")).unwrap_err().code(),
            "invalid_client"
        );
        assert_eq!(
            presented(None, &form("client_id=a&client_id=b"))
                .unwrap_err()
                .code(),
            "invalid_request"
        );
    }
}
