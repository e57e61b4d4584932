//! `production_summary` and `mortality_report`: aggregates over a bounded
//! period, computed in SQL.
//!
//! The period is capped at 366 days, so an aggregate reads at most one
//! entry per flock and day of it; the mortality report also pages its
//! flocks in SQL before aggregating their entries.

use serde_json::{Value, json};

use super::args::tool_args;
use super::flocks::resolve_if_named;
use super::{ToolCall, ToolReply, ToolResult, internal};
use crate::domain::EntryDate;
use crate::storage::daily_entries::{self, DayTotals, FlockDeaths};
use crate::storage::flocks::{FlockKey, FlockRow};

const DEATHS_LIST: &str = "mortality";

tool_args! {
    /// Arguments of `production_summary`.
    pub struct ProductionSummaryArgs {
        /// One flock's name; omit for every flock you can see.
        pub flock: Option<String>,
        ..house,
        ..period("day", 7),
    }
}

tool_args! {
    /// Arguments of `mortality_report`.
    pub struct MortalityReportArgs {
        /// One flock's name; omit for every flock you can see.
        pub flock: Option<String>,
        ..house,
        ..period("day", 30),
        ..page("Flocks"),
    }
}

/// A percentage with one decimal, or `None` with nothing to divide by.
fn percent(part: i64, whole: i64) -> Option<f64> {
    if whole <= 0 {
        return None;
    }
    Some((part as f64 * 1000.0 / whole as f64).round() / 10.0)
}

fn percent_text(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.1}%"))
}

fn day_json(day: &DayTotals) -> Value {
    json!({
        "date": EntryDate::from_date(day.entry_date).to_string(),
        "flocks_recorded": day.flocks_recorded,
        "eggs_collected": day.eggs_collected,
        "eggs_cracked": day.eggs_cracked,
        "mortality": day.mortality,
        "feed_used_g": day.feed_used_g,
        "water_used_ml": day.water_used_ml,
        "hens": day.hens,
        "lay_rate_percent": percent(day.eggs_collected, day.hens),
    })
}

pub async fn production_summary(t: ToolCall<'_>, a: ProductionSummaryArgs) -> ToolResult {
    let ToolCall {
        mut db, ctx, now, ..
    } = t;
    let db = &mut db;
    let period = a.period(now)?;
    let flock = resolve_if_named(db, ctx, a.flock.as_deref(), a.house.as_deref()).await?;
    let days = daily_entries::daily_totals(
        db,
        ctx.farm,
        &ctx.flocks,
        flock.as_ref().map(FlockRow::flock_id),
        period,
    )
    .await
    .map_err(internal)?;
    let sum = |f: fn(&DayTotals) -> i64| days.iter().map(f).sum::<i64>();
    let eggs = sum(|d| d.eggs_collected);
    let hen_days = sum(|d| d.hens);
    let recorded = days.len() as i64;
    let lay_rate = percent(eggs, hen_days);
    let eggs_per_day = if recorded > 0 {
        Some((eggs as f64 * 10.0 / recorded as f64).round() / 10.0)
    } else {
        None
    };
    let subject = match &flock {
        Some(f) => json!({ "flock": f.name, "house": f.house }),
        None => json!("all flocks in scope"),
    };
    let structured = json!({
        "subject": subject,
        "days_in_period": period.days(),
        "days_recorded": recorded,
        "eggs_collected": eggs,
        "eggs_cracked": sum(|d| d.eggs_cracked),
        "eggs_per_recorded_day": eggs_per_day,
        "lay_rate_percent": lay_rate,
        "mortality": sum(|d| d.mortality),
        "feed_used_g": sum(|d| d.feed_used_g),
        "water_used_ml": sum(|d| d.water_used_ml),
        "days": days.iter().map(day_json).collect::<Vec<_>>(),
    });
    let who = match &flock {
        Some(f) => format!("{} ({})", f.name, f.house),
        None => "All flocks".to_owned(),
    };
    let text = format!(
        "{who}, {} to {}: {eggs} eggs on {recorded} of {} days recorded ({} per recorded day), \
         lay rate {}, {} deaths.",
        period.from(),
        period.to(),
        period.days(),
        eggs_per_day.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.1}")),
        percent_text(lay_rate),
        sum(|d| d.mortality),
    );
    Ok(ToolReply { structured, text }.over(period))
}

fn deaths_json(row: &FlockDeaths) -> Value {
    json!({
        "flock": row.name,
        "house": row.house,
        "head_count": row.head_count,
        "deaths": row.deaths,
        "days_recorded": row.days_recorded,
        "mortality_rate_percent": percent(row.deaths, row.head_count.get()),
    })
}

pub async fn mortality_report(t: ToolCall<'_>, a: MortalityReportArgs) -> ToolResult {
    let ToolCall {
        mut db, ctx, now, ..
    } = t;
    let db = &mut db;
    let period = a.period(now)?;
    let (size, after) = a.page::<FlockKey>(DEATHS_LIST)?;
    let flock = resolve_if_named(db, ctx, a.flock.as_deref(), a.house.as_deref()).await?;
    let flock_id = flock.as_ref().map(FlockRow::flock_id);
    let page = daily_entries::deaths_page(
        db,
        ctx.farm,
        &ctx.flocks,
        flock_id,
        period,
        after.as_ref(),
        size,
    )
    .await
    .map_err(internal)?;
    let total = daily_entries::total_deaths(db, ctx.farm, &ctx.flocks, flock_id, period)
        .await
        .map_err(internal)?;
    let next = page.next_cursor(DEATHS_LIST, FlockDeaths::key);
    let structured = json!({
        "total_deaths": total,
        "flocks": page.items.iter().map(deaths_json).collect::<Vec<_>>(),
    });
    let mut text = format!(
        "Mortality {} to {}: {total} deaths in all.",
        period.from(),
        period.to()
    );
    for row in &page.items {
        text.push_str(&format!(
            "\n{} ({}): {} deaths of {} birds ({})",
            row.name,
            row.house,
            row.deaths,
            row.head_count,
            percent_text(percent(row.deaths, row.head_count.get()))
        ));
    }
    Ok(ToolReply::page(structured, text, next, "flocks").over(period))
}
