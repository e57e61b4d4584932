//! What a member may see on their farm: a role, and for a worker either the
//! whole farm or a chosen, non-empty set of flocks.
//!
//! Only workers may be limited to some flocks, so "a manager limited to
//! Hens A" cannot be built, and a limited worker always names at least one
//! flock: an owner who wants a member to see nothing disables them. Whether
//! the flocks belong to the member's farm is the store's check, made in the
//! transaction that saves the access.

use super::{FlockId, Role};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access(Kind);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    WholeFarm(Role),
    /// A worker who sees these flocks only; sorted, no duplicates, never empty.
    WorkerLimitedTo(Vec<FlockId>),
}

/// Why an access was refused, in words an owner reads on the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    #[error("Only a worker can be limited to some flocks; every other role sees the whole farm.")]
    OnlyWorkersAreLimited,
    #[error("Tick at least one flock, or choose \"All flocks\".")]
    NoFlockChosen,
}

impl Access {
    /// `limited_to`: `None` for the whole farm, `Some` for the chosen flocks.
    pub fn new(role: Role, limited_to: Option<Vec<FlockId>>) -> Result<Self, AccessError> {
        match limited_to {
            None => Ok(Self(Kind::WholeFarm(role))),
            Some(_) if !role.may_be_flock_restricted() => Err(AccessError::OnlyWorkersAreLimited),
            Some(mut flocks) => {
                flocks.sort();
                flocks.dedup();
                if flocks.is_empty() {
                    Err(AccessError::NoFlockChosen)
                } else {
                    Ok(Self(Kind::WorkerLimitedTo(flocks)))
                }
            }
        }
    }

    pub fn role(&self) -> Role {
        match &self.0 {
            Kind::WholeFarm(role) => *role,
            Kind::WorkerLimitedTo(_) => Role::Worker,
        }
    }

    /// `None`: the whole farm. `Some`: only these flocks (at least one).
    pub fn limited_to(&self) -> Option<&[FlockId]> {
        match &self.0 {
            Kind::WholeFarm(_) => None,
            Kind::WorkerLimitedTo(flocks) => Some(flocks),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_may_see_the_whole_farm() {
        for role in Role::ALL {
            let access = Access::new(role, None).unwrap();
            assert_eq!(access.role(), role);
            assert_eq!(access.limited_to(), None);
        }
    }

    #[test]
    fn only_a_worker_is_limited_to_some_flocks() {
        let flock = FlockId::new();
        for role in [Role::Owner, Role::Manager, Role::Viewer] {
            assert_eq!(
                Access::new(role, Some(vec![flock])),
                Err(AccessError::OnlyWorkersAreLimited)
            );
        }
        let access = Access::new(Role::Worker, Some(vec![flock])).unwrap();
        assert_eq!(access.role(), Role::Worker);
        assert_eq!(access.limited_to(), Some(&[flock][..]));
    }

    #[test]
    fn a_limited_worker_names_at_least_one_flock_once() {
        assert_eq!(
            Access::new(Role::Worker, Some(Vec::new())),
            Err(AccessError::NoFlockChosen)
        );
        let (a, b) = (FlockId::new(), FlockId::new());
        let access = Access::new(Role::Worker, Some(vec![b, a, b])).unwrap();
        assert_eq!(access.limited_to(), Some(&[a, b][..]));
    }
}
