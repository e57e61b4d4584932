// Coop's `/mcp` job on the official MCP TypeScript SDK, for bench/sdk.sh to
// measure beside Coop. SDK_BENCH_TS_SDK picks the SDK line:
//   v2 (default): @modelcontextprotocol/server 2.4.0 + @modelcontextprotocol/node 2.1.2
//   v1:           @modelcontextprotocol/sdk 1.32.2
//
// A stateless Streamable HTTP server with JSON responses on node:http, in
// SDK_BENCH_WORKERS (2) processes of node's `cluster` sharing one port. Per
// `tools/call`:
//
// 1. the bearer token is verified with jose: ES256 signature against the
//    JWKS read once at start, `iss`, `aud`, `exp` (and `sub`, `jti` present);
// 2. one SQLite look-up with better-sqlite3, Coop's own per-call check on the
//    same tables (queries.json `call_context`), decided as Coop's
//    `mcp::bearer::decide` does; anything wrong is a 401 `invalid_token`;
// 3. the SDK serves the request (a fresh McpServer and transport per
//    request: the SDKs' stateless idiom) with the verified AuthInfo, and the
//    tool `list_flocks` reads the farm's five flocks (queries.json
//    `list_flocks`) and answers as Coop does.
//
// Tuned as a deployment would be: prepared statements made once per
// process, the database read-only in WAL mode, `enableJsonResponse` (v1 and
// the v2 2025-era path) or `responseMode: 'json'` (the v2 2026-07-28 path),
// no logging. With SDK_BENCH_JWT_CACHE=1 a verified token's claims are kept
// until its `exp` (bounded), as Coop's verified-signature cache does; the
// SQLite check still runs on every call.
//
// Environment: SDK_BENCH_NODE_DIR (the directory whose node_modules has the
// packages; bench/sdk.sh installs it), SDK_BENCH_DIR (sdk.db, jwks.json from
// fixture.py), SDK_BENCH_ISSUER, SDK_BENCH_AUDIENCE, SDK_BENCH_PORT.

import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const env = process.env;
// 0: serve from this process alone (for profiling with --cpu-prof).
const WORKERS = Number(env.SDK_BENCH_WORKERS ?? 2);

if (cluster.isPrimary && WORKERS > 0) {
  for (let i = 0; i < WORKERS; i++) cluster.fork();
  cluster.on('exit', () => process.exit(1));
  for (const sig of ['SIGTERM', 'SIGINT']) {
    process.on(sig, () => {
      for (const w of Object.values(cluster.workers)) w.process.kill('SIGTERM');
      process.exit(0);
    });
  }
} else {
  process.on('SIGTERM', () => process.exit(0));
  await worker();
}

async function worker() {
  const require = createRequire(join(env.SDK_BENCH_NODE_DIR, 'package.json'));
  const { createLocalJWKSet, jwtVerify } = require('jose');
  const Database = require('better-sqlite3');
  const { z } = require('zod');
  const sdk = env.SDK_BENCH_TS_SDK ?? 'v2';

  const ISSUER = env.SDK_BENCH_ISSUER;
  const AUDIENCE = env.SDK_BENCH_AUDIENCE;
  const JWT_CACHE = env.SDK_BENCH_JWT_CACHE === '1';
  const JWT_CACHE_MAX = 10_000;
  const ROLES = new Set(['owner', 'manager', 'worker', 'viewer']);
  const MAX_PAGE = 50;

  const queries = JSON.parse(readFileSync(new URL('./queries.json', import.meta.url), 'utf8'));
  const keys = createLocalJWKSet(JSON.parse(readFileSync(join(env.SDK_BENCH_DIR, 'jwks.json'), 'utf8')));
  const db = new Database(join(env.SDK_BENCH_DIR, 'sdk.db'), { readonly: true });
  const callContext = db.prepare(queries.call_context);
  const listFlocks = db.prepare(queries.list_flocks);
  const verified = new Map();

  class Refused extends Error {}

  async function claimsOf(token) {
    if (JWT_CACHE) {
      const hit = verified.get(token);
      if (hit) {
        if (hit.exp * 1000 > Date.now()) return hit;
        throw new Refused('expired');
      }
    }
    let payload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        issuer: ISSUER,
        audience: AUDIENCE,
        algorithms: ['ES256'],
        requiredClaims: ['exp', 'sub', 'jti'],
        clockTolerance: 0,
      }));
    } catch {
      throw new Refused('jwt');
    }
    if (JWT_CACHE) {
      if (verified.size >= JWT_CACHE_MAX) verified.clear();
      verified.set(token, payload);
    }
    return payload;
  }

  // The bearer check: the JWT, then the store, as Coop does per call.
  async function authenticate(header) {
    const m = /^bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!m) throw new Refused('no token');
    const token = m[1];
    const claims = await claimsOf(token);
    const rows = callContext.all({ grant: claims.grant_id ?? null, jti: claims.jti });
    const s = rows[0];
    if (
      !s ||
      s.revoked_at !== null ||
      s.token_revoked ||
      s.user_id !== claims.sub ||
      s.client_id !== claims.client_id ||
      s.user_epoch !== claims.epoch ||
      s.user_disabled ||
      s.must_change_password ||
      s.farm_suspended ||
      !s.connected_apps_enabled ||
      !ROLES.has(s.role)
    ) {
      throw new Refused('store');
    }
    const granted = new Set(s.grant_scope.split(' '));
    const scopes = String(claims.scope ?? '').split(' ').filter((x) => granted.has(x)).sort();
    if (!scopes.includes('farm:read')) throw new Refused('scope');
    return {
      token,
      clientId: s.client_id,
      scopes,
      expiresAt: claims.exp,
      resource: new URL(AUDIENCE),
      extra: {
        farmId: s.farm_id,
        role: s.role,
        restricted: Boolean(s.flock_restricted),
        flocks: rows.map((r) => r.flock_id).filter((f) => f !== null),
      },
    };
  }

  function flockPage(auth, { status, house, limit }) {
    const ctx = auth.extra;
    const size = Math.max(1, Math.min(limit ?? MAX_PAGE, MAX_PAGE));
    let rows = listFlocks.all({ farm: ctx.farmId, status: status ?? null, house: house ?? null, limit: size + 1 });
    if (ctx.restricted) {
      const allowed = new Set(ctx.flocks);
      rows = rows.filter((r) => allowed.has(r.id));
    }
    const today = Date.UTC(...todayParts());
    const flocks = rows.slice(0, size).map((r) => {
      const [y, mo, d] = r.placed_on.split('-').map(Number);
      const ageDays = Math.floor((today - Date.UTC(y, mo - 1, d)) / 86_400_000);
      return {
        age_days: ageDays,
        age_weeks: Math.floor(ageDays / 7),
        breed: r.breed,
        head_count: r.head_count,
        house: r.house,
        name: r.name,
        placed_on: r.placed_on,
        status: r.status,
      };
    });
    const text = flocks
      .map((f) => `${f.name} (${f.house}): ${f.breed}, ${f.head_count} birds, ${f.age_weeks} weeks old, ${f.status}`)
      .join('\n');
    return { content: [{ type: 'text', text }], structuredContent: { flocks } };
  }

  function todayParts() {
    const now = new Date();
    return [now.getFullYear(), now.getMonth(), now.getDate()];
  }

  const inputSchema = z.object({
    status: z.string().optional(),
    house: z.string().optional(),
    limit: z.number().int().optional(),
  });
  const toolConfig = { description: "List the farm's flocks, by name.", inputSchema };
  // v2 hands the tool `ctx.http.authInfo`, v1 `extra.authInfo`.
  const toolHandler = async (args, ctx) => flockPage(ctx.http?.authInfo ?? ctx.authInfo, args);

  let serve;
  if (sdk === 'v1') {
    const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
    const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
    serve = async (req, res) => {
      const server = new McpServer({ name: 'sdk-bench-ts-v1', version: '1.0.0' });
      server.registerTool('list_flocks', toolConfig, toolHandler);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        transport.close();
        server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res);
    };
  } else {
    const { McpServer, createMcpHandler } = require('@modelcontextprotocol/server');
    const { NodeStreamableHTTPServerTransport, toNodeHandler } = require('@modelcontextprotocol/node');
    const factory = () => {
      const server = new McpServer({ name: 'sdk-bench-ts-v2', version: '1.0.0' });
      server.registerTool('list_flocks', toolConfig, toolHandler);
      return server;
    };
    // 2026-07-28 requests: the v2 entry, never streaming.
    const modern = toNodeHandler(createMcpHandler(factory, { legacy: 'reject', responseMode: 'json' }));
    // 2025-era requests: the entry's own legacy fallback would answer over
    // SSE, so they get the stateless idiom with JSON responses instead.
    const legacy = async (req, res) => {
      const server = factory();
      const transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        transport.close();
        server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res);
    };
    serve = (req, res) => (req.headers['mcp-protocol-version'] === '2026-07-28' ? modern(req, res) : legacy(req, res));
  }

  const challenge = 'Bearer error="invalid_token", error_description="The access token is not valid"';
  createServer(async (req, res) => {
    if (req.url !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    try {
      req.auth = await authenticate(req.headers.authorization);
    } catch (e) {
      if (!(e instanceof Refused)) console.error(e);
      res.writeHead(401, { 'WWW-Authenticate': challenge, 'Content-Type': 'application/json' });
      res.end('{"error":"invalid_token"}');
      return;
    }
    try {
      await serve(req, res);
    } catch (e) {
      console.error(e);
      if (!res.headersSent) res.writeHead(500).end();
    }
  })
    .listen(Number(env.SDK_BENCH_PORT), '127.0.0.1');
}
