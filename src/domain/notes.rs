//! The free-text notes of a daily entry.

/// The longest notes, in characters.
pub const MAX_NOTES_CHARS: usize = 1000;

/// Trimmed, at most [`MAX_NOTES_CHARS`] characters, and no control
/// character but a line break or a tab: notes are shown in pages, tool
/// answers and terminals as they are, where a carriage return, an escape
/// or a bell could rewrite what the reader sees. Empty notes are notes.
#[derive(Clone, PartialEq, Eq)]
pub struct Notes(String);

impl Notes {
    pub fn parse(raw: &str) -> Result<Self, String> {
        let notes = raw.trim();
        if notes.chars().count() > MAX_NOTES_CHARS {
            return Err(format!(
                "notes must be at most {MAX_NOTES_CHARS} characters"
            ));
        }
        if let Some(bad) = notes
            .chars()
            .find(|&c| c.is_control() && c != '\n' && c != '\t')
        {
            return Err(format!(
                "notes must not hold control characters other than a line break or a tab \
                 (found U+{:04X})",
                u32::from(bad)
            ));
        }
        Ok(Self(notes.to_owned()))
    }
}

text_newtype!(Notes);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_keep_line_breaks_and_tabs_and_nothing_else_unprintable() {
        assert_eq!(
            Notes::parse("  fan fixed\n\twater ok  ").unwrap().as_str(),
            "fan fixed\n\twater ok"
        );
        assert_eq!(Notes::parse("   ").unwrap().as_str(), "");
        assert!(Notes::parse(&"é".repeat(MAX_NOTES_CHARS)).is_ok());
        assert_eq!(
            Notes::parse(&"x".repeat(MAX_NOTES_CHARS + 1)).unwrap_err(),
            "notes must be at most 1000 characters"
        );
        for (bad, code) in [
            ("cr\rhere", "000D"),
            ("bell\u{7}", "0007"),
            ("esc\u{1b}[2J", "001B"),
            ("nul\0", "0000"),
            ("del\u{7f}", "007F"),
            ("c1 \u{9b}31m", "009B"),
        ] {
            assert_eq!(
                Notes::parse(bad).unwrap_err(),
                format!(
                    "notes must not hold control characters other than a line break or a tab \
                     (found U+{code})"
                ),
                "{bad:?}"
            );
        }
    }
}
