//! Pages and states: every page and form answers `Cache-Control: no-store`
//! (a shared cache or the back button after sign-out must not show a
//! person's data or a form's CSRF token again), and a suspended farm is
//! frozen: its members may sign in and see why, and nothing that changes
//! the farm or mints access succeeds.

use crate::helpers::oauth::Pkce;
use crate::helpers::{Browser, Engine, TestApp, assert_no_store, location};
use crate::on_both_engines;

on_both_engines!(
    every_page_and_form_answer_is_no_store,
    a_suspended_farm_shows_why_and_changes_nothing,
);

async fn every_page_and_form_answer_is_no_store(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let tokens = app.connect(&farm.owner, "farm:read").await;
    let grant = app.grant_of(&farm.owner.email).await;

    // Signed out: the sign-in form, a page that sends to it, a failed
    // sign-in.
    let anonymous = Browser::new(&app);
    for path in [
        "/login",
        "/",
        "/admin",
        "/account/apps",
        "/account/password",
    ] {
        let response = anonymous.open(path).await;
        assert_no_store(&response, path);
    }
    let response = anonymous.sign_in(&farm.owner.email, "wrong").await;
    assert_eq!(response.status(), 401);
    assert_no_store(&response, "a failed sign-in");

    // Signed in: every page, the consent screen, a form's answer.
    let owner = app.signed_in(&farm.owner).await;
    for path in [
        "/".to_owned(),
        "/account/apps".to_owned(),
        format!("/account/apps/{grant}/disconnect"),
        "/account/password".to_owned(),
        "/admin".to_owned(),
        format!("/admin/apps/{grant}/disconnect"),
        "/admin/members".to_owned(),
        "/admin/farm".to_owned(),
        "/admin/audit".to_owned(),
        "/login".to_owned(),
        "/admin/apps/not-a-grant/disconnect".to_owned(),
    ] {
        let response = owner.open(&path).await;
        assert!(response.status().as_u16() < 500, "{path}");
        assert_no_store(&response, &path);
    }
    let path = app.authorize_path(&tokens.client_id, &Pkce::new(), "farm:read", &[]);
    let response = owner.open(&path).await;
    assert_eq!(response.status(), 200);
    assert_no_store(&response, "the consent screen");
    let token = owner.csrf("/admin/farm").await;
    let response = owner
        .submit("/admin/houses", &[("csrf", &token), ("name", "North")])
        .await;
    assert_eq!(response.status(), 303);
    assert_no_store(&response, "an admin form's answer");
    let response = owner.submit("/logout", &[("csrf", &token)]).await;
    assert_no_store(&response, "sign-out");
    // Static files may be cached: they hold nothing of anyone's.
    let response = anonymous.open("/static/coop.css").await;
    assert_ne!(
        response
            .headers()
            .get("cache-control")
            .map(|v| v.to_str().unwrap()),
        Some("no-store")
    );
}

async fn a_suspended_farm_shows_why_and_changes_nothing(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let tokens = app.connect(&farm.owner, "farm:read").await;
    let before = app.signed_in(&farm.owner).await;
    let token_before = before.csrf("/admin/farm").await;
    let reason = "the subscription ended on 30 November";
    app.admin(&["farm", "suspend", &farm.slug, "--reason", reason])
        .await;

    // The owner may still sign in, and every page says why.
    let owner = app.signed_in(&farm.owner).await;
    for path in [
        "/",
        "/admin",
        "/admin/members",
        "/admin/farm",
        "/account/apps",
    ] {
        let (status, html) = owner.page(path).await;
        assert_eq!(status, 200, "{path}");
        assert!(
            html.contains(&format!(
                "Your farm is suspended by the people who run Coop: {reason}."
            )),
            "{path}: {html}"
        );
    }
    // No administration: each action is a 403 page saying why.
    let token_now = owner.csrf("/admin/farm").await;
    let houses = "select count(*) from houses";
    for (path, form) in [
        ("/admin/houses", vec![("name", "North")]),
        ("/admin/connected-apps", vec![("enabled", "off")]),
    ] {
        let mut form = form.clone();
        form.push(("csrf", &token_now));
        let response = owner.submit(path, &form).await;
        assert_eq!(response.status(), 403, "{path}");
        let html = response.text().await.unwrap();
        assert!(html.contains(reason), "{path}: {html}");
    }
    assert_eq!(app.db_count(houses).await, 0);
    app.assert_count(
        "select count(*) from farms where connected_apps_enabled = false",
        0,
    )
    .await;
    let (_, html) = owner.page("/admin/members").await;
    let heading = html.find(&format!(">{}", farm.worker.email)).unwrap();
    let marker = "action=\"/admin/members/";
    let start = html[heading..].find(marker).unwrap() + heading + marker.len();
    let worker_id = html[start..start + 36].to_owned();
    let response = owner
        .submit(
            &format!("/admin/members/{worker_id}"),
            &[("csrf", &token_now), ("action", "disable")],
        )
        .await;
    assert_eq!(response.status(), 403);
    app.assert_count("select count(*) from users where disabled = true", 0)
        .await;
    app.assert_count(
        "select count(*) from audit_log where kind = 'admin_action'",
        0,
    )
    .await;
    // No access minted: no consent, no token, no MCP call.
    let path = app.authorize_path(&tokens.client_id, &Pkce::new(), "farm:read", &[]);
    let response = owner.open(&path).await;
    assert_eq!(response.status(), 403);
    assert!(location(&response).is_empty());
    app.assert_cut_off(&tokens).await;
    // A session opened before the suspension is refused the same way.
    let response = before
        .submit(
            "/admin/houses",
            &[("csrf", &token_before), ("name", "North")],
        )
        .await;
    assert_eq!(response.status(), 403);
    assert_eq!(app.db_count(houses).await, 0);

    // Resumed: the notice and the reason are gone, the actions work.
    app.admin(&["farm", "resume", &farm.slug]).await;
    app.assert_count(
        "select count(*) from farms where suspended_reason is not null",
        0,
    )
    .await;
    let (_, html) = owner.page("/admin").await;
    assert!(!html.contains("Your farm is suspended"), "{html}");
    let response = owner
        .submit("/admin/houses", &[("csrf", &token_now), ("name", "North")])
        .await;
    assert_eq!(response.status(), 303);
    let html = owner.open_consent(&path).await;
    assert!(html.contains("name=\"decision\""));

    // Without a reason the page says whom to ask; a bad reason is refused.
    app.admin(&["farm", "suspend", &farm.slug]).await;
    let (_, html) = owner.page("/").await;
    assert!(
        html.contains("Your farm is suspended by the people who run Coop. Ask them why."),
        "{html}"
    );
    for bad in ["", "two\nlines", &"x".repeat(301)] {
        let (code, _, err) = app
            .cli(&["admin", "farm", "suspend", &farm.slug, "--reason", bad])
            .await;
        assert_eq!(code, 1, "{bad:?}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("--reason"), "{err}");
    }
}
