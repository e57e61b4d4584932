//! `list_egg_lots`: lots by the day they were laid, optionally by status or
//! flock, within the caller's flock scope.

use serde_json::{Value, json};

use super::args::tool_args;
use super::flocks::resolve_if_named;
use super::{ToolCall, ToolReply, ToolResult, internal};
use crate::domain::{EntryDate, LotStatus};
use crate::storage::egg_lots::{self, EggLotFilter, EggLotKey, EggLotRow};

const LIST: &str = "egg_lots";

tool_args! {
    /// Arguments of `list_egg_lots`.
    pub struct ListEggLotsArgs {
        ..period("laying day", 30),
        /// Only lots with this status.
        pub status: Option<LotStatus>,
        /// Only lots from the flock with this name.
        pub flock: Option<String>,
        ..house,
        ..page("Lots"),
    }
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

pub async fn list_egg_lots(t: ToolCall<'_>, a: ListEggLotsArgs) -> ToolResult {
    let ToolCall {
        mut db, ctx, now, ..
    } = t;
    let db = &mut db;
    let period = a.period(now)?;
    let (size, after) = a.page::<EggLotKey>(LIST)?;
    let flock = resolve_if_named(db, ctx, a.flock.as_deref(), a.house.as_deref()).await?;
    let filter = EggLotFilter {
        period,
        status: a.status,
        flock: flock.as_ref().map(|f| f.flock_id()),
    };
    let page = egg_lots::list_page(db, ctx.farm, &ctx.flocks, &filter, after.as_ref(), size)
        .await
        .map_err(internal)?;
    let next = page.next_cursor(LIST, EggLotRow::key);
    let structured = json!({
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
    Ok(ToolReply::page(structured, text, next, "lots").over(period))
}
