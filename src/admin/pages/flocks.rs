//! Which flocks a worker, a member or an automation, is limited to: read
//! from the ticked boxes of a form, and put back into words.

use std::collections::{HashMap, HashSet};

use uuid::Uuid;

use super::{PageRefusal, invalid};
use crate::domain::FlockId;
use crate::storage::farm_admin::FlockAdminRow;

/// The flocks ticked on a form; an id that is not one is not this farm's.
pub fn chosen(ticked: &[&str]) -> Result<Vec<FlockId>, PageRefusal> {
    ticked
        .iter()
        .map(|raw| FlockId::parse(raw).ok_or_else(unknown))
        .collect()
}

pub(crate) fn unknown() -> PageRefusal {
    invalid("That flock is not on this farm.")
}

/// Each limited worker's flocks, from (worker id, flock id) pairs.
#[derive(Debug, Default)]
pub(crate) struct Limits(HashMap<Uuid, HashSet<Uuid>>);

impl Limits {
    pub(crate) fn new(pairs: Vec<(Uuid, Uuid)>) -> Self {
        let mut limits = Self::default();
        for (who, flock) in pairs {
            limits.0.entry(who).or_default().insert(flock);
        }
        limits
    }

    /// Whether `who` is limited to (among others) `flock`.
    pub(crate) fn includes(&self, who: Uuid, flock: Uuid) -> bool {
        self.0
            .get(&who)
            .is_some_and(|flocks| flocks.contains(&flock))
    }

    /// The names of the farm's flocks `who` is limited to, or "no flocks".
    pub(crate) fn names(&self, who: Uuid, farm_flocks: &[FlockAdminRow]) -> String {
        let names: Vec<&str> = farm_flocks
            .iter()
            .filter(|f| self.includes(who, f.id))
            .map(|f| f.name.as_str())
            .collect();
        if names.is_empty() {
            "no flocks".to_owned()
        } else {
            names.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticked_box_that_is_not_a_flock_id_is_refused() {
        let id = Uuid::new_v4().to_string();
        assert_eq!(chosen(&[&id]).unwrap(), [FlockId::parse(&id).unwrap()]);
        assert!(chosen(&[]).unwrap().is_empty());
        let err = chosen(&[&id, "not-an-id"]).unwrap_err();
        assert_eq!(err.to_string(), "That flock is not on this farm.");
    }

    #[test]
    fn limits_are_per_worker() {
        let (ann, bob, north) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let limits = Limits::new(vec![(ann, north)]);
        assert!(limits.includes(ann, north));
        assert!(!limits.includes(bob, north));
        assert_eq!(limits.names(bob, &[]), "no flocks");
    }
}
