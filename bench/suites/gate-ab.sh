#!/usr/bin/env bash
# gate-ab.sh OUT BIN_A BIN_B [ROUNDS] - the regression gate with the
# baseline measured beside the candidate, interleaved (issue 32;
# docs/regression-gates.md, "Interleaved A/B").
#
# `compare RUN_A RUN_B` against a baseline run from another time sees the
# machine's drift between the two runs: on the 2-core guest a kernel's
# paired ratio moves 1-3.5% (SD) between CI-suite runs minutes apart, more
# than its repeats within one run explain, and that drift is what made
# the run-against-run gate flag 2 of 20 A/A pairs
# (results/validation/gate/noise-20261207).  Here both builds are timed in
# the same minutes: ROUNDS (default 12) rounds of the timed entries of the
# suite (stream, optim, compress; each once per round), arm A then B in
# even rounds, B then A in odd ones, so drift lands on both arms alike.
# The rounds of each arm are then put together into OUT/A/run and
# OUT/B/run (one results run each, ROUNDS samples per row) and compared:
# `compare OUT/A/run OUT/B/run`, its text on stdout, its JSON in
# OUT/compare.json; the exit status is compare's (1: a regression).
#
# BIN_A, BIN_B: two lbscale binaries (e.g. the base and the candidate,
# each its own build directory's build/lbscale); they may be the same.
# Environment: SUITE (default bench/suites/ci.json), B_ENV ("VAR=VALUE
# ..." set for arm B only: the gate benchmark plants its slowdown there,
# LBSCALE_TEST_SLOWDOWN), COMPARE_ARGS (more arguments for compare).
# Resumable: a round whose suite finished is kept.  Each suite runs under
# nice and flock LBSCALE_LOCK (default /tmp/lbscale-heavy.lock: the
# machine is shared; the tests name their own, so a caller holding the
# machine's lock does not wait on itself).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
die() { echo "gate-ab.sh: $*" >&2; exit 2; }
[ $# -ge 3 ] && [ $# -le 4 ] ||
    die "usage: gate-ab.sh OUT BIN_A BIN_B [ROUNDS]"
OUT=$1 A=$2 B=$3 ROUNDS=${4:-12}
SUITE=${SUITE:-$ROOT/bench/suites/ci.json}
LOCK=${LBSCALE_LOCK:-/tmp/lbscale-heavy.lock}
for b in "$A" "$B"; do
    [ -f "$b" ] && [ -x "$b" ] || die "'$b' is not an executable lbscale"
done
[[ "$ROUNDS" =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 2 ] && [ "$ROUNDS" -le 1000 ] ||
    die "ROUNDS '$ROUNDS' is not an integer in 2..1000"
[ -f "$SUITE" ] || die "no suite file '$SUITE'"
for kv in ${B_ENV:-}; do
    [[ "$kv" =~ ^[A-Za-z_][A-Za-z0-9_]*=.*$ ]] ||
        die "B_ENV entry '$kv' is not VAR=VALUE"
done
[ ! -e "$OUT" ] || [ -d "$OUT" ] || die "'$OUT' exists and is not a directory"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
A=$(cd "$(dirname "$A")" && pwd)/$(basename "$A")
B=$(cd "$(dirname "$B")" && pwd)/$(basename "$B")

# the suite's timed entries, each once per round (the simulator's entries
# are exact and gated elsewhere)
"$PY" - "$SUITE" "$OUT/ab-suite.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["suite"] = s.get("suite", "suite") + "-ab"
s["entries"] = [e for e in s["entries"]
                if e["verb"] in ("stream", "optim", "compress")]
for e in s["entries"]:
    e["repeat"] = 1
json.dump(s, open(sys.argv[2], "w"), indent=1)
PY

arm() {  # arm A|B ROUND: one round of one arm, kept when complete
    local d=$OUT/$1/r$2 bin=$A envs=()
    [ -f "$d/.complete" ] && return 0
    [ "$1" = B ] && bin=$B && read -r -a envs <<<"${B_ENV:-}"
    rm -rf "$d"
    mkdir -p "$OUT/$1"
    echo "== round $2 arm $1 $(date -u +%H:%M:%S)" >&2
    flock "$LOCK" env "${envs[@]}" nice "$bin" suite \
        "$OUT/ab-suite.json" --no-plot --out "$d" >"$d.log" 2>&1 ||
        { echo "gate-ab.sh: round $2 arm $1 failed; see $d.log" >&2; exit 1; }
    touch "$d/.complete"
}

for ((r = 0; r < ROUNDS; r++)); do
    t=$(printf %03d "$r")
    if [ $((r % 2)) -eq 0 ]; then arm A "$t"; arm B "$t"
    else arm B "$t"; arm A "$t"; fi
done

# each arm's rounds as one run: round 0's meta.json, every row file in
# round order (the rows' attempt ids are unique, suite.jsonl commits them)
for x in A B; do
    rm -rf "$OUT/$x/run"
    mkdir -p "$OUT/$x/run"
    cp "$OUT/$x/r000/meta.json" "$OUT/$x/run/"
    for f in "$OUT/$x/r000/"*.jsonl; do
        f=$(basename "$f")
        cat "$OUT/$x"/r[0-9][0-9][0-9]/"$f" >"$OUT/$x/run/$f"
    done
done
CMP=${LBSCALE:-$B}
rc=0
# shellcheck disable=SC2086
"$CMP" compare "$OUT/A/run" "$OUT/B/run" --json ${COMPARE_ARGS:-} \
    >"$OUT/compare.json" || true
# shellcheck disable=SC2086
"$CMP" compare "$OUT/A/run" "$OUT/B/run" ${COMPARE_ARGS:-} || rc=$?
exit "$rc"
