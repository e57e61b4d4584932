//! Token introspection (RFC 7662, issue 12): only a client registered for
//! it may ask, and a token is active only while `/mcp` would take it.

use coop::oauth::token::REFRESH_TTL;
use serde_json::{Value, json};

use crate::automations::{add_automation, automation_token};
use crate::helpers::mcp::BOTH_SCOPES;
use crate::helpers::oauth::{REDIRECT_URI, TokenRequest, assert_oauth_error, claims};
use crate::helpers::{Engine, TestApp, TestUser};
use crate::on_both_engines;

on_both_engines!(
    a_stranger_or_an_unregistered_client_is_refused,
    an_active_token_is_described,
    each_kind_of_revocation_answers_inactive,
    refresh_tokens_are_inactive_for_anyone_but_their_client,
    a_refresh_token_is_active_for_its_own_client_while_usable,
    a_refresh_token_is_inactive_from_its_expiry_second,
    introspection_is_rate_limited,
);

/// A client registered for introspection: (client_id, secret).
async fn answer(app: &TestApp, gateway: &(String, String), token: &str) -> Value {
    let response = app
        .introspect_as(Some((&gateway.0, &gateway.1)), token)
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    response.json().await.unwrap()
}

async fn a_stranger_or_an_unregistered_client_is_refused(engine: Engine) {
    let (app, user) = TestApp::with_flocks(engine, "owner").await;
    let tokens = app.connect(&user, BOTH_SCOPES).await;
    let token = tokens.access_token.as_str();

    // No client authentication at all.
    let response = app.introspect_as(None, token).await;
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
    let web = app
        .add_client(&[
            "--name",
            "Web",
            "--redirect-uri",
            "https://web.example/cb",
            "--confidential",
        ])
        .await;
    let (id, secret) = (web.field("client_id"), web.field("client_secret"));
    let response = app.introspect_as(Some((&id, &secret)), token).await;
    assert_eq!(
        response.headers()["www-authenticate"],
        "Basic realm=\"coop\""
    );
    assert_oauth_error(response, 401, "invalid_client").await;
    // The introspector with a wrong secret.
    let gateway = app.introspector().await;
    let response = app.introspect_as(Some((&gateway.0, "wrong")), token).await;
    assert_oauth_error(response, 401, "invalid_client").await;
    // An automation is not an introspector either.
    let (auto_id, auto_secret) =
        add_automation(&app, &user.farm, "Scale", "worker", "farm:read", None).await;
    let response = app
        .introspect_as(Some((&auto_id, &auto_secret)), token)
        .await;
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
    let (app, user) = TestApp::with_flocks(engine, "owner").await;
    let tokens = app.connect(&user, BOTH_SCOPES).await;
    let gateway = app.introspector().await;
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
    let (app, user) = TestApp::with_flocks(engine, "owner").await;
    let gateway = app.introspector().await;
    let inactive = json!({"active": false});

    // The access token revoked on its own (RFC 7009).
    let tokens = app.connect(&user, BOTH_SCOPES).await;
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
    let tokens = app.connect(&user, BOTH_SCOPES).await;
    assert_eq!(
        answer(&app, &gateway, &tokens.access_token).await["active"],
        true
    );
    let response = app.revoke(&tokens.client_id, &tokens.refresh_token).await;
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
        let tokens = app.connect(&user, BOTH_SCOPES).await;
        assert_eq!(
            answer(&app, &gateway, &tokens.access_token).await["active"],
            true
        );
        app.admin(&stop).await;
        assert_eq!(
            answer(&app, &gateway, &tokens.access_token).await,
            inactive,
            "{stop:?}"
        );
        if let Some(start) = start {
            app.admin(&start).await;
        }
    }

    // Farm suspended, connected apps off: for a person's token and an
    // automation's; and the automation disabled.
    let (auto_id, auto_secret) =
        add_automation(&app, &user.farm, "Scale", "worker", "farm:read", None).await;
    // Another member: sign-ins are throttled per account.
    let other = app
        .add_member(&user.farm, "m@hillside.example", "manager", None)
        .await;
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
        let tokens = app.connect(&other, BOTH_SCOPES).await;
        let automation = automation_token(&app, &auto_id, &auto_secret).await;
        app.admin(&stop).await;
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
        app.admin(&start).await;
        // Back on: the same tokens are active again (nothing cached).
        assert_eq!(answer(&app, &gateway, &automation).await["active"], true);
    }
    let automation = automation_token(&app, &auto_id, &auto_secret).await;
    app.admin(&["automation", "disable", &auto_id]).await;
    assert_eq!(
        answer(&app, &gateway, &automation).await,
        inactive,
        "automation disabled"
    );
}

async fn refresh_tokens_are_inactive_for_anyone_but_their_client(engine: Engine) {
    let (app, user) = TestApp::with_flocks(engine, "owner").await;
    let gateway = app.introspector().await;
    let tokens = app.connect(&user, BOTH_SCOPES).await;
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

/// A confidential client that also introspects (a gateway that is a
/// client), and a refresh token it got for `user`: (client, token response).
async fn introspecting_client_with_a_refresh_token(
    app: &TestApp,
    user: &TestUser,
) -> ((String, String), Value) {
    let added = app
        .add_client(&[
            "--name",
            "Gateway app",
            "--redirect-uri",
            REDIRECT_URI,
            "--introspection",
        ])
        .await;
    let own = (added.field("client_id"), added.field("client_secret"));
    let (code, verifier) = app.approved_code_for(user, &own.0, "farm:read").await;
    let response = app
        .token(&TokenRequest::confidential_code(&code, &verifier).basic(&own.0, &own.1))
        .await;
    assert_eq!(response.status(), 200);
    (own, response.json().await.unwrap())
}

async fn a_refresh_token_is_active_for_its_own_client_while_usable(engine: Engine) {
    let (app, user) = TestApp::with_flocks(engine, "owner").await;
    let (own, body) = introspecting_client_with_a_refresh_token(&app, &user).await;
    let refresh = body["refresh_token"].as_str().unwrap().to_owned();

    let mine = answer(&app, &own, &refresh).await;
    assert_eq!(mine["active"], true, "{mine}");
    assert_eq!(mine["client_id"], own.0.as_str());
    assert_eq!(mine["scope"], "farm:read");
    assert_eq!(
        mine["sub"],
        claims(body["access_token"].as_str().unwrap())["sub"]
    );
    // Its own expiry, a refresh token's lifetime after it was issued a
    // moment ago.
    let lifetime_from_now = (app.clock.now() + REFRESH_TTL).unix_timestamp();
    let exp = mine["exp"].as_i64().unwrap();
    assert!(
        (lifetime_from_now - 5..=lifetime_from_now).contains(&exp),
        "{mine}"
    );
    assert!(mine.get("token_type").is_none(), "{mine}");
    // Another introspector learns nothing about it.
    let other = app.introspector().await;
    assert_eq!(
        answer(&app, &other, &refresh).await,
        json!({"active": false})
    );
    // Spent by a refresh: inactive for its client too.
    let spend = TokenRequest::fields(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh.as_str()),
    ]);
    let response = app.token(&spend.basic(&own.0, &own.1)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(answer(&app, &own, &refresh).await, json!({"active": false}));
}

async fn a_refresh_token_is_inactive_from_its_expiry_second(engine: Engine) {
    let (app, user) = TestApp::with_flocks(engine, "owner").await;
    let (own, body) = introspecting_client_with_a_refresh_token(&app, &user).await;
    let refresh = body["refresh_token"].as_str().unwrap();
    let exp = answer(&app, &own, refresh).await["exp"].as_i64().unwrap();
    // Early in a second of real time, so that the question is asked in the
    // second the clock is moved to. Should it slip into the next, the
    // answer is the same: this cannot fail spuriously.
    let millis = time::OffsetDateTime::now_utc().millisecond();
    if millis > 300 {
        tokio::time::sleep(std::time::Duration::from_millis(u64::from(1000 - millis))).await;
    }
    let to_expiry = exp - app.clock.now().unix_timestamp();
    app.clock.advance(time::Duration::seconds(to_expiry));
    assert_eq!(answer(&app, &own, refresh).await, json!({"active": false}));
}

async fn introspection_is_rate_limited(engine: Engine) {
    let app = TestApp::spawn_with(engine, |config| config.introspection_rate_limit = 2).await;
    let gateway = app.introspector().await;
    for _ in 0..2 {
        assert_eq!(answer(&app, &gateway, "x").await["active"], false);
    }
    let response = app.introspect_as(Some((&gateway.0, &gateway.1)), "x").await;
    assert_eq!(response.status(), 429);
    assert!(response.headers().get("retry-after").is_some());
}
