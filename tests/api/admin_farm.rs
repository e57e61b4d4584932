//! `/admin/farm`: houses and flocks: add, rename, mark a flock depleted.

use crate::helpers::{Engine, TestApp, assert_page, location};
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
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let owner = app.signed_in(&farm.owner).await;
    let (_, html) = owner.page("/admin/farm").await;
    assert!(html.contains("No houses yet"));
    let token = owner.csrf("/admin/farm").await;

    let response = owner
        .submit("/admin/houses", &[("csrf", &token), ("name", "North")])
        .await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/admin/farm?done=house");
    let (_, html) = owner.page("/admin/farm").await;
    let house = id_after(&html, "Houses", "houses");
    let response = owner
        .submit(
            &format!("/admin/houses/{house}"),
            &[("csrf", &token), ("name", "North barn")],
        )
        .await;
    assert_eq!(response.status(), 303);

    let response = owner
        .submit(
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
    let (_, html) = owner.page("/admin/farm").await;
    assert!(
        html.contains("Flock A <span class=\"muted\">in North barn</span>"),
        "{html}"
    );
    assert!(html.contains("Hy-Line Brown, 1200 birds, placed 2026-02-01"));
    let flock = id_after(&html, "Flock A", "flocks");
    let response = owner
        .submit(
            &format!("/admin/flocks/{flock}"),
            &[("csrf", &token), ("action", "rename"), ("name", "Flock B")],
        )
        .await;
    assert_eq!(response.status(), 303);
    let response = owner
        .submit(
            &format!("/admin/flocks/{flock}"),
            &[("csrf", &token), ("action", "deplete")],
        )
        .await;
    assert_eq!(response.status(), 303);
    let (_, html) = owner.page("/admin/farm").await;
    assert!(
        html.contains(
            "Flock B <span class=\"muted\">in North barn</span> <span class=\"tag\">depleted</span>"
        ),
        "{html}"
    );
    assert!(!html.contains("Mark depleted"));
    app.assert_count(
        "select count(*) from flocks where status = 'depleted' and name = 'Flock B'",
        1,
    )
    .await;
    assert_eq!(app.audit_count("admin_action").await, 5);
}

async fn farm_record_refusals(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let other = app.farm("Valley Farm").await;
    app.cli(&[
        "admin", "house", "add", "--farm", &farm.slug, "--name", "North",
    ])
    .await;
    app.cli(&[
        "admin", "house", "add", "--farm", &farm.slug, "--name", "South",
    ])
    .await;
    app.add_flocks(&other, &["Their flock"]).await;
    let (foreign_house, foreign_flock) = {
        let browser = app.signed_in(&other.owner).await;
        let (_, html) = browser.page("/admin/farm").await;
        (
            id_after(&html, "Houses", "houses"),
            id_after(&html, "Their flock", "flocks"),
        )
    };

    let owner = app.signed_in(&farm.owner).await;
    let token = owner.csrf("/admin/farm").await;
    let (_, html) = owner.page("/admin/farm").await;
    let north = id_after(&html, "Houses", "houses");

    // Duplicate and empty names: 400 with the reason.
    let response = owner
        .submit("/admin/houses", &[("csrf", &token), ("name", "South")])
        .await;
    assert_page(response, 400, "already has a house named").await;
    let response = owner
        .submit(
            &format!("/admin/houses/{north}"),
            &[("csrf", &token), ("name", "South")],
        )
        .await;
    assert_page(response, 400, "already has a house named").await;
    let response = owner
        .submit("/admin/houses", &[("csrf", &token), ("name", "  ")])
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
    let response = owner.submit("/admin/flocks", &bad_flock).await;
    assert_page(response, 400, "is not a date").await;

    // Another farm's house and flock, unknown and malformed ids: 404.
    let response = owner
        .submit(
            &format!("/admin/houses/{foreign_house}"),
            &[("csrf", &token), ("name", "Mine now")],
        )
        .await;
    assert_page(response, 404, "Not found").await;
    let mut into_foreign = bad_flock;
    into_foreign[1].1 = &foreign_house;
    into_foreign[4].1 = "2026-01-01";
    let response = owner.submit("/admin/flocks", &into_foreign).await;
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
            let response = owner.submit(&format!("/admin/flocks/{flock}"), &form).await;
            assert_page(response, 404, "Not found").await;
        }
    }
    // Without the CSRF token.
    let response = owner.submit("/admin/houses", &[("name", "East")]).await;
    assert_page(response, 403, "Please try again").await;

    app.assert_count("select count(*) from flocks where status = 'depleted'", 0)
        .await;
    assert_eq!(
        app.db_count(
            "select (select count(*) from houses where name = 'Mine now' or name = 'East')
                  + (select count(*) from flocks where name = 'Mine now')"
        )
        .await,
        0
    );
    assert_eq!(app.audit_count("admin_action").await, 0);
}
