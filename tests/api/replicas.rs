//! Two Coop servers on one database, behind one issuer, are one server: a
//! session or token made on one is good on the other, and every kind of
//! revocation made through one is refused on the other's very next
//! request. (On SQLite both share the file, as two processes on one host
//! would; on PostgreSQL this is the scale-out setup docs/operations.md
//! describes.)

use std::sync::Arc;

use coop::config::Issuer;

use crate::helpers::oauth::{self, Tokens};
use crate::helpers::{Browser, Engine, Farm, TestApp};
use crate::on_both_engines;

on_both_engines!(
    a_session_made_on_one_replica_works_on_the_other,
    a_token_minted_by_one_replica_is_accepted_by_the_other,
    a_disconnect_through_one_replica_is_refused_on_the_other,
    an_epoch_move_through_one_replica_is_refused_on_the_other,
    a_user_disabled_through_one_replica_is_refused_on_the_other,
    a_farm_suspended_by_the_operator_is_refused_on_both,
    connected_apps_off_through_one_replica_is_refused_on_the_other,
    a_withdrawn_signing_key_is_refused_on_both_at_once,
);

/// `coop keys retire KID --now` (issue 13): both replicas had verified the
/// token (so its signature is in each one's cache); the very next call on
/// either is refused, because the per-call store check reads the withdrawal.
async fn a_withdrawn_signing_key_is_refused_on_both_at_once(engine: Engine) {
    let (a, b) = replicas(engine).await;
    let (_, tokens) = connected(&a).await;
    for replica in [&a, &b] {
        let response = replica.mcp_list(&tokens.access_token).await;
        assert_eq!(response.status(), 200);
    }
    let kid = oauth::kid(&tokens.access_token);
    a.rotate_keys().await;
    // Rotation alone leaves the old key verifying (its tokens live on).
    let response = b.mcp_list(&tokens.access_token).await;
    assert_eq!(response.status(), 200);

    let (code, out, err) = a.cli(&["keys", "retire", &kid, "--now"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("withdrawn"), "{out}");
    for replica in [&b, &a] {
        let response = replica.mcp_list(&tokens.access_token).await;
        assert_eq!(response.status(), 401);
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            challenge.ends_with(r#"error="invalid_token""#),
            "{challenge}"
        );
    }
}

/// Replica `a`, and `b` on the same database with `a`'s issuer.
async fn replicas(engine: Engine) -> (TestApp, TestApp) {
    let a = TestApp::spawn(engine).await;
    let issuer = Issuer::parse(&a.issuer).unwrap();
    let b = TestApp::spawn_on(Arc::clone(&a.db), |config| config.issuer = Some(issuer)).await;
    assert_eq!(a.issuer, b.issuer);
    assert_ne!(a.address, b.address);
    (a, b)
}

/// A farm, and the worker's app connected through replica `a`.
async fn connected(a: &TestApp) -> (Farm, Tokens) {
    let farm = a.farm("Hillside Farm").await;
    let tokens = a.connect(&farm.worker, "farm:read").await;
    (farm, tokens)
}

/// A browser signed in on `a`, carrying its session cookie to `b` too.
async fn shared_browser(a: &TestApp, user: &crate::helpers::TestUser) -> Browser {
    // Cookies are per host, not per port: the jar sends the session made on
    // one replica's port to the other's, as a load balancer's single origin
    // would.
    a.signed_in(user).await
}

async fn a_session_made_on_one_replica_works_on_the_other(engine: Engine) {
    let (a, b) = replicas(engine).await;
    let farm = a.farm("Hillside Farm").await;
    let browser = shared_browser(&a, &farm.owner).await;
    let (status, html) = browser.on(&b).page("/").await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("Hillside Farm"));
    // A form made on one is accepted by the other (the CSRF token lives in
    // the shared session).
    let token = browser.on(&a).csrf("/admin").await;
    assert_eq!(switch_apps(&browser.on(&b), &token, "off").await, 303);
}

async fn a_token_minted_by_one_replica_is_accepted_by_the_other(engine: Engine) {
    let (a, b) = replicas(engine).await;
    let (_, mut tokens) = connected(&a).await;
    // The refresh token minted by `a` is redeemed at `b`, and `b`'s at `a`.
    b.assert_works(&mut tokens).await;
    a.assert_works(&mut tokens).await;
    // Both publish the same signing key.
    let jwks = |app: &TestApp| {
        let url = app.url("/jwks.json");
        async move { reqwest::get(url).await.unwrap().text().await.unwrap() }
    };
    assert_eq!(jwks(&a).await, jwks(&b).await);
}

async fn a_disconnect_through_one_replica_is_refused_on_the_other(engine: Engine) {
    let (a, b) = replicas(engine).await;
    let (farm, tokens) = connected(&a).await;
    let browser = shared_browser(&a, &farm.worker).await;
    let grant = a.grant_of(&farm.worker.email).await;
    let path = format!("/account/apps/{grant}/disconnect");
    let token = browser.on(&a).csrf(&path).await;
    assert_eq!(
        browser
            .on(&a)
            .submit(&path, &[("csrf", &token)])
            .await
            .status(),
        303
    );
    b.assert_cut_off(&tokens).await;
}

/// The owner's `action` on the worker's member form, through `app`: the
/// worker's id read off the members page, the form posted; its status.
async fn act_on_worker(owner: &Browser, app: &TestApp, farm: &Farm, action: &str) -> u16 {
    let (_, html) = owner.on(app).page("/admin/members").await;
    let heading = html.find(&format!(">{}", farm.worker.email)).unwrap();
    let marker = "action=\"/admin/members/";
    let start = html[heading..].find(marker).unwrap() + heading + marker.len();
    let id = &html[start..start + 36];
    let token = owner.on(app).csrf("/admin/members").await;
    let form = [("csrf", token.as_str()), ("action", action)];
    let path = format!("/admin/members/{id}");
    owner.on(app).submit(&path, &form).await.status().as_u16()
}

/// The farm's connected-apps switch turned `enabled` through `browser`
/// with the CSRF `token`; its status.
async fn switch_apps(browser: &Browser, token: &str, enabled: &str) -> u16 {
    let form = [("csrf", token), ("enabled", enabled)];
    let response = browser.submit("/admin/connected-apps", &form).await;
    response.status().as_u16()
}

async fn an_epoch_move_through_one_replica_is_refused_on_the_other(engine: Engine) {
    let (a, b) = replicas(engine).await;
    let (farm, tokens) = connected(&a).await;
    let worker = shared_browser(&b, &farm.worker).await;
    assert_eq!(worker.on(&b).page("/").await.0, 200);
    let owner = shared_browser(&a, &farm.owner).await;
    let status = act_on_worker(&owner, &a, &farm, "sign_out_everywhere").await;
    assert_eq!(status, 303);
    b.assert_cut_off(&tokens).await;
    assert_eq!(worker.on(&b).page("/").await.0, 303);
}

async fn a_user_disabled_through_one_replica_is_refused_on_the_other(engine: Engine) {
    let (a, b) = replicas(engine).await;
    let (farm, tokens) = connected(&a).await;
    let worker = shared_browser(&b, &farm.worker).await;
    let owner = shared_browser(&a, &farm.owner).await;
    assert_eq!(act_on_worker(&owner, &a, &farm, "disable").await, 303);
    b.assert_cut_off(&tokens).await;
    assert_eq!(worker.on(&b).page("/").await.0, 303);
}

async fn a_farm_suspended_by_the_operator_is_refused_on_both(engine: Engine) {
    let (a, b) = replicas(engine).await;
    let (farm, mut tokens) = connected(&a).await;
    a.admin(&["farm", "suspend", &farm.slug]).await;
    a.assert_cut_off(&tokens).await;
    b.assert_cut_off(&tokens).await;
    b.admin(&["farm", "resume", &farm.slug]).await;
    b.assert_works(&mut tokens).await;
}

async fn connected_apps_off_through_one_replica_is_refused_on_the_other(engine: Engine) {
    let (a, b) = replicas(engine).await;
    let (farm, mut tokens) = connected(&a).await;
    let owner = shared_browser(&a, &farm.owner).await;
    let token = owner.on(&a).csrf("/admin").await;
    assert_eq!(switch_apps(&owner.on(&a), &token, "off").await, 303);
    b.assert_cut_off(&tokens).await;
    assert_eq!(switch_apps(&owner.on(&b), &token, "on").await, 303);
    a.assert_works(&mut tokens).await;
}
