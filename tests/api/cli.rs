//! `coop admin …`: each command's success and refusal.
//!
//! A refusal is exit code 1, nothing on stdout and exactly one line on
//! stderr naming the problem; and it leaves nothing half-written, which the
//! tests check by making the same change correctly afterwards. Successes
//! are checked by their effect where the server shows one (a generated
//! password signs in, a disabled user cannot).

use crate::helpers::{Engine, TestApp, flock_add, location};
use crate::on_both_engines;

on_both_engines!(
    farm_add_prints_the_slug_and_refuses_duplicates_and_bad_slugs,
    farm_switches_need_a_known_farm,
    usage_mistakes_are_one_line_refusals,
    user_add_prints_a_generated_password_that_signs_in,
    user_add_refuses_unknown_farms_duplicates_bad_roles_and_bad_emails,
    user_add_refuses_bad_flock_lists_and_leaves_no_user_behind,
    user_add_refuses_a_short_password_from_stdin,
    user_switches_work_and_refuse_unknown_emails,
    house_add_refuses_duplicates_and_unknown_farms,
    flock_add_checks_house_date_head_count_and_duplicates,
);

/// Runs `coop` on the app's database and asserts it succeeded; returns stdout.
async fn ok(app: &TestApp, args: &[&str]) -> String {
    let (code, out, err) = app.cli(args).await;
    assert_eq!(code, 0, "{args:?} failed: {err}");
    assert_eq!(err, "", "{args:?} wrote to stderr");
    out
}

/// Asserts `coop <args>` is refused with one line on stderr containing
/// `reason`, and printed nothing on stdout.
async fn refused(app: &TestApp, args: &[&str], reason: &str) {
    refused_with_stdin(app, args, None, reason).await;
}

async fn refused_with_stdin(app: &TestApp, args: &[&str], stdin: Option<&str>, reason: &str) {
    let (code, out, err) = app.cli_with_stdin(args, stdin).await;
    assert_eq!(code, 1, "{args:?} should be refused; stdout: {out}");
    assert_eq!(out, "", "{args:?} printed on stdout");
    assert!(err.ends_with('\n'), "{err:?}");
    let line = err.trim_end_matches('\n');
    assert!(!line.contains('\n'), "{args:?}: not one line: {err:?}");
    assert!(line.starts_with("error: "), "{line}");
    assert!(line.contains(reason), "{args:?}: {line:?} lacks {reason:?}");
}

/// A fresh app with a farm "Hillside Farm" and houses "North" and "South"
/// (each added with [`ok`]); the farm's slug.
async fn with_two_houses(engine: Engine) -> (TestApp, String) {
    let app = TestApp::spawn(engine).await;
    let farm = app.add_farm("Hillside Farm").await;
    for house in ["North", "South"] {
        ok(
            &app,
            &["admin", "house", "add", "--farm", &farm, "--name", house],
        )
        .await;
    }
    (app, farm)
}

async fn farm_add_prints_the_slug_and_refuses_duplicates_and_bad_slugs(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let add = |name: &'static str, slug: Option<&'static str>| {
        let mut args = vec!["admin", "farm", "add", "--name", name];
        if let Some(slug) = slug {
            args.extend(["--slug", slug]);
        }
        args
    };
    assert_eq!(
        ok(&app, &add("Hillside Farm", None)).await,
        "hillside-farm\n"
    );
    assert_eq!(
        ok(&app, &add("Valley", Some("valley-2"))).await,
        "valley-2\n"
    );

    refused(&app, &add("Hillside Farm", None), "already exists").await;
    refused(&app, &add("Other", Some("valley-2")), "already exists").await;
    for bad in ["Bad Slug", "UPPER", "dash-", "a--b", "semi;colon", "é"] {
        refused(&app, &add("Other", Some(bad)), "is not a slug").await;
    }
    refused(&app, &add("!!!", None), "pass --slug").await;
    refused(&app, &add("   ", Some("blank")), "farm name").await;

    // The refusals wrote nothing: the slugs they tried are still free.
    assert_eq!(ok(&app, &add("Blank", Some("blank"))).await, "blank\n");
    assert_eq!(ok(&app, &add("Other", Some("other"))).await, "other\n");
}

async fn farm_switches_need_a_known_farm(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = app.add_farm("Hillside Farm").await;
    let farm = farm.as_str();
    assert_eq!(
        ok(&app, &["admin", "farm", "suspend", farm]).await,
        "farm hillside-farm suspended\n"
    );
    assert_eq!(
        ok(&app, &["admin", "farm", "resume", farm]).await,
        "farm hillside-farm resumed\n"
    );
    assert_eq!(
        ok(&app, &["admin", "farm", "connected-apps", farm, "off"]).await,
        "connected apps off for farm hillside-farm\n"
    );
    assert_eq!(
        ok(&app, &["admin", "farm", "connected-apps", farm, "on"]).await,
        "connected apps on for farm hillside-farm\n"
    );

    let unknown = "no farm has the slug \"nowhere\"";
    refused(&app, &["admin", "farm", "suspend", "nowhere"], unknown).await;
    refused(&app, &["admin", "farm", "resume", "nowhere"], unknown).await;
    refused(
        &app,
        &["admin", "farm", "connected-apps", "nowhere", "off"],
        unknown,
    )
    .await;
}

async fn usage_mistakes_are_one_line_refusals(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = app.add_farm("Hillside Farm").await;
    refused(
        &app,
        &["admin", "farm", "connected-apps", &farm, "maybe"],
        "invalid value 'maybe'",
    )
    .await;
    refused(&app, &["admin", "farm", "add"], "--name").await;
    refused(&app, &["admin", "farm", "demolish", &farm], "unrecognized").await;
    refused(
        &app,
        &[
            "admin",
            "user",
            "add",
            "--farm",
            &farm,
            "--email",
            "a@b.example",
        ],
        "--role",
    )
    .await;
}

async fn user_add_prints_a_generated_password_that_signs_in(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = app.add_farm("Hillside Farm").await;
    let out = ok(&app, &user_add(&farm, "Ann@Hillside.example", "manager")).await;
    let (email, password) = out.trim_end().split_once('\t').expect("email<TAB>password");
    assert_eq!(email, "Ann@Hillside.example");
    assert_eq!(password.len(), 20, "{password:?}");

    let signed_in = app.sign_in("ann@hillside.example", password).await;
    assert_eq!(signed_in.status(), 303);
    let home = app.get("/").await.text().await.unwrap();
    assert!(home.contains("ann@hillside.example"), "{home}");

    // With --password-stdin nothing secret is printed.
    let (code, out, err) = app
        .cli_with_stdin(
            &[
                user_add(&farm, "bo@hillside.example", "viewer"),
                vec!["--password-stdin"],
            ]
            .concat(),
            Some("a long enough password\n"),
        )
        .await;
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (0, "bo@hillside.example\n", "")
    );
    let other = TestApp::spawn_on(app.db.clone(), |_| {}).await;
    assert_eq!(
        other
            .sign_in("bo@hillside.example", "a long enough password")
            .await
            .status(),
        303
    );
}

fn user_add<'a>(farm: &'a str, email: &'a str, role: &'a str) -> Vec<&'a str> {
    vec![
        "admin", "user", "add", "--farm", farm, "--email", email, "--role", role,
    ]
}

async fn user_add_refuses_unknown_farms_duplicates_bad_roles_and_bad_emails(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = app.add_farm("Hillside Farm").await;
    let other_farm = app.add_farm("Valley Farm").await;
    ok(&app, &user_add(&farm, "ann@hillside.example", "owner")).await;

    refused(
        &app,
        &user_add("nowhere", "bo@hillside.example", "owner"),
        "no farm has the slug \"nowhere\"",
    )
    .await;
    // One account per address across the server, whatever the case.
    refused(
        &app,
        &user_add(&farm, "ann@hillside.example", "viewer"),
        "a user with the email ann@hillside.example already exists",
    )
    .await;
    refused(
        &app,
        &user_add(&other_farm, "ANN@hillside.example", "viewer"),
        "already exists",
    )
    .await;
    for role in ["admin", "", "owners"] {
        refused(
            &app,
            &user_add(&farm, "bo@hillside.example", role),
            "is not a role (owner, manager, worker, viewer)",
        )
        .await;
    }
    for email in [
        "not-an-email",
        "bo@localhost",
        "two@@x.example",
        "sp ace@x.example",
    ] {
        refused(
            &app,
            &user_add(&farm, email, "viewer"),
            "is not an email address",
        )
        .await;
    }

    // None of the refused adds created bo.
    ok(&app, &user_add(&farm, "bo@hillside.example", "viewer")).await;
}

async fn user_add_refuses_bad_flock_lists_and_leaves_no_user_behind(engine: Engine) {
    let (app, farm) = with_two_houses(engine).await;
    // "Layers" in both houses: a name that means two flocks.
    for (house, name) in [
        ("North", "Layers"),
        ("South", "Layers"),
        ("North", "Pullets"),
    ] {
        ok(&app, &flock_add(&farm, house, name, "2026-01-05", "500")).await;
    }
    let worker = |flocks: &'static str| {
        let mut args = user_add(&farm, "cy@hillside.example", "worker");
        args.extend(["--flocks", flocks]);
        args
    };

    refused(
        &app,
        &worker("Pullets,Nope"),
        "the farm has no flock named \"Nope\"",
    )
    .await;
    refused(
        &app,
        &worker("Layers"),
        "several flocks are named \"Layers\"; rename one first",
    )
    .await;
    refused(
        &app,
        &worker(" , "),
        "--flocks needs at least one flock name",
    )
    .await;
    let mut manager = user_add(&farm, "cy@hillside.example", "manager");
    manager.extend(["--flocks", "Pullets"]);
    refused(
        &app,
        &manager,
        "only a worker can be limited to some flocks",
    )
    .await;

    // Nothing was half-written: the same email is still free.
    let out = ok(&app, &worker("Pullets")).await;
    assert!(out.starts_with("cy@hillside.example\t"), "{out}");
}

async fn user_add_refuses_a_short_password_from_stdin(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = app.add_farm("Hillside Farm").await;
    let mut args = user_add(&farm, "di@hillside.example", "viewer");
    args.push("--password-stdin");
    refused_with_stdin(&app, &args, Some("short\n"), "at least 12 characters").await;
    let (code, _, err) = app
        .cli_with_stdin(&args, Some("long enough password\n"))
        .await;
    assert_eq!(code, 0, "{err}");
}

async fn user_switches_work_and_refuse_unknown_emails(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "worker").await;
    let email = user.email.as_str();

    assert_eq!(
        ok(&app, &["admin", "user", "disable", email]).await,
        format!("{email}: disabled\n")
    );
    // Refused as a wrong password is (threat 52).
    assert_eq!(app.sign_in(email, &user.password).await.status(), 401);
    assert_eq!(
        ok(&app, &["admin", "user", "enable", email]).await,
        format!("{email}: enabled\n")
    );
    assert_eq!(app.sign_in(email, &user.password).await.status(), 303);
    assert_eq!(app.get("/").await.status(), 200);

    assert_eq!(
        ok(&app, &["admin", "user", "sign-out-everywhere", email]).await,
        format!("{email}: signed out everywhere\n")
    );
    let home = app.get("/").await;
    assert_eq!(home.status(), 303);
    assert!(location(&home).starts_with("/login"));

    // Email addresses are matched case-insensitively, like at sign-in.
    assert_eq!(
        ok(
            &app,
            &[
                "admin",
                "user",
                "require-password-change",
                &email.to_uppercase()
            ]
        )
        .await,
        format!(
            "{}: must change password at next sign-in\n",
            email.to_uppercase()
        )
    );
    let signed_in = app.sign_in(email, &user.password).await;
    assert_eq!(location(&signed_in), "/account/password");

    for command in [
        "disable",
        "enable",
        "sign-out-everywhere",
        "require-password-change",
    ] {
        refused(
            &app,
            &["admin", "user", command, "nobody@hillside.example"],
            "no user has the email nobody@hillside.example",
        )
        .await;
        refused(
            &app,
            &["admin", "user", command, "not-an-email"],
            "is not an email address",
        )
        .await;
    }
}

async fn house_add_refuses_duplicates_and_unknown_farms(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let farm = app.add_farm("Hillside Farm").await;
    let other = app.add_farm("Valley Farm").await;
    let add = |farm: &str, name: &str| {
        ["admin", "house", "add", "--farm", farm, "--name", name].map(str::to_owned)
    };
    let args = add(&farm, "North");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(
        ok(&app, &args).await,
        "house North added to hillside-farm\n"
    );
    refused(&app, &args, "the farm already has a house named \"North\"").await;

    // Another farm may have its own North house.
    let args = add(&other, "North");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&app, &args).await;

    let args = add("nowhere", "South");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    refused(&app, &args, "no farm has the slug \"nowhere\"").await;
    let args = add(&farm, " ");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    refused(
        &app,
        &args,
        "the house name must be 1 to 100 printable characters",
    )
    .await;
}

async fn flock_add_checks_house_date_head_count_and_duplicates(engine: Engine) {
    let (app, farm) = with_two_houses(engine).await;

    refused(
        &app,
        &flock_add("nowhere", "North", "Layers", "2026-01-05", "500"),
        "no farm has the slug \"nowhere\"",
    )
    .await;
    refused(
        &app,
        &flock_add(&farm, "East", "Layers", "2026-01-05", "500"),
        "the farm has no house named \"East\"",
    )
    .await;
    for date in ["2026-02-30", "05/01/2026", "2026-1-5", "yesterday"] {
        refused(
            &app,
            &flock_add(&farm, "North", "Layers", date, "500"),
            "is not a date like 2026-03-01",
        )
        .await;
    }
    for count in ["-1", "many", "1.5", "10000001"] {
        refused(
            &app,
            &flock_add(&farm, "North", "Layers", "2026-01-05", count),
            "is not a head count",
        )
        .await;
    }

    // None of the refusals created "Layers".
    assert_eq!(
        ok(
            &app,
            &flock_add(&farm, "North", "Layers", "2026-01-05", "500")
        )
        .await,
        "flock Layers added to North on hillside-farm\n"
    );
    refused(
        &app,
        &flock_add(&farm, "North", "Layers", "2026-02-05", "300"),
        "that house already has a flock named \"Layers\"",
    )
    .await;
    // The same name in another house is allowed (and then ambiguous).
    ok(
        &app,
        &flock_add(&farm, "South", "Layers", "2026-02-05", "0"),
    )
    .await;
}
