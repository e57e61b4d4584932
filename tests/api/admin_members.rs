//! `/admin/members`: role and flocks, sign out everywhere, require a
//! password change, disable and enable; the last owner stays.

use crate::helpers::{Browser, Engine, Farm, TestApp, assert_page, location};
use serde_json::json;

use crate::on_both_engines;

on_both_engines!(
    signing_a_member_out_everywhere_ends_their_sessions_and_tokens,
    a_disabled_member_is_cut_off_and_an_enabled_one_comes_back,
    requiring_a_password_change_sends_the_member_to_change_it,
    a_workers_flocks_are_chosen_and_the_next_mcp_call_sees_only_them,
    a_role_change_never_silently_changes_a_workers_flocks,
    flock_choice_refusals,
    the_last_owner_cannot_be_disabled_or_demoted,
    member_refusals,
);

/// The member's id, read off the owner's members page.
async fn member_id(owner: &Browser, email: &str) -> String {
    let (_, html) = owner.page("/admin/members").await;
    let heading = html.find(&format!(">{email}")).unwrap();
    let marker = "action=\"/admin/members/";
    let start = html[heading..].find(marker).unwrap() + heading + marker.len();
    html[start..start + 36].to_owned()
}

async fn act(owner: &Browser, id: &str, form: &[(&str, &str)]) -> reqwest::Response {
    let token = owner.csrf("/admin/members").await;
    let mut form = form.to_vec();
    form.push(("csrf", &token));
    owner.submit(&format!("/admin/members/{id}"), &form).await
}

async fn setup(app: &TestApp) -> (Farm, Browser) {
    let farm = app.farm("Hillside Farm").await;
    let owner = app.signed_in(&farm.owner).await;
    (farm, owner)
}

async fn signing_a_member_out_everywhere_ends_their_sessions_and_tokens(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (farm, owner) = setup(&app).await;
    let tokens = app.connect(&farm.worker, "farm:read").await;
    let worker = app.signed_in(&farm.worker).await;
    assert_eq!(worker.page("/").await.0, 200);

    let id = member_id(&owner, &farm.worker.email).await;
    let response = act(&owner, &id, &[("action", "sign_out_everywhere")]).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/admin/members?done=member");

    assert_eq!(worker.page("/").await.0, 303);
    app.assert_cut_off(&tokens).await;
    assert_eq!(owner.page("/admin/members").await.0, 200);
    assert_eq!(
        app.db_count("select count(*) from audit_log where kind = 'admin_action' and detail like '%member_signed_out_everywhere%'").await,
        1
    );
}

async fn a_disabled_member_is_cut_off_and_an_enabled_one_comes_back(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (farm, owner) = setup(&app).await;
    let mut tokens = app.connect(&farm.worker, "farm:read").await;
    let worker = app.signed_in(&farm.worker).await;
    let id = member_id(&owner, &farm.worker.email).await;

    let response = act(&owner, &id, &[("action", "disable")]).await;
    assert_eq!(response.status(), 303);
    let (_, html) = owner.page("/admin/members").await;
    assert!(
        html.contains("<span class=\"tag danger\">disabled</span>"),
        "{html}"
    );
    assert_eq!(worker.page("/").await.0, 303);
    app.assert_cut_off(&tokens).await;
    // Refused as a wrong password is (threat 52).
    assert_eq!(
        app.sign_in(&farm.worker.email, &farm.worker.password)
            .await
            .status(),
        401
    );

    let response = act(&owner, &id, &[("action", "enable")]).await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        app.sign_in(&farm.worker.email, &farm.worker.password)
            .await
            .status(),
        303
    );
    app.assert_works(&mut tokens).await;
}

async fn requiring_a_password_change_sends_the_member_to_change_it(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (farm, owner) = setup(&app).await;
    let worker = app.signed_in(&farm.worker).await;
    let id = member_id(&owner, &farm.worker.email).await;
    let response = act(&owner, &id, &[("action", "require_password_change")]).await;
    assert_eq!(response.status(), 303);
    let response = worker.open("/account/apps").await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/account/password");
    let (_, html) = owner.page("/admin/members").await;
    assert!(html.contains("must change password"));
}

/// A farm with flocks "Hens A" and "Hens B" in house North.
async fn setup_with_flocks(app: &TestApp) -> (Farm, Browser) {
    let (farm, owner) = setup(app).await;
    app.add_flocks(&farm, &["Hens A", "Hens B"]).await;
    (farm, owner)
}

/// The members form that sets `role` and, with `flocks` "all" or "some",
/// which flocks; `ticked` are the flock boxes ticked.
fn access<'a>(role: &'a str, flocks: &'a str, ticked: &[&'a str]) -> Vec<(&'a str, &'a str)> {
    let mut form = vec![("action", "role"), ("role", role)];
    if !flocks.is_empty() {
        form.push(("flocks", flocks));
    }
    form.extend(ticked.iter().map(|id| ("flock", *id)));
    form
}

/// The id of flock `name`, read off the owner's members page.
async fn flock_id(owner: &Browser, name: &str) -> String {
    let (_, html) = owner.page("/admin/members").await;
    let marker = "name=\"flock\" value=\"";
    html.split(marker)
        .skip(1)
        .find(|rest| {
            let label = &rest[..rest.find("</label>").unwrap()];
            label.contains(&format!("<span>{name} <span"))
        })
        .map(|rest| rest[..36].to_owned())
        .unwrap_or_else(|| panic!("no flock {name} in {html}"))
}

/// The flock names `list_flocks` returns to `token`, sorted.
async fn visible_flocks(app: &TestApp, token: &str) -> Vec<String> {
    let mut names = app.flock_names(token).await;
    names.sort();
    names
}

async fn restriction_rows(app: &TestApp) -> (i64, i64) {
    (
        app.db_count("select count(*) from memberships where flock_restricted")
            .await,
        app.db_count("select count(*) from membership_flocks").await,
    )
}

/// The next MCP call of `token` lists exactly `names`, and the store holds
/// `rows` (restricted memberships, restriction rows).
async fn assert_sees(app: &TestApp, token: &str, names: &[&str], rows: (i64, i64)) {
    assert_eq!(visible_flocks(app, token).await, names);
    assert_eq!(restriction_rows(app).await, rows);
}

async fn a_workers_flocks_are_chosen_and_the_next_mcp_call_sees_only_them(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (farm, owner) = setup_with_flocks(&app).await;
    let tokens = app.connect(&farm.worker, "farm:read").await;
    assert_eq!(
        visible_flocks(&app, &tokens.access_token).await,
        ["Hens A", "Hens B"]
    );
    let id = member_id(&owner, &farm.worker.email).await;
    let hens_a = flock_id(&owner, "Hens A").await;

    let form = access("worker", "some", &[&hens_a]);
    let response = act(&owner, &id, &form).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/admin/members?done=member");
    assert_eq!(visible_flocks(&app, &tokens.access_token).await, ["Hens A"]);
    let refusal = app
        .tool_refused(
            &tokens.access_token,
            "get_flock",
            json!({"flock": "Hens B"}),
        )
        .await;
    assert!(refusal.contains("Hens B"), "{refusal}");
    let (_, html) = owner.page("/admin/members").await;
    assert!(html.contains("<dd>Only Hens A</dd>"), "{html}");
    assert!(
        html.contains(&format!("name=\"flock\" value=\"{hens_a}\" checked>")),
        "the form shows the current choice: {html}"
    );
    assert_eq!(
        app.db_count("select count(*) from audit_log where detail like '%member_role_changed%' and detail like '%Hens A%'").await,
        1
    );

    let form = access("worker", "all", &[&hens_a]);
    let response = act(&owner, &id, &form).await;
    assert_eq!(response.status(), 303);
    assert_sees(&app, &tokens.access_token, &["Hens A", "Hens B"], (0, 0)).await;
    let (_, html) = owner.page("/admin/members").await;
    assert!(!html.contains("<dd>Only "), "{html}");
}

async fn a_role_change_never_silently_changes_a_workers_flocks(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (farm, owner) = setup_with_flocks(&app).await;
    let picker = app
        .add_member(
            &farm.slug,
            "picker@hillside-farm.example",
            "worker",
            Some("Hens A"),
        )
        .await;
    let tokens = app.connect(&picker, "farm:read").await;
    assert_eq!(visible_flocks(&app, &tokens.access_token).await, ["Hens A"]);
    let id = member_id(&owner, &picker.email).await;
    let hens_a = flock_id(&owner, "Hens A").await;

    // Only a worker can be limited: a manager limited to Hens A is refused,
    // and the worker keeps exactly their flocks.
    let form = access("manager", "some", &[&hens_a]);
    let response = act(&owner, &id, &form).await;
    assert_page(response, 400, "Only a worker can be limited to some flocks").await;
    assert_sees(&app, &tokens.access_token, &["Hens A"], (1, 1)).await;

    let form = access("manager", "all", &[]);
    let response = act(&owner, &id, &form).await;
    assert_eq!(response.status(), 303);
    assert_sees(&app, &tokens.access_token, &["Hens A", "Hens B"], (0, 0)).await;
    let browser = app.signed_in(&picker).await;
    let (_, home) = browser.page("/").await;
    assert!(
        home.contains("<dt>Your role</dt><dd>manager</dd>"),
        "{home}"
    );

    // Becoming a worker needs a choice of flocks: never assumed.
    let response = act(&owner, &id, &access("worker", "", &[])).await;
    assert_page(response, 400, "Choose which flocks this worker sees").await;
    let (_, home) = browser.page("/").await;
    assert!(
        home.contains("<dt>Your role</dt><dd>manager</dd>"),
        "{home}"
    );

    let form = access("worker", "some", &[&hens_a]);
    let response = act(&owner, &id, &form).await;
    assert_eq!(response.status(), 303);
    assert_sees(&app, &tokens.access_token, &["Hens A"], (1, 1)).await;

    let response = act(&owner, &id, &access("chief", "", &[])).await;
    assert_page(response, 400, "is not a role").await;
}

async fn flock_choice_refusals(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (farm, owner) = setup_with_flocks(&app).await;
    let other = app.farm("Valley Farm").await;
    app.add_flocks(&other, &["Valley Hens"]).await;
    let foreign = {
        let browser = app.signed_in(&other.owner).await;
        flock_id(&browser, "Valley Hens").await
    };
    let tokens = app.connect(&farm.worker, "farm:read").await;
    let id = member_id(&owner, &farm.worker.email).await;
    let hens_a = flock_id(&owner, "Hens A").await;
    let unknown = uuid::Uuid::now_v7().to_string();

    let not_ours = "That flock is not on this farm.";
    for ticked in [
        vec![foreign.as_str()],
        // One good flock does not carry a foreign one through.
        vec![hens_a.as_str(), foreign.as_str()],
        vec![unknown.as_str()],
        vec!["not-a-flock"],
    ] {
        let response = act(&owner, &id, &access("worker", "some", &ticked)).await;
        assert_page(response, 400, not_ours).await;
    }
    let form = access("worker", "some", &[]);
    let response = act(&owner, &id, &form).await;
    assert_page(response, 400, "Tick at least one flock").await;
    let form = access("worker", "everything", &[]);
    let response = act(&owner, &id, &form).await;
    assert_page(response, 400, "Choose which flocks this worker sees").await;
    let form = [
        ("action", "role"),
        ("role", "worker"),
        ("role", "owner"),
        ("flocks", "all"),
    ];
    let response = act(&owner, &id, &form).await;
    assert_page(response, 400, "The form field role is repeated.").await;

    // Nothing changed: the worker still sees the whole farm, and nothing
    // was logged.
    assert_sees(&app, &tokens.access_token, &["Hens A", "Hens B"], (0, 0)).await;
    assert_eq!(app.audit_count("admin_action").await, 0);
}

async fn the_last_owner_cannot_be_disabled_or_demoted(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (farm, owner) = setup(&app).await;
    // Next door's owner is no owner of this farm.
    app.next_door().await;
    let me = member_id(&owner, &farm.owner.email).await;
    for form in [vec![("action", "disable")], access("manager", "", &[])] {
        let response = act(&owner, &me, &form).await;
        assert_page(response, 409, "at least one owner").await;
    }
    let (_, html) = owner.page("/admin/members").await;
    assert!(!html.contains("tag danger"));

    // With a second owner, the first may step down; then the second is the last.
    let worker = member_id(&owner, &farm.worker.email).await;
    let response = act(&owner, &worker, &access("owner", "", &[])).await;
    assert_eq!(response.status(), 303);
    let response = act(&owner, &me, &access("manager", "", &[])).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/");
    assert_eq!(owner.page("/admin").await.0, 403);

    let second = app.signed_in(&farm.worker).await;
    let response = act(&second, &worker, &[("action", "disable")]).await;
    assert_page(response, 409, "at least one owner").await;
    // A disabled owner does not count as the farm's owner.
    let response = act(&second, &me, &access("owner", "", &[])).await;
    assert_eq!(response.status(), 303);
    let response = act(&second, &me, &[("action", "disable")]).await;
    assert_eq!(response.status(), 303);
    let response = act(&second, &worker, &[("action", "disable")]).await;
    assert_page(response, 409, "at least one owner").await;
    assert_eq!(
        app.db_count(&format!("select count(*) from memberships m join users u on u.id = m.user_id join farms f on f.id = m.farm_id where f.slug = '{}' and m.role = 'owner' and not u.disabled", farm.slug)).await,
        1
    );
}

async fn member_refusals(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (farm, owner) = setup(&app).await;
    let other = app.farm("Valley Farm").await;
    let mut tokens = app.connect(&other.worker, "farm:read").await;
    let foreign = {
        let browser = app.signed_in(&other.owner).await;
        member_id(&browser, &other.worker.email).await
    };
    // Another farm's member, an unknown id, a malformed id: 404.
    for id in [
        foreign.as_str(),
        &uuid::Uuid::now_v7().to_string(),
        "nobody",
    ] {
        let response = act(&owner, id, &[("action", "disable")]).await;
        assert_page(response, 404, "Not found").await;
    }
    app.assert_works(&mut tokens).await;
    // Without the CSRF token.
    let id = member_id(&owner, &farm.worker.email).await;
    let response = owner
        .submit(&format!("/admin/members/{id}"), &[("action", "disable")])
        .await;
    assert_page(response, 403, "Please try again").await;
    // An unknown action.
    let response = act(&owner, &id, &[("action", "explode")]).await;
    assert_page(response, 400, "Choose an action.").await;
    assert_eq!(app.audit_count("admin_action").await, 0);
    app.assert_count("select count(*) from users where disabled", 0)
        .await;
}
