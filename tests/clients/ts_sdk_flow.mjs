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

import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { authorizeInBrowser, check, checkDiscovery, checkGrantedScopes, checkReadAndWrite, checkRevokedGrant,
  checkToolList, finish, flowArgs, memoryProvider, requireArgs, settings, StepFailed, toolJson, tracing } from "./flow.mjs";

const args = flowArgs({
  mode: { type: "string", default: "none" },
  "client-metadata-url": { type: "string" },
});
requireArgs(args, ["node-clients", "issuer", "email", "password", "expect-tools", "flock"]);
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

const { issuer, wantedScopes, expectedTools, ...rest } = settings(args);
const serverUrl = new URL(rest.serverUrl);
const redirectUrl = "http://127.0.0.1:53682/callback";

// Every HTTP exchange the SDK makes, OAuth included (the transport hands
// its fetch to `auth()`).
const { trace, tracingFetch, find } = tracing();

// The provider: in memory, with the browser step at redirectToAuthorization.
let browserResult;
const { store, provider } = memoryProvider({
  redirectUrl,
  clientMetadataUrl: args.mode === "cimd" ? args["client-metadata-url"] : undefined,
  clientMetadata: {
    client_name: `Coop interop: TypeScript SDK (${args.mode})`,
    redirect_uris: [redirectUrl],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: args.mode === "basic" ? "client_secret_basic" : "none",
  },
  async redirectToAuthorization(authorizationUrl) {
    const { done } = await authorizeInBrowser(authorizationUrl, {
      resource: serverUrl.href,
      issuer,
      email: args.email,
      password: args.password,
      scopes: wantedScopes,
    });
    browserResult = done.params;
  },
});

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
  checkDiscovery(trace);

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
  checkGrantedScopes(firstTokens.scope, wantedScopes);

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
  checkToolList(listed.tools.map((t) => t.name).sort(), expectedTools);

  // 7. A read tool; 8. the write tool, when granted.
  await checkReadAndWrite(async (name, toolArgs) => toolJson(await client.callTool({ name, arguments: toolArgs })), {
    flock: args.flock,
    expectedTools,
    eggs: 733,
    notes: `typescript ${args.mode}`,
  });

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

  // 10. RFC 7009 revocation of the refresh token ends the grant; 11. the
  // old tokens are dead: the ones held when revoking, and the ones from
  // before the refresh.
  await checkRevokedGrant({ issuer, serverUrl, info, held: refreshed, before });
}

await finish(`typescript-sdk ${args.mode}`, run);
