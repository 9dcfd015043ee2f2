#!/usr/bin/env bash
# gate-bench.sh OUT [RUNS] [REPEAT] - a benchmark of the regression gate
# itself (issue 32; docs/regression-gates.md): does `lbscale compare`
# stay quiet on A/A pairs of the CI suite and catch a planted 10%
# slowdown of one kernel?
#
# It runs the CI suite (bench/suites/ci.json, the "repeat" of its timed
# entries - stream, optim, compress - set to REPEAT, default 7) RUNS times plain (P0, P1, ...) and RUNS times with
# a planted slowdown of 10% on one kernel (S0, S1, ...), alternating P0
# S0 P1 S1 ...; the kernel slowed cycles through the optimizers and
# compressors (LBSCALE_TEST_SLOWDOWN=VERB/NAME=1.10, a test-only knob).
# Then compares
#   A/A:      P(i-1) against P(i), one planted run apart (minutes)
#   planted:  P(i) against S(i); caught when the slowed kernel's row is
#             SLOWER or WORSE (a flag on any other row is a false alarm)
# and appends one JSON line per pair to OUT/gate.jsonl, then writes the
# table OUT/gate.md.  Resumable: a run whose suite finished is kept, a
# pair already in gate.jsonl is not compared again.  Each suite runs
# under nice and flock /tmp/lbscale-heavy.lock (the machine is shared).
# Environment: LBSCALE (default build/lbscale), FACTOR (default 1.10),
# SUITE (default bench/suites/ci.json; a smaller one to try the script),
# PLANT_EVERY (default 1: a planted run after every plain run; 2: after
# P0, P2, P4, ... - RUNS=21 PLANT_EVERY=2 gives the issue's 20 A/A pairs
# and 11 planted ones in 32 suite runs instead of 42; the slowed kernel
# still cycles through the targets in order).
# `gate-bench.sh --table OUT` only rewrites OUT/gate.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
BIN=${LBSCALE:-$ROOT/build/lbscale}
FACTOR=${FACTOR:-1.10}
TARGETS=(optim/lamb compress/qsgd optim/sgd compress/topk optim/adamw
         compress/sign optim/lars compress/powersgd optim/slamb
         compress/fp16 optim/dmsgd compress/randk)

table() {  # table OUT: gate.md from gate.jsonl
    "$PY" - "$1" <<'PY'
import json, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(out + "/gate.jsonl")]
aa = [r for r in rows if r["kind"] == "aa"]
pl = [r for r in rows if r["kind"] == "planted"]
with open(out + "/gate.md", "w") as f:
    f.write("| pair | A | B | exit | family | 10% needs n | flagged |\n"
            "|---|---|---|--:|--:|--:|---|\n")
    for r in rows:
        what = ("A/A" if r["kind"] == "aa" else
                "planted %s x%s: %s" % (r["planted"], r["factor"],
                                        "caught" if r["caught"] else "MISSED"))
        f.write("| %s | %s | %s | %d | %d | %s | %s |\n" % (
            what, r["a"], r["b"], r["exit"], r["family"],
            r["repeats_for_10pct"] or "-",
            ", ".join(r["regressed"]) or "-"))
    fa = sum(r["exit"] != 0 for r in aa)
    caught = sum(r["caught"] for r in pl)
    # flagged rows of any kernel but the slowed one (its own rows: the
    # regressed strings start with "VERB optim=NAME" / "VERB compressor=NAME")
    def mine(r, x):
        verb, name = r["planted"].split("/")
        key = "optim=" if verb == "optim" else "compressor="
        return x.startswith("%s %s%s " % (verb, key, name))
    other = sum(sum(not mine(r, x) for x in r["regressed"]) for r in pl)
    f.write("\nA/A pairs: %d, exited non-zero: %d.  Planted %s%% slowdowns: "
             "%d, caught: %d (false alarms on other metrics in those pairs: "
             "%d).  Repeats: %s.\n" % (
        len(aa), fa, round(100 * (float(pl[0]["factor"]) - 1)) if pl else "-",
        len(pl), caught, other, rows[0]["repeat"] if rows else "-"))
print(open(out + "/gate.md").read())
PY
}

if [ "${1:-}" = "--table" ]; then
    table "${2:?usage: gate-bench.sh --table OUT}"
    exit 0
fi
OUT=${1:?usage: gate-bench.sh OUT [RUNS] [REPEAT]}
RUNS=${2:-21}
REPEAT=${3:-7}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
touch "$OUT/gate.jsonl"
# the CI suite with the kernels' repeat count set
"$PY" - "${SUITE:-$ROOT/bench/suites/ci.json}" "$OUT/ci-gate.json" "$REPEAT" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["suite"] = "ci-gate"
for e in s["entries"]:   # every timed entry; the simulator's are exact
    if e["verb"] in ("stream", "optim", "compress"):
        e["repeat"] = int(sys.argv[3])
json.dump(s, open(sys.argv[2], "w"), indent=1)
PY

suite() {  # suite NAME [SLOWDOWN]: OUT/runs/NAME, kept when complete
    local d=$OUT/runs/$1
    [ -f "$d/.complete" ] && return 0
    rm -rf "$d"
    mkdir -p "$OUT/runs"
    echo "== $1 ${2:-plain} $(date -u +%H:%M:%S)" >&2
    flock /tmp/lbscale-heavy.lock env ${2:+LBSCALE_TEST_SLOWDOWN=$2} \
        nice "$BIN" suite "$OUT/ci-gate.json" --no-plot --out "$d" \
        >"$OUT/runs/$1.log" 2>&1
    touch "$d/.complete"
}

pair() {  # pair KIND A B [SLOWDOWN]: one line of gate.jsonl
    grep -q "\"a\": \"$2\", \"b\": \"$3\"" "$OUT/gate.jsonl" && return 0
    local rc=0
    "$BIN" compare "$OUT/runs/$2" "$OUT/runs/$3" --json \
        >"$OUT/runs/$2-$3.json" 2>&1 || rc=$?
    "$PY" - "$OUT" "$1" "$2" "$3" "$rc" "${4:-}" "$REPEAT" <<'PY'
import json, sys
out, kind, a, b, rc, slow, rep = sys.argv[1:8]
rows = [json.loads(l) for l in open("%s/runs/%s-%s.json" % (out, a, b))]
s = rows[-1]
reg = ["%s %s %s" % (r["verb"], r["config"].split(",")[0], r["metric"])
       for r in rows[:-1] if r["regression"]]
caught = False
if slow:
    verb, rest = slow.split("/")
    name = rest.split("=")[0]
    key = ("optim=" if verb == "optim" else "compressor=") + name
    caught = any(r["regression"] and r["verb"] == verb and
                 r["config"].split(",")[0] == key for r in rows[:-1])
meta = json.load(open("%s/runs/%s/meta.json" % (out, b)))
line = {"kind": kind, "a": a, "b": b, "exit": int(rc),
        "regressed": reg, "planted": slow.split("=")[0] if slow else None,
        "factor": slow.split("=")[1] if slow else None, "caught": caught,
        "family": s["family"], "repeats_for_10pct": s["repeats_for_10pct"],
        "repeat": int(rep), "b_created": meta.get("created_utc"), "git_rev": meta.get("git_rev")}
open(out + "/gate.jsonl", "a").write(json.dumps(line) + "\n")
print(json.dumps(line), file=sys.stderr)
PY
}

EVERY=${PLANT_EVERY:-1}
for ((i = 0; i < RUNS; i++)); do
    suite "P$i"
    [ "$i" -gt 0 ] && pair aa "P$((i - 1))" "P$i"
    [ $((i % EVERY)) -eq 0 ] || continue
    t=${TARGETS[(i / EVERY) % ${#TARGETS[@]}]}
    suite "S$i" "$t=$FACTOR"
    pair planted "P$i" "S$i" "$t=$FACTOR"
done
table "$OUT"
