// Drives Coop end to end with the official MCP TypeScript SDK client
// (`Client` + `StreamableHTTPClientTransport` with an `OAuthClientProvider`).
//
// Usage:
//   node ts_sdk_flow.mjs --node-clients DIR --issuer http://127.0.0.1:PORT \
//     --email worker@farm.example --password '...' --mode none \
//     --scopes "farm:read daily-entries:write" \
//     --expect-tools list_flocks,get_flock,... --flock Alpha
//
// DIR is what tests/tools/node-clients.sh prints (its node_modules holds the
// pinned SDK). Modes:
//   none    Dynamic Client Registration as a public client.
//   basic   Dynamic Client Registration with client_secret_basic: the SDK
//           then sends client_id and secret only in the Basic header.
//   cimd    The provider's clientMetadataUrl (--client-metadata-url) is the
//           client_id; Coop fetches the document over https; no registration.
//
// The SDK does discovery, registration, PKCE, the authorization request,
// the code exchange (`transport.finishAuth`) and the refresh (`auth()` with
// a stored refresh token, the path its transport takes on a 401). The
// browser step is browser.mjs. Revocation (RFC 7009), which this SDK version
// does not do, and the checks that the old tokens are dead are plain fetch.
//
// Prints one PASS/FAIL line per step; exits non-zero on the first failure.

import { parseArgs } from "node:util";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { signInAndConsent } from "./browser.mjs";

const { values: args } = parseArgs({
  options: {
    "node-clients": { type: "string", default: process.env.COOP_NODE_CLIENTS },
    issuer: { type: "string" },
    email: { type: "string" },
    password: { type: "string" },
    mode: { type: "string", default: "none" },
    "client-metadata-url": { type: "string" },
    scopes: { type: "string", default: "farm:read daily-entries:write" },
    "expect-tools": { type: "string" },
    flock: { type: "string" },
  },
});
for (const required of ["node-clients", "issuer", "email", "password", "expect-tools", "flock"]) {
  if (!args[required]) {
    console.error(`--${required} is required`);
    process.exit(2);
  }
}
if (!["none", "basic", "cimd"].includes(args.mode)) {
  console.error(`--mode is none, basic or cimd, not ${args.mode}`);
  process.exit(2);
}
if (args.mode === "cimd" && !args["client-metadata-url"]) {
  console.error("--mode cimd needs --client-metadata-url");
  process.exit(2);
}

const sdk = (path) =>
  import(pathToFileURL(join(args["node-clients"], "node_modules/@modelcontextprotocol/sdk/dist/esm", path)).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { auth, UnauthorizedError } = await sdk("client/auth.js");

const issuer = args.issuer.replace(/\/$/, "");
const serverUrl = new URL(`${issuer}/mcp`);
const redirectUrl = "http://127.0.0.1:53682/callback";
const wantedScopes = args.scopes.split(/\s+/).filter(Boolean);
const expectedTools = args["expect-tools"].split(",").filter(Boolean).sort();

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

// Every HTTP exchange the SDK makes, OAuth included (the transport hands
// its fetch to `auth()`).
const trace = [];
async function tracingFetch(input, init) {
  const response = await fetch(input, init);
  const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
  const method = init?.method ?? (input instanceof Request ? input.method : "GET");
  trace.push({ method, path: url.pathname, status: response.status, www: response.headers.get("www-authenticate") });
  return response;
}
const find = (method, path) => trace.filter((e) => e.method === method && e.path === path);

// The provider: in memory, with the browser step at redirectToAuthorization.
let browserResult;
const store = { client: undefined, tokens: undefined, verifier: undefined, discovery: undefined };
const provider = {
  get redirectUrl() {
    return redirectUrl;
  },
  clientMetadataUrl: args.mode === "cimd" ? args["client-metadata-url"] : undefined,
  get clientMetadata() {
    return {
      client_name: `Coop interop: TypeScript SDK (${args.mode})`,
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: args.mode === "basic" ? "client_secret_basic" : "none",
    };
  },
  state: () => crypto.randomUUID(),
  clientInformation: () => store.client,
  saveClientInformation: (info) => {
    store.client = info;
  },
  tokens: () => store.tokens,
  saveTokens: (tokens) => {
    store.tokens = tokens;
  },
  saveCodeVerifier: (verifier) => {
    store.verifier = verifier;
  },
  codeVerifier: () => store.verifier,
  saveDiscoveryState: (state) => {
    store.discovery = state;
  },
  discoveryState: () => store.discovery,
  async redirectToAuthorization(authorizationUrl) {
    const request = Object.fromEntries(authorizationUrl.searchParams);
    check(
      request.code_challenge_method === "S256" &&
        (request.code_challenge ?? "").length >= 43 &&
        request.resource === serverUrl.href &&
        request.response_type === "code",
      "authorization request",
      `PKCE S256, resource=${request.resource}, scope=${JSON.stringify(request.scope)}, client_id=${request.client_id}`,
    );
    const done = await signInAndConsent({
      authorizationUrl: authorizationUrl.href,
      email: args.email,
      password: args.password,
      scopes: wantedScopes,
    });
    check(
      done.params.code && done.params.state === request.state && done.params.iss === issuer,
      "sign-in and consent",
      `signed in as ${args.email}, ticked ${JSON.stringify(wantedScopes)}, redirect carries code, state and iss`,
    );
    browserResult = done.params;
  },
};

// A Coop tool's structured result (its text content is for people).
function toolJson(result) {
  if (result.isError) throw new StepFailed(`tool error: ${JSON.stringify(result)}`);
  if (!result.structuredContent) throw new StepFailed(`no structured content in ${JSON.stringify(result)}`);
  return result.structuredContent;
}

function clientAuth(info, form) {
  const headers = { "content-type": "application/x-www-form-urlencoded" };
  const body = new URLSearchParams(form);
  if (info.client_secret && info.token_endpoint_auth_method === "client_secret_basic") {
    headers.authorization = `Basic ${btoa(`${encodeURIComponent(info.client_id)}:${encodeURIComponent(info.client_secret)}`)}`;
  } else {
    body.set("client_id", info.client_id);
    if (info.client_secret) body.set("client_secret", info.client_secret);
  }
  return { headers, body };
}

async function tokenRefresh(info, refreshToken) {
  const response = await fetch(`${issuer}/token`, {
    method: "POST",
    ...clientAuth(info, { grant_type: "refresh_token", refresh_token: refreshToken }),
  });
  return { status: response.status, body: await response.json().catch(() => ({})) };
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

async function run() {
  const transportOptions = { authProvider: provider, fetch: tracingFetch };
  let client = new Client({ name: "coop-interop-ts", version: "1.0.0" });
  let transport = new StreamableHTTPClientTransport(serverUrl, transportOptions);
  try {
    await client.connect(transport);
    throw new StepFailed("401 and discovery (challenge): the first connection succeeded without a token");
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
  }

  // 1. The first call was refused, and the SDK found its way from there.
  const first = trace[0];
  check(
    first && first.path === "/mcp" && first.status === 401 && (first.www ?? "").includes("resource_metadata="),
    "401 and discovery (challenge)",
    `${first?.method} /mcp → ${first?.status}, WWW-Authenticate: ${first?.www}`,
  );
  const prm = trace.find((e) => e.path.startsWith("/.well-known/oauth-protected-resource") && e.status === 200);
  const asm = trace.find(
    (e) =>
      (e.path === "/.well-known/oauth-authorization-server" || e.path === "/.well-known/openid-configuration") &&
      e.status === 200,
  );
  check(prm && asm, "401 and discovery (metadata)", `${prm?.path} then ${asm?.path}`);

  // 2. Registration, or a Client ID Metadata Document.
  const registrations = find("POST", "/register");
  const info = store.client;
  if (args.mode === "cimd") {
    check(
      registrations.length === 0 && info?.client_id === args["client-metadata-url"],
      "client id metadata document",
      `client_id=${info?.client_id}, no /register call`,
    );
  } else {
    const want = args.mode === "basic" ? "client_secret_basic" : "none";
    check(
      registrations.length === 1 &&
        registrations[0].status === 201 &&
        info?.token_endpoint_auth_method === want &&
        Boolean(info?.client_secret) === (want !== "none"),
      "dynamic client registration",
      `POST /register → ${registrations[0]?.status}, token_endpoint_auth_method=${info?.token_endpoint_auth_method}`,
    );
  }

  // 3-5. The code exchange, by the SDK.
  if (!browserResult) throw new StepFailed("sign-in and consent: the browser never ran");
  await transport.finishAuth(browserResult.code);
  const exchanges = find("POST", "/token");
  const firstTokens = store.tokens;
  check(
    exchanges.length === 1 && exchanges[0].status === 200 && firstTokens?.refresh_token && firstTokens?.expires_in,
    "code exchange",
    `POST /token → ${exchanges[0]?.status}, scope=${JSON.stringify(firstTokens?.scope)}, expires_in=${firstTokens?.expires_in}`,
  );
  const granted = (firstTokens.scope ?? "").split(/\s+/).filter(Boolean).sort();
  check(
    JSON.stringify(granted) === JSON.stringify([...wantedScopes].sort()),
    "granted scopes",
    JSON.stringify(granted),
  );

  client = new Client({ name: "coop-interop-ts", version: "1.0.0" });
  transport = new StreamableHTTPClientTransport(serverUrl, transportOptions);
  await client.connect(transport);
  check(
    transport.protocolVersion === "2025-11-25",
    "protocol era",
    `initialize handshake, version ${transport.protocolVersion}`,
  );

  // 6. tools/list shows exactly role ∩ granted scopes.
  const listed = await client.listTools();
  const names = listed.tools.map((t) => t.name).sort();
  check(JSON.stringify(names) === JSON.stringify(expectedTools), "tools/list", JSON.stringify(names));

  // 7. A read tool.
  const flocks = toolJson(await client.callTool({ name: "list_flocks", arguments: {} }));
  check(JSON.stringify(flocks).includes(args.flock), "read tool list_flocks", `sees flock ${args.flock}`);

  // 8. The write tool, when granted.
  if (expectedTools.includes("record_daily_entry")) {
    const day = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const written = toolJson(
      await client.callTool({
        name: "record_daily_entry",
        arguments: { flock: args.flock, date: day, eggs_collected: 733, notes: `typescript ${args.mode}` },
      }),
    );
    check(written?.entry?.eggs_collected === 733, "write tool record_daily_entry", `${day}: change=${written?.change}`);
  } else {
    ok("write tool record_daily_entry", "not granted to this role and scopes: not listed, not called");
  }

  // 9. Refresh, by the SDK: `auth()` with a stored refresh token and no
  // code refreshes (what the transport does on a 401).
  const before = store.tokens;
  const result = await auth(provider, { serverUrl, fetchFn: tracingFetch });
  const refreshed = store.tokens;
  const refreshes = find("POST", "/token").slice(1);
  check(
    result === "AUTHORIZED" &&
      refreshes.length === 1 &&
      refreshes[0].status === 200 &&
      refreshed.access_token !== before.access_token &&
      refreshed.refresh_token &&
      refreshed.refresh_token !== before.refresh_token,
    "refresh",
    "POST /token grant_type=refresh_token → 200, new access token, rotated refresh token",
  );
  const again = toolJson(await client.callTool({ name: "list_flocks", arguments: {} }));
  check(JSON.stringify(again).includes(args.flock), "call after refresh", "list_flocks with the new access token");
  await client.close();

  // 10. RFC 7009 revocation of the refresh token ends the grant.
  const revoked = await fetch(`${issuer}/revoke`, {
    method: "POST",
    ...clientAuth(info, { token: refreshed.refresh_token, token_type_hint: "refresh_token" }),
  });
  check(revoked.status === 200, "revocation", `POST /revoke (refresh token) → ${revoked.status}`);

  // 11. The old tokens are dead: the ones held when revoking, and the ones
  // from before the refresh.
  for (const [label, token] of [
    ["old access token refused", refreshed.access_token],
    ["pre-refresh access token refused", before.access_token],
  ]) {
    const { status, www } = await mcpStatus(token);
    check(status === 401 && www.includes('error="invalid_token"'), label, `${status}, WWW-Authenticate: ${www}`);
  }
  for (const [label, token] of [
    ["old refresh token refused", refreshed.refresh_token],
    ["pre-refresh refresh token refused", before.refresh_token],
  ]) {
    const { status, body } = await tokenRefresh(info, token);
    check(status === 400 && body.error === "invalid_grant", label, `${status} ${body.error}`);
  }
}

const started = performance.now();
try {
  await run();
  console.log(`typescript-sdk ${args.mode}: ${passed} passed, 0 failed in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  process.exit(0);
} catch (error) {
  console.log(error instanceof StepFailed ? `FAIL ${error.message}` : `FAIL unexpected ${error?.stack ?? error}`);
  console.log(`typescript-sdk ${args.mode}: failed after ${((performance.now() - started) / 1000).toFixed(1)}s`);
  process.exit(1);
}
