//! Sessions only for people who have one (issue 13, threat 34): anonymous
//! pages write no session row (a signed-out form's CSRF token lives in a
//! signed cookie), expired rows are purged, and the table holds only hashes
//! of session ids.

use coop::storage::Store;
use coop::storage::sessions::SessionBackend;

use crate::helpers::{Engine, TestApp, cookie_jar, form_value, set_cookie, set_cookie_header};
use crate::on_both_engines;

on_both_engines!(
    a_thousand_anonymous_page_loads_add_no_session_row,
    a_session_found_in_the_database_cannot_be_used_as_a_cookie,
    expired_sessions_are_purged,
    a_signed_out_form_needs_the_token_of_its_own_signed_cookie,
    behind_an_https_issuer_every_cookie_is_secure_and_host_only,
);

async fn sessions(app: &TestApp) -> i64 {
    app.db_count("select count(*) from sessions").await
}

async fn a_thousand_anonymous_page_loads_add_no_session_row(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    let first = app.get("/login").await;
    assert_eq!(first.status(), 200);
    assert_eq!(set_cookie(&first, "coop_session"), None);
    assert!(set_cookie(&first, "coop_form").is_some());
    // Fresh visitors and one returning visitor, on every page a signed-out
    // browser reaches, eight at a time.
    let paths = [
        "/login",
        "/",
        "/account/apps",
        "/account/password",
        "/admin",
    ];
    let visitor = cookie_jar();
    let loads = futures::stream::iter(0..1000).map(|n| {
        let client = if n % 2 == 0 {
            visitor.clone()
        } else {
            cookie_jar()
        };
        let url = app.url(&format!("{}?visit={n}", paths[n % paths.len()]));
        async move {
            let response = client.get(url).send().await.unwrap();
            assert!(
                response.status() == 200 || response.status() == 303,
                "{}",
                response.status()
            );
            assert_eq!(set_cookie(&response, "coop_session"), None);
        }
    });
    use futures::StreamExt;
    loads.buffer_unordered(8).collect::<Vec<()>>().await;
    assert_eq!(sessions(&app).await, 0);
    // A wrong password makes none either; the right one makes the first.
    assert_eq!(
        app.sign_in(&user.email, "a wrong guess").await.status(),
        401
    );
    assert_eq!(sessions(&app).await, 0);
    assert_eq!(app.sign_in(&user.email, &user.password).await.status(), 303);
    assert_eq!(sessions(&app).await, 1);
}

async fn a_session_found_in_the_database_cannot_be_used_as_a_cookie(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    let response = app.sign_in(&user.email, &user.password).await;
    let cookie = set_cookie(&response, "coop_session").expect("a session cookie at sign-in");
    let stored = app.db_text("select id_hash from sessions").await;
    let id = cookie.trim_start_matches("coop_session=");
    assert_ne!(stored, id);
    assert!(!stored.contains(id), "the id is not in the row");
    let data = app.db_text("select data from sessions").await;
    assert!(!data.contains(id), "nor in its data");

    let as_cookie = |value: String| {
        let app = &app;
        async move {
            crate::helpers::no_cookies()
                .get(app.url("/"))
                .header("cookie", format!("coop_session={value}"))
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    // What the database holds signs no one in.
    assert_eq!(as_cookie(stored).await, 303);
    // The cookie itself does.
    assert_eq!(as_cookie(id.to_owned()).await, 200);
}

async fn expired_sessions_are_purged(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    assert_eq!(app.sign_in(&user.email, &user.password).await.status(), 303);
    assert_eq!(sessions(&app).await, 1);
    let store = Store::connect(&app.db.url).await.unwrap();
    let backend = SessionBackend::new(store);
    let now = time::OffsetDateTime::now_utc();
    assert_eq!(backend.delete_expired(now).await.unwrap(), 0);
    assert_eq!(app.get("/").await.status(), 200);
    // Twelve hours without a request: the row is deleted.
    let later = now + time::Duration::hours(12) + time::Duration::minutes(1);
    assert_eq!(backend.delete_expired(later).await.unwrap(), 1);
    assert_eq!(sessions(&app).await, 0);
    assert_eq!(app.get("/").await.status(), 303);
}

async fn a_signed_out_form_needs_the_token_of_its_own_signed_cookie(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    // Two visitors' login pages: each a form cookie and its token.
    let page = || async {
        let response = reqwest::Client::new()
            .get(app.url("/login"))
            .send()
            .await
            .unwrap();
        let cookie = set_cookie(&response, "coop_form").unwrap();
        let csrf = form_value(&response.text().await.unwrap(), "csrf").unwrap();
        (cookie, csrf)
    };
    let (cookie, csrf) = page().await;
    let (other_cookie, other_csrf) = page().await;
    assert_ne!(csrf, other_csrf);
    let post = |cookie: Option<String>, csrf: String| {
        let app = &app;
        let user = &user;
        async move {
            let mut request = crate::helpers::no_cookies().post(app.url("/login"));
            if let Some(cookie) = cookie {
                request = request.header("cookie", cookie);
            }
            request
                .form(&user.login_form(&csrf))
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    // Without its cookie, a token is nothing.
    assert_eq!(post(None, csrf.clone()).await, 403);
    // Another visitor's cookie does not vouch for this token.
    assert_eq!(post(Some(other_cookie.clone()), csrf.clone()).await, 403);
    // A cookie made up to carry the token, or altered, is not ours.
    let (issued, rest) = cookie
        .trim_start_matches("coop_form=")
        .split_once('.')
        .unwrap();
    let (_, tag) = rest.split_once('.').unwrap();
    let forged = format!("coop_form={issued}.{}.{tag}", other_csrf);
    assert_eq!(post(Some(forged), other_csrf.clone()).await, 403);
    let made_up = format!("coop_form={issued}.{csrf}.AAAA");
    assert_eq!(post(Some(made_up), csrf.clone()).await, 403);
    assert_eq!(post(Some(cookie.clone()), String::new()).await, 403);
    // Stale after twelve hours.
    app.clock.advance(time::Duration::hours(12));
    assert_eq!(post(Some(cookie.clone()), csrf.clone()).await, 403);
    let (fresh_cookie, fresh_csrf) = page().await;
    // Its own cookie and token sign in, and nothing was written before.
    assert_eq!(sessions(&app).await, 0);
    assert_eq!(post(Some(fresh_cookie), fresh_csrf).await, 303);
    assert_eq!(sessions(&app).await, 1);
}

/// The form, device and session cookies of an https issuer: `Secure`,
/// `__Host-` (Path=/, no Domain), so neither a sibling host nor plain http
/// can set or read them.
async fn behind_an_https_issuer_every_cookie_is_secure_and_host_only(engine: Engine) {
    let app = TestApp::spawn_with(engine, |config| {
        config.issuer = Some(coop::config::Issuer::parse("https://coop.example").unwrap());
    })
    .await;
    let user = app.farm_with_member("owner").await;
    let client = crate::helpers::no_cookies();
    let page = client.get(app.url("/login")).send().await.unwrap();
    let attributes = |response: &reqwest::Response, name: &str| -> String {
        set_cookie_header(response, name).unwrap_or_else(|| panic!("no {name} cookie"))
    };
    let form = attributes(&page, "__Host-coop_form");
    let csrf = form_value(&page.text().await.unwrap(), "csrf").unwrap();
    let signed_in = client
        .post(app.url("/login"))
        .header("cookie", form.split(';').next().unwrap())
        .form(&user.login_form(&csrf))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 303);
    let device = attributes(&signed_in, "__Host-coop_device");
    let session = attributes(&signed_in, "__Host-coop_session");
    for cookie in [&form, &device, &session] {
        for attribute in ["Secure", "HttpOnly", "Path=/"] {
            assert!(cookie.contains(attribute), "{attribute}: {cookie}");
        }
        assert!(!cookie.contains("Domain"), "{cookie}");
    }
    assert!(form.contains("SameSite=Lax"), "{form}");
    assert!(device.contains("SameSite=Strict"), "{device}");
    // The plain names are not honoured behind https.
    let plain = form
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("__Host-");
    let refused = client
        .post(app.url("/login"))
        .header("cookie", plain)
        .form(&user.login_form(&csrf))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
}
