//! The token a client hands to `/revoke` (RFC 7009 §2.1) or `/introspect`
//! (RFC 7662 §2.1): `token`, required, and `token_type_hint`, which only
//! chooses which kind is looked for first. Neither may be repeated.

use crate::oauth::error::OAuthError;
use crate::oauth::params::Params;
use crate::secrets::PresentedToken;

/// The kind the client says the token is. Any other hint is no hint: the
/// token is looked for as every kind anyway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenHint {
    AccessToken,
    RefreshToken,
}

impl TokenHint {
    fn parse(raw: &str) -> Option<Self> {
        match raw {
            "access_token" => Some(Self::AccessToken),
            "refresh_token" => Some(Self::RefreshToken),
            _ => None,
        }
    }
}

/// `token` and `token_type_hint`, read.
#[derive(Clone, Debug)]
pub struct TokenParams {
    pub token: PresentedToken,
    pub hint: Option<TokenHint>,
}

impl TokenParams {
    pub fn parse(form: &Params) -> Result<Self, OAuthError> {
        let repeated = |name| OAuthError::invalid_request(format!("{name} is repeated"));
        let token = form
            .single("token")
            .map_err(repeated)?
            .ok_or_else(|| OAuthError::invalid_request("token is required"))?;
        let hint = form.single("token_type_hint").map_err(repeated)?;
        Ok(Self {
            token: PresentedToken::from(token),
            hint: hint.and_then(TokenHint::parse),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<TokenParams, OAuthError> {
        TokenParams::parse(&Params::parse(body.as_bytes()))
    }

    #[test]
    fn the_token_is_required_once_and_a_hint_is_only_one_of_two_kinds() {
        let read = parse("token=abc&token_type_hint=refresh_token").unwrap();
        assert_eq!(read.token.expose(), "abc");
        assert_eq!(read.hint, Some(TokenHint::RefreshToken));
        let read = parse("token=abc&token_type_hint=access_token").unwrap();
        assert_eq!(read.hint, Some(TokenHint::AccessToken));
        assert_eq!(
            parse("token=abc&token_type_hint=id_token").unwrap().hint,
            None
        );
        assert_eq!(parse("token=abc").unwrap().hint, None);
        assert!(parse("").is_err());
        assert!(parse("token=").is_err());
        assert!(parse("token=a&token=b").is_err());
        assert!(parse("token=a&token_type_hint=x&token_type_hint=y").is_err());
    }
}
