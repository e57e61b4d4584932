//! An OAuth client as the protocol sees it: how it came to be known, how it
//! authenticates at `/token`, and where it may be redirected.

use crate::oauth::redirect_uri;

/// How Coop learned about the client. Shown on the consent page: a
/// self-registered client's name is its own claim ("unverified"); a
/// metadata-document client is vouched for by the host serving its document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientKind {
    /// `coop admin client add`.
    Registered,
    /// RFC 7591 `/register`.
    Dynamic,
    /// A Client ID Metadata Document; the host that served it.
    MetadataDocument { document_host: String },
}

impl ClientKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Registered => "registered",
            Self::Dynamic => "dynamic",
            Self::MetadataDocument { .. } => "metadata_document",
        }
    }
}

/// `token_endpoint_auth_method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMethod {
    /// A public client: PKCE is its only proof.
    None,
    ClientSecretBasic,
    ClientSecretPost,
}

impl AuthMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::ClientSecretBasic => "client_secret_basic",
            Self::ClientSecretPost => "client_secret_post",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "none" => Some(Self::None),
            "client_secret_basic" => Some(Self::ClientSecretBasic),
            "client_secret_post" => Some(Self::ClientSecretPost),
            _ => None,
        }
    }

    pub fn is_confidential(self) -> bool {
        !matches!(self, Self::None)
    }
}

/// A known client.
#[derive(Clone, Debug)]
pub struct Client {
    pub client_id: String,
    pub kind: ClientKind,
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub auth_method: AuthMethod,
    /// SHA-256 of the secret, for confidential clients.
    pub secret_hash: Option<String>,
    /// Whether the client may use the `refresh_token` grant: every client
    /// may, unless it registered `grant_types` without it.
    pub may_refresh: bool,
}

impl Client {
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

    /// Whether the name on the consent page is only the client's own claim.
    pub fn is_unverified(&self) -> bool {
        matches!(self.kind, ClientKind::Dynamic)
    }
}
