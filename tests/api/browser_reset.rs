//! In a real browser (headless Chromium): the owner presses "Reset
//! password" under a member and copies the link shown; the member opens it,
//! chooses a new password and signs in with it. Screenshots of the link and
//! the reset page go to `<target>/screenshots/`.

use crate::helpers::chromium::Chromium;
use crate::helpers::{Engine, TestApp, TestUser};
use crate::on_both_engines;

on_both_engines!(an_owner_hands_a_member_a_link_and_the_member_chooses_a_password);

async fn sign_in(browser: &Chromium, email: &str, password: &str) {
    browser.fill("#email", email).await;
    browser.fill("#password", password).await;
    browser
        .click("form[action='/login'] button[type=submit]")
        .await;
    browser.wait_to_leave("/login").await;
}

/// The action of `member`'s "Reset password" form in the page `html`.
fn reset_action(html: &str, member: &TestUser) -> String {
    let heading = html.find(&format!(">{}", member.email)).unwrap();
    let marker = "action=\"/admin/members/";
    let start = html[heading..].find(marker).unwrap() + heading + "action=\"".len();
    let id = &html[start + "/admin/members/".len()..][..36];
    format!("/admin/members/{id}/password-reset")
}

async fn an_owner_hands_a_member_a_link_and_the_member_chooses_a_password(engine: Engine) {
    let Some(browser) = Chromium::start().await else {
        return;
    };
    let shots = engine == Engine::Sqlite;
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let tokens = app.connect(&farm.worker, "farm:read").await;

    browser.goto(&app.url("/login")).await;
    sign_in(&browser, &farm.owner.email, &farm.owner.password).await;
    browser.goto(&app.url("/admin/members")).await;
    let action = reset_action(&browser.source().await, &farm.worker);
    browser
        .click(&format!("form[action='{action}'] button"))
        .await;
    browser.wait_for("the link", |path| path == action).await;
    let html = browser.source().await;
    let start = html.find("<code id=\"reset-link\">").expect("the link") + 22;
    let link = html[start..][..html[start..].find("</code>").unwrap()].to_owned();
    assert!(
        link.starts_with(&format!("{}/password-reset?token=", app.issuer)),
        "{link}"
    );
    if shots {
        browser.screenshots("admin-reset-link").await;
    }

    // The member, in their own browser session (the owner signs out).
    browser.click("form[action='/logout'] button").await;
    browser.wait_at("/login").await;
    browser.goto(&link).await;
    let html = browser.source().await;
    assert!(html.contains(&farm.worker.email), "{html}");
    assert!(html.contains("signs you out everywhere"), "{html}");
    if shots {
        browser.screenshots("password-reset").await;
    }
    let chosen = "chosen in the browser";
    browser.fill("#new_password", chosen).await;
    browser.fill("#confirm_password", chosen).await;
    browser
        .click("form[action='/password-reset'] button[type=submit]")
        .await;
    browser.wait_at("/password-reset").await;
    assert!(
        browser.source().await.contains("Your password is changed"),
        "{}",
        browser.source().await
    );
    app.assert_cut_off(&tokens).await;

    browser.click("a[href='/login']").await;
    browser.wait_at("/login").await;
    sign_in(&browser, &farm.worker.email, chosen).await;
    browser.wait_at("/").await;
    browser.close().await;
}
