//! Secret values as types whose `Debug` hides them: a client secret, a
//! refresh token, an authorization code and its PKCE verifier, an access
//! token, a token presented for revocation or introspection, a client
//! assertion, a password on its way in or out, a CSRF token, a device
//! cookie, a password reset link's token, the store's master secret.
//!
//! Each is a `String` inside a type of its own, so a secret cannot be
//! passed where another is expected, and a `{:?}` (a derived `Debug` of a
//! struct holding one, a `tracing` field, a test failure) prints
//! `RefreshToken(***)`, never the value. There is no `Display`. The value
//! is read only by asking for it: [`expose`](ClientSecret::expose) where it
//! is hashed, compared, signed with, or written to the one place it goes
//! (the response that hands it out, the person who must see it once).
//! Serializing is such a place, so it writes the value: a token response
//! carries it; logs never serialize. Equality compares in constant time.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! secret {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Default)]
        pub struct $name(String);

        impl $name {
            pub fn new(value: impl Into<String>) -> Self {
                Self(value.into())
            }

            /// The secret itself, for hashing, comparing, signing with, or
            /// handing out where it belongs.
            pub fn expose(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(concat!(stringify!($name), "(***)"))
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                super::constant_time_eq(&self.0, &other.0)
            }
        }

        impl Eq for $name {}

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self(value)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self(value.to_owned())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer).map(Self)
            }
        }
    };
}

secret! {
    /// A client secret (`client_secret_basic` / `client_secret_post`): as
    /// presented at `/token`, or as issued once to an operator, an owner or
    /// a self-registering client. Stored only as its hash.
    ClientSecret
}

secret! {
    /// A refresh token, as presented or as issued. Stored only as its hash.
    RefreshToken
}

secret! {
    /// An authorization code, as issued in the redirect or presented at
    /// `/token`. Stored only as its hash.
    AuthorizationCode
}

secret! {
    /// A PKCE `code_verifier` presented at `/token` (RFC 7636 §4.5): whoever
    /// holds it and the code may redeem the code.
    CodeVerifier
}

secret! {
    /// A signed access token (a JWT), as issued in a token response.
    AccessToken
}

secret! {
    /// A password in transit: typed into a form, read from standard input,
    /// or generated and shown once. Stored only as its argon2id hash.
    Password
}

secret! {
    /// The secret every replica shares in the store, from which the keys
    /// of Coop's signed cookies and DPoP nonces are derived.
    MasterSecret
}

secret! {
    /// A token presented at `/revoke` or `/introspect`, of a kind not yet
    /// known (an access token or a refresh token).
    PresentedToken
}

secret! {
    /// A client assertion (`private_key_jwt`, RFC 7523): a signed JWT whose
    /// `jti` may be spent once, so a copy of it is a login until it expires.
    ClientAssertion
}

secret! {
    /// A session's CSRF token, or a signed-out form's: whoever knows it can
    /// post that session's forms.
    CsrfToken
}

secret! {
    /// A password reset link's token: whoever holds it may choose the
    /// person's new password, once, for a day. Stored only as its hash.
    ResetToken
}

secret! {
    /// A device cookie's value: it lets its browser sign in to its account
    /// under the device's own throttle budget.
    DeviceCookie
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Debug` of `value` names the type and hides `raw`, alone and inside
    /// a struct's derived `Debug`.
    fn hides<T: std::fmt::Debug>(value: T, raw: &str, printed: &str) {
        #[derive(Debug)]
        #[allow(dead_code)]
        struct Holder<T> {
            field: T,
        }
        assert_eq!(format!("{value:?}"), printed);
        assert_eq!(format!("{value:#?}"), printed);
        let held = format!("{:?}", Holder { field: value });
        assert!(!held.contains(raw), "{held}");
        assert!(held.contains(printed), "{held}");
    }

    const RAW: &str = "s3cret-value-9f8e";

    /// Each secret type, made from `RAW`: its `Debug` hides the value, and
    /// `expose` gives it back.
    macro_rules! each_debugs_hidden {
        ($($name:ident => $printed:literal),+ $(,)?) => {
            $(
                hides($name::new(RAW), RAW, $printed);
                assert_eq!($name::new(RAW).expose(), RAW);
            )+
        };
    }

    #[test]
    fn every_secret_debugs_hidden() {
        each_debugs_hidden! {
            ClientSecret => "ClientSecret(***)",
            RefreshToken => "RefreshToken(***)",
            AuthorizationCode => "AuthorizationCode(***)",
            CodeVerifier => "CodeVerifier(***)",
            AccessToken => "AccessToken(***)",
            Password => "Password(***)",
            MasterSecret => "MasterSecret(***)",
            PresentedToken => "PresentedToken(***)",
            ClientAssertion => "ClientAssertion(***)",
            CsrfToken => "CsrfToken(***)",
            DeviceCookie => "DeviceCookie(***)",
            ResetToken => "ResetToken(***)",
        }
    }

    #[test]
    fn secrets_serialize_as_their_value_and_compare_by_it() {
        assert_eq!(
            serde_json::to_string(&RefreshToken::new(RAW)).unwrap(),
            format!("\"{RAW}\"")
        );
        let read: Password = serde_json::from_str(&format!("\"{RAW}\"")).unwrap();
        assert_eq!(read, Password::new(RAW));
        assert_ne!(read, Password::new("another"));
    }
}
