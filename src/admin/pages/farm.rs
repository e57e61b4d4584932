//! `/admin/farm`: the farm's houses and flocks as the page lists them, and
//! the owner's changes to them (add and rename both, mark a flock
//! depleted), each audited in its transaction. The checks are
//! [`crate::admin::farm_records`]'s, shared with the command line.

use time::OffsetDateTime;

use super::{OwnerAction, PageRefusal, audit_action, invalid};
use crate::admin::farm_records::{self, FlockForm, Renamed};
use crate::domain::{FlockId, HouseId};
use crate::storage::Store;
use crate::storage::farm_admin::{self, FlockAdminRow, HouseRow};
use crate::storage::users::Account;

/// What the farm page shows.
pub struct FarmView {
    pub houses: Vec<HouseRow>,
    pub flocks: Vec<FlockAdminRow>,
    /// The date the add form proposes for a new flock.
    pub today: String,
}

pub async fn show(
    store: &Store,
    owner: &Account,
    now: OffsetDateTime,
) -> Result<FarmView, PageRefusal> {
    let mut db = store.read().await?;
    Ok(FarmView {
        houses: farm_admin::houses(&mut db, owner.farm()).await?,
        flocks: farm_admin::flocks(&mut db, owner.farm()).await?,
        today: now.date().to_string(),
    })
}

/// One of the page's forms, as sent; ids are as they came in the path or
/// the form.
#[derive(Clone, Copy, Debug)]
pub enum FarmChange<'a> {
    AddHouse {
        name: &'a str,
    },
    RenameHouse {
        house: &'a str,
        name: &'a str,
    },
    AddFlock {
        house: &'a str,
        name: &'a str,
        breed: &'a str,
        placed_on: &'a str,
        head_count: &'a str,
    },
    /// `action` is `rename` (to `name`) or `deplete`.
    ChangeFlock {
        flock: &'a str,
        action: &'a str,
        name: &'a str,
    },
}

/// What was saved: the page says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saved {
    House,
    Flock,
}

/// A change whose ids are read and whose action is known.
#[derive(Debug)]
enum Checked<'a> {
    AddHouse(&'a str),
    RenameHouse(HouseId, &'a str),
    AddFlock(FlockForm<'a>),
    RenameFlock(FlockId, &'a str),
    DepleteFlock(FlockId),
}

fn check(change: FarmChange<'_>) -> Result<Checked<'_>, PageRefusal> {
    let house = |raw| HouseId::parse(raw).ok_or(PageRefusal::NotFound);
    Ok(match change {
        FarmChange::AddHouse { name } => Checked::AddHouse(name),
        FarmChange::RenameHouse { house: raw, name } => Checked::RenameHouse(house(raw)?, name),
        FarmChange::AddFlock {
            house: raw,
            name,
            breed,
            placed_on,
            head_count,
        } => Checked::AddFlock(FlockForm {
            house: house(raw)?,
            name,
            breed,
            placed: placed_on,
            head_count,
        }),
        FarmChange::ChangeFlock {
            flock,
            action,
            name,
        } => {
            let flock = FlockId::parse(flock).ok_or(PageRefusal::NotFound)?;
            match action {
                "rename" => Checked::RenameFlock(flock, name),
                "deplete" => Checked::DepleteFlock(flock),
                _ => return Err(invalid("Choose an action.")),
            }
        }
    })
}

/// Makes `change` on the owner's farm and audits it, in one transaction.
/// An id of nothing on this farm is [`PageRefusal::NotFound`].
pub async fn change(
    store: &Store,
    owner: &Account,
    change: FarmChange<'_>,
    now: OffsetDateTime,
) -> Result<Saved, PageRefusal> {
    let farm = owner.farm();
    let change = check(change)?;
    let mut tx = store.write().await?;
    let (saved, action, detail) = match change {
        Checked::AddHouse(name) => {
            let name = farm_records::add_house(&mut tx, farm, name, now).await?;
            (
                Saved::House,
                "house_added",
                serde_json::json!({ "name": name }),
            )
        }
        Checked::RenameHouse(house, name) => {
            let name = farm_records::rename(&mut tx, farm, Renamed::House(house), name).await?;
            let detail = serde_json::json!({ "house": house.to_string(), "name": name });
            (Saved::House, "house_renamed", detail)
        }
        Checked::AddFlock(input) => {
            let name = farm_records::add_flock(&mut tx, farm, &input, now).await?;
            let detail = serde_json::json!({ "house": input.house.to_string(), "name": name });
            (Saved::Flock, "flock_added", detail)
        }
        Checked::RenameFlock(flock, name) => {
            let name = farm_records::rename(&mut tx, farm, Renamed::Flock(flock), name).await?;
            let detail = serde_json::json!({ "flock": flock.to_string(), "name": name });
            (Saved::Flock, "flock_renamed", detail)
        }
        Checked::DepleteFlock(flock) => {
            farm_records::deplete_flock(&mut tx, farm, flock).await?;
            let detail = serde_json::json!({ "flock": flock.to_string() });
            (Saved::Flock, "flock_depleted", detail)
        }
    };
    audit_action(&mut tx, owner, OwnerAction::new(action, detail), now).await?;
    tx.commit().await?;
    Ok(saved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_that_is_not_one_is_not_found_before_the_action_is_read() {
        let flock = FlockId::new().to_string();
        let change = |flock, action| FarmChange::ChangeFlock {
            flock,
            action,
            name: "B",
        };
        assert!(matches!(
            check(change("nope", "fly")),
            Err(PageRefusal::NotFound)
        ));
        assert!(matches!(
            check(change(&flock, "fly")),
            Err(PageRefusal::Invalid(_))
        ));
        assert!(matches!(
            check(change(&flock, "deplete")),
            Ok(Checked::DepleteFlock(_))
        ));
        assert!(matches!(
            check(FarmChange::RenameHouse {
                house: "nope",
                name: "A"
            }),
            Err(PageRefusal::NotFound)
        ));
    }
}
