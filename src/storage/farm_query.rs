//! Building a farm's read queries: the farm id is always `$1`, the caller's
//! flock scope becomes an `in (...)` list, and the binds are kept beside the
//! SQL so one text serves both engines.
//!
//! Tool reads vary by optional filters (status, house, a cursor), so their
//! SQL is assembled; this type makes the two things that must never be
//! forgotten impossible to forget: [`FarmQuery::new`] starts every query with
//! the farm, and [`FarmQuery::flock_scope`] turns a restricted scope with no
//! flocks into a condition that matches nothing.

use super::engine::{Exec, FromRecord, Sql, StoreError, Value};
use crate::domain::{FarmId, FlockScope, Period};

/// SQL text and its binds, in placeholder order.
#[derive(Clone, Debug)]
pub struct FarmQuery {
    sql: Sql<'static>,
}

impl FarmQuery {
    /// Starts a query whose `$1` is the farm. `sql` must use `$1` to filter
    /// by farm; every later placeholder comes from [`FarmQuery::bind`].
    pub fn new(farm: FarmId, sql: &str) -> Self {
        Self {
            sql: Sql::new(sql.to_owned()).bind(farm.0),
        }
    }

    /// Appends SQL text.
    pub fn push(&mut self, sql: &str) -> &mut Self {
        self.sql.push(sql);
        self
    }

    /// Adds a bind and returns its placeholder (`$n`).
    pub fn bind(&mut self, value: impl Into<Value<'static>>) -> String {
        self.sql.push_bind(value)
    }

    /// `and <column> in (...)` for a restricted scope; nothing for the whole
    /// farm; a condition that is never true for a restricted scope with no
    /// flocks.
    pub fn flock_scope(&mut self, column: &str, scope: &FlockScope) -> &mut Self {
        match scope.restricted_to() {
            None => self,
            Some([]) => self.push(" and 1 = 0"),
            Some(flocks) => {
                let placeholders: Vec<String> = flocks.iter().map(|f| self.bind(f.0)).collect();
                let clause = format!(" and {column} in ({})", placeholders.join(", "));
                self.push(&clause)
            }
        }
    }

    /// `and <column> = <value>` when a filter is given; nothing otherwise.
    pub fn equals(&mut self, column: &str, value: Option<impl Into<Value<'static>>>) -> &mut Self {
        match value {
            None => self,
            Some(value) => {
                let p = self.bind(value);
                self.push(&format!(" and {column} = {p}"))
            }
        }
    }

    /// `and <column> >= <from> and <column> <= <to>`: the days of `period`.
    pub fn within(&mut self, column: &str, period: Period) -> &mut Self {
        let (from, to) = (
            self.bind(period.from().date()),
            self.bind(period.to().date()),
        );
        self.push(&format!(" and {column} >= {from} and {column} <= {to}"))
    }

    pub fn sql(&self) -> &str {
        self.sql.text()
    }

    pub fn binds(&self) -> &[Value<'static>] {
        self.sql.values()
    }

    /// Every row the query returns (its own `limit` bounds them).
    pub async fn fetch_all<T: FromRecord>(&self, db: &mut impl Exec) -> Result<Vec<T>, StoreError> {
        self.sql.fetch_all(db).await
    }

    /// The first column of the one row an aggregate returns.
    pub async fn fetch_scalar<T: super::engine::Column>(
        &self,
        db: &mut impl Exec,
    ) -> Result<T, StoreError> {
        self.sql.fetch_scalar(db).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::FlockId;

    #[test]
    fn the_farm_is_the_first_bind_and_an_empty_scope_matches_nothing() {
        let farm = FarmId::new();
        let mut whole = FarmQuery::new(farm, "select 1 from flocks f where f.farm_id = $1");
        whole.flock_scope("f.id", &FlockScope::resolve(false, vec![]));
        assert_eq!(whole.sql(), "select 1 from flocks f where f.farm_id = $1");
        assert_eq!(whole.binds(), &[Value::Uuid(Some(farm.0))]);

        let mut none = FarmQuery::new(farm, "w f.farm_id = $1");
        none.flock_scope("f.id", &FlockScope::resolve(true, vec![]));
        assert!(none.sql().ends_with(" and 1 = 0"));

        let mut two = FarmQuery::new(farm, "w f.farm_id = $1");
        two.flock_scope(
            "f.id",
            &FlockScope::resolve(true, vec![FlockId::new(), FlockId::new()]),
        );
        assert!(
            two.sql().ends_with(" and f.id in ($2, $3)"),
            "{}",
            two.sql()
        );
        assert_eq!(two.binds().len(), 3);
    }

    #[test]
    fn filters_are_added_only_when_given() {
        let farm = FarmId::new();
        let mut q = FarmQuery::new(farm, "w l.farm_id = $1");
        q.equals("l.status", None::<&'static str>);
        assert_eq!(q.sql(), "w l.farm_id = $1");
        q.equals("l.status", Some("shipped"));
        let period = Period::new(
            crate::domain::EntryDate::parse("2026-03-01").unwrap(),
            crate::domain::EntryDate::parse("2026-03-31").unwrap(),
        )
        .unwrap();
        q.within("l.laid_on", period);
        assert_eq!(
            q.sql(),
            "w l.farm_id = $1 and l.status = $2 and l.laid_on >= $3 and l.laid_on <= $4"
        );
        assert_eq!(q.binds()[1], Value::Text(Some("shipped".into())));
        assert_eq!(q.binds().len(), 4);
    }
}
