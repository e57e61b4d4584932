//! Typed identifiers: a farm id cannot be passed where a user id is wanted.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A new, time-ordered id (UUIDv7: index-friendly inserts).
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            pub fn parse(raw: &str) -> Option<Self> {
                Uuid::parse_str(raw.trim()).ok().map(Self)
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

uuid_id!(
    /// A farm: the tenant every record belongs to.
    FarmId
);
uuid_id!(UserId);
uuid_id!(HouseId);
uuid_id!(FlockId);
uuid_id!(
    /// A grant: one (user, client) connection, the unit of "connected app".
    GrantId
);
uuid_id!(
    /// An automation: a machine client a farm owner controls (client
    /// credentials), never a person.
    AutomationId
);

impl AutomationId {
    /// The `client_id` an automation presents at `/token`, and the `sub`
    /// of its tokens (RFC 9068 §2.2: no resource owner, the client is the
    /// subject). Never a UUID alone, so it cannot be read as a user's id.
    pub fn client_id(&self) -> String {
        format!("{AUTOMATION_PREFIX}{}", self.0)
    }

    /// The automation a `client_id` (or token subject) names, if it is one.
    pub fn from_client_id(raw: &str) -> Option<Self> {
        let id = raw.strip_prefix(AUTOMATION_PREFIX)?;
        // Exactly the hyphenated form `client_id` writes, nothing looser.
        let uuid = Uuid::try_parse(id).ok()?;
        (uuid.hyphenated().to_string() == id).then_some(Self(uuid))
    }
}

const AUTOMATION_PREFIX: &str = "automation-";

/// An OAuth client identifier: an opaque id for registered clients, or the
/// https URL of a Client ID Metadata Document.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClientId(pub String);

impl ClientId {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A client_id that names a metadata document rather than a registration.
    pub fn is_metadata_document_url(&self) -> bool {
        self.0.starts_with("https://")
    }
}

impl std::fmt::Display for ClientId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
