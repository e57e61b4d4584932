//! `/admin` is for owners: every other role gets a 403 page on every admin
//! page and action, and is never shown the links.

use crate::apps_support::{self, assert_page, csrf, page, post};
use crate::helpers::{Engine, TestApp};
use crate::oauth_client::{audit_count, sign_in_browser};
use crate::on_both_engines;

on_both_engines!(
    only_owners_see_and_use_farm_administration,
    signed_out_people_are_sent_to_sign_in,
);

const PAGES: [&str; 4] = ["/admin", "/admin/members", "/admin/farm", "/admin/audit"];

async fn only_owners_see_and_use_farm_administration(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = apps_support::farm(&app, "Hillside Farm").await;
    for role in ["manager", "viewer"] {
        app.add_user(
            &farm.slug,
            &format!("{role}@hillside-farm.example"),
            role,
            apps_support::PASSWORD,
        )
        .await;
    }

    let owner = sign_in_browser(&app, &farm.owner).await;
    let (_, home) = page(&owner, &app, "/").await;
    assert!(home.contains("href=\"/admin\""), "{home}");
    for path in PAGES {
        let (status, html) = page(&owner, &app, path).await;
        assert_eq!(status, 200, "{path}");
        assert!(html.contains("<title>Farm admin: "), "{path}: {html}");
    }

    let worker_id = {
        let (_, html) = page(&owner, &app, "/admin/members").await;
        let marker = "action=\"/admin/members/";
        let start = html.find(marker).unwrap() + marker.len();
        html[start..start + 36].to_owned()
    };
    for email in [
        farm.worker.email.clone(),
        "manager@hillside-farm.example".to_owned(),
        "viewer@hillside-farm.example".to_owned(),
    ] {
        let user = crate::helpers::TestUser {
            farm: farm.slug.clone(),
            email,
            password: apps_support::PASSWORD.to_owned(),
        };
        let browser = sign_in_browser(&app, &user).await;
        let (_, home) = page(&browser, &app, "/").await;
        assert!(!home.contains("href=\"/admin\""), "{home}");
        for path in PAGES {
            let (status, html) = page(&browser, &app, path).await;
            assert_eq!(status, 403, "{path}");
            assert!(
                html.contains("Only the farm&#39;s owner")
                    || html.contains("Only the farm's owner"),
                "{html}"
            );
        }
        let token = csrf(&browser, &app, "/account/apps").await;
        for (path, form) in [
            ("/admin/connected-apps", vec![("enabled", "off")]),
            (
                &*format!("/admin/members/{worker_id}"),
                vec![("action", "disable")],
            ),
            ("/admin/houses", vec![("name", "Barn 9")]),
        ] {
            let mut form = form.clone();
            form.push(("csrf", &token));
            let response = post(&browser, &app, path, &form).await;
            assert_page(response, 403, "Not allowed").await;
        }
    }
    assert_eq!(audit_count(&app, "admin_action").await, 0);
    let (code, out, _) = app.cli(&["admin", "apps", "list"]).await;
    assert_eq!((code, out.as_str()), (0, ""));
}

async fn signed_out_people_are_sent_to_sign_in(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    for path in PAGES {
        let response = app.get(path).await;
        assert_eq!(response.status(), 303, "{path}");
        assert!(crate::helpers::location(&response).starts_with("/login?return_to="));
    }
}
