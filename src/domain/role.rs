//! A member's one role on their farm.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Owner,
    Manager,
    Worker,
    Viewer,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Owner, Role::Manager, Role::Worker, Role::Viewer];

    pub fn parse(raw: &str) -> Result<Self, String> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "owner" => Ok(Self::Owner),
            "manager" => Ok(Self::Manager),
            "worker" => Ok(Self::Worker),
            "viewer" => Ok(Self::Viewer),
            _ => Err(format!(
                "{raw:?} is not a role (owner, manager, worker, viewer)"
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Manager => "manager",
            Self::Worker => "worker",
            Self::Viewer => "viewer",
        }
    }

    /// Only workers may be limited to some flocks; every other role sees the
    /// whole farm.
    pub fn may_be_flock_restricted(self) -> bool {
        self == Self::Worker
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_round_trip_and_unknown_ones_are_refused() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()).unwrap(), role);
        }
        assert!(Role::parse("admin").is_err());
    }
}
