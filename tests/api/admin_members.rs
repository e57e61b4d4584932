//! `/admin/members`: role, sign out everywhere, require a password change,
//! disable and enable; the last owner stays.

use crate::apps_support::{
    self, Farm, assert_cut_off, assert_page, assert_works, csrf, page, post,
};
use crate::helpers::{Engine, TestApp, TestUser, location};
use crate::oauth_client::{self, audit_count, db_count, sign_in_browser};
use crate::on_both_engines;

on_both_engines!(
    signing_a_member_out_everywhere_ends_their_sessions_and_tokens,
    a_disabled_member_is_cut_off_and_an_enabled_one_comes_back,
    requiring_a_password_change_sends_the_member_to_change_it,
    the_role_changes_and_a_restricted_worker_loses_the_restriction,
    the_last_owner_cannot_be_disabled_or_demoted,
    member_refusals,
);

/// The member's id, read off the owner's members page.
async fn member_id(owner: &reqwest::Client, app: &TestApp, email: &str) -> String {
    let (_, html) = page(owner, app, "/admin/members").await;
    let heading = html.find(&format!(">{email}")).unwrap();
    let marker = "action=\"/admin/members/";
    let start = html[heading..].find(marker).unwrap() + heading + marker.len();
    html[start..start + 36].to_owned()
}

async fn act(
    owner: &reqwest::Client,
    app: &TestApp,
    id: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    let token = csrf(owner, app, "/admin/members").await;
    let mut form = form.to_vec();
    form.push(("csrf", &token));
    post(owner, app, &format!("/admin/members/{id}"), &form).await
}

async fn setup(app: &TestApp) -> (Farm, reqwest::Client) {
    let farm = apps_support::farm(app, "Hillside Farm").await;
    let owner = sign_in_browser(app, &farm.owner).await;
    (farm, owner)
}

async fn signing_a_member_out_everywhere_ends_their_sessions_and_tokens(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (farm, owner) = setup(&app).await;
    let tokens = oauth_client::connect(&app, &farm.worker, "farm:read").await;
    let worker = sign_in_browser(&app, &farm.worker).await;
    assert_eq!(page(&worker, &app, "/").await.0, 200);

    let id = member_id(&owner, &app, &farm.worker.email).await;
    let response = act(&owner, &app, &id, &[("action", "sign_out_everywhere")]).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/admin/members?done=member");

    assert_eq!(page(&worker, &app, "/").await.0, 303);
    assert_cut_off(&app, &tokens).await;
    assert_eq!(page(&owner, &app, "/admin/members").await.0, 200);
    assert_eq!(
        db_count(&app, "select count(*) from audit_log where kind = 'admin_action' and detail like '%member_signed_out_everywhere%'").await,
        1
    );
}

async fn a_disabled_member_is_cut_off_and_an_enabled_one_comes_back(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (farm, owner) = setup(&app).await;
    let mut tokens = oauth_client::connect(&app, &farm.worker, "farm:read").await;
    let worker = sign_in_browser(&app, &farm.worker).await;
    let id = member_id(&owner, &app, &farm.worker.email).await;

    let response = act(&owner, &app, &id, &[("action", "disable")]).await;
    assert_eq!(response.status(), 303);
    let (_, html) = page(&owner, &app, "/admin/members").await;
    assert!(
        html.contains("<span class=\"tag danger\">disabled</span>"),
        "{html}"
    );
    assert_eq!(page(&worker, &app, "/").await.0, 303);
    assert_cut_off(&app, &tokens).await;
    assert_eq!(
        app.sign_in(&farm.worker.email, &farm.worker.password)
            .await
            .status(),
        403
    );

    let response = act(&owner, &app, &id, &[("action", "enable")]).await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        app.sign_in(&farm.worker.email, &farm.worker.password)
            .await
            .status(),
        303
    );
    assert_works(&app, &mut tokens).await;
}

async fn requiring_a_password_change_sends_the_member_to_change_it(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (farm, owner) = setup(&app).await;
    let worker = sign_in_browser(&app, &farm.worker).await;
    let id = member_id(&owner, &app, &farm.worker.email).await;
    let response = act(&owner, &app, &id, &[("action", "require_password_change")]).await;
    assert_eq!(response.status(), 303);
    let response = worker.get(app.url("/account/apps")).send().await.unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/account/password");
    let (_, html) = page(&owner, &app, "/admin/members").await;
    assert!(html.contains("must change password"));
}

async fn the_role_changes_and_a_restricted_worker_loses_the_restriction(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (farm, owner) = setup(&app).await;
    app.cli(&[
        "admin", "house", "add", "--farm", &farm.slug, "--name", "North",
    ])
    .await;
    let (code, _, err) = app
        .cli(&[
            "admin",
            "flock",
            "add",
            "--farm",
            &farm.slug,
            "--house",
            "North",
            "--name",
            "Flock A",
            "--breed",
            "Hy-Line",
            "--placed",
            "2026-01-05",
            "--head-count",
            "100",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = app
        .cli_with_stdin(
            &[
                "admin",
                "user",
                "add",
                "--farm",
                &farm.slug,
                "--email",
                "picker@hillside-farm.example",
                "--role",
                "worker",
                "--flocks",
                "Flock A",
                "--password-stdin",
            ],
            Some(apps_support::PASSWORD),
        )
        .await;
    assert_eq!(code, 0, "{err}");
    let (_, html) = page(&owner, &app, "/admin/members").await;
    assert!(html.contains("Only Flock A"), "{html}");

    let id = member_id(&owner, &app, "picker@hillside-farm.example").await;
    let response = act(
        &owner,
        &app,
        &id,
        &[("action", "role"), ("role", "manager")],
    )
    .await;
    assert_eq!(response.status(), 303);
    let picker = TestUser {
        farm: farm.slug.clone(),
        email: "picker@hillside-farm.example".into(),
        password: apps_support::PASSWORD.into(),
    };
    let browser = sign_in_browser(&app, &picker).await;
    let (_, home) = page(&browser, &app, "/").await;
    assert!(
        home.contains("<dt>Your role</dt><dd>manager</dd>"),
        "{home}"
    );
    assert_eq!(
        db_count(
            &app,
            "select count(*) from memberships where flock_restricted"
        )
        .await,
        0
    );
    assert_eq!(
        db_count(&app, "select count(*) from membership_flocks").await,
        0
    );
    let response = act(&owner, &app, &id, &[("action", "role"), ("role", "chief")]).await;
    assert_page(response, 400, "is not a role").await;
}

async fn the_last_owner_cannot_be_disabled_or_demoted(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (farm, owner) = setup(&app).await;
    let me = member_id(&owner, &app, &farm.owner.email).await;
    for form in [
        vec![("action", "disable")],
        vec![("action", "role"), ("role", "manager")],
    ] {
        let response = act(&owner, &app, &me, &form).await;
        assert_page(response, 409, "at least one owner").await;
    }
    let (_, html) = page(&owner, &app, "/admin/members").await;
    assert!(!html.contains("tag danger"));

    // With a second owner, the first may step down; then the second is the last.
    let worker = member_id(&owner, &app, &farm.worker.email).await;
    let response = act(
        &owner,
        &app,
        &worker,
        &[("action", "role"), ("role", "owner")],
    )
    .await;
    assert_eq!(response.status(), 303);
    let response = act(
        &owner,
        &app,
        &me,
        &[("action", "role"), ("role", "manager")],
    )
    .await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/");
    assert_eq!(page(&owner, &app, "/admin").await.0, 403);

    let second = sign_in_browser(&app, &farm.worker).await;
    let response = act(&second, &app, &worker, &[("action", "disable")]).await;
    assert_page(response, 409, "at least one owner").await;
    // A disabled owner does not count as the farm's owner.
    let response = act(&second, &app, &me, &[("action", "role"), ("role", "owner")]).await;
    assert_eq!(response.status(), 303);
    let response = act(&second, &app, &me, &[("action", "disable")]).await;
    assert_eq!(response.status(), 303);
    let response = act(&second, &app, &worker, &[("action", "disable")]).await;
    assert_page(response, 409, "at least one owner").await;
    assert_eq!(
        db_count(&app, "select count(*) from memberships m join users u on u.id = m.user_id where m.role = 'owner' and not u.disabled").await,
        1
    );
}

async fn member_refusals(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (farm, owner) = setup(&app).await;
    let other = apps_support::farm(&app, "Valley Farm").await;
    let mut tokens = oauth_client::connect(&app, &other.worker, "farm:read").await;
    let foreign = {
        let browser = sign_in_browser(&app, &other.owner).await;
        member_id(&browser, &app, &other.worker.email).await
    };
    // Another farm's member, an unknown id, a malformed id: 404.
    for id in [
        foreign.as_str(),
        &uuid::Uuid::now_v7().to_string(),
        "nobody",
    ] {
        let response = act(&owner, &app, id, &[("action", "disable")]).await;
        assert_page(response, 404, "Not found").await;
    }
    assert_works(&app, &mut tokens).await;
    // Without the CSRF token.
    let id = member_id(&owner, &app, &farm.worker.email).await;
    let response = post(
        &owner,
        &app,
        &format!("/admin/members/{id}"),
        &[("action", "disable")],
    )
    .await;
    assert_page(response, 403, "Please try again").await;
    // An unknown action.
    let response = act(&owner, &app, &id, &[("action", "explode")]).await;
    assert_page(response, 400, "Choose an action.").await;
    assert_eq!(audit_count(&app, "admin_action").await, 0);
    assert_eq!(
        db_count(&app, "select count(*) from users where disabled").await,
        0
    );
}
