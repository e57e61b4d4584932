//! The real MCP clients drive Coop end to end: the official Python SDK, the
//! official TypeScript SDK (v1 and the v2 client package), the MCP
//! Inspector's command-line mode, the FastMCP client and the OpenAI Codex
//! CLI, each run as its own process by a script under `tests/clients/`.
//!
//! Each row starts Coop on a fresh database with a farm, a house, a flock
//! and one member (made with `coop admin`, as an operator would), then runs
//! one script: 401 and discovery → registration (or a Client ID Metadata
//! Document served over https by [`TlsHost`], whose CA Coop is told to
//! trust through the test-only setting) → authorization with PKCE and
//! `resource` → sign-in and consent by form post → code exchange →
//! `tools/list` (exactly role ∩ granted scopes, as [`catalog::visible`]
//! says) → a read tool → the write tool when granted → refresh → RFC 7009
//! revocation → the old access token is 401 and the old refresh token
//! `invalid_grant`. A script prints one PASS/FAIL line per step and exits
//! non-zero on a failed step, which fails the test.
//!
//! The automation rows drive the SDKs' client-credentials providers (the
//! MCP extension `io.modelcontextprotocol/oauth-client-credentials`): the
//! Python SDK's `ClientCredentialsOAuthProvider` and
//! `PrivateKeyJWTOAuthProvider`, the TypeScript SDK v2's
//! `ClientCredentialsProvider` and `PrivateKeyJwtProvider`. No person: the
//! test, as the operator, makes the automation with `coop admin automation
//! add` (with `--secret`, or with `--jwks-file` holding the public key set
//! the script generated and printed; its private key never leaves the
//! script) and hands the script its credentials on stdin. The script: 401
//! and discovery → a token from `/token` (`grant_type=client_credentials`,
//! `resource=<issuer>/mcp`, the secret in the Basic header or a signed
//! assertion; no refresh token) → `tools/list` (role ∩ the scopes it may
//! hold) → a read tool → the write tool when allowed; then it waits while
//! the test runs `coop admin automation disable`, and its next call (the
//! same unexpired token) must meet 401 `invalid_token`, and its new token
//! request `invalid_client`.
//!
//! [`one_person_connects_every_client_in_a_row`] runs every person row (not
//! the DPoP ones), one after
//! the other, against one server and one person, as someone connecting all
//! their assistants in one sitting does: a fresh browser (no session) and a
//! real sign-in each time, with the server's default settings (no
//! throttling exemption).
//!
//! The clients are installed outside the clone by `tests/tools/python-clients.sh`
//! and `tests/tools/node-clients.sh` (`.ci/run` does it) and found through
//! `COOP_TEST_PYTHON` and `COOP_TEST_NODE_CLIENTS`, with Node 22 first on
//! `PATH`. Without them a row is skipped with a message, unless
//! `COOP_TEST_REQUIRE_CLIENTS=1` (CI), when it fails.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use coop::domain::{Role, Scope, ScopeSet};
use coop::mcp::catalog;

use crate::helpers::{Engine, TestApp, TestUser, flock_add};
use crate::on_both_engines;
use crate::tls_host::TlsHost;

on_both_engines!(
    python_sdk_default_mode_on_the_2026_wire,
    python_sdk_legacy_mode_with_client_secret_post,
    python_sdk_with_a_client_id_metadata_document,
    typescript_sdk_public_client,
    typescript_sdk_with_client_secret_basic,
    typescript_sdk_with_a_client_id_metadata_document,
    inspector_cli,
    fastmcp_client_with_oauth,
    typescript_sdk_v2_public_client,
    typescript_sdk_v2_with_dpop,
    typescript_sdk_v2_with_dpop_nonces,
    codex_cli_with_dcr,
    one_person_connects_every_client_in_a_row,
    python_sdk_client_credentials_with_a_secret,
    python_sdk_client_credentials_with_private_key_jwt,
    typescript_sdk_v2_client_credentials,
    typescript_sdk_v2_private_key_jwt,
);

/// The redirect URI the SDK scripts use: nothing listens there, the
/// scripts read the code off the redirect (a loopback URI matches any port).
const REDIRECT_URI: &str = "http://127.0.0.1:53682/callback";
const FLOCK: &str = "Alpha";
/// One script run, however slow the machine: well inside CI's limit.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(240);

const READ: &[Scope] = &[Scope::FarmRead];
const BOTH: &[Scope] = &[Scope::FarmRead, Scope::DailyEntriesWrite];

/// The automation modes of the SDK scripts: the client credentials grant
/// with a client secret, or with `private_key_jwt` assertions.
const CLIENT_SECRET: &str = "client-secret";
const PRIVATE_KEY_JWT: &str = "private-key-jwt";

async fn python_sdk_default_mode_on_the_2026_wire(engine: Engine) {
    Row::python("default", Role::Manager, BOTH)
        .run(engine)
        .await;
}

async fn python_sdk_legacy_mode_with_client_secret_post(engine: Engine) {
    // A worker who grants only reading: the write tool is neither listed
    // nor called.
    Row::python("legacy", Role::Worker, READ).run(engine).await;
}

async fn python_sdk_with_a_client_id_metadata_document(engine: Engine) {
    Row::python("cimd", Role::Owner, BOTH).run(engine).await;
}

async fn typescript_sdk_public_client(engine: Engine) {
    Row::typescript("none", Role::Worker, BOTH)
        .run(engine)
        .await;
}

async fn typescript_sdk_with_client_secret_basic(engine: Engine) {
    Row::typescript("basic", Role::Viewer, READ)
        .run(engine)
        .await;
}

async fn typescript_sdk_with_a_client_id_metadata_document(engine: Engine) {
    Row::typescript("cimd", Role::Manager, BOTH)
        .run(engine)
        .await;
}

async fn inspector_cli(engine: Engine) {
    Row::new(Client::Inspector, "dcr", Role::Worker, BOTH)
        .run(engine)
        .await;
}

async fn fastmcp_client_with_oauth(engine: Engine) {
    // `Client(url, auth="oauth")`, nothing else: DCR as a public client
    // with a `localhost` redirect.
    Row::new(Client::FastMcp, "oauth", Role::Owner, BOTH)
        .run(engine)
        .await;
}

async fn typescript_sdk_v2_public_client(engine: Engine) {
    Row::new(Client::TypeScriptV2, "none", Role::Manager, BOTH)
        .run(engine)
        .await;
}

async fn typescript_sdk_v2_with_dpop(engine: Engine) {
    // The provider's `dpop()` session: bound tokens, a proof on every call,
    // the same token as a bearer token refused.
    Row::new(Client::TypeScriptV2, "dpop", Role::Manager, BOTH)
        .run(engine)
        .await;
}

async fn typescript_sdk_v2_with_dpop_nonces(engine: Engine) {
    // Against `--dpop-require-nonce`: `use_dpop_nonce` at /token and /mcp,
    // each answered by the SDK with the nonce it was handed.
    Row::new(Client::TypeScriptV2, "dpop-nonce", Role::Manager, BOTH)
        .run(engine)
        .await;
}

async fn codex_cli_with_dcr(engine: Engine) {
    Row::new(Client::Codex, "dcr", Role::Worker, BOTH)
        .run(engine)
        .await;
}

async fn python_sdk_client_credentials_with_a_secret(engine: Engine) {
    // `ClientCredentialsOAuthProvider`: the secret in the Basic header.
    Row::python(CLIENT_SECRET, Role::Manager, BOTH)
        .run(engine)
        .await;
}

async fn python_sdk_client_credentials_with_private_key_jwt(engine: Engine) {
    // `PrivateKeyJWTOAuthProvider` with `SignedJWTParameters` (RS256), for
    // a viewer allowed only to read: the SDK asks for the challenge's two
    // scopes and gets the one it may hold.
    Row::python(PRIVATE_KEY_JWT, Role::Viewer, READ)
        .run(engine)
        .await;
}

async fn typescript_sdk_v2_client_credentials(engine: Engine) {
    // `ClientCredentialsProvider`, for a viewer allowed only to read (as
    // above: asked for both scopes, granted one).
    Row::new(Client::TypeScriptV2, CLIENT_SECRET, Role::Viewer, READ)
        .run(engine)
        .await;
}

async fn typescript_sdk_v2_private_key_jwt(engine: Engine) {
    // `PrivateKeyJwtProvider` (ES256), for a worker.
    Row::new(Client::TypeScriptV2, PRIVATE_KEY_JWT, Role::Worker, BOTH)
        .run(engine)
        .await;
}

/// Every row, in a row: one person (a manager) connects each client in
/// turn to one server, signing in afresh every time, within a minute or
/// two. The CIMD rows' documents are on one https host.
async fn one_person_connects_every_client_in_a_row(engine: Engine) {
    let rows = [
        Row::python("default", Role::Manager, BOTH),
        Row::python("legacy", Role::Manager, READ),
        Row::python("cimd", Role::Manager, BOTH),
        Row::typescript("none", Role::Manager, BOTH),
        Row::typescript("basic", Role::Manager, READ),
        Row::typescript("cimd", Role::Manager, BOTH),
        Row::new(Client::Inspector, "dcr", Role::Manager, BOTH),
        Row::new(Client::FastMcp, "oauth", Role::Manager, BOTH),
        Row::new(Client::TypeScriptV2, "none", Role::Manager, READ),
        Row::new(Client::Codex, "dcr", Role::Manager, BOTH),
    ];
    let mut installed = None;
    for row in &rows {
        let Some(found) = Installed::find(row.client) else {
            return;
        };
        installed = Some(found);
    }
    let installed = installed.expect("at least one row");
    let host = TlsHost::start().await;
    let app = TestApp::spawn_with(engine, |c| c.cimd_test = host.cimd_settings(true)).await;
    let person = farm_with_a_flock(&app, Role::Manager).await;
    let started = Instant::now();
    for (done, row) in rows.iter().enumerate() {
        let (ok, output) = row
            .attempt(&installed, engine, &app, &person, Some(&host))
            .await;
        assert!(
            ok && !output.contains("FAIL"),
            "{} on {engine:?}, the same person's sign-in number {} in {:.0}s: a step failed:\n{output}",
            row.name(),
            done + 1,
            started.elapsed().as_secs_f64()
        );
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Client {
    Python,
    TypeScript,
    Inspector,
    FastMcp,
    TypeScriptV2,
    Codex,
}

impl Client {
    /// The script under `tests/clients/` that drives this client.
    fn script(self) -> &'static str {
        match self {
            Client::Python => "python_sdk_flow.py",
            Client::FastMcp => "fastmcp_flow.py",
            Client::TypeScript => "ts_sdk_flow.mjs",
            Client::TypeScriptV2 => "ts_sdk_v2_flow.mjs",
            Client::Inspector => "inspector_flow.mjs",
            Client::Codex => "codex_flow.mjs",
        }
    }

    fn runs_on_python(self) -> bool {
        matches!(self, Client::Python | Client::FastMcp)
    }

    /// Whether its script takes `--mode` (the SDK rows have several).
    fn has_modes(self) -> bool {
        matches!(
            self,
            Client::Python | Client::TypeScript | Client::TypeScriptV2
        )
    }
}

struct Row {
    client: Client,
    /// The script's `--mode`; "cimd" also gets a metadata document;
    /// [`CLIENT_SECRET`] and [`PRIVATE_KEY_JWT`] are automations.
    mode: &'static str,
    /// The member's role, or the automation's.
    role: Role,
    /// What the person ticks on the consent screen, or what the operator
    /// allows the automation.
    scopes: &'static [Scope],
}

impl Row {
    fn new(client: Client, mode: &'static str, role: Role, scopes: &'static [Scope]) -> Self {
        Self {
            client,
            mode,
            role,
            scopes,
        }
    }

    fn python(mode: &'static str, role: Role, scopes: &'static [Scope]) -> Self {
        Self::new(Client::Python, mode, role, scopes)
    }

    fn typescript(mode: &'static str, role: Role, scopes: &'static [Scope]) -> Self {
        Self::new(Client::TypeScript, mode, role, scopes)
    }

    fn name(&self) -> String {
        format!("{:?} {}", self.client, self.mode)
    }

    fn is_automation(&self) -> bool {
        [CLIENT_SECRET, PRIVATE_KEY_JWT].contains(&self.mode)
    }

    /// The tools the caller must see: role ∩ scopes.
    fn expected_tools(&self) -> String {
        let scopes = ScopeSet::from_scopes(self.scopes.iter().copied());
        let names: Vec<&str> = catalog::visible(self.role, &scopes)
            .map(|t| t.name)
            .collect();
        names.join(",")
    }

    /// The row on a fresh server, with a fresh member (or automation) in
    /// the row's role.
    async fn run(self, engine: Engine) {
        let Some(installed) = Installed::find(self.client) else {
            return;
        };
        if self.is_automation() {
            return self.run_automation(&installed, engine).await;
        }
        // The CIMD rows: the document on an https host whose CA Coop trusts
        // through the test-only setting (loopback admitted too).
        let host = if self.mode == "cimd" {
            Some(TlsHost::start().await)
        } else {
            None
        };
        let app = match &host {
            Some(host) => {
                TestApp::spawn_with(engine, |c| c.cimd_test = host.cimd_settings(true)).await
            }
            None => {
                TestApp::spawn_with(engine, |c| {
                    c.dpop_require_nonce = self.mode == "dpop-nonce";
                })
                .await
            }
        };
        let user = farm_with_a_flock(&app, self.role).await;
        let (ok, output) = self
            .attempt(&installed, engine, &app, &user, host.as_ref())
            .await;
        self.judge(engine, ok, &output);
    }

    fn judge(&self, engine: Engine, ok: bool, output: &str) {
        assert!(
            ok,
            "{} on {engine:?}: a step failed:\n{output}",
            self.name()
        );
        assert!(!output.contains("FAIL"), "{output}");
    }

    /// One run of the row's script against `app`, signing in as `user` (a
    /// member in the row's role); a CIMD row's document goes on `host`.
    /// Returns (script passed, its output).
    async fn attempt(
        &self,
        installed: &Installed,
        engine: Engine,
        app: &TestApp,
        user: &TestUser,
        host: Option<&TlsHost>,
    ) -> (bool, String) {
        let host = host.filter(|_| self.mode == "cimd");
        let document_path = format!("/{:?}/client.json", self.client).to_lowercase();
        let client_id = host.map(|host| {
            host.serve_client_document(
                &document_path,
                &format!("Coop interop: {}", self.name()),
                &[REDIRECT_URI],
            )
        });

        let ticked: Vec<&str> = self.scopes.iter().map(|s| s.as_str()).collect();
        let mut args: Vec<String> = vec![
            "--issuer".into(),
            app.issuer.clone(),
            "--email".into(),
            user.email.clone(),
            "--password".into(),
            user.password.clone(),
            "--scopes".into(),
            ticked.join(" "),
            "--expect-tools".into(),
            self.expected_tools(),
            "--flock".into(),
            FLOCK.into(),
        ];
        if self.client.has_modes() {
            args.extend(["--mode".into(), self.mode.into()]);
        }
        if let Some(client_id) = &client_id {
            args.extend(["--client-metadata-url".into(), client_id.clone()]);
        }

        let started = Instant::now();
        let (ok, output) = installed.run(self.client, &args).await;
        eprintln!(
            "── {} on {engine:?} ({:.1}s)\n{output}",
            self.name(),
            started.elapsed().as_secs_f64()
        );
        if ok && let Some(host) = host {
            assert!(
                host.hits(&document_path) >= 1,
                "Coop never fetched the metadata document"
            );
        }
        (ok, output)
    }

    /// An automation's row: the operator makes the automation with `coop
    /// admin automation add` (a secret, or the public key set the script
    /// made), hands its credentials to the script on stdin, and disables it
    /// with `coop admin automation disable` when the script asks; the
    /// script's next call must then be refused.
    async fn run_automation(&self, installed: &Installed, engine: Engine) {
        let app = TestApp::spawn(engine).await;
        let owner = farm_with_a_flock(&app, Role::Owner).await;
        let allowed: Vec<&str> = self.scopes.iter().map(|s| s.as_str()).collect();
        let args: Vec<String> = vec![
            "--issuer".into(),
            app.issuer.clone(),
            "--mode".into(),
            self.mode.into(),
            "--scopes".into(),
            allowed.join(" "),
            "--expect-tools".into(),
            self.expected_tools(),
            "--flock".into(),
            FLOCK.into(),
        ];
        let add = |credential: &[&str]| {
            let mut add = vec![
                "admin".to_owned(),
                "automation".into(),
                "add".into(),
                "--farm".into(),
                owner.farm.clone(),
                "--name".into(),
                format!("Coop interop: {}", self.name()),
                "--role".into(),
                self.role.as_str().into(),
                "--scope".into(),
                allowed.join(","),
            ];
            add.extend(credential.iter().map(|a| (*a).to_owned()));
            add
        };
        let keys = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let mut script = installed.converse(self.client, &args);
        let mut client_id = None;
        if self.mode == CLIENT_SECRET {
            // The secret is printed once by the CLI and handed over on stdin:
            // it appears in no argument list and in no output.
            let (code, out, err) = app.cli(&as_strs(&add(&["--secret"]))).await;
            assert_eq!(code, 0, "automation add failed: {err}");
            let id = field(&out, "client_id");
            let secret = field(&out, "client_secret");
            script
                .say(&serde_json::json!({"client_id": id, "client_secret": secret}).to_string())
                .await;
            client_id = Some(id);
        }
        let talk = async {
            while let Some(line) = script.next_line().await {
                if let Some(set) = line.strip_prefix("KEYS ") {
                    // The public key set the script made; its private key
                    // never leaves the script.
                    let file = keys.path().join("jwks.json");
                    std::fs::write(&file, set).unwrap();
                    let path = file.display().to_string();
                    let (code, out, err) = app.cli(&as_strs(&add(&["--jwks-file", &path]))).await;
                    assert_eq!(code, 0, "automation add failed: {err}");
                    assert!(!out.contains("client_secret"), "{out}");
                    let id = field(&out, "client_id");
                    script
                        .say(&serde_json::json!({"client_id": id}).to_string())
                        .await;
                    client_id = Some(id);
                } else if line == "AWAIT disable" {
                    let id = client_id.as_deref().expect("the automation was made");
                    let (code, out, err) = app.cli(&["admin", "automation", "disable", id]).await;
                    assert_eq!(code, 0, "automation disable failed: {err}");
                    assert!(out.contains("disabled"), "{out}");
                    script.say("disabled").await;
                }
            }
        };
        if tokio::time::timeout(SCRIPT_TIMEOUT, talk).await.is_err() {
            panic!(
                "{}: the script did not finish in {SCRIPT_TIMEOUT:?}:\n{}",
                self.name(),
                script.output
            );
        }
        let (ok, output) = script.finish().await;
        eprintln!(
            "── {} on {engine:?} ({:.1}s)\n{output}",
            self.name(),
            started.elapsed().as_secs_f64()
        );
        self.judge(engine, ok, &output);
    }
}

fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// The value of a `name: value` line the CLI printed.
fn field(out: &str, name: &str) -> String {
    crate::helpers::app::printed(out, name)
        .unwrap_or_else(|| panic!("no {name} in the CLI's output"))
}

/// A client script the test talks with while it runs: its stdout read line
/// by line (and kept), answers written to its stdin.
struct Conversation {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    stderr: tokio::task::JoinHandle<String>,
    /// Every stdout line so far.
    output: String,
}

impl Conversation {
    async fn next_line(&mut self) -> Option<String> {
        let line = self
            .stdout
            .next_line()
            .await
            .expect("the script's stdout")?;
        self.output.push_str(&line);
        self.output.push('\n');
        Some(line)
    }

    /// Writes one line to the script. A script that already stopped cannot
    /// read it: that is not an error here, its output says why it stopped.
    async fn say(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        let _ = self.stdin.write_all(format!("{line}\n").as_bytes()).await;
    }

    /// Waits for the script to exit; returns (exit status 0, stdout +
    /// stderr).
    async fn finish(mut self) -> (bool, String) {
        let status = self.child.wait().await.expect("the client script runs");
        let stderr = self.stderr.await.unwrap_or_default();
        (status.success(), format!("{}{stderr}", self.output))
    }
}

/// A farm with a house and a flock placed two months ago, and one member.
async fn farm_with_a_flock(app: &TestApp, role: Role) -> TestUser {
    let user = app.farm_with_member(role.as_str()).await;
    app.admin(&["house", "add", "--farm", &user.farm, "--name", "North"])
        .await;
    let placed = (time::OffsetDateTime::now_utc().date() - time::Duration::days(60)).to_string();
    let args = flock_add(&user.farm, "North", FLOCK, &placed, "500");
    app.admin(&args[1..]).await;
    user
}

/// Where the installed clients are.
struct Installed {
    python: Option<PathBuf>,
    node_clients: Option<PathBuf>,
}

impl Installed {
    /// The clients `client` needs, or `None` (after saying why) when they are
    /// not installed and CI does not require them.
    fn find(client: Client) -> Option<Self> {
        let path = |var: &str| {
            std::env::var_os(var)
                .map(PathBuf::from)
                .filter(|p| p.exists())
        };
        let installed = Self {
            python: path("COOP_TEST_PYTHON"),
            node_clients: path("COOP_TEST_NODE_CLIENTS"),
        };
        let missing = if client.runs_on_python() {
            match &installed.python {
                None => Some("COOP_TEST_PYTHON (run: tests/tools/python-clients.sh)".to_owned()),
                Some(python) if client == Client::FastMcp && !python_has(python, "fastmcp") => {
                    Some(
                        "fastmcp in COOP_TEST_PYTHON (run: tests/tools/python-clients.sh)"
                            .to_owned(),
                    )
                }
                Some(_) => None,
            }
        } else {
            match (&installed.node_clients, node_major()) {
                (None, _) => Some(
                    "COOP_TEST_NODE_CLIENTS (run: tests/tools/node-clients.sh with Node 22 on PATH)"
                        .to_owned(),
                ),
                (_, None) => Some("node on PATH".to_owned()),
                (_, Some(major)) if major < 22 => {
                    Some(format!("Node 22 on PATH (found Node {major})"))
                }
                (Some(dir), _) => {
                    let package = match client {
                        Client::TypeScriptV2 => "@modelcontextprotocol/client",
                        Client::Codex => "@openai/codex",
                        _ => "@modelcontextprotocol/sdk",
                    };
                    (!dir.join("node_modules").join(package).join("package.json").exists())
                        .then(|| {
                            format!(
                                "{package} in COOP_TEST_NODE_CLIENTS (run: tests/tools/node-clients.sh)"
                            )
                        })
                }
            }
        };
        let Some(missing) = missing else {
            return Some(installed);
        };
        if std::env::var("COOP_TEST_REQUIRE_CLIENTS").is_ok_and(|v| v == "1") {
            panic!("the real MCP clients are required (COOP_TEST_REQUIRE_CLIENTS=1): no {missing}");
        }
        eprintln!("skipping the {client:?} row: no {missing}");
        None
    }

    /// Runs the row's script; returns (exit status 0, stdout + stderr).
    async fn run(&self, client: Client, args: &[String]) -> (bool, String) {
        let mut command = self.command(client, args);
        command.stdin(Stdio::null());
        let child = command.spawn().expect("the client script starts");
        let output = match tokio::time::timeout(SCRIPT_TIMEOUT, child.wait_with_output()).await {
            Ok(output) => output.expect("the client script runs"),
            Err(_) => panic!("{client:?}: the script did not finish in {SCRIPT_TIMEOUT:?}"),
        };
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), text)
    }

    /// Starts the row's script with a pipe to its stdin.
    fn converse(&self, client: Client, args: &[String]) -> Conversation {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt};
        let mut command = self.command(client, args);
        command.stdin(Stdio::piped());
        let mut child = command.spawn().expect("the client script starts");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = tokio::io::BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let mut err = child.stderr.take().expect("piped stderr");
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text).await;
            text
        });
        Conversation {
            child,
            stdin,
            stdout,
            stderr,
            output: String::new(),
        }
    }

    /// The command that runs the row's script (stdout and stderr piped).
    fn command(&self, client: Client, args: &[String]) -> tokio::process::Command {
        let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
        let mut command = if client.runs_on_python() {
            let mut c = tokio::process::Command::new(self.python.as_ref().unwrap());
            c.arg(scripts.join(client.script()));
            c
        } else {
            let mut c = tokio::process::Command::new("node");
            c.arg(scripts.join(client.script()))
                .arg("--node-clients")
                .arg(self.node_clients.as_ref().unwrap());
            c
        };
        command
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }
}

/// Whether `python` can import `module`.
fn python_has(python: &Path, module: &str) -> bool {
    std::process::Command::new(python)
        .args(["-c", &format!("import {module}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The major version of the `node` on PATH, if there is one.
fn node_major() -> Option<u32> {
    static MAJOR: OnceLock<Option<u32>> = OnceLock::new();
    *MAJOR.get_or_init(|| {
        let output = std::process::Command::new("node")
            .arg("--version")
            .output()
            .ok()?;
        let version = String::from_utf8_lossy(&output.stdout);
        version
            .trim()
            .trim_start_matches('v')
            .split('.')
            .next()?
            .parse()
            .ok()
    })
}
