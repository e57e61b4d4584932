//! `coop admin apps list` and `coop admin apps disconnect`.

use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;

on_both_engines!(
    apps_are_listed_with_grant_user_client_scopes_and_last_use,
    an_operator_disconnects_a_grant,
    refused_apps_commands_say_why_on_one_line,
);

async fn apps_are_listed_with_grant_user_client_scopes_and_last_use(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let other = app.farm("Valley Farm").await;
    let tokens = app
        .connect(&farm.worker, "farm:read daily-entries:write")
        .await;
    app.connect(&other.owner, "farm:read").await;

    let (code, out, err) = app.cli(&["admin", "apps", "list"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");

    let (code, out, _) = app
        .cli(&["admin", "apps", "list", "--farm", &farm.slug])
        .await;
    assert_eq!(code, 0);
    let fields: Vec<&str> = out.trim_end().split('\t').collect();
    assert_eq!(fields.len(), 7, "{out}");
    assert!(uuid::Uuid::parse_str(fields[0]).is_ok());
    assert_eq!(
        &fields[1..],
        [
            farm.worker.email.as_str(),
            farm.slug.as_str(),
            "Test Assistant",
            tokens.client_id.as_str(),
            "farm:read,daily-entries:write",
            "never",
        ]
    );

    app.db_execute("update grants set last_used_at = 1796029200")
        .await;
    let (code, out, _) = app
        .cli(&["admin", "apps", "list", "--user", &other.owner.email])
        .await;
    assert_eq!(code, 0);
    assert!(out.contains(&other.owner.email));
    assert!(out.trim_end().ends_with("\t2026-11-30T09:00:00Z"), "{out}");
    let (code, out, _) = app
        .cli(&[
            "admin",
            "apps",
            "list",
            "--farm",
            &farm.slug,
            "--user",
            &other.owner.email,
        ])
        .await;
    assert_eq!((code, out.as_str()), (0, ""));
}

async fn an_operator_disconnects_a_grant(engine: Engine) {
    let (app, farm) = TestApp::with_farm(engine, "Hillside Farm").await;
    let tokens = app.connect(&farm.worker, "farm:read").await;
    let mut other = app.connect(&farm.owner, "farm:read").await;
    let grant = app.grant_of(&farm.worker.email).await;

    let (code, out, err) = app.cli(&["admin", "apps", "disconnect", &grant]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim(),
        format!(
            "grant {grant} disconnected (Test Assistant for {})",
            farm.worker.email
        )
    );
    app.assert_cut_off(&tokens).await;
    app.assert_works(&mut other).await;
    assert_eq!(
        app.db_count(
            "select count(*) from audit_log where kind = 'disconnect' and detail like '%operator%'"
        )
        .await,
        1
    );
    let (code, out, _) = app
        .cli(&["admin", "apps", "list", "--user", &farm.worker.email])
        .await;
    assert_eq!((code, out.as_str()), (0, ""));

    // Again: nothing active has that id any more.
    let (code, out, err) = app.cli(&["admin", "apps", "disconnect", &grant]).await;
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(err, format!("error: no active grant has the id {grant}\n"));
}

async fn refused_apps_commands_say_why_on_one_line(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    for (args, expected) in [
        (
            vec!["admin", "apps", "disconnect", "not-a-grant"],
            "error: \"not-a-grant\" is not a grant id\n",
        ),
        (
            vec!["admin", "apps", "list", "--farm", "nowhere"],
            "error: no farm has the slug \"nowhere\"\n",
        ),
    ] {
        let (code, out, err) = app.cli(&args).await;
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (1, "", expected),
            "{args:?}"
        );
    }
    let unknown = uuid::Uuid::now_v7().to_string();
    let (code, _, err) = app.cli(&["admin", "apps", "disconnect", &unknown]).await;
    assert_eq!(code, 1);
    assert_eq!(
        err,
        format!("error: no active grant has the id {unknown}\n")
    );
    let (code, _, err) = app
        .cli(&["admin", "apps", "list", "--user", "not an email"])
        .await;
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");
    let (code, _, err) = app.cli(&["admin", "apps", "disconnect"]).await;
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");
}
