//! The states a stored record moves through, each a closed set (the
//! tables' check constraints hold the same words). Each is read from JSON
//! by the same words (an MCP tool's argument), and describes itself as
//! that list of words in a JSON Schema.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Declares a status enum with its one stored and shown word per state.
macro_rules! status {
    (
        $(#[$doc:meta])*
        $name:ident { $($(#[$state_doc:meta])* $state:ident => $word:literal),+ $(,)? }
    ) => {
        $(#[$doc])*
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
            JsonSchema,
        )]
        pub enum $name {
            $($(#[$state_doc])* #[serde(rename = $word)] $state),+
        }

        impl $name {
            pub const ALL: &[Self] = &[$(Self::$state),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$state => $word),+
                }
            }

            pub fn parse(raw: &str) -> Result<Self, String> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|state| state.as_str() == raw)
                    .ok_or_else(|| format!("{raw:?} is not a {}", stringify!($name)))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

status!(
    /// A flock is kept until all its birds are gone; its records stay.
    FlockStatus {
        Active => "active",
        Depleted => "depleted",
    }
);

impl FlockStatus {
    pub fn is_depleted(self) -> bool {
        self == Self::Depleted
    }
}

status!(
    /// Where an egg lot is.
    LotStatus {
        InStore => "in_store",
        Shipped => "shipped",
        Discarded => "discarded",
    }
);

status!(
    /// How an automation proves itself at `/token`.
    AutomationAuth {
        ClientSecretBasic => "client_secret_basic",
        PrivateKeyJwt => "private_key_jwt",
    }
);

status!(
    /// Where an OAuth client's registration came from.
    ClientKind {
        /// Registered by the operator from the command line.
        Registered => "registered",
        /// Self-registered through `/register`.
        Dynamic => "dynamic",
        /// A cached copy of a Client ID Metadata Document.
        MetadataDocument => "metadata_document",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_their_stored_words_and_refuse_others() {
        for status in FlockStatus::ALL {
            assert_eq!(FlockStatus::parse(status.as_str()), Ok(*status));
        }
        for status in LotStatus::ALL {
            assert_eq!(LotStatus::parse(status.as_str()), Ok(*status));
        }
        for method in AutomationAuth::ALL {
            assert_eq!(AutomationAuth::parse(method.as_str()), Ok(*method));
        }
        for kind in ClientKind::ALL {
            assert_eq!(ClientKind::parse(kind.as_str()), Ok(*kind));
        }
        assert_eq!(LotStatus::InStore.to_string(), "in_store");
        assert_eq!(
            serde_json::to_value(ClientKind::MetadataDocument).unwrap(),
            "metadata_document"
        );
        assert!(FlockStatus::Depleted.is_depleted() && !FlockStatus::Active.is_depleted());
        for bad in ["", "Active", " active", "retired"] {
            assert!(FlockStatus::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(LotStatus::parse("in store").is_err());
        assert!(AutomationAuth::parse("none").is_err());
        assert!(ClientKind::parse("other").is_err());
    }
}
