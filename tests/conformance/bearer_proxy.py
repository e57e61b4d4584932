#!/usr/bin/env python3
"""A loopback reverse proxy that adds a bearer token to `/mcp` requests.

The MCP conformance suite's server scenarios send no `Authorization`
header, and Coop refuses every unauthenticated `/mcp` call (401), as it
must. This proxy stands where a deployment's reverse proxy would: Coop runs
with `--issuer http://127.0.0.1:<proxy port>`, so the suite's `Host` and
`Origin` headers name Coop's public origin exactly as a real client's
would, and everything else (including a rebinding attacker's foreign `Host`
and `Origin`) is passed on untouched for Coop to judge.

Only requests under `/mcp` that carry no `Authorization` get one; the token
is read from a file on each such request, so the runner can write it after
the proxy is up. Hop-by-hop headers are dropped; bodies are read whole (the
suite sends JSON bodies; Coop answers JSON, never a stream).

    bearer_proxy.py --listen 127.0.0.1:PORT --upstream 127.0.0.1:PORT --token-file PATH
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import threading
from pathlib import Path

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "content-length",
}


def make_handler(upstream: tuple[str, int], token_file: Path):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # quiet: the suite prints enough
            pass

        def _forward(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP]
            path = self.path.split("?", 1)[0]
            if (path == "/mcp" or path.startswith("/mcp/")) and "Authorization" not in self.headers:
                try:
                    token = token_file.read_text().strip()
                except OSError:
                    token = ""
                if token:
                    headers.append(("Authorization", f"Bearer {token}"))
            conn = http.client.HTTPConnection(*upstream, timeout=60)
            try:
                conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for k, v in headers:
                    conn.putheader(k, v)
                if body is not None:
                    conn.putheader("Content-Length", str(len(body)))
                conn.endheaders(body)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response_only(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in HOP_BY_HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
            except OSError as e:
                msg = f"bearer proxy: upstream failed: {e}".encode()
                self.send_response_only(502)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                self.wfile.write(msg)
            finally:
                conn.close()

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _forward

    return Handler


def start(listen: tuple[str, int], upstream: tuple[str, int], token_file: Path) -> http.server.ThreadingHTTPServer:
    """Starts the proxy on a daemon thread; returns the server (its
    `server_address` holds the bound port)."""
    server = http.server.ThreadingHTTPServer(listen, make_handler(upstream, token_file))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _addr(text: str) -> tuple[str, int]:
    host, port = text.rsplit(":", 1)
    return host, int(port)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", required=True, type=_addr)
    ap.add_argument("--upstream", required=True, type=_addr)
    ap.add_argument("--token-file", required=True, type=Path)
    args = ap.parse_args()
    server = http.server.ThreadingHTTPServer(args.listen, make_handler(args.upstream, args.token_file))
    print(f"listening on {server.server_address[0]}:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
