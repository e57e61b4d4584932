#!/usr/bin/env python3
"""The soak's browser and token traffic beside wrk's MCP calls.

    soak-side.py ISSUER EMAIL < password

Three loops until SIGTERM, each counting successes and errors:
- people: a fresh browser signs in, approves (the consent screen every
  time: a loopback public client is never approved silently), and
  exchanges the code, about once a second; every tenth grant is then
  disconnected (its refresh token revoked at /revoke), the rest are left
  to expire;
- refreshes: one rotation chain, a refresh about four times a second;
- a refresh chain is started again from a new flow whenever it breaks.
On SIGTERM prints one line per loop and exits 1 if any loop saw an error.
"""

from __future__ import annotations

import importlib.util
import signal
import sys
import threading
import time
from pathlib import Path

spec = importlib.util.spec_from_file_location(
    "get_token", Path(__file__).resolve().parent.parent / "tests" / "tools" / "get-token.py"
)
get_token = importlib.util.module_from_spec(spec)
spec.loader.exec_module(get_token)

stop = threading.Event()
counts: dict[str, list[int]] = {"flows": [0, 0], "refreshes": [0, 0], "disconnects": [0, 0]}
errors: list[str] = []
lock = threading.Lock()


def count(kind: str, ok: bool, why: str = "") -> None:
    with lock:
        counts[kind][0 if ok else 1] += 1
        if not ok and len(errors) < 20:
            errors.append(f"{kind}: {why}")


def people(issuer: str, email: str, password: str, client_id: str) -> None:
    n = 0
    while not stop.is_set():
        n += 1
        try:
            flow = get_token.Flow(issuer, email, password, "farm:read", client_id=client_id)
            tokens = flow.tokens()
            count("flows", True)
            if n % 10 == 0:
                r = get_token.Browser().post_form(
                    flow.metadata["revocation_endpoint"],
                    [("token", tokens["refresh_token"]), ("client_id", client_id)],
                )
                count("disconnects", r.status == 200, f"HTTP {r.status}")
        except Exception as err:  # noqa: BLE001 - every failure is a soak error
            count("flows", False, str(err)[:200])
        stop.wait(1.0)


def refreshes(issuer: str, email: str, password: str, client_id: str) -> None:
    flow = None
    token = None
    while not stop.is_set():
        try:
            if token is None:
                flow = get_token.Flow(issuer, email, password, "farm:read", client_id=client_id)
                token = flow.tokens()["refresh_token"]
            token = get_token.refresh(flow.metadata, client_id, token)["refresh_token"]
            count("refreshes", True)
        except Exception as err:  # noqa: BLE001
            count("refreshes", False, str(err)[:200])
            token = None
        stop.wait(0.25)


def main() -> int:
    issuer, email = sys.argv[1], sys.argv[2]
    password = sys.stdin.readline().rstrip("\n")
    metadata = get_token.discover(issuer)
    client_id = get_token.register_public_client(metadata, name="soak")
    # The refresh chain is another app: a disconnect revokes the person's
    # whole grant to an app, which would end a chain of the same app.
    chain_client_id = get_token.register_public_client(metadata, name="soak refresh chain")
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    loops = [
        threading.Thread(target=people, args=(issuer, email, password, client_id)),
        threading.Thread(target=refreshes, args=(issuer, email, password, chain_client_id)),
    ]
    for loop in loops:
        loop.start()
    while not stop.is_set():
        stop.wait(0.5)
    for loop in loops:
        loop.join()
    for kind, (ok, bad) in counts.items():
        print(f"   {kind:<12} {ok:>6} ok {bad:>4} errors")
    for line in errors:
        print(f"   ! {line}")
    return 1 if any(bad for _, bad in counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
