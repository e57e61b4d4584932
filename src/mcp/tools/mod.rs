//! The farm tools: argument types (with generated JSON schemas), the
//! queries behind them, and the replies.
//!
//! INTERFACE between the tools and the MCP transport: the transport checks
//! `catalog::access` first, then calls [`call`] with the verified
//! [`CallContext`]; it lists [`definitions`] filtered by `catalog::visible`.
//!
//! Every tool follows one shape: parse the arguments into a
//! `deny_unknown_fields` struct (its schema is what `tools/list` shows),
//! check them into domain values (-32602 on failure), resolve any flock name
//! within the caller's scope, run paged or period-bounded SQL that filters by
//! the context's farm and flock scope, and answer with structured JSON (lists
//! under a named key, `next_cursor` when more follow) plus a short text.

mod args;
mod eggs;
mod entries;
mod flocks;
mod reports;
mod stock;

#[cfg(test)]
mod tests;

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde_json::{Map, Value};
use time::OffsetDateTime;

use super::CallContext;
use super::catalog::{self, Access, ToolSpec};
use crate::storage::{Reader, Store, StoreError};

/// One tool as `tools/list` shows it.
#[derive(Clone, Debug)]
pub struct ToolDefinition {
    pub spec: &'static ToolSpec,
    pub title: &'static str,
    pub description: &'static str,
    /// JSON Schema of the arguments, generated from the argument type.
    pub input_schema: Map<String, Value>,
}

/// A successful tool answer: structured content plus a text rendering.
#[derive(Clone, Debug)]
pub struct ToolReply {
    pub structured: Value,
    pub text: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// Malformed arguments: JSON-RPC -32602 with this message.
    #[error("{0}")]
    InvalidArguments(String),
    /// A domain refusal (not found, ambiguous name, conflict, out of the
    /// caller's flock scope): a tool result with `isError: true`.
    #[error("{0}")]
    Refused(String),
    /// A storage or internal failure: JSON-RPC -32603, detail logged only.
    #[error("internal: {0}")]
    Internal(String),
}

/// A storage failure as a tool error: logged here, never shown.
pub(crate) fn internal(err: StoreError) -> ToolError {
    tracing::error!(error = %err, "tool storage failure");
    ToolError::Internal(err.to_string())
}

/// What each tool is, besides its catalog entry.
struct About {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    schema: fn() -> Map<String, Value>,
}

fn about<T: JsonSchema>(
    name: &'static str,
    title: &'static str,
    description: &'static str,
) -> About {
    About {
        name,
        title,
        description,
        schema: args::schema_of::<T>,
    }
}

fn abouts() -> [About; 8] {
    [
        about::<flocks::ListFlocksArgs>(
            "list_flocks",
            "List flocks",
            "The flocks you can see, by house and name: breed, placement date, age, head count \
             and status. Paged: pass next_cursor back as cursor for more.",
        ),
        about::<flocks::GetFlockArgs>(
            "get_flock",
            "Get one flock",
            "One flock by name: breed, age, head count, status, and its daily entries of the \
             last 7 days with totals. If several houses have a flock of that name, pass house.",
        ),
        about::<entries::ListDailyEntriesArgs>(
            "list_daily_entries",
            "List a flock's daily entries",
            "A flock's daily entries (eggs collected and cracked, mortality, feed, water, notes, \
             version) for a period of at most 366 days, newest first. Paged.",
        ),
        about::<reports::ProductionSummaryArgs>(
            "production_summary",
            "Production summary",
            "Eggs per day, lay rate and mortality over a period of at most 366 days, for one \
             flock or every flock you can see, with a per-day breakdown.",
        ),
        about::<eggs::ListEggLotsArgs>(
            "list_egg_lots",
            "List egg lots",
            "Egg lots laid in a period of at most 366 days, newest first, optionally by status \
             or flock: lot code, flock, grade, quantity, status. Paged.",
        ),
        about::<stock::StockLevelsArgs>(
            "stock_levels",
            "Stock levels",
            "The farm's stock (feed, medication, packaging, other): quantity, unit, unit cost \
             and value as text with the currency, e.g. \"12.50 EUR\". Paged.",
        ),
        about::<reports::MortalityReportArgs>(
            "mortality_report",
            "Mortality report",
            "Deaths per flock over a period of at most 366 days, with the rate against the \
             head count and the total. Paged by flock.",
        ),
        about::<entries::RecordDailyEntryArgs>(
            "record_daily_entry",
            "Record a daily entry",
            "Create or update one day's entry for a flock named by you. Omitted optional \
             fields keep their stored value. Sending the same entry again changes nothing and \
             answers replayed: true. Pass expected_version (from a read) to write only if \
             nobody changed the entry since; a mismatch is refused with the current entry.",
        ),
    ]
}

/// Every tool's definition, built once.
pub fn definitions() -> &'static [ToolDefinition] {
    static DEFINITIONS: OnceLock<Vec<ToolDefinition>> = OnceLock::new();
    DEFINITIONS.get_or_init(|| {
        abouts()
            .into_iter()
            .filter_map(|a| {
                catalog::find(a.name).map(|spec| ToolDefinition {
                    spec,
                    title: a.title,
                    description: a.description,
                    input_schema: (a.schema)(),
                })
            })
            .collect()
    })
}

/// Runs the named tool for `ctx`. The caller has already checked access;
/// it is checked again here so that no path reaches a tool the caller's
/// role and scopes do not allow.
pub async fn call(
    store: &Store,
    db: &mut Reader,
    ctx: &CallContext,
    name: &str,
    arguments: Map<String, Value>,
    now: OffsetDateTime,
) -> Result<ToolReply, ToolError> {
    match catalog::access(name, ctx.role, &ctx.scopes) {
        Access::Allowed => {}
        Access::Hidden => {
            return Err(ToolError::InvalidArguments(format!("Unknown tool: {name}")));
        }
        Access::MissingScope(scope) => {
            return Err(ToolError::Refused(format!(
                "this tool needs the {} scope",
                scope.as_str()
            )));
        }
    }
    match name {
        "list_flocks" => flocks::list_flocks(db, ctx, arguments, now).await,
        "get_flock" => flocks::get_flock(db, ctx, arguments, now).await,
        "list_daily_entries" => entries::list_daily_entries(db, ctx, arguments, now).await,
        "production_summary" => reports::production_summary(db, ctx, arguments, now).await,
        "list_egg_lots" => eggs::list_egg_lots(db, ctx, arguments, now).await,
        "stock_levels" => stock::stock_levels(db, ctx, arguments, now).await,
        "mortality_report" => reports::mortality_report(db, ctx, arguments, now).await,
        "record_daily_entry" => entries::record_daily_entry(store, db, ctx, arguments, now).await,
        _ => Err(ToolError::InvalidArguments(format!("Unknown tool: {name}"))),
    }
}
