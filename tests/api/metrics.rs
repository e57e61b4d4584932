//! `/metrics`: requests counted by method, matched route and status, with a
//! latency histogram, per server.

use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(requests_are_counted_by_route_and_status);

async fn requests_are_counted_by_route_and_status(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    // Another server in the same process keeps its own counts.
    let other = TestApp::spawn_on(app.db.clone(), |_| {}).await;
    for _ in 0..3 {
        assert_eq!(app.get("/healthz").await.status(), 200);
    }
    assert_eq!(other.get("/healthz").await.status(), 200);
    assert_eq!(app.get("/login").await.status(), 200);
    assert_eq!(app.get("/no/such/page?code=secret").await.status(), 404);
    let post = app
        .browser
        .post(app.url("/login"))
        .form(&[("csrf", "forged")])
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 403);

    let response = app.get("/metrics").await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = response.text().await.unwrap();
    for line in [
        r#"coop_http_requests_total{method="GET",route="/healthz",status="200"} 3"#,
        r#"coop_http_requests_total{method="GET",route="/login",status="200"} 1"#,
        r#"coop_http_requests_total{method="POST",route="/login",status="403"} 1"#,
        r#"coop_http_requests_total{method="GET",route="unmatched",status="404"} 1"#,
        r#"coop_http_request_duration_seconds_count{method="GET",route="/healthz",status="200"} 3"#,
        r#"coop_http_request_duration_seconds_bucket{method="GET",route="/healthz",status="200",le="+Inf"} 3"#,
        "# TYPE coop_http_request_duration_seconds histogram",
        "# TYPE coop_http_requests_total counter",
    ] {
        assert!(text.contains(line), "missing {line}\n{text}");
    }
    // A path that matched no route never becomes a label of its own.
    assert!(!text.contains("/no/such/page"), "{text}");
    assert!(!text.contains("secret"), "{text}");

    let other_text = other.get("/metrics").await.text().await.unwrap();
    assert!(
        other_text
            .contains(r#"coop_http_requests_total{method="GET",route="/healthz",status="200"} 1"#),
        "{other_text}"
    );
    assert!(!other_text.contains("/login"), "{other_text}");
}
