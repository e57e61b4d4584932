//! A farm's slug: the short name the operator's commands and a person's
//! pages address a farm by.

use serde::Serialize;

/// The longest slug, in characters.
pub const MAX_SLUG_CHARS: usize = 48;

/// Lower-case ASCII letters, digits and single inner dashes, 1 to
/// [`MAX_SLUG_CHARS`] long: safe in a URL, a shell and a log line as is.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct FarmSlug(String);

impl FarmSlug {
    /// Accepts the slug with surrounding spaces trimmed; nothing is
    /// lower-cased or replaced, so what is stored is what was typed.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let slug = raw.trim();
        let valid = !slug.is_empty()
            && slug.len() <= MAX_SLUG_CHARS
            && slug
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !slug.starts_with('-')
            && !slug.ends_with('-')
            && !slug.contains("--");
        if valid {
            Ok(Self(slug.to_owned()))
        } else {
            Err(format!(
                "{raw:?} is not a slug (lower-case letters, digits and dashes)"
            ))
        }
    }
}

text_newtype!(FarmSlug);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_lower_case_words_joined_by_single_dashes() {
        assert_eq!(
            FarmSlug::parse(" ok-slug-2 ").unwrap().as_str(),
            "ok-slug-2"
        );
        assert!(FarmSlug::parse(&"a".repeat(MAX_SLUG_CHARS)).is_ok());
        for bad in [
            "",
            "  ",
            "Caps",
            "under_score",
            "-lead",
            "trail-",
            "two--dashes",
            "sp ace",
            "ågård",
            &"a".repeat(MAX_SLUG_CHARS + 1),
        ] {
            assert!(FarmSlug::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
