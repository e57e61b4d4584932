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
import { mkdtempSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { browserEnv, check, checkBrowserLogin, checkReadAndWrite, checkRevokedGrant, checkToolList, finish,
  flowArgs, printBrowserRuns, removeHome, requireArgs, settings, StepFailed } from "./flow.mjs";

const args = flowArgs({ keep: { type: "boolean", default: false } });
requireArgs(args, ["node-clients", "issuer", "email", "password", "expect-tools", "flock"]);

const here = dirname(fileURLToPath(import.meta.url));
const { issuer, serverUrl, wantedScopes, expectedTools } = settings(args);
const inspector = join(args["node-clients"], "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
const home = mkdtempSync(join(tmpdir(), "coop-inspector-"));
const storage = join(home, "storage");
const browserLog = join(home, "browser.log");

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
  ...browserEnv({ here, args, wantedScopes, browserLog }),
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
  const login = checkBrowserLogin(browserLog, "xdg-open", serverUrl);
  const request = login.request;
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
  checkToolList(
    names,
    expectedTools,
    names.length > 0 ? JSON.stringify(names) : `no tools in ${JSON.stringify(listed).slice(0, 600)}`,
  );

  // 2. A read tool and 3. the write tool, when granted, on the stored
  // tokens only.
  const stored = ["--server-url", serverUrl, "--stored-auth-only"];
  const call = async (name, toolArgs, step) => {
    const extra = name === "list_flocks" ? [] : ["--tool-args-json", JSON.stringify(toolArgs)];
    const run = await cli([...stored, "--method", "tools/call", "--tool-name", name, ...extra]);
    return toolJson(parsed(run, step), step);
  };
  await checkReadAndWrite(call, { flock: args.flock, expectedTools, eggs: 654, notes: "inspector" });

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
  // 6. The tokens held when revoking are dead, and so are the ones from
  // before the refresh.
  await checkRevokedGrant({
    issuer,
    serverUrl,
    info: { client_id: clientId },
    held: { access_token: heldAccess, refresh_token: heldRefresh },
    before: { access_token: before.access[0], refresh_token: before.refresh[0] },
    what: "the stored refresh token, public client",
  });
}

await finish("inspector-cli", run, {
  onFailure: () => printBrowserRuns(browserLog),
  cleanup: () => removeHome(home, args.keep),
});
