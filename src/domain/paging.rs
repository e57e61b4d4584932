//! Pages of a list: the size a caller may ask for and the opaque cursor
//! that continues after the last row.
//!
//! Every list is read in pages in SQL (keyset: `where key > last order by
//! key limit size + 1`), so a page costs the same however long the list is.
//! The cursor is the last row's key, tagged with the list it belongs to and
//! base64-encoded so callers treat it as opaque; it grants nothing, because
//! every query still filters by the caller's farm and flock scope.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub const DEFAULT_PAGE_SIZE: u32 = 50;
pub const MAX_PAGE_SIZE: u32 = 200;
/// A cursor longer than this was not made by Coop.
const MAX_CURSOR_LEN: usize = 512;

/// How many rows a page holds: 1 to [`MAX_PAGE_SIZE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageSize(u32);

impl PageSize {
    pub fn parse(requested: Option<i64>) -> Result<Self, String> {
        match requested {
            None => Ok(Self(DEFAULT_PAGE_SIZE)),
            Some(n) if (1..=i64::from(MAX_PAGE_SIZE)).contains(&n) => {
                Ok(Self(u32::try_from(n).unwrap_or(MAX_PAGE_SIZE)))
            }
            Some(n) => Err(format!(
                "limit {n} is out of range: a page holds 1 to {MAX_PAGE_SIZE} rows"
            )),
        }
    }

    pub fn get(self) -> u32 {
        self.0
    }

    /// The SQL `limit`: one more than the page, to learn whether more follow
    /// without counting.
    pub fn fetch_limit(self) -> i64 {
        i64::from(self.0) + 1
    }
}

/// Rows of one page and whether more follow.
#[derive(Clone, Debug)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub more: bool,
}

impl<T> Page<T> {
    /// From rows fetched with [`PageSize::fetch_limit`]: the extra row, if
    /// any, only says that there is a next page.
    pub fn from_fetched(mut rows: Vec<T>, size: PageSize) -> Self {
        let page = size.get() as usize;
        let more = rows.len() > page;
        rows.truncate(page);
        Self { items: rows, more }
    }

    /// The cursor of the next page, from the last row's key.
    pub fn next_cursor<K: Serialize>(&self, list: &str, key: impl Fn(&T) -> K) -> Option<String> {
        if !self.more {
            return None;
        }
        self.items
            .last()
            .map(|last| encode_cursor(list, &key(last)))
    }
}

/// The opaque form of `key` for the list named `list`.
pub fn encode_cursor<K: Serialize>(list: &str, key: &K) -> String {
    let json = serde_json::json!([list, key]);
    URL_SAFE_NO_PAD.encode(json.to_string())
}

/// The key inside a cursor made by [`encode_cursor`] for the same list.
pub fn decode_cursor<K: DeserializeOwned>(list: &str, raw: &str) -> Result<K, String> {
    let bad = || format!("{raw:?} is not a cursor of this list; pass next_cursor unchanged");
    if raw.len() > MAX_CURSOR_LEN {
        return Err("the cursor is too long; pass next_cursor unchanged".to_owned());
    }
    let bytes = URL_SAFE_NO_PAD.decode(raw.trim()).map_err(|_| bad())?;
    let (tag, key): (String, K) = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    if tag != list {
        return Err(bad());
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sizes_default_and_are_capped() {
        assert_eq!(PageSize::parse(None).unwrap().get(), 50);
        assert_eq!(PageSize::parse(Some(200)).unwrap().fetch_limit(), 201);
        for bad in [0, -1, 201, i64::MAX] {
            let message = PageSize::parse(Some(bad)).unwrap_err();
            assert!(message.contains("1 to 200"), "{message}");
        }
    }

    #[test]
    fn cursors_round_trip_only_for_their_own_list() {
        let cursor = encode_cursor("flocks", &("House 1", "Flock A"));
        let key: (String, String) = decode_cursor("flocks", &cursor).unwrap();
        assert_eq!(key, ("House 1".to_owned(), "Flock A".to_owned()));
        assert!(decode_cursor::<(String, String)>("egg_lots", &cursor).is_err());
        assert!(decode_cursor::<(String, String)>("flocks", "not base64!").is_err());
        assert!(decode_cursor::<(i64, i64)>("flocks", &cursor).is_err());
        assert!(decode_cursor::<(String, String)>("flocks", &"A".repeat(600)).is_err());
    }

    #[test]
    fn a_full_fetch_means_another_page() {
        let size = PageSize::parse(Some(2)).unwrap();
        let page = Page::from_fetched(vec![1, 2, 3], size);
        assert_eq!((page.items.as_slice(), page.more), (&[1, 2][..], true));
        assert!(page.next_cursor("n", |n| *n).is_some());
        let last = Page::from_fetched(vec![1, 2], size);
        assert!(!last.more);
        assert!(last.next_cursor("n", |n| *n).is_none());
    }
}
