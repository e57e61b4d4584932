//! The call context: who is calling, for which farm, with what rights.
//!
//! Built only by the bearer check, after the token's signature and the
//! shared store both said yes. It is the only way a tool reaches farm data:
//! storage functions for tools take it (or the farm id and flock scope it
//! carries), so a tool cannot forget the tenant or the flock restriction.

use std::sync::{Arc, Mutex};

use crate::domain::{AutomationId, ClientId, FarmId, GrantId, Role, Scope, ScopeSet, UserId};
use crate::storage::Reader;

pub use crate::domain::FlockScope;

#[derive(Clone, Debug)]
pub struct CallContext {
    pub farm: FarmId,
    /// Who is calling: a person through a connected app, or an automation.
    pub caller: Caller,
    /// The member's role, or the automation's: either drives the tools.
    pub role: Role,
    pub flocks: FlockScope,
    /// The scopes the token carries.
    pub scopes: ScopeSet,
    pub client_id: ClientId,
}

/// The subject of a call. An automation is never a person: it has no user
/// id to be mistaken for one, and writes name it as the automation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    /// A member, through the grant they approved.
    Member { user: UserId, grant: GrantId },
    /// An automation of the farm, by its id and (for the audit log) name.
    Automation { id: AutomationId, name: String },
}

impl CallContext {
    pub fn has_scope(&self, scope: Scope) -> bool {
        self.scopes.contains(scope)
    }

    /// The member calling, if a person is.
    pub fn user(&self) -> Option<UserId> {
        match &self.caller {
            Caller::Member { user, .. } => Some(*user),
            Caller::Automation { .. } => None,
        }
    }

    /// The grant the call came through, if a person's.
    pub fn grant(&self) -> Option<GrantId> {
        match &self.caller {
            Caller::Member { grant, .. } => Some(*grant),
            Caller::Automation { .. } => None,
        }
    }

    /// The automation calling, if one is.
    pub fn automation(&self) -> Option<AutomationId> {
        match &self.caller {
            Caller::Automation { id, .. } => Some(*id),
            Caller::Member { .. } => None,
        }
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
