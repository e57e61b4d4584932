//! The `scope` an authorization request asks for.
//!
//! Absent (or empty): `farm:read`. `offline_access` is accepted and dropped:
//! refresh tokens are always issued, so it changes nothing, and it is never
//! advertised. Any other word Coop does not know is `invalid_scope`.

use crate::domain::{Scope, ScopeSet};

/// The word some clients add to ask for a refresh token.
pub const OFFLINE_ACCESS: &str = "offline_access";

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown scope {0:?}; Coop grants farm:read and daily-entries:write")]
pub struct UnknownScope(pub String);

pub fn requested(raw: Option<&str>) -> Result<ScopeSet, UnknownScope> {
    let mut scopes = Vec::new();
    for word in raw.unwrap_or_default().split(' ').filter(|w| !w.is_empty()) {
        if word == OFFLINE_ACCESS {
            continue;
        }
        scopes.push(Scope::parse(word).ok_or_else(|| UnknownScope(word.to_owned()))?);
    }
    if scopes.is_empty() {
        scopes.push(Scope::FarmRead);
    }
    Ok(ScopeSet::from_scopes(scopes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_empty_and_offline_access_alone_mean_farm_read() {
        for raw in [None, Some(""), Some("  "), Some("offline_access")] {
            assert_eq!(requested(raw).unwrap().to_wire(), "farm:read", "{raw:?}");
        }
        assert_eq!(
            requested(Some("daily-entries:write offline_access farm:read"))
                .unwrap()
                .to_wire(),
            "farm:read daily-entries:write"
        );
        assert_eq!(
            requested(Some("daily-entries:write")).unwrap().to_wire(),
            "daily-entries:write"
        );
    }

    #[test]
    fn an_unknown_scope_is_refused() {
        assert_eq!(
            requested(Some("farm:read admin")),
            Err(UnknownScope("admin".into()))
        );
        assert!(requested(Some("FARM:READ")).is_err());
    }
}
