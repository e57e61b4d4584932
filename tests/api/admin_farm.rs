//! `/admin/farm`: houses and flocks: add, rename, mark a flock depleted.

use crate::apps_support::{self, assert_page, csrf, page, post};
use crate::helpers::{Engine, TestApp, location};
use crate::oauth_client::{audit_count, db_count, sign_in_browser};
use crate::on_both_engines;

on_both_engines!(the_owner_adds_renames_and_depletes, farm_record_refusals,);

/// The id in the first `action="/admin/{kind}/<id>"` after `after`.
fn id_after(html: &str, after: &str, kind: &str) -> String {
    let from = html.find(after).unwrap_or(0);
    let marker = format!("action=\"/admin/{kind}/");
    let start = html[from..].find(&marker).unwrap() + from + marker.len();
    html[start..start + 36].to_owned()
}

async fn the_owner_adds_renames_and_depletes(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = apps_support::farm(&app, "Hillside Farm").await;
    let owner = sign_in_browser(&app, &farm.owner).await;
    let (_, html) = page(&owner, &app, "/admin/farm").await;
    assert!(html.contains("No houses yet"));
    let token = csrf(&owner, &app, "/admin/farm").await;

    let response = post(
        &owner,
        &app,
        "/admin/houses",
        &[("csrf", &token), ("name", "North")],
    )
    .await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/admin/farm?done=house");
    let (_, html) = page(&owner, &app, "/admin/farm").await;
    let house = id_after(&html, "Houses", "houses");
    let response = post(
        &owner,
        &app,
        &format!("/admin/houses/{house}"),
        &[("csrf", &token), ("name", "North barn")],
    )
    .await;
    assert_eq!(response.status(), 303);

    let response = post(
        &owner,
        &app,
        "/admin/flocks",
        &[
            ("csrf", &token),
            ("house", &house),
            ("name", "Flock A"),
            ("breed", "Hy-Line Brown"),
            ("placed_on", "2026-02-01"),
            ("head_count", "1200"),
        ],
    )
    .await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/admin/farm?done=flock");
    let (_, html) = page(&owner, &app, "/admin/farm").await;
    assert!(
        html.contains("Flock A <span class=\"muted\">in North barn</span>"),
        "{html}"
    );
    assert!(html.contains("Hy-Line Brown, 1200 birds, placed 2026-02-01"));
    let flock = id_after(&html, "Flock A", "flocks");
    let response = post(
        &owner,
        &app,
        &format!("/admin/flocks/{flock}"),
        &[("csrf", &token), ("action", "rename"), ("name", "Flock B")],
    )
    .await;
    assert_eq!(response.status(), 303);
    let response = post(
        &owner,
        &app,
        &format!("/admin/flocks/{flock}"),
        &[("csrf", &token), ("action", "deplete")],
    )
    .await;
    assert_eq!(response.status(), 303);
    let (_, html) = page(&owner, &app, "/admin/farm").await;
    assert!(
        html.contains(
            "Flock B <span class=\"muted\">in North barn</span> <span class=\"tag\">depleted</span>"
        ),
        "{html}"
    );
    assert!(!html.contains("Mark depleted"));
    assert_eq!(
        db_count(
            &app,
            "select count(*) from flocks where status = 'depleted' and name = 'Flock B'"
        )
        .await,
        1
    );
    assert_eq!(audit_count(&app, "admin_action").await, 5);
}

async fn farm_record_refusals(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = apps_support::farm(&app, "Hillside Farm").await;
    let other = apps_support::farm(&app, "Valley Farm").await;
    app.cli(&[
        "admin", "house", "add", "--farm", &farm.slug, "--name", "North",
    ])
    .await;
    app.cli(&[
        "admin", "house", "add", "--farm", &farm.slug, "--name", "South",
    ])
    .await;
    apps_support::add_flocks(&app, &other, &["Their flock"]).await;
    let (foreign_house, foreign_flock) = {
        let browser = sign_in_browser(&app, &other.owner).await;
        let (_, html) = page(&browser, &app, "/admin/farm").await;
        (
            id_after(&html, "Houses", "houses"),
            id_after(&html, "Their flock", "flocks"),
        )
    };

    let owner = sign_in_browser(&app, &farm.owner).await;
    let token = csrf(&owner, &app, "/admin/farm").await;
    let (_, html) = page(&owner, &app, "/admin/farm").await;
    let north = id_after(&html, "Houses", "houses");

    // Duplicate and empty names: 400 with the reason.
    let response = post(
        &owner,
        &app,
        "/admin/houses",
        &[("csrf", &token), ("name", "South")],
    )
    .await;
    assert_page(response, 400, "already has a house named").await;
    let response = post(
        &owner,
        &app,
        &format!("/admin/houses/{north}"),
        &[("csrf", &token), ("name", "South")],
    )
    .await;
    assert_page(response, 400, "already has a house named").await;
    let response = post(
        &owner,
        &app,
        "/admin/houses",
        &[("csrf", &token), ("name", "  ")],
    )
    .await;
    assert_page(response, 400, "1 to 100 printable characters").await;
    let bad_flock = [
        ("csrf", token.as_str()),
        ("house", north.as_str()),
        ("name", "F"),
        ("breed", "B"),
        ("placed_on", "yesterday"),
        ("head_count", "10"),
    ];
    let response = post(&owner, &app, "/admin/flocks", &bad_flock).await;
    assert_page(response, 400, "is not a date").await;

    // Another farm's house and flock, unknown and malformed ids: 404.
    let response = post(
        &owner,
        &app,
        &format!("/admin/houses/{foreign_house}"),
        &[("csrf", &token), ("name", "Mine now")],
    )
    .await;
    assert_page(response, 404, "Not found").await;
    let mut into_foreign = bad_flock;
    into_foreign[1].1 = &foreign_house;
    into_foreign[4].1 = "2026-01-01";
    let response = post(&owner, &app, "/admin/flocks", &into_foreign).await;
    assert_page(response, 404, "Not found").await;
    for flock in [
        foreign_flock.as_str(),
        &uuid::Uuid::now_v7().to_string(),
        "zzz",
    ] {
        for form in [
            vec![("csrf", token.as_str()), ("action", "deplete")],
            vec![
                ("csrf", token.as_str()),
                ("action", "rename"),
                ("name", "Mine now"),
            ],
        ] {
            let response = post(&owner, &app, &format!("/admin/flocks/{flock}"), &form).await;
            assert_page(response, 404, "Not found").await;
        }
    }
    // Without the CSRF token.
    let response = post(&owner, &app, "/admin/houses", &[("name", "East")]).await;
    assert_page(response, 403, "Please try again").await;

    assert_eq!(
        db_count(
            &app,
            "select count(*) from flocks where status = 'depleted'"
        )
        .await,
        0
    );
    assert_eq!(
        db_count(
            &app,
            "select (select count(*) from houses where name = 'Mine now' or name = 'East')
                  + (select count(*) from flocks where name = 'Mine now')"
        )
        .await,
        0
    );
    assert_eq!(audit_count(&app, "admin_action").await, 0);
}
