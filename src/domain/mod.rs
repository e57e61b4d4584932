//! The farm's vocabulary, with no I/O.
//!
//! Values that cross a trust boundary (an email, a role, a scope, a flock
//! scope, a day, a currency, a page cursor, a slug, a name, a head count, a
//! status, an entry's notes) are built only through `parse`
//! or a constructor that checks them, so code that holds one never has to
//! check it again. Storage and protocol code depend on this module; it
//! depends on nothing of Coop's.

/// What a checked text newtype (`struct T(String)`, made only by its
/// `parse`) offers besides: read as the `&str` it is wherever one is
/// wanted (a page, a log line, a statement's value), printed and
/// debug-printed as the string it replaces was (messages quote it with
/// `{:?}`), and compared with plain text.
macro_rules! text_newtype {
    ($ty:ident) => {
        impl $ty {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::ops::Deref for $ty {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $ty {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $ty {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

pub mod access;
pub mod auth_method;
pub mod dates;
pub mod email;
pub mod flock_scope;
pub mod head_count;
pub mod ids;
pub mod issuer;
pub mod money;
pub mod name;
pub mod network;
pub mod notes;
pub mod paging;
pub mod role;
pub mod scope;
pub mod slug;
pub mod status;
pub mod this_computer;

pub use access::{Access, AccessError};
pub use auth_method::AuthMethod;
pub use dates::{EntryDate, Period};
pub use email::Email;
pub use flock_scope::FlockScope;
pub use head_count::HeadCount;
pub use ids::{AutomationId, ClientId, FarmId, FlockId, GrantId, HouseId, UserId};
pub use issuer::{Issuer, IssuerError};
pub use money::{Currency, Money};
pub use name::Name;
pub use notes::Notes;
pub use paging::{Page, PageSize};
pub use role::Role;
pub use scope::{Scope, ScopeSet};
pub use slug::FarmSlug;
pub use status::{AutomationAuth, ClientKind, FlockStatus, LotStatus};
