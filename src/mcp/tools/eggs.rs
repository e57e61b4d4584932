//! `list_egg_lots`: lots by the day they were laid, optionally by status or
//! flock, within the caller's flock scope.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args;
use super::flocks::resolve;
use super::{ToolCall, ToolError, ToolReply, internal};
use crate::domain::{EntryDate, LotStatus};
use crate::storage::egg_lots::{self, EggLotFilter, EggLotKey, EggLotRow};

const LIST: &str = "egg_lots";
const DEFAULT_DAYS: i64 = 30;

/// Arguments of `list_egg_lots`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListEggLotsArgs {
    /// First laying day, YYYY-MM-DD (default: 30 days ending at `to`).
    #[schemars(extend("format" = "date"))]
    pub from: Option<String>,
    /// Last laying day, YYYY-MM-DD (default: today, UTC). At most 366 days after `from`.
    #[schemars(extend("format" = "date"))]
    pub to: Option<String>,
    /// Only lots with this status.
    pub status: Option<LotStatus>,
    /// Only lots from the flock with this name.
    pub flock: Option<String>,
    /// The flock's house; needed only when flocks in several houses share the name.
    pub house: Option<String>,
    /// Lots per page, 1 to 200 (default 50).
    #[schemars(range(min = 1, max = crate::domain::paging::MAX_PAGE_SIZE))]
    pub limit: Option<i64>,
    /// The `next_cursor` of the previous page, unchanged.
    pub cursor: Option<String>,
}

fn lot_json(lot: &EggLotRow) -> Value {
    json!({
        "lot_code": lot.lot_code,
        "flock": lot.flock,
        "house": lot.house,
        "laid_on": EntryDate::from_date(lot.laid_on).to_string(),
        "grade": lot.grade,
        "quantity": lot.quantity,
        "status": lot.status,
    })
}

pub async fn list_egg_lots(t: ToolCall<'_>, a: ListEggLotsArgs) -> Result<ToolReply, ToolError> {
    let ToolCall { db, ctx, now, .. } = t;
    let period = args::period(
        a.from.as_deref(),
        a.to.as_deref(),
        EntryDate::today(now),
        DEFAULT_DAYS,
    )?;
    let (size, after) = args::page::<EggLotKey>(LIST, a.limit, a.cursor.as_deref())?;
    let flock = match (&a.flock, &a.house) {
        (Some(name), house) => Some(resolve(db, ctx, name, house.as_deref()).await?),
        (None, Some(_)) => {
            return Err(args::invalid(
                "house only chooses between flocks of the same name; pass flock too",
            ));
        }
        (None, None) => None,
    };
    let filter = EggLotFilter {
        period,
        status: a.status,
        flock: flock.as_ref().map(|f| f.flock_id()),
    };
    let page = egg_lots::list_page(db, ctx.farm, &ctx.flocks, &filter, after.as_ref(), size)
        .await
        .map_err(internal)?;
    let next = page.next_cursor(LIST, EggLotRow::key);
    let mut structured = json!({
        "from": period.from().to_string(),
        "to": period.to().to_string(),
        "egg_lots": page.items.iter().map(lot_json).collect::<Vec<_>>(),
    });
    let mut text = format!("Egg lots laid {} to {}:", period.from(), period.to());
    if page.items.is_empty() {
        text.push_str(" none.");
    }
    for lot in &page.items {
        text.push_str(&format!(
            "\n{} from {} ({}), laid {}: {} eggs, grade {}, {}",
            lot.lot_code,
            lot.flock,
            lot.house,
            EntryDate::from_date(lot.laid_on),
            lot.quantity,
            lot.grade,
            lot.status
        ));
    }
    if let Some(next) = next {
        structured["next_cursor"] = Value::String(next);
        text.push_str("\nMore lots follow: pass next_cursor to continue.");
    }
    Ok(ToolReply { structured, text })
}
