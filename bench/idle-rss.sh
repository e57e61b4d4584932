#!/usr/bin/env bash
# Memory of an idle Coop: starts the release binary on a fresh SQLite file,
# waits for /readyz, lets it settle, and prints its resident set size now
# (VmRSS) and at its peak (VmHWM) from /proc. Linux only.
#
#   bench/idle-rss.sh [--demo] [seconds-to-settle]
#
# Builds nothing: run `cargo build --release` first. The binary is looked up
# in $CARGO_TARGET_DIR/release (default target/release).
set -euo pipefail
cd "$(dirname "$0")/.."

demo=()
if [[ "${1:-}" == "--demo" ]]; then
  demo=(--demo)
  shift
fi
settle="${1:-5}"
binary="${CARGO_TARGET_DIR:-target}/release/coop"
[[ -x "$binary" ]] || { echo "no release binary at $binary; run cargo build --release" >&2; exit 1; }

work="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$binary" --database-url "sqlite://$work/coop.db" serve --bind "127.0.0.1:$port" "${demo[@]}" \
  >"$work/stdout" 2>"$work/stderr" &
pid=$!
cleanup() { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null || { echo "not ready" >&2; cat "$work/stderr" >&2; exit 1; }
sleep "$settle"

echo "coop $("$binary" --version | cut -d' ' -f2), idle ${settle}s after ready${demo:+ (with --demo)}, pid $pid, $(nproc) cores"
grep -E '^(VmRSS|VmHWM|Threads)' "/proc/$pid/status"
