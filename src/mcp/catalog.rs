//! The eight tools, each declared once (name, title, description, the
//! scope it needs, the roles that may use it, its argument type and its
//! handler): `tools/list`, the access rules below and the dispatch are
//! derived from that one declaration, so a ninth tool is one more entry. `tools/list` shows a caller exactly role ∩ scope; a call to
//! any other tool is refused as if it did not exist, except that a tool the
//! role allows but the token's scopes do not is answered with a 403
//! `insufficient_scope` naming the scope (step-up).

use serde_json::{Map, Value};

use super::tools::{ToolCall, ToolError, ToolReply, args, eggs, entries, flocks, reports, stock};
use crate::domain::{Role, Scope};

/// One tool, declared once: `tools/list`, the access rules and the
/// dispatch are all derived from this.
#[derive(Clone, Copy, Debug)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub scope: Scope,
    pub roles: &'static [Role],
    /// The JSON Schema of the arguments, generated from their type.
    pub schema: fn() -> Map<String, Value>,
}

const ALL_ROLES: &[Role] = &[Role::Owner, Role::Manager, Role::Worker, Role::Viewer];

/// Declares every tool: its catalogue entry (name, title, description,
/// scope, roles, argument type) and its handler, from which [`TOOLS`] and
/// [`dispatch`] are made. A handler receives its arguments already parsed
/// into the declared type (-32602 naming the argument otherwise).
macro_rules! tools {
    ($(
        $name:ident {
            title: $title:expr,
            description: $description:expr,
            scope: $scope:expr,
            roles: $roles:expr,
            arguments: $args:ty,
            handler: $handler:path $(,)?
        }
    ),+ $(,)?) => {
        pub const TOOLS: &[ToolSpec] = &[$(
            ToolSpec {
                name: stringify!($name),
                title: $title,
                description: $description,
                scope: $scope,
                roles: $roles,
                schema: args::schema_of::<$args>,
            },
        )+];

        /// Runs the tool `name` (whose access the caller has checked).
        pub(crate) async fn dispatch(
            name: &str,
            call: ToolCall<'_>,
            arguments: Map<String, Value>,
        ) -> Result<ToolReply, ToolError> {
            match name {
                $(stringify!($name) => $handler(call, args::parse::<$args>(arguments)?).await,)+
                _ => Err(ToolError::InvalidArguments(format!("Unknown tool: {name}"))),
            }
        }
    };
}

tools! {
    list_flocks {
        title: "List flocks",
        description: "The flocks you can see, by house and name: breed, placement date, age, head count \
             and status. Paged: pass next_cursor back as cursor for more.",
        scope: Scope::FarmRead,
        roles: ALL_ROLES,
        arguments: flocks::ListFlocksArgs,
        handler: flocks::list_flocks,
    },
    get_flock {
        title: "Get one flock",
        description: "One flock by name: breed, age, head count, status, and its daily entries of the \
             last 7 days with totals. If several houses have a flock of that name, pass house.",
        scope: Scope::FarmRead,
        roles: ALL_ROLES,
        arguments: flocks::GetFlockArgs,
        handler: flocks::get_flock,
    },
    list_daily_entries {
        title: "List a flock's daily entries",
        description: "A flock's daily entries (eggs collected and cracked, mortality, feed, water, notes, \
             version) for a period of at most 366 days, newest first. Paged.",
        scope: Scope::FarmRead,
        roles: ALL_ROLES,
        arguments: entries::ListDailyEntriesArgs,
        handler: entries::list_daily_entries,
    },
    production_summary {
        title: "Production summary",
        description: "Eggs per day, lay rate and mortality over a period of at most 366 days, for one \
             flock or every flock you can see, with a per-day breakdown.",
        scope: Scope::FarmRead,
        roles: ALL_ROLES,
        arguments: reports::ProductionSummaryArgs,
        handler: reports::production_summary,
    },
    list_egg_lots {
        title: "List egg lots",
        description: "Egg lots laid in a period of at most 366 days, newest first, optionally by status \
             or flock: lot code, flock, grade, quantity, status. Paged.",
        scope: Scope::FarmRead,
        roles: ALL_ROLES,
        arguments: eggs::ListEggLotsArgs,
        handler: eggs::list_egg_lots,
    },
    stock_levels {
        title: "Stock levels",
        description: "The farm's stock (feed, medication, packaging, other): quantity, unit, unit cost \
             and value as text with the currency, e.g. \"12.50 EUR\". Paged.",
        scope: Scope::FarmRead,
        roles: &[Role::Owner, Role::Manager],
        arguments: stock::StockLevelsArgs,
        handler: stock::stock_levels,
    },
    mortality_report {
        title: "Mortality report",
        description: "Deaths per flock over a period of at most 366 days, with the rate against the \
             head count and the total. Paged by flock.",
        scope: Scope::FarmRead,
        roles: &[Role::Owner, Role::Manager, Role::Worker],
        arguments: reports::MortalityReportArgs,
        handler: reports::mortality_report,
    },
    record_daily_entry {
        title: "Record a daily entry",
        description: "Create or update one day's entry for a flock named by you. Omitted optional \
             fields keep their stored value. Sending the same entry again changes nothing and \
             answers replayed: true. Pass expected_version (from a read) to write only if \
             nobody changed the entry since; a mismatch is refused with the current entry.",
        scope: Scope::DailyEntriesWrite,
        roles: &[Role::Owner, Role::Manager, Role::Worker],
        arguments: entries::RecordDailyEntryArgs,
        handler: entries::record_daily_entry,
    },
}

/// What a caller may do with a named tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolAccess {
    Allowed,
    /// The role allows it, the token lacks this scope: 403 step-up.
    MissingScope(Scope),
    /// Unknown, or the role does not allow it: answered like an unknown tool.
    Hidden,
}

pub fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

pub fn access(name: &str, role: Role, scopes: &crate::domain::ScopeSet) -> ToolAccess {
    match find(name) {
        None => ToolAccess::Hidden,
        Some(tool) if !tool.roles.contains(&role) => ToolAccess::Hidden,
        Some(tool) if !scopes.contains(tool.scope) => ToolAccess::MissingScope(tool.scope),
        Some(_) => ToolAccess::Allowed,
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
            ToolAccess::Hidden
        );
        assert_eq!(
            access("record_daily_entry", Role::Worker, &read),
            ToolAccess::MissingScope(Scope::DailyEntriesWrite)
        );
        assert_eq!(
            access("stock_levels", Role::Worker, &read),
            ToolAccess::Hidden
        );
        assert_eq!(
            access("no_such_tool", Role::Owner, &ScopeSet::all()),
            ToolAccess::Hidden
        );
        assert_eq!(
            access("stock_levels", Role::Owner, &read),
            ToolAccess::Allowed
        );
    }
}
