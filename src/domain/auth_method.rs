//! `token_endpoint_auth_method`: how a client proves itself at `/token`.
//! A stored client's method is one of these words (the table's check
//! constraint holds the same ones), read back through [`AuthMethod::parse`].

/// `token_endpoint_auth_method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMethod {
    /// A public client: PKCE is its only proof.
    None,
    ClientSecretBasic,
    ClientSecretPost,
    /// A JWT signed with the client's private key (RFC 7523 §2.2),
    /// verified with its public keys.
    PrivateKeyJwt,
}

impl AuthMethod {
    /// Every method, in the order Coop lists them.
    pub const ALL: [Self; 4] = [
        Self::None,
        Self::ClientSecretBasic,
        Self::ClientSecretPost,
        Self::PrivateKeyJwt,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::ClientSecretBasic => "client_secret_basic",
            Self::ClientSecretPost => "client_secret_post",
            Self::PrivateKeyJwt => "private_key_jwt",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|method| method.as_str() == raw)
    }

    pub fn is_confidential(self) -> bool {
        !matches!(self, Self::None)
    }

    /// Whether the client authenticates with a secret Coop issues.
    pub fn uses_secret(self) -> bool {
        matches!(self, Self::ClientSecretBasic | Self::ClientSecretPost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_round_trip() {
        for method in AuthMethod::ALL {
            assert_eq!(AuthMethod::parse(method.as_str()), Some(method));
        }
        assert_eq!(AuthMethod::parse("client_secret_jwt"), Option::None);
        assert!(AuthMethod::PrivateKeyJwt.is_confidential());
    }
}
