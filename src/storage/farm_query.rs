//! Building a farm's read queries: the farm id is always `$1`, the caller's
//! flock scope becomes an `in (...)` list, and the binds are kept beside the
//! SQL so one text serves both engines.
//!
//! Tool reads vary by optional filters (status, house, a cursor), so their
//! SQL is assembled; this type makes the two things that must never be
//! forgotten impossible to forget: [`FarmQuery::new`] starts every query with
//! the farm, and [`FarmQuery::flock_scope`] turns a restricted scope with no
//! flocks into a condition that matches nothing.

use time::Date;
use uuid::Uuid;

use crate::domain::FarmId;
use crate::mcp::FlockScope;

/// One bound value.
#[derive(Clone, Debug)]
pub enum Bind {
    Uuid(Uuid),
    Date(Date),
    Text(String),
    Int(i64),
}

/// SQL text and its binds, in placeholder order.
#[derive(Clone, Debug)]
pub struct FarmQuery {
    sql: String,
    binds: Vec<Bind>,
}

impl FarmQuery {
    /// Starts a query whose `$1` is the farm. `sql` must use `$1` to filter
    /// by farm; every later placeholder comes from [`FarmQuery::bind`].
    pub fn new(farm: FarmId, sql: &str) -> Self {
        Self {
            sql: sql.to_owned(),
            binds: vec![Bind::Uuid(farm.0)],
        }
    }

    /// Appends SQL text.
    pub fn push(&mut self, sql: &str) -> &mut Self {
        self.sql.push_str(sql);
        self
    }

    /// Adds a bind and returns its placeholder (`$n`).
    pub fn bind(&mut self, value: Bind) -> String {
        self.binds.push(value);
        format!("${}", self.binds.len())
    }

    /// `and <column> in (...)` for a restricted scope; nothing for the whole
    /// farm; a condition that is never true for a restricted scope with no
    /// flocks.
    pub fn flock_scope(&mut self, column: &str, scope: &FlockScope) -> &mut Self {
        match scope.restricted_to() {
            None => self,
            Some([]) => self.push(" and 1 = 0"),
            Some(flocks) => {
                let placeholders: Vec<String> =
                    flocks.iter().map(|f| self.bind(Bind::Uuid(f.0))).collect();
                let clause = format!(" and {column} in ({})", placeholders.join(", "));
                self.push(&clause)
            }
        }
    }

    pub fn sql(&self) -> &str {
        &self.sql
    }

    pub fn binds(&self) -> &[Bind] {
        &self.binds
    }
}

/// Attaches a [`FarmQuery`]'s binds to a sqlx query, on either engine.
#[macro_export]
macro_rules! bind_all {
    ($query:expr, $farm_query:expr) => {{
        let mut query = $query;
        for value in $farm_query.binds() {
            query = match value {
                $crate::storage::farm_query::Bind::Uuid(v) => query.bind(*v),
                $crate::storage::farm_query::Bind::Date(v) => query.bind(*v),
                $crate::storage::farm_query::Bind::Text(v) => query.bind(v.as_str()),
                $crate::storage::farm_query::Bind::Int(v) => query.bind(*v),
            };
        }
        query
    }};
}

/// Runs a [`FarmQuery`] and decodes every row it returns (the query's own
/// `limit` bounds them).
#[macro_export]
macro_rules! fetch_farm_rows {
    ($store:expr, $row:ty, $farm_query:expr) => {{
        let q = &$farm_query;
        let rows: Vec<$row> = $crate::on_pool!($store, |pool| {
            $crate::bind_all!(sqlx::query_as::<_, $row>(q.sql()), q)
                .fetch_all(pool)
                .await?
        });
        rows
    }};
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
        assert!(matches!(whole.binds(), [Bind::Uuid(id)] if *id == farm.0));

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
}
