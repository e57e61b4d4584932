//! The eight tools: each one's name, the scope it needs and the roles that
//! may use it. `tools/list` shows a caller exactly role ∩ scope; a call to
//! any other tool is refused as if it did not exist, except that a tool the
//! role allows but the token's scopes do not is answered with a 403
//! `insufficient_scope` naming the scope (step-up).

use crate::domain::{Role, Scope};

#[derive(Clone, Copy, Debug)]
pub struct ToolSpec {
    pub name: &'static str,
    pub scope: Scope,
    pub roles: &'static [Role],
}

const ALL_ROLES: &[Role] = &[Role::Owner, Role::Manager, Role::Worker, Role::Viewer];

pub const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "list_flocks",
        scope: Scope::FarmRead,
        roles: ALL_ROLES,
    },
    ToolSpec {
        name: "get_flock",
        scope: Scope::FarmRead,
        roles: ALL_ROLES,
    },
    ToolSpec {
        name: "list_daily_entries",
        scope: Scope::FarmRead,
        roles: ALL_ROLES,
    },
    ToolSpec {
        name: "production_summary",
        scope: Scope::FarmRead,
        roles: ALL_ROLES,
    },
    ToolSpec {
        name: "list_egg_lots",
        scope: Scope::FarmRead,
        roles: ALL_ROLES,
    },
    ToolSpec {
        name: "stock_levels",
        scope: Scope::FarmRead,
        roles: &[Role::Owner, Role::Manager],
    },
    ToolSpec {
        name: "mortality_report",
        scope: Scope::FarmRead,
        roles: &[Role::Owner, Role::Manager, Role::Worker],
    },
    ToolSpec {
        name: "record_daily_entry",
        scope: Scope::DailyEntriesWrite,
        roles: &[Role::Owner, Role::Manager, Role::Worker],
    },
];

/// What a caller may do with a named tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Allowed,
    /// The role allows it, the token lacks this scope: 403 step-up.
    MissingScope(Scope),
    /// Unknown, or the role does not allow it: answered like an unknown tool.
    Hidden,
}

pub fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

pub fn access(name: &str, role: Role, scopes: &crate::domain::ScopeSet) -> Access {
    match find(name) {
        None => Access::Hidden,
        Some(tool) if !tool.roles.contains(&role) => Access::Hidden,
        Some(tool) if !scopes.contains(tool.scope) => Access::MissingScope(tool.scope),
        Some(_) => Access::Allowed,
    }
}

/// The tools `tools/list` shows this caller.
pub fn visible(
    role: Role,
    scopes: &crate::domain::ScopeSet,
) -> impl Iterator<Item = &'static ToolSpec> + '_ {
    TOOLS
        .iter()
        .filter(move |t| t.roles.contains(&role) && scopes.contains(t.scope))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ScopeSet;

    #[test]
    fn a_viewer_with_read_sees_five_tools_and_no_write() {
        let read = ScopeSet::from_scopes([Scope::FarmRead]);
        let names: Vec<_> = visible(Role::Viewer, &read).map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "list_flocks",
                "get_flock",
                "list_daily_entries",
                "production_summary",
                "list_egg_lots"
            ]
        );
        assert_eq!(
            access("record_daily_entry", Role::Viewer, &ScopeSet::all()),
            Access::Hidden
        );
        assert_eq!(
            access("record_daily_entry", Role::Worker, &read),
            Access::MissingScope(Scope::DailyEntriesWrite)
        );
        assert_eq!(access("stock_levels", Role::Worker, &read), Access::Hidden);
        assert_eq!(
            access("no_such_tool", Role::Owner, &ScopeSet::all()),
            Access::Hidden
        );
        assert_eq!(access("stock_levels", Role::Owner, &read), Access::Allowed);
    }
}
