//! `coop serve --demo`: a demo farm in an empty database.
//!
//! The farm is made to look like a real small egg farm so that the MCP
//! tools have something worth asking about: three houses, five flocks of
//! common laying breeds at different ages (one in its first weeks of lay,
//! one at peak, older ones declining, one already depleted), 120 days of
//! daily entries each, weekly egg lots, and a store of feed, medication and
//! packaging priced in euros. Production follows a laying hen's curve by
//! age (onset at 18 weeks, peak of ~94 % at 25–30 weeks, then a slow
//! decline), with day-to-day noise from a fixed seed, so two demo databases
//! made on the same day hold the same records.
//!
//! A flock's `head_count` is the number of birds alive at its last entry:
//! the birds placed less every recorded death, which is what a lay rate or
//! a mortality rate is a share of.
//!
//! Four members, one per role; the worker is limited to two flocks in two
//! different houses, so a flock scope cannot be mistaken for a house scope.
//! Their passwords are generated here, hashed, and returned once for
//! printing; they are never stored or logged in clear.

use futures::future::try_join_all;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use time::{Date, Duration, OffsetDateTime};

use super::AdminError;
use crate::domain::Issuer;
use crate::domain::{Email, FarmId, FlockId, HouseId, Role, UserId};
use crate::identity::Passwords;
use crate::secrets::Password;
use crate::storage::seed::{
    self, EntrySeed, FarmSeed, FlockSeed, HouseSeed, LotSeed, MemberSeed, StockSeed,
};
use crate::storage::{Store, farms};

/// The demo farm's slug, fixed so instructions and tests can name it.
pub const DEMO_SLUG: &str = "demo";
pub const DEMO_FARM_NAME: &str = "Willow Brook Farm";
/// Days of daily entries per flock.
pub const DAYS_OF_ENTRIES: i64 = 120;

const HOUSES: [&str; 3] = ["North House", "South House", "Meadow House"];

/// Pullets arrive from the rearing farm at 17 weeks of age.
const AGE_AT_PLACEMENT_DAYS: i64 = 17 * 7;

struct FlockPlan {
    name: &'static str,
    /// Three letters that start its egg lot codes.
    lot_prefix: &'static str,
    breed: &'static str,
    house: usize,
    placed_days_ago: i64,
    placed_head: i64,
    /// Peak lay rate of the breed.
    peak: f64,
    /// Feed per bird per day, grams (white breeds eat less).
    feed_g: f64,
    depleted_days_ago: Option<i64>,
}

const FLOCKS: [FlockPlan; 5] = [
    FlockPlan {
        name: "Bluebell",
        lot_prefix: "BLU",
        breed: "ISA Brown",
        house: 0,
        placed_days_ago: 190,
        placed_head: 5_000,
        peak: 0.95,
        feed_g: 115.0,
        depleted_days_ago: None,
    },
    FlockPlan {
        name: "Clover",
        lot_prefix: "CLO",
        breed: "Lohmann Brown Classic",
        house: 0,
        placed_days_ago: 130,
        placed_head: 4_200,
        peak: 0.94,
        feed_g: 114.0,
        depleted_days_ago: None,
    },
    FlockPlan {
        name: "Daisy",
        lot_prefix: "DAI",
        breed: "Hy-Line W-36",
        house: 1,
        placed_days_ago: 330,
        placed_head: 6_000,
        peak: 0.95,
        feed_g: 100.0,
        depleted_days_ago: None,
    },
    FlockPlan {
        name: "Poppy",
        lot_prefix: "POP",
        breed: "Dekalb White",
        house: 1,
        placed_days_ago: 260,
        placed_head: 3_600,
        peak: 0.94,
        feed_g: 102.0,
        depleted_days_ago: None,
    },
    FlockPlan {
        name: "Heather",
        lot_prefix: "HEA",
        breed: "Bovans Brown",
        house: 2,
        placed_days_ago: 480,
        placed_head: 2_800,
        peak: 0.93,
        feed_g: 118.0,
        depleted_days_ago: Some(20),
    },
];

/// The worker's flocks: one in North House, one in South House.
const WORKER_FLOCKS: [&str; 2] = ["Clover", "Daisy"];

const MEMBERS: [(Role, &str); 4] = [
    (Role::Owner, "owner@demo.example"),
    (Role::Manager, "manager@demo.example"),
    (Role::Worker, "worker@demo.example"),
    (Role::Viewer, "viewer@demo.example"),
];

/// One demo member and the password generated for them.
pub struct DemoMember {
    pub role: Role,
    pub email: String,
    pub password: Password,
}

/// The demo's members and their generated passwords, printed once.
pub struct DemoFarm {
    pub members: Vec<DemoMember>,
}

impl DemoFarm {
    pub fn sign_in_instructions(&self, issuer: &Issuer) -> String {
        let mut out = format!(
            "Demo farm \"{DEMO_FARM_NAME}\" (slug {DEMO_SLUG}) is ready. \
             Sign in at {}/login as one of:\n",
            issuer
        );
        for member in &self.members {
            out.push_str(&format!(
                "  {:<8} {:<24} {}\n",
                member.role.as_str(),
                member.email,
                member.password.expose()
            ));
        }
        out.push_str("These passwords are shown only now.");
        out
    }
}

/// Fills an empty database with the demo farm; `None` when any farm
/// exists already (nothing is added then).
pub async fn seed_if_empty(
    store: &Store,
    passwords: &Passwords,
    now: OffsetDateTime,
) -> Result<Option<DemoFarm>, AdminError> {
    // Checked again inside the writing transaction; this early look only
    // saves hashing four passwords for nothing.
    if farms::any_exist(&mut store.read().await?).await? {
        return Ok(None);
    }
    let members: Vec<DemoMember> = MEMBERS
        .iter()
        .map(|(role, email)| DemoMember {
            role: *role,
            email: (*email).to_owned(),
            password: crate::secrets::generate_password(),
        })
        .collect();
    let hashes = try_join_all(members.iter().map(|m| passwords.hash(&m.password))).await?;
    let accounts = members
        .iter()
        .zip(hashes)
        .map(|(member, hash)| {
            let email = Email::parse(&member.email).map_err(super::refused)?;
            Ok((member.role, email, hash))
        })
        .collect::<Result<Vec<_>, AdminError>>()?;
    let farm = plan(now.date(), &accounts);
    if seed::insert_if_empty(store, &farm, now).await? {
        Ok(Some(DemoFarm { members }))
    } else {
        Ok(None)
    }
}

/// Every row of the demo farm for a server started on `today`; entries of
/// active flocks end yesterday.
fn plan(today: Date, accounts: &[(Role, Email, String)]) -> FarmSeed {
    let houses: Vec<HouseSeed> = HOUSES
        .iter()
        .map(|name| HouseSeed {
            id: HouseId::new(),
            name: (*name).to_owned(),
        })
        .collect();
    let flock_ids: Vec<FlockId> = FLOCKS.iter().map(|_| FlockId::new()).collect();
    let members: Vec<MemberSeed> = accounts
        .iter()
        .map(|(role, email, hash)| MemberSeed {
            id: UserId::new(),
            email: email.as_str().to_owned(),
            password_hash: hash.clone(),
            role: *role,
            flocks: (*role == Role::Worker).then(|| {
                FLOCKS
                    .iter()
                    .zip(&flock_ids)
                    .filter(|(plan, _)| WORKER_FLOCKS.contains(&plan.name))
                    .map(|(_, id)| *id)
                    .collect()
            }),
        })
        .collect();
    // MEMBERS holds every role, so each look-up finds its member; were one
    // missing, the made-up id would fail the foreign key and the whole demo
    // would roll back rather than be half-written.
    let recorder = |role: Role| {
        members
            .iter()
            .find(|m| m.role == role)
            .or(members.first())
            .map(|m| m.id)
            .unwrap_or_default()
    };
    let (manager, worker) = (recorder(Role::Manager), recorder(Role::Worker));

    let mut flocks = Vec::new();
    let mut entries = Vec::new();
    let mut lots = Vec::new();
    for (index, (flock_plan, id)) in FLOCKS.iter().zip(&flock_ids).enumerate() {
        let house = houses[flock_plan.house].id;
        // The worker records their own flocks except on Sundays, when the
        // manager covers.
        let keeper = if WORKER_FLOCKS.contains(&flock_plan.name) {
            worker
        } else {
            manager
        };
        let days = flock_days(today, flock_plan, index as u64);
        let head_count = days.last().map_or(flock_plan.placed_head, |d| d.alive);
        for day in &days {
            let recorded_by = if day.date.weekday() == time::Weekday::Sunday {
                manager
            } else {
                keeper
            };
            entries.push(EntrySeed {
                house,
                flock: *id,
                date: day.date,
                eggs_collected: day.collected,
                eggs_cracked: day.cracked,
                mortality: day.mortality,
                feed_used_g: day.feed_g,
                water_used_ml: day.water_ml,
                notes: day.notes.to_owned(),
                recorded_by,
            });
        }
        lots.extend(weekly_lots(today, flock_plan, *id, &days));
        flocks.push(FlockSeed {
            id: *id,
            house,
            name: flock_plan.name.to_owned(),
            breed: flock_plan.breed.to_owned(),
            placed_on: today - Duration::days(flock_plan.placed_days_ago),
            head_count,
            status: if flock_plan.depleted_days_ago.is_some() {
                "depleted"
            } else {
                "active"
            },
        });
    }

    FarmSeed {
        farm: FarmId::new(),
        slug: DEMO_SLUG.to_owned(),
        name: DEMO_FARM_NAME.to_owned(),
        houses,
        flocks,
        members,
        entries,
        lots,
        stock: stock(),
    }
}

/// One flock's day as the entry records it; `alive` is the count after the
/// day's deaths.
struct Day {
    date: Date,
    collected: i64,
    cracked: i64,
    mortality: i64,
    feed_g: i64,
    water_ml: i64,
    alive: i64,
    notes: &'static str,
}

fn flock_days(today: Date, plan: &FlockPlan, seed: u64) -> Vec<Day> {
    let mut rng = StdRng::seed_from_u64(0xC00F + seed);
    let placed_on = today - Duration::days(plan.placed_days_ago);
    let last = today - Duration::days(plan.depleted_days_ago.unwrap_or(0) + 1);
    let first = last - Duration::days(DAYS_OF_ENTRIES - 1);
    // Deaths between placement and the first recorded day, at the usual
    // rate of about one bird in 4,000 a day.
    let unrecorded_days = (first - placed_on).whole_days().max(0);
    let mut alive = plan.placed_head - (plan.placed_head * unrecorded_days) / 4_000;

    let mut days = Vec::new();
    for offset in 0..DAYS_OF_ENTRIES {
        let date = first + Duration::days(offset);
        let age_days = AGE_AT_PLACEMENT_DAYS + (date - placed_on).whole_days();
        let age_weeks = age_days as f64 / 7.0;
        let notes = note_for(offset, date == last && plan.depleted_days_ago.is_some());
        let heat = notes.starts_with("Heat");

        let mortality = poisson(
            &mut rng,
            alive as f64 / 4_000.0 * if heat { 2.0 } else { 1.0 },
        );
        alive = (alive - mortality).max(0);
        let rate = lay_rate(age_weeks, plan.peak) * if heat { 0.95 } else { 1.0 };
        let collected = (alive as f64 * rate * rng.random_range(0.975..1.025)).round() as i64;
        // Shells thin as hens age: ~0.5 % cracked at 20 weeks, ~1.5 % at 80.
        let crack_share = 0.004 + (age_weeks - 20.0).max(0.0) * 0.000_18;
        let cracked = (collected as f64 * crack_share * rng.random_range(0.6..1.4)).round() as i64;
        let feed_g = (alive as f64 * plan.feed_g * rng.random_range(0.97..1.03)).round() as i64;
        // Hens drink about twice what they eat, more in the heat.
        let water_ml = (feed_g as f64 * rng.random_range(1.85..2.05) * if heat { 1.3 } else { 1.0 })
            .round() as i64;

        days.push(Day {
            date,
            collected: collected.max(0),
            cracked: cracked.clamp(0, collected.max(0)),
            mortality,
            feed_g,
            water_ml,
            alive,
            notes,
        });
    }
    days
}

/// Share of hens laying on a day, by age in weeks: onset at 18 weeks, peak
/// from 25 to 30 weeks, then about half a point lower each week.
fn lay_rate(age_weeks: f64, peak: f64) -> f64 {
    if age_weeks < 18.0 {
        0.0
    } else if age_weeks < 25.0 {
        0.05 + (peak - 0.05) * (age_weeks - 18.0) / 7.0
    } else if age_weeks <= 30.0 {
        peak
    } else {
        (peak - (age_weeks - 30.0) * 0.0045).max(0.5)
    }
}

/// A few remarks a farm would write down; the same days for every flock.
fn note_for(offset: i64, last_day_before_depletion: bool) -> &'static str {
    if last_day_before_depletion {
        return "Last collection; birds leave tomorrow";
    }
    match offset {
        9 => "Vet visit: flock healthy",
        37 => "Feed delivery, new batch of layer mash",
        61..=63 => "Heat: fans on full, extra water lines",
        88 => "Red mite check: none found",
        104 => "Lights adjusted to 16 h",
        _ => "",
    }
}

/// Deaths in a day: Poisson with mean `lambda` (Knuth's method; the means
/// here are a few birds, so the loop is short).
fn poisson(rng: &mut StdRng, lambda: f64) -> i64 {
    let limit = (-lambda).exp();
    let mut k = 0;
    let mut p = 1.0;
    loop {
        p *= rng.random::<f64>();
        if p <= limit || k >= 1_000 {
            return k;
        }
        k += 1;
    }
}

/// Eggs are packed into a grade A lot and a grade B lot (seconds: dirty or
/// misshapen, about 3 %) at the end of each week. Lots older than ten days
/// have shipped; every few weeks a B lot failed inspection and was
/// discarded.
fn weekly_lots(today: Date, plan: &FlockPlan, flock: FlockId, days: &[Day]) -> Vec<LotSeed> {
    let mut lots = Vec::new();
    for (week, chunk) in days.chunks(7).enumerate() {
        let Some(last) = chunk.last() else { continue };
        let sound: i64 = chunk.iter().map(|d| d.collected - d.cracked).sum();
        let grade_b = sound * 3 / 100;
        let shipped = (today - last.date).whole_days() > 10;
        let code = |grade: &str| {
            format!(
                "{}-{:02}{:02}{:02}-{grade}",
                plan.lot_prefix,
                last.date.year() % 100,
                u8::from(last.date.month()),
                last.date.day()
            )
        };
        lots.push(LotSeed {
            flock,
            lot_code: code("A"),
            laid_on: last.date,
            grade: "A",
            quantity: sound - grade_b,
            status: if shipped { "shipped" } else { "in_store" },
        });
        lots.push(LotSeed {
            flock,
            lot_code: code("B"),
            laid_on: last.date,
            grade: "B",
            quantity: grade_b,
            status: match (shipped, week % 5 == 3) {
                (_, true) => "discarded",
                (true, false) => "shipped",
                (false, false) => "in_store",
            },
        });
    }
    lots
}

fn stock() -> Vec<StockSeed> {
    let item = |category, name: &str, quantity, unit: &str, unit_cost_minor| StockSeed {
        category,
        name: name.to_owned(),
        quantity,
        unit: unit.to_owned(),
        unit_cost_minor,
        currency: "EUR",
    };
    vec![
        item("feed", "Layer mash 16% protein", 18_500, "kg", 38),
        item("feed", "Layer pellets", 6_200, "kg", 41),
        item("feed", "Oyster shell grit", 750, "kg", 29),
        item("medication", "Flubenvet 1% wormer", 3, "tub (240 g)", 4_650),
        item(
            "medication",
            "Coccidiosis vaccine",
            6,
            "vial (1,000 doses)",
            2_890,
        ),
        item(
            "medication",
            "Vitamin and electrolyte tonic",
            12,
            "l",
            1_150,
        ),
        item("packaging", "Egg trays, 30 eggs", 8_400, "tray", 9),
        item("packaging", "Egg boxes, 6 eggs", 12_000, "box", 14),
        item(
            "packaging",
            "Shipping cartons, 360 eggs",
            410,
            "carton",
            115,
        ),
        item("other", "Wood shavings", 64, "bale (20 kg)", 895),
    ]
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn sample() -> (Date, FarmSeed) {
        let today = time::macros::date!(2026 - 03 - 15);
        let accounts: Vec<_> = MEMBERS
            .iter()
            .map(|(role, email)| (*role, Email::parse(email).unwrap(), "hash".to_owned()))
            .collect();
        (today, plan(today, &accounts))
    }

    #[test]
    fn the_farm_has_three_houses_five_uniquely_named_flocks_and_four_members() {
        let (_, farm) = sample();
        assert_eq!(farm.slug, "demo");
        assert_eq!(farm.houses.len(), 3);
        assert_eq!(farm.flocks.len(), 5);
        let names: HashSet<_> = farm.flocks.iter().map(|f| &f.name).collect();
        assert_eq!(names.len(), 5);
        let roles: Vec<_> = farm.members.iter().map(|m| m.role).collect();
        assert_eq!(roles, Role::ALL);
        for member in &farm.members {
            let restricted = member.flocks.as_ref().map(Vec::len);
            let expected = (member.role == Role::Worker).then_some(2);
            assert_eq!(restricted, expected, "{:?}", member.role);
        }
    }

    #[test]
    fn active_flocks_have_120_days_ending_yesterday() {
        let (today, farm) = sample();
        for flock in &farm.flocks {
            let dates: Vec<Date> = farm
                .entries
                .iter()
                .filter(|e| e.flock == flock.id)
                .map(|e| e.date)
                .collect();
            assert_eq!(dates.len(), 120, "{}", flock.name);
            let unique: HashSet<_> = dates.iter().collect();
            assert_eq!(unique.len(), 120);
            let last = dates.iter().max().unwrap();
            if flock.status == "active" {
                assert_eq!(*last, today.previous_day().unwrap(), "{}", flock.name);
            } else {
                assert!(*last < today - Duration::days(1));
            }
            assert!(dates.iter().all(|d| *d > flock.placed_on));
        }
    }

    #[test]
    fn production_is_plausible() {
        let (_, farm) = sample();
        let workers: HashSet<_> = farm
            .members
            .iter()
            .filter(|m| matches!(m.role, Role::Worker | Role::Manager))
            .map(|m| m.id)
            .collect();
        for entry in &farm.entries {
            let flock = farm.flocks.iter().find(|f| f.id == entry.flock).unwrap();
            assert!(entry.eggs_collected <= flock.head_count + 500);
            assert!(entry.eggs_cracked <= entry.eggs_collected / 20 + 1);
            assert!(entry.mortality < 20);
            assert!(entry.feed_used_g > 80 * flock.head_count);
            assert!(entry.water_used_ml > entry.feed_used_g);
            assert!(workers.contains(&entry.recorded_by));
        }
        // A flock at peak lays above 90 %; one at 80 weeks well below.
        assert!(lay_rate(27.0, 0.95) > 0.9);
        assert!(lay_rate(80.0, 0.93) < 0.75);
        assert_eq!(lay_rate(16.0, 0.95), 0.0);
    }

    #[test]
    fn lots_are_unique_and_come_in_every_status() {
        let (_, farm) = sample();
        let codes: HashSet<_> = farm.lots.iter().map(|l| &l.lot_code).collect();
        assert_eq!(codes.len(), farm.lots.len());
        for status in ["in_store", "shipped", "discarded"] {
            assert!(farm.lots.iter().any(|l| l.status == status), "{status}");
        }
        assert!(farm.lots.iter().all(|l| l.quantity > 0));
        for category in ["feed", "medication", "packaging"] {
            assert!(farm.stock.iter().any(|s| s.category == category));
        }
        assert!(farm.stock.iter().all(|s| s.currency == "EUR"));
    }
}
