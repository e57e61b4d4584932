//! Statements written once for both engines: SQL text with `$n`
//! placeholders, the values bound to them, and how a row becomes a Rust
//! value.
//!
//! [`Sql`] is what every storage function builds. Its values are a closed
//! set ([`Value`]) whose encodings are the ones the schema was written for:
//! a UUID is `uuid` on PostgreSQL and a 16-byte blob on SQLite, a calendar
//! date `date` or ISO `YYYY-MM-DD` text, an instant always an integer of
//! Unix seconds (docs/decisions/0001). A value carries its type even when it
//! is null, because PostgreSQL types every parameter of a prepared
//! statement.
//!
//! Rows come back through [`FromRecord`], declared with the row type by
//! [`record!`](crate::record) (columns by name) or written by hand, and
//! columns through [`Column`], implemented once per Rust type for both
//! engines. Nothing outside `storage::engine` sees a driver's row type.

use std::borrow::Cow;

use sqlx::Row as _;
use sqlx::postgres::PgRow;
use time::Date;
use time::macros::format_description;
use uuid::Uuid;

use super::error::StoreError;
use super::{Exec, HandleInner, postgres, sqlite};

/// The tracing target of the per-statement event ([`Sql::trace`]).
pub const STATEMENT_TARGET: &str = "coop::storage::statement";

/// One bound value, typed even when null.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    Int(Option<i64>),
    Text(Option<Cow<'a, str>>),
    Bool(Option<bool>),
    Uuid(Option<Uuid>),
    Date(Option<Date>),
    Bytes(Option<Cow<'a, [u8]>>),
}

macro_rules! value_from {
    ($($ty:ty => $variant:ident $(($conv:expr))?),* $(,)?) => {$(
        impl<'a> From<$ty> for Value<'a> {
            fn from(v: $ty) -> Self {
                Value::$variant(Some(value_from!(@conv v $(, $conv)?)))
            }
        }
        impl<'a> From<Option<$ty>> for Value<'a> {
            fn from(v: Option<$ty>) -> Self {
                Value::$variant(v.map(|v| value_from!(@conv v $(, $conv)?)))
            }
        }
    )*};
    (@conv $v:ident) => { $v };
    (@conv $v:ident, $conv:expr) => { ($conv)($v) };
}

value_from! {
    i64 => Int,
    bool => Bool,
    Uuid => Uuid,
    Date => Date,
    &'a str => Text(Cow::Borrowed),
    String => Text(Cow::Owned),
    &'a String => Text(|s: &'a String| Cow::Borrowed(s.as_str())),
    &'a [u8] => Bytes(Cow::Borrowed),
    Vec<u8> => Bytes(Cow::Owned),
}

impl<'a> From<time::OffsetDateTime> for Value<'a> {
    /// Instants are stored as Unix seconds.
    fn from(t: time::OffsetDateTime) -> Self {
        Value::Int(Some(t.unix_timestamp()))
    }
}

impl<'a> From<Option<time::OffsetDateTime>> for Value<'a> {
    fn from(t: Option<time::OffsetDateTime>) -> Self {
        Value::Int(t.map(|t| t.unix_timestamp()))
    }
}

/// A statement and its values, in placeholder order (`$1` is the first).
#[derive(Clone, Debug)]
pub struct Sql<'a> {
    text: Cow<'a, str>,
    values: Vec<Value<'a>>,
}

impl<'a> Sql<'a> {
    pub fn new(text: impl Into<Cow<'a, str>>) -> Self {
        Self {
            text: text.into(),
            values: Vec::new(),
        }
    }

    /// Binds the next placeholder.
    pub fn bind(mut self, value: impl Into<Value<'a>>) -> Self {
        self.values.push(value.into());
        self
    }

    /// Binds the next placeholder and returns its name (`$n`), for SQL
    /// assembled piece by piece.
    pub fn push_bind(&mut self, value: impl Into<Value<'a>>) -> String {
        self.values.push(value.into());
        format!("${}", self.values.len())
    }

    /// Appends `values (…), (…)` with one tuple per item, each tuple's
    /// values given by `row` (for multi-row inserts).
    pub fn push_values<T>(
        &mut self,
        items: &'a [T],
        mut row: impl FnMut(&mut Vec<Value<'a>>, &'a T),
    ) -> &mut Self {
        let mut text = String::from(" values ");
        let mut tuple = Vec::new();
        for (i, item) in items.iter().enumerate() {
            tuple.clear();
            row(&mut tuple, item);
            text.push_str(if i == 0 { "(" } else { ", (" });
            for (j, value) in tuple.drain(..).enumerate() {
                self.values.push(value);
                if j > 0 {
                    text.push_str(", ");
                }
                text.push('$');
                text.push_str(&self.values.len().to_string());
            }
            text.push(')');
        }
        self.push(&text)
    }

    /// Appends SQL text.
    pub fn push(&mut self, text: &str) -> &mut Self {
        self.text.to_mut().push_str(text);
        self
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn values(&self) -> &[Value<'a>] {
        &self.values
    }

    /// Runs a statement that returns no rows; the number of rows changed.
    pub async fn execute(&self, db: &mut impl Exec) -> Result<u64, StoreError> {
        let changed = match db.handle().0 {
            HandleInner::Sqlite(c) => sqlite::execute(c, self),
            HandleInner::Postgres(c) => postgres::execute(c, self).await,
            HandleInner::Gone(err) => Err(err),
        }?;
        self.trace(0);
        Ok(changed)
    }

    /// Every row (the statement's own `limit` bounds them).
    pub async fn fetch_all<T: FromRecord>(&self, db: &mut impl Exec) -> Result<Vec<T>, StoreError> {
        let rows = match db.handle().0 {
            HandleInner::Sqlite(c) => sqlite::fetch(c, self, usize::MAX),
            HandleInner::Postgres(c) => postgres::fetch_all(c, self).await,
            HandleInner::Gone(err) => Err(err),
        }?;
        self.trace(rows.len());
        Ok(rows)
    }

    /// The first row, if any.
    pub async fn fetch_optional<T: FromRecord>(
        &self,
        db: &mut impl Exec,
    ) -> Result<Option<T>, StoreError> {
        let row = match db.handle().0 {
            HandleInner::Sqlite(c) => Ok(sqlite::fetch(c, self, 1)?.into_iter().next()),
            HandleInner::Postgres(c) => postgres::fetch_optional(c, self).await,
            HandleInner::Gone(err) => Err(err),
        }?;
        self.trace(usize::from(row.is_some()));
        Ok(row)
    }

    /// One event per statement with the rows it returned: what the
    /// bounded-read tests count, and a trace an operator can turn on.
    fn trace(&self, rows: usize) {
        let statement = self.text();
        let rows_returned = u64::try_from(rows).unwrap_or(u64::MAX);
        tracing::trace!(target: "coop::storage::statement", statement, rows_returned);
    }

    /// The first row; [`StoreError::NotFound`] when there is none.
    pub async fn fetch_one<T: FromRecord>(&self, db: &mut impl Exec) -> Result<T, StoreError> {
        self.fetch_optional(db).await?.ok_or(StoreError::NotFound)
    }

    /// The first column of the first row (`count(*)`, an id);
    /// [`StoreError::NotFound`] when there is no row.
    pub async fn fetch_scalar<T: Column>(&self, db: &mut impl Exec) -> Result<T, StoreError> {
        let Scalar(value) = self.fetch_one(db).await?;
        Ok(value)
    }

    /// The first column of the first row, if there is a row.
    pub async fn fetch_optional_scalar<T: Column>(
        &self,
        db: &mut impl Exec,
    ) -> Result<Option<T>, StoreError> {
        let row: Option<Scalar<T>> = self.fetch_optional(db).await?;
        Ok(row.map(|Scalar(value)| value))
    }

    /// The first column of every row.
    pub async fn fetch_column<T: Column>(&self, db: &mut impl Exec) -> Result<Vec<T>, StoreError> {
        let rows: Vec<Scalar<T>> = self.fetch_all(db).await?;
        Ok(rows.into_iter().map(|Scalar(value)| value).collect())
    }
}

/// A row as a driver delivered it, read by column name or position.
pub struct Record<'r>(pub(super) RecordInner<'r>);

pub(super) enum RecordInner<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Postgres(&'r PgRow),
}

impl Record<'_> {
    /// The column named `name`.
    pub fn get<T: Column>(&self, name: &str) -> Result<T, StoreError> {
        match &self.0 {
            RecordInner::Sqlite(row) => row
                .get_ref(name)
                .map_err(StoreError::from)
                .and_then(|v| T::from_sqlite(v).map_err(|why| decode_error(name, &why))),
            RecordInner::Postgres(row) => T::from_postgres(row, ColumnAt::Name(name)),
        }
    }

    /// The column at `index` (from 0), for tuples and scalars.
    pub fn at<T: Column>(&self, index: usize) -> Result<T, StoreError> {
        match &self.0 {
            RecordInner::Sqlite(row) => {
                row.get_ref(index).map_err(StoreError::from).and_then(|v| {
                    T::from_sqlite(v).map_err(|why| decode_error(&index.to_string(), &why))
                })
            }
            RecordInner::Postgres(row) => T::from_postgres(row, ColumnAt::Index(index)),
        }
    }
}

fn decode_error(column: &str, why: &str) -> StoreError {
    StoreError::backend(format!("column {column}: {why}"))
}

/// Where a PostgreSQL column is.
#[derive(Clone, Copy, Debug)]
pub enum ColumnAt<'a> {
    Name(&'a str),
    Index(usize),
}

impl ColumnAt<'_> {
    /// A value here that the driver read but its Rust type refuses.
    pub(super) fn error(self, why: &str) -> StoreError {
        match self {
            Self::Name(name) => decode_error(name, why),
            Self::Index(index) => decode_error(&index.to_string(), why),
        }
    }
}

/// A row type: how it is read from a [`Record`].
pub trait FromRecord: Sized + Send {
    fn from_record(record: &Record<'_>) -> Result<Self, StoreError>;
}

/// Declares a row struct and its [`FromRecord`] impl from one field list:
/// each field is read from the column of the same name (through [`Field`],
/// so a field may also be a nested row read from the same record). Doc
/// comments and attributes on the struct and its fields are kept.
#[macro_export]
macro_rules! record {
    (
        $(#[$meta:meta])*
        $vis:vis struct $ty:ident {
            $($(#[$field_meta:meta])* $field_vis:vis $field:ident : $field_ty:ty),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $ty {
            $($(#[$field_meta])* $field_vis $field: $field_ty),+
        }

        impl $crate::storage::engine::FromRecord for $ty {
            fn from_record(
                record: &$crate::storage::engine::Record<'_>,
            ) -> Result<Self, $crate::storage::StoreError> {
                Ok(Self {
                    $($field: <$field_ty as $crate::storage::engine::Field>::read(
                        record,
                        stringify!($field),
                    )?),+
                })
            }
        }
    };
}

/// A field of a [`record!`](crate::record) row: a column read by its name,
/// or a nested row read from the same record (its own columns named as its
/// fields are).
pub trait Field: Sized {
    fn read(record: &Record<'_>, name: &str) -> Result<Self, StoreError>;
}

impl<T: Column> Field for T {
    fn read(record: &Record<'_>, name: &str) -> Result<Self, StoreError> {
        record.get(name)
    }
}

/// One column's Rust type, decoded from either engine.
pub trait Column: Sized + Send {
    fn from_sqlite(value: rusqlite::types::ValueRef<'_>) -> Result<Self, String>;
    fn from_postgres(row: &PgRow, at: ColumnAt<'_>) -> Result<Self, StoreError>;
}

fn pg_get<'r, T>(row: &'r PgRow, at: ColumnAt<'_>) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    let got = match at {
        ColumnAt::Name(name) => row.try_get::<T, _>(name),
        ColumnAt::Index(index) => row.try_get::<T, _>(index),
    };
    got.map_err(StoreError::from)
}

use rusqlite::types::ValueRef;

fn sqlite_int(v: ValueRef<'_>) -> Result<i64, String> {
    match v {
        ValueRef::Integer(i) => Ok(i),
        other => Err(format!(
            "expected an integer, found {:?}",
            other.data_type()
        )),
    }
}

fn sqlite_text(v: ValueRef<'_>) -> Result<&str, String> {
    match v {
        ValueRef::Text(bytes) => std::str::from_utf8(bytes).map_err(|e| e.to_string()),
        other => Err(format!("expected text, found {:?}", other.data_type())),
    }
}

fn sqlite_blob(v: ValueRef<'_>) -> Result<&[u8], String> {
    match v {
        ValueRef::Blob(bytes) => Ok(bytes),
        other => Err(format!("expected a blob, found {:?}", other.data_type())),
    }
}

/// The one text form of a calendar date on SQLite (what sqlx wrote too).
const DATE_FORMAT: &[time::format_description::BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]");

pub(super) fn date_text(date: Date) -> Result<String, StoreError> {
    date.format(DATE_FORMAT)
        .map_err(|e| StoreError::backend(format!("date {date}: {e}")))
}

macro_rules! column {
    ($ty:ty, |$v:ident| $sqlite:expr) => {
        impl Column for $ty {
            fn from_sqlite($v: ValueRef<'_>) -> Result<Self, String> {
                $sqlite
            }
            fn from_postgres(row: &PgRow, at: ColumnAt<'_>) -> Result<Self, StoreError> {
                pg_get::<$ty>(row, at)
            }
        }
        impl Column for Option<$ty> {
            fn from_sqlite($v: ValueRef<'_>) -> Result<Self, String> {
                match $v {
                    ValueRef::Null => Ok(None),
                    $v => ($sqlite).map(Some),
                }
            }
            fn from_postgres(row: &PgRow, at: ColumnAt<'_>) -> Result<Self, StoreError> {
                pg_get::<Option<$ty>>(row, at)
            }
        }
    };
}

column!(i64, |v| sqlite_int(v));
column!(bool, |v| sqlite_int(v).map(|i| i != 0));
column!(String, |v| sqlite_text(v).map(str::to_owned));
column!(Vec<u8>, |v| sqlite_blob(v).map(<[u8]>::to_vec));
column!(Uuid, |v| sqlite_blob(v)
    .and_then(|b| Uuid::from_slice(b).map_err(|e| e.to_string())));
column!(Date, |v| sqlite_text(v).and_then(|t| Date::parse(
    t,
    DATE_FORMAT
)
.map_err(|e| e.to_string())));

/// A one-column row.
struct Scalar<T>(T);

impl<T: Column> FromRecord for Scalar<T> {
    fn from_record(record: &Record<'_>) -> Result<Self, StoreError> {
        record.at(0).map(Scalar)
    }
}

macro_rules! tuple_record {
    ($($name:ident : $index:tt),+) => {
        impl<$($name: Column),+> FromRecord for ($($name,)+) {
            fn from_record(record: &Record<'_>) -> Result<Self, StoreError> {
                Ok(($(record.at::<$name>($index)?,)+))
            }
        }
    };
}

tuple_record!(A: 0);
tuple_record!(A: 0, B: 1);
tuple_record!(A: 0, B: 1, C: 2);
tuple_record!(A: 0, B: 1, C: 2, D: 3);
tuple_record!(A: 0, B: 1, C: 2, D: 3, E: 4);
tuple_record!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_in_bind_order() {
        let mut sql = Sql::new("select 1 where a = $1").bind(1i64);
        let p = sql.push_bind("x");
        sql.push(&format!(" and b = {p}"));
        assert_eq!(sql.text(), "select 1 where a = $1 and b = $2");
        assert_eq!(
            sql.values(),
            &[Value::Int(Some(1)), Value::Text(Some(Cow::Borrowed("x")))]
        );
    }

    #[test]
    fn multi_row_values_number_every_value() {
        let mut sql = Sql::new("insert into t (a, b)");
        sql.push_values(&[(1i64, "x"), (2, "y")], |row, (a, b)| {
            row.push(Value::from(*a));
            row.push(Value::from(*b));
        });
        assert_eq!(sql.text(), "insert into t (a, b) values ($1, $2), ($3, $4)");
        assert_eq!(sql.values().len(), 4);
    }

    #[test]
    fn nulls_keep_their_type() {
        assert_eq!(Value::from(None::<Uuid>), Value::Uuid(None));
        assert_eq!(Value::from(None::<&str>), Value::Text(None));
    }

    #[test]
    fn dates_are_iso_text_on_sqlite() {
        let date = time::macros::date!(2026 - 03 - 01);
        assert_eq!(date_text(date).unwrap(), "2026-03-01");
        assert_eq!(
            Date::from_sqlite(ValueRef::Text(b"2026-03-01")).unwrap(),
            date
        );
        assert!(Date::from_sqlite(ValueRef::Integer(3)).is_err());
    }

    #[test]
    fn sqlite_columns_refuse_the_wrong_type() {
        assert_eq!(bool::from_sqlite(ValueRef::Integer(1)), Ok(true));
        assert_eq!(Option::<i64>::from_sqlite(ValueRef::Null), Ok(None));
        assert!(i64::from_sqlite(ValueRef::Null).is_err());
        assert!(Uuid::from_sqlite(ValueRef::Blob(&[1, 2, 3])).is_err());
    }
}
