//! Next door ([`NextDoor`]): a second farm in the app's database whose
//! records look like [`TestApp::farm_with_flocks`]' (houses "North" and
//! "South", flocks "Hens A", "Hens B" and "Layers" in both), with entries
//! and deaths on the last days, egg lots, stock, an owner and a restricted
//! worker, an automation and a connected app, each carrying a marker no
//! page or tool answer of another farm may hold
//! ([`NextDoor::assert_absent`]). A query that forgets its farm predicate
//! then shows next door's rows, and the test that reads the answer sees it.

use coop::domain::{Currency, LotStatus};
use coop::storage::egg_lots::{self, NewEggLot};
use coop::storage::stock::{self, NewStockItem};
use coop::storage::{farm_admin, farms};
use serde_json::json;

use super::app::{Printed, TestApp, TestUser};
use super::mcp::BOTH_SCOPES;
use super::oauth::REDIRECT_URI;

/// Next door's figures: six-digit numbers no other fixture uses, and that
/// a sum including them would not hide (the tests also assert totals).
pub const HEAD_COUNT: i64 = 913_577;
pub const EGGS: i64 = 731_905;
pub const DEATHS: i64 = 482_711;
const LOT_QUANTITY: i64 = 604_433;
const STOCK_QUANTITY: i64 = 556_677;
/// Next door's own names, each with "Quill" in it (but its automation's).
const UNIQUE_FLOCK: &str = "Clover Quill";
/// Named like the automation a test farm has, so a name check that
/// forgot the farm would refuse that farm's.
const AUTOMATION: &str = "Barn scale";
const APP: &str = "Quill Assistant";
const STOCK_NAME: &str = "Quill mash";
const LOT_CODE: &str = "QUILL-LOT";

/// The farm next door, its members, and everything that would show it.
pub struct NextDoor {
    pub owner: TestUser,
    /// The owner's token, for next door's own view.
    pub token: String,
    markers: Vec<String>,
}

impl TestApp {
    /// Adds the farm next door (see [`NextDoor`]): flocks named like
    /// [`Self::farm_with_flocks`]' plus "Clover Quill", its owner's entries
    /// with deaths on the two days before today, egg lots, stock, a worker
    /// restricted to "Clover Quill", an automation limited to it, and a
    /// connected app.
    pub async fn next_door(&self) -> NextDoor {
        let slug = self.add_farm("Next Door").await;
        for house in ["North", "South"] {
            self.admin(&["house", "add", "--farm", &slug, "--name", house])
                .await;
        }
        let head_count = HEAD_COUNT.to_string();
        for (house, flock) in [
            ("North", "Hens A"),
            ("North", "Layers"),
            ("North", UNIQUE_FLOCK),
            ("South", "Hens B"),
            ("South", "Layers"),
        ] {
            let args = super::flock_add(&slug, house, flock, "2025-01-06", &head_count);
            self.admin(&args[1..]).await;
        }
        let owner = self
            .add_member(&slug, "owner@next-door.example", "owner", None)
            .await;
        let worker_email = "worker@next-door.example";
        self.add_member(&slug, worker_email, "worker", Some(UNIQUE_FLOCK))
            .await;
        let automation = automation_add(self, &slug).await;

        let registered = self
            .registered(&json!({
                "client_name": APP,
                "redirect_uris": [REDIRECT_URI],
                "token_endpoint_auth_method": "none",
            }))
            .await;
        let client_id = registered["client_id"].as_str().unwrap().to_owned();
        let token = self
            .connect_client(&owner, &client_id, BOTH_SCOPES)
            .await
            .access_token;
        let today = self.clock.now().date();
        for flock in ["Hens A", UNIQUE_FLOCK] {
            for days_ago in [1, 2] {
                let date = today - time::Duration::days(days_ago);
                let entry = json!({"flock": flock, "house": "North", "date": date.to_string(),
                    "eggs_collected": EGGS, "mortality": DEATHS});
                self.tool_ok(&token, "record_daily_entry", entry).await;
            }
        }

        let store = self.store();
        let mut db = store.read().await.unwrap();
        let farm = farms::find_by_slug(&mut db, &slug)
            .await
            .unwrap()
            .unwrap()
            .farm_id();
        let flocks = farm_admin::flocks(&mut db, farm).await.unwrap();
        let houses = farm_admin::houses(&mut db, farm).await.unwrap();
        drop(db);
        let mut tx = store.write().await.unwrap();
        for (n, flock) in flocks.iter().enumerate() {
            let code = format!("{LOT_CODE}-{n}");
            let lot = NewEggLot {
                flock: coop::domain::FlockId(flock.id),
                lot_code: &code,
                laid_on: today - time::Duration::days(1),
                grade: "A",
                quantity: LOT_QUANTITY,
                status: LotStatus::InStore,
            };
            egg_lots::add(&mut tx, farm, &lot, self.clock.now())
                .await
                .unwrap();
        }
        let item = NewStockItem {
            category: "feed",
            name: STOCK_NAME,
            quantity: STOCK_QUANTITY,
            unit: "bag",
            unit_cost_minor: 1250,
            currency: Currency::parse("EUR").unwrap(),
        };
        stock::add(&mut tx, farm, &item, self.clock.now())
            .await
            .unwrap();
        tx.commit().await.unwrap();

        let mut markers: Vec<String> = flocks.iter().map(|f| f.id.to_string()).collect();
        markers.extend(houses.iter().map(|h| h.id.to_string()));
        markers.extend([
            slug,
            "next-door.example".to_owned(),
            "Quill".to_owned(),
            client_id,
            automation,
        ]);
        markers.extend(
            [HEAD_COUNT, EGGS, DEATHS, LOT_QUANTITY, STOCK_QUANTITY].map(|n| n.to_string()),
        );
        NextDoor {
            owner,
            token,
            markers,
        }
    }
}

/// Next door's automation "Barn scale", a worker limited to "Clover
/// Quill"; its client_id.
async fn automation_add(app: &TestApp, slug: &str) -> String {
    let args = [
        "admin",
        "automation",
        "add",
        "--farm",
        slug,
        "--name",
        AUTOMATION,
        "--role",
        "worker",
        "--scope",
        "farm:read daily-entries:write",
        "--flocks",
        UNIQUE_FLOCK,
        "--secret",
    ];
    let (code, out, err) = app.cli(&args).await;
    assert_eq!(code, 0, "automation add failed: {err}");
    Printed { out, err }.field("client_id")
}

impl NextDoor {
    /// Fails when `body` (a page, a tool's whole JSON-RPC answer) holds any
    /// of next door's markers: its flocks' and houses' ids, its slug, its
    /// members' email domain, its names ("Quill"), its app's and
    /// automation's client ids, its figures.
    pub fn assert_absent(&self, what: &str, body: &str) {
        for marker in &self.markers {
            assert!(
                !body.contains(marker.as_str()),
                "{what}: next door's {marker:?} in {body}"
            );
        }
    }

    /// How many of next door's markers `body` holds (next door's own view
    /// shows them: the markers are real).
    pub fn markers_in(&self, body: &str) -> usize {
        self.markers
            .iter()
            .filter(|m| body.contains(m.as_str()))
            .count()
    }
}
