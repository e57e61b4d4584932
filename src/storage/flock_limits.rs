//! The flocks a worker is limited to, for the two kinds of worker: a
//! member (`membership_flocks`) and an automation (`automation_flocks`).
//!
//! Both tables hold (holder, flock) pairs and are written and read the
//! same way, so the statements live here once, named by [`FlockLimits`]:
//! a link is inserted only for a flock of the holder's own farm, and a
//! farm's links are read through its flocks.

use uuid::Uuid;

use super::{Exec, Sql, StoreError, Tx};
use crate::domain::{FarmId, FlockId};

/// Which holder's table: the table and its holder column.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FlockLimits {
    table: &'static str,
    holder: &'static str,
}

/// A member's flocks.
pub(crate) const MEMBERS: FlockLimits = FlockLimits {
    table: "membership_flocks",
    holder: "user_id",
};

/// An automation's flocks.
pub(crate) const AUTOMATIONS: FlockLimits = FlockLimits {
    table: "automation_flocks",
    holder: "automation_id",
};

impl FlockLimits {
    /// Links `holder` to each of `flocks`. `false` as soon as one is not
    /// `farm`'s: another farm's id inserts nothing, and the caller drops
    /// the transaction.
    pub(crate) async fn link(
        self,
        tx: &mut Tx,
        holder: Uuid,
        farm: FarmId,
        flocks: &[FlockId],
    ) -> Result<bool, StoreError> {
        let FlockLimits {
            table,
            holder: column,
        } = self;
        let insert = format!(
            "insert into {table} ({column}, flock_id)
             select $1, id from flocks where id = $2 and farm_id = $3"
        );
        for flock in flocks {
            let inserted = Sql::new(insert.as_str())
                .bind(holder)
                .bind(flock.0)
                .bind(farm.0)
                .execute(tx)
                .await?;
            if inserted == 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// (holder id, flock id) for every limited holder of the farm.
    pub(crate) async fn of_farm(
        self,
        db: &mut impl Exec,
        farm: FarmId,
    ) -> Result<Vec<(Uuid, Uuid)>, StoreError> {
        let FlockLimits { table, holder } = self;
        Sql::new(format!(
            "select l.{holder}, l.flock_id from {table} l
             join flocks f on f.id = l.flock_id
             where f.farm_id = $1"
        ))
        .bind(farm.0)
        .fetch_all(db)
        .await
    }
}
