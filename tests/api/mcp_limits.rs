//! The limits on `/mcp`: body size, the per-grant rate, `Origin`, batches.

use serde_json::{Value, json};

use crate::helpers::mcp::{BOTH_SCOPES, Wire, request_body};
use crate::helpers::{Engine, TestApp, retry_after};
use crate::on_both_engines;

on_both_engines!(
    a_body_over_64_kib_is_refused_unread,
    a_chunked_body_over_64_kib_is_cut_while_reading,
    each_grant_has_its_request_budget,
    a_person_has_one_budget_over_all_their_apps,
    a_foreign_origin_is_refused_before_the_token,
    batches_are_refused,
    a_refusal_waits_for_the_body_and_keeps_the_connection,
);

async fn a_body_over_64_kib_is_refused_unread(engine: Engine) {
    let (app, owner) = TestApp::with_flocks(engine, "owner").await;
    let tokens = app.connect(&owner, BOTH_SCOPES).await;
    let call = |notes: String| {
        request_body(
            Wire::V2025_11_25,
            9,
            "tools/call",
            json!({"name": "record_daily_entry", "arguments":
                {"flock": "Hens A", "date": "2025-03-01", "eggs_collected": 5, "notes": notes}}),
        )
    };
    let big = call("x".repeat(64 * 1024));
    assert!(big.to_string().len() > 64 * 1024);
    let response = app
        .mcp_send(Some(&tokens.access_token), Wire::V2025_11_25, &big)
        .await;
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600);
    // Refused before the token is even looked at.
    let response = app.mcp_send(None, Wire::V2025_11_25, &big).await;
    assert_eq!(response.status(), 413);
    assert_eq!(app.db_count("select count(*) from daily_entries").await, 0);
    // Exactly the cap, declared in Content-Length, is read and answered.
    let message = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let exact = format!("{}{message}", " ".repeat(64 * 1024 - message.len()));
    assert_eq!(exact.len(), 64 * 1024);
    let response = app
        .mcp_post_with(Some(&tokens.access_token), Wire::V2025_11_25, &exact, &[])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // Just under the cap is read (and then judged by the tool).
    let small = call("x".repeat(1000));
    let response = app
        .mcp_send(Some(&tokens.access_token), Wire::V2025_11_25, &small)
        .await;
    assert_eq!(response.status(), 200);
}

async fn each_grant_has_its_request_budget(engine: Engine) {
    let app = TestApp::spawn_with(engine, |c| c.mcp_rate_limit = 3).await;
    let viewer = app.farm_with_member("viewer").await;
    let tokens = app.connect(&viewer, "farm:read").await;
    for _ in 0..3 {
        assert_eq!(app.list_with(&tokens.access_token).await.status(), 200);
    }
    let response = app.list_with(&tokens.access_token).await;
    assert_eq!(response.status(), 429);
    let retry_after = retry_after(&response);
    assert!((1..=20).contains(&retry_after), "{retry_after}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["error"]["code"], -32600);
    assert_eq!(body["error"]["data"]["retryAfterSeconds"], retry_after);
    // Another grant of the same user has its own budget.
    let other = app.connect(&viewer, "farm:read").await;
    assert_eq!(app.list_with(&other.access_token).await.status(), 200);
}

/// More apps do not mean more requests (issue 13): the subject's budget
/// counts every grant of the person together.
async fn a_person_has_one_budget_over_all_their_apps(engine: Engine) {
    let app = TestApp::spawn_with(engine, |c| {
        c.mcp_rate_limit = 100;
        c.mcp_subject_rate_limit = 4;
    })
    .await;
    let viewer = app.farm_with_member("viewer").await;
    let first = app.connect(&viewer, "farm:read").await;
    let second = app.connect(&viewer, "farm:read").await;
    assert_ne!(first.client_id, second.client_id);
    for tokens in [&first, &second, &first, &second] {
        assert_eq!(app.list_with(&tokens.access_token).await.status(), 200);
    }
    for tokens in [&first, &second] {
        let response = app.list_with(&tokens.access_token).await;
        assert_eq!(response.status(), 429);
        assert!(response.headers().contains_key("retry-after"));
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], -32600);
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("Too many requests for this account"),
            "{message}"
        );
    }
    // Someone else's budget is their own.
    let valley = app.add_farm("Valley Farm").await;
    let password = "another horse battery staple";
    app.add_user(&valley, "viewer@valley.example", "viewer", password)
        .await;
    let other = crate::helpers::TestUser {
        farm: valley,
        email: "viewer@valley.example".to_owned(),
        password: password.to_owned(),
    };
    let theirs = app.connect(&other, "farm:read").await;
    assert_eq!(app.list_with(&theirs.access_token).await.status(), 200);
}

async fn a_foreign_origin_is_refused_before_the_token(engine: Engine) {
    let (app, viewer) = TestApp::with_member(engine, "viewer").await;
    let tokens = app.connect(&viewer, "farm:read").await;
    let body = request_body(Wire::V2025_11_25, 1, "tools/list", Value::Null);
    for token in [Some(tokens.access_token.as_str()), None] {
        for origin in ["http://evil.example", "null", "http://127.0.0.1:1"] {
            let response = app
                .mcp_post(token, Wire::V2025_11_25, &body)
                .header("origin", origin)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 403, "{origin}");
            let json: Value = response.json().await.unwrap();
            assert_eq!(json["error"]["code"], -32600);
        }
    }
    let response = app
        .mcp_post(Some(&tokens.access_token), Wire::V2025_11_25, &body)
        .header("origin", &app.issuer)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

async fn batches_are_refused(engine: Engine) {
    let (app, viewer) = TestApp::with_member(engine, "viewer").await;
    let tokens = app.connect(&viewer, "farm:read").await;
    let one = request_body(Wire::V2025_11_25, 1, "tools/list", Value::Null);
    let batch = json!([one, one]);
    let response = app
        .mcp_send(Some(&tokens.access_token), Wire::V2025_11_25, &batch)
        .await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600);
    assert_eq!(body["id"], Value::Null);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("batches")
    );
}

/// `chunks` sent as a chunked `/mcp` POST (no `Content-Length`, so the cap
/// can only be applied while reading), and the raw answer.
async fn post_chunked(app: &TestApp, token: &str, chunks: &[&[u8]]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = app.address.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&authority).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         MCP-Protocol-Version: 2025-11-25\r\nTransfer-Encoding: chunked\r\n\
         Connection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    for chunk in chunks {
        let _ = stream
            .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .await;
        let _ = stream.write_all(chunk).await;
        let _ = stream.write_all(b"\r\n").await;
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}

async fn a_chunked_body_over_64_kib_is_cut_while_reading(engine: Engine) {
    let (app, viewer) = TestApp::with_member(engine, "viewer").await;
    let tokens = app.connect(&viewer, "farm:read").await;
    let chunk = vec![b' '; 16 * 1024];
    let answer = post_chunked(&app, &tokens.access_token, &[chunk.as_slice(); 5]).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");

    // Exactly 64 KiB, in four chunks, is read whole and answered.
    let message = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let mut body = vec![b' '; 64 * 1024 - message.len()];
    body.extend_from_slice(message);
    let chunks: Vec<&[u8]> = body.chunks(16 * 1024).collect();
    assert_eq!(chunks.len(), 4);
    let answer = post_chunked(&app, &tokens.access_token, &chunks).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("list_flocks"), "{answer}");
}

/// httpx writes a request's head and body separately; a 401 sent before the
/// body arrived used to make the server drop the connection, and the
/// Python SDK's next request on it failed with "server disconnected".
async fn a_refusal_waits_for_the_body_and_keeps_the_connection(engine: Engine) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::spawn(engine).await;
    let authority = app.address.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&authority).await.unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let second = format!("GET /healthz HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    let _ = stream.write_all(second.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(
        answer.contains("HTTP/1.1 200"),
        "the connection was dropped after the 401: {answer}"
    );
}
