//! Tool arguments: parsing the JSON object a client sent into a typed
//! struct, the schema `tools/list` advertises for it, and the checks that
//! turn raw values into domain values.
//!
//! Everything here fails with [`ToolError::InvalidArguments`] (JSON-RPC
//! -32602) and a message that names the argument, so a client (often a
//! model) can correct the call. Domain refusals (a date in the future, a
//! flock not found) are decided later, by the tools.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::ToolError;
use crate::domain::{EntryDate, PageSize, Period, paging};

pub fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::InvalidArguments(message.into())
}

/// Deserializes the arguments; unknown fields are refused by the structs'
/// `deny_unknown_fields`.
pub fn parse<T: DeserializeOwned>(arguments: Map<String, Value>) -> Result<T, ToolError> {
    serde_path_to_error::deserialize(Value::Object(arguments)).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if path == "." {
            invalid(format!("invalid arguments: {inner}"))
        } else {
            invalid(format!("invalid argument {path}: {inner}"))
        }
    })
}

/// The JSON Schema of `T` as an inline object schema (no `$ref`, no
/// `$schema`, no Rust type name as title): what MCP clients handle best.
pub fn schema_of<T: JsonSchema>() -> Map<String, Value> {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let schema = generator.into_root_schema_for::<T>();
    let mut object = match Value::from(schema) {
        Value::Object(object) => object,
        _ => Map::new(),
    };
    object.remove("title");
    object.remove("$defs");
    object.insert("type".into(), Value::String("object".into()));
    object
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    object
}

/// A count in `0..=max`.
pub fn count(field: &str, value: i64, max: i64) -> Result<i64, ToolError> {
    if (0..=max).contains(&value) {
        Ok(value)
    } else {
        Err(invalid(format!(
            "{field} must be between 0 and {max}, not {value}"
        )))
    }
}

pub fn optional_count(field: &str, value: Option<i64>, max: i64) -> Result<Option<i64>, ToolError> {
    value.map(|v| count(field, v, max)).transpose()
}

pub fn date(field: &str, raw: &str) -> Result<EntryDate, ToolError> {
    EntryDate::parse(raw).map_err(|e| invalid(format!("{field}: {e}")))
}

pub fn optional_date(field: &str, raw: Option<&str>) -> Result<Option<EntryDate>, ToolError> {
    raw.map(|r| date(field, r)).transpose()
}

/// The period from `from`/`to`; see [`Period::from_parts`].
pub fn period(
    from: Option<&str>,
    to: Option<&str>,
    today: EntryDate,
    default_days: i64,
) -> Result<Period, ToolError> {
    let from = optional_date("from", from)?;
    let to = optional_date("to", to)?;
    Period::from_parts(from, to, today, default_days).map_err(invalid)
}

/// A name as the caller typed it: trimmed, 1 to 100 printable characters.
pub fn name(field: &str, raw: &str) -> Result<String, ToolError> {
    let name = raw.trim();
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(invalid(format!(
            "{field} must be 1 to 100 printable characters"
        )));
    }
    Ok(name.to_owned())
}

pub fn optional_name(field: &str, raw: Option<&str>) -> Result<Option<String>, ToolError> {
    raw.map(|r| name(field, r)).transpose()
}

/// The page size and the decoded cursor of the list named `list`.
pub fn page<K: DeserializeOwned>(
    list: &str,
    limit: Option<i64>,
    cursor: Option<&str>,
) -> Result<(PageSize, Option<K>), ToolError> {
    let size = PageSize::parse(limit).map_err(invalid)?;
    let after = cursor
        .map(|c| paging::decode_cursor::<K>(list, c))
        .transpose()
        .map_err(|e| invalid(format!("cursor: {e}")))?;
    Ok((size, after))
}

/// Declares a tool's argument struct, `deny_unknown_fields` (a misspelt
/// argument is refused, not ignored), from its own fields and the groups
/// several tools take in the same words. A group is declared once with
/// what reads it, so a default and the schema that states it cannot part:
///
/// - `..flock`: the flock by name, then `..house`;
/// - `..house`: the house that tells same-named flocks apart;
/// - `..period("day", 30)`: `from` and `to`, the period `30` days long
///   by default, read by `period(now)`;
/// - `..page("Entries")`: `limit` and `cursor`, read by `page::<Key>(list)`.
macro_rules! tool_args {
    ($(#[$meta:meta])* pub struct $name:ident { $($body:tt)* }) => {
        $crate::mcp::tools::args::tool_args!(@fields [$(#[$meta])*] $name [] [] $($body)*);
    };
    (@fields $meta:tt $name:ident [$($fields:tt)*] [$($impls:tt)*] ..flock, $($rest:tt)*) => {
        $crate::mcp::tools::args::tool_args!(@fields $meta $name [$($fields)*
            /// The flock's name, as `list_flocks` shows it.
            pub flock: String,
        ] [$($impls)*] ..house, $($rest)*);
    };
    (@fields $meta:tt $name:ident [$($fields:tt)*] [$($impls:tt)*] ..house, $($rest:tt)*) => {
        $crate::mcp::tools::args::tool_args!(@fields $meta $name [$($fields)*
            /// The flock's house; needed only when flocks in several houses share the name.
            pub house: Option<String>,
        ] [$($impls)*] $($rest)*);
    };
    (
        @fields $meta:tt $name:ident [$($fields:tt)*] [$($impls:tt)*]
        ..period($what:literal, $days:literal), $($rest:tt)*
    ) => {
        $crate::mcp::tools::args::tool_args!(@fields $meta $name [$($fields)*
            #[doc = concat!(
                "First ", $what, ", YYYY-MM-DD (default: ", stringify!($days),
                " days ending at `to`)."
            )]
            #[schemars(extend("format" = "date"))]
            pub from: Option<String>,
            #[doc = concat!(
                "Last ", $what, ", YYYY-MM-DD (default: today, UTC). At most 366 days after `from`."
            )]
            #[schemars(extend("format" = "date"))]
            pub to: Option<String>,
        ] [$($impls)*
            /// The period asked for (by default the days ending today, UTC).
            pub fn period(
                &self,
                now: time::OffsetDateTime,
            ) -> Result<$crate::domain::Period, $crate::mcp::tools::ToolError> {
                $crate::mcp::tools::args::period(
                    self.from.as_deref(),
                    self.to.as_deref(),
                    $crate::domain::EntryDate::today(now),
                    $days,
                )
            }
        ] $($rest)*);
    };
    (
        @fields $meta:tt $name:ident [$($fields:tt)*] [$($impls:tt)*]
        ..page($what:literal), $($rest:tt)*
    ) => {
        $crate::mcp::tools::args::tool_args!(@fields $meta $name [$($fields)*
            #[doc = concat!($what, " per page, 1 to 200 (default 50).")]
            #[schemars(range(min = 1, max = $crate::domain::paging::MAX_PAGE_SIZE))]
            pub limit: Option<i64>,
            /// The `next_cursor` of the previous page, unchanged.
            pub cursor: Option<String>,
        ] [$($impls)*
            /// The page size and the decoded cursor of the list named `list`.
            pub fn page<K: serde::de::DeserializeOwned>(
                &self,
                list: &str,
            ) -> Result<($crate::domain::PageSize, Option<K>), $crate::mcp::tools::ToolError> {
                $crate::mcp::tools::args::page(list, self.limit, self.cursor.as_deref())
            }
        ] $($rest)*);
    };
    (
        @fields $meta:tt $name:ident [$($fields:tt)*] [$($impls:tt)*]
        $(#[$field_meta:meta])* pub $field:ident: $ty:ty, $($rest:tt)*
    ) => {
        $crate::mcp::tools::args::tool_args!(@fields $meta $name [$($fields)*
            $(#[$field_meta])* pub $field: $ty,
        ] [$($impls)*] $($rest)*);
    };
    (@fields [$($meta:tt)*] $name:ident [$($fields:tt)*] [$($impls:tt)*]) => {
        $($meta)*
        #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $($fields)*
        }

        impl $name {
            $($impls)*
        }
    };
}

pub(crate) use tool_args;
