#!/usr/bin/env python3
"""A sign-in flood for bench/signin-flood.sh (threat 16), standard library only.

Wrong passwords for made-up emails, from many loopback source addresses
(127.0.0.2 to 127.0.0.254) so that the per-address throttle does not stop
the flood early: each address gets its burst, then its refill. Every
attempt that passes the throttle costs the server one argon2id verification
(against the decoy hash for an unknown email). Prints one line:

    FLOOD <attempts>/s (<n> attempts: <status counts>)

Usage: signin-flood.py URL SECONDS [THREADS]
"""

import http.client
import itertools
import re
import sys
import threading
import time
import urllib.parse
from collections import Counter

url = urllib.parse.urlsplit(sys.argv[1])
seconds = float(sys.argv[2])
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 16
origin = f"{url.scheme}://{url.netloc}"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
counts: Counter = Counter()
lock = threading.Lock()
serial = itertools.count()


class Client:
    """One source address: a connection, its session cookie and CSRF token."""

    def __init__(self, address: str):
        self.address = address
        self.connection = None
        self.cookie = ""
        self.csrf = ""

    def _request(self, method, path, body=None, headers=None):
        if self.connection is None:
            self.connection = http.client.HTTPConnection(
                url.hostname, url.port, timeout=30, source_address=(self.address, 0)
            )
        headers = dict(headers or {})
        if self.cookie:
            headers["Cookie"] = self.cookie
        try:
            self.connection.request(method, path, body=body, headers=headers)
            response = self.connection.getresponse()
            text = response.read().decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            self.connection.close()
            self.connection = None
            return 0, ""
        cookie = response.getheader("Set-Cookie")
        if cookie:
            self.cookie = cookie.split(";", 1)[0]
        return response.status, text

    def attempt(self):
        if not self.csrf:
            status, page = self._request("GET", "/login")
            match = CSRF.search(page)
            if status != 200 or not match:
                return status or "connection failed"
            self.csrf = match.group(1)
        n = next(serial)
        form = urllib.parse.urlencode(
            {"csrf": self.csrf, "email": f"nobody{n}@flood.example", "password": f"guess {n}"}
        )
        status, _ = self._request(
            "POST",
            "/login",
            body=form,
            headers={"Content-Type": "application/x-www-form-urlencoded", "Origin": origin},
        )
        return status or "connection failed"


def run(index: int, deadline: float):
    clients = [Client(f"127.0.0.{2 + a}") for a in range(index, 253, threads)]
    local: Counter = Counter()
    for client in itertools.cycle(clients):
        if time.monotonic() >= deadline:
            break
        local[client.attempt()] += 1
    with lock:
        counts.update(local)


start = time.monotonic()
deadline = start + seconds
workers = [threading.Thread(target=run, args=(i, deadline)) for i in range(threads)]
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
elapsed = time.monotonic() - start
total = sum(counts.values())
detail = ", ".join(f"{status}: {n}" for status, n in sorted(counts.items(), key=str))
print(f"FLOOD {total / elapsed:.0f}/s ({total} attempts: {detail})")
