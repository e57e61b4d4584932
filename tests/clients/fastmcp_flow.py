"""Drives Coop end to end with the FastMCP client: `Client(url, auth="oauth")`.

Usage:
    python fastmcp_flow.py --issuer http://127.0.0.1:PORT \
        --email worker@farm.example --password '...' \
        --scopes "farm:read daily-entries:write" \
        --expect-tools list_flocks,get_flock,... --flock Alpha

The client is used as its documentation shows, with no options: FastMCP's
`OAuth` provider (on the MCP Python SDK's) does discovery, Dynamic Client
Registration as a public client with a `http://localhost:PORT/callback`
redirect, PKCE, the authorization request, its own loopback callback
listener, the code exchange and the refresh. Its browser step is
`webbrowser.open(url)`, which runs `$BROWSER URL`: `python-browser.sh`, which
signs in and consents by form post (browser.py) and then delivers the
redirect to FastMCP's listener, as a browser would. Nothing of the client is
replaced; the script only watches its HTTP exchanges (a wrapper around
`httpx2.AsyncHTTPTransport.handle_async_request` that records method, path
and status).

The refresh: the provider keeps the access token's expiry in its context;
the script makes it look expired (rather than wait the shortest lifetime
Coop allows) and the next call goes through the provider's refresh path.
Revocation (RFC 7009), which FastMCP does not do, and the checks that the
old tokens are dead are plain HTTP.

Prints one PASS/FAIL line per step and exits non-zero on the first failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx2

import flow
from flow import Report, StepFailed

HERE = Path(__file__).resolve().parent


class Trace:
    """Every HTTP exchange made in this process (FastMCP's and the SDK's)."""

    def __init__(self) -> None:
        self.exchanges: list[tuple[str, str, int, str]] = []

    def install(self) -> None:
        # At the transport, where every request goes, the OAuth flow's own
        # (httpx runs an Auth flow's requests below `AsyncClient.send`).
        original = httpx2.AsyncHTTPTransport.handle_async_request
        trace = self

        async def handle(transport: httpx2.AsyncHTTPTransport, request: httpx2.Request) -> httpx2.Response:
            response = await original(transport, request)
            trace.exchanges.append(
                (request.method, request.url.path, response.status_code, response.headers.get("www-authenticate", ""))
            )
            return response

        httpx2.AsyncHTTPTransport.handle_async_request = handle  # type: ignore[method-assign]

    def find(self, method: str, path: str) -> list[tuple[str, str, int, str]]:
        return [e for e in self.exchanges if e[0] == method and e[1] == path]

    def summary(self) -> str:
        return ", ".join(f"{m} {p} → {s}" for m, p, s, _ in self.exchanges)


def browser_runs(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def tool_json(result) -> dict:  # noqa: ANN001 - FastMCP's CallToolResult
    if result.is_error:
        raise StepFailed(f"tool error: {result}")
    if not isinstance(result.structured_content, dict):
        raise StepFailed(f"no structured content in {result}")
    return result.structured_content


async def run(args: argparse.Namespace, trace: Trace, log: Path) -> Report:
    from fastmcp import Client

    report = Report()
    resource = f"{args.issuer}/mcp"
    expected = sorted(t for t in args.expect_tools.split(",") if t)
    wanted = args.scopes.split()

    client = Client(resource, auth="oauth")
    oauth = client.transport.auth
    async with client:
        # 1. The first call was refused, and the client found its way.
        flow.check_challenge(report, next((e for e in trace.exchanges if e[1] == "/mcp"), None))
        flow.check_metadata(report, trace.exchanges, flow.SERVER_METADATA)

        # 2. Registration.
        registrations = trace.find("POST", "/register")
        info = oauth.context.client_info
        report.check(
            len(registrations) == 1
            and registrations[0][2] == 201
            and info is not None
            and info.token_endpoint_auth_method == "none"
            and not info.client_secret,
            "dynamic client registration",
            f"POST /register → {registrations[0][2] if registrations else '-'}, "
            f"token_endpoint_auth_method={info.token_endpoint_auth_method if info else None}, "
            f"redirect_uris={[str(u) for u in info.redirect_uris or []] if info else None}",
        )

        # 3. The browser: $BROWSER ran once, signed in, consented, and the
        # redirect reached FastMCP's callback listener.
        runs = browser_runs(log)
        login = runs[0] if runs else {}
        report.check(
            len(runs) == 1 and login.get("ok") is True,
            "browser opened",
            f"webbrowser ran $BROWSER {len(runs)} time(s); {login.get('error', 'signed in')}",
        )
        request = login["request"]
        flow.check_authorization_request(report, request, resource, f"redirect_uri={request.get('redirect_uri')}")
        params = login["params"]
        report.check(
            bool(params.get("code")) and params.get("state") == request.get("state") and params.get("iss") == args.issuer,
            "sign-in and consent",
            f"signed in as {args.email}, ticked {wanted}; the redirect carried code, state and iss "
            f"and FastMCP's callback answered {login.get('callbackStatus')}",
        )

        # 4-5. The code exchange, by the SDK under FastMCP.
        exchanges = trace.find("POST", "/token")
        tokens = oauth.context.current_tokens
        report.check(
            len(exchanges) == 1 and exchanges[0][2] == 200 and tokens is not None and bool(tokens.refresh_token),
            "code exchange",
            f"POST /token → {exchanges[0][2] if exchanges else '-'}, scope={tokens.scope if tokens else None!r}, "
            f"expires_in={tokens.expires_in if tokens else None}",
        )
        granted = sorted((tokens.scope or "").split()) if tokens else []
        report.check(granted == sorted(wanted), "granted scopes", json.dumps(granted))
        report.check(client.protocol_version is not None, "protocol era", f"negotiated {client.protocol_version}")

        # 6. tools/list shows exactly role ∩ granted scopes.
        flow.check_tool_list(report, sorted(t.name for t in await client.list_tools()), expected)

        # 7. A read tool; 8. the write tool, when granted.
        async def call(tool: str, arguments: dict) -> dict:
            return tool_json(await client.call_tool(tool, arguments))

        await flow.check_read_and_write(report, call, args.flock, expected, 745, "fastmcp")

        # 9. Refresh, by the client: its access token looks expired, so the
        # next request goes through the provider's refresh path first.
        before = oauth.context.current_tokens
        oauth.context.token_expiry_time = time.time() - 1
        again = tool_json(await client.call_tool("list_flocks", {}))
        refreshed = oauth.context.current_tokens
        refreshes = trace.find("POST", "/token")[1:]
        report.check(flow.rotated(refreshes, before, refreshed) and args.flock in json.dumps(again), "refresh", flow.REFRESHED)

    # 10. RFC 7009 revocation of the refresh token ends the grant; 11. the
    # old tokens are dead: the ones held when revoking, and the ones from
    # before the refresh.
    assert info is not None and refreshed is not None and before is not None
    await flow.check_revoked_grant(
        report, args.issuer, lambda form: dict(form, client_id=info.client_id), refreshed, before, modern=False
    )
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--email", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--scopes", default="farm:read daily-entries:write")
    parser.add_argument("--expect-tools", required=True, help="comma-separated tool names")
    parser.add_argument("--flock", required=True, help="a flock the user can see")
    args = parser.parse_args()
    args.issuer = args.issuer.rstrip("/")

    # The person at the browser: `webbrowser.open` runs `$BROWSER URL`.
    home = Path(tempfile.mkdtemp(prefix="coop-fastmcp-"))
    log = home / "browser.log"
    os.environ.update(
        {
            "BROWSER": str(HERE / "python-browser.sh"),
            "COOP_TEST_BROWSER_PYTHON": sys.executable,
            "COOP_TEST_EMAIL": args.email,
            "COOP_TEST_PASSWORD": args.password,
            "COOP_TEST_SCOPES": args.scopes,
            "COOP_TEST_BROWSER_LOG": str(log),
        }
    )

    trace = Trace()
    trace.install()

    def print_browser_runs() -> None:
        for entry in browser_runs(log):
            print(f"     browser: {json.dumps(entry)}", flush=True)

    return flow.finish("fastmcp", run(args, trace, log), trace.summary, print_browser_runs)


if __name__ == "__main__":
    sys.exit(main())
