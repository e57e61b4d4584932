//! An OAuth client as the protocol sees it: how it came to be known, how it
//! authenticates at `/token` (and with which keys, for `private_key_jwt`),
//! and where it may be redirected. [`negotiate`] picks the method from what
//! a client offers (OpenID Connect "RP Metadata Choices").

use std::sync::Arc;

use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::JwkSet;

pub use crate::domain::AuthMethod;
use crate::domain::this_computer::is_on_this_computer;
use crate::oauth::redirect_uri;

/// How Coop learned about a stored client. Shown on the consent page: a
/// self-registered client's name is its own claim ("unverified").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `coop admin client add`.
    Registered,
    /// RFC 7591 `/register`.
    Dynamic,
}

/// Where a confidential client sends its secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretMethod {
    /// `client_secret_basic`: in the HTTP Basic header.
    Basic,
    /// `client_secret_post`: in the body.
    Post,
}

/// How a metadata-document client authenticates: never with a secret (a
/// document that offers one is refused, [`crate::oauth::cimd`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocumentAuth {
    /// `none`: PKCE is its only proof.
    None,
    /// `private_key_jwt` with the keys its document gives, read from the
    /// document (fetched, or cached) each time it authenticates, never
    /// from the store ([`crate::oauth::clients::Resolved`]).
    PrivateKeyJwt,
}

/// What kind of client it is, with exactly what authenticating it takes: a
/// confidential client always has its secret's hash, a `private_key_jwt`
/// client its keys, and a metadata-document client never a secret.
/// Built from a stored row or a fetched document at the storage boundary
/// ([`crate::oauth::clients`]); a row that fits none of these is unusable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientKind {
    /// A public client (`none`): PKCE is its only proof.
    Public { origin: Origin },
    /// `client_secret_basic` or `client_secret_post`, with the SHA-256 of
    /// the secret Coop issued.
    Confidential {
        origin: Origin,
        method: SecretMethod,
        secret_hash: String,
    },
    /// `private_key_jwt` (RFC 7523 §2.2), with the keys (a key set, or its
    /// `jwks_uri`) its assertions are checked with.
    PrivateKeyJwt { origin: Origin, keys: AssertionKeys },
    /// Described by a Client ID Metadata Document; `document_host` served
    /// it, and is shown on the consent page.
    MetadataDocument {
        document_host: String,
        auth: DocumentAuth,
    },
}

/// Where a `private_key_jwt` client's public keys are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientKeys {
    /// Given with the client (`jwks`, or `--jwks-file`).
    Inline(Arc<JwkSet>),
    /// Published at a URL (`jwks_uri`), fetched through the SSRF-guarded
    /// fetcher and cached ([`crate::oauth::cimd`]).
    Uri(String),
}

/// What verifies a `private_key_jwt` client's assertions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssertionKeys {
    pub keys: ClientKeys,
    /// Its `token_endpoint_auth_signing_alg`: when given, the only
    /// algorithm accepted from it.
    pub algorithm: Option<Algorithm>,
}

/// Why no method could be agreed: the client's lists and Coop's, for a
/// refusal that names them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "no client authentication method in common: the client prefers {preferred}, supports {supported}; Coop offers {offered}"
)]
pub struct NoCommonMethod {
    pub preferred: String,
    pub supported: String,
    pub offered: String,
}

/// The method a client will use: its preferred one (`preferred`,
/// `token_endpoint_auth_method`) if `offered` holds it, else the first of
/// `supported` (`token_endpoint_auth_methods_supported`, its alternatives
/// in its order) that `offered` holds; `default` when it names neither.
pub fn negotiate(
    preferred: Option<&str>,
    supported: Option<&[String]>,
    offered: &[AuthMethod],
    default: AuthMethod,
) -> Result<AuthMethod, NoCommonMethod> {
    if preferred.is_none() && supported.is_none() {
        return Ok(default);
    }
    let offers = |name: &str| AuthMethod::parse(name).filter(|method| offered.contains(method));
    if let Some(method) = preferred.and_then(offers) {
        return Ok(method);
    }
    if let Some(method) = supported
        .into_iter()
        .flatten()
        .find_map(|name| offers(name))
    {
        return Ok(method);
    }
    let names = |list: &mut dyn Iterator<Item = &str>| {
        let quoted: Vec<String> = list.map(|name| format!("{name:?}")).collect();
        if quoted.is_empty() {
            "nothing".to_owned()
        } else {
            quoted.join(", ")
        }
    };
    Err(NoCommonMethod {
        preferred: names(&mut preferred.into_iter()),
        supported: names(&mut supported.into_iter().flatten().map(String::as_str)),
        offered: names(&mut offered.iter().map(|method| method.as_str())),
    })
}

/// Characters that could make a client's name render as something it is
/// not: control characters, bidirectional marks, embeddings, overrides and
/// isolates (which reorder what follows them, "Trojan Source"), zero-width
/// characters and the other invisible formatting ones (which hide inside a
/// look-alike name), and line separators. Refused in every name a client
/// chooses: registered, self-registered, or in its metadata document.
pub fn disguises_text(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{061C}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2069}'
                | '\u{FEFF}'
        )
}

/// A known client.
#[derive(Clone, Debug)]
pub struct Client {
    pub client_id: String,
    /// How it came to be known and how it authenticates.
    pub kind: ClientKind,
    pub name: String,
    pub redirect_uris: Vec<String>,
    /// Whether the client may use the `refresh_token` grant: every client
    /// may, unless it registered `grant_types` without it.
    pub may_refresh: bool,
    /// Registered with `application_type: native`: an app installed on a
    /// device, which cannot keep a secret or own a web address, so nothing
    /// it presents proves which program is asking (RFC 8252 §8.6).
    pub native: bool,
}

impl Client {
    /// Its `token_endpoint_auth_method`.
    pub fn auth_method(&self) -> AuthMethod {
        match &self.kind {
            ClientKind::Public { .. }
            | ClientKind::MetadataDocument {
                auth: DocumentAuth::None,
                ..
            } => AuthMethod::None,
            ClientKind::Confidential {
                method: SecretMethod::Basic,
                ..
            } => AuthMethod::ClientSecretBasic,
            ClientKind::Confidential {
                method: SecretMethod::Post,
                ..
            } => AuthMethod::ClientSecretPost,
            ClientKind::PrivateKeyJwt { .. }
            | ClientKind::MetadataDocument {
                auth: DocumentAuth::PrivateKeyJwt,
                ..
            } => AuthMethod::PrivateKeyJwt,
        }
    }

    /// How a stored client came to be known; `None` for a metadata-document
    /// client.
    pub fn origin(&self) -> Option<Origin> {
        match &self.kind {
            ClientKind::Public { origin }
            | ClientKind::Confidential { origin, .. }
            | ClientKind::PrivateKeyJwt { origin, .. } => Some(*origin),
            ClientKind::MetadataDocument { .. } => None,
        }
    }

    /// The host that served a metadata-document client's document.
    pub fn document_host(&self) -> Option<&str> {
        match &self.kind {
            ClientKind::MetadataDocument { document_host, .. } => Some(document_host),
            _ => None,
        }
    }

    /// The registered URI `requested` matches, if any (exact, or loopback
    /// with another port).
    pub fn allows_redirect(&self, requested: &str) -> bool {
        self.redirect_uris
            .iter()
            .any(|registered| redirect_uri::matches(registered, requested))
    }

    /// The redirect URI to use when the request names none: only when
    /// exactly one is registered (OAuth 2.1 §4.1.1).
    pub fn sole_redirect_uri(&self) -> Option<&str> {
        match self.redirect_uris.as_slice() {
            [only] => Some(only),
            _ => None,
        }
    }

    /// Whether a redirect to `redirect_uri` proves that the program asking
    /// is this client, so that a grant made before may approve it again
    /// without a screen. A confidential client proves itself at `/token`
    /// with its secret; an https redirect to a web address delivers the
    /// code to the client's own site. A public client redirected to this
    /// computer proves nothing, over https as over http (issue 31): any
    /// program on it can listen on the port and name the client (RFC 8252
    /// §8.6), and so can any native app.
    pub fn proven_by(&self, redirect_uri: &str) -> bool {
        if self.native {
            return false;
        }
        self.auth_method().is_confidential()
            || (url::Url::parse(redirect_uri).is_ok_and(|u| u.scheme() == "https")
                && !is_on_this_computer(redirect_uri))
    }

    /// Whether the name on the consent page is only the client's own claim.
    pub fn is_unverified(&self) -> bool {
        self.origin() == Some(Origin::Dynamic)
    }
}

#[cfg(test)]
impl Client {
    /// A self-registered client `c` using `method`, for tests.
    pub(crate) fn with_method(method: AuthMethod) -> Self {
        let origin = Origin::Dynamic;
        let secret = |method| ClientKind::Confidential {
            origin,
            method,
            secret_hash: "h".into(),
        };
        let kind = match method {
            AuthMethod::None => ClientKind::Public { origin },
            AuthMethod::ClientSecretBasic => secret(SecretMethod::Basic),
            AuthMethod::ClientSecretPost => secret(SecretMethod::Post),
            AuthMethod::PrivateKeyJwt => ClientKind::PrivateKeyJwt {
                origin,
                keys: AssertionKeys {
                    keys: ClientKeys::Uri("https://app.example/jwks".into()),
                    algorithm: None,
                },
            },
        };
        Self {
            client_id: "c".into(),
            kind,
            name: "n".into(),
            redirect_uris: vec![],
            may_refresh: true,
            native: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(auth_method: AuthMethod, native: bool) -> Client {
        Client {
            native,
            ..Client::with_method(auth_method)
        }
    }

    #[test]
    fn the_preferred_method_wins_then_the_first_supported_one() {
        use AuthMethod::{ClientSecretBasic, PrivateKeyJwt};
        const PUBLIC: AuthMethod = AuthMethod::None;
        let list = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let chatgpt = list(&["none", "private_key_jwt"]);
        let both = [PUBLIC, PrivateKeyJwt];
        assert_eq!(
            negotiate(Some("private_key_jwt"), Some(&chatgpt), &both, PUBLIC),
            Ok(PrivateKeyJwt)
        );
        // Coop cannot do private_key_jwt for this client: its first other.
        assert_eq!(
            negotiate(Some("private_key_jwt"), Some(&chatgpt), &[PUBLIC], PUBLIC),
            Ok(PUBLIC)
        );
        let odd = list(&["unknown", "private_key_jwt", "none"]);
        assert_eq!(
            negotiate(Some("tls_client_auth"), Some(&odd), &both, PUBLIC),
            Ok(PrivateKeyJwt)
        );
        assert_eq!(
            negotiate(None, Some(&chatgpt), &both, ClientSecretBasic),
            Ok(PUBLIC)
        );
        assert_eq!(
            negotiate(None, None, &both, PrivateKeyJwt),
            Ok(PrivateKeyJwt)
        );
        assert_eq!(
            negotiate(Some("none"), None, &both, PrivateKeyJwt),
            Ok(PUBLIC)
        );
        let refused = negotiate(
            Some("private_key_jwt"),
            Some(&list(&["private_key_jwt", "tls_client_auth"])),
            &[PUBLIC],
            PUBLIC,
        )
        .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "no client authentication method in common: the client prefers \"private_key_jwt\", \
             supports \"private_key_jwt\", \"tls_client_auth\"; Coop offers \"none\""
        );
        let refused = negotiate(Some("client_secret_jwt"), None, &both, PUBLIC).unwrap_err();
        assert_eq!(refused.supported, "nothing");
        assert_eq!(refused.offered, "\"none\", \"private_key_jwt\"");
    }

    #[test]
    fn each_kind_names_its_method_and_origin() {
        for method in AuthMethod::ALL {
            let client = Client::with_method(method);
            assert_eq!(client.auth_method(), method);
            assert_eq!(client.origin(), Some(Origin::Dynamic));
            assert!(client.is_unverified());
            assert_eq!(client.document_host(), Option::None);
        }
        let document = |auth| Client {
            kind: ClientKind::MetadataDocument {
                document_host: "app.example".into(),
                auth,
            },
            ..Client::with_method(AuthMethod::None)
        };
        let public = document(DocumentAuth::None);
        assert_eq!(public.auth_method(), AuthMethod::None);
        assert_eq!(public.origin(), Option::None);
        assert!(!public.is_unverified());
        assert_eq!(public.document_host(), Some("app.example"));
        let signed = document(DocumentAuth::PrivateKeyJwt);
        assert_eq!(signed.auth_method(), AuthMethod::PrivateKeyJwt);
        let registered = Client {
            kind: ClientKind::Public {
                origin: Origin::Registered,
            },
            ..Client::with_method(AuthMethod::None)
        };
        assert!(!registered.is_unverified());
    }

    #[test]
    fn invisible_and_reordering_characters_disguise_a_name() {
        for c in [
            '\u{0007}', '\n', '\u{00AD}', '\u{061C}', '\u{200B}', '\u{200C}', '\u{200D}',
            '\u{200E}', '\u{200F}', '\u{2028}', '\u{2029}', '\u{202A}', '\u{202E}', '\u{2060}',
            '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}', '\u{FEFF}',
        ] {
            assert!(disguises_text(c), "{c:?}");
        }
        for c in "Claude Desktop – Ферма 農場 é ü ß 🐔".chars() {
            assert!(!disguises_text(c), "{c:?}");
        }
    }

    #[test]
    fn only_a_secret_or_an_https_redirect_to_the_web_proves_the_client() {
        let loopback = "http://127.0.0.1:5555/cb";
        let https = "https://app.example/cb";
        let public = client(AuthMethod::None, false);
        assert!(!public.proven_by(loopback));
        assert!(!public.proven_by("http://localhost/cb"));
        assert!(public.proven_by(https));
        // https to this computer is still any program on it.
        for here in [
            "https://127.0.0.1/cb",
            "https://localhost/cb",
            "https://[::1]:8443/cb",
            "https://app.localhost/cb",
        ] {
            assert!(!public.proven_by(here), "{here}");
        }
        let confidential = client(AuthMethod::ClientSecretBasic, false);
        assert!(confidential.proven_by(loopback));
        assert!(confidential.proven_by(https));
        // A native app proves nothing, whatever it registered.
        for method in [AuthMethod::None, AuthMethod::ClientSecretPost] {
            let native = client(method, true);
            assert!(!native.proven_by(https));
            assert!(!native.proven_by(loopback));
        }
    }
}
