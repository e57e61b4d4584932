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
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { browserEnv, check, checkBrowserLogin, checkReadAndWrite, checkRevokedGrant, checkToolList, finish,
  flowArgs, mcpStatus, ok, printBrowserRuns, removeHome, requireArgs, settings, StepFailed, toolJson } from "./flow.mjs";

const args = flowArgs({ keep: { type: "boolean", default: false } });
requireArgs(args, ["node-clients", "issuer", "email", "password", "expect-tools", "flock"]);

const here = dirname(fileURLToPath(import.meta.url));
const { issuer, serverUrl, wantedScopes, expectedTools } = settings(args);
const server = "coop";
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

const env = {
  PATH: process.env.PATH,
  HOME: home,
  CODEX_HOME: codexHome,
  ...browserEnv({ here, args, wantedScopes, browserLog }),
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
  const login = checkBrowserLogin(browserLog, "Codex", serverUrl);
  const request = login.request;
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
    checkToolList(await toolNames(call), expectedTools);
    const thread = await call("thread/start", {});
    const threadId = thread?.thread?.id;
    const callTool = async (tool, toolArgs, step) =>
      toolJson(await call("mcpServer/tool/call", { server, threadId, tool, arguments: toolArgs }), step);
    await checkReadAndWrite(callTool, { flock: args.flock, expectedTools, eggs: 746, notes: "codex" });
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
  const stillThere = await mcpStatus(serverUrl, held.access_token);
  check(stored() === undefined, "codex mcp logout", `credentials removed; Coop not told (the held access token still gets ${stillThere.status})`);

  // 5. RFC 7009 revocation of the refresh token Codex held; the tokens held
  // then, and before the refresh, are dead.
  await checkRevokedGrant({
    issuer,
    serverUrl,
    info: { client_id: held.client_id },
    held,
    before,
    what: "the refresh token Codex held, public client",
  });
}

await finish("codex", run, {
  onFailure: () => printBrowserRuns(browserLog),
  cleanup: () => removeHome(home, args.keep),
});
