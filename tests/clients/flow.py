"""The steps the Python client scripts share, so that each script says only
what its client does differently: the PASS/FAIL report, the sign-in and
consent forms' parser, the checks of discovery and of the tools a caller
sees, the plain-HTTP revocation and the checks that the old tokens are
dead, and the run's last line and exit code.

Imported by python_sdk_flow.py, fastmcp_flow.py and browser.py (a script's
own folder is first on `sys.path`); not a program itself. Standard library
only at import, as browser.py is: the HTTP helpers import httpx2 when
called.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import time
from collections.abc import Awaitable, Callable
from html.parser import HTMLParser

# A recorded exchange, as the checks read it: (method, path, status,
# WWW-Authenticate).
Exchange = tuple[str, str, int, str]


class StepFailed(Exception):
    pass


class Report:
    def __init__(self) -> None:
        self.passed = 0

    def ok(self, step: str, detail: str = "") -> None:
        self.passed += 1
        print(f"PASS {step}{': ' + detail if detail else ''}", flush=True)

    def check(self, condition: bool, step: str, detail: str) -> None:
        if not condition:
            raise StepFailed(f"{step}: {detail}")
        self.ok(step, detail)


class Forms(HTMLParser):
    """Collects each form's action and its inputs (name, value, type)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "form":
            self.forms.append({"action": a.get("action"), "inputs": []})
        elif tag in ("input", "button") and self.forms:
            self.forms[-1]["inputs"].append(
                {"name": a.get("name"), "value": a.get("value") or "", "type": a.get("type") or "text"}
            )


def forms_of(html: str) -> list[dict]:
    parser = Forms()
    parser.feed(html)
    return parser.forms


def form_field(form: dict, name: str, who: str = "") -> str:
    """The value of the form's field `name`; `who` prefixes the failure."""
    for field in form["inputs"]:
        if field["name"] == name:
            return field["value"]
    raise StepFailed(f"{who}the form {form['action']} has no {name} field")


def check_authorization_request(report: Report, request: dict[str, str], resource: str, more: str) -> None:
    """PKCE S256, the resource, a code; `more` ends the detail."""
    report.check(
        request.get("code_challenge_method") == "S256"
        and len(request.get("code_challenge", "")) >= 43
        and request.get("resource") == resource
        and request.get("response_type") == "code",
        "authorization request",
        f"PKCE S256, resource={request.get('resource')}, scope={request.get('scope')!r}, {more}",
    )


def check_challenge(report: Report, first: Exchange | None) -> None:
    """The first call was `/mcp` refused with a challenge naming the resource metadata."""
    report.check(
        first is not None and first[1] == "/mcp" and first[2] == 401 and "resource_metadata=" in first[3],
        "401 and discovery (challenge)",
        f"{first[0] if first else '-'} /mcp → {first[2] if first else '-'}, WWW-Authenticate: {first[3] if first else ''}",
    )


def check_metadata(
    report: Report, exchanges: list[Exchange], server_paths: tuple[str, ...], more: bool = True, said: str = ""
) -> None:
    """The resource metadata, then the authorization server's at one of `server_paths` (and `more` holds;
    `said` ends the detail)."""
    prm = [e for e in exchanges if e[1].startswith("/.well-known/oauth-protected-resource") and e[2] == 200]
    asm = [e for e in exchanges if e[1] in server_paths and e[2] == 200]
    report.check(
        bool(prm) and bool(asm) and more,
        "401 and discovery (metadata)",
        f"{prm[0][1] if prm else 'no resource metadata'} then {asm[0][1] if asm else 'no AS metadata'}{said}",
    )


# Where a person's client may find the authorization server's metadata.
SERVER_METADATA = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")


def check_tool_list(report: Report, names: list[str], expected: list[str], detail: str | None = None) -> None:
    report.check(names == expected, "tools/list", json.dumps(names) if detail is None else detail)


async def check_read_and_write(
    report: Report,
    call: Callable[[str, dict], Awaitable[object]],
    flock: str,
    expected: list[str],
    eggs: int,
    notes: str,
    refused: str = "granted",
) -> None:
    """The read tool sees `flock`; the write tool records `eggs` eggs for
    yesterday when expected, and is neither listed nor called when not
    (`refused` says why: "granted" or "allowed"). `call(tool, arguments)`
    returns a tool's structured result."""
    flocks = await call("list_flocks", {})
    report.check(flock in json.dumps(flocks), "read tool list_flocks", f"sees flock {flock}")
    if "record_daily_entry" not in expected:
        report.ok("write tool record_daily_entry", f"not {refused} to this role and scopes: not listed, not called")
        return
    day = (datetime.date.today() - datetime.timedelta(days=1)).isoformat()
    written = await call("record_daily_entry", {"flock": flock, "date": day, "eggs_collected": eggs, "notes": notes})
    report.check(
        isinstance(written, dict) and written.get("entry", {}).get("eggs_collected") == eggs,
        "write tool record_daily_entry",
        f"{day}: change={written.get('change') if isinstance(written, dict) else written}",
    )


def rotated(refreshes: list[tuple], before: object, refreshed: object) -> bool:
    """One refresh at `/token`, answered 200, gave a new access token and a rotated refresh token."""
    return (
        len(refreshes) == 1
        and refreshes[0][2] == 200
        and refreshed is not None
        and before is not None
        and refreshed.access_token != before.access_token
        and refreshed.refresh_token not in (None, before.refresh_token)
    )


# The "refresh" step's detail.
REFRESHED = "POST /token grant_type=refresh_token → 200, new access token, rotated refresh token, next call OK"


async def mcp_status(issuer: str, access_token: str, modern: bool) -> tuple[int, str]:
    """A raw tools/list with `access_token` on the 2026-07-28 wire (`modern`) or the 2025-11-25 one:
    (status, WWW-Authenticate)."""
    import httpx2

    if modern:
        params = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
    else:
        params = {}
        headers = {"MCP-Protocol-Version": "2025-11-25"}
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(
            f"{issuer}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params},
            headers={"Authorization": f"Bearer {access_token}", "Accept": "application/json, text/event-stream", **headers},
        )
    return response.status_code, response.headers.get("www-authenticate", "")


async def post_form(url: str, form: dict[str, str]) -> tuple[int, dict]:
    """A form POST by plain HTTP: (status, JSON body or {})."""
    import httpx2

    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(url, data=form)
    try:
        body = response.json()
    except ValueError:
        body = {}
    return response.status_code, body


async def check_revoked_grant(
    report: Report,
    issuer: str,
    authenticate: Callable[[dict[str, str]], dict[str, str]],
    held: object,
    before: object,
    modern: bool,
) -> None:
    """The end of a person's flow, by plain HTTP: RFC 7009 revocation of the refresh token `held`, then
    the tokens held then and the ones from `before` the refresh are dead (401 `invalid_token` at `/mcp`
    on the `modern` wire or not, `invalid_grant` at `/token`). `authenticate(form)` adds the client's
    credentials to a form."""
    revoke = {"token": held.refresh_token or "", "token_type_hint": "refresh_token"}
    status, _ = await post_form(f"{issuer}/revoke", authenticate(revoke))
    report.check(status == 200, "revocation", f"POST /revoke (refresh token) → {status}")
    for label, token in (
        ("old access token refused", held.access_token),
        ("pre-refresh access token refused", before.access_token),
    ):
        status, www = await mcp_status(issuer, token, modern)
        report.check(status == 401 and 'error="invalid_token"' in www, label, f"{status}, WWW-Authenticate: {www}")
    for label, token in (
        ("old refresh token refused", held.refresh_token or ""),
        ("pre-refresh refresh token refused", before.refresh_token or ""),
    ):
        refresh = {"grant_type": "refresh_token", "refresh_token": token}
        status, body = await post_form(f"{issuer}/token", authenticate(refresh))
        report.check(
            status == 400 and body.get("error") == "invalid_grant", label, f"{status} {body.get('error')}"
        )


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside an exception group (anyio task groups wrap them)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def first_step_failure(error: BaseException) -> StepFailed | None:
    for leaf in leaves(error):
        seen: BaseException | None = leaf
        while seen is not None:
            if isinstance(seen, StepFailed):
                return seen
            seen = seen.__cause__ or seen.__context__
    return None


def describe(error: BaseException) -> str:
    lines = []
    for leaf in leaves(error):
        lines.append(f"{type(leaf).__name__}: {leaf}")
        cause = leaf.__cause__ or leaf.__context__
        while cause is not None:
            lines.append(f"     caused by {type(cause).__name__}: {cause}")
            cause = cause.__cause__ or cause.__context__
    return "\n".join(lines)


def finish(
    name: str, steps: Awaitable[Report], summary: Callable[[], str], on_failure: Callable[[], None] = lambda: None
) -> int:
    """Runs the script's steps; prints `name: N passed, …` and returns 0, or prints the failure,
    `on_failure()`'s lines, the HTTP exchanges (`summary()`) and `name: failed after …` and returns 1."""
    started = time.monotonic()
    report: Report | None = None
    try:
        report = asyncio.run(steps)
    except BaseException as error:  # noqa: BLE001 - every failure is reported, then the exit code says it
        if isinstance(error, KeyboardInterrupt):
            raise
        step = first_step_failure(error)
        if step is not None:
            print(f"FAIL {step}", flush=True)
        else:
            print(f"FAIL unexpected {describe(error)}", flush=True)
        on_failure()
    elapsed = time.monotonic() - started
    if report is None:
        print(f"     HTTP exchanges: {summary()}", flush=True)
        print(f"{name}: failed after {elapsed:.1f}s", flush=True)
        return 1
    print(f"{name}: {report.passed} passed, 0 failed in {elapsed:.1f}s", flush=True)
    return 0
