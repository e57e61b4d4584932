//! `/admin/audit`: the farm's audit log, newest first, paged, filtered by
//! member, app and kind.

use crate::helpers::{Engine, TestApp};
use serde_json::json;

use crate::on_both_engines;

on_both_engines!(
    the_log_is_newest_first_and_filters_by_member_app_and_kind,
    a_tool_write_shows_its_app_and_grant,
    the_log_is_paged,
);

fn rows(html: &str) -> usize {
    html.matches("<td data-label=\"When\">").count()
}

fn whats(html: &str) -> Vec<String> {
    html.split("<td data-label=\"What\">")
        .skip(1)
        .map(|s| s.split('<').next().unwrap().to_owned())
        .collect()
}

async fn the_log_is_newest_first_and_filters_by_member_app_and_kind(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let other = app.farm("Valley Farm").await;
    assert_eq!(
        app.sign_in(&farm.worker.email, "wrong password here")
            .await
            .status(),
        401
    );
    let tokens = app.connect(&farm.worker, "farm:read").await;
    app.connect(&other.worker, "farm:read").await;
    let worker = app.signed_in(&farm.worker).await;
    let grant = app.grant_of(&farm.worker.email).await;
    let path = format!("/account/apps/{grant}/disconnect");
    let token = worker.csrf(&path).await;
    assert_eq!(
        worker.submit(&path, &[("csrf", &token)]).await.status(),
        303
    );

    let owner = app.signed_in(&farm.owner).await;
    let (status, html) = owner.page("/admin/audit").await;
    assert_eq!(status, 200);
    let kinds = whats(&html);
    // Newest first: the owner's sign-in, the disconnect, the worker's
    // second sign-in, the consent, the first sign-in, the failed one.
    assert_eq!(
        kinds,
        [
            "Signed in",
            "App disconnected",
            "Signed in",
            "Approved an app",
            "Signed in",
            "Sign-in failed"
        ],
        "{html}"
    );
    assert!(!html.contains(&other.worker.email));

    let (_, html) = owner.page("/admin/audit?kind=sign_in_failed").await;
    assert_eq!(whats(&html), ["Sign-in failed"]);
    assert!(html.contains("<option value=\"sign_in_failed\" selected>"));

    let worker_id = {
        let (_, members) = owner.page("/admin/audit").await;
        let at = members
            .find(&format!(">{}</option>", farm.worker.email))
            .unwrap();
        let start = members[..at].rfind("value=\"").unwrap() + 7;
        members[start..start + 36].to_owned()
    };
    let (_, html) = owner.page(&format!("/admin/audit?user={worker_id}")).await;
    assert_eq!(rows(&html), 5, "{html}");
    assert!(!html.contains(&format!(
        "<td data-label=\"Member\">{}</td>",
        farm.owner.email
    )));

    let (_, html) = owner
        .page(&format!("/admin/audit?client={}", tokens.client_id))
        .await;
    assert_eq!(
        whats(&html),
        ["App disconnected", "Approved an app"],
        "{html}"
    );
    assert!(html.contains(&format!("<code>{grant}</code>")));

    let (_, html) = owner.page("/admin/audit?kind=tool_write").await;
    assert!(html.contains("Nothing recorded that matches"));
}

async fn a_tool_write_shows_its_app_and_grant(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    app.add_flocks(&farm, &["Hens A"]).await;
    let tokens = app
        .connect(&farm.worker, "farm:read daily-entries:write")
        .await;
    let grant = app.grant_of(&farm.worker.email).await;
    let owner = app.signed_in(&farm.owner).await;
    let (_, html) = owner.page("/admin/audit?kind=tool_write").await;
    assert!(html.contains("Nothing recorded that matches"), "{html}");

    // A real write through the app, and a read that must leave no row.
    app.tool_ok(
        &tokens.access_token,
        "record_daily_entry",
        json!({"flock": "Hens A", "date": "2025-03-01", "eggs_collected": 900}),
    )
    .await;
    app.tool_ok(&tokens.access_token, "list_flocks", json!({}))
        .await;

    let (_, html) = owner.page("/admin/audit?kind=tool_write").await;
    assert_eq!(whats(&html), ["Wrote through an app"], "{html}");
    assert!(
        html.contains("<td data-label=\"App\"><bdi>Test Assistant</bdi></td>"),
        "{html}"
    );
    assert!(html.contains(&format!("<code>{grant}</code>")), "{html}");
    assert!(html.contains("tool: record_daily_entry"), "{html}");
    assert!(html.contains(&farm.worker.email), "{html}");
}

async fn the_log_is_paged(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let owner = app.signed_in(&farm.owner).await;
    let token = owner.csrf("/admin").await;
    for i in 0..55 {
        let state = if i % 2 == 0 { "off" } else { "on" };
        let response = owner
            .submit(
                "/admin/connected-apps",
                &[("csrf", &token), ("enabled", state)],
            )
            .await;
        assert_eq!(response.status(), 303);
    }
    let (_, first) = owner.page("/admin/audit?kind=admin_action").await;
    assert_eq!(rows(&first), 50);
    let start = first.find("href=\"/admin/audit?").unwrap() + 6;
    let href = first[start..]
        .split('"')
        .next()
        .unwrap()
        .replace("&#38;", "&");
    assert!(href.contains("kind=admin_action"), "{href}");
    let (_, second) = owner.page(&href).await;
    assert_eq!(rows(&second), 5, "{href}");
    assert!(!second.contains("Older entries"));
    // The last page ends with the first toggle (off), then nothing older.
    assert!(
        second.rfind("turned connected apps off").unwrap()
            > second.rfind("turned connected apps on").unwrap()
    );
}
