//! The farm's vocabulary, with no I/O.
//!
//! Values that cross a trust boundary (an email, a role, a scope, a flock
//! scope) are built only through `parse` or a constructor that checks them,
//! so code that holds one never has to check it again. Storage and protocol
//! code depend on this module; it depends on nothing of Coop's.

pub mod email;
pub mod ids;
pub mod role;
pub mod scope;

pub use email::Email;
pub use ids::{ClientId, FarmId, FlockId, GrantId, HouseId, UserId};
pub use role::Role;
pub use scope::{Scope, ScopeSet};
