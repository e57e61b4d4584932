//! Which flocks a caller may see.

use super::FlockId;

/// Which flocks the caller may see, resolved from the membership before any
/// tool runs. There is no "unrestricted by default": a restricted member
/// with no flocks sees nothing, and a value of this type can only be made by
/// [`FlockScope::resolve`], from what the store said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlockScope(Resolved);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Resolved {
    WholeFarm,
    Only(Vec<FlockId>),
}

impl FlockScope {
    /// From the membership row: `restricted` is the stored flag, `flocks`
    /// the stored list (ignored when not restricted).
    pub fn resolve(restricted: bool, flocks: Vec<FlockId>) -> Self {
        if restricted {
            Self(Resolved::Only(flocks))
        } else {
            Self(Resolved::WholeFarm)
        }
    }

    pub fn allows(&self, flock: FlockId) -> bool {
        match &self.0 {
            Resolved::WholeFarm => true,
            Resolved::Only(flocks) => flocks.contains(&flock),
        }
    }

    /// `None`: the whole farm. `Some(list)`: only these (possibly none).
    pub fn restricted_to(&self) -> Option<&[FlockId]> {
        match &self.0 {
            Resolved::WholeFarm => None,
            Resolved::Only(flocks) => Some(flocks),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restricted_scope_with_no_flocks_allows_nothing() {
        let none = FlockScope::resolve(true, vec![]);
        assert!(!none.allows(FlockId::new()));
        assert_eq!(none.restricted_to(), Some(&[][..]));
        let all = FlockScope::resolve(false, vec![]);
        assert!(all.allows(FlockId::new()));
        assert_eq!(all.restricted_to(), None);
    }
}
