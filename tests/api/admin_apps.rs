//! `/admin`: every grant on the farm with Disconnect, and the farm's
//! connected-apps switch.

use crate::helpers::oauth::Pkce;
use crate::helpers::{Engine, TestApp, assert_page, location};
use crate::on_both_engines;

on_both_engines!(
    the_owner_sees_every_grant_of_the_farm_and_disconnects_one,
    disconnect_refusals_for_the_owner,
    the_connected_apps_switch_stops_and_restores_every_grant,
    the_switch_needs_its_csrf_token_and_a_state,
);

async fn the_owner_sees_every_grant_of_the_farm_and_disconnects_one(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let other = app.farm("Valley Farm").await;
    let worker_tokens = app
        .connect(&farm.worker, "farm:read daily-entries:write")
        .await;
    let mut owner_tokens = app.connect(&farm.owner, "farm:read").await;
    app.connect(&other.worker, "farm:read").await;

    let owner = app.signed_in(&farm.owner).await;
    let (status, html) = owner.page("/admin").await;
    assert_eq!(status, 200);
    assert_eq!(html.matches("<article class=\"app\"").count(), 2, "{html}");
    assert!(html.contains(&farm.worker.email));
    assert!(html.contains("Record daily entries"));
    assert!(!html.contains(&other.worker.email));

    let grant = app.grant_of(&farm.worker.email).await;
    let path = format!("/admin/apps/{grant}/disconnect");
    let (status, confirm) = owner.page(&path).await;
    assert_eq!(status, 200);
    assert!(
        confirm.contains(&format!(
            "{} would have to approve it again",
            farm.worker.email
        )),
        "{confirm}"
    );
    let token = owner.csrf(&path).await;
    let response = owner.submit(&path, &[("csrf", &token)]).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/admin?done=disconnected");

    app.assert_cut_off(&worker_tokens).await;
    app.assert_works(&mut owner_tokens).await;
    assert_eq!(
        app.db_count(&format!(
            "select count(*) from audit_log where kind = 'disconnect' and grant_id is not null
                 and client_id = '{}' and detail like '%{}%'",
            worker_tokens.client_id, farm.owner.email
        ))
        .await,
        1
    );
}

async fn disconnect_refusals_for_the_owner(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let other = app.farm("Valley Farm").await;
    let mut foreign = app.connect(&other.worker, "farm:read").await;
    let mut own = app.connect(&farm.worker, "farm:read").await;
    let foreign_grant = app.grant_of(&other.worker.email).await;
    let own_grant = app.grant_of(&farm.worker.email).await;

    let owner = app.signed_in(&farm.owner).await;
    let token = owner.csrf("/admin").await;
    // Another farm's grant, an unknown one, a malformed one: 404.
    for id in [
        foreign_grant.clone(),
        uuid::Uuid::now_v7().to_string(),
        "x".to_owned(),
    ] {
        let path = format!("/admin/apps/{id}/disconnect");
        let (status, _) = owner.page(&path).await;
        assert_eq!(status, 404, "{id}");
        let response = owner.submit(&path, &[("csrf", &token)]).await;
        assert_page(response, 404, "Not found").await;
    }
    // Without the CSRF token.
    let path = format!("/admin/apps/{own_grant}/disconnect");
    let response = owner.submit(&path, &[]).await;
    assert_page(response, 403, "Please try again").await;
    // Not an owner: the worker cannot use the admin route even for their own grant.
    let worker = app.signed_in(&farm.worker).await;
    let worker_token = worker.csrf("/account/apps").await;
    let response = worker.submit(&path, &[("csrf", &worker_token)]).await;
    assert_page(response, 403, "Only the farm").await;

    app.assert_works(&mut foreign).await;
    app.assert_works(&mut own).await;
    assert_eq!(app.audit_count("disconnect").await, 0);
}

async fn the_connected_apps_switch_stops_and_restores_every_grant(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let other = app.farm("Valley Farm").await;
    let mut worker_tokens = app.connect(&farm.worker, "farm:read").await;
    let mut other_tokens = app.connect(&other.worker, "farm:read").await;

    let owner = app.signed_in(&farm.owner).await;
    let (_, html) = owner.page("/admin").await;
    assert!(
        html.contains("<span class=\"state on\">on</span>"),
        "{html}"
    );
    let token = owner.csrf("/admin").await;
    let response = owner
        .submit(
            "/admin/connected-apps",
            &[("csrf", &token), ("enabled", "off")],
        )
        .await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/admin?done=apps-off");
    let (_, html) = owner.page("/admin").await;
    assert!(html.contains("<span class=\"state off\">off</span>"));

    app.assert_cut_off(&worker_tokens).await;
    app.assert_works(&mut other_tokens).await;
    // Consent is refused with a page while off.
    let browser = app.signed_in(&farm.worker).await;
    let path = app.authorize_path(&worker_tokens.client_id, &Pkce::new(), "farm:read", &[]);
    let (status, html) = browser.page(&path).await;
    assert_eq!(status, 403);
    assert!(html.contains("Connected apps are turned off"), "{html}");
    // The person's own page says why their apps are stopped.
    let (_, html) = browser.page("/account/apps").await;
    assert!(html.contains("turned connected apps off"), "{html}");

    let response = owner
        .submit(
            "/admin/connected-apps",
            &[("csrf", &token), ("enabled", "on")],
        )
        .await;
    assert_eq!(location(&response), "/admin?done=apps-on");
    app.assert_works(&mut worker_tokens).await;
    assert_eq!(
        app.db_count("select count(*) from audit_log where kind = 'admin_action' and detail like '%connected_apps_o%'").await,
        2
    );
}

async fn the_switch_needs_its_csrf_token_and_a_state(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let mut tokens = app.connect(&farm.worker, "farm:read").await;
    let owner = app.signed_in(&farm.owner).await;
    let response = owner
        .submit("/admin/connected-apps", &[("enabled", "off")])
        .await;
    assert_page(response, 403, "Please try again").await;
    let token = owner.csrf("/admin").await;
    let response = owner
        .submit(
            "/admin/connected-apps",
            &[("csrf", &token), ("enabled", "maybe")],
        )
        .await;
    assert_page(response, 400, "Choose on or off.").await;
    let response = owner
        .submit(
            "/admin/connected-apps",
            &[("csrf", &token), ("csrf", &token), ("enabled", "off")],
        )
        .await;
    assert_page(response, 400, "The form field csrf is repeated.").await;
    app.assert_works(&mut tokens).await;
    assert_eq!(app.audit_count("admin_action").await, 0);
}
