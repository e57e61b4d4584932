//! The call context: who is calling, for which farm, with what rights.
//!
//! Built only by the bearer check, after the token's signature and the
//! shared store both said yes. It is the only way a tool reaches farm data:
//! storage functions for tools take it (or the farm id and flock scope it
//! carries), so a tool cannot forget the tenant or the flock restriction.

use std::sync::{Arc, Mutex};

use crate::domain::{ClientId, FarmId, FlockId, GrantId, Role, Scope, ScopeSet, UserId};
use crate::storage::Reader;

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

#[derive(Clone, Debug)]
pub struct CallContext {
    pub farm: FarmId,
    pub user: UserId,
    pub role: Role,
    pub flocks: FlockScope,
    /// The scopes the token carries.
    pub scopes: ScopeSet,
    pub grant: GrantId,
    pub client_id: ClientId,
}

impl CallContext {
    pub fn has_scope(&self, scope: Scope) -> bool {
        self.scopes.contains(scope)
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

/// The reader the bearer check used, handed on to the tool so that one
/// `tools/call` runs on one acquired connection. It travels in the HTTP
/// request's extensions (which must be `Clone + Sync`), and is taken out
/// once; a handler that finds it gone acquires a reader of its own.
#[derive(Clone, Default)]
pub struct HeldReader(Arc<Mutex<Option<Reader>>>);

impl HeldReader {
    pub fn new(reader: Reader) -> Self {
        Self(Arc::new(Mutex::new(Some(reader))))
    }

    pub fn take(&self) -> Option<Reader> {
        self.0.lock().ok().and_then(|mut held| held.take())
    }
}
