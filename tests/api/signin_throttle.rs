//! Sign-in throttling that stops guessers, never the right person
//! (issue 11, threat 15): only failures count, one budget over replicas,
//! per network, and a browser that signed in before (its device cookie) is
//! judged by its own failures, so a stranger cannot lock the owner out.

use std::net::IpAddr;
use std::sync::Arc;

use coop::config::{Issuer, SignInLimits};

use crate::helpers::{
    Browser, Engine, TestApp, TestUser, cookie_jar_builder, form_value, location, retry_after,
    set_cookie, set_cookie_header,
};
use crate::on_both_engines;

on_both_engines!(
    eight_sign_ins_of_one_person_in_a_minute_all_succeed,
    only_failures_count_and_a_success_clears_the_accounts,
    a_throttled_attempt_checks_no_password,
    a_right_password_on_a_disabled_account_is_a_failure,
    wrong_guesses_are_one_budget_across_two_replicas,
    a_browser_with_a_device_cookie_signs_in_while_a_stranger_is_locked_out,
    a_device_is_judged_by_its_own_failures,
    a_device_cookie_counts_only_as_issued_and_only_for_its_account,
    a_network_is_throttled_across_accounts_and_another_network_is_not,
    a_step_up_password_is_throttled_like_a_sign_in,
    operators_tune_the_budgets,
);

/// A browser of its own (cookies on, redirects off), from `address`.
fn browser_from(address: &str) -> reqwest::Client {
    cookie_jar_builder()
        .local_address(address.parse::<IpAddr>().unwrap())
        .build()
        .unwrap()
}

fn fresh_browser() -> reqwest::Client {
    browser_from("127.0.0.1")
}

/// Signs in with `browser` (no `return_to`).
async fn sign_in(
    app: &TestApp,
    browser: &reqwest::Client,
    email: &str,
    password: &str,
) -> reqwest::Response {
    Browser::with_client(app, browser.clone())
        .sign_in_returning(email, password, None)
        .await
}

/// The status of a sign-in by `browser`.
async fn status(app: &TestApp, browser: &reqwest::Client, email: &str, password: &str) -> u16 {
    sign_in(app, browser, email, password)
        .await
        .status()
        .as_u16()
}

/// Asserts a throttled sign-in: 429, `Retry-After`, and the page saying how
/// long to wait, with the form to try again.
/// Asserts that `user`'s right password is throttled now, then returns the
/// status it gets a minute later.
async fn throttled_then_a_minute_later(app: &TestApp, user: &TestUser) -> u16 {
    assert_throttled(sign_in(app, &fresh_browser(), &user.email, &user.password).await).await;
    // The budget refills: a minute later, one more try.
    app.clock.advance(time::Duration::seconds(60));
    status(app, &fresh_browser(), &user.email, &user.password).await
}

async fn assert_throttled(response: reqwest::Response) {
    assert_eq!(response.status(), 429);
    let retry_after = retry_after(&response);
    assert!((1..=300).contains(&retry_after), "{retry_after}");
    let body = response.text().await.unwrap();
    assert!(
        body.contains(&format!(
            "Too many failed sign-ins. Try again in {retry_after} seconds."
        )),
        "{body}"
    );
    // And who can help a person who has forgotten their password.
    assert!(
        body.contains("owner can give you a link to choose a new one."),
        "{body}"
    );
    assert!(
        form_value(&body, "csrf").is_some(),
        "the form is shown again"
    );
}

/// A person with a browser that signed in once (and so carries a device
/// cookie), signed out again.
async fn owner_with_device(app: &TestApp, user: &TestUser) -> reqwest::Client {
    let browser = Browser::with_client(app, fresh_browser());
    assert_eq!(
        status(app, &browser, &user.email, &user.password).await,
        303
    );
    assert_eq!(browser.sign_out().await.status(), 303);
    assert_eq!(browser.open("/").await.status(), 303, "signed out");
    browser.client
}

/// `count` wrong passwords for `user`, each from a fresh browser, each
/// refused as a wrong password.
async fn wrong_guesses(app: &TestApp, user: &TestUser, count: usize) {
    for _ in 0..count {
        assert_eq!(
            status(app, &fresh_browser(), &user.email, "a wrong guess").await,
            401
        );
    }
}

/// Signs in from a browser that presents `device` as its device cookie
/// (and a form cookie of its own).
async fn presenting(app: &TestApp, device: &str, email: &str, password: &str) -> reqwest::Response {
    let client = crate::helpers::no_cookies();
    let login = client.get(app.url("/login")).send().await.unwrap();
    let form_cookie = set_cookie(&login, "coop_form").unwrap();
    let csrf = form_value(&login.text().await.unwrap(), "csrf").unwrap();
    client
        .post(app.url("/login"))
        .header("cookie", format!("{form_cookie}; coop_device={device}"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("email", email),
            ("password", password),
        ])
        .send()
        .await
        .unwrap()
}

async fn eight_sign_ins_of_one_person_in_a_minute_all_succeed(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    // Eight assistants connected in a row, each opening a fresh browser.
    for n in 0..8 {
        let browser = fresh_browser();
        let response = sign_in(&app, &browser, &user.email, &user.password).await;
        assert_eq!(response.status(), 303, "sign-in {n}");
        assert_eq!(location(&response), "/");
    }
    // And one browser signing in again and again.
    let browser = fresh_browser();
    for n in 0..8 {
        assert_eq!(
            status(&app, &browser, &user.email, &user.password).await,
            303,
            "again {n}"
        );
    }
}

async fn only_failures_count_and_a_success_clears_the_accounts(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "worker").await;
    // Typos, then the right password: the typos are forgotten.
    for _ in 0..2 {
        wrong_guesses(&app, &user, 4).await;
        assert_eq!(
            status(&app, &fresh_browser(), &user.email, &user.password).await,
            303
        );
    }
    // Five failures in a row: even the right password is refused, before
    // it is checked.
    wrong_guesses(&app, &user, 5).await;
    assert_eq!(throttled_then_a_minute_later(&app, &user).await, 303);
}

/// The throttle is passed before any password is hashed: with the stored
/// hash made unusable, a checked password is a 500, a throttled one a 429.
async fn a_throttled_attempt_checks_no_password(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    wrong_guesses(&app, &user, 5).await;
    app.db_execute("update users set password_hash = 'not a hash'")
        .await;
    // (500: what a check of that hash answers, once the budget refills.)
    assert_eq!(throttled_then_a_minute_later(&app, &user).await, 500);
}

async fn a_right_password_on_a_disabled_account_is_a_failure(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "worker").await;
    app.admin(&["user", "disable", &user.email]).await;
    // Four wrong guesses, then the right password: refused as a wrong one,
    // it gives nothing back and clears nothing.
    wrong_guesses(&app, &user, 4).await;
    assert_eq!(
        status(&app, &fresh_browser(), &user.email, &user.password).await,
        401
    );
    assert_throttled(sign_in(&app, &fresh_browser(), &user.email, &user.password).await).await;
    // Enabled again, the guesses still count until the budget refills.
    app.admin(&["user", "enable", &user.email]).await;
    assert_eq!(throttled_then_a_minute_later(&app, &user).await, 303);
}

async fn wrong_guesses_are_one_budget_across_two_replicas(engine: Engine) {
    let a = TestApp::spawn(engine).await;
    let issuer = Issuer::parse(&a.issuer).unwrap();
    let b = TestApp::spawn_on(Arc::clone(&a.db), |config| config.issuer = Some(issuer)).await;
    let user = a.farm_with_member("viewer").await;
    for (replica, guesses) in [(&a, 3), (&b, 2)] {
        for _ in 0..guesses {
            assert_eq!(
                status(replica, &fresh_browser(), &user.email, "a wrong guess").await,
                401
            );
        }
    }
    // Five over both: the sixth is refused on either, not ten.
    for replica in [&a, &b] {
        assert_throttled(sign_in(replica, &fresh_browser(), &user.email, "another guess").await)
            .await;
    }
}

async fn a_browser_with_a_device_cookie_signs_in_while_a_stranger_is_locked_out(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    let owner = owner_with_device(&app, &user).await;

    // A stranger guesses from the same network until locked out of the
    // account, then sprays the network's whole budget over other accounts.
    let stranger = fresh_browser();
    for _ in 0..5 {
        assert_eq!(status(&app, &stranger, &user.email, "a guess").await, 401);
    }
    assert_throttled(sign_in(&app, &stranger, &user.email, &user.password).await).await;
    for n in 0..15 {
        let email = format!("nobody{n}@hillside.example");
        assert_eq!(status(&app, &stranger, &email, "a guess").await, 401);
    }
    assert_throttled(sign_in(&app, &stranger, "fresh@hillside.example", "a guess").await).await;
    // A fresh browser of the owner's is locked out with the stranger...
    assert_throttled(sign_in(&app, &fresh_browser(), &user.email, &user.password).await).await;

    // ...but the browser the owner signed in on before is judged by its own
    // failures: a typo is a typo, and the right password signs in.
    assert_eq!(status(&app, &owner, &user.email, "a typo").await, 401);
    let response = sign_in(&app, &owner, &user.email, &user.password).await;
    assert_eq!(response.status(), 303);
    assert_eq!(owner.get(app.url("/")).send().await.unwrap().status(), 200);
    // The owner's success handed the stranger nothing back: the account is
    // still locked for strangers, from this network or any other.
    assert_throttled(sign_in(&app, &stranger, &user.email, &user.password).await).await;
    let elsewhere = browser_from("127.0.0.3");
    assert_throttled(sign_in(&app, &elsewhere, &user.email, "a guess").await).await;
}

async fn a_device_is_judged_by_its_own_failures(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    let owner = owner_with_device(&app, &user).await;
    // The device's own ten, not the account's five.
    for _ in 0..10 {
        assert_eq!(status(&app, &owner, &user.email, "a typo").await, 401);
    }
    assert_throttled(sign_in(&app, &owner, &user.email, &user.password).await).await;
    // Its failures are its own: the account's budget is untouched.
    assert_eq!(
        status(&app, &fresh_browser(), &user.email, &user.password).await,
        303
    );
}

async fn a_device_cookie_counts_only_as_issued_and_only_for_its_account(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    let bob = TestUser {
        email: "bob@hillside.example".into(),
        ..user.clone()
    };
    app.add_user(&user.farm, &bob.email, "viewer", &bob.password)
        .await;
    // Ann's device cookie, taken out of her browser.
    let browser = fresh_browser();
    let response = sign_in(&app, &browser, &user.email, &user.password).await;
    let cookie = set_cookie_header(&response, "coop_device").expect("a device cookie at sign-in");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(cookie.contains("Max-Age="), "{cookie}");
    let value = cookie
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("coop_device=")
        .to_owned();

    // Both accounts locked out for strangers.
    for email in [&user.email, &bob.email] {
        for _ in 0..5 {
            assert_eq!(status(&app, &fresh_browser(), email, "a guess").await, 401);
        }
    }
    // For Bob, Ann's cookie is no device: he stays locked out.
    assert_throttled(presenting(&app, &value, &bob.email, &bob.password).await).await;
    // Altered, it is no device for Ann either.
    // (The id's first character: the tag no longer matches.)
    let altered = {
        let (version, rest) = value.split_at(2);
        let first = if rest.starts_with('A') { 'B' } else { 'A' };
        format!("{version}{first}{}", &rest[1..])
    };
    assert_throttled(presenting(&app, &altered, &user.email, &user.password).await).await;
    // As issued, for Ann, it is her device.
    let response = presenting(&app, &value, &user.email, &user.password).await;
    assert_eq!(response.status(), 303);
    // Past its lifetime it is no device.
    app.clock.advance(time::Duration::days(181));
    for email in [&user.email, &bob.email] {
        for _ in 0..5 {
            assert_eq!(status(&app, &fresh_browser(), email, "a guess").await, 401);
        }
    }
    assert_throttled(presenting(&app, &value, &user.email, &user.password).await).await;
}

async fn a_network_is_throttled_across_accounts_and_another_network_is_not(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let sprayer = browser_from("127.0.0.1");
    for n in 0..20 {
        let email = format!("guess{n}@hillside.example");
        assert_eq!(status(&app, &sprayer, &email, "a guess").await, 401);
    }
    // The network's budget is spent, whatever the account.
    assert_throttled(sign_in(&app, &sprayer, "one-more@hillside.example", "a guess").await).await;
    assert_throttled(sign_in(&app, &fresh_browser(), &user.email, &user.password).await).await;
    // Another network is not held back.
    let elsewhere = browser_from("127.0.0.2");
    assert_eq!(
        status(&app, &elsewhere, "one-more@hillside.example", "a guess").await,
        401
    );
    assert_eq!(
        status(&app, &elsewhere, &user.email, &user.password).await,
        303
    );
}

async fn a_step_up_password_is_throttled_like_a_sign_in(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    let browser = fresh_browser();
    assert_eq!(
        status(&app, &browser, &user.email, &user.password).await,
        303
    );
    let change = |current: &'static str| {
        let browser = browser.clone();
        let app = &app;
        async move {
            let page = browser
                .get(app.url("/account/password"))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            let csrf = form_value(&page, "csrf").unwrap();
            browser
                .post(app.url("/account/password"))
                .form(&[
                    ("csrf", csrf.as_str()),
                    ("current_password", current),
                    ("new_password", "short"),
                    ("confirm_password", "short"),
                ])
                .send()
                .await
                .unwrap()
        }
    };
    // The device's budget (this browser signed in): ten wrong current
    // passwords, then even the right one waits.
    for _ in 0..10 {
        assert_eq!(change("not my password").await.status(), 400);
    }
    let throttled = change("correct horse battery staple").await;
    assert_eq!(throttled.status(), 429);
    assert!(throttled.headers().contains_key("retry-after"));
    let body = throttled.text().await.unwrap();
    assert!(
        body.contains("Too many failed password attempts. Try again in"),
        "{body}"
    );
}

async fn operators_tune_the_budgets(engine: Engine) {
    let app = TestApp::spawn_with(engine, |config| {
        config.signin = SignInLimits {
            account_failures: 2,
            address_failures: 3,
            device_failures: 1,
            window: std::time::Duration::from_secs(60),
        };
    })
    .await;
    let user = app.farm_with_member("owner").await;
    for _ in 0..2 {
        assert_eq!(
            status(&app, &fresh_browser(), &user.email, "a guess").await,
            401
        );
    }
    let throttled = sign_in(&app, &fresh_browser(), &user.email, &user.password).await;
    assert_eq!(throttled.status(), 429);
    // Two failures per minute: one back every 30 s.
    assert_eq!(throttled.headers()["retry-after"], "30");
    assert_eq!(
        status(&app, &fresh_browser(), "other@hillside.example", "a guess").await,
        401
    );
    assert_throttled(sign_in(&app, &fresh_browser(), "third@hillside.example", "a guess").await)
        .await;
}
