#!/usr/bin/env bash
# gate_cli.sh BINARY - the regression gates' floors and knobs through the
# real binary (TAP): `lbscale check` never holds a ratio to a margin
# smaller than the run's own spread (a 33% drop among samples spread 40%
# passes, and says "(spread)"; the same drop among steady samples fails);
# the planted slowdown LBSCALE_TEST_SLOWDOWN slows only the kernel it
# names, is recorded in meta.json, is refused when malformed and is off
# unless set; a suite runs its repeats in rounds (a1 b1 c1 a2 b2 b3), or
# entry by entry with "interleave": false; bench/suites/gate-ab.sh refuses
# bad input with one line and makes nothing, runs its arms in ABBA rounds,
# merges each arm's rounds into one run and flags a slowdown planted on
# arm B alone.
set -u
BIN=${1:?usage: gate_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
. "$(dirname "$0")/tap.sh"

# kernels DIR V1,V2,...: an optim run whose lamb rows have roofline_frac
# V1, V2, ...; and a baseline at 1.5 (drop, margin 25%) in DIR.json
kernels() {
    "$PY" - "$@" <<'PY'
import json, os, sys
d, vals = sys.argv[1], [float(x) for x in sys.argv[2].split(",")]
os.makedirs(d, exist_ok=True)
json.dump({"git_rev": "test"}, open(os.path.join(d, "meta.json"), "w"))
with open(os.path.join(d, "optim.jsonl"), "w") as f:
    for v in vals:
        f.write(json.dumps({"bench": "optim", "optim": "lamb", "elements": 1000,
                            "threads": 1, "roofline_frac": v}) + "\n")
json.dump({"format": "lbscale-baseline", "version": 1, "name": "t",
           "rule": "drop", "margin": 0.25,
           "metrics": [{"file": "optim", "where": {"optim": "lamb"},
                        "field": "roofline_frac", "baseline": 1.5}]},
          open(d + ".json", "w"))
PY
}
kernels "$TOP/steady" 0.99,1.0,1.01
"$BIN" check "$TOP/steady" --baseline "$TOP/steady.json" >"$TOP/out" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "drop <= 25%  *FAIL" "$TOP/out" &&
    ok "check: a 33% drop among steady samples fails" ||
    not_ok "check: a 33% drop among steady samples fails" "exit $rc" "$(cat "$TOP/out")"
kernels "$TOP/noisy" 0.6,1.0,1.4
"$BIN" check "$TOP/noisy" --baseline "$TOP/noisy.json" >"$TOP/out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "drop <= 40% (spread)  *pass" "$TOP/out" &&
    ok "check: the same drop inside the run's 40% spread passes, named" ||
    not_ok "check: the same drop inside the run's 40% spread passes, named" "exit $rc" "$(cat "$TOP/out")"
"$BIN" check "$TOP/noisy" --baseline "$TOP/noisy.json" --json >"$TOP/out" 2>&1
"$PY" -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); assert abs(r["spread"]-0.4)<1e-12, r' "$TOP/out" &&
    ok "check --json: the spread per metric" || not_ok "check --json: the spread per metric" "$(cat "$TOP/out")"

# ---- the planted slowdown (test-only knob) ---------------------------------
# compress and decompress GB/s of compressor C at 256K elements, 1
# thread, in run DIR (env ENV), as "compress,decompress"
gbps() {  # gbps DIR C [ENV]
    env ${3:+LBSCALE_TEST_SLOWDOWN=$3} "$BIN" compress --compressor "$2" \
        --elements 256K --threads 1 --iters 5 --out "$1" >/dev/null 2>"$TOP/err" || return 1
    "$PY" -c 'import json,sys; r=json.loads(open(sys.argv[1]+"/compress.jsonl").readline()); print("%r,%r" % (r["gbps"], r["decompress_gbps"]))' "$1"
}
plain=$(gbps "$TOP/p0" sign) && slow=$(gbps "$TOP/p1" sign compress/sign=20) &&
    other=$(gbps "$TOP/p2" sign compress/qsgd=20)
# a 20x planted slowdown: the bound is 5x, far from what noise does;
# compress and decompress both (PowerSGD's gated ratio times the two)
if [ -n "${other:-}" ] && "$PY" -c "import sys; p,s,o=[[float(x) for x in a.split(',')] for a in sys.argv[1:]]; sys.exit(not all(p[i] > 5*s[i] and o[i] > 5*s[i] for i in (0, 1)))" "$plain" "$slow" "$other"; then
    ok "LBSCALE_TEST_SLOWDOWN=compress/sign=20 slows sign's compress and decompress (gbps $plain -> $slow), not when it names qsgd ($other)"
else
    not_ok "LBSCALE_TEST_SLOWDOWN slows the named kernel only" "gbps plain ${plain:-?} slowed ${slow:-?} other ${other:-?}" "$(cat "$TOP/err")"
fi
"$PY" -c 'import json,sys; a=json.load(open(sys.argv[1]+"/meta.json")); b=json.load(open(sys.argv[2]+"/meta.json")); assert a["test_slowdown"] is None and b["test_slowdown"]=="compress/sign=20", (a.get("test_slowdown"), b.get("test_slowdown"))' "$TOP/p0" "$TOP/p1" &&
    ok "meta.json records the planted slowdown (null when off)" || not_ok "meta.json records the planted slowdown"
for v in foo compress/sign=1 optim/lamb=abc train/x=2 /x=2; do
    LBSCALE_TEST_SLOWDOWN=$v "$BIN" stream --elements 1K --no-save >"$TOP/out" 2>"$TOP/err"
    rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$TOP/err")" -eq 1 ] && grep -q "^lbscale: LBSCALE_TEST_SLOWDOWN: " "$TOP/err"; then
        ok "LBSCALE_TEST_SLOWDOWN=$v refused (exit 2, one line)"
    else
        not_ok "LBSCALE_TEST_SLOWDOWN=$v refused" "exit $rc" "$(cat "$TOP/err")"
    fi
done

# ---- interleaved repeats in suites -----------------------------------------
order() {  # order SUITE_FILE RUN: "a1 b1 ..." in the order the entries ran
    "$BIN" suite "$1" --no-plot --out "$2" >/dev/null 2>"$TOP/err" || return 1
    "$PY" -c 'import json,sys; print(" ".join(r["name"]+str(r["rep"]) for r in map(json.loads, open(sys.argv[1]+"/suite.jsonl")) if r.get("event")=="entry"))' "$2"
}
mksuite() {  # mksuite FILE [INTERLEAVE]
    "$PY" - "$@" <<'PY'
import json, sys
s = {"suite": "il", "entries": [
    {"name": n, "verb": "stream", "args": ["--elements", "10K"], "repeat": r}
    for n, r in (("a", 2), ("b", 3), ("c", 1))]}
if len(sys.argv) > 2:
    s["interleave"] = sys.argv[2] == "true"
json.dump(s, open(sys.argv[1], "w"))
PY
}
mksuite "$TOP/il.json"
got=$(order "$TOP/il.json" "$TOP/il") || got="failed: $(cat "$TOP/err")"
[ "$got" = "a1 b1 c1 a2 b2 b3" ] && ok "suite: repeats in rounds ($got)" || not_ok "suite: repeats in rounds" "$got"
mksuite "$TOP/nil.json" false
got=$(order "$TOP/nil.json" "$TOP/nil") || got="failed: $(cat "$TOP/err")"
[ "$got" = "a1 a2 b1 b2 b3 c1" ] && ok "suite: \"interleave\": false keeps entry by entry ($got)" || not_ok "suite: interleave false" "$got"
echo '{"suite": "x", "interleave": 1, "entries": [{"verb": "stream"}]}' >"$TOP/bad.json"
"$BIN" suite "$TOP/bad.json" --dry-run >"$TOP/out" 2>"$TOP/err"
[ $? -eq 2 ] && grep -q "interleave" "$TOP/err" && ok "suite: a non-boolean interleave is refused" || not_ok "suite: a non-boolean interleave is refused" "$(cat "$TOP/err")"
# ---- the interleaved A/B gate (bench/suites/gate-ab.sh) ---------------------
# its own lock file: a caller holding the machine's heavy lock (e.g. a
# benchmark run around .ci/run) must not make the test wait on itself
AB=$(cd "$(dirname "$0")/.." && pwd)/bench/suites/gate-ab.sh
echo '{"suite": "ab", "entries": [
  {"name": "stream", "verb": "stream", "repeat": 5, "args": ["--elements", "1M", "--threads", "1"]},
  {"name": "lamb", "verb": "optim", "args": ["--optim", "lamb", "--elements", "1M", "--threads", "1"]},
  {"name": "sim", "verb": "sim", "args": ["sweep", "--model", "bert-large", "--platform", "dgx-a100", "--optim", "sgd", "--gpus", "8"]}]}' >"$TOP/ab.json"
SUITE=$TOP/ab.json LBSCALE_LOCK=$TOP/heavy.lock "$AB" "$TOP/ab-bad" "$BIN" "$BIN" 1 >"$TOP/out" 2>"$TOP/err"
rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$TOP/err")" -eq 1 ] && [ ! -e "$TOP/ab-bad" ] &&
    ok "gate-ab: 1 round refused (exit 2, one line, nothing made)" ||
    not_ok "gate-ab: 1 round refused" "exit $rc" "$(cat "$TOP/err")"
SUITE=$TOP/ab.json LBSCALE_LOCK=$TOP/heavy.lock B_ENV="LBSCALE_TEST_SLOWDOWN=optim/lamb=3" \
    "$AB" "$TOP/ab" "$BIN" "$BIN" 4 >"$TOP/out" 2>"$TOP/err"
rc=$?
arms=$(sed -n 's/^== round [0-9]* arm \([AB]\).*/\1/p' "$TOP/err" | tr -d '\n')
rows=$(grep -c '"optim":"lamb"' "$TOP/ab/A/run/optim.jsonl" 2>/dev/null)
if [ $rc -eq 1 ] && [ "$arms" = ABBAABBA ] && [ "$rows" = 4 ] &&
    "$PY" -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][:-1]; sys.exit(not [x for x in r if x["regression"]] == [x for x in r if x["metric"] == "roofline_frac"])' "$TOP/ab/compare.json"; then
    ok "gate-ab: arms in ABBA rounds, 4 rows a side, a 3x LAMB on arm B flagged alone (exit 1)"
else
    not_ok "gate-ab: a planted 3x LAMB on arm B" "exit $rc arms $arms rows $rows" "$(cat "$TOP/out" "$TOP/err")"
fi
tap_end
