#!/usr/bin/env python3
"""Tokens from a running Coop through the real OAuth flow, over HTTP.

    get-token.py --issuer http://127.0.0.1:8080 --email a@b.example \
        --password-stdin --scope "farm:read daily-entries:write" < password
        -> prints the token response (JSON) on stdout

    get-token.py --issuer URL --email E --password-stdin --approve AUTHORIZE_URL
        -> signs in and approves an authorization request someone else built
           (the conformance suite's code-grant scenario), GETs the callback
           it is redirected to, and prints that callback URL

What it does is what an MCP client and a person do: reads the
authorization server metadata, registers a public client (dynamic client
registration, `token_endpoint_auth_method: none`), opens the authorization
endpoint with PKCE S256, the `resource` (`<issuer>/mcp`) and the scopes,
follows Coop's redirect to the sign-in page and posts the form with its CSRF
token, posts the consent form ticking exactly the requested scopes (or, if
Coop asks again for the password before consent, posts that form first),
reads the code off the redirect to the client's redirect URI and exchanges
it at the token endpoint. Nothing is shortcut through the database.

Python standard library only. The building blocks (`Browser`, `discover`,
`register_public_client`, `authorize_url`, `approve`, `exchange_code`,
`refresh`) are usable from other scripts:

    spec = importlib.util.spec_from_file_location("get_token", PATH)
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html.parser
import http.cookiejar
import json
import secrets
import sys
import urllib.error
import urllib.parse
import urllib.request

# A loopback redirect nothing listens on: the code is read off the Location
# header, never delivered. Coop matches loopback redirects on any port.
DEFAULT_REDIRECT_URI = "http://127.0.0.1:9/callback"
MAX_STEPS = 12


class FlowError(Exception):
    """A step of the flow did not go as an honest client expects."""


class _Forms(html.parser.HTMLParser):
    """Collects every <form>: its action and its named inputs (checkboxes
    as given; the caller decides which to tick)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.forms.append({"action": a.get("action", ""), "inputs": []})
        elif tag in ("input", "button") and self.forms and a.get("name"):
            self.forms[-1]["inputs"].append(
                {"tag": tag, "type": a.get("type", "text"), "name": a["name"], "value": a.get("value", "")}
            )


def parse_forms(page: str) -> list[dict]:
    parser = _Forms()
    parser.feed(page)
    return parser.forms


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class Response:
    def __init__(self, status: int, headers, body: bytes, url: str):
        self.status = status
        self.headers = headers
        self.body = body
        self.url = url

    @property
    def location(self) -> str | None:
        loc = self.headers.get("Location")
        return urllib.parse.urljoin(self.url, loc) if loc else None

    def json(self):
        return json.loads(self.body)

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class Browser:
    """A cookie jar and no automatic redirects: each hop is looked at."""

    def __init__(self) -> None:
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect()
        )

    def request(self, method: str, url: str, form=None, json_body=None, headers=None) -> Response:
        data = None
        hdrs = dict(headers or {})
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            hdrs["Content-Type"] = "application/x-www-form-urlencoded"
        elif json_body is not None:
            data = json.dumps(json_body).encode()
            hdrs["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
        try:
            with self.opener.open(req, timeout=30) as r:
                return Response(r.status, r.headers, r.read(), url)
        except urllib.error.HTTPError as e:
            return Response(e.code, e.headers, e.read(), url)

    def get(self, url: str) -> Response:
        return self.request("GET", url)

    def post_form(self, url: str, form) -> Response:
        return self.request("POST", url, form=form)


def origin_of(url: str) -> str:
    p = urllib.parse.urlsplit(url)
    return f"{p.scheme}://{p.netloc}"


def discover(issuer: str) -> dict:
    r = Browser().get(issuer.rstrip("/") + "/.well-known/oauth-authorization-server")
    if r.status != 200:
        raise FlowError(f"metadata: HTTP {r.status}: {r.text()[:300]}")
    return r.json()


def register_public_client(metadata: dict, redirect_uri: str = DEFAULT_REDIRECT_URI, name: str = "get-token.py") -> str:
    r = Browser().request(
        "POST",
        metadata["registration_endpoint"],
        json_body={
            "client_name": name,
            "redirect_uris": [redirect_uri],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        },
    )
    if r.status != 201:
        raise FlowError(f"registration: HTTP {r.status}: {r.text()[:300]}")
    return r.json()["client_id"]


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def authorize_url(metadata: dict, client_id: str, redirect_uri: str, challenge: str, resource: str, scope: str | None, state: str) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": resource,
        "state": state,
    }
    if scope:
        params["scope"] = scope
    return metadata["authorization_endpoint"] + "?" + urllib.parse.urlencode(params)


def _form(page: str, action: str) -> dict | None:
    for form in parse_forms(page):
        if form["action"] == action:
            return form
    return None


def _hidden(form: dict) -> list[tuple[str, str]]:
    return [(i["name"], i["value"]) for i in form["inputs"] if i["tag"] == "input" and i["type"] == "hidden"]


def approve(browser: Browser, url: str, email: str, password: str, scopes: list[str] | None = None) -> str:
    """Walks an authorization request to the redirect that leaves Coop;
    returns that URL (the client's redirect URI with `code` or `error`).

    `scopes`: the boxes to tick on the consent screen; None ticks every box
    offered (what the person sees pre-ticked)."""
    origin = origin_of(url)
    response = browser.get(url)
    for _ in range(MAX_STEPS):
        if response.status in (301, 302, 303, 307, 308):
            target = response.location
            if target is None:
                raise FlowError(f"redirect without Location from {response.url}")
            if origin_of(target) != origin:
                return target
            response = browser.get(target)
            continue
        page = response.text()
        if response.status != 200:
            raise FlowError(f"HTTP {response.status} at {response.url}: {page[:500]}")
        if (login := _form(page, "/login")) is not None:
            fields = _hidden(login) + [("email", email), ("password", password)]
            response = browser.post_form(origin + "/login", fields)
            if response.status != 303:
                raise FlowError(f"sign-in refused: HTTP {response.status}")
        elif (confirm := _form(page, "/authorize/confirm")) is not None:
            response = browser.post_form(origin + "/authorize/confirm", _hidden(confirm) + [("password", password)])
        elif (consent := _form(page, "/authorize/consent")) is not None:
            offered = [i["value"] for i in consent["inputs"] if i["type"] == "checkbox" and i["name"] == "scope"]
            ticked = offered if scopes is None else [s for s in offered if s in scopes]
            fields = _hidden(consent) + [("scope", s) for s in ticked] + [("decision", "approve")]
            response = browser.post_form(origin + "/authorize/consent", fields)
        else:
            raise FlowError(f"unexpected page at {response.url}: {page[:500]}")
    raise FlowError(f"more than {MAX_STEPS} steps without leaving {origin}")


def callback_params(url: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


def token_request(metadata: dict, form: list[tuple[str, str]]) -> Response:
    return Browser().post_form(metadata["token_endpoint"], form)


def exchange_code(metadata: dict, client_id: str, code: str, redirect_uri: str, verifier: str, resource: str) -> dict:
    r = token_request(
        metadata,
        [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
            ("client_id", client_id),
            ("resource", resource),
        ],
    )
    if r.status != 200:
        raise FlowError(f"code exchange: HTTP {r.status}: {r.text()[:300]}")
    return r.json()


def refresh(metadata: dict, client_id: str, refresh_token: str) -> dict:
    r = token_request(
        metadata,
        [("grant_type", "refresh_token"), ("refresh_token", refresh_token), ("client_id", client_id)],
    )
    if r.status != 200:
        raise FlowError(f"refresh: HTTP {r.status}: {r.text()[:300]}")
    return r.json()


class Flow:
    """One signed-in browser and one registered client: `tokens()` runs
    the authorization flow again (Coop remembers the consent, so later runs
    go straight from /authorize to a code) and returns a fresh token
    response with its own refresh token."""

    def __init__(self, issuer: str, email: str, password: str, scope: str | None, resource: str | None = None, client_id: str | None = None):
        self.issuer = issuer.rstrip("/")
        self.metadata = discover(self.issuer)
        self.resource = resource or self.issuer + "/mcp"
        self.scope = scope
        self.email = email
        self.password = password
        self.redirect_uri = DEFAULT_REDIRECT_URI
        self.client_id = client_id or register_public_client(self.metadata, self.redirect_uri)
        self.browser = Browser()

    def tokens(self) -> dict:
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(16)
        url = authorize_url(self.metadata, self.client_id, self.redirect_uri, challenge, self.resource, self.scope, state)
        scopes = self.scope.split() if self.scope else None
        back = approve(self.browser, url, self.email, self.password, scopes)
        params = callback_params(back)
        if "error" in params:
            raise FlowError(f"authorization refused: {params}")
        if params.get("state") != state:
            raise FlowError(f"state not echoed: {params}")
        if params.get("iss") != self.metadata["issuer"]:
            raise FlowError(f"iss {params.get('iss')!r} is not the issuer {self.metadata['issuer']!r}")
        return exchange_code(self.metadata, self.client_id, params["code"], self.redirect_uri, verifier, self.resource)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--issuer", required=True, help="Coop's issuer URL, e.g. http://127.0.0.1:8080")
    ap.add_argument("--email", required=True)
    pw = ap.add_mutually_exclusive_group(required=True)
    pw.add_argument("--password", help="(visible in ps; prefer --password-stdin)")
    pw.add_argument("--password-stdin", action="store_true")
    ap.add_argument("--scope", default="farm:read", help='space-separated, default "farm:read"')
    ap.add_argument("--resource", help="default <issuer>/mcp")
    ap.add_argument("--client-id", help="use this registered public client instead of registering one")
    ap.add_argument("--count", type=int, default=1, help="run the flow N times; prints one JSON object per line")
    ap.add_argument("--with-client-id", action="store_true", help="add the client_id to each printed object")
    ap.add_argument("--approve", metavar="AUTHORIZE_URL", help="only sign in and approve this request, then GET the callback")
    args = ap.parse_args()
    password = sys.stdin.readline().rstrip("\n") if args.password_stdin else args.password

    try:
        if args.approve:
            back = approve(Browser(), args.approve, args.email, password, None)
            # Deliver the redirect to whoever waits on it, as a browser would.
            delivered = Browser().get(back)
            if delivered.status >= 400:
                raise FlowError(f"callback {back} answered HTTP {delivered.status}")
            print(back)
            return 0
        flow = Flow(args.issuer, args.email, password, args.scope, args.resource, args.client_id)
        for _ in range(args.count):
            tokens = flow.tokens()
            if args.with_client_id:
                tokens["client_id"] = flow.client_id
            print(json.dumps(tokens), flush=True)
        return 0
    except (FlowError, OSError, KeyError, ValueError) as e:
        print(f"get-token.py: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
