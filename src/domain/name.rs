//! A name a person gives a farm, a house, a flock, a breed or an
//! automation.

use serde::Serialize;

/// The longest name, in characters.
pub const MAX_NAME_CHARS: usize = 100;

/// Trimmed, 1 to [`MAX_NAME_CHARS`] characters, none of them a control
/// character (a name is printed in pages, logs and terminals as is).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Name(String);

impl Name {
    pub fn parse(raw: &str) -> Result<Self, String> {
        let name = raw.trim();
        if name.is_empty()
            || name.chars().count() > MAX_NAME_CHARS
            || name.chars().any(char::is_control)
        {
            return Err(format!(
                "a name must be 1 to {MAX_NAME_CHARS} printable characters"
            ));
        }
        Ok(Self(name.to_owned()))
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

text_newtype!(Name);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_printable_and_bounded() {
        assert_eq!(
            Name::parse("  North House ").unwrap().as_str(),
            "North House"
        );
        assert!(Name::parse("Ågård").is_ok());
        assert!(Name::parse(&"é".repeat(MAX_NAME_CHARS)).is_ok());
        assert_eq!(
            format!("{:?}", Name::parse("Hen \"A\"").unwrap()),
            r#""Hen \"A\"""#
        );
        for bad in [
            "",
            "   ",
            "tab\tinside",
            "line\nbreak",
            "\u{7}bell",
            &"a".repeat(MAX_NAME_CHARS + 1),
        ] {
            assert!(Name::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
