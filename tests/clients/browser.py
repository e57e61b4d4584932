"""The person at the browser, for the Python clients: opens an authorization
URL, signs in through Coop's form (with its CSRF token), ticks exactly the
wanted scopes on the consent screen, approves by form post and delivers the
redirect to the client's loopback callback, as a browser would.

It is the program `$BROWSER` names (through `python-browser.sh`, which
starts it in the background: Python's `webbrowser` waits for a `$BROWSER`
command to exit, and FastMCP starts its callback listener only after
`webbrowser.open` returns). Environment:
    COOP_TEST_EMAIL, COOP_TEST_PASSWORD, COOP_TEST_SCOPES   who signs in, what they tick
    COOP_TEST_BROWSER_LOG   a file that gets one JSON line per opened URL
                            (what was asked, what came back)

Standard library only (flow.py too), so any Python runs it.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from email.message import Message
from urllib.parse import parse_qs, urlencode, urljoin, urlparse

from flow import form_field as field
from flow import forms_of


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # noqa: ANN002, ANN003
        return None


class Session:
    """A cookie-keeping client that never follows redirects."""

    def __init__(self) -> None:
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), NoRedirects()
        )

    def request(self, url: str, form: list[tuple[str, str]] | None = None) -> tuple[int, Message, str]:
        """(status, headers (names case-insensitive), body)."""
        data = urlencode(form).encode() if form is not None else None
        req = urllib.request.Request(url, data=data)
        if data is not None:
            req.add_header("Content-Type", "application/x-www-form-urlencoded")
        try:
            with self.opener.open(req, timeout=30) as response:
                return response.status, response.headers, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read().decode(errors="replace")


def sign_in_and_consent(authorization_url: str, email: str, password: str, scopes: list[str]) -> dict:
    """Signs in and approves; returns the request's parameters and the redirect back to the client."""
    request = {k: v[0] for k, v in parse_qs(urlparse(authorization_url).query).items()}
    http = Session()
    status, headers, body = http.request(authorization_url)
    location = headers.get("Location", "")
    if status == 303 and urlparse(urljoin(authorization_url, location)).path == "/login":
        _, _, page = http.request(urljoin(authorization_url, location))
        form = next((f for f in forms_of(page) if f["action"] == "/login"), None)
        if form is None:
            raise RuntimeError("sign-in: the page has no sign-in form")
        status, headers, body = http.request(
            urljoin(authorization_url, "/login"),
            [
                ("csrf", field(form, "csrf")),
                ("return_to", field(form, "return_to")),
                ("email", email),
                ("password", password),
            ],
        )
        if status != 303:
            # The form's notice, or an error page's message.
            notice = re.search(r'<p class="notice[^"]*"[^>]*>(.*?)</p>', body, re.S) or re.search(
                r"</h1>\s*<p>(.*?)</p>", body, re.S
            )
            raise RuntimeError(f"sign-in: expected 303, got {status} {notice.group(1).strip() if notice else ''}")
        status, headers, body = http.request(urljoin(authorization_url, headers["Location"]))
    if status != 200:
        raise RuntimeError(f"consent: expected the consent page, got {status} {headers.get('Location', '')} {body[:300]}")
    consent = next((f for f in forms_of(body) if f["action"] == "/authorize/consent"), None)
    if consent is None:
        raise RuntimeError("consent: the page has no consent form")
    offered = [f["value"] for f in consent["inputs"] if f["name"] == "scope"]
    missing = [s for s in scopes if s not in offered]
    if missing:
        raise RuntimeError(f"consent: {missing} not offered (offered {offered})")
    status, headers, _ = http.request(
        urljoin(authorization_url, "/authorize/consent"),
        [("csrf", field(consent, "csrf")), ("request", field(consent, "request")), ("decision", "approve")]
        + [("scope", s) for s in scopes],
    )
    location = headers.get("Location", "")
    if status != 303 or not location.startswith(request.get("redirect_uri", "\0")):
        raise RuntimeError(f"consent: expected a 303 to {request.get('redirect_uri')}, got {status} {location}")
    params = {k: v[0] for k, v in parse_qs(urlparse(location).query).items()}
    return {"request": request, "redirect": location, "params": params, "offered": offered, "ticked": scopes}


def deliver(redirect: str, deadline: float) -> int:
    """GETs the redirect on the client's callback listener, waiting for it to listen."""
    while True:
        try:
            with urllib.request.urlopen(redirect, timeout=30) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def main() -> int:
    url = sys.argv[1]
    log = os.environ.get("COOP_TEST_BROWSER_LOG")

    def note(entry: dict) -> None:
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")

    try:
        done = sign_in_and_consent(
            url,
            os.environ.get("COOP_TEST_EMAIL", ""),
            os.environ.get("COOP_TEST_PASSWORD", ""),
            os.environ.get("COOP_TEST_SCOPES", "farm:read").split(),
        )
        status = deliver(done["redirect"], time.monotonic() + 30)
        note({"ok": 200 <= status < 300, **done, "callbackStatus": status})
        return 0 if 200 <= status < 300 else 1
    except Exception as error:  # noqa: BLE001 - the log says what went wrong
        note({"ok": False, "url": url, "error": str(error)})
        # Tell the client at once rather than leave it waiting on its
        # listener until its own timeout.
        request = {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}
        if "redirect_uri" in request:
            failed = {"error": "access_denied", "error_description": f"test browser: {error}"[:200]}
            if "state" in request:
                failed["state"] = request["state"]
            try:
                deliver(f"{request['redirect_uri']}?{urlencode(failed)}", time.monotonic() + 10)
            except Exception:  # noqa: BLE001, S110 - the log already says what went wrong
                pass
        return 1


if __name__ == "__main__":
    sys.exit(main())
