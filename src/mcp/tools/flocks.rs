//! `list_flocks` and `get_flock`, and how every tool finds a flock by name.
//!
//! A name is looked up only among the flocks the caller may see (farm and
//! flock scope are in the query), so "no flock named X" is all a caller
//! learns about a flock outside its scope or on another farm. A name shared
//! by flocks in several houses is refused with the candidates listed; the
//! caller picks one by passing `house`.

use serde_json::{Value, json};

use super::args::{self, invalid, tool_args};
use super::entries::entry_json;
use super::{ToolCall, ToolError, ToolReply, ToolResult, internal};
use crate::domain::{EntryDate, FlockStatus, PageSize, Period};
use crate::mcp::CallContext;
use crate::storage::Reader;
use crate::storage::daily_entries;
use crate::storage::flocks::{self, FlockFilter, FlockKey, FlockRow, MAX_NAME_MATCHES};

const LIST: &str = "flocks";

tool_args! {
    /// Arguments of `list_flocks`.
    pub struct ListFlocksArgs {
        /// Only flocks with this status.
        pub status: Option<FlockStatus>,
        /// Only flocks in the house with this name.
        pub house: Option<String>,
        ..page("Flocks"),
    }
}

tool_args! {
    /// Arguments of `get_flock`.
    pub struct GetFlockArgs {
        ..flock,
    }
}

/// The one flock in the caller's scope named `name` (in `house`, if given).
pub async fn resolve(
    db: &mut Reader,
    ctx: &CallContext,
    name: &str,
    house: Option<&str>,
) -> Result<FlockRow, ToolError> {
    let name = args::name("flock", name)?;
    let house = args::optional_name("house", house)?;
    let mut found = flocks::named(db, ctx.farm, &ctx.flocks, &name, house.as_deref())
        .await
        .map_err(internal)?;
    match found.len() {
        0 => Err(ToolError::Refused(match &house {
            Some(house) => format!("no flock named {name:?} in a house named {house:?}"),
            None => format!("no flock named {name:?}"),
        })),
        1 => Ok(found.remove(0)),
        n => {
            let shown: Vec<String> = found
                .iter()
                .take(MAX_NAME_MATCHES as usize)
                .map(|f| format!("{:?} in house {:?}", f.name, f.house))
                .collect();
            let more = if n as i64 > MAX_NAME_MATCHES {
                ", and more"
            } else {
                ""
            };
            Err(ToolError::Refused(format!(
                "several flocks are named {name:?}: {}{more}. Pass `house` to choose one.",
                shown.join("; ")
            )))
        }
    }
}

/// The flock the caller named, if it named one; `house` alone is refused.
pub async fn resolve_if_named(
    db: &mut Reader,
    ctx: &CallContext,
    flock: Option<&str>,
    house: Option<&str>,
) -> Result<Option<FlockRow>, ToolError> {
    match (flock, house) {
        (Some(name), house) => Ok(Some(resolve(db, ctx, name, house).await?)),
        (None, Some(_)) => Err(invalid(
            "house only chooses between flocks of the same name; pass flock too",
        )),
        (None, None) => Ok(None),
    }
}

/// Whole days since placement (0 for a flock placed today or later).
fn age_days(flock: &FlockRow, today: EntryDate) -> i64 {
    today
        .days_since(EntryDate::from_date(flock.placed_on))
        .max(0)
}

pub fn flock_json(flock: &FlockRow, today: EntryDate) -> Value {
    let age = age_days(flock, today);
    json!({
        "name": flock.name,
        "house": flock.house,
        "breed": flock.breed,
        "placed_on": EntryDate::from_date(flock.placed_on).to_string(),
        "age_days": age,
        "age_weeks": age / 7,
        "head_count": flock.head_count,
        "status": flock.status,
    })
}

fn flock_line(flock: &FlockRow, today: EntryDate) -> String {
    format!(
        "{} ({}): {}, {} birds, {} weeks old, {}",
        flock.name,
        flock.house,
        flock.breed,
        flock.head_count,
        age_days(flock, today) / 7,
        flock.status
    )
}

pub async fn list_flocks(t: ToolCall<'_>, a: ListFlocksArgs) -> ToolResult {
    let ToolCall {
        mut db, ctx, now, ..
    } = t;
    let db = &mut db;
    let (size, after) = a.page::<FlockKey>(LIST)?;
    let filter = FlockFilter {
        status: a.status,
        house: args::optional_name("house", a.house.as_deref())?,
    };
    let page = flocks::list_page(db, ctx.farm, &ctx.flocks, &filter, after.as_ref(), size)
        .await
        .map_err(internal)?;
    let today = EntryDate::today(now);
    let next = page.next_cursor(LIST, FlockRow::key);
    let structured = json!({
        "flocks": page.items.iter().map(|f| flock_json(f, today)).collect::<Vec<_>>(),
    });
    let text = if page.items.is_empty() {
        "No flocks.".to_owned()
    } else {
        page.items
            .iter()
            .map(|f| flock_line(f, today))
            .collect::<Vec<_>>()
            .join("\n")
    };
    Ok(ToolReply::page(structured, text, next, "flocks"))
}

pub async fn get_flock(t: ToolCall<'_>, a: GetFlockArgs) -> ToolResult {
    let ToolCall {
        mut db, ctx, now, ..
    } = t;
    let db = &mut db;
    let flock = resolve(db, ctx, &a.flock, a.house.as_deref()).await?;
    let today = EntryDate::today(now);
    let week = Period::new(today.minus_days(6), today).map_err(invalid)?;
    let size = PageSize::parse(Some(7)).map_err(invalid)?;
    let entries = daily_entries::list_page(
        db,
        ctx.farm,
        &ctx.flocks,
        flock.flock_id(),
        week,
        None,
        size,
    )
    .await
    .map_err(internal)?;
    let eggs: i64 = entries.items.iter().map(|e| e.eggs_collected).sum();
    let deaths: i64 = entries.items.iter().map(|e| e.mortality).sum();
    let recorded = entries.items.len() as i64;
    let mut structured = json!({ "flock": flock_json(&flock, today) });
    structured["last_7_days"] = json!({
        "from": week.from().to_string(),
        "to": week.to().to_string(),
        "days_recorded": recorded,
        "eggs_collected": eggs,
        "mortality": deaths,
        "entries": entries.items.iter().map(entry_json).collect::<Vec<_>>(),
    });
    let text = format!(
        "{}\nLast 7 days ({} to {}): {} days recorded, {} eggs collected, {} deaths.",
        flock_line(&flock, today),
        week.from(),
        week.to(),
        recorded,
        eggs,
        deaths
    );
    Ok(ToolReply { structured, text })
}
