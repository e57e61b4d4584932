#!/usr/bin/env python3
"""Runs the MCP conformance suites against a fresh Coop; see run.sh.

Three runs, each a `conformance` CLI of a pinned version:

  as    0.2.0-alpha.12 `authorization --url <issuer>`: the authorization
        server scenarios (`authorization-server-metadata-endpoint`,
        `authorization-code-grant`). The code-grant scenario prints an
        authorization URL and waits on a loopback callback; this runner
        signs in and approves on its behalf by form post
        (tests/tools/get-token.py) and delivers the redirect to the callback.
  2025  0.1.16 `server --url <issuer>/mcp` (the active suite, 2025 wire).
  2026  0.2.0-alpha.12 `server --url <issuer>/mcp --requirements 2026-07-28`.

The server runs go through a loopback proxy (bearer_proxy.py) that adds a
real access token, obtained by the OAuth flow, to every `/mcp` request: the
suite sends none. Coop's issuer is the proxy's origin, as behind any
reverse proxy.

Every failing check must be listed in expected-failures.txt with its
reason, and every listed one must fail: an unexpected failure, an
unexpected pass or a listed scenario that did not run makes the exit
status 1.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

spec = importlib.util.spec_from_file_location("get_token", ROOT / "tests/tools/get-token.py")
get_token = importlib.util.module_from_spec(spec)
spec.loader.exec_module(get_token)
sys.path.insert(0, str(HERE))
import bearer_proxy  # noqa: E402

EMAIL = "owner@conformance.example"
PASSWORD = "conformance suite password 1"
SCOPES = "farm:read daily-entries:write"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log(msg: str) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------- fixtures


def cli(binary: str, db: str, args: list[str], stdin: str | None = None) -> str:
    r = subprocess.run(
        [binary, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "COOP_DATABASE_URL": db, "RUST_LOG": "warn"},
    )
    if r.returncode != 0:
        raise SystemExit(f"coop {' '.join(args)} failed: {r.stderr.strip()}")
    return r.stdout.strip()


def make_fixture(binary: str, db: str) -> None:
    """A farm with a house, two flocks and an owner, through the real CLI."""
    slug = cli(binary, db, ["admin", "farm", "add", "--name", "Conformance Farm"])
    cli(binary, db, ["admin", "house", "add", "--farm", slug, "--name", "House 1"])
    for name in ("Flock A", "Flock B"):
        cli(binary, db, ["admin", "flock", "add", "--farm", slug, "--house", "House 1", "--name", name,
                         "--breed", "ISA Brown", "--placed", "2026-01-15", "--head-count", "1200"])
    cli(binary, db, ["admin", "user", "add", "--farm", slug, "--email", EMAIL, "--role", "owner",
                     "--password-stdin"], stdin=PASSWORD)


def start_coop(binary: str, db: str, coop_port: int, issuer: str, logfile: Path) -> subprocess.Popen:
    out = open(logfile, "wb")
    proc = subprocess.Popen(
        [binary, "serve", "--bind", f"127.0.0.1:{coop_port}", "--issuer", issuer,
         # The suites are one burst from one grant; the per-grant limit
         # (300/min) is tested by the integration suite, not here.
         "--mcp-rate-limit", "0", "--access-token-ttl", "3600"],
        stdout=out,
        stderr=subprocess.STDOUT,
        env={**os.environ, "COOP_DATABASE_URL": db, "RUST_LOG": os.environ.get("RUST_LOG", "info")},
    )
    for _ in range(200):
        if proc.poll() is not None:
            raise SystemExit(f"coop exited with {proc.returncode}; log: {logfile}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{coop_port}/readyz", timeout=1) as r:
                if r.status == 200:
                    return proc
        except OSError:
            pass
        time.sleep(0.1)
    proc.terminate()
    raise SystemExit(f"coop not ready after 20 s; log: {logfile}")


# ------------------------------------------------------------ the suites


@dataclass
class Scenario:
    suite: str
    name: str
    checks: list[dict] = field(default_factory=list)
    error: str | None = None  # the scenario did not produce checks

    def failing(self) -> list[dict]:
        return [c for c in self.checks if c.get("status") == "FAILURE"]


def run_cli(cmd: list[str], logfile: Path, env: dict, on_line=None, timeout: int = 1800) -> list[str]:
    """Runs a conformance CLI, teeing its output to `logfile`; returns the
    scenario names it announced, in order."""
    announced: list[str] = []
    with open(logfile, "w") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                out.write(line)
                out.flush()
                m = re.match(r"=== Running scenario: (\S+) ===", line.strip())
                if m:
                    announced.append(m.group(1))
                if on_line:
                    on_line(line.rstrip("\n"))
            proc.wait()
        finally:
            timer.cancel()
    return announced


def collect(suite: str, outdir: Path, announced: list[str]) -> list[Scenario]:
    """Reads `<outdir>/<kind>-<scenario>-<timestamp>/checks.json`."""
    by_name = {name: Scenario(suite, name) for name in announced}
    names = sorted(by_name, key=len, reverse=True)
    for checks in sorted(outdir.glob("*/checks.json")):
        stem = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", checks.parent.name)
        match = next((n for n in names if stem == n or stem.endswith("-" + n)), None)
        if match is None:
            by_name.setdefault(stem, Scenario(suite, stem))
            match = stem
        by_name[match].checks.extend(json.loads(checks.read_text()))
    for s in by_name.values():
        if not s.checks:
            s.error = "no checks recorded (the scenario did not run to the end; see the log)"
    return list(by_name.values())


def run_authorization(bin_dir: Path, issuer: str, out: Path, env: dict) -> list[Scenario]:
    metadata = get_token.discover(issuer)
    callback_port = free_port()
    client_id = get_token.register_public_client(
        metadata, f"http://127.0.0.1:{callback_port}/callback", "MCP conformance suite"
    )
    problems: list[str] = []

    def on_line(line: str) -> None:
        if line.startswith(metadata["authorization_endpoint"] + "?"):
            def answer() -> None:
                try:
                    # Give the suite's callback server a moment to listen.
                    time.sleep(0.2)
                    back = get_token.approve(get_token.Browser(), line.strip(), EMAIL, PASSWORD)
                    r = get_token.Browser().get(back)
                    if r.status >= 400:
                        problems.append(f"callback answered HTTP {r.status}")
                except Exception as e:  # reported below as a failed check
                    problems.append(f"signing in and approving failed: {e}")
            threading.Thread(target=answer, daemon=True).start()

    results = out / "as"
    cmd = [str(bin_dir / "conformance"), "authorization", "--url", issuer, "--client-id", client_id,
           "--resource", issuer + "/mcp", "--port", str(callback_port), "-o", str(results)]
    announced = run_cli(cmd, out / "as.log", env, on_line, timeout=600)
    scenarios = collect("as", results, announced)
    for p in problems:
        for s in scenarios:
            if s.name == "authorization-code-grant":
                s.checks.append({"id": "runner-approval", "status": "FAILURE", "errorMessage": p})
    return scenarios


def run_server(suite: str, bin_dir: Path, mcp_url: str, extra: list[str], out: Path, env: dict) -> list[Scenario]:
    results = out / suite
    cmd = [str(bin_dir / "conformance"), "server", "--url", mcp_url, *extra, "-o", str(results)]
    announced = run_cli(cmd, out / f"{suite}.log", env)
    return collect(suite, results, announced)


# ------------------------------------------------------ expected failures


@dataclass
class Expected:
    suite: str
    scenario: str
    check: str | None
    reason: str
    line: int
    used: bool = False


def load_expected(path: Path) -> list[Expected]:
    """Lines `<suite> <scenario>[/<check id or name>] <reason>`; `#` comments."""
    entries = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3:
            raise SystemExit(f"{path}:{n}: want '<suite> <scenario>[/<check>] <reason>'")
        suite, target, reason = parts
        scenario, _, check = target.partition("/")
        entries.append(Expected(suite, scenario, check or None, reason, n))
    return entries


def judge(scenarios: list[Scenario], expected: list[Expected], suites_run: set[str]) -> int:
    bad = 0
    for s in scenarios:
        mine = [e for e in expected if e.suite == s.suite and e.scenario == s.name]
        whole = next((e for e in mine if e.check is None), None)
        failing = s.failing()
        passed = sum(1 for c in s.checks if c.get("status") == "SUCCESS")
        warnings = sum(1 for c in s.checks if c.get("status") == "WARNING")
        tally = f"({passed} passed, {len(failing)} failed{f', {warnings} warnings' if warnings else ''})"
        label = f"{s.suite:<4} {s.name}"
        for e in mine:
            e.used = True
        if s.error:
            if whole:
                log(f"XFAIL {label}: {s.error} -- expected: {whole.reason}")
            else:
                bad += 1
                log(f"FAIL  {label}: {s.error}")
            continue
        if whole:
            if failing:
                log(f"XFAIL {label} {tally} -- {whole.reason}")
            else:
                bad += 1
                log(f"UNEXPECTED PASS {label} {tally}: listed in expected-failures.txt line {whole.line}; remove it")
            continue
        listed = [e for e in mine if e.check]
        unexpected = [c for c in failing if not any(e.check in (c.get("id"), c.get("name")) for e in listed)]
        stale = [e for e in listed if not any(e.check in (c.get("id"), c.get("name")) for c in failing)]
        if unexpected:
            bad += 1
            log(f"FAIL  {label} {tally}")
            for c in unexpected:
                why = " ".join(str(c.get("errorMessage") or c.get("description")).split())
                log(f"        {c.get('id')} [{c.get('name')}]: {why[:300]}")
        for e in stale:
            bad += 1
            log(f"UNEXPECTED PASS {label}/{e.check}: listed in expected-failures.txt line {e.line}; remove it")
        if not unexpected and not stale:
            if failing:
                reasons = "; ".join(sorted({e.reason for e in listed}))
                log(f"XFAIL {label} {tally} -- {len(failing)} listed check(s): {reasons}")
            else:
                log(f"PASS  {label} {tally}")
    for e in expected:
        if not e.used and e.suite in suites_run:
            bad += 1
            log(f"NOT RUN {e.suite} {e.scenario}: listed in expected-failures.txt line {e.line} but the suite did not run it")
    return bad


# -------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coop", required=True, help="the coop binary")
    ap.add_argument("--node-bin", required=True, help="directory holding Node 22")
    ap.add_argument("--suite-2025", required=True, type=Path, help="node_modules/.bin of conformance 0.1.16")
    ap.add_argument("--suite-2026", required=True, type=Path, help="node_modules/.bin of conformance 0.2.0-alpha.12")
    ap.add_argument("--expected", default=HERE / "expected-failures.txt", type=Path)
    ap.add_argument("--suites", default="as,2025,2026", help="comma-separated subset of as,2025,2026")
    ap.add_argument("--database-url", help="default: a fresh SQLite file in the work directory")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, results)")
    args = ap.parse_args()
    suites = set(args.suites.split(","))

    work = Path(tempfile.mkdtemp(prefix="coop-conformance-"))
    db = args.database_url or f"sqlite://{work}/coop.db"
    coop_port, proxy_port = free_port(), free_port()
    issuer = f"http://127.0.0.1:{proxy_port}"
    token_file = work / "access-token"
    env = {**os.environ, "PATH": f"{args.node_bin}:{os.environ['PATH']}", "NO_COLOR": "1"}

    make_fixture(args.coop, db)
    coop = start_coop(args.coop, db, coop_port, issuer, work / "coop.log")
    proxy = bearer_proxy.start(("127.0.0.1", proxy_port), ("127.0.0.1", coop_port), token_file)
    log(f"coop on 127.0.0.1:{coop_port}, issuer and proxy {issuer}, work directory {work}")
    scenarios: list[Scenario] = []
    try:
        if "as" in suites:
            log("== authorization server scenarios (conformance 0.2.0-alpha.12)")
            scenarios += run_authorization(args.suite_2026, issuer, work, env)
        if suites & {"2025", "2026"}:
            tokens = get_token.Flow(issuer, EMAIL, PASSWORD, SCOPES).tokens()
            token_file.write_text(tokens["access_token"])
        if "2025" in suites:
            log("== MCP server, 2025 wire (conformance 0.1.16)")
            scenarios += run_server("2025", args.suite_2025, issuer + "/mcp", [], work, env)
        if "2026" in suites:
            log("== MCP server, 2026-07-28 wire (conformance 0.2.0-alpha.12 --requirements 2026-07-28)")
            scenarios += run_server("2026", args.suite_2026, issuer + "/mcp",
                                    ["--requirements", "2026-07-28"], work, env)
    finally:
        proxy.shutdown()
        coop.terminate()
        coop.wait(timeout=30)

    log("== results")
    bad = judge(scenarios, load_expected(args.expected), suites)
    if bad == 0 and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
        log(f"== {len(scenarios)} scenarios, no unexpected result")
    else:
        log(f"== {len(scenarios)} scenarios, {bad} unexpected result(s); logs and results kept in {work}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
