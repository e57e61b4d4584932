//! Domain values as columns, so a row carries a `Role`, a `ScopeSet`, a
//! slug or a status rather than the string it was stored as; and the
//! closed sets of words (a role, a status, a method) bound as their word,
//! so a statement takes the value itself.
//!
//! Each is stored as the plain text or integer its constructor reads, and
//! decoded through that constructor on both engines: a stored value that
//! does not parse is a decode error, a [`StoreError`] that is logged and
//! answered as a server error, never a panic and never a guess at what
//! the value meant.

use rusqlite::types::ValueRef;
use sqlx::postgres::PgRow;

use super::error::StoreError;
use std::borrow::Cow;

use super::sql::{Column, ColumnAt, Value};
use crate::domain::{
    AuthMethod, AutomationAuth, ClientKind, FarmSlug, FlockStatus, HeadCount, LotStatus, Name,
    Role, ScopeSet,
};

/// Implements [`Column`] (and its nullable form) for each `$ty`, read as
/// its stored `$base` and checked by `$parse`.
macro_rules! column_via {
    ($($ty:ty: $base:ty => $parse:expr),+ $(,)?) => {$(
        impl Column for $ty {
            fn from_sqlite(value: ValueRef<'_>) -> Result<Self, String> {
                <$base>::from_sqlite(value).and_then($parse)
            }
            fn from_postgres(row: &PgRow, at: ColumnAt<'_>) -> Result<Self, StoreError> {
                <$base>::from_postgres(row, at).and_then(|v| ($parse)(v).map_err(|why| at.error(&why)))
            }
        }
        impl Column for Option<$ty> {
            fn from_sqlite(value: ValueRef<'_>) -> Result<Self, String> {
                Option::<$base>::from_sqlite(value)?.map($parse).transpose()
            }
            fn from_postgres(row: &PgRow, at: ColumnAt<'_>) -> Result<Self, StoreError> {
                Option::<$base>::from_postgres(row, at)?
                    .map(|v| ($parse)(v).map_err(|why| at.error(&why)))
                    .transpose()
            }
        }
    )+};
}

column_via! {
    Role: String => |text: String| Role::parse(&text),
    // Words Coop no longer grants are dropped, as everywhere a stored
    // scope is read: a scope removed from Coop grants nothing.
    ScopeSet: String => |text: String| Ok::<_, String>(ScopeSet::from_stored(&text)),
    FarmSlug: String => |text: String| FarmSlug::parse(&text),
    Name: String => |text: String| Name::parse(&text),
    HeadCount: i64 => HeadCount::new,
    FlockStatus: String => |text: String| FlockStatus::parse(&text),
    LotStatus: String => |text: String| LotStatus::parse(&text),
    AutomationAuth: String => |text: String| AutomationAuth::parse(&text),
    ClientKind: String => |text: String| ClientKind::parse(&text),
    AuthMethod: String => |text: String| {
        AuthMethod::parse(&text).ok_or_else(|| format!("{text:?} is not an AuthMethod"))
    },
}

/// Binds each `$ty` (a closed set of words) as its stored word.
macro_rules! bound_as_word {
    ($($ty:ty),+ $(,)?) => {$(
        impl<'a> From<$ty> for Value<'a> {
            fn from(value: $ty) -> Self {
                Value::Text(Some(Cow::Borrowed(value.as_str())))
            }
        }
        impl<'a> From<Option<$ty>> for Value<'a> {
            fn from(value: Option<$ty>) -> Self {
                Value::Text(value.map(|v| Cow::Borrowed(v.as_str())))
            }
        }
    )+};
}

bound_as_word!(
    Role,
    FlockStatus,
    LotStatus,
    AutomationAuth,
    ClientKind,
    AuthMethod
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_words_decode_and_unknown_ones_are_errors() {
        let text = |t: &'static str| ValueRef::Text(t.as_bytes());
        assert_eq!(Role::from_sqlite(text("worker")), Ok(Role::Worker));
        assert!(Role::from_sqlite(text("admin")).is_err());
        assert_eq!(
            Option::<FlockStatus>::from_sqlite(text("depleted")),
            Ok(Some(FlockStatus::Depleted))
        );
        assert_eq!(Option::<FlockStatus>::from_sqlite(ValueRef::Null), Ok(None));
        assert!(LotStatus::from_sqlite(text("lost")).is_err());
        assert!(FarmSlug::from_sqlite(text("Not A Slug")).is_err());
        assert!(Name::from_sqlite(text("")).is_err());
        assert_eq!(
            ScopeSet::from_sqlite(text("farm:read openid")).map(|s| s.to_wire()),
            Ok("farm:read".to_owned())
        );
        assert_eq!(
            HeadCount::from_sqlite(ValueRef::Integer(600)).map(HeadCount::get),
            Ok(600)
        );
        assert!(HeadCount::from_sqlite(ValueRef::Integer(-1)).is_err());
        assert!(HeadCount::from_sqlite(text("600")).is_err());
        assert_eq!(
            AuthMethod::from_sqlite(text("private_key_jwt")),
            Ok(AuthMethod::PrivateKeyJwt)
        );
        assert!(AuthMethod::from_sqlite(text("client_secret_jwt")).is_err());
        assert!(ClientKind::from_sqlite(text("other")).is_err());
    }

    #[test]
    fn words_bind_as_the_text_they_decode_from() {
        assert_eq!(
            Value::from(LotStatus::InStore),
            Value::Text(Some(Cow::Borrowed("in_store")))
        );
        assert_eq!(Value::from(None::<Role>), Value::Text(None));
    }
}
