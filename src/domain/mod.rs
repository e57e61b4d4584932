//! The farm's vocabulary, with no I/O.
//!
//! Values that cross a trust boundary (an email, a role, a scope, a flock
//! scope, a day, a currency, a page cursor) are built only through `parse`
//! or a constructor that checks them, so code that holds one never has to
//! check it again. Storage and protocol code depend on this module; it
//! depends on nothing of Coop's.

pub mod access;
pub mod dates;
pub mod email;
pub mod flock_scope;
pub mod ids;
pub mod issuer;
pub mod money;
pub mod network;
pub mod paging;
pub mod role;
pub mod scope;

pub use access::{Access, AccessError};
pub use dates::{EntryDate, Period};
pub use email::Email;
pub use flock_scope::FlockScope;
pub use ids::{AutomationId, ClientId, FarmId, FlockId, GrantId, HouseId, UserId};
pub use issuer::{Issuer, IssuerError};
pub use money::{Currency, Money};
pub use paging::{Page, PageSize};
pub use role::Role;
pub use scope::{Scope, ScopeSet};
