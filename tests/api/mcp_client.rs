//! A real MCP client (rmcp's, over streamable HTTP with a bearer token) on
//! each revision it speaks: the 2025 handshake on 2025-06-18 and
//! 2025-11-25, `server/discover` and per-request metadata on 2026-07-28.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

use crate::helpers::mcp::BOTH_SCOPES;
use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(the_rmcp_client_works_on_every_revision);

async fn client(
    app: &TestApp,
    token: &str,
    version: ProtocolVersion,
) -> RunningService<RoleClient, ClientConfig> {
    let config = StreamableHttpClientTransportConfig::with_uri(app.url("/mcp"))
        .auth_header(token.to_owned());
    let transport = StreamableHttpClientTransport::from_config(config);
    let info = ClientConfig::default().with_protocol_version(version.clone());
    if version == ProtocolVersion::V_2026_07_28 {
        info.serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![version],
            },
        )
        .await
        .unwrap()
    } else {
        info.serve(transport).await.unwrap()
    }
}

async fn the_rmcp_client_works_on_every_revision(engine: Engine) {
    let (app, worker) = TestApp::with_flocks(engine, "worker").await;
    let tokens = app.connect(&worker, BOTH_SCOPES).await;
    for (i, version) in [
        ProtocolVersion::V_2025_06_18,
        ProtocolVersion::V_2025_11_25,
        ProtocolVersion::V_2026_07_28,
    ]
    .into_iter()
    .enumerate()
    {
        let client = client(&app, &tokens.access_token, version.clone()).await;
        let mut names: Vec<String> = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name.into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "get_flock",
                "list_daily_entries",
                "list_egg_lots",
                "list_flocks",
                "mortality_report",
                "production_summary",
                "record_daily_entry"
            ],
            "{version}"
        );
        let flocks = client
            .call_tool(CallToolRequestParams::new("list_flocks"))
            .await
            .unwrap();
        assert_ne!(flocks.is_error, Some(true), "{version}");
        let listed = flocks.structured_content.unwrap();
        assert_eq!(listed["flocks"].as_array().unwrap().len(), 4, "{version}");

        let mut write = CallToolRequestParams::new("record_daily_entry");
        write.arguments = json!({"flock": "Hens A", "date": format!("2025-03-0{}", i + 1),
            "eggs_collected": 900})
        .as_object()
        .cloned();
        let written = client.call_tool(write).await.unwrap();
        assert_eq!(
            written.structured_content.unwrap()["change"],
            "created",
            "{version}"
        );

        // A domain refusal is a tool result with isError, not a protocol error.
        let mut missing = CallToolRequestParams::new("get_flock");
        missing.arguments = json!({"flock": "Nobody"}).as_object().cloned();
        let refused = client.call_tool(missing).await.unwrap();
        assert_eq!(refused.is_error, Some(true), "{version}");
        client.cancel().await.unwrap();
    }
}
