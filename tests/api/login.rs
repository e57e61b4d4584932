//! Sign-in, sign-out and password change, and every refusal they make.

use crate::helpers::{
    Browser, Engine, TestApp, assert_page, form_value, location, retry_after, set_cookie,
};
use crate::on_both_engines;

on_both_engines!(
    a_member_signs_in_and_sees_their_farm,
    a_wrong_password_and_an_unknown_email_get_the_same_refusal,
    sign_in_is_throttled_per_account,
    a_disabled_account_answers_exactly_like_a_wrong_password,
    a_disabled_accounts_open_pages_check_no_password,
    a_user_who_must_change_password_can_do_nothing_else,
    moving_the_epoch_kills_every_session,
    a_login_without_its_csrf_token_is_refused,
    a_post_from_another_origin_is_refused,
    a_foreign_return_url_is_replaced_by_the_start_page,
    the_session_id_changes_at_sign_in,
    changing_the_password_keeps_this_session_and_ends_the_others,
    signing_out_needs_the_csrf_token,
);

fn session_cookie(response: &reqwest::Response) -> Option<String> {
    set_cookie(response, "coop_session")
}

async fn a_member_signs_in_and_sees_their_farm(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;

    let response = app.sign_in(&user.email, &user.password).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/");

    let home = app.get("/").await;
    assert_eq!(home.status(), 200);
    let body = home.text().await.unwrap();
    assert!(body.contains("Signed in as <strong>manager@hillside.example</strong> on farm <strong>Hillside Farm</strong>"), "{body}");
}

async fn a_wrong_password_and_an_unknown_email_get_the_same_refusal(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;

    let wrong = app.sign_in(&user.email, "not the password at all").await;
    assert_eq!(wrong.status(), 401);
    let wrong_body = wrong.text().await.unwrap();
    assert!(wrong_body.contains(REFUSED), "{wrong_body}");

    let unknown = app
        .sign_in("nobody@hillside.example", "not the password at all")
        .await;
    assert_page(unknown, 401, REFUSED).await;

    // Still signed out.
    assert_eq!(app.get("/").await.status(), 303);
}

async fn sign_in_is_throttled_per_account(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "worker").await;
    for _ in 0..5 {
        assert_eq!(
            app.sign_in(&user.email, "wrong password guess")
                .await
                .status(),
            401
        );
    }
    // Even the right password is refused while throttled.
    let throttled = app.sign_in(&user.email, &user.password).await;
    assert_eq!(throttled.status(), 429);
    let retry_after = retry_after(&throttled);
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    let body = throttled.text().await.unwrap();
    assert!(
        body.contains(&format!("Try again in {retry_after} seconds")),
        "{body}"
    );
}

/// What every checked sign-in that fails says: a wrong password, an
/// unknown email and a disabled account alike, and who can help.
const REFUSED: &str = "That email and password do not match, or the account is disabled. \
     If you cannot sign in, your farm&#39;s owner can help.";

/// A refused sign-in as it went over the wire: the status, every header
/// but the two that differ per request (`date`, `x-request-id`), and the
/// page with its one per-request value, the form's CSRF token, replaced.
async fn answer_as_sent(response: reqwest::Response) -> (u16, Vec<(String, String)>, String) {
    let status = response.status().as_u16();
    let mut headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "date" | "x-request-id"))
        .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()))
        .collect();
    headers.sort();
    let body = response.text().await.unwrap();
    let csrf = form_value(&body, "csrf").expect("the form again, with its token");
    (status, headers, body.replace(&csrf, "CSRF-TOKEN"))
}

async fn a_disabled_account_answers_exactly_like_a_wrong_password(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "worker").await;
    let attempt = |password: String| {
        let app = &app;
        let email = user.email.clone();
        async move { answer_as_sent(Browser::new(app).sign_in(&email, &password).await).await }
    };
    let wrong = attempt("not the password at all".into()).await;
    assert_eq!(wrong.0, 401);
    assert!(wrong.2.contains(REFUSED), "{}", wrong.2);

    app.admin(&["user", "disable", &user.email]).await;
    // Whichever password is tried, byte for byte the wrong password's page.
    assert_eq!(
        attempt(user.password.clone()).await,
        wrong,
        "the right password"
    );
    assert_eq!(
        attempt("another wrong one".into()).await,
        wrong,
        "a wrong one"
    );
    // The tried password was checked as any other: with the stored hash
    // unusable, a disabled account's attempt fails at the check (500), as
    // an enabled account's does.
    let hash: String = app
        .db_text(&format!(
            "select password_hash from users where email = '{}'",
            user.email
        ))
        .await;
    app.db_execute("update users set password_hash = 'not a hash'")
        .await;
    assert_eq!(
        Browser::new(&app)
            .sign_in(&user.email, &user.password)
            .await
            .status(),
        500
    );
    app.db_execute(&format!("update users set password_hash = '{hash}'"))
        .await;

    // Enabled again, the password is the person's (four failures, with
    // the one that met the broken hash, are within the account's budget).
    app.admin(&["user", "enable", &user.email]).await;
    assert_eq!(app.sign_in(&user.email, &user.password).await.status(), 303);
    assert_eq!(app.get("/").await.status(), 200);
}

async fn a_disabled_accounts_open_pages_check_no_password(engine: Engine) {
    // The step-up pages (a password before consent, a password change)
    // check a signed-in person's password; once the account is disabled,
    // its sessions are dead before any password is read, so a right and a
    // wrong password get the same answer there too.
    let (app, user) = TestApp::with_member(engine, "worker").await;
    let browser = app.signed_in(&user).await;
    let csrf = browser.csrf("/account/password").await;
    app.admin(&["user", "disable", &user.email]).await;
    let mut answers = Vec::new();
    for current in [user.password.as_str(), "not the password at all"] {
        let change = browser
            .submit(
                "/account/password",
                &[
                    ("csrf", csrf.as_str()),
                    ("current_password", current),
                    ("new_password", "a brand new long password"),
                    ("confirm_password", "a brand new long password"),
                ],
            )
            .await;
        let confirm = browser
            .submit(
                "/authorize/confirm",
                &[
                    ("csrf", csrf.as_str()),
                    ("request", "any"),
                    ("password", current),
                ],
            )
            .await;
        answers.push((
            change.status(),
            location(&change),
            confirm.status(),
            confirm.text().await.unwrap(),
        ));
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(
        (answers[0].0.as_u16(), answers[0].1.as_str()),
        (303, "/login")
    );
    assert_eq!(answers[0].2, 400);
    // The password was not changed.
    app.admin(&["user", "enable", &user.email]).await;
    assert_eq!(app.sign_in(&user.email, &user.password).await.status(), 303);
}

async fn a_user_who_must_change_password_can_do_nothing_else(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "viewer").await;
    app.admin(&["user", "require-password-change", &user.email])
        .await;

    let response = app.sign_in(&user.email, &user.password).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/account/password");
    let home = app.get("/").await;
    assert_eq!(home.status(), 303);
    assert_eq!(location(&home), "/account/password");

    let page = app.get("/account/password").await.text().await.unwrap();
    assert!(page.contains("You must choose a new password"));
    let csrf = form_value(&page, "csrf").unwrap();
    let changed = app
        .browser
        .post(app.url("/account/password"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("current_password", user.password.as_str()),
            ("new_password", "a brand new long password"),
            ("confirm_password", "a brand new long password"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), 303);
    assert_eq!(app.get("/").await.status(), 200);
}

async fn moving_the_epoch_kills_every_session(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    assert_eq!(app.sign_in(&user.email, &user.password).await.status(), 303);
    assert_eq!(app.get("/").await.status(), 200);

    app.admin(&["user", "sign-out-everywhere", &user.email])
        .await;

    let home = app.get("/").await;
    assert_eq!(home.status(), 303);
    assert!(location(&home).starts_with("/login"));
}

/// POSTs the sign-in `form` from the app's browser, with `origin` when
/// given (else none); the status.
async fn post_login(app: &TestApp, origin: Option<&str>, form: &[(&str, &str)]) -> u16 {
    let mut request = app.browser.post(app.url("/login")).form(form);
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    request.send().await.unwrap().status().as_u16()
}

async fn a_login_without_its_csrf_token_is_refused(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    let _ = app.browser.login_csrf().await;
    for csrf in ["", "forged-token"] {
        let status = post_login(&app, None, &user.login_form(csrf)).await;
        assert_eq!(status, 403, "csrf {csrf:?}");
    }
    assert_eq!(app.get("/").await.status(), 303);
}

async fn a_post_from_another_origin_is_refused(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    let csrf = app.browser.login_csrf().await;
    let form = user.login_form(&csrf);
    let status = post_login(&app, Some("https://evil.example"), &form).await;
    assert_eq!(status, 403);
    // The same form from our own origin works.
    assert_eq!(post_login(&app, Some(&app.issuer), &form).await, 303);
}

async fn a_foreign_return_url_is_replaced_by_the_start_page(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    for (return_to, want) in [
        ("//evil.example/x", "/"),
        ("https://evil.example/", "/"),
        ("/\\evil.example", "/"),
        ("/account/password", "/account/password"),
    ] {
        let response = Browser::new(&app)
            .sign_in_returning(&user.email, &user.password, Some(return_to))
            .await;
        assert_eq!(response.status(), 303);
        assert_eq!(location(&response), want, "return_to {return_to:?}");
    }
}

/// No session exists before the password is right (an anonymous page
/// makes none), so there is none to fix; a sign-in over an existing
/// session gets a new id, and the old id is dead.
async fn the_session_id_changes_at_sign_in(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    assert_eq!(session_cookie(&app.get("/login").await), None);
    let before = session_cookie(&app.sign_in(&user.email, &user.password).await)
        .expect("a session cookie at sign-in");
    let after = session_cookie(&app.sign_in(&user.email, &user.password).await)
        .expect("a new session cookie at the next sign-in");
    assert_ne!(before, after);
    let old = crate::helpers::no_cookies()
        .get(app.url("/"))
        .header("cookie", before)
        .send()
        .await
        .unwrap();
    assert_eq!(old.status(), 303, "the old id signs no one in");
    assert_eq!(app.get("/").await.status(), 200);
}

async fn changing_the_password_keeps_this_session_and_ends_the_others(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    // A second browser, signed in too.
    let other = TestApp::spawn_on(app.db.clone(), |_| {}).await;
    assert_eq!(
        other.sign_in(&user.email, &user.password).await.status(),
        303
    );
    assert_eq!(app.sign_in(&user.email, &user.password).await.status(), 303);

    let page = app.get("/account/password").await.text().await.unwrap();
    let csrf = form_value(&page, "csrf").unwrap();
    // The password form: (current, new, confirmation) → status.
    let post = |current: &str, new: &str, confirm: &str| {
        let request = app.browser.post(app.url("/account/password")).form(&[
            ("csrf", csrf.clone()),
            ("current_password", current.to_owned()),
            ("new_password", new.to_owned()),
            ("confirm_password", confirm.to_owned()),
        ]);
        async move { request.send().await.unwrap().status() }
    };
    let new = "another long password";
    // Refusals first: wrong current password, mismatch, too short.
    assert_eq!(post("wrong current password", new, new).await, 400);
    let mismatch = "different long password";
    assert_eq!(post(&user.password, new, mismatch).await, 400);
    assert_eq!(post(&user.password, "short", "short").await, 400);

    assert_eq!(post(&user.password, new, new).await, 303);
    assert_eq!(app.get("/").await.status(), 200, "this session stays");
    assert_eq!(other.get("/").await.status(), 303, "the other session died");
    // (Through the other replica: the failures above are counted in the
    // shared store, one so far.)
    assert_eq!(
        other.sign_in(&user.email, &user.password).await.status(),
        401,
        "old password no longer works"
    );
    assert_eq!(
        other
            .sign_in(&user.email, "another long password")
            .await
            .status(),
        303
    );
}

async fn signing_out_needs_the_csrf_token(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    assert_eq!(app.sign_in(&user.email, &user.password).await.status(), 303);
    let refused = app
        .browser
        .post(app.url("/logout"))
        .form(&[("csrf", "")])
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    assert_eq!(app.get("/").await.status(), 200);

    assert_eq!(app.browser.sign_out().await.status(), 303);
    assert_eq!(app.get("/").await.status(), 303);
}
