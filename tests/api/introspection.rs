//! Token introspection (RFC 7662, issue 12): only a client registered for
//! it may ask, and a token is active only while `/mcp` would take it.

use serde_json::{Value, json};

use crate::automations::{add_automation, automation_token};
use crate::helpers::{Engine, TestApp};
use crate::mcp_support::{BOTH_SCOPES, add_member, admin, connect, farm_with_flocks};
use crate::oauth_client::{self, assert_oauth_error, claims};
use crate::on_both_engines;

on_both_engines!(
    a_stranger_or_an_unregistered_client_is_refused,
    an_active_token_is_described,
    each_kind_of_revocation_answers_inactive,
    refresh_tokens_are_inactive_for_anyone_but_their_client,
    introspection_is_rate_limited,
);

/// A client registered for introspection: (client_id, secret).
async fn introspector(app: &TestApp) -> (String, String) {
    let (code, out, err) = app
        .cli(&[
            "admin",
            "client",
            "add",
            "--name",
            "Gateway",
            "--introspection",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let field = |name: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .unwrap()
            .trim()
            .to_owned()
    };
    (field("client_id"), field("client_secret"))
}

async fn introspect_as(
    app: &TestApp,
    client: Option<(&str, &str)>,
    token: &str,
) -> reqwest::Response {
    let request = reqwest::Client::new().post(app.url("/introspect"));
    let request = match client {
        Some((id, secret)) => request.basic_auth(id, Some(secret)),
        None => request,
    };
    request.form(&[("token", token)]).send().await.unwrap()
}

async fn answer(app: &TestApp, gateway: &(String, String), token: &str) -> Value {
    let response = introspect_as(app, Some((&gateway.0, &gateway.1)), token).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    response.json().await.unwrap()
}

async fn a_stranger_or_an_unregistered_client_is_refused(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let user = farm_with_flocks(&app, "owner").await;
    let tokens = connect(&app, &user, BOTH_SCOPES).await;
    let token = tokens.access_token.as_str();

    // No client authentication at all.
    let response = introspect_as(&app, None, token).await;
    assert_oauth_error(response, 401, "invalid_client").await;
    // A public client naming itself.
    let response = reqwest::Client::new()
        .post(app.url("/introspect"))
        .form(&[("client_id", tokens.client_id.as_str()), ("token", token)])
        .send()
        .await
        .unwrap();
    assert_oauth_error(response, 401, "invalid_client").await;
    // A confidential client not registered for introspection.
    let (code, out, _) = app
        .cli(&[
            "admin",
            "client",
            "add",
            "--name",
            "Web",
            "--redirect-uri",
            "https://web.example/cb",
            "--confidential",
        ])
        .await;
    assert_eq!(code, 0);
    let id = out
        .lines()
        .find_map(|l| l.strip_prefix("client_id: "))
        .unwrap()
        .trim();
    let secret = out
        .lines()
        .find_map(|l| l.strip_prefix("client_secret: "))
        .unwrap()
        .trim();
    let response = introspect_as(&app, Some((id, secret)), token).await;
    assert_eq!(
        response.headers()["www-authenticate"],
        "Basic realm=\"coop\""
    );
    assert_oauth_error(response, 401, "invalid_client").await;
    // The introspector with a wrong secret.
    let gateway = introspector(&app).await;
    let response = introspect_as(&app, Some((&gateway.0, "wrong")), token).await;
    assert_oauth_error(response, 401, "invalid_client").await;
    // An automation is not an introspector either.
    let (auto_id, auto_secret) =
        add_automation(&app, &user.farm, "Scale", "worker", "farm:read", None).await;
    let response = introspect_as(&app, Some((&auto_id, &auto_secret)), token).await;
    assert_oauth_error(response, 401, "invalid_client").await;
    // No token parameter.
    let response = reqwest::Client::new()
        .post(app.url("/introspect"))
        .basic_auth(&gateway.0, Some(&gateway.1))
        .form(&[("token_type_hint", "access_token")])
        .send()
        .await
        .unwrap();
    assert_oauth_error(response, 400, "invalid_request").await;
}

async fn an_active_token_is_described(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let user = farm_with_flocks(&app, "owner").await;
    let tokens = connect(&app, &user, BOTH_SCOPES).await;
    let gateway = introspector(&app).await;
    let body = answer(&app, &gateway, &tokens.access_token).await;
    let c = claims(&tokens.access_token);
    assert_eq!(body["active"], true, "{body}");
    assert_eq!(body["scope"], BOTH_SCOPES);
    assert_eq!(body["client_id"], tokens.client_id.as_str());
    assert_eq!(body["sub"], c["sub"]);
    assert_eq!(body["aud"], format!("{}/mcp", app.issuer));
    assert_eq!(body["iss"], app.issuer.as_str());
    assert_eq!(body["exp"], c["exp"]);
    assert_eq!(body["iat"], c["iat"]);
    assert_eq!(body["token_type"], "Bearer");

    // An automation's token: its subject is the automation.
    let (auto_id, auto_secret) = add_automation(
        &app,
        &user.farm,
        "Scale",
        "worker",
        "daily-entries:write",
        None,
    )
    .await;
    let token = automation_token(&app, &auto_id, &auto_secret).await;
    let body = answer(&app, &gateway, &token).await;
    assert_eq!(body["active"], true, "{body}");
    assert_eq!(body["sub"], auto_id.as_str());
    assert_eq!(body["client_id"], auto_id.as_str());
    assert_eq!(body["scope"], "daily-entries:write");

    // Garbage is simply inactive, with nothing else said.
    for junk in ["not-a-token", "a.b.c"] {
        assert_eq!(answer(&app, &gateway, junk).await, json!({"active": false}));
    }
}

async fn each_kind_of_revocation_answers_inactive(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let user = farm_with_flocks(&app, "owner").await;
    let gateway = introspector(&app).await;
    let inactive = json!({"active": false});

    // The access token revoked on its own (RFC 7009).
    let tokens = connect(&app, &user, BOTH_SCOPES).await;
    let response = reqwest::Client::new()
        .post(app.url("/revoke"))
        .form(&[
            ("client_id", tokens.client_id.as_str()),
            ("token", tokens.access_token.as_str()),
            ("token_type_hint", "access_token"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        answer(&app, &gateway, &tokens.access_token).await,
        inactive,
        "revoked token"
    );

    // The grant ended (its refresh token revoked: disconnected).
    let tokens = connect(&app, &user, BOTH_SCOPES).await;
    assert_eq!(
        answer(&app, &gateway, &tokens.access_token).await["active"],
        true
    );
    let response = oauth_client::revoke(&app, &tokens.client_id, &tokens.refresh_token).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        answer(&app, &gateway, &tokens.access_token).await,
        inactive,
        "grant revoked"
    );

    // Credential epoch moved (sign out everywhere), user disabled.
    for (stop, start) in [
        (
            vec!["user", "sign-out-everywhere", user.email.as_str()],
            None,
        ),
        (
            vec!["user", "disable", user.email.as_str()],
            Some(vec!["user", "enable", user.email.as_str()]),
        ),
    ] {
        let tokens = connect(&app, &user, BOTH_SCOPES).await;
        assert_eq!(
            answer(&app, &gateway, &tokens.access_token).await["active"],
            true
        );
        admin(&app, &stop).await;
        assert_eq!(
            answer(&app, &gateway, &tokens.access_token).await,
            inactive,
            "{stop:?}"
        );
        if let Some(start) = start {
            admin(&app, &start).await;
        }
    }

    // Farm suspended, connected apps off: for a person's token and an
    // automation's; and the automation disabled.
    let (auto_id, auto_secret) =
        add_automation(&app, &user.farm, "Scale", "worker", "farm:read", None).await;
    // Another member: sign-ins are throttled per account.
    let other = add_member(&app, &user.farm, "m@hillside.example", "manager", None).await;
    for (stop, start) in [
        (
            vec!["farm", "suspend", user.farm.as_str()],
            vec!["farm", "resume", user.farm.as_str()],
        ),
        (
            vec!["farm", "connected-apps", user.farm.as_str(), "off"],
            vec!["farm", "connected-apps", user.farm.as_str(), "on"],
        ),
    ] {
        let tokens = connect(&app, &other, BOTH_SCOPES).await;
        let automation = automation_token(&app, &auto_id, &auto_secret).await;
        admin(&app, &stop).await;
        assert_eq!(
            answer(&app, &gateway, &tokens.access_token).await,
            inactive,
            "{stop:?}"
        );
        assert_eq!(
            answer(&app, &gateway, &automation).await,
            inactive,
            "{stop:?}"
        );
        admin(&app, &start).await;
        // Back on: the same tokens are active again (nothing cached).
        assert_eq!(answer(&app, &gateway, &automation).await["active"], true);
    }
    let automation = automation_token(&app, &auto_id, &auto_secret).await;
    admin(&app, &["automation", "disable", &auto_id]).await;
    assert_eq!(
        answer(&app, &gateway, &automation).await,
        inactive,
        "automation disabled"
    );
}

async fn refresh_tokens_are_inactive_for_anyone_but_their_client(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let user = farm_with_flocks(&app, "owner").await;
    let gateway = introspector(&app).await;
    let tokens = connect(&app, &user, BOTH_SCOPES).await;
    for hint in ["refresh_token", "access_token"] {
        let response = reqwest::Client::new()
            .post(app.url("/introspect"))
            .basic_auth(&gateway.0, Some(&gateway.1))
            .form(&[
                ("token", tokens.refresh_token.as_str()),
                ("token_type_hint", hint),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body, json!({"active": false}), "{hint}");
    }
}

async fn introspection_is_rate_limited(engine: Engine) {
    let app = TestApp::spawn_with(engine, |config| config.introspection_rate_limit = 2).await;
    let gateway = introspector(&app).await;
    for _ in 0..2 {
        assert_eq!(answer(&app, &gateway, "x").await["active"], false);
    }
    let response = introspect_as(&app, Some((&gateway.0, &gateway.1)), "x").await;
    assert_eq!(response.status(), 429);
    assert!(response.headers().get("retry-after").is_some());
}
