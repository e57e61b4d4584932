//! `/healthz`, `/readyz` and the headers every page carries.

use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(health_and_readiness_answer, pages_carry_security_headers);

async fn health_and_readiness_answer(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let health = app.get("/healthz").await;
    assert_eq!(health.status(), 200);
    assert!(health.headers().contains_key("x-request-id"));
    assert_eq!(app.get("/readyz").await.status(), 200);
}

async fn pages_carry_security_headers(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let page = app.get("/login").await;
    assert_eq!(page.status(), 200);
    let header = |name: &str| {
        page.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let csp = header("content-security-policy");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(header("x-frame-options"), "DENY");
    assert_eq!(header("x-content-type-options"), "nosniff");
    assert_eq!(header("referrer-policy"), "same-origin");
    let cookie = header("set-cookie");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Lax"), "{cookie}");
}
