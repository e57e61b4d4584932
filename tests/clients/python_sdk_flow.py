"""Drives Coop end to end with the official MCP Python SDK client.

Usage:
    python python_sdk_flow.py --issuer http://127.0.0.1:PORT \
        --email worker@farm.example --password '...' --mode default \
        --scopes "farm:read daily-entries:write" \
        --expect-tools list_flocks,get_flock,... --flock Alpha

Modes:
    default  `Client(mode="auto")`: probes `server/discover` on the 2026-07-28
             wire first; Dynamic Client Registration as a public client
             (token_endpoint_auth_method "none").
    legacy   `Client(mode="legacy")`: the 2025-11-25 initialize handshake;
             Dynamic Client Registration with `client_secret_post`.
    cimd     `Client(mode="auto")` with `client_metadata_url`: the client_id
             is the URL of a Client ID Metadata Document (--client-metadata-url)
             that Coop fetches over https; no registration.
    client-secret
             An automation (the MCP client credentials extension):
             `ClientCredentialsOAuthProvider` with the client_id and secret
             `coop admin automation add --secret` printed (client_secret_basic).
    private-key-jwt
             An automation with `PrivateKeyJWTOAuthProvider`: the script makes
             an RS256 key pair (the SDK's default algorithm), prints the public
             key set on a `KEYS {...}` line for the operator's
             `coop admin automation add --jwks-file`, and signs each assertion
             with `SignedJWTParameters`. The private key never leaves memory.

The automation modes read their credentials as one JSON line on stdin
(`{"client_id": ..., "client_secret": ...}`; no secret in argv or in the
output), take no --email/--password, and pause once: after the write tool
they print `AWAIT disable`, wait for a line on stdin (the test disables the
automation meanwhile), and check that the SDK's next call is refused.

In the person modes the SDK's `OAuthClientProvider` does discovery, registration, PKCE, the
authorization request, the code exchange and the refresh. The "browser" is
this script: it opens the authorization URL, fills the sign-in form (with its
CSRF token), ticks exactly --scopes on the consent screen, approves by form
post and reads the code off the redirect. Revocation (RFC 7009), which the
SDK does not do, and the checks that the old tokens are dead are plain HTTP.

Prints one PASS/FAIL line per step and exits non-zero on the first failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from urllib.parse import parse_qs, urlencode, urljoin, urlparse

import httpx2
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

import flow
from flow import Report, StepFailed

REDIRECT_URI = "http://127.0.0.1:53682/callback"
AUTOMATION_MODES = ("client-secret", "private-key-jwt")


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Browser:
    """The person at the browser: signs in, consents, hands back the redirect."""

    def __init__(self, args: argparse.Namespace, report: Report) -> None:
        self.args = args
        self.report = report
        self.result: AuthorizationCodeResult | None = None
        self.authorization_url: str | None = None

    async def open(self, authorization_url: str) -> None:
        self.authorization_url = authorization_url
        args = self.args
        query = {k: v[0] for k, v in parse_qs(urlparse(authorization_url).query).items()}
        flow.check_authorization_request(self.report, query, f"{args.issuer}/mcp", f"client_id={query.get('client_id')}")
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as http:
            response = await http.get(authorization_url)
            if response.status_code == 303 and "/login" in response.headers.get("location", ""):
                login_url = urljoin(authorization_url, response.headers["location"])
                page = await http.get(login_url)
                form = next(f for f in flow.forms_of(page.text) if f["action"] == "/login")
                signed_in = await http.post(
                    urljoin(authorization_url, "/login"),
                    data={
                        "csrf": flow.form_field(form, "csrf", "browser: "),
                        "return_to": flow.form_field(form, "return_to", "browser: "),
                        "email": args.email,
                        "password": args.password,
                    },
                )
                if signed_in.status_code != 303:
                    raise StepFailed(f"sign-in: expected 303, got {signed_in.status_code}")
                response = await http.get(urljoin(authorization_url, signed_in.headers["location"]))
            if response.status_code != 200:
                raise StepFailed(f"consent: expected the consent page, got {response.status_code}")
            consent = next((f for f in flow.forms_of(response.text) if f["action"] == "/authorize/consent"), None)
            if consent is None:
                raise StepFailed("consent: the page has no consent form")
            offered = [f["value"] for f in consent["inputs"] if f["name"] == "scope"]
            wanted = args.scopes.split()
            missing = [s for s in wanted if s not in offered]
            if missing:
                raise StepFailed(f"consent: {missing} not offered (offered {offered})")
            form = [
                ("csrf", flow.form_field(consent, "csrf", "browser: ")),
                ("request", flow.form_field(consent, "request", "browser: ")),
                ("decision", "approve"),
            ] + [("scope", s) for s in wanted]
            # Repeated `scope` fields: sent as an encoded body (a list of
            # pairs is not a form to httpx).
            answered = await http.post(
                urljoin(authorization_url, "/authorize/consent"),
                content=urlencode(form),
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
            location = answered.headers.get("location", "")
            if answered.status_code != 303 or not location.startswith(REDIRECT_URI.split("/callback")[0]):
                raise StepFailed(f"consent: expected a 303 to the client, got {answered.status_code} {location}")
        params = {k: v[0] for k, v in parse_qs(urlparse(location).query).items()}
        self.report.check(
            "code" in params and params.get("state") == query.get("state") and params.get("iss") == args.issuer,
            "sign-in and consent",
            f"signed in as {args.email}, ticked {wanted}, redirect carries code, state and iss",
        )
        self.result = AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    async def callback(self) -> AuthorizationCodeResult:
        if self.result is None:
            raise StepFailed("the SDK asked for the callback before the browser finished")
        return self.result


class Trace:
    """Every HTTP exchange the SDK makes (the OAuth provider's own requests
    go through the same client, so its discovery and token calls are here)."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str, int, httpx2.Response]] = []

    async def on_response(self, response: httpx2.Response) -> None:
        request = response.request
        self.entries.append((request.method, request.url.path, response.status_code, response))

    def find(self, method: str, path: str) -> list[tuple[str, str, int, httpx2.Response]]:
        return [e for e in self.entries if e[0] == method and e[1] == path]

    def summary(self) -> str:
        return " → ".join(f"{m} {p} {s}" for m, p, s, _ in self.entries)

    def exchanges(self) -> list[tuple[str, str, int, str]]:
        """(method, path, status, WWW-Authenticate) of each exchange, as the shared checks read them."""
        return [(m, p, s, r.headers.get("www-authenticate", "")) for m, p, s, r in self.entries]


def tool_json(result) -> object:
    """A Coop tool's structured result (its text content is for people)."""
    if getattr(result, "is_error", False) or getattr(result, "isError", False):
        raise StepFailed(f"tool error: {result}")
    structured = getattr(result, "structured_content", None)
    if structured is None:
        structured = getattr(result, "structuredContent", None)
    if structured is None:
        raise StepFailed(f"no structured content in {result}")
    return structured


async def run(args: argparse.Namespace, trace: Trace) -> Report:
    report = Report()
    server_url = f"{args.issuer}/mcp"
    storage = MemoryStorage()
    browser = Browser(args, report)

    metadata = OAuthClientMetadata(
        client_name=f"Coop interop: Python SDK ({args.mode})",
        redirect_uris=[REDIRECT_URI],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="client_secret_post" if args.mode == "legacy" else "none",
    )
    provider = OAuthClientProvider(
        server_url=server_url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
        client_metadata_url=args.client_metadata_url if args.mode == "cimd" else None,
    )
    http = httpx2.AsyncClient(auth=provider, timeout=30, event_hooks={"response": [trace.on_response]})
    transport = streamable_http_client(server_url, http_client=http)
    mode = "legacy" if args.mode == "legacy" else "auto"

    async with http, Client(transport, mode=mode, cache=None) as client:
        # 1. The first call was refused, and the SDK found its way from there.
        exchanges = trace.exchanges()
        flow.check_challenge(report, exchanges[0] if exchanges else None)
        flow.check_metadata(report, exchanges, flow.SERVER_METADATA)

        # 2. Registration, or a Client ID Metadata Document.
        registrations = trace.find("POST", "/register")
        info = storage.client_info
        if args.mode == "cimd":
            report.check(
                not registrations and info is not None and info.client_id == args.client_metadata_url,
                "client id metadata document",
                f"client_id={info.client_id if info else None}, no /register call",
            )
        else:
            want = "client_secret_post" if args.mode == "legacy" else "none"
            report.check(
                len(registrations) == 1
                and registrations[0][2] == 201
                and info is not None
                and info.token_endpoint_auth_method == want
                and (info.client_secret is not None) == (want != "none"),
                "dynamic client registration",
                f"POST /register → {registrations[0][2] if registrations else '-'}, "
                f"token_endpoint_auth_method={info.token_endpoint_auth_method if info else None}",
            )

        # 3-5. Authorization and the browser ran inside the provider (above);
        # the code exchange is the first /token call.
        tokens = trace.find("POST", "/token")
        first_tokens = storage.tokens
        report.check(
            len(tokens) == 1
            and tokens[0][2] == 200
            and first_tokens is not None
            and first_tokens.refresh_token is not None
            and first_tokens.expires_in is not None,
            "code exchange",
            f"POST /token → {tokens[0][2] if tokens else '-'}, scope={first_tokens.scope if first_tokens else None!r}, "
            f"expires_in={first_tokens.expires_in if first_tokens else None}",
        )
        granted = set((first_tokens.scope or "").split())
        report.check(
            granted == set(args.scopes.split()),
            "granted scopes",
            f"{sorted(granted)}",
        )
        era = client.protocol_version
        if args.mode == "legacy":
            report.check(era == "2025-11-25", "protocol era", f"initialize handshake, version {era}")
        else:
            report.check(era == "2026-07-28", "protocol era", f"server/discover, version {era} (no handshake)")

        # 6. tools/list shows exactly role ∩ granted scopes; 7. a read tool;
        # 8. the write tool, when granted.
        await check_tools(report, client, args, 812)

        # 9. Refresh, by the SDK itself: its access token is made to look
        # expired (the provider keeps the expiry in its context), so its next
        # request goes through the provider's refresh path.
        before = storage.tokens
        provider.context.token_expiry_time = time.time() - 1
        await client.call_tool("list_flocks", {})
        refreshed = storage.tokens
        refreshes = trace.find("POST", "/token")[1:]
        report.check(flow.rotated(refreshes, before, refreshed), "refresh", flow.REFRESHED)
    # 10. RFC 7009 revocation of the refresh token ends the grant; 11. the
    # old tokens are dead: the ones held when revoking, and the ones from
    # before the refresh.
    assert refreshed is not None and info is not None and before is not None
    await flow.check_revoked_grant(report, args.issuer, lambda form: client_auth(info, form), refreshed, before, modern=True)
    return report


async def check_tools(report: Report, client: Client, args: argparse.Namespace, eggs: int, refused: str = "granted") -> None:
    """tools/list shows exactly the expected tools; the read tool, and the write tool when expected."""
    listed = await client.list_tools()
    names = sorted(t.name for t in listed.tools)
    expected = sorted(t for t in args.expect_tools.split(",") if t)
    flow.check_tool_list(report, names, expected, f"{names}")

    async def call(tool: str, arguments: dict) -> object:
        return tool_json(await client.call_tool(tool, arguments))

    await flow.check_read_and_write(report, call, args.flock, expected, eggs, f"python {args.mode}", refused)


def jwt_claims(token: str) -> dict:
    """The claims of a JWT, unverified (what was put in it)."""
    return jwt.decode(token, options={"verify_signature": False})


def read_line() -> str:
    """One line from the test on stdin (it answers the script's requests)."""
    line = sys.stdin.readline()
    if not line:
        raise StepFailed("the test closed stdin before answering")
    return line.strip()


def automation_credentials(args: argparse.Namespace) -> tuple[dict, str | None]:
    """The automation's credentials, from the operator (the test) on stdin.

    With private_key_jwt the key pair is made here first, as the
    automation's owner would, and only the public half is handed over (a
    `KEYS` line): the private key stays in this process's memory. Returns
    (what the test sent, the private key in PEM or None)."""
    private_pem = None
    if args.mode == "private-key-jwt":
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        private_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
        public.update(use="sig", alg="RS256", kid="coop-interop-python")
        print(f"KEYS {json.dumps({'keys': [public]})}", flush=True)
    sent = json.loads(read_line())
    return sent, private_pem


def form_of(request: httpx2.Request) -> dict[str, list[str]]:
    return parse_qs(request.content.decode(), keep_blank_values=True)


class AutomationRun:
    """An automation's run: client credentials, no person, no browser."""

    def __init__(self, args: argparse.Namespace, trace: Trace) -> None:
        self.args = args
        self.trace = trace
        self.report = Report()
        self.storage = MemoryStorage()
        # Set once the automation is disabled: the trace entries from there.
        self.disabled_at: int | None = None

    def provider(self) -> OAuthClientProvider:
        args = self.args
        sent, private_pem = automation_credentials(args)
        self.client_id = sent["client_id"]
        server_url = f"{args.issuer}/mcp"
        if args.mode == "client-secret":
            return ClientCredentialsOAuthProvider(
                server_url=server_url,
                storage=self.storage,
                client_id=self.client_id,
                client_secret=sent["client_secret"],
                issuer=args.issuer,
            )
        assert private_pem is not None
        signer = SignedJWTParameters(issuer=self.client_id, subject=self.client_id, signing_key=private_pem)
        return PrivateKeyJWTOAuthProvider(
            server_url=server_url,
            storage=self.storage,
            client_id=self.client_id,
            assertion_provider=signer.create_assertion_provider(),
            issuer=args.issuer,
        )

    async def run(self) -> Report:
        refused: BaseException | None = None
        try:
            await self.session()
        except Exception as error:  # noqa: BLE001 - once disabled, the refusal is what is wanted
            if self.disabled_at is None or flow.first_step_failure(error) is not None:
                raise
            refused = error
        await self.check_refused(refused)
        return self.report

    async def session(self) -> None:
        args, trace, report = self.args, self.trace, self.report
        server_url = f"{args.issuer}/mcp"
        provider = self.provider()
        http = httpx2.AsyncClient(auth=provider, timeout=30, event_hooks={"response": [trace.on_response]})
        transport = streamable_http_client(server_url, http_client=http)

        async with http, Client(transport, mode="auto", cache=None) as client:
            # 1. The first call was refused, and the SDK found its way from there.
            exchanges = trace.exchanges()
            flow.check_challenge(report, exchanges[0] if exchanges else None)
            flow.check_metadata(
                report,
                exchanges,
                ("/.well-known/oauth-authorization-server",),
                more=not trace.find("POST", "/register") and not trace.find("GET", "/authorize"),
                said="; no registration, no authorization request",
            )

            # 2. The token, by the SDK's provider: grant_type=client_credentials,
            # resource=<issuer>/mcp, the automation's own authentication method.
            tokens = trace.find("POST", "/token")
            report.check(
                len(tokens) == 1 and tokens[0][2] == 200,
                "token request",
                f"POST /token → {tokens[0][2] if tokens else '-'}",
            )
            request = tokens[0][3].request
            form = form_of(request)
            basic = request.headers.get("authorization", "")
            report.check(
                form.get("grant_type") == ["client_credentials"] and form.get("resource") == [server_url],
                "client_credentials grant",
                f"grant_type={form.get('grant_type')}, resource={form.get('resource')}, scope={form.get('scope')}",
            )
            if args.mode == "client-secret":
                report.check(
                    basic.startswith("Basic ") and "client_secret" not in form and "client_assertion" not in form,
                    "client_secret_basic",
                    "the secret in the Basic header, none in the body",
                )
            else:
                assertion = form.get("client_assertion", [""])[0]
                claims = jwt_claims(assertion) if assertion else {}
                header = jwt.get_unverified_header(assertion) if assertion else {}
                report.check(
                    not basic
                    and form.get("client_assertion_type") == ["urn:ietf:params:oauth:client-assertion-type:jwt-bearer"]
                    and header.get("alg") == "RS256"
                    and claims.get("iss") == self.client_id
                    and claims.get("sub") == self.client_id
                    and claims.get("aud") == args.issuer
                    and bool(claims.get("jti")),
                    "private_key_jwt",
                    f"an {header.get('alg')} assertion, iss = sub = the client_id, aud={claims.get('aud')}, "
                    f"client_id in the body: {'client_id' in form}",
                )

            held = self.storage.tokens
            report.check(
                held is not None
                and held.token_type == "Bearer"
                and held.refresh_token is None
                and held.expires_in is not None
                and 0 < held.expires_in <= 300,
                "access token, no refresh token",
                f"token_type={held.token_type if held else None}, expires_in={held.expires_in if held else None}, "
                f"refresh_token={'present' if held and held.refresh_token else 'none'}",
            )
            assert held is not None
            self.held = held
            granted = sorted((held.scope or "").split())
            subject = jwt_claims(held.access_token).get("sub")
            report.check(
                granted == sorted(args.scopes.split()) and subject == self.client_id,
                "granted scopes",
                f"{granted}, sub={subject}",
            )
            era = client.protocol_version
            report.check(era == "2026-07-28", "protocol era", f"server/discover, version {era} (no handshake)")

            # 3. tools/list shows exactly role ∩ allowed scopes; 4. a read
            # tool; 5. the write tool, when its scopes and role allow it.
            await check_tools(report, client, args, 777, refused="allowed")

            # 6. The operator disables the automation meanwhile; the SDK's next
            # call, with the (unexpired) token it holds, must be refused. The
            # refusal ends the SDK's session: it surfaces from the call or,
            # through the transport's task group, when the session closes.
            print("AWAIT disable", flush=True)
            await asyncio.to_thread(read_line)
            self.disabled_at = len(trace.entries)
            await client.list_tools()

    async def check_refused(self, refused: BaseException | None) -> None:
        assert self.disabled_at is not None
        after = self.trace.entries[self.disabled_at :]
        call = next((e for e in after if e[1] == "/mcp"), None)
        call_www = call[3].headers.get("www-authenticate", "") if call else ""
        again = [e for e in after if e[0] == "POST" and e[1] == "/token"]
        again_errors = sorted({e[3].json().get("error") for e in again})
        raised = sorted({type(leaf).__name__ for leaf in flow.leaves(refused)}) if refused else []
        self.report.check(
            refused is not None
            and call is not None
            and call[2] == 401
            and 'error="invalid_token"' in call_www
            and bool(again)
            and all(e[2] == 401 for e in again)
            and again_errors == ["invalid_client"],
            "disabled automation refused",
            f"/mcp → {call[2] if call else '-'} ({call_www}), then POST /token → "
            f"{[e[2] for e in again]} {again_errors}; the SDK raised {raised or 'nothing'}",
        )
        status, www = await flow.mcp_status(self.args.issuer, self.held.access_token, modern=True)
        self.report.check(
            status == 401 and 'error="invalid_token"' in www,
            "held token refused",
            f"the same token by plain HTTP: {status}, WWW-Authenticate: {www}",
        )


def client_auth(info: OAuthClientInformationFull, form: dict[str, str]) -> dict[str, str]:
    """A token-endpoint form authenticated the way the client registered."""
    form = dict(form, client_id=info.client_id)
    if info.token_endpoint_auth_method == "client_secret_post" and info.client_secret:
        form["client_secret"] = info.client_secret
    return form


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--email", help="the person who signs in (not in the automation modes)")
    parser.add_argument("--password")
    parser.add_argument("--mode", choices=["default", "legacy", "cimd", *AUTOMATION_MODES], default="default")
    parser.add_argument("--client-metadata-url")
    parser.add_argument(
        "--scopes",
        default="farm:read daily-entries:write",
        help="the scopes ticked on the consent screen; for an automation, the scopes it is allowed",
    )
    parser.add_argument("--expect-tools", required=True, help="comma-separated tool names")
    parser.add_argument("--flock", required=True, help="a flock the user can see")
    args = parser.parse_args()
    if args.mode == "cimd" and not args.client_metadata_url:
        parser.error("--mode cimd needs --client-metadata-url")
    automation = args.mode in AUTOMATION_MODES
    if not automation and not (args.email and args.password):
        parser.error(f"--mode {args.mode} needs --email and --password")
    args.issuer = args.issuer.rstrip("/")

    trace = Trace()
    steps = AutomationRun(args, trace).run() if automation else run(args, trace)
    return flow.finish(f"python-sdk {args.mode}", steps, trace.summary)


if __name__ == "__main__":
    sys.exit(main())
