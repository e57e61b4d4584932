//! `/account/apps`: a person's connected apps, and disconnecting one.

use crate::helpers::{Engine, TestApp, assert_page};
use crate::on_both_engines;

on_both_engines!(
    connected_apps_lists_each_active_grant_in_plain_words,
    with_no_app_the_page_explains_connected_apps,
    disconnecting_asks_first_then_ends_the_grant_at_once,
    disconnect_refusals_leave_the_grant_working,
    the_start_page_shows_farm_role_and_apps_count,
    signed_out_people_are_sent_to_sign_in,
);

async fn connected_apps_lists_each_active_grant_in_plain_words(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let tokens = app.connect(&farm.worker, "farm:read").await;
    // Another member's app is not on this person's page.
    app.connect(&farm.owner, "farm:read daily-entries:write")
        .await;

    let browser = app.signed_in(&farm.worker).await;
    let (status, html) = browser.page("/account/apps").await;
    assert_eq!(status, 200);
    assert!(
        html.contains("<title>Connected apps · Coop</title>"),
        "{html}"
    );
    assert_eq!(html.matches("<article class=\"app\"").count(), 1, "{html}");
    assert!(html.contains("<bdi>Test Assistant</bdi> <span class=\"tag\">unverified</span>"));
    assert!(html.contains("Read the farm&#39;s records"), "{html}");
    assert!(!html.contains("Record daily entries"), "{html}");
    assert!(html.contains("Not used yet"));
    let grant = app.grant_of(&farm.worker.email).await;
    assert!(html.contains(&format!("/account/apps/{grant}/disconnect")));

    // Last use as the MCP layer records it (at most once a minute).
    app.db_execute(&format!(
        "update grants set last_used_at = 1796029200 where client_id = '{}'",
        tokens.client_id
    ))
    .await;
    let (_, html) = browser.page("/account/apps").await;
    assert!(html.contains("30 Nov 2026, 09:00 UTC"), "{html}");
    assert!(!html.contains("Not used yet"));
}

async fn with_no_app_the_page_explains_connected_apps(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let browser = app.signed_in(&farm.worker).await;
    let (status, html) = browser.page("/account/apps").await;
    assert_eq!(status, 200);
    assert!(html.contains("No apps are connected"), "{html}");
    assert!(html.contains("waits for your approval"));
}

async fn disconnecting_asks_first_then_ends_the_grant_at_once(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let mut tokens = app.connect(&farm.worker, "farm:read").await;
    let grant = app.grant_of(&farm.worker.email).await;
    let browser = app.signed_in(&farm.worker).await;

    // The confirmation step changes nothing.
    let confirm_path = format!("/account/apps/{grant}/disconnect");
    let (status, html) = browser.page(&confirm_path).await;
    assert_eq!(status, 200);
    assert!(
        html.contains("Disconnect <bdi>Test Assistant</bdi>?"),
        "{html}"
    );
    assert!(html.contains(&format!("action=\"{confirm_path}\"")));
    app.assert_works(&mut tokens).await;

    let token = browser.csrf(&confirm_path).await;
    let response = browser.submit(&confirm_path, &[("csrf", &token)]).await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        crate::helpers::location(&response),
        "/account/apps?done=disconnected"
    );
    app.assert_cut_off(&tokens).await;
    assert_eq!(
        app.db_count(&format!(
                "select count(*) from audit_log where kind = 'disconnect' and client_id = '{}' and grant_id is not null",
                tokens.client_id
            ))
        .await,
        1
    );
    let (_, html) = browser.page("/account/apps?done=disconnected").await;
    assert!(html.contains("The app is disconnected."));
    assert!(html.contains("No apps are connected"));
    // Disconnected is gone: the confirmation page and the POST are 404.
    let (status, _) = browser.page(&confirm_path).await;
    assert_eq!(status, 404);
    let again = browser.submit(&confirm_path, &[("csrf", &token)]).await;
    assert_page(again, 404, "Not found").await;
    assert_eq!(app.audit_count("disconnect").await, 1);
}

async fn disconnect_refusals_leave_the_grant_working(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let other = app.farm("Valley Farm").await;
    let mut tokens = app.connect(&farm.worker, "farm:read").await;
    let grant = app.grant_of(&farm.worker.email).await;
    let path = format!("/account/apps/{grant}/disconnect");

    // Without the CSRF token.
    let browser = app.signed_in(&farm.worker).await;
    let response = browser.submit(&path, &[]).await;
    assert_page(response, 403, "Please try again").await;
    // With the token, from another origin.
    let token = browser.csrf("/account/apps").await;
    let response = browser
        .post(app.url(&path))
        .header("origin", "https://evil.example")
        .form(&[("csrf", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_page(response, 403, "Please try again").await;

    // Another member of the same farm, and a member of another farm: 404.
    for someone in [&farm.owner, &other.owner] {
        let browser = app.signed_in(someone).await;
        let (status, html) = browser.page(&path).await;
        assert_eq!(status, 404, "{html}");
        let token = browser.csrf("/account/apps").await;
        let response = browser.submit(&path, &[("csrf", &token)]).await;
        assert_page(response, 404, "Not found").await;
    }
    // Unknown and malformed grant ids: 404.
    for bad in [uuid::Uuid::now_v7().to_string(), "not-a-grant".to_owned()] {
        let path = format!("/account/apps/{bad}/disconnect");
        let response = browser.submit(&path, &[("csrf", &token)]).await;
        assert_page(response, 404, "Not found").await;
    }
    app.assert_works(&mut tokens).await;
    assert_eq!(app.audit_count("disconnect").await, 0);
}

async fn the_start_page_shows_farm_role_and_apps_count(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    app.connect(&farm.worker, "farm:read").await;
    app.connect(&farm.worker, "farm:read").await;
    let browser = app.signed_in(&farm.worker).await;
    let (status, html) = browser.page("/").await;
    assert_eq!(status, 200);
    assert!(
        html.contains("<dt>Farm</dt><dd>Hillside Farm</dd>"),
        "{html}"
    );
    assert!(html.contains("<dt>Your role</dt><dd>worker</dd>"));
    assert!(html.contains("2 apps connected"));
    // A worker is not shown the way to farm administration.
    assert!(!html.contains("href=\"/admin\""));
}

async fn signed_out_people_are_sent_to_sign_in(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let response = app.get("/account/apps").await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        crate::helpers::location(&response),
        "/login?return_to=%2Faccount%2Fapps"
    );
}
