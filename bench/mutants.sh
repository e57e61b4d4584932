#!/usr/bin/env bash
# Mutation testing (issues 16 and 31) with cargo-mutants, plus hand-made
# mutants of SQL text: each mutant is a deliberate bug (a condition
# flipped, a check skipped, a value replaced, a farm predicate dropped); a
# mutant the tests do not notice is a missing test. Prints, per file,
# mutants caught, missed, unviable and timed out, and the score (caught /
# (caught + missed)); target at least 95 %.
#
#   bench/mutants.sh [file or folder…]   default: every part below
#
# Parts: the authorization paths (issue 16): src/oauth/ (protocol code),
# src/mcp/bearer.rs, the /mcp guard (src/http/mcp/guard.rs), the per-call
# store look-up (src/storage/call_context.rs) and src/identity/; and the
# farm-records side (issue 31): the tools (src/mcp/tools/), the storage
# modules they and the admin pages read and write (daily entries, flocks,
# egg lots, stock, the farm page's houses and flocks, connected apps,
# automations, members, flock limits, the audit query, farms) and
# src/admin/. All of it is days of rebuilds on 2 cores: name the parts.
#
# Function-body mutants ("replace f -> Result<Vec<T>, StoreError> with
# Ok(vec![])") need the return type spelled out: cargo-mutants reads the
# type as written and knows `Result<…>` but not an alias of it, so behind
# `StoreResult<T>` every such mutant was `Default::default()` and failed
# to build (unviable). The storage, admin and page layers therefore write
# `Result<T, StoreError>`, `Result<T, AdminError>` and
# `Result<T, PageRefusal>` (cargo-mutants has no setting that resolves an
# alias). The tools keep `ToolResult`: a `ToolReply` has no default value,
# so spelled out it would give unviable mutants all the same.
#
# Two passes, so that a run fits in hours rather than days on 2 cores
# (src/oauth/ alone has over a thousand mutants, and each is a rebuild):
#   1. every mutant against the library's unit tests (`cargo test --lib`),
#      which is where the protocol code is tested with the clock passed in;
#   2. only the mutants pass 1 missed, against the integration suite on
#      SQLite (`cargo test --test api -- sqlite`): the HTTP-level tests
#      catch what sits between the protocol code and the wire. Both engines
#      run one SQL text, so the engine does not change which mutant a test
#      catches; PostgreSQL's halves are skipped (COOP_TEST_POSTGRES_URL
#      points at a closed port and COOP_TEST_REQUIRE_POSTGRES is unset).
# MUTANTS_API_TESTS narrows pass 2 to the api modules that exercise the
# files (cargo test filters, space-separated, e.g. "dpop oauth_token"; the
# PostgreSQL halves they include skip themselves, as above).
# MUTANTS_UNIT_TESTS narrows pass 1 the same way (e.g. "oauth::": the
# protocol modules' own tests run in 3 s, the whole library's in 20 s or
# more, and pass 1 runs once per mutant); a mutant only the other unit
# tests would catch goes on to pass 2, and if that misses it too it is
# counted missed: the narrowing can only lower the score.
# MUTANTS_ONLY=FILE runs only the mutants named in FILE, one per line (an
# earlier run's mutants.out/missed.txt): its survivors against the tests
# written since, without running the rest again.
# MUTANTS_PASSES=unit runs pass 1 only (its survivors are then listed as
# missed by the unit tests, for a person to read against the api tests);
# MUTANTS_PASSES=api runs pass 2 only, for the survivors of a pass 1 already
# in $MUTANTS_OUT/unit: with the files narrowed, each part's survivors can
# meet only the api tests that exercise that part (a shorter pass 2), each
# group under its own MUTANTS_API_GROUP name; the score counts them all.
# A third pass applies the hand-made SQL mutants of bench/sql-mutants.txt
# (or MUTANTS_SQL=FILE), one at a time, to the same copy, and runs the api
# tests MUTANTS_SQL_TESTS names (default "tenancy:: automations:: admin_")
# on SQLite: a failing test catches the mutant, a build failure makes it
# unviable (a line that no longer applies is reported and counted as
# such); lines marked `equivalent:` are counted, not run.
# MUTANTS_PASSES=sql runs that pass alone.
# A mutant either pass catches is caught; one that makes the tests hang past
# the timeout is counted as caught too (the suite noticed). Mutants known to be equivalent
# (the program behaves the same) are listed with a reason in
# .cargo/mutants-equivalent.txt and excluded.
#
# It mutates a copy: a git worktree of HEAD under $MUTANTS_WORK (default
# /tmp/coop-mutants), built in $MUTANTS_TARGET (default
# ~/.cache/coop-mutants-target; copying a warm debug target there first
# saves building the dependencies). Debug info is turned off for the crate
# itself only, which makes each rebuild cheaper without rebuilding
# dependencies. Not part of CI. Needs `cargo install cargo-mutants --locked`.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null || { echo "cargo install cargo-mutants --locked" >&2; exit 1; }

parts=("$@")
records=(daily_entries flocks egg_lots stock farm_admin connected_apps automations members flock_limits audit_query farms)
[[ ${#parts[@]} -gt 0 ]] || parts=(src/oauth src/mcp/bearer.rs src/http/mcp/guard.rs src/storage/call_context.rs src/identity
  src/mcp/tools "${records[@]/#/src/storage/}" src/admin)
for i in "${!parts[@]}"; do [[ -e "${parts[$i]}" || ! -e "${parts[$i]}.rs" ]] || parts[$i]="${parts[$i]}.rs"; done
work="${MUTANTS_WORK:-/tmp/coop-mutants}"
out="${MUTANTS_OUT:-$(mktemp -d)}"
mkdir -p "$out"
export CARGO_TARGET_DIR="${MUTANTS_TARGET:-$HOME/.cache/coop-mutants-target}"
export COOP_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:1/postgres"
unset COOP_TEST_REQUIRE_POSTGRES

if [[ ! -d "$work" ]]; then git worktree add -q --detach "$work" HEAD; fi
# --hard: a run killed mid-mutant leaves that mutant in the copy.
git -C "$work" reset -q --hard "$(git rev-parse HEAD)"
mkdir -p "$work/.cargo"
cat > "$work/.cargo/config.toml" <<'TOML'
[profile.dev.package.coop]
debug = 0
TOML

exclude=()
if [[ -f .cargo/mutants-equivalent.txt ]]; then
  while IFS= read -r line; do
    [[ -z "$line" || "$line" == \#* ]] && continue
    exclude+=(--exclude-re "${line%% #*}")
  done < .cargo/mutants-equivalent.txt
fi
# Mutant names as exact regular expressions (cargo-mutants' --re matches names).
exact_names() { sed -e 's/[][\\.^$*+?(){}|/]/\\&/g' -e 's/^/^/' -e 's/$/$/' "$1" | paste -sd'|'; }
only=()
if [[ -n "${MUTANTS_ONLY:-}" ]]; then only=(--re "$(exact_names "$MUTANTS_ONLY")"); fi
files=()
for part in "${parts[@]}"; do
  if [[ -d "$part" ]]; then files+=(-f "$part/**/*.rs"); else files+=(-f "$part"); fi
done
common=(--in-place --no-shuffle --baseline skip --timeout 300 --build-timeout 1200 "${exclude[@]}")

echo "$(date -u +%FT%TZ) cargo-mutants $(cargo mutants --version | awk '{print $2}') on $(git rev-parse --short HEAD), $(cd "$work" && cargo mutants --list "${files[@]}" "${exclude[@]}" "${only[@]}" | wc -l) mutants"
passes="${MUTANTS_PASSES:-unit api sql}"
if [[ "$passes" == *unit* ]]; then
  (cd "$work" && cargo mutants "${common[@]}" "${files[@]}" "${only[@]}" --output "$out/unit" -- --lib -- ${MUTANTS_UNIT_TESTS:-}) >"$out/unit.log" 2>&1 || true
fi
missed="$out/unit/mutants.out/missed.txt"
api="api${MUTANTS_API_GROUP:+-$MUTANTS_API_GROUP}"
# Without pass 1 (MUTANTS_PASSES=api and no $MUTANTS_OUT/unit), every
# mutant meets the api tests: for files only they exercise (the admin
# pages' storage), pass 1 would cost a rebuild each to catch nothing.
select=() run_api=
if [[ -s "$missed" ]]; then
  select=(--re "$(exact_names "$missed")") run_api=1
elif [[ "$passes" != *unit* && ! -d "$out/unit" ]]; then
  select=("${only[@]}") run_api=1
fi
if [[ -n "$run_api" && "$passes" == *api* ]]; then
  (cd "$work" && cargo mutants "${common[@]}" "${files[@]}" "${select[@]}" --output "$out/$api" \
    -- --test api -- ${MUTANTS_API_TESTS:-sqlite}) >"$out/$api.log" 2>&1 || true
fi

if [[ "$passes" == *sql* ]]; then
  list="${MUTANTS_SQL:-bench/sql-mutants.txt}"
  : >"$out/sql.txt"
  n=0
  while IFS= read -r line; do
    [[ -z "$line" || "$line" == \#* ]] && continue
    n=$((n + 1))
    file="${line%% | *}"
    if [[ "$line" == *" | equivalent: "* ]]; then
      printf 'equivalent\t%s\n' "$line" >>"$out/sql.txt"; continue
    fi
    if ! python3 - "$work" "$line" <<'PY'
import pathlib, sys
work, line = sys.argv[1], sys.argv[2]
file, anchor, find, replacement = (line.split(" | ") + [""])[:4]
path = pathlib.Path(work) / file
text = path.read_text()
if text.count(anchor) != 1:
    sys.exit(f"{file}: anchor {anchor!r} occurs {text.count(anchor)} times")
at = text.find(find, text.index(anchor))
if at < 0:
    sys.exit(f"{file}: {find!r} not found after {anchor!r}")
path.write_text(text[:at] + replacement + text[at + len(find):])
PY
    then
      printf 'unviable\t%s\n' "$line" >>"$out/sql.txt"; continue
    fi
    log="$out/sql-$n.log"
    if (cd "$work" && timeout 1800 cargo test --test api -- ${MUTANTS_SQL_TESTS:-tenancy:: automations:: admin_}) >"$log" 2>&1; then
      outcome=missed
    elif grep -qE '^error(\[E[0-9]+\])?:' "$log" && ! grep -q '^test result' "$log"; then
      outcome=unviable
    else
      outcome=caught
    fi
    git -C "$work" checkout -q -- "$file"
    printf '%s\t%s\n' "$outcome" "$line" >>"$out/sql.txt"
    echo "$(date -u +%T) sql mutant $n: $outcome: $line"
  done <"$list"
fi

python3 - "$out" <<'PY'
import collections, pathlib, re, sys
out = pathlib.Path(sys.argv[1])
def read(phase, outcome):
    f = out / phase / "mutants.out" / f"{outcome}.txt"
    return f.read_text().splitlines() if f.exists() else []
# Pass 2 may have run in groups (api, api-NAME), each for some files.
api_dirs = sorted(d.name for d in out.iterdir() if d.is_dir() and d.name.startswith("api"))
def read_api(outcome): return {name for d in api_dirs for name in read(d, outcome)}
api_caught = read_api("caught")
api_timeout = read_api("timeout")
unit_ran = (out / "unit").is_dir()
missed = set(read("unit", "missed")) - api_caught - api_timeout
if not unit_ran:
    missed |= read_api("missed")
rows = collections.defaultdict(lambda: collections.Counter())
def file_of(name): return re.sub(r":\d+:\d+:.*", "", name)
for name in read("unit", "caught"): rows[file_of(name)]["caught by unit tests"] += 1
for name in api_caught: rows[file_of(name)]["caught by api tests"] += 1
for name in missed: rows[file_of(name)]["missed"] += 1
for name in read("unit", "unviable") if unit_ran else read_api("unviable"):
    rows[file_of(name)]["unviable"] += 1
for name in set(read("unit", "timeout")) | api_timeout: rows[file_of(name)]["timeout"] += 1
cols = ["caught by unit tests", "caught by api tests", "missed", "unviable", "timeout"]
print(f"{'file':40} {'unit':>5} {'api':>5} {'missed':>6} {'unviable':>8} {'timeout':>7} {'score':>6}")
total = collections.Counter()
for f in sorted(rows):
    r = rows[f]; total.update(r)
    caught = r[cols[0]] + r[cols[1]] + r["timeout"]
    viable = caught + r["missed"]
    score = f"{100 * caught / viable:.1f}%" if viable else "-"
    print(f"{f:40} {r[cols[0]]:5} {r[cols[1]]:5} {r['missed']:6} {r['unviable']:8} {r['timeout']:7} {score:>6}")
caught = total[cols[0]] + total[cols[1]] + total["timeout"]
viable = caught + total["missed"]
if viable:
    print(f"{'all':40} {total[cols[0]]:5} {total[cols[1]]:5} {total['missed']:6} {total['unviable']:8} {total['timeout']:7} {100 * caught / viable:5.1f}%")
for name in sorted(missed):
    print("    missed:", name)
sql = out / "sql.txt"
if sql.exists():
    rows = collections.defaultdict(collections.Counter)
    lines = [l.split("\t", 1) for l in sql.read_text().splitlines() if "\t" in l]
    for outcome, line in lines:
        rows[line.split(" | ")[0]][outcome] += 1
    print(f"\nSQL hand mutants\n{'file':40} {'caught':>6} {'missed':>6} {'equiv.':>6} {'unviable':>8} {'score':>6}")
    total = collections.Counter()
    for f in sorted(rows):
        r = rows[f]; total.update(r)
        viable = r["caught"] + r["missed"]
        score = f"{100 * r['caught'] / viable:.1f}%" if viable else "-"
        print(f"{f:40} {r['caught']:6} {r['missed']:6} {r['equivalent']:6} {r['unviable']:8} {score:>6}")
    viable = total["caught"] + total["missed"]
    if viable:
        print(f"{'all':40} {total['caught']:6} {total['missed']:6} {total['equivalent']:6} {total['unviable']:8} {100 * total['caught'] / viable:5.1f}%")
    for outcome, line in lines:
        if outcome in ("missed", "unviable"):
            print(f"    {outcome}:", line)
PY
echo "(full reports under $out)"
