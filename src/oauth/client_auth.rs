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
//! `client_secret_post` client using the header, or a public client
//! sending a secret, is refused like a wrong secret (threat 29: a secret
//! leaked through the channel the client never uses is still no use).
//! Secrets are compared as SHA-256 hashes in constant time. A metadata
//! document client (its `client_id` an https URL) is always public: its
//! document is fetched, or taken from the cache, at each request.

use time::OffsetDateTime;

use crate::oauth::cimd::CimdRequest;
use crate::oauth::client::{AuthMethod, Client};
use crate::oauth::clients::{self, ClientLookupError};
use crate::oauth::error::OAuthError;
use crate::oauth::params::Params;
use crate::secrets;
use crate::storage::Store;

/// What the request presented.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Presented {
    pub client_id: String,
    pub secret: Option<String>,
    /// Whether the credentials came in the Basic header.
    pub basic: bool,
}

impl Presented {
    /// The `token_endpoint_auth_method` these credentials amount to.
    pub fn method(&self) -> AuthMethod {
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
    basic: Option<Result<(String, String), ()>>,
    form: &Params,
) -> Result<Presented, OAuthError> {
    let repeated = |name| OAuthError::invalid_request(format!("{name} is repeated"));
    let form_id = form.single("client_id").map_err(repeated)?;
    let form_secret = form.single("client_secret").map_err(repeated)?;
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
            })
        }
        None => {
            let id = form_id.ok_or_else(|| {
                OAuthError::invalid_client("no client_id and no client authentication", false)
            })?;
            Ok(Presented {
                client_id: id.to_owned(),
                secret: form_secret.map(str::to_owned),
                basic: false,
            })
        }
    }
}

/// Authenticates the presented credentials against the client: stored, or
/// described by its metadata document (fetched, or cached, through `cimd`;
/// a document that cannot be used is `invalid_client`, like an unknown id).
pub async fn authenticate(
    store: &Store,
    cimd: &CimdRequest<'_>,
    presented: &Presented,
    now: OffsetDateTime,
) -> Result<Client, OAuthError> {
    let refuse = |why: &str| OAuthError::invalid_client(why, presented.basic);
    let client = match clients::resolve(store, cimd, &presented.client_id, now).await {
        Ok(Some(resolved)) => resolved.client,
        Ok(None) => return Err(refuse("unknown client")),
        Err(ClientLookupError::Document(why)) => return Err(refuse(&why)),
        Err(ClientLookupError::Throttled(throttle)) => return Err(throttle.into()),
        Err(ClientLookupError::Store(err)) => return Err(err.into()),
    };
    check_method(&client, presented)?;
    match (&client.secret_hash, &presented.secret) {
        (Some(expected), Some(secret))
            if client.auth_method.is_confidential()
                && secrets::constant_time_eq(expected, &secrets::hash_secret(secret)) =>
        {
            Ok(client)
        }
        (Some(_), _) => Err(refuse("wrong or missing client secret")),
        (None, None) if !client.auth_method.is_confidential() => Ok(client),
        (None, _) => Err(refuse("a public client has no secret to send")),
    }
}

/// The client authenticates with the method it registered, and no other
/// (RFC 7591 §2 `token_endpoint_auth_method`; RFC 7009 §2.2.1 for
/// `/revoke`): `invalid_client`, with the Basic challenge when the request
/// tried Basic.
pub fn check_method(client: &Client, presented: &Presented) -> Result<(), OAuthError> {
    let used = presented.method();
    if used == client.auth_method {
        return Ok(());
    }
    Err(OAuthError::invalid_client(
        format!(
            "the client is registered for {} and authenticated with {}",
            client.auth_method.as_str(),
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
            kind: crate::oauth::client::ClientKind::Dynamic,
            name: "n".into(),
            redirect_uris: vec![],
            auth_method,
            secret_hash: None,
            may_refresh: true,
            native: false,
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
    fn credentials_come_from_the_header_or_the_body_never_both() {
        let basic = Some(Ok(("id".to_owned(), "s3cret".to_owned())));
        assert_eq!(
            presented(basic.clone(), &form("grant_type=x")).unwrap(),
            Presented {
                client_id: "id".into(),
                secret: Some("s3cret".into()),
                basic: true
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
                .as_deref(),
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
