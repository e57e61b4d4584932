//! The call context: who is calling, for which farm, with what rights.
//!
//! Built only by the bearer check, after the token's signature and the
//! shared store both said yes. It is the only way a tool reaches farm data:
//! storage functions for tools take it (or the farm id and flock scope it
//! carries), so a tool cannot forget the tenant or the flock restriction.

use std::sync::{Arc, Mutex};

use crate::domain::{ClientId, FarmId, GrantId, Role, Scope, ScopeSet, UserId};
use crate::storage::Reader;

pub use crate::domain::FlockScope;

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

/// Raised by the handler when the store was out of reach during a call,
/// with the cause. rmcp answers a failed call with HTTP 200 and a JSON-RPC
/// error; this travels beside it in the request's extensions so that the
/// HTTP layer answers 503 with `Retry-After` instead (and logs the cause),
/// as for a failure before rmcp.
#[derive(Clone, Debug, Default)]
pub struct StoreOutage(Arc<Mutex<Option<String>>>);

impl StoreOutage {
    pub fn report(&self, detail: String) {
        if let Ok(mut cause) = self.0.lock() {
            *cause = Some(detail);
        }
    }

    /// The cause, if an outage was reported.
    pub fn take(&self) -> Option<String> {
        self.0.lock().ok().and_then(|mut cause| cause.take())
    }
}
