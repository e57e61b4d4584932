"""Coop's `/mcp` job on the official MCP Python SDK (`mcp` 2.3.0), for
bench/sdk.sh to measure beside Coop.

A stateless Streamable HTTP server with JSON responses (`MCPServer`, the
SDK's own bearer middleware with a `TokenVerifier`), run by uvicorn with 2
workers, uvloop and httptools. Per `tools/call`:

1. the verifier checks the ES256 bearer token with PyJWT: signature against
   the JWKS read once at start, `iss`, `aud`, `exp` (and requires `sub`,
   `jti`);
2. one SQLite look-up, Coop's own per-call check on the same tables
   (queries.json `call_context`: grant, user, membership, farm, the member's
   flocks and the token's revocation, every join by primary key), decided as
   Coop's `mcp::bearer::decide` does; anything wrong is a 401;
3. the tool `list_flocks` reads the farm's flocks (queries.json
   `list_flocks`, five rows) and answers as Coop does: a text line per flock
   and `structuredContent.flocks`.

Tuned as a deployment would be: the statements are cached per connection
(sqlite3's statement cache), the database is opened read-only in WAL mode
once per worker, the tool is `async` so it runs on the event loop rather
than a thread pool (the queries take microseconds), access logs are off.
With SDK_BENCH_JWT_CACHE=1 a verified token's claims are kept until its
`exp` (bounded), the same shortcut as Coop's verified-signature cache; the
SQLite check still runs on every call.

Environment: SDK_BENCH_DIR (holds sdk.db and jwks.json from fixture.py),
SDK_BENCH_ISSUER, SDK_BENCH_AUDIENCE, SDK_BENCH_JWT_CACHE.
"""

import datetime
import json
import os
import sqlite3
import time
from pathlib import Path

import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ["SDK_BENCH_DIR"])
ISSUER = os.environ["SDK_BENCH_ISSUER"]
AUDIENCE = os.environ["SDK_BENCH_AUDIENCE"]
JWT_CACHE = os.environ.get("SDK_BENCH_JWT_CACHE") == "1"
JWT_CACHE_MAX = 10_000

QUERIES = json.loads((HERE / "queries.json").read_text())
ROLES = {"owner", "manager", "worker", "viewer"}
MAX_PAGE = 50

KEYS = {k.key_id: k.key for k in jwt.PyJWKSet.from_dict(json.loads((DATA / "jwks.json").read_text())).keys}
DB = sqlite3.connect(f"file:{DATA / 'sdk.db'}?mode=ro", uri=True, cached_statements=16)
DB.row_factory = sqlite3.Row
DECODER = jwt.PyJWT()


class CoopLikeVerifier(TokenVerifier):
    """The bearer check: the JWT, then the store, as Coop does per call."""

    def __init__(self):
        self._verified: dict[str, dict] = {}

    def _claims(self, token: str) -> dict | None:
        if JWT_CACHE:
            hit = self._verified.get(token)
            if hit is not None:
                return hit if hit["exp"] > time.time() else None
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            key = KEYS.get(kid)
            if key is None:
                return None
            claims = DECODER.decode(
                token,
                key,
                algorithms=["ES256"],
                audience=AUDIENCE,
                issuer=ISSUER,
                options={"require": ["exp", "iss", "aud", "sub", "jti"]},
            )
        except jwt.PyJWTError:
            return None
        if JWT_CACHE:
            if len(self._verified) >= JWT_CACHE_MAX:
                self._verified.clear()
            self._verified[token] = claims
        return claims

    async def verify_token(self, token: str) -> AccessToken | None:
        claims = self._claims(token)
        if claims is None:
            return None
        rows = DB.execute(QUERIES["call_context"], {"grant": claims.get("grant_id"), "jti": claims["jti"]}).fetchall()
        if not rows:
            return None
        s = rows[0]
        if (
            s["revoked_at"] is not None
            or s["token_revoked"]
            or s["user_id"] != claims["sub"]
            or s["client_id"] != claims.get("client_id")
            or s["user_epoch"] != claims.get("epoch")
            or s["user_disabled"]
            or s["must_change_password"]
            or s["farm_suspended"]
            or not s["connected_apps_enabled"]
            or s["role"] not in ROLES
        ):
            return None
        scopes = sorted(set(claims.get("scope", "").split()) & set(s["grant_scope"].split()))
        if not scopes:
            return None
        restricted = bool(s["flock_restricted"])
        flocks = [r["flock_id"] for r in rows if r["flock_id"] is not None]
        return AccessToken(
            token=token,
            client_id=s["client_id"],
            scopes=scopes,
            expires_at=claims["exp"],
            resource=AUDIENCE,
            subject=s["user_id"],
            claims={"farm_id": s["farm_id"], "role": s["role"], "restricted": restricted, "flocks": flocks},
        )


mcp = MCPServer(
    "sdk-bench-python",
    token_verifier=CoopLikeVerifier(),
    auth=AuthSettings(
        issuer_url=ISSUER,
        resource_server_url=AUDIENCE,
        required_scopes=["farm:read"],
        # The verifier checks `aud` itself, with PyJWT.
        validate_token_resource=False,
    ),
    log_level="WARNING",
)


@mcp.tool(description="List the farm's flocks, by name.")
async def list_flocks(status: str | None = None, house: str | None = None, limit: int | None = None) -> CallToolResult:
    ctx = get_access_token().claims
    size = max(1, min(limit or MAX_PAGE, MAX_PAGE))
    rows = DB.execute(
        QUERIES["list_flocks"], {"farm": ctx["farm_id"], "status": status, "house": house, "limit": size + 1}
    ).fetchall()
    if ctx["restricted"]:
        allowed = set(ctx["flocks"])
        rows = [r for r in rows if r["id"] in allowed]
    today = datetime.date.today()
    flocks, lines = [], []
    for r in rows[:size]:
        age_days = (today - datetime.date.fromisoformat(r["placed_on"])).days
        flock = {
            "age_days": age_days,
            "age_weeks": age_days // 7,
            "breed": r["breed"],
            "head_count": r["head_count"],
            "house": r["house"],
            "name": r["name"],
            "placed_on": r["placed_on"],
            "status": r["status"],
        }
        flocks.append(flock)
        lines.append(
            f"{flock['name']} ({flock['house']}): {flock['breed']}, {flock['head_count']} birds, "
            f"{flock['age_weeks']} weeks old, {flock['status']}"
        )
    return CallToolResult(
        content=[TextContent(type="text", text="\n".join(lines))],
        structured_content={"flocks": flocks},
    )


app = mcp.streamable_http_app(stateless_http=True, json_response=True)
