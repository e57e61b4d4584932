//! `/admin` is for owners: every other role gets a 403 page on every admin
//! page and action, and is never shown the links. Every action also needs
//! the session's CSRF token.

use crate::helpers::{Browser, Engine, Farm, TestApp};
use crate::on_both_engines;

on_both_engines!(
    only_owners_see_and_use_farm_administration,
    every_admin_action_needs_the_owner_and_the_csrf_token,
    signed_out_people_are_sent_to_sign_in,
);

const PAGES: [&str; 4] = ["/admin", "/admin/members", "/admin/farm", "/admin/audit"];

async fn only_owners_see_and_use_farm_administration(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    for role in ["manager", "viewer"] {
        app.add_user(
            &farm.slug,
            &format!("{role}@hillside-farm.example"),
            role,
            crate::helpers::PASSWORD,
        )
        .await;
    }

    let owner = app.signed_in(&farm.owner).await;
    let (_, home) = owner.page("/").await;
    assert!(home.contains("href=\"/admin\""), "{home}");
    for path in PAGES {
        let (status, html) = owner.page(path).await;
        assert_eq!(status, 200, "{path}");
        assert!(html.contains("<title>Farm admin: "), "{path}: {html}");
    }

    for email in [
        farm.worker.email.clone(),
        "manager@hillside-farm.example".to_owned(),
        "viewer@hillside-farm.example".to_owned(),
    ] {
        let user = crate::helpers::TestUser {
            farm: farm.slug.clone(),
            email,
            password: crate::helpers::PASSWORD.to_owned(),
        };
        let browser = app.signed_in(&user).await;
        let (_, home) = browser.page("/").await;
        assert!(!home.contains("href=\"/admin\""), "{home}");
        for path in PAGES {
            let (status, html) = browser.page(path).await;
            assert_eq!(status, 403, "{path}");
            assert!(html.contains(NOT_OWNER), "{html}");
        }
    }
}

const NOT_OWNER: &str = "Only the farm&#39;s owner can use farm administration.";

/// Every admin action with a well-formed form, as (path, fields).
async fn every_action(app: &TestApp, farm: &Farm) -> Vec<(String, Vec<(&'static str, String)>)> {
    let owner = app.signed_in(&farm.owner).await;
    let grant = app.grant_of(&farm.worker.email).await;
    let (_, members) = owner.page("/admin/members").await;
    let worker = id_after(&members, &farm.worker.email, "/admin/members/");
    let (_, records) = owner.page("/admin/farm").await;
    let house = id_after(&records, "Houses", "/admin/houses/");
    let flock = id_after(&records, "Hens A", "/admin/flocks/");
    let text = |pairs: &[(&'static str, &str)]| -> Vec<(&'static str, String)> {
        pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
    };
    vec![
        (
            "/admin/connected-apps".to_owned(),
            text(&[("enabled", "off")]),
        ),
        (format!("/admin/apps/{grant}/disconnect"), text(&[])),
        (
            format!("/admin/members/{worker}"),
            text(&[("action", "disable")]),
        ),
        (
            format!("/admin/members/{worker}"),
            text(&[("action", "role"), ("role", "viewer")]),
        ),
        (
            format!("/admin/members/{worker}"),
            text(&[("action", "sign_out_everywhere")]),
        ),
        (format!("/admin/members/{worker}/password-reset"), text(&[])),
        ("/admin/houses".to_owned(), text(&[("name", "East")])),
        (
            format!("/admin/houses/{house}"),
            text(&[("name", "Renamed")]),
        ),
        (
            "/admin/flocks".to_owned(),
            vec![
                ("house", house.clone()),
                ("name", "Hens C".to_owned()),
                ("breed", "Hy-Line".to_owned()),
                ("placed_on", "2026-01-05".to_owned()),
                ("head_count", "100".to_owned()),
            ],
        ),
        (
            format!("/admin/flocks/{flock}"),
            text(&[("action", "deplete")]),
        ),
        (
            format!("/admin/flocks/{flock}"),
            text(&[("action", "rename"), ("name", "Renamed")]),
        ),
    ]
}

/// The id in the first `action="<prefix><id>"` after `after`.
fn id_after(html: &str, after: &str, prefix: &str) -> String {
    let from = html.find(after).unwrap();
    let marker = format!("action=\"{prefix}");
    let start = html[from..].find(&marker).unwrap() + from + marker.len();
    html[start..start + 36].to_owned()
}

/// Sends every admin action as `browser`, with `csrf` when given; returns
/// the actions whose answer was not a 403 page with `words`.
async fn refused_everywhere(
    browser: &Browser,
    actions: &[(String, Vec<(&'static str, String)>)],
    csrf: Option<&str>,
    words: &str,
) -> Vec<String> {
    let mut wrong = Vec::new();
    for (path, fields) in actions {
        let mut form: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        if let Some(token) = csrf {
            form.push(("csrf", token));
        }
        let response = browser.submit(path, &form).await;
        let status = response.status().as_u16();
        let body = response.text().await.unwrap();
        if status != 403 || !body.contains(words) {
            wrong.push(format!("{path} {fields:?}: {status}"));
        }
    }
    wrong
}

/// Each action is checked on its own: the list of those that got through
/// names every missing check at once.
async fn every_admin_action_needs_the_owner_and_the_csrf_token(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    app.add_flocks(&farm, &["Hens A"]).await;
    let mut tokens = app.connect(&farm.worker, "farm:read").await;
    let actions = every_action(&app, &farm).await;

    let owner = app.signed_in(&farm.owner).await;
    let wrong = refused_everywhere(&owner, &actions, None, "Please try again").await;
    assert!(
        wrong.is_empty(),
        "acted on without the CSRF token: {wrong:#?}"
    );
    let wrong = refused_everywhere(&owner, &actions, Some("forged"), "Please try again").await;
    assert!(
        wrong.is_empty(),
        "acted on with a wrong CSRF token: {wrong:#?}"
    );

    for role in ["manager", "worker", "viewer"] {
        let user = if role == "worker" {
            farm.worker.clone()
        } else {
            let email = format!("{role}@hillside-farm.example");
            app.add_member(&farm.slug, &email, role, None).await
        };
        let browser = app.signed_in(&user).await;
        let token = browser.csrf("/account/apps").await;
        let wrong = refused_everywhere(&browser, &actions, Some(&token), NOT_OWNER).await;
        assert!(wrong.is_empty(), "a {role} acted as owner: {wrong:#?}");
        let grant = app.grant_of(&farm.worker.email).await;
        let (status, html) = browser
            .page(&format!("/admin/apps/{grant}/disconnect"))
            .await;
        assert_eq!(status, 403, "{html}");
    }

    // Nothing happened: the worker's app works, the records are as made.
    app.assert_works(&mut tokens).await;
    assert_eq!(app.audit_count("admin_action").await, 0);
    app.assert_count(
        "select count(*) from users where disabled or credential_epoch <> 0",
        0,
    )
    .await;
    app.assert_count("select count(*) from memberships where role = 'viewer'", 1)
        .await;
    app.assert_count("select count(*) from password_resets", 0)
        .await;
    app.assert_count(
        "select count(*) from houses where name in ('East', 'Renamed')",
        0,
    )
    .await;
    app.assert_count(
        "select count(*) from flocks where name <> 'Hens A' or status <> 'active'",
        0,
    )
    .await;
    let (code, out, _) = app.cli(&["admin", "apps", "list"]).await;
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 1, "{out}");
}

async fn signed_out_people_are_sent_to_sign_in(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    for path in PAGES {
        let response = app.get(path).await;
        assert_eq!(response.status(), 303, "{path}");
        assert!(crate::helpers::location(&response).starts_with("/login?return_to="));
    }
}
