// The steps the Node client scripts share, so that each script says only
// what its client does differently: the command line every script takes,
// the PASS/FAIL report, a fetch that records every exchange, an in-memory
// OAuth provider for the SDKs, the checks of the authorization request, of
// discovery and of the tools a caller sees, the plain-HTTP revocation and
// the checks that the old tokens are dead, and the run's last line and exit
// code. Imported by ts_sdk_flow.mjs, ts_sdk_v2_flow.mjs, inspector_flow.mjs
// and codex_flow.mjs; not a program itself.

import { existsSync, readFileSync, rmSync } from "node:fs";
import { parseArgs } from "node:util";

import { signInAndConsent } from "./browser.mjs";

/** The options every script takes, plus `extra`; the parsed values. */
export function flowArgs(extra = {}) {
  const { values } = parseArgs({
    options: {
      "node-clients": { type: "string", default: process.env.COOP_NODE_CLIENTS },
      issuer: { type: "string" },
      email: { type: "string" },
      password: { type: "string" },
      scopes: { type: "string", default: "farm:read daily-entries:write" },
      "expect-tools": { type: "string" },
      flock: { type: "string" },
      ...extra,
    },
  });
  return values;
}

/** Exits 2 naming the first of `names` not given. */
export function requireArgs(args, names) {
  for (const required of names) {
    if (!args[required]) {
      console.error(`--${required} is required`);
      process.exit(2);
    }
  }
}

/** What the arguments say about the server and the expected outcome. */
export function settings(args) {
  const issuer = args.issuer.replace(/\/$/, "");
  return {
    issuer,
    serverUrl: `${issuer}/mcp`,
    wantedScopes: args.scopes.split(/\s+/).filter(Boolean),
    expectedTools: args["expect-tools"].split(",").filter(Boolean).sort(),
  };
}

export class StepFailed extends Error {}

let passed = 0;

export function ok(step, detail = "") {
  passed += 1;
  console.log(`PASS ${step}${detail ? `: ${detail}` : ""}`);
}

export function check(condition, step, detail) {
  if (!condition) throw new StepFailed(`${step}: ${detail}`);
  ok(step, detail);
}

/**
 * Runs the script's steps and ends the process: the summary line `name:
 * N passed, …` and exit 0, or the failure, `onFailure()`'s lines and
 * `name: failed after …` and exit 1. `cleanup()` runs either way.
 */
export async function finish(name, steps, { onFailure = () => {}, cleanup = () => {} } = {}) {
  const started = performance.now();
  const elapsed = () => ((performance.now() - started) / 1000).toFixed(1);
  let code = 1;
  try {
    await steps();
    console.log(`${name}: ${passed} passed, 0 failed in ${elapsed()}s`);
    code = 0;
  } catch (error) {
    console.log(error instanceof StepFailed ? `FAIL ${error.message}` : `FAIL unexpected ${error?.stack ?? error}`);
    onFailure();
    console.log(`${name}: failed after ${elapsed()}s`);
  }
  cleanup();
  process.exit(code);
}

/**
 * A fetch recording every exchange made with it (an SDK hands its fetch to
 * its OAuth code too): method, path, JSON-RPC method, status,
 * `WWW-Authenticate`, whether a `DPoP` proof went and the `DPoP-Nonce`
 * that came back; for form posts the form, the Authorization scheme (never
 * its value) and a `/token` refusal's error.
 */
export function tracing() {
  const trace = [];
  async function tracingFetch(input, init) {
    const response = await fetch(input, init);
    const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
    const method = init?.method ?? (input instanceof Request ? input.method : "GET");
    let rpc;
    try {
      rpc = typeof init?.body === "string" ? JSON.parse(init.body).method : undefined;
    } catch {
      rpc = undefined;
    }
    const headers = new Headers(init?.headers);
    const dpop = headers.has("dpop");
    const nonce = response.headers.get("dpop-nonce") ?? undefined;
    const form = init?.body instanceof URLSearchParams ? new URLSearchParams(init.body) : undefined;
    const scheme = headers.get("authorization")?.split(" ")[0];
    const error =
      url.pathname === "/token" && !response.ok ? (await response.clone().json().catch(() => ({}))).error : undefined;
    trace.push({ method, path: url.pathname, rpc, status: response.status, www: response.headers.get("www-authenticate"), dpop, nonce, form, scheme, error });
    return response;
  }
  const find = (method, path) => trace.filter((e) => e.method === method && e.path === path);
  return { trace, tracingFetch, find };
}

/**
 * An SDK `OAuthClientProvider` kept in memory (`store`), registering with
 * `clientMetadata`, its browser step `redirectToAuthorization`; `extra`
 * adds or replaces members (`clientMetadataUrl`, `dpop`).
 */
export function memoryProvider({ redirectUrl, clientMetadata, redirectToAuthorization, ...extra }) {
  const store = { client: undefined, tokens: undefined, verifier: undefined, discovery: undefined };
  const provider = {
    get redirectUrl() {
      return redirectUrl;
    },
    get clientMetadata() {
      return { ...clientMetadata };
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
    redirectToAuthorization,
    ...extra,
  };
  return { store, provider };
}

/** The "authorization request" step: PKCE S256, the resource, a code; `more` ends the detail. */
export function checkAuthorizationRequest(request, resource, more) {
  check(
    request.code_challenge_method === "S256" &&
      (request.code_challenge ?? "").length >= 43 &&
      request.resource === resource &&
      request.response_type === "code",
    "authorization request",
    `PKCE S256, resource=${request.resource}, scope=${JSON.stringify(request.scope)}, ${more}`,
  );
}

/**
 * An SDK's browser step: checks the authorization request, signs in as
 * `email` and ticks `scopes` (browser.mjs), checks the redirect back.
 * Returns (the request's parameters, what browser.mjs returned).
 */
export async function authorizeInBrowser(authorizationUrl, { resource, issuer, email, password, scopes }) {
  const request = Object.fromEntries(authorizationUrl.searchParams);
  checkAuthorizationRequest(request, resource, `client_id=${request.client_id}`);
  const done = await signInAndConsent({ authorizationUrl: authorizationUrl.href, email, password, scopes });
  check(
    done.params.code && done.params.state === request.state && done.params.iss === issuer,
    "sign-in and consent",
    `signed in as ${email}, ticked ${JSON.stringify(scopes)}, redirect carries code, state and iss`,
  );
  return { request, done };
}

/** The first exchange was `/mcp` refused with a challenge naming the resource metadata. */
export function checkChallenge(trace) {
  const first = trace[0];
  check(
    first && first.path === "/mcp" && first.status === 401 && (first.www ?? "").includes("resource_metadata="),
    "401 and discovery (challenge)",
    `${first?.method} /mcp → ${first?.status}, WWW-Authenticate: ${first?.www}`,
  );
}

/** The resource metadata fetched, and the authorization server's at one of `paths`. */
export function metadataFetched(trace, paths) {
  const prm = trace.find((e) => e.path.startsWith("/.well-known/oauth-protected-resource") && e.status === 200);
  const asm = trace.find((e) => paths.includes(e.path) && e.status === 200);
  return { prm, asm };
}

/** A person's client found its way from the 401: the challenge, then both metadata documents. */
export function checkDiscovery(trace) {
  checkChallenge(trace);
  const { prm, asm } = metadataFetched(trace, [
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
  ]);
  check(prm && asm, "401 and discovery (metadata)", `${prm?.path} then ${asm?.path}`);
}

/** The "granted scopes" step: the token's `scope` is exactly what was asked. */
export function checkGrantedScopes(scope, wantedScopes) {
  const granted = (scope ?? "").split(/\s+/).filter(Boolean).sort();
  check(JSON.stringify(granted) === JSON.stringify([...wantedScopes].sort()), "granted scopes", JSON.stringify(granted));
}

/** A Coop tool's structured result (its text content is for people); `step` prefixes a refusal. */
export function toolJson(result, step) {
  const where = step ? `${step}: tool error ` : "tool error: ";
  if (result?.isError) throw new StepFailed(`${where}${JSON.stringify(result)}`);
  if (!result?.structuredContent) {
    throw new StepFailed(`${step ? `${step}: ` : ""}no structured content in ${JSON.stringify(result)}`);
  }
  return result.structuredContent;
}

/** The "tools/list" step: exactly the expected tools (sorted `names`). */
export function checkToolList(names, expectedTools, detail = JSON.stringify(names)) {
  check(JSON.stringify(names) === JSON.stringify(expectedTools), "tools/list", detail);
}

/**
 * The read tool sees the flock; the write tool records `eggs` eggs for
 * yesterday when it is expected, and is neither listed nor called when not
 * (`refused` says why: "granted" or "allowed"). `call(tool, arguments,
 * step)` calls a tool through the client and returns its structured result.
 */
export async function checkReadAndWrite(call, { flock, expectedTools, eggs, notes, refused = "granted" }) {
  const flocks = await call("list_flocks", {}, "read tool");
  check(JSON.stringify(flocks).includes(flock), "read tool list_flocks", `sees flock ${flock}`);
  if (expectedTools.includes("record_daily_entry")) {
    const day = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const written = await call("record_daily_entry", { flock, date: day, eggs_collected: eggs, notes }, "write tool");
    check(written?.entry?.eggs_collected === eggs, "write tool record_daily_entry", `${day}: change=${written?.change}`);
  } else {
    ok("write tool record_daily_entry", `not ${refused} to this role and scopes: not listed, not called`);
  }
}

/** A raw `tools/list` with `accessToken` as a bearer token: status and `WWW-Authenticate`. */
export async function mcpStatus(serverUrl, accessToken) {
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

/**
 * A token-endpoint form authenticated as the client registered (`info`:
 * client_id, and client_secret with token_endpoint_auth_method): in the
 * Basic header for client_secret_basic, else in the body.
 */
export function clientAuth(info, form) {
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

/** A refresh at `/token` by plain fetch: status and JSON body. */
export async function tokenRefresh(issuer, info, refreshToken) {
  const response = await fetch(`${issuer}/token`, {
    method: "POST",
    ...clientAuth(info, { grant_type: "refresh_token", refresh_token: refreshToken }),
  });
  return { status: response.status, body: await response.json().catch(() => ({})) };
}

/**
 * The end of a person's flow, by plain fetch: RFC 7009 revocation of the
 * refresh token held (`what` describes it in the step), then the tokens held
 * then and the ones from before the refresh are dead: the access tokens get
 * 401 `invalid_token` at `/mcp`, the refresh tokens `invalid_grant`.
 */
export async function checkRevokedGrant({ issuer, serverUrl, info, held, before, what = "refresh token" }) {
  const revoked = await fetch(`${issuer}/revoke`, {
    method: "POST",
    ...clientAuth(info, { token: held.refresh_token, token_type_hint: "refresh_token" }),
  });
  check(revoked.status === 200, "revocation", `POST /revoke (${what}) → ${revoked.status}`);
  for (const [label, token] of [
    ["old access token refused", held.access_token],
    ["pre-refresh access token refused", before.access_token],
  ]) {
    const { status, www } = await mcpStatus(serverUrl, token);
    check(status === 401 && www.includes('error="invalid_token"'), label, `${status}, WWW-Authenticate: ${www}`);
  }
  for (const [label, token] of [
    ["old refresh token refused", held.refresh_token],
    ["pre-refresh refresh token refused", before.refresh_token],
  ]) {
    const { status, body } = await tokenRefresh(issuer, info, token);
    check(status === 400 && body.error === "invalid_grant", label, `${status} ${body.error}`);
  }
}

/** The claims of a JWT, unverified (what Coop put in the token). */
export function jwtClaims(jwt) {
  return JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString("utf8"));
}

/** The header of a JWT. */
export function jwtHeader(jwt) {
  return JSON.parse(Buffer.from(jwt.split(".")[0], "base64url").toString("utf8"));
}

/**
 * For the clients that open `$BROWSER` (inspector-browser.sh): the
 * environment that tells browser.mjs who signs in, what they tick and where
 * to log each opened URL.
 */
export function browserEnv({ here, args, wantedScopes, browserLog }) {
  return {
    BROWSER: `${here}/inspector-browser.sh`,
    COOP_TEST_EMAIL: args.email,
    COOP_TEST_PASSWORD: args.password,
    COOP_TEST_SCOPES: wantedScopes.join(" "),
    COOP_TEST_BROWSER_LOG: browserLog,
  };
}

/** What browser.mjs logged, one entry per URL `$BROWSER` opened. */
export function browserRuns(browserLog) {
  if (!existsSync(browserLog)) return [];
  return readFileSync(browserLog, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

/**
 * The "browser opened" and "authorization request" steps of a client that
 * opened `$BROWSER` (`who` ran it): once, and signed in. Returns the login.
 */
export function checkBrowserLogin(browserLog, who, resource) {
  const runs = browserRuns(browserLog);
  const login = runs[0];
  check(runs.length === 1 && login?.ok, "browser opened", `${who} ran $BROWSER once; ${login?.error ?? "signed in"}`);
  checkAuthorizationRequest(login.request, resource, `redirect_uri=${login.request.redirect_uri}`);
  return login;
}

/** Prints what browser.mjs logged (after a failure). */
export function printBrowserRuns(browserLog) {
  for (const entry of browserRuns(browserLog)) console.log(`     browser: ${JSON.stringify(entry)}`);
}

/** Removes a client's throwaway home, or says where it was kept (`--keep`). */
export function removeHome(home, keep) {
  if (!keep) rmSync(home, { recursive: true, force: true });
  else console.log(`kept ${home}`);
}
