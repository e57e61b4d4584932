//! Resource indicators (RFC 8707): Coop protects exactly one resource,
//! `<issuer>/mcp`, and every code and token carries it as its audience
//! (threat 5).
//!
//! A request without `resource` gets that one (as an empty scope gets
//! `farm:read`). A value naming it with another case of scheme or host, or
//! a trailing slash, is accepted as the same resource (the MCP spec asks
//! servers to tolerate both); anything else is `invalid_target`.

use url::Url;

use crate::domain::Issuer;

/// The one resource, canonical: `<issuer>/mcp`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource(String);

impl Resource {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The resource stored with a code or grant (checked when stored).
    pub fn from_stored(raw: String) -> Self {
        Self(raw)
    }
}

/// Why a `resource` value is refused (`invalid_target`).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("the only resource is {expected}")]
pub struct UnknownResource {
    pub expected: String,
}

/// Resolves the request's `resource` values (the parameter may repeat in
/// RFC 8707; Coop issues single-audience tokens, so more than one is
/// refused rather than silently narrowed).
pub fn resolve(issuer: &Issuer, requested: &[&str]) -> Result<Resource, UnknownResource> {
    let expected = issuer.mcp_resource();
    let refuse = || UnknownResource {
        expected: expected.clone(),
    };
    match requested {
        [] => Ok(Resource(expected.clone())),
        [one] if canonical(one).as_deref() == Some(expected.as_str()) => {
            Ok(Resource(expected.clone()))
        }
        _ => Err(refuse()),
    }
}

/// `scheme://host[:port]/path` with scheme and host lower-cased, the
/// default port dropped and one trailing slash removed; `None` for anything
/// with a query, a fragment or credentials (RFC 8707 §2 forbids fragments).
fn canonical(raw: &str) -> Option<String> {
    let url = Url::parse(raw).ok()?;
    if url.query().is_some()
        // The parser reads any `#` as the start of a fragment.
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return None;
    }
    let path = url.path();
    let path = if path.len() > 1 {
        path.strip_suffix('/').unwrap_or(path)
    } else {
        path
    };
    Some(format!("{}{}", url.origin().ascii_serialization(), path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issuer() -> Issuer {
        Issuer::parse("http://127.0.0.1:8080").unwrap()
    }

    #[test]
    fn absent_or_equivalent_resources_resolve_to_the_mcp_endpoint() {
        let want = "http://127.0.0.1:8080/mcp";
        for requested in [
            &[][..],
            &["http://127.0.0.1:8080/mcp"][..],
            &["http://127.0.0.1:8080/mcp/"][..],
            &["HTTP://127.0.0.1:8080/mcp"][..],
        ] {
            assert_eq!(
                resolve(&issuer(), requested).unwrap().as_str(),
                want,
                "{requested:?}"
            );
        }
        let named = Issuer::parse("https://coop.example").unwrap();
        assert!(resolve(&named, &["https://COOP.example:443/mcp"]).is_ok());
    }

    #[test]
    fn any_other_resource_is_refused() {
        for bad in [
            "http://127.0.0.1:8080",
            "http://127.0.0.1:8080/",
            "http://127.0.0.1:8080/MCP",
            "http://127.0.0.1:8080/mcp/x",
            "http://127.0.0.1:8080/mcp?x=1",
            "http://127.0.0.1:8080/mcp#f",
            "http://127.0.0.1:8080/mcp#",
            "http://u@127.0.0.1:8080/mcp",
            "http://u:p@127.0.0.1:8080/mcp",
            "http://:p@127.0.0.1:8080/mcp",
            "http://127.0.0.1:8081/mcp",
            "https://127.0.0.1:8080/mcp",
            "http://localhost:8080/mcp",
            "mcp",
            "",
        ] {
            assert!(resolve(&issuer(), &[bad]).is_err(), "{bad}");
        }
        assert!(
            resolve(
                &issuer(),
                &["http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp"]
            )
            .is_err()
        );
    }
}
