#!/usr/bin/env python3
"""Slow and idle clients from one network, for bench/slow-clients.sh
(issue 31, threats 45 and 46), standard library only.

From one source address (127.0.0.2 by default), holds:

- SLOW `tools/call` requests to /mcp with a good token, each with its head
  and half its body sent and the rest never: what once held a database
  connection each until the body timeout. One the server closes (its 408 at
  the body timeout) is opened again.
- IDLE kept-alive connections, each answered once (GET /healthz) and then
  left open and silent: what once filled the server's connection cap.

Runs for SECONDS, then prints one line:

    ATTACK from <address>: slow <held>/<asked> held (<reopened> reopened,
    <refused> refused), idle <held>/<asked> held (<refused> refused,
    <closed> closed by the server)

A connection the server refuses gets the fixed 429 (its network's cap) or
503 (the server's cap) and is closed; one it closes to make room for a
newcomer is closed without a word.

Usage: slow-clients.py URL TOKEN SECONDS [SLOW=64] [IDLE=500] [ADDRESS=127.0.0.2]
"""

import selectors
import socket
import sys
import time
import urllib.parse

url = urllib.parse.urlsplit(sys.argv[1])
token = sys.argv[2]
seconds = float(sys.argv[3])
slow_wanted = int(sys.argv[4]) if len(sys.argv) > 4 else 64
idle_wanted = int(sys.argv[5]) if len(sys.argv) > 5 else 500
address = sys.argv[6] if len(sys.argv) > 6 else "127.0.0.2"
host = f"{url.hostname}:{url.port}"

CALL = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_flocks","arguments":{}}}'
SLOW_HEAD = (
    f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
    "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    f"MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {len(CALL)}\r\n\r\n"
).encode() + CALL[: len(CALL) // 2]
HEALTHZ = f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()


def connect():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((address, 0))
    s.settimeout(5)
    s.connect((url.hostname, url.port))
    return s


def refused(answer: bytes) -> bool:
    return answer.startswith((b"HTTP/1.1 429", b"HTTP/1.1 503"))


counts = {"slow_reopened": 0, "slow_refused": 0, "idle_refused": 0, "idle_closed": 0}
selector = selectors.DefaultSelector()


def open_slow():
    s = connect()
    s.sendall(SLOW_HEAD)
    s.setblocking(False)
    selector.register(s, selectors.EVENT_READ, "slow")


def open_idle():
    s = connect()
    s.sendall(HEALTHZ)
    answer = b""
    # Until the answer's end: the body "ok", or a refusal's empty body.
    while not (answer.endswith(b"\r\n\r\nok") or refused(answer) and answer.endswith(b"\r\n\r\n")):
        chunk = s.recv(4096)
        if not chunk:
            break
        answer += chunk
    if not answer.startswith(b"HTTP/1.1 200"):
        counts["idle_refused"] += 1
        s.close()
        return
    s.setblocking(False)
    selector.register(s, selectors.EVENT_READ, "idle")


for _ in range(slow_wanted):
    open_slow()
for _ in range(idle_wanted):
    open_idle()

deadline = time.monotonic() + seconds
while (left := deadline - time.monotonic()) > 0:
    for key, _ in selector.select(timeout=min(left, 1.0)):
        s = key.fileobj
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        # Anything readable on a held connection is its end: an answer to a
        # body that never came, a refusal, or a close.
        selector.unregister(s)
        s.close()
        if key.data == "slow":
            if refused(data):
                counts["slow_refused"] += 1
            else:
                counts["slow_reopened"] += 1
                open_slow()
        else:
            counts["idle_closed"] += 1

held = {"slow": 0, "idle": 0}
for key in selector.get_map().values():
    held[key.data] += 1
print(
    f"ATTACK from {address}: slow {held['slow']}/{slow_wanted} held "
    f"({counts['slow_reopened']} reopened, {counts['slow_refused']} refused), "
    f"idle {held['idle']}/{idle_wanted} held ({counts['idle_refused']} refused, "
    f"{counts['idle_closed']} closed by the server)"
)
