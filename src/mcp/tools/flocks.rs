//! `list_flocks` and `get_flock`, and how every tool finds a flock by name.
//!
//! A name is looked up only among the flocks the caller may see (farm and
//! flock scope are in the query), so "no flock named X" is all a caller
//! learns about a flock outside its scope or on another farm. A name shared
//! by flocks in several houses is refused with the candidates listed; the
//! caller picks one by passing `house`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{self, invalid};
use super::entries::entry_json;
use super::{ToolCall, ToolError, ToolReply, internal};
use crate::domain::{EntryDate, FlockStatus, PageSize, Period};
use crate::mcp::CallContext;
use crate::storage::Reader;
use crate::storage::daily_entries;
use crate::storage::flocks::{self, FlockFilter, FlockKey, FlockRow, MAX_NAME_MATCHES};

const LIST: &str = "flocks";

/// Arguments of `list_flocks`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListFlocksArgs {
    /// Only flocks with this status.
    pub status: Option<FlockStatus>,
    /// Only flocks in the house with this name.
    pub house: Option<String>,
    /// Flocks per page, 1 to 200 (default 50).
    #[schemars(range(min = 1, max = crate::domain::paging::MAX_PAGE_SIZE))]
    pub limit: Option<i64>,
    /// The `next_cursor` of the previous page, unchanged.
    pub cursor: Option<String>,
}

/// Arguments of `get_flock`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetFlockArgs {
    /// The flock's name, as `list_flocks` shows it.
    pub flock: String,
    /// The flock's house; needed only when flocks in several houses share the name.
    pub house: Option<String>,
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

pub async fn list_flocks(t: ToolCall<'_>, a: ListFlocksArgs) -> Result<ToolReply, ToolError> {
    let ToolCall { db, ctx, now, .. } = t;
    let (size, after) = args::page::<FlockKey>(LIST, a.limit, a.cursor.as_deref())?;
    let filter = FlockFilter {
        status: a.status,
        house: args::optional_name("house", a.house.as_deref())?,
    };
    let page = flocks::list_page(db, ctx.farm, &ctx.flocks, &filter, after.as_ref(), size)
        .await
        .map_err(internal)?;
    let today = EntryDate::today(now);
    let next = page.next_cursor(LIST, FlockRow::key);
    let mut structured = json!({
        "flocks": page.items.iter().map(|f| flock_json(f, today)).collect::<Vec<_>>(),
    });
    let mut text = if page.items.is_empty() {
        "No flocks.".to_owned()
    } else {
        page.items
            .iter()
            .map(|f| flock_line(f, today))
            .collect::<Vec<_>>()
            .join("\n")
    };
    if let Some(next) = next {
        structured["next_cursor"] = Value::String(next);
        text.push_str("\nMore flocks follow: pass next_cursor to continue.");
    }
    Ok(ToolReply { structured, text })
}

pub async fn get_flock(t: ToolCall<'_>, a: GetFlockArgs) -> Result<ToolReply, ToolError> {
    let ToolCall { db, ctx, now, .. } = t;
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
