// Drives Coop end to end with the OpenAI Codex CLI, as a person sets it up.
//
// Usage:
//   node codex_flow.mjs --node-clients DIR --issuer http://127.0.0.1:PORT \
//     --email worker@farm.example --password '...' \
//     --scopes "farm:read daily-entries:write" \
//     --expect-tools list_flocks,... --flock Alpha
//
// DIR is what tests/tools/node-clients.sh prints (its node_modules holds the
// pinned `@openai/codex` and its Linux binary).
//
// Codex runs with a throwaway CODEX_HOME (and HOME) and a config.toml that
// turns its network features off: a model provider on a loopback port
// nothing listens on (no websocket prewarm, no model traffic), no apps,
// plugins, update checks, analytics or feedback. Its MCP OAuth credentials
// go to a file in CODEX_HOME (`mcp_oauth_credentials_store = "file"`), as
// on a machine without a keyring. The steps:
//   1. `codex mcp add coop --url ISSUER/mcp --oauth-client-registration dcr`:
//      Codex meets the 401, discovers, registers (DCR: its default is a
//      Client ID Metadata Document on a host this machine cannot reach),
//      opens its "browser" and waits on its loopback callback. The browser
//      is `$BROWSER` (inspector-browser.sh: sign-in and consent by form post,
//      then the redirect to Codex's listener).
//   2. `codex app-server` (the JSON-RPC interface Codex's IDE extensions
//      use), over stdio: `mcpServerStatus/list` lists Coop's tools through
//      Codex's own MCP client; `thread/start` and `mcpServer/tool/call` call
//      the read tool and the write tool.
//   3. Refresh: the stored access token's `expires_at` is moved into the
//      past (rather than wait the shortest lifetime Coop allows); a new
//      app-server session refreshes it itself before connecting (refresh
//      grant, rotated refresh token written back to the file) and calls a
//      tool.
//   4. `codex mcp logout coop`: Codex forgets its credentials (it does not
//      revoke them at Coop; see docs/interop.md).
//   5. RFC 7009 revocation of the refresh token it held, by plain HTTP; the
//      tokens held then and before the refresh are dead.
//
// Prints one PASS/FAIL line per step; exits non-zero on the first failure.

import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    "node-clients": { type: "string", default: process.env.COOP_NODE_CLIENTS },
    issuer: { type: "string" },
    email: { type: "string" },
    password: { type: "string" },
    scopes: { type: "string", default: "farm:read daily-entries:write" },
    "expect-tools": { type: "string" },
    flock: { type: "string" },
    keep: { type: "boolean", default: false },
  },
});
for (const required of ["node-clients", "issuer", "email", "password", "expect-tools", "flock"]) {
  if (!args[required]) {
    console.error(`--${required} is required`);
    process.exit(2);
  }
}

const here = dirname(fileURLToPath(import.meta.url));
const issuer = args.issuer.replace(/\/$/, "");
const serverUrl = `${issuer}/mcp`;
const server = "coop";
const wantedScopes = args.scopes.split(/\s+/).filter(Boolean);
const expectedTools = args["expect-tools"].split(",").filter(Boolean).sort();
const codex = join(args["node-clients"], "node_modules/@openai/codex/bin/codex.js");
const home = mkdtempSync(join(tmpdir(), "coop-codex-"));
const codexHome = join(home, "codex");
const credentials = join(codexHome, ".credentials.json");
const browserLog = join(home, "browser.log");
mkdirSync(codexHome);

// Network features off; credentials in a file; nothing outside `home`.
writeFileSync(
  join(codexHome, "config.toml"),
  `check_for_update_on_startup = false
mcp_oauth_credentials_store = "file"
model_provider = "coop-test-offline"
model = "offline"
web_search = "disabled"

[analytics]
enabled = false

[feedback]
enabled = false

# No model is ever called; the provider points where nothing listens.
[model_providers.coop-test-offline]
name = "offline"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
supports_websockets = false

[features]
apps = false
plugins = false
remote_plugin = false
in_app_updates = false
tool_suggest = false
image_generation = false
skill_mcp_dependency_install = false
daemon_auto_start = false
`,
);

class StepFailed extends Error {}
let passed = 0;
function ok(step, detail = "") {
  passed += 1;
  console.log(`PASS ${step}${detail ? `: ${detail}` : ""}`);
}
function check(condition, step, detail) {
  if (!condition) throw new StepFailed(`${step}: ${detail}`);
  ok(step, detail);
}

const env = {
  PATH: process.env.PATH,
  HOME: home,
  CODEX_HOME: codexHome,
  BROWSER: join(here, "inspector-browser.sh"),
  COOP_TEST_EMAIL: args.email,
  COOP_TEST_PASSWORD: args.password,
  COOP_TEST_SCOPES: wantedScopes.join(" "),
  COOP_TEST_BROWSER_LOG: browserLog,
  NO_COLOR: "1",
  RUST_LOG: "warn",
};

function cli(extra) {
  return new Promise((resolve) => {
    execFile(process.execPath, [codex, ...extra], { env, cwd: home, timeout: 120_000, maxBuffer: 8 << 20 }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

function succeeded(run, step) {
  if (run.code !== 0) {
    throw new StepFailed(`${step}: codex exited ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`);
  }
  return run;
}

/** One `codex app-server` over stdio: newline-delimited JSON-RPC. */
async function appServer(body) {
  const child = spawn(process.execPath, [codex, "app-server"], { env, cwd: home, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr += d;
  });
  const pending = new Map();
  let nextId = 1;
  const lines = createInterface({ input: child.stdout });
  lines.on("line", (line) => {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    if (message.id !== undefined && pending.has(message.id) && ("result" in message || "error" in message)) {
      pending.get(message.id)(message);
      pending.delete(message.id);
    }
  });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  const call = (method, params) => {
    const id = nextId++;
    child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    const answer = new Promise((resolve) => pending.set(id, resolve));
    const timeout = new Promise((_, reject) =>
      setTimeout(() => reject(new StepFailed(`app-server: no answer to ${method} in 60s\n${stderr}`)), 60_000).unref(),
    );
    const gone = exited.then((code) => {
      throw new StepFailed(`app-server exited ${code} during ${method}\n${stderr}`);
    });
    return Promise.race([answer, timeout, gone]).then((message) => {
      if (message.error) throw new StepFailed(`app-server ${method}: ${JSON.stringify(message.error)}\n${stderr}`);
      return message.result;
    });
  };
  try {
    await call("initialize", { clientInfo: { name: "coop-interop", version: "1.0.0" } });
    child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "initialized", params: {} })}\n`);
    return await body(call);
  } finally {
    child.stdin.end();
    child.kill();
  }
}

function browserRuns() {
  if (!existsSync(browserLog)) return [];
  return readFileSync(browserLog, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

/** Codex's stored credentials for Coop (one entry, keyed by server name and URL hash). */
function stored() {
  if (!existsSync(credentials)) return undefined;
  const entries = Object.values(JSON.parse(readFileSync(credentials, "utf8")));
  return entries.find((e) => e.server_name === server && e.server_url === serverUrl);
}

function setStored(update) {
  const all = JSON.parse(readFileSync(credentials, "utf8"));
  for (const entry of Object.values(all)) {
    if (entry.server_name === server) Object.assign(entry, update);
  }
  writeFileSync(credentials, JSON.stringify(all));
}

// A Coop tool's structured result (its text content is for people).
function toolJson(result, step) {
  if (result?.isError) throw new StepFailed(`${step}: tool error ${JSON.stringify(result)}`);
  if (!result?.structuredContent) throw new StepFailed(`${step}: no structured content in ${JSON.stringify(result)}`);
  return result.structuredContent;
}

async function mcpStatus(accessToken) {
  const response = await fetch(serverUrl, {
    method: "POST",
    headers: {
      authorization: `Bearer ${accessToken}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
  });
  return { status: response.status, www: response.headers.get("www-authenticate") ?? "" };
}

async function tokenRefresh(clientId, refreshToken) {
  const response = await fetch(`${issuer}/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: refreshToken, client_id: clientId }),
  });
  return { status: response.status, body: await response.json().catch(() => ({})) };
}

async function toolNames(call) {
  const status = await call("mcpServerStatus/list", { serverName: server });
  const entry = (status.data ?? []).find((s) => s.name === server);
  if (!entry) throw new StepFailed(`tools/list: Codex lists no server ${server}: ${JSON.stringify(status).slice(0, 600)}`);
  return Object.values(entry.tools ?? {})
    .map((t) => t.name)
    .sort();
}

async function run() {
  // 1. The whole OAuth flow, at `codex mcp add`.
  const added = succeeded(
    await cli(["mcp", "add", server, "--url", serverUrl, "--oauth-client-registration", "dcr"]),
    "codex mcp add",
  );
  const said = `${added.stdout}${added.stderr}`;
  check(
    said.includes("Detected OAuth support") && said.includes("Successfully logged in"),
    "401 and discovery",
    "codex mcp add detected OAuth from Coop's 401 and metadata, and logged in",
  );
  const runs = browserRuns();
  const login = runs[0];
  check(runs.length === 1 && login?.ok, "browser opened", `Codex ran $BROWSER once; ${login?.error ?? "signed in"}`);
  const request = login.request;
  check(
    request.code_challenge_method === "S256" &&
      (request.code_challenge ?? "").length >= 43 &&
      request.resource === serverUrl &&
      request.response_type === "code",
    "authorization request",
    `PKCE S256, resource=${request.resource}, scope=${JSON.stringify(request.scope)}, redirect_uri=${request.redirect_uri}`,
  );
  check(
    login.params.code && login.params.state === request.state && login.params.iss === issuer && login.callbackStatus === 200,
    "sign-in and consent",
    `ticked ${JSON.stringify(login.ticked)}; Codex's callback answered ${login.callbackStatus}`,
  );
  const first = stored();
  check(
    first?.client_id === request.client_id && !request.client_id.startsWith("https://"),
    "dynamic client registration",
    `Codex registered client ${request.client_id} (no metadata document)`,
  );
  check(
    Boolean(first?.access_token) && Boolean(first?.refresh_token) && first?.issuer === issuer,
    "code exchange",
    `Codex stored an access token, a refresh token, issuer ${first?.issuer}, scopes ${JSON.stringify(first?.scopes)}`,
  );
  const listed = JSON.parse(succeeded(await cli(["mcp", "list", "--json"]), "codex mcp list").stdout);
  const entry = listed.find((s) => s.name === server);
  check(entry?.auth_status === "o_auth", "codex mcp list", `auth_status=${entry?.auth_status}`);

  // 2. Tools, through Codex's own MCP client.
  await appServer(async (call) => {
    const names = await toolNames(call);
    check(JSON.stringify(names) === JSON.stringify(expectedTools), "tools/list", JSON.stringify(names));
    const thread = await call("thread/start", {});
    const threadId = thread?.thread?.id;
    const flocks = toolJson(
      await call("mcpServer/tool/call", { server, threadId, tool: "list_flocks", arguments: {} }),
      "read tool",
    );
    check(JSON.stringify(flocks).includes(args.flock), "read tool list_flocks", `sees flock ${args.flock}`);
    if (expectedTools.includes("record_daily_entry")) {
      const day = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
      const written = toolJson(
        await call("mcpServer/tool/call", {
          server,
          threadId,
          tool: "record_daily_entry",
          arguments: { flock: args.flock, date: day, eggs_collected: 746, notes: "codex" },
        }),
        "write tool",
      );
      check(written?.entry?.eggs_collected === 746, "write tool record_daily_entry", `${day}: change=${written?.change}`);
    } else {
      ok("write tool record_daily_entry", "not granted to this role and scopes: not listed, not called");
    }
  });

  // 3. Refresh, by Codex: the stored token looks expired to it.
  const before = stored();
  setStored({ expires_at: Date.now() - 1_000 });
  await appServer(async (call) => {
    const names = await toolNames(call);
    const after = stored();
    check(
      after?.access_token && after.access_token !== before.access_token && after.refresh_token && after.refresh_token !== before.refresh_token && after.expires_at > Date.now(),
      "refresh",
      "a new Codex session refreshed the expired token itself (new access token, rotated refresh token, written back)",
    );
    check(names.length === expectedTools.length, "tools/list after refresh", `${names.length} tools`);
    const thread = await call("thread/start", {});
    const again = toolJson(
      await call("mcpServer/tool/call", { server, threadId: thread?.thread?.id, tool: "list_flocks", arguments: {} }),
      "call after refresh",
    );
    check(JSON.stringify(again).includes(args.flock), "call after refresh", "list_flocks with the new access token");
  });
  const held = stored();

  // 4. `codex mcp logout` forgets the credentials, locally only.
  succeeded(await cli(["mcp", "logout", server]), "codex mcp logout");
  const stillThere = await mcpStatus(held.access_token);
  check(stored() === undefined, "codex mcp logout", `credentials removed; Coop not told (the held access token still gets ${stillThere.status})`);

  // 5. RFC 7009 revocation of the refresh token Codex held.
  const revoked = await fetch(`${issuer}/revoke`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token: held.refresh_token, token_type_hint: "refresh_token", client_id: held.client_id }),
  });
  check(revoked.status === 200, "revocation", `POST /revoke (the refresh token Codex held, public client) → ${revoked.status}`);

  // 6. The tokens held then, and before the refresh, are dead.
  for (const [label, token] of [
    ["old access token refused", held.access_token],
    ["pre-refresh access token refused", before.access_token],
  ]) {
    const { status, www } = await mcpStatus(token);
    check(status === 401 && www.includes('error="invalid_token"'), label, `${status}, WWW-Authenticate: ${www}`);
  }
  for (const [label, token] of [
    ["old refresh token refused", held.refresh_token],
    ["pre-refresh refresh token refused", before.refresh_token],
  ]) {
    const { status, body } = await tokenRefresh(held.client_id, token);
    check(status === 400 && body.error === "invalid_grant", label, `${status} ${body.error}`);
  }
}

const started = performance.now();
let code = 1;
try {
  await run();
  console.log(`codex: ${passed} passed, 0 failed in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  code = 0;
} catch (error) {
  console.log(error instanceof StepFailed ? `FAIL ${error.message}` : `FAIL unexpected ${error?.stack ?? error}`);
  for (const entry of browserRuns()) console.log(`     browser: ${JSON.stringify(entry)}`);
  console.log(`codex: failed after ${((performance.now() - started) / 1000).toFixed(1)}s`);
}
if (!args.keep) rmSync(home, { recursive: true, force: true });
else console.log(`kept ${home}`);
process.exit(code);
