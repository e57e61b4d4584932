// Drives Coop end to end with the MCP Inspector's command-line mode.
//
// Usage:
//   node inspector_flow.mjs --node-clients DIR --issuer http://127.0.0.1:PORT \
//     --email worker@farm.example --password '...' \
//     --scopes "farm:read daily-entries:write" \
//     --expect-tools list_flocks,... --flock Alpha
//
// DIR is what tests/tools/node-clients.sh prints. Needs Node 22 on PATH.
//
// Each step is one run of `mcp-inspector --cli`, as a person or a CI job
// would type it, with the Inspector's state in a fresh directory:
//   1. `--method tools/list`: no token, so the Inspector meets the 401,
//      discovers, registers, opens its "browser" and waits on its loopback
//      callback. The browser is `$BROWSER` (the `open` package runs
//      xdg-open, which runs `$BROWSER URL` when there is no desktop):
//      inspector-browser.sh, which signs in and consents by form post
//      (browser.mjs) and then follows the redirect to the callback.
//   2. `tools/call list_flocks` and 3. `tools/call record_daily_entry`, with
//      `--stored-auth-only` (no new login allowed).
//   4. `--use-stored-auth`: the Inspector refreshes the stored token itself
//      (refresh_token grant) before the call.
//   5. RFC 7009 revocation of the stored refresh token, by plain HTTP: the
//      Inspector's `--relogin` would revoke, but skips it after an ad-hoc
//      `--cli` login (it looks for metadata where that login does not keep
//      it; see docs/interop.md).
//   6. The tokens held at step 5 are dead: the access token gets a 401 on
//      /mcp and the refresh token `invalid_grant` at /token.
//
// Prints one PASS/FAIL line per step; exits non-zero on the first failure.

import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
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
const wantedScopes = args.scopes.split(/\s+/).filter(Boolean);
const expectedTools = args["expect-tools"].split(",").filter(Boolean).sort();
const inspector = join(args["node-clients"], "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
const home = mkdtempSync(join(tmpdir(), "coop-inspector-"));
const storage = join(home, "storage");
const browserLog = join(home, "browser.log");

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

// The Inspector's environment: its own home and state, secrets in a file
// there, no desktop, and our browser.
const env = {
  PATH: process.env.PATH,
  HOME: home,
  MCP_STORAGE_DIR: storage,
  MCP_CATALOG_PATH: join(home, "mcp.json"),
  MCP_CLIENT_CONFIG_PATH: join(home, "client.json"),
  MCP_INSPECTOR_SECRET_STORE: "file",
  MCP_AUTO_OPEN_ENABLED: "true",
  BROWSER: join(here, "inspector-browser.sh"),
  COOP_TEST_EMAIL: args.email,
  COOP_TEST_PASSWORD: args.password,
  COOP_TEST_SCOPES: wantedScopes.join(" "),
  COOP_TEST_BROWSER_LOG: browserLog,
  NO_COLOR: "1",
};

function cli(extra) {
  const argv = [inspector, "--cli", ...extra, "--format", "json"];
  return new Promise((resolve) => {
    execFile(process.execPath, argv, { env, timeout: 90_000, maxBuffer: 8 << 20 }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

function parsed(run, step) {
  if (run.code !== 0) {
    throw new StepFailed(`${step}: the Inspector exited ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`);
  }
  try {
    return JSON.parse(run.stdout);
  } catch {
    throw new StepFailed(`${step}: the Inspector printed no JSON\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`);
  }
}

function browserRuns() {
  if (!existsSync(browserLog)) return [];
  return readFileSync(browserLog, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

/** Every JSON document in the Inspector's state directory. */
function stateFiles() {
  const out = {};
  for (const name of ["oauth.json", "secrets.json"]) {
    const path = join(storage, name);
    if (existsSync(path)) {
      try {
        out[name] = JSON.parse(readFileSync(path, "utf8"));
      } catch {
        out[name] = readFileSync(path, "utf8");
      }
    }
  }
  return out;
}

/** The values stored under a key named `key` anywhere in `value` (JSON-encoded strings are looked into too). */
function valuesOf(value, key, found = []) {
  if (typeof value === "string") {
    if (value.startsWith("{") || value.startsWith("[")) {
      try {
        valuesOf(JSON.parse(value), key, found);
      } catch {
        // not JSON
      }
    }
  } else if (Array.isArray(value)) {
    for (const v of value) valuesOf(v, key, found);
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if ((k === key || k.endsWith(`.${key}`) || k.endsWith(`:${key}`)) && typeof v === "string") found.push(v);
      valuesOf(v, key, found);
    }
  }
  return found;
}

function storedTokens() {
  const state = stateFiles();
  const access = [...new Set(valuesOf(state, "access_token"))];
  const refresh = [...new Set(valuesOf(state, "refresh_token"))];
  const clientIds = [...new Set(valuesOf(state, "client_id"))];
  return { access, refresh, clientIds, state };
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

// A Coop tool's structured result (its text content is for people).
function toolJson(result, step) {
  const found = find(result, "structuredContent");
  if (result.isError || find(result, "isError") === true) throw new StepFailed(`${step}: tool error ${JSON.stringify(result)}`);
  if (!found) throw new StepFailed(`${step}: no structured content in ${JSON.stringify(result)}`);
  return found;
}

/** The first value under `key` in the Inspector's JSON output, however it wraps the result. */
function find(value, key) {
  if (Array.isArray(value)) {
    for (const v of value) {
      const f = find(v, key);
      if (f !== undefined) return f;
    }
  } else if (value && typeof value === "object") {
    if (key in value) return value[key];
    for (const v of Object.values(value)) {
      const f = find(v, key);
      if (f !== undefined) return f;
    }
  }
  return undefined;
}

async function run() {
  const callback = ["--callback-url", "http://127.0.0.1:0/oauth/callback"];

  // 1. The whole OAuth flow, then tools/list.
  const listed = parsed(await cli([serverUrl, "--method", "tools/list", ...callback]), "tools/list with login");
  const runs = browserRuns();
  const login = runs[0];
  check(runs.length === 1 && login?.ok, "browser opened", `xdg-open ran $BROWSER once; ${login?.error ?? "signed in"}`);
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
    login.params.code && login.params.iss === issuer && login.callbackStatus === 200,
    "sign-in and consent",
    `ticked ${JSON.stringify(login.ticked)}; the Inspector's callback answered ${login.callbackStatus}`,
  );
  const first = storedTokens();
  check(
    first.clientIds.includes(request.client_id) && !request.client_id.startsWith("https://"),
    "401 and discovery, dynamic client registration",
    `the Inspector registered client ${request.client_id} from the discovered metadata`,
  );
  check(
    first.access.length >= 1 && first.refresh.length >= 1,
    "code exchange",
    `the Inspector stored an access token and a refresh token`,
  );
  const names = (find(listed, "tools") ?? []).map((t) => t.name).sort();
  check(
    JSON.stringify(names) === JSON.stringify(expectedTools),
    "tools/list",
    names.length > 0 ? JSON.stringify(names) : `no tools in ${JSON.stringify(listed).slice(0, 600)}`,
  );

  // 2. A read tool, on the stored tokens only.
  const stored = ["--server-url", serverUrl, "--stored-auth-only"];
  const flocks = toolJson(
    parsed(await cli([...stored, "--method", "tools/call", "--tool-name", "list_flocks"]), "read tool"),
    "read tool",
  );
  check(JSON.stringify(flocks).includes(args.flock), "read tool list_flocks", `sees flock ${args.flock}`);

  // 3. The write tool, when granted.
  if (expectedTools.includes("record_daily_entry")) {
    const day = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const written = toolJson(
      parsed(
        await cli([
          ...stored,
          "--method",
          "tools/call",
          "--tool-name",
          "record_daily_entry",
          "--tool-args-json",
          JSON.stringify({ flock: args.flock, date: day, eggs_collected: 654, notes: "inspector" }),
        ]),
        "write tool",
      ),
      "write tool",
    );
    check(written?.entry?.eggs_collected === 654, "write tool record_daily_entry", `${day}: change=${written?.change}`);
  } else {
    ok("write tool record_daily_entry", "not granted to this role and scopes: not listed, not called");
  }

  // 4. Refresh, by the Inspector.
  const before = storedTokens();
  const afterRefresh = parsed(await cli(["--server-url", serverUrl, "--use-stored-auth", "--method", "tools/list"]), "refresh");
  const refreshed = storedTokens();
  const newRefresh = refreshed.refresh.filter((t) => !before.refresh.includes(t));
  const newAccess = refreshed.access.filter((t) => !before.access.includes(t));
  check(
    newRefresh.length === 1 && newAccess.length === 1 && (find(afterRefresh, "tools") ?? []).length === expectedTools.length,
    "refresh",
    "--use-stored-auth refreshed (new access token, rotated refresh token) and the call succeeded",
  );
  const heldAccess = newAccess[0];
  const heldRefresh = newRefresh[0];
  const clientId = request.client_id;

  // 5. Revocation (RFC 7009) of the refresh token the Inspector holds.
  // Plain HTTP: the Inspector's own `--relogin` revocation finds no
  // authorization server metadata where an ad-hoc `--cli` login keeps it
  // (docs/interop.md) and skips the request without a word.
  const revoked = await fetch(`${issuer}/revoke`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token: heldRefresh, token_type_hint: "refresh_token", client_id: clientId }),
  });
  check(revoked.status === 200, "revocation", `POST /revoke (the stored refresh token, public client) → ${revoked.status}`);

  // 6. The tokens held when revoking are dead, and so are the ones from
  // before the refresh.
  for (const [label, token] of [
    ["old access token refused", heldAccess],
    ["pre-refresh access token refused", before.access[0]],
  ]) {
    const { status, www } = await mcpStatus(token);
    check(status === 401 && www.includes('error="invalid_token"'), label, `${status}, WWW-Authenticate: ${www}`);
  }
  for (const [label, token] of [
    ["old refresh token refused", heldRefresh],
    ["pre-refresh refresh token refused", before.refresh[0]],
  ]) {
    const { status, body } = await tokenRefresh(clientId, token);
    check(status === 400 && body.error === "invalid_grant", label, `${status} ${body.error}`);
  }
}

const started = performance.now();
let code = 1;
try {
  await run();
  console.log(`inspector-cli: ${passed} passed, 0 failed in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  code = 0;
} catch (error) {
  console.log(error instanceof StepFailed ? `FAIL ${error.message}` : `FAIL unexpected ${error?.stack ?? error}`);
  for (const entry of browserRuns()) console.log(`     browser: ${JSON.stringify(entry)}`);
  console.log(`inspector-cli: failed after ${((performance.now() - started) / 1000).toFixed(1)}s`);
}
if (!args.keep) rmSync(home, { recursive: true, force: true });
else console.log(`kept ${home}`);
process.exit(code);
