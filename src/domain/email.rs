//! An email address as an account name: trimmed, lower-cased, plausible.

use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Email(String);

impl Email {
    /// Accepts `local@domain` with a dot in the domain, at most 254
    /// characters. Deliverability is not Coop's business; uniqueness is,
    /// so the address is lower-cased.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let email = raw.trim().to_lowercase();
        let valid = email.len() <= 254
            && !email.chars().any(|c| c.is_whitespace() || c.is_control())
            && match email.split_once('@') {
                Some((local, domain)) => {
                    !local.is_empty()
                        && !domain.contains('@')
                        && domain.contains('.')
                        && !domain.starts_with('.')
                        && !domain.ends_with('.')
                }
                None => false,
            };
        if valid {
            Ok(Self(email))
        } else {
            Err(format!("{raw:?} is not an email address"))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Email {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalised_and_checked() {
        assert_eq!(
            Email::parse(" Ann@Farm.Example ").unwrap().as_str(),
            "ann@farm.example"
        );
        for bad in [
            "",
            "ann",
            "ann@",
            "@farm.example",
            "ann@farm",
            "a b@farm.example",
            "a@b@c.d",
        ] {
            assert!(Email::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
