//! `/admin`: every grant on the farm with Disconnect, and the farm's
//! connected-apps switch.

use crate::apps_support::{self, assert_cut_off, assert_page, assert_works, csrf, page, post};
use crate::helpers::{Engine, TestApp, location};
use crate::oauth_client::{self, Pkce, audit_count, authorize_path, db_count, sign_in_browser};
use crate::on_both_engines;

on_both_engines!(
    the_owner_sees_every_grant_of_the_farm_and_disconnects_one,
    disconnect_refusals_for_the_owner,
    the_connected_apps_switch_stops_and_restores_every_grant,
    the_switch_needs_its_csrf_token_and_a_state,
);

async fn the_owner_sees_every_grant_of_the_farm_and_disconnects_one(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = apps_support::farm(&app, "Hillside Farm").await;
    let other = apps_support::farm(&app, "Valley Farm").await;
    let worker_tokens =
        oauth_client::connect(&app, &farm.worker, "farm:read daily-entries:write").await;
    let mut owner_tokens = oauth_client::connect(&app, &farm.owner, "farm:read").await;
    oauth_client::connect(&app, &other.worker, "farm:read").await;

    let owner = sign_in_browser(&app, &farm.owner).await;
    let (status, html) = page(&owner, &app, "/admin").await;
    assert_eq!(status, 200);
    assert_eq!(html.matches("<article class=\"app\"").count(), 2, "{html}");
    assert!(html.contains(&farm.worker.email));
    assert!(html.contains("Record daily entries"));
    assert!(!html.contains(&other.worker.email));

    let grant = apps_support::grant_of(&app, &farm.worker.email).await;
    let path = format!("/admin/apps/{grant}/disconnect");
    let (status, confirm) = page(&owner, &app, &path).await;
    assert_eq!(status, 200);
    assert!(
        confirm.contains(&format!(
            "{} would have to approve it again",
            farm.worker.email
        )),
        "{confirm}"
    );
    let token = csrf(&owner, &app, &path).await;
    let response = post(&owner, &app, &path, &[("csrf", &token)]).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/admin?done=disconnected");

    assert_cut_off(&app, &worker_tokens).await;
    assert_works(&app, &mut owner_tokens).await;
    assert_eq!(
        db_count(
            &app,
            &format!(
                "select count(*) from audit_log where kind = 'disconnect' and grant_id is not null
                 and client_id = '{}' and detail like '%{}%'",
                worker_tokens.client_id, farm.owner.email
            )
        )
        .await,
        1
    );
}

async fn disconnect_refusals_for_the_owner(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = apps_support::farm(&app, "Hillside Farm").await;
    let other = apps_support::farm(&app, "Valley Farm").await;
    let mut foreign = oauth_client::connect(&app, &other.worker, "farm:read").await;
    let mut own = oauth_client::connect(&app, &farm.worker, "farm:read").await;
    let foreign_grant = apps_support::grant_of(&app, &other.worker.email).await;
    let own_grant = apps_support::grant_of(&app, &farm.worker.email).await;

    let owner = sign_in_browser(&app, &farm.owner).await;
    let token = csrf(&owner, &app, "/admin").await;
    // Another farm's grant, an unknown one, a malformed one: 404.
    for id in [
        foreign_grant.clone(),
        uuid::Uuid::now_v7().to_string(),
        "x".to_owned(),
    ] {
        let path = format!("/admin/apps/{id}/disconnect");
        let (status, _) = page(&owner, &app, &path).await;
        assert_eq!(status, 404, "{id}");
        let response = post(&owner, &app, &path, &[("csrf", &token)]).await;
        assert_page(response, 404, "Not found").await;
    }
    // Without the CSRF token.
    let path = format!("/admin/apps/{own_grant}/disconnect");
    let response = post(&owner, &app, &path, &[]).await;
    assert_page(response, 403, "Please try again").await;
    // Not an owner: the worker cannot use the admin route even for their own grant.
    let worker = sign_in_browser(&app, &farm.worker).await;
    let worker_token = csrf(&worker, &app, "/account/apps").await;
    let response = post(&worker, &app, &path, &[("csrf", &worker_token)]).await;
    assert_page(response, 403, "Only the farm").await;

    assert_works(&app, &mut foreign).await;
    assert_works(&app, &mut own).await;
    assert_eq!(audit_count(&app, "disconnect").await, 0);
}

async fn the_connected_apps_switch_stops_and_restores_every_grant(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = apps_support::farm(&app, "Hillside Farm").await;
    let other = apps_support::farm(&app, "Valley Farm").await;
    let mut worker_tokens = oauth_client::connect(&app, &farm.worker, "farm:read").await;
    let mut other_tokens = oauth_client::connect(&app, &other.worker, "farm:read").await;

    let owner = sign_in_browser(&app, &farm.owner).await;
    let (_, html) = page(&owner, &app, "/admin").await;
    assert!(
        html.contains("<span class=\"state on\">on</span>"),
        "{html}"
    );
    let token = csrf(&owner, &app, "/admin").await;
    let response = post(
        &owner,
        &app,
        "/admin/connected-apps",
        &[("csrf", &token), ("enabled", "off")],
    )
    .await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/admin?done=apps-off");
    let (_, html) = page(&owner, &app, "/admin").await;
    assert!(html.contains("<span class=\"state off\">off</span>"));

    assert_cut_off(&app, &worker_tokens).await;
    assert_works(&app, &mut other_tokens).await;
    // Consent is refused with a page while off.
    let browser = sign_in_browser(&app, &farm.worker).await;
    let path = authorize_path(
        &app,
        &worker_tokens.client_id,
        &Pkce::new(),
        "farm:read",
        &[],
    );
    let (status, html) = page(&browser, &app, &path).await;
    assert_eq!(status, 403);
    assert!(html.contains("Connected apps are turned off"), "{html}");
    // The person's own page says why their apps are stopped.
    let (_, html) = page(&browser, &app, "/account/apps").await;
    assert!(html.contains("turned connected apps off"), "{html}");

    let response = post(
        &owner,
        &app,
        "/admin/connected-apps",
        &[("csrf", &token), ("enabled", "on")],
    )
    .await;
    assert_eq!(location(&response), "/admin?done=apps-on");
    assert_works(&app, &mut worker_tokens).await;
    assert_eq!(
        db_count(&app, "select count(*) from audit_log where kind = 'admin_action' and detail like '%connected_apps_o%'").await,
        2
    );
}

async fn the_switch_needs_its_csrf_token_and_a_state(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = apps_support::farm(&app, "Hillside Farm").await;
    let mut tokens = oauth_client::connect(&app, &farm.worker, "farm:read").await;
    let owner = sign_in_browser(&app, &farm.owner).await;
    let response = post(&owner, &app, "/admin/connected-apps", &[("enabled", "off")]).await;
    assert_page(response, 403, "Please try again").await;
    let token = csrf(&owner, &app, "/admin").await;
    let response = post(
        &owner,
        &app,
        "/admin/connected-apps",
        &[("csrf", &token), ("enabled", "maybe")],
    )
    .await;
    assert_page(response, 400, "Choose on or off.").await;
    let response = post(
        &owner,
        &app,
        "/admin/connected-apps",
        &[("csrf", &token), ("csrf", &token), ("enabled", "off")],
    )
    .await;
    assert_page(response, 400, "The form field csrf is repeated.").await;
    assert_works(&app, &mut tokens).await;
    assert_eq!(audit_count(&app, "admin_action").await, 0);
}
