//! A way back from a forgotten password (issue 34 item 1): the owner's
//! "Reset password" on the members page and the operator's `coop admin
//! user password-reset` make a one-time link; following it, the person
//! chooses a new password, which ends every session and app token of
//! theirs and clears their sign-in failures. Used, replaced, expired,
//! unknown and disabled links each get their page; only the farm's owner
//! makes links, for their own farm's members. `coop admin user
//! set-password` sets a password from standard input.

use crate::helpers::{
    Browser, Engine, Farm, TestApp, TestUser, assert_no_store, assert_page, form_value, no_cookies,
};
use crate::on_both_engines;

on_both_engines!(
    an_owners_link_lets_the_member_choose_a_password_that_ends_everything,
    used_replaced_expired_voided_disabled_and_unknown_links_say_why,
    only_the_farms_owner_makes_links_and_only_for_its_members,
    the_reset_form_needs_its_own_csrf_token,
    the_operator_prints_a_link_for_a_member,
    the_operator_sets_a_password_from_one_line_of_stdin,
);

const NEW_PASSWORD: &str = "a brand new passphrase";

/// The member's id, read off the owner's members page.
async fn member_id(owner: &Browser, email: &str) -> String {
    let (_, html) = owner.page("/admin/members").await;
    let heading = html.find(&format!(">{email}")).unwrap();
    let marker = "action=\"/admin/members/";
    let start = html[heading..].find(marker).unwrap() + heading + marker.len();
    html[start..start + 36].to_owned()
}

/// The owner's "Reset password" for member `id`: the answer.
async fn press_reset(owner: &Browser, id: &str) -> reqwest::Response {
    let csrf = owner.csrf("/admin/members").await;
    owner
        .submit(
            &format!("/admin/members/{id}/password-reset"),
            &[("csrf", &csrf)],
        )
        .await
}

/// The owner makes a link for `member`: the link's path on the app
/// (`/password-reset?token=…`), read off the page that shows it once.
async fn owner_makes_link(app: &TestApp, owner: &Browser, member: &TestUser) -> String {
    let id = member_id(owner, &member.email).await;
    let response = press_reset(owner, &id).await;
    assert_eq!(response.status(), 200);
    assert_no_store(&response, "the page showing the link");
    let html = response.text().await.unwrap();
    assert!(
        html.contains(&format!("Password reset link for {}", member.email)),
        "{html}"
    );
    link_path(app, &shown_link(&html))
}

/// The link in the `<code id="reset-link">` of a page.
fn shown_link(html: &str) -> String {
    let start = html.find("<code id=\"reset-link\">").expect("a link") + 22;
    let end = start + html[start..].find("</code>").unwrap();
    html[start..end].to_owned()
}

/// The path on the app of a link starting with its issuer.
fn link_path(app: &TestApp, link: &str) -> String {
    let path = link
        .strip_prefix(&app.issuer)
        .unwrap_or_else(|| panic!("{link} is not on {}", app.issuer));
    assert!(path.starts_with("/password-reset?token="), "{path}");
    path.to_owned()
}

fn token_of(path: &str) -> &str {
    path.trim_start_matches("/password-reset?token=")
}

/// A person who follows `path` in a fresh browser, and the form's CSRF
/// token the page gave them.
async fn follow(app: &TestApp, path: &str) -> (Browser, String) {
    let browser = Browser::new(app);
    let response = browser.open(path).await;
    assert_eq!(response.status(), 200, "{path}");
    assert_no_store(&response, "the reset page");
    let html = response.text().await.unwrap();
    assert!(
        html.contains("Choosing a new password signs you out everywhere"),
        "{html}"
    );
    let csrf = form_value(&html, "csrf").unwrap();
    (browser, csrf)
}

/// Posts the reset form with `new` and `confirm`.
async fn choose(
    browser: &Browser,
    csrf: &str,
    path: &str,
    new: &str,
    confirm: &str,
) -> reqwest::Response {
    browser
        .submit(
            "/password-reset",
            &[
                ("csrf", csrf),
                ("token", token_of(path)),
                ("new_password", new),
                ("confirm_password", confirm),
            ],
        )
        .await
}

/// How many links are stored.
async fn links(app: &TestApp) -> i64 {
    app.db_count("select count(*) from password_resets").await
}

async fn setup(engine: Engine) -> (TestApp, Farm, Browser) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let owner = app.signed_in(&farm.owner).await;
    (app, farm, owner)
}

async fn sign_in_status(app: &TestApp, email: &str, password: &str) -> u16 {
    Browser::new(app)
        .sign_in(email, password)
        .await
        .status()
        .as_u16()
}

async fn an_owners_link_lets_the_member_choose_a_password_that_ends_everything(engine: Engine) {
    let (app, farm, owner) = setup(engine).await;
    let worker = &farm.worker;
    let tokens = app.connect(worker, "farm:read").await;
    let session = app.signed_in(worker).await;
    // Locked out by five wrong guesses at the account.
    for _ in 0..5 {
        assert_eq!(
            sign_in_status(&app, &worker.email, "not the password").await,
            401
        );
    }
    assert_eq!(
        sign_in_status(&app, &worker.email, &worker.password).await,
        429
    );

    let path = owner_makes_link(&app, &owner, worker).await;
    // Stored as its hash only, and audited.
    let token = token_of(&path);
    app.assert_count(
        &format!(
            "select count(*) from password_resets where token_hash = '{}'",
            coop::secrets::hash_secret(token)
        ),
        1,
    )
    .await;
    app.assert_count(
        &format!("select count(*) from password_resets where token_hash = '{token}'"),
        0,
    )
    .await;
    app.assert_count(
        "select count(*) from audit_log where kind = 'admin_action' and detail like '%member_password_reset_link%'",
        1,
    )
    .await;

    let (browser, csrf) = follow(&app, &path).await;
    // Opening the page spent nothing; a mistake shows the form again.
    let response = choose(&browser, &csrf, &path, NEW_PASSWORD, "another passphrase").await;
    assert_page(response, 400, "The two passwords are not the same.").await;
    let response = choose(&browser, &csrf, &path, "short", "short").await;
    assert_page(response, 400, "Use at least 12 characters").await;
    assert_eq!(app.audit_count("password_changed").await, 0);

    let response = choose(&browser, &csrf, &path, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_eq!(response.status(), 200);
    let html = response.text().await.unwrap();
    assert!(html.contains("Your password is changed"), "{html}");
    assert!(html.contains("href=\"/login\""), "{html}");

    // Everything of the old password has stopped: its session, the app's
    // token at /mcp (401 with the exact challenge) and its refresh token.
    assert_eq!(session.page("/").await.0, 303, "the old session is over");
    app.assert_cut_off(&tokens).await;
    assert_eq!(
        sign_in_status(&app, &worker.email, &worker.password).await,
        401
    );
    // The lock-out was cleared: the new password signs in at once.
    assert_eq!(sign_in_status(&app, &worker.email, NEW_PASSWORD).await, 303);
    app.assert_count(
        "select count(*) from audit_log where kind = 'password_changed' and detail like '%reset link%'",
        1,
    )
    .await;

    // The link worked once.
    assert_page(browser.open(&path).await, 410, "already used").await;
    let response = choose(
        &browser,
        &csrf,
        &path,
        "yet another passphrase",
        "yet another passphrase",
    )
    .await;
    assert_page(response, 410, "already used").await;
    assert_eq!(sign_in_status(&app, &worker.email, NEW_PASSWORD).await, 303);
}

async fn used_replaced_expired_voided_disabled_and_unknown_links_say_why(engine: Engine) {
    let (app, farm, owner) = setup(engine).await;
    let worker = &farm.worker;
    let first = owner_makes_link(&app, &owner, worker).await;
    let second = owner_makes_link(&app, &owner, worker).await;
    // The newest replaces the older.
    assert_page(app.get(&first).await, 410, "A newer link was made").await;
    let (browser, csrf) = follow(&app, &second).await;
    let response = choose(&browser, &csrf, &first, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_page(response, 410, "A newer link was made").await;

    // A day later the newest has expired too, for the page and the form
    // (sent with a fresh signed-out form token: the old one is too old).
    app.clock.advance(time::Duration::hours(24));
    assert_page(app.get(&second).await, 410, "This link has expired").await;
    let csrf = browser.login_csrf().await;
    let response = choose(&browser, &csrf, &second, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_page(response, 410, "This link has expired").await;
    assert_eq!(
        sign_in_status(&app, &worker.email, &worker.password).await,
        303,
        "nothing changed"
    );

    // Signed out everywhere (the epoch moved) after the link was made: void.
    let third = owner_makes_link(&app, &owner, worker).await;
    app.admin(&["user", "sign-out-everywhere", &worker.email])
        .await;
    assert_page(app.get(&third).await, 410, "A newer link was made").await;

    // A disabled account's link says so.
    let fourth = owner_makes_link(&app, &owner, worker).await;
    app.admin(&["user", "disable", &worker.email]).await;
    assert_page(app.get(&fourth).await, 403, "This account is disabled").await;
    app.admin(&["user", "enable", &worker.email]).await;
    follow(&app, &fourth).await;

    // Never made, or no token at all.
    let made_up = format!("/password-reset?token={}", "A".repeat(43));
    assert_page(app.get(&made_up).await, 404, "Coop made no such link").await;
    assert_page(
        app.get("/password-reset").await,
        404,
        "Coop made no such link",
    )
    .await;
    assert_eq!(app.audit_count("password_changed").await, 0);
}

async fn only_the_farms_owner_makes_links_and_only_for_its_members(engine: Engine) {
    let (app, farm, owner) = setup(engine).await;
    let id = member_id(&owner, &farm.worker.email).await;
    let manager = app
        .add_member(&farm.slug, "manager@hillside.example", "manager", None)
        .await;
    let manager = app.signed_in(&manager).await;
    let csrf = manager.csrf("/").await;
    let response = manager
        .submit(
            &format!("/admin/members/{id}/password-reset"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_page(response, 403, "Only the farm&#39;s owner").await;

    // The owner next door cannot make one for this farm's worker.
    let next_door = app.farm("Valley Farm").await;
    let other_owner = app.signed_in(&next_door.owner).await;
    assert_page(
        press_reset(&other_owner, &id).await,
        404,
        "nothing at this address",
    )
    .await;
    assert_page(
        press_reset(&owner, "not-an-id").await,
        404,
        "nothing at this address",
    )
    .await;
    assert_eq!(links(&app).await, 0);

    // Without the session's CSRF token, or from another site: refused.
    let response = owner
        .submit(&format!("/admin/members/{id}/password-reset"), &[])
        .await;
    assert_page(response, 403, "Please try again").await;
    let csrf = owner.csrf("/admin/members").await;
    let response = owner
        .post(app.url(&format!("/admin/members/{id}/password-reset")))
        .header("origin", "https://evil.example")
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_page(response, 403, "Please try again").await;
    assert_eq!(links(&app).await, 0);
    assert_eq!(press_reset(&owner, &id).await.status(), 200);
    assert_eq!(links(&app).await, 1);
}

async fn the_reset_form_needs_its_own_csrf_token(engine: Engine) {
    let (app, farm, owner) = setup(engine).await;
    let path = owner_makes_link(&app, &owner, &farm.worker).await;
    let (browser, csrf) = follow(&app, &path).await;
    // Another browser with the token but not its cookie; this browser with
    // a wrong token; a page of another site posting for this browser.
    let stranger = Browser::with_client(&app, no_cookies());
    let response = choose(&stranger, &csrf, &path, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_page(response, 403, "Please try again").await;
    let response = choose(&browser, "wrong", &path, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_page(response, 403, "Please try again").await;
    let response = browser
        .post(app.url("/password-reset"))
        .header("origin", "https://evil.example")
        .form(&[
            ("csrf", csrf.as_str()),
            ("token", token_of(&path)),
            ("new_password", NEW_PASSWORD),
            ("confirm_password", NEW_PASSWORD),
        ])
        .send()
        .await
        .unwrap();
    assert_page(response, 403, "Please try again").await;
    // Nothing was spent: the link still works.
    let response = choose(&browser, &csrf, &path, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        sign_in_status(&app, &farm.worker.email, NEW_PASSWORD).await,
        303
    );
}

/// Asserts `coop <args>` is refused: exit 1, one line on stderr holding
/// `reason`, nothing on stdout.
async fn cli_refused(app: &TestApp, args: &[&str], stdin: Option<&str>, reason: &str) {
    let (code, out, err) = app.cli_with_stdin(args, stdin).await;
    assert_eq!(code, 1, "{args:?}: {out}");
    assert_eq!(out, "");
    let line = err.trim_end_matches('\n');
    assert!(!line.contains('\n'), "{err:?}");
    assert!(line.contains(reason), "{line:?} lacks {reason:?}");
}

async fn the_operator_prints_a_link_for_a_member(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let next_door = app.farm("Valley Farm").await;
    let email = farm.worker.email.as_str();
    let reset = ["admin", "user", "password-reset", email];
    for (extra, reason) in [
        (
            vec!["--farm", next_door.slug.as_str()],
            "is not a member of the farm \"valley-farm\"",
        ),
        (
            vec!["--farm", "nowhere"],
            "no farm has the slug \"nowhere\"",
        ),
        (
            vec!["--issuer", "https://coop.example/path"],
            "--issuer / COOP_ISSUER",
        ),
        (vec!["--bind", "0.0.0.0:0"], "--issuer / COOP_ISSUER"),
    ] {
        let mut args = reset.to_vec();
        args.extend(extra);
        cli_refused(&app, &args, None, reason).await;
    }
    let unknown = ["admin", "user", "password-reset", "nobody@hillside.example"];
    cli_refused(&app, &unknown, None, "no user has the email").await;
    assert_eq!(links(&app).await, 0);

    // The link starts with the issuer `coop serve` has: the configured one,
    // or http:// and the bound address.
    let mut args = reset.to_vec();
    args.extend([
        "--farm",
        farm.slug.as_str(),
        "--issuer",
        "https://coop.example/",
    ]);
    let (code, out, err) = app.cli(&args).await;
    assert_eq!(code, 0, "{err}");
    let link = crate::helpers::app::printed(&out, "reset_link").unwrap();
    assert!(
        link.starts_with("https://coop.example/password-reset?token="),
        "{link}"
    );
    assert!(
        crate::helpers::app::printed(&out, "expires_at").is_some(),
        "{out}"
    );
    assert!(err.contains("Coop keeps only its hash"), "{err}");
    let (code, out, err) = app.cli(&reset).await;
    assert_eq!(code, 0, "{err}");
    let link = crate::helpers::app::printed(&out, "reset_link").unwrap();
    let path = link
        .strip_prefix("http://127.0.0.1:8080")
        .unwrap_or_else(|| panic!("{link}"))
        .to_owned();
    app.assert_count(
        "select count(*) from audit_log where kind = 'admin_action' and detail like '%password_reset_link%' and detail like '%the operator%'",
        2,
    )
    .await;

    // The second replaced the first; it works on the server.
    assert_eq!(
        app.db_count("select count(*) from password_resets where replaced_at is null")
            .await,
        1
    );
    let (browser, csrf) = follow(&app, &path).await;
    let response = choose(&browser, &csrf, &path, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_eq!(response.status(), 200);
    assert_eq!(sign_in_status(&app, email, NEW_PASSWORD).await, 303);
}

async fn the_operator_sets_a_password_from_one_line_of_stdin(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let owner = app.signed_in(&farm.owner).await;
    let worker = &farm.worker;
    let tokens = app.connect(worker, "farm:read").await;
    let link = owner_makes_link(&app, &owner, worker).await;
    let set = [
        "admin",
        "user",
        "set-password",
        &worker.email,
        "--password-stdin",
    ];

    cli_refused(
        &app,
        &set,
        Some("too short\n"),
        "Use at least 12 characters",
    )
    .await;
    let unknown = [
        "admin",
        "user",
        "set-password",
        "nobody@hillside.example",
        "--password-stdin",
    ];
    cli_refused(
        &app,
        &unknown,
        Some("long enough, surely\n"),
        "no user has the email",
    )
    .await;
    cli_refused(
        &app,
        &set[..4],
        Some("long enough, surely\n"),
        "--password-stdin",
    )
    .await;
    assert_eq!(
        sign_in_status(&app, &worker.email, &worker.password).await,
        303,
        "nothing changed"
    );
    assert_eq!(app.mcp_list(&tokens.access_token).await.status(), 200);

    // One line: what follows it is not part of the password.
    let (code, out, err) = app
        .cli_with_stdin(&set, Some(&format!("{NEW_PASSWORD}\nand more\n")))
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!("{}: password set; signed out everywhere\n", worker.email)
    );
    assert_eq!(sign_in_status(&app, &worker.email, NEW_PASSWORD).await, 303);
    assert_eq!(
        sign_in_status(&app, &worker.email, &worker.password).await,
        401
    );
    let renewed = TestUser {
        password: NEW_PASSWORD.to_owned(),
        ..worker.clone()
    };
    let fresh = app.connect(&renewed, "farm:read").await;
    app.assert_cut_off(&tokens).await;
    assert_eq!(app.mcp_list(&fresh.access_token).await.status(), 200);
    // The link made before the new password no longer works.
    assert_page(app.get(&link).await, 410, "A newer link was made").await;
    app.assert_count(
        "select count(*) from audit_log where kind = 'password_changed' and detail like '%operator%'",
        1,
    )
    .await;
}
