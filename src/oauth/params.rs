//! Request parameters (a query or an `application/x-www-form-urlencoded`
//! body) with repeated names kept visible: RFC 6749 §3.1 and §3.2 forbid
//! sending a parameter twice, and a map would silently keep one of them.

#[derive(Clone, Debug, Default)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    pub fn parse(encoded: &[u8]) -> Self {
        Self {
            pairs: url::form_urlencoded::parse(encoded)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        }
    }

    /// Every pair, in the order sent.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Every value of `name`, in order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The one value of `name`; `Err(name)` when it is repeated. An empty
    /// value counts as absent (RFC 6749 §3.1).
    pub fn single(&self, name: &'static str) -> Result<Option<&str>, &'static str> {
        match self.all(name).as_slice() {
            [] => Ok(None),
            [""] => Ok(None),
            [one] => Ok(Some(one)),
            _ => Err(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_and_empty_parameters_are_told_apart() {
        let p = Params::parse(b"a=1&b=&c=x&c=y&d=%20sp+ace");
        assert_eq!(p.single("a"), Ok(Some("1")));
        assert_eq!(p.single("b"), Ok(None));
        assert_eq!(p.single("z"), Ok(None));
        assert_eq!(p.single("c"), Err("c"));
        assert_eq!(p.all("c"), vec!["x", "y"]);
        assert_eq!(p.single("d"), Ok(Some(" sp ace")));
        let pairs: Vec<(&str, &str)> = p.pairs().collect();
        assert_eq!(
            pairs,
            vec![
                ("a", "1"),
                ("b", ""),
                ("c", "x"),
                ("c", "y"),
                ("d", " sp ace")
            ]
        );
        assert!(Params::parse(b"").pairs().next().is_none());
    }
}
