//! `stock_levels`: the farm's stock with quantities and values, money as
//! text with its currency ("12.50 EUR"), never minor units.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::tool_args;
use super::{ToolCall, ToolError, ToolReply, ToolResult, internal};
use crate::domain::{Currency, Money};
use crate::storage::stock::{self, StockKey, StockRow};

const LIST: &str = "stock";

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StockCategory {
    Feed,
    Medication,
    Packaging,
    Other,
}

impl StockCategory {
    fn as_str(self) -> &'static str {
        match self {
            Self::Feed => "feed",
            Self::Medication => "medication",
            Self::Packaging => "packaging",
            Self::Other => "other",
        }
    }
}

tool_args! {
    /// Arguments of `stock_levels`.
    pub struct StockLevelsArgs {
        /// Only items of this category.
        pub category: Option<StockCategory>,
        ..page("Items"),
    }
}

/// A stock line with its money rendered; an unreadable stored currency is
/// a storage fault, never shown as bare minor units.
struct Priced<'a> {
    row: &'a StockRow,
    unit_cost: Money,
    value: Money,
}

fn priced(row: &StockRow) -> Result<Priced<'_>, ToolError> {
    let currency = Currency::parse(&row.currency)
        .map_err(|e| ToolError::Internal(format!("stock item {:?}: {e}", row.name)))?;
    let unit_cost = Money::from_minor(i128::from(row.unit_cost_minor), currency);
    let value = unit_cost.times(row.quantity).ok_or_else(|| {
        ToolError::Internal(format!("stock item {:?}: value overflows", row.name))
    })?;
    Ok(Priced {
        row,
        unit_cost,
        value,
    })
}

fn item_json(p: &Priced<'_>) -> Value {
    json!({
        "name": p.row.name,
        "category": p.row.category,
        "quantity": p.row.quantity,
        "unit": p.row.unit,
        "unit_cost": p.unit_cost.to_string(),
        "value": p.value.to_string(),
    })
}

pub async fn stock_levels(t: ToolCall<'_>, a: StockLevelsArgs) -> ToolResult {
    let ToolCall { mut db, ctx, .. } = t;
    let db = &mut db;
    let (size, after) = a.page::<StockKey>(LIST)?;
    let page = stock::list_page(
        db,
        ctx.farm,
        a.category.map(StockCategory::as_str),
        after.as_ref(),
        size,
    )
    .await
    .map_err(internal)?;
    let priced: Vec<Priced<'_>> = page.items.iter().map(priced).collect::<Result<_, _>>()?;
    let next = page.next_cursor(LIST, StockRow::key);
    let structured = json!({
        "items": priced.iter().map(item_json).collect::<Vec<_>>(),
    });
    let mut text = if priced.is_empty() {
        "No stock items.".to_owned()
    } else {
        "Stock:".to_owned()
    };
    for p in &priced {
        text.push_str(&format!(
            "\n{} ({}): {} {} at {} each, worth {}",
            p.row.name, p.row.category, p.row.quantity, p.row.unit, p.unit_cost, p.value
        ));
    }
    Ok(ToolReply::page(structured, text, next, "items"))
}
