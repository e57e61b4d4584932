// Drives Coop end to end with the MCP TypeScript SDK v2 client package
// (`@modelcontextprotocol/client`: `Client` + `StreamableHTTPClientTransport`
// with an `OAuthClientProvider`), on the 2026-07-28 wire.
//
// Usage:
//   node ts_sdk_v2_flow.mjs --node-clients DIR --issuer http://127.0.0.1:PORT \
//     --email worker@farm.example --password '...' \
//     --scopes "farm:read daily-entries:write" \
//     --expect-tools list_flocks,get_flock,... --flock Alpha [--mode dpop]
//
// DIR is what tests/tools/node-clients.sh prints (its node_modules holds the
// pinned package). The client registers itself as a public client (Dynamic
// Client Registration, `token_endpoint_auth_method: none`). With `--mode
// dpop` the provider also hands the SDK a DPoP session (RFC 9449, the SDK's
// `DpopSession`): every token request and every `/mcp` call then carries a
// proof, and the script checks that the tokens are bound to the session's
// key (`token_type: DPoP`, `cnf.jkt`) and that the access token sent as a
// plain bearer token is refused. `--mode dpop-nonce` is the same against a
// Coop that requires server nonces (`--dpop-require-nonce`): the script
// checks that the SDK met `use_dpop_nonce` at `/token` and at `/mcp` and
// retried with the nonce from `DPoP-Nonce`. It negotiates
// the protocol era with `versionNegotiation: { mode: "auto" }` (a
// `server/discover` probe, no `initialize`).
//
// The SDK does discovery, registration, PKCE, the authorization request and,
// after the browser step (browser.mjs), the RFC 9207 `iss` check and the
// code exchange (`transport.finishAuth(callback params)`). Refresh is the
// transport's own path: the script makes the stored access token unusable
// (as an expired one is), the next call meets a 401 and the transport
// refreshes and retries. Revocation (RFC 7009), which this SDK does not do,
// and the checks that the old tokens are dead are plain fetch.
//
// Two more modes drive an automation (the MCP client credentials
// extension) instead of a person: `--mode client-secret` with the SDK's
// `ClientCredentialsProvider` (client_secret_basic) and `--mode
// private-key-jwt` with its `PrivateKeyJwtProvider` (ES256 assertions; the
// script makes the key pair and prints only the public key set, on a
// `KEYS {...}` line, for the operator's `coop admin automation add
// --jwks-file`; the private key never leaves memory). Their credentials come
// as one JSON line on stdin (`{"client_id": ..., "client_secret": ...}`), never
// in argv or the output; --email and --password are not used. After the
// write tool the script prints `AWAIT disable` and waits for a line on stdin
// while the test disables the automation, then checks that the SDK's next
// call is refused.
//
// Prints one PASS/FAIL line per step; exits non-zero on the first failure.

import { join } from "node:path";
import { generateKeyPairSync } from "node:crypto";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

import { authorizeInBrowser, check, checkChallenge, checkDiscovery, checkGrantedScopes, checkReadAndWrite,
  checkRevokedGrant, checkToolList, finish, flowArgs, jwtClaims, jwtHeader, mcpStatus, memoryProvider,
  metadataFetched, requireArgs, settings, StepFailed, toolJson, tracing } from "./flow.mjs";

const args = flowArgs({ mode: { type: "string", default: "none" } });
const automationModes = ["client-secret", "private-key-jwt"];
const automation = automationModes.includes(args.mode);
if (![...["none", "dpop", "dpop-nonce"], ...automationModes].includes(args.mode)) {
  console.error(`--mode is none, dpop, dpop-nonce, client-secret or private-key-jwt, not ${args.mode}`);
  process.exit(2);
}
requireArgs(args, ["node-clients", "issuer", "expect-tools", "flock", ...(automation ? [] : ["email", "password"])]);

const sdk = await import(
  pathToFileURL(join(args["node-clients"], "node_modules/@modelcontextprotocol/client/dist/index.mjs")).href
);
const {
  Client,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  DpopSession,
  ClientCredentialsProvider,
  PrivateKeyJwtProvider,
} = sdk;
const dpopSession = args.mode.startsWith("dpop") ? await DpopSession.create() : undefined;
const nonces = args.mode === "dpop-nonce";

const { issuer, wantedScopes, expectedTools, ...rest } = settings(args);
const serverUrl = new URL(rest.serverUrl);
const redirectUrl = "http://127.0.0.1:53682/callback";
const clientInfo = { name: "coop-interop-ts-v2", version: "1.0.0" };
const clientOptions = { versionNegotiation: { mode: "auto" } };

// Every HTTP exchange the SDK makes, OAuth included (the transport hands
// its fetch to `auth()`).
const { trace, tracingFetch, find } = tracing();

// The provider: in memory, with the browser step at redirectToAuthorization.
let callback;
let sentState;
const { store, provider } = memoryProvider({
  redirectUrl,
  clientMetadata: {
    client_name: "Coop interop: TypeScript SDK v2",
    redirect_uris: [redirectUrl],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  },
  ...(dpopSession ? { dpop: () => dpopSession } : {}),
  async redirectToAuthorization(authorizationUrl) {
    const { request, done } = await authorizeInBrowser(authorizationUrl, {
      resource: serverUrl.href,
      issuer,
      email: args.email,
      password: args.password,
      scopes: wantedScopes,
    });
    sentState = request.state;
    callback = done.redirect.searchParams;
  },
});

// The tools a client sees, read and written (`refused` says why the write
// tool may be missing), through the SDK.
async function checkTools(client, eggs, notes, refused) {
  const listed = await client.listTools();
  checkToolList(listed.tools.map((t) => t.name).sort(), expectedTools);
  const call = async (name, toolArgs) => toolJson(await client.callTool({ name, arguments: toolArgs }));
  await checkReadAndWrite(call, { flock: args.flock, expectedTools, eggs, notes, refused });
}

async function run() {
  const transportOptions = { authProvider: provider, fetch: tracingFetch };
  let client = new Client(clientInfo, clientOptions);
  let transport = new StreamableHTTPClientTransport(serverUrl, transportOptions);
  try {
    await client.connect(transport);
    throw new StepFailed("401 and discovery (challenge): the first connection succeeded without a token");
  } catch (error) {
    if (!(error instanceof UnauthorizedError) && !callback) throw error;
  }

  // 1. The first call was refused, and the SDK found its way from there.
  checkDiscovery(trace);

  // 2. Registration.
  const registrations = find("POST", "/register");
  const info = store.client;
  check(
    registrations.length === 1 &&
      registrations[0].status === 201 &&
      info?.token_endpoint_auth_method === "none" &&
      !info?.client_secret,
    "dynamic client registration",
    `POST /register → ${registrations[0]?.status}, token_endpoint_auth_method=${info?.token_endpoint_auth_method}`,
  );

  // 3-5. The iss check and the code exchange, by the SDK.
  if (!callback) throw new StepFailed("sign-in and consent: the browser never ran");
  check(callback.get("state") === sentState, "state", "the redirect's state is the one the provider sent");
  await transport.finishAuth(callback);
  // With nonces required the first exchange is answered use_dpop_nonce and
  // retried (checked below).
  const exchanges = find("POST", "/token");
  const exchanged = exchanges[exchanges.length - 1];
  const firstTokens = store.tokens;
  check(
    exchanges.length === (nonces ? 2 : 1) &&
      exchanged.status === 200 &&
      firstTokens?.refresh_token &&
      firstTokens?.expires_in,
    "code exchange",
    `POST /token → ${exchanged?.status}, scope=${JSON.stringify(firstTokens?.scope)}, expires_in=${firstTokens?.expires_in}`,
  );
  if (dpopSession) {
    const proofs = trace.filter((e) => e.path === "/token" && e.dpop);
    const jkt = jwtClaims(firstTokens.access_token).cnf?.jkt;
    if (nonces) {
      check(
        proofs.length === 2 && proofs[0].status === 400 && proofs[0].nonce && proofs[1].status === 200,
        "use_dpop_nonce at /token",
        `POST /token → 400 with DPoP-Nonce, retried with the nonce → ${proofs[1]?.status}`,
      );
    }
    check(
      proofs.length === (nonces ? 2 : 1) &&
        firstTokens.token_type?.toLowerCase() === "dpop" &&
        jkt === dpopSession.thumbprint,
      "DPoP-bound tokens",
      `POST /token with a DPoP proof → token_type=${firstTokens.token_type}, cnf.jkt is the session key's thumbprint`,
    );
  }
  // The SDK keeps one nonce per origin, and /token's is good at /mcp too
  // (one key on every endpoint and replica); forgetting it makes the first
  // /mcp call meet use_dpop_nonce, as a client keeping one per endpoint would.
  if (nonces) dpopSession.nonces.clear();
  checkGrantedScopes(firstTokens.scope, wantedScopes);

  client = new Client(clientInfo, clientOptions);
  transport = new StreamableHTTPClientTransport(serverUrl, transportOptions);
  await client.connect(transport);
  const rpcs = trace.filter((e) => e.path === "/mcp" && e.status === 200).map((e) => e.rpc);
  check(
    client.getNegotiatedProtocolVersion() === "2026-07-28" && rpcs.includes("server/discover") && !rpcs.includes("initialize"),
    "protocol era",
    `server/discover, no initialize: version ${client.getNegotiatedProtocolVersion()} (${client.getProtocolEra?.()} era)`,
  );

  // 6. tools/list shows exactly role ∩ granted scopes; 7. a read tool; 8.
  // the write tool, when granted.
  await checkTools(client, 744, "typescript v2", "granted");

  // 8b. DPoP: the calls carried proofs, and the token alone, as a bearer
  // token, is refused (a copy without the key is worth nothing).
  if (dpopSession) {
    const calls = trace.filter((e) => e.path === "/mcp" && e.status === 200);
    check(
      calls.length > 0 && calls.every((e) => e.dpop),
      "DPoP proofs on /mcp",
      `${calls.length} calls, each with a DPoP proof`,
    );
    if (nonces) {
      const asked = trace.filter(
        (e) => e.path === "/mcp" && e.status === 401 && e.nonce && (e.www ?? "").includes('error="use_dpop_nonce"'),
      );
      check(
        asked.length >= 1 && calls.every((e) => e.nonce),
        "use_dpop_nonce at /mcp",
        `${asked.length} × 401 use_dpop_nonce with DPoP-Nonce, retried; every answer carries the current nonce`,
      );
    }
    const { status, www } = await mcpStatus(serverUrl, store.tokens.access_token);
    check(
      status === 401 && www.includes('error="invalid_token"'),
      "bound token as bearer refused",
      `${status}, WWW-Authenticate: ${www}`,
    );
  }

  // 9. Refresh, by the transport: the stored access token no longer works
  // (as when it expires), the call meets a 401 invalid_token, and the
  // transport runs `auth()`, which refreshes, then retries the call.
  const before = store.tokens;
  store.tokens = { ...before, access_token: "expired-access-token" };
  const afterRefresh = toolJson(await client.callTool({ name: "list_flocks", arguments: {} }));
  const refreshed = store.tokens;
  const refreshes = find("POST", "/token").slice(exchanges.length);
  const refused = trace.filter((e) => e.path === "/mcp" && e.status === 401).length;
  check(
    refused >= 2 &&
      refreshes.length === 1 &&
      refreshes[0].status === 200 &&
      refreshed.access_token !== before.access_token &&
      refreshed.refresh_token &&
      refreshed.refresh_token !== before.refresh_token &&
      JSON.stringify(afterRefresh).includes(args.flock),
    "refresh",
    `401 → POST /token grant_type=refresh_token → ${refreshes[0]?.status}, new access token, rotated refresh token, call retried`,
  );
  if (dpopSession) {
    check(
      refreshes[0].dpop && jwtClaims(refreshed.access_token).cnf?.jkt === dpopSession.thumbprint,
      "DPoP-bound refresh",
      "the refresh carried a proof; the new access token is bound to the same key",
    );
  }
  await client.close();

  // 10. RFC 7009 revocation of the refresh token ends the grant; 11. the
  // old tokens are dead: the ones held when revoking, and the ones from
  // before the refresh.
  await checkRevokedGrant({ issuer, serverUrl, info, held: refreshed, before });
}

// The test's answers, one line each, on stdin (automation modes only).
const stdinLines = automation ? createInterface({ input: process.stdin })[Symbol.asyncIterator]() : undefined;
async function readLine() {
  const { value, done } = await stdinLines.next();
  if (done) throw new StepFailed("the test closed stdin before answering");
  return value.trim();
}

/**
 * The automation's credentials, from the operator (the test). With
 * private_key_jwt the key pair is made here first, as the automation's
 * owner would, and only its public half is handed over.
 */
async function automationCredentials() {
  let privateKey;
  if (args.mode === "private-key-jwt") {
    const pair = generateKeyPairSync("ec", { namedCurve: "P-256" });
    privateKey = pair.privateKey.export({ type: "pkcs8", format: "pem" });
    const jwk = { ...pair.publicKey.export({ format: "jwk" }), use: "sig", alg: "ES256", kid: "coop-interop-ts" };
    console.log(`KEYS ${JSON.stringify({ keys: [jwk] })}`);
  }
  return { ...JSON.parse(await readLine()), privateKey };
}

async function runAutomation() {
  const sent = await automationCredentials();
  const clientId = sent.client_id;
  const provider =
    args.mode === "client-secret"
      ? new ClientCredentialsProvider({ clientId, clientSecret: sent.client_secret, expectedIssuer: issuer })
      : new PrivateKeyJwtProvider({ clientId, privateKey: sent.privateKey, algorithm: "ES256", expectedIssuer: issuer });
  const client = new Client(clientInfo, clientOptions);
  const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider, fetch: tracingFetch });
  // No person: the transport meets the 401 and gets a token by itself.
  await client.connect(transport);

  // 1. The first call was refused, and the SDK found its way from there.
  checkChallenge(trace);
  const { prm, asm } = metadataFetched(trace, ["/.well-known/oauth-authorization-server"]);
  check(
    prm && asm && !find("POST", "/register").length && !trace.some((e) => e.path === "/authorize"),
    "401 and discovery (metadata)",
    `${prm?.path} then ${asm?.path}; no registration, no authorization request`,
  );

  // 2. The token, by the SDK's provider.
  const tokens = find("POST", "/token");
  check(tokens.length === 1 && tokens[0].status === 200, "token request", `POST /token → ${tokens[0]?.status}`);
  const form = tokens[0].form ?? new URLSearchParams();
  check(
    form.get("grant_type") === "client_credentials" && form.getAll("resource").join() === serverUrl.href,
    "client_credentials grant",
    `grant_type=${form.get("grant_type")}, resource=${form.getAll("resource")}, scope=${JSON.stringify(form.get("scope"))}`,
  );
  if (args.mode === "client-secret") {
    check(
      tokens[0].scheme === "Basic" && !form.has("client_secret") && !form.has("client_assertion"),
      "client_secret_basic",
      "the secret in the Basic header, none in the body",
    );
  } else {
    const assertion = form.get("client_assertion") ?? "";
    const claims = assertion ? jwtClaims(assertion) : {};
    const header = assertion ? jwtHeader(assertion) : {};
    check(
      !tokens[0].scheme &&
        form.get("client_assertion_type") === "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" &&
        header.alg === "ES256" &&
        claims.iss === clientId &&
        claims.sub === clientId &&
        claims.aud === issuer &&
        claims.jti,
      "private_key_jwt",
      `an ${header.alg} assertion, iss = sub = the client_id, aud=${claims.aud}, client_id in the body: ${form.has("client_id")}`,
    );
  }
  const held = provider.tokens();
  check(
    held?.token_type?.toLowerCase() === "bearer" && !held.refresh_token && held.expires_in > 0 && held.expires_in <= 300,
    "access token, no refresh token",
    `token_type=${held?.token_type}, expires_in=${held?.expires_in}, refresh_token=${held?.refresh_token ? "present" : "none"}`,
  );
  const granted = (held.scope ?? "").split(/\s+/).filter(Boolean).sort();
  const subject = jwtClaims(held.access_token).sub;
  check(
    JSON.stringify(granted) === JSON.stringify([...wantedScopes].sort()) && subject === clientId,
    "granted scopes",
    `${JSON.stringify(granted)}, sub=${subject}`,
  );
  const rpcs = trace.filter((e) => e.path === "/mcp" && e.status === 200).map((e) => e.rpc);
  check(
    client.getNegotiatedProtocolVersion() === "2026-07-28" && rpcs.includes("server/discover") && !rpcs.includes("initialize"),
    "protocol era",
    `server/discover, no initialize: version ${client.getNegotiatedProtocolVersion()}`,
  );

  // 3. tools/list shows exactly role ∩ allowed scopes; 4. a read tool; 5.
  // the write tool, when its scopes and role allow it.
  await checkTools(client, 655, `typescript v2 ${args.mode}`, "allowed");

  // 6. The operator disables the automation; the SDK's next call, with the
  // token it holds (unexpired), is refused at /mcp, and asking for a new
  // token is refused too.
  console.log("AWAIT disable");
  await readLine();
  const seen = trace.length;
  let refused;
  try {
    await client.listTools();
  } catch (error) {
    refused = error;
  }
  const after = trace.slice(seen);
  const call = after.find((e) => e.path === "/mcp");
  const again = after.filter((e) => e.method === "POST" && e.path === "/token");
  check(
    refused &&
      call?.status === 401 &&
      (call.www ?? "").includes('error="invalid_token"') &&
      again.length >= 1 &&
      again.every((e) => e.status === 401 && e.error === "invalid_client"),
    "disabled automation refused",
    `/mcp → ${call?.status} (${call?.www}), then POST /token → ${again.map((e) => `${e.status} ${e.error}`).join(", ")}; ` +
      `the SDK threw ${refused?.constructor?.name ?? "nothing"}`,
  );
  await client.close().catch(() => {});
  const { status, www } = await mcpStatus(serverUrl, held.access_token);
  check(
    status === 401 && www.includes('error="invalid_token"'),
    "held token refused",
    `the same token by plain fetch: ${status}, WWW-Authenticate: ${www}`,
  );
}

await finish("typescript-sdk-v2", automation ? runAutomation : run, {
  onFailure: () => {
    for (const e of trace) console.log(`     ${e.method} ${e.path} → ${e.status}`);
  },
});
