//! `list_daily_entries` and `record_daily_entry`: a flock's days, read in
//! pages and written one day at a time.
//!
//! The write's rules live here (the day is not in the future and not before
//! placement, mortality within the head count, the flock within the
//! caller's scope); its atomicity, replay detection and audit row live in
//! `storage::daily_entries::record`, in one transaction.

use serde_json::{Value, json};
use time::OffsetDateTime;

use super::args::{self, invalid, tool_args};
use super::flocks::resolve;
use super::{ToolCall, ToolError, ToolReply, ToolResult, internal};
use crate::domain::{EntryDate, Notes};
use crate::mcp::Caller;
use crate::storage::audit::{AuditEvent, AuditKind};
use crate::storage::daily_entries::{self, EntryRow, EntryWrite, WriteOutcome};
use crate::storage::flocks::FlockRow;

const LIST: &str = "daily_entries";
pub const MAX_EGGS: i64 = 10_000_000;
pub const MAX_BIRDS: i64 = crate::domain::HeadCount::MAX;
pub const MAX_FEED_G: i64 = 100_000_000;
pub const MAX_WATER_ML: i64 = 1_000_000_000;
pub const MAX_NOTES_CHARS: usize = crate::domain::notes::MAX_NOTES_CHARS;

tool_args! {
    /// Arguments of `list_daily_entries`.
    pub struct ListDailyEntriesArgs {
        ..flock,
        ..period("day", 30),
        ..page("Entries"),
    }
}

tool_args! {
/// Arguments of `record_daily_entry`.
pub struct RecordDailyEntryArgs {
    ..flock,
    /// The day, YYYY-MM-DD: not in the future and not before the flock was placed.
    #[schemars(extend("format" = "date"))]
    pub date: String,
    /// Eggs collected that day.
    #[schemars(range(min = 0, max = MAX_EGGS))]
    pub eggs_collected: i64,
    /// Cracked eggs that day (omitted: unchanged, or 0 for a new entry).
    #[schemars(range(min = 0, max = MAX_EGGS))]
    pub eggs_cracked: Option<i64>,
    /// Birds that died that day, at most the flock's head count (omitted: unchanged, or 0).
    #[schemars(range(min = 0, max = MAX_BIRDS))]
    pub mortality: Option<i64>,
    /// Feed used, in grams (omitted: unchanged, or 0).
    #[schemars(range(min = 0, max = MAX_FEED_G))]
    pub feed_used_g: Option<i64>,
    /// Water used, in millilitres (omitted: unchanged, or 0).
    #[schemars(range(min = 0, max = MAX_WATER_ML))]
    pub water_used_ml: Option<i64>,
    /// Free-text notes, up to 1000 characters (omitted: unchanged, or empty).
    #[schemars(length(max = MAX_NOTES_CHARS))]
    pub notes: Option<String>,
    /// The version you last read: the write happens only if the entry is
    /// still at it (0: only if there is no entry for that day yet).
    #[schemars(range(min = 0))]
    pub expected_version: Option<i64>,
}
}

pub fn entry_json(entry: &EntryRow) -> Value {
    json!({
        "date": EntryDate::from_date(entry.entry_date).to_string(),
        "eggs_collected": entry.eggs_collected,
        "eggs_cracked": entry.eggs_cracked,
        "mortality": entry.mortality,
        "feed_used_g": entry.feed_used_g,
        "water_used_ml": entry.water_used_ml,
        "notes": entry.notes,
        "version": entry.version,
        "recorded_by": entry.recorded_by,
    })
}

fn entry_line(entry: &EntryRow) -> String {
    format!(
        "{}: {} eggs ({} cracked), {} deaths, {} g feed, {} ml water (version {})",
        EntryDate::from_date(entry.entry_date),
        entry.eggs_collected,
        entry.eggs_cracked,
        entry.mortality,
        entry.feed_used_g,
        entry.water_used_ml,
        entry.version
    )
}

pub async fn list_daily_entries(t: ToolCall<'_>, a: ListDailyEntriesArgs) -> ToolResult {
    let ToolCall {
        mut db, ctx, now, ..
    } = t;
    let db = &mut db;
    let period = a.period(now)?;
    let (size, after) = a.page::<String>(LIST)?;
    let after = after
        .map(|raw| EntryDate::parse(&raw).map(EntryDate::date))
        .transpose()
        .map_err(|_| invalid("cursor: not a cursor of this list; pass next_cursor unchanged"))?;
    let flock = resolve(db, ctx, &a.flock, a.house.as_deref()).await?;
    let page = daily_entries::list_page(
        db,
        ctx.farm,
        &ctx.flocks,
        flock.flock_id(),
        period,
        after,
        size,
    )
    .await
    .map_err(internal)?;
    let next = page.next_cursor(LIST, |e| EntryDate::from_date(e.entry_date).to_string());
    let structured = json!({
        "flock": flock.name,
        "house": flock.house,
        "entries": page.items.iter().map(entry_json).collect::<Vec<_>>(),
    });
    let mut text = format!(
        "{} ({}), {} to {}:",
        flock.name,
        flock.house,
        period.from(),
        period.to()
    );
    if page.items.is_empty() {
        text.push_str(" no entries.");
    }
    for entry in &page.items {
        text.push('\n');
        text.push_str(&entry_line(entry));
    }
    Ok(ToolReply::page(structured, text, next, "entries").over(period))
}

/// The checked arguments of a write, before the flock is known.
struct Checked {
    date: EntryDate,
    eggs_collected: i64,
    eggs_cracked: Option<i64>,
    mortality: Option<i64>,
    feed_used_g: Option<i64>,
    water_used_ml: Option<i64>,
    notes: Option<Notes>,
    expected_version: Option<i64>,
}

fn check(a: &RecordDailyEntryArgs) -> Result<Checked, ToolError> {
    let notes = a
        .notes
        .as_deref()
        .map(Notes::parse)
        .transpose()
        .map_err(invalid)?;
    Ok(Checked {
        date: args::date("date", &a.date)?,
        eggs_collected: args::count("eggs_collected", a.eggs_collected, MAX_EGGS)?,
        eggs_cracked: args::optional_count("eggs_cracked", a.eggs_cracked, MAX_EGGS)?,
        mortality: args::optional_count("mortality", a.mortality, MAX_BIRDS)?,
        feed_used_g: args::optional_count("feed_used_g", a.feed_used_g, MAX_FEED_G)?,
        water_used_ml: args::optional_count("water_used_ml", a.water_used_ml, MAX_WATER_ML)?,
        notes,
        expected_version: args::optional_count("expected_version", a.expected_version, i64::MAX)?,
    })
}

/// The domain's refusals, once the flock is known.
fn refuse_if_impossible(
    c: &Checked,
    flock: &FlockRow,
    now: OffsetDateTime,
) -> Result<(), ToolError> {
    if c.date > EntryDate::latest_started(now) {
        return Err(ToolError::Refused(format!(
            "{} is in the future; record a day once it has begun",
            c.date
        )));
    }
    let placed = EntryDate::from_date(flock.placed_on);
    if c.date < placed {
        return Err(ToolError::Refused(format!(
            "{} is before flock {:?} was placed on {placed}",
            c.date, flock.name
        )));
    }
    if let Some(mortality) = c.mortality
        && mortality > flock.head_count.get()
    {
        return Err(ToolError::Refused(format!(
            "mortality {mortality} exceeds flock {:?}'s head count of {}",
            flock.name, flock.head_count
        )));
    }
    Ok(())
}

pub async fn record_daily_entry(t: ToolCall<'_>, a: RecordDailyEntryArgs) -> ToolResult {
    let ToolCall {
        store,
        mut db,
        ctx,
        now,
    } = t;
    let c = check(&a)?;
    let flock = resolve(&mut db, ctx, &a.flock, a.house.as_deref()).await?;
    refuse_if_impossible(&c, &flock, now)?;
    // Given back before the write waits for its transaction: on PostgreSQL
    // both come from one pool, and a burst of writes that each held a
    // reader while waiting for a writer would hold every connection and
    // wait on each other until the pool's acquire timeout.
    drop(db);

    let write = EntryWrite {
        farm: ctx.farm,
        house: flock.house_id(),
        flock: flock.flock_id(),
        date: c.date.date(),
        eggs_collected: c.eggs_collected,
        eggs_cracked: c.eggs_cracked,
        mortality: c.mortality,
        feed_used_g: c.feed_used_g,
        water_used_ml: c.water_used_ml,
        notes: c.notes.as_ref(),
        expected_version: c.expected_version,
        recorded_by: ctx.user(),
        recorded_by_automation: ctx.automation(),
    };
    let mut detail = json!({
        "tool": "record_daily_entry",
        "flock": flock.name,
        "house": flock.house,
        "flock_id": flock.id.to_string(),
        "date": c.date.to_string(),
    });
    // An automation's write names it, as the audit log shows it; its name
    // stays in the row even if the automation is deleted later.
    if let (Caller::Automation { name, .. }, Some(object)) = (&ctx.caller, detail.as_object_mut()) {
        object.insert("automation".into(), name.clone().into());
    }
    let audit = AuditEvent {
        kind: AuditKind::ToolWrite,
        farm: Some(ctx.farm),
        user: ctx.user(),
        client_id: Some(ctx.client_id.as_str()),
        grant: ctx.grant(),
        automation: ctx.automation(),
        detail,
    };
    let outcome = daily_entries::record(store, &write, &audit, now)
        .await
        .map_err(internal)?;
    let (change, entry) = match outcome {
        WriteOutcome::Created(entry) => ("created", entry),
        WriteOutcome::Updated(entry) => ("updated", entry),
        WriteOutcome::Replayed(entry) => ("unchanged", entry),
        WriteOutcome::Conflict(current) => return Err(conflict(&flock, c.date, &c, current)),
    };
    let replayed = change == "unchanged";
    let structured = json!({
        "replayed": replayed,
        "change": change,
        "flock": flock.name,
        "house": flock.house,
        "entry": entry_json(&entry),
    });
    let text = if replayed {
        format!(
            "Already recorded, nothing changed: {} ({}) {}",
            flock.name,
            flock.house,
            entry_line(&entry)
        )
    } else {
        format!(
            "Entry {change}: {} ({}) {}",
            flock.name,
            flock.house,
            entry_line(&entry)
        )
    };
    Ok(ToolReply { structured, text })
}

/// The refusal of a write whose `expected_version` is stale: it carries the
/// current entry (as JSON) and version so the caller can re-read and retry.
fn conflict(
    flock: &FlockRow,
    date: EntryDate,
    c: &Checked,
    current: Option<EntryRow>,
) -> ToolError {
    let expected = c.expected_version.unwrap_or_default();
    let message = match current {
        None => format!(
            "conflict: expected version {expected} of the entry for {:?} ({}) on {date}, \
             but there is no entry for that day; nothing was written. \
             Retry without expected_version (or with 0) to create it.",
            flock.name, flock.house
        ),
        Some(current) => format!(
            "conflict: the entry for {:?} ({}) on {date} is at version {}, not {expected}; \
             nothing was written. Current entry: {}. \
             Retry with expected_version {} to replace it.",
            flock.name,
            flock.house,
            current.version,
            entry_json(&current),
            current.version
        ),
    };
    ToolError::Refused(message)
}
