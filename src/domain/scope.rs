//! OAuth scopes Coop grants, and sets of them.
//!
//! There are two. `offline_access` is not one of them: refresh tokens are
//! always issued, so a client asking for it is not refused (the authorize
//! step drops it) and it is never advertised.

use std::collections::BTreeSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    FarmRead,
    DailyEntriesWrite,
}

impl Scope {
    pub const ALL: [Scope; 2] = [Scope::FarmRead, Scope::DailyEntriesWrite];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::FarmRead => "farm:read",
            Self::DailyEntriesWrite => "daily-entries:write",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "farm:read" => Some(Self::FarmRead),
            "daily-entries:write" => Some(Self::DailyEntriesWrite),
            _ => None,
        }
    }

    /// What a person reads on the consent screen.
    pub fn description(self) -> &'static str {
        match self {
            Self::FarmRead => {
                "See your farm's records: flocks, daily egg entries, egg lots and stock"
            }
            Self::DailyEntriesWrite => {
                "Record or correct daily entries (eggs, mortality, feed, water) for your flocks"
            }
        }
    }
}

/// A set of scopes, written space-separated on the wire.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ScopeSet(BTreeSet<Scope>);

impl ScopeSet {
    pub fn empty() -> Self {
        Self(BTreeSet::new())
    }

    pub fn all() -> Self {
        Self(Scope::ALL.into_iter().collect())
    }

    pub fn from_scopes(scopes: impl IntoIterator<Item = Scope>) -> Self {
        Self(scopes.into_iter().collect())
    }

    /// Parses a stored (already validated) scope string; unknown words are
    /// dropped, so a scope removed from Coop grants nothing.
    pub fn from_stored(raw: &str) -> Self {
        Self(raw.split_whitespace().filter_map(Scope::parse).collect())
    }

    pub fn contains(&self, scope: Scope) -> bool {
        self.0.contains(&scope)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn is_subset(&self, other: &ScopeSet) -> bool {
        self.0.is_subset(&other.0)
    }

    pub fn union(&self, other: &ScopeSet) -> ScopeSet {
        Self(self.0.union(&other.0).copied().collect())
    }

    pub fn intersection(&self, other: &ScopeSet) -> ScopeSet {
        Self(self.0.intersection(&other.0).copied().collect())
    }

    pub fn iter(&self) -> impl Iterator<Item = Scope> + '_ {
        self.0.iter().copied()
    }

    /// The space-separated wire form, in a stable order.
    pub fn to_wire(&self) -> String {
        self.join(" ")
    }

    /// The scopes in the wire form's order, separated by `separator`.
    pub fn join(&self, separator: &str) -> String {
        self.0
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(separator)
    }
}

impl std::fmt::Display for ScopeSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_wire())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_sets_have_a_stable_wire_form() {
        let set = ScopeSet::from_stored("daily-entries:write farm:read offline_access");
        assert_eq!(set.to_wire(), "farm:read daily-entries:write");
        assert!(ScopeSet::from_scopes([Scope::FarmRead]).is_subset(&set));
        assert_eq!(set.join(","), "farm:read,daily-entries:write");
    }
}
