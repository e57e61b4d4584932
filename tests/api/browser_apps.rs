//! In a real browser (headless Chromium): consent with one scope unticked,
//! the app in connected apps, disconnect; and an owner disconnecting a
//! member's app and flipping the connected-apps switch. Screenshots of each
//! page at phone and desktop widths go to `<target>/screenshots/`.

use crate::helpers::chromium::Chromium;
use crate::helpers::oauth::{self, Pkce, REDIRECT_URI};
use crate::helpers::{Engine, TestApp, TestUser};
use crate::on_both_engines;

on_both_engines!(
    a_person_connects_read_only_then_disconnects,
    an_owner_disconnects_a_members_app_and_flips_the_switch,
);

async fn sign_in(browser: &Chromium, app: &TestApp, user: &TestUser) {
    browser.fill("#email", &user.email).await;
    browser.fill("#password", &user.password).await;
    browser
        .click("form[action='/login'] button[type=submit]")
        .await;
    browser.wait_to_leave("/login").await;
    let _ = app;
}

async fn a_person_connects_read_only_then_disconnects(engine: Engine) {
    let Some(browser) = Chromium::start().await else {
        return;
    };
    let shots = engine == Engine::Sqlite;
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let client_id = app.register_public_client().await;
    let pkce = Pkce::new();
    let path = app.authorize_path(&client_id, &pkce, "farm:read daily-entries:write", &[]);

    // Signed out: the authorization request goes through sign-in and back.
    browser.goto(&app.url(&path)).await;
    assert!(browser.path().await.starts_with("/login?return_to="));
    sign_in(&browser, &app, &farm.worker).await;
    let consent = browser.source().await;
    assert!(
        consent.contains("Connect <strong><bdi>Test Assistant</bdi></strong>"),
        "{consent}"
    );
    if shots {
        browser.screenshots("consent").await;
    }
    browser
        .click("input[name=scope][value='daily-entries:write']")
        .await;
    browser.click("button[name=decision][value=approve]").await;
    browser.wait_to_leave("/authorize").await;

    // Chromium followed the redirect to the client (nothing listens there).
    let url = browser.client.current_url().await.unwrap();
    assert!(url.as_str().starts_with(REDIRECT_URI), "{url}");
    let code = url
        .query_pairs()
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.into_owned())
        .expect("a code");
    let response = app.exchange_code(&client_id, &code, &pkce.verifier).await;
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["scope"], "farm:read");
    let tokens = oauth::Tokens {
        access_token: body["access_token"].as_str().unwrap().to_owned(),
        refresh_token: body["refresh_token"].as_str().unwrap().to_owned(),
        client_id: client_id.clone(),
        expires_in: body["expires_in"].as_i64().unwrap(),
    };

    browser.goto(&app.url("/account/apps")).await;
    let html = browser.source().await;
    assert!(html.contains("Test Assistant"), "{html}");
    assert!(html.contains("Read the farm's records"));
    assert!(!html.contains("Record daily entries"));
    if shots {
        browser.screenshots("connected-apps").await;
    }
    browser.click("a.button.danger").await;
    browser
        .wait_for("to confirm", |path| path.ends_with("/disconnect"))
        .await;
    if shots {
        browser.screenshots("disconnect-confirm").await;
    }
    browser.click("form button.danger").await;
    browser.wait_at("/account/apps?done=disconnected").await;
    let html = browser.source().await;
    assert!(html.contains("The app is disconnected."), "{html}");
    assert!(html.contains("No apps are connected"));
    if shots {
        browser.screenshots("connected-apps-empty").await;
    }
    app.assert_cut_off(&tokens).await;

    browser.goto(&app.url("/")).await;
    if shots {
        browser.screenshots("home").await;
    }
    browser.close().await;
}

async fn an_owner_disconnects_a_members_app_and_flips_the_switch(engine: Engine) {
    let Some(browser) = Chromium::start().await else {
        return;
    };
    let shots = engine == Engine::Sqlite;
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let worker_tokens = app
        .connect(&farm.worker, "farm:read daily-entries:write")
        .await;
    let mut owner_tokens = app.connect(&farm.owner, "farm:read").await;
    app.add_flocks(&farm, &["Flock A"]).await;

    browser.goto(&app.url("/login")).await;
    sign_in(&browser, &app, &farm.owner).await;
    browser.wait_at("/").await;
    browser.click("a[href='/admin']").await;
    let html = browser.source().await;
    assert!(html.contains(&farm.worker.email), "{html}");
    if shots {
        browser.screenshots("admin-apps").await;
    }
    let grant = app.grant_of(&farm.worker.email).await;
    browser
        .click(&format!("a[href='/admin/apps/{grant}/disconnect']"))
        .await;
    browser.click("form button.danger").await;
    browser.wait_at("/admin?done=disconnected").await;
    app.assert_cut_off(&worker_tokens).await;
    app.assert_works(&mut owner_tokens).await;

    browser
        .click("form[action='/admin/connected-apps'] button")
        .await;
    browser.wait_at("/admin?done=apps-off").await;
    assert!(
        browser
            .source()
            .await
            .contains("<span class=\"state off\">off</span>")
    );
    if shots {
        browser.screenshots("admin-apps-off").await;
    }
    app.assert_cut_off(&owner_tokens).await;
    browser
        .click("form[action='/admin/connected-apps'] button")
        .await;
    browser.wait_at("/admin?done=apps-on").await;
    app.assert_works(&mut owner_tokens).await;

    for (path, name) in [
        ("/admin/members", "admin-members"),
        ("/admin/farm", "admin-farm"),
        ("/admin/audit", "admin-audit"),
    ] {
        browser.goto(&app.url(path)).await;
        assert!(
            browser.source().await.contains("Farm administration"),
            "{path}"
        );
        if shots {
            browser.screenshots(name).await;
        }
    }
    browser.close().await;
}
