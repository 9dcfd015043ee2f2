#!/usr/bin/env bash
# compare_cli.sh BINARY - `lbscale compare RUN_A RUN_B` on hand-made runs
# (TAP): identical runs pass; a changed deterministic metric fails; five
# samples per side 20% slower with 1% noise are SLOWER (exit 1), the same
# shift buried in 30% noise is not significant (exit 0); one sample per
# side needs 25%; where a kernel has a paired ratio only the ratio is
# tested (a step slower with its reference is reported, exit 0; --family
# all tests it); bad input exits 2.
set -u
BIN=${1:?usage: compare_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
. "$(dirname "$0")/tap.sh"

# mkrun DIR SCALE NOISE N WIRE [REF]: an optim run with N rows of step_ms
# 100 x SCALE x (1 + NOISE x u), u alternating in [-1, 1], roofline_frac
# 80 x REF / step_ms (REF default 1: the reference did not move), and a
# compress row with wire_bytes WIRE
mkrun() {
    "$PY" - "$@" <<'PY'
import json, os, sys
d, scale, noise, n, wire = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ref = float(sys.argv[6]) if len(sys.argv) > 6 else 1
os.makedirs(d, exist_ok=True)
json.dump({"git_rev": "test"}, open(os.path.join(d, "meta.json"), "w"))
with open(os.path.join(d, "optim.jsonl"), "w") as f:
    for i in range(n):
        u = [-1, 1, -0.5, 0.5, 0, -0.25, 0.25][i % 7]
        t = 100 * scale * (1 + noise * u)
        f.write(json.dumps({"bench": "optim", "optim": "lamb", "elements": 1000,
                            "threads": 1, "step_ms_median": t,
                            "roofline_frac": 80 * ref / t, "wrong": 0}) + "\n")
with open(os.path.join(d, "compress.jsonl"), "w") as f:
    f.write(json.dumps({"bench": "compress", "compressor": "topk",
                        "params": "k=0.01", "elements": 1000, "threads": 1,
                        "gbps": 10, "wire_bytes": wire, "wrong": 0}) + "\n")
PY
}
cmp_case() {  # cmp_case DESC WANT_RC A B [PATTERN]
    local desc=$1 want=$2 a=$3 b=$4 pat=${5:-}
    "$BIN" compare "$a" "$b" >"$TOP/out" 2>"$TOP/err"
    local rc=$?
    if [ "$rc" -eq "$want" ] && { [ -z "$pat" ] || grep -q -- "$pat" "$TOP/out"; }; then
        ok "$desc"
    else
        not_ok "$desc" "exit $rc, expected $want" "$(cat "$TOP/out" "$TOP/err" | tail -n 8)"
    fi
}
# family DIR N CONFIGS SLOW_FACTOR SPREAD [SHIFTED]: a compress run of
# CONFIGS compressors x N samples of gbps 10 x (1 + SPREAD x u), u spread
# evenly over [-1, 1]; the first config's values (or with SHIFTED, all)
# divided by SLOW_FACTOR
family() {
    "$PY" - "$@" <<'PY'
import json, os, sys
d, n, cfgs, slow, spread = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
allshift = len(sys.argv) > 6
os.makedirs(d, exist_ok=True)
json.dump({"git_rev": "test"}, open(os.path.join(d, "meta.json"), "w"))
with open(os.path.join(d, "compress.jsonl"), "w") as f:
    for c in range(cfgs):
        for i in range(n):
            u = -1 + 2 * i / (n - 1) if n > 1 else 0
            g = 10 * (1 + spread * u) / (slow if c == 0 or allshift else 1)
            f.write(json.dumps({"bench": "compress", "compressor": "c%d" % c,
                                "elements": 1000, "threads": 1, "gbps": g,
                                "wire_bytes": 100, "wrong": 0}) + "\n")
PY
}
mkrun "$TOP/a" 1 0.01 5 800
mkrun "$TOP/same" 1 0.01 5 800
mkrun "$TOP/slow" 1.2 0.01 5 800
mkrun "$TOP/noisy" 1.2 0.6 5 800
mkrun "$TOP/wire" 1 0.01 5 808
mkrun "$TOP/one_a" 1 0 1 800
mkrun "$TOP/one_b" 1.2 0 1 800
mkrun "$TOP/one_c" 1.3 0 1 800
cmp_case "identical runs: exit 0" 0 "$TOP/a" "$TOP/same" "0 regressed"
cmp_case "20% slower, 5 samples, 1% noise: its ratio WORSE, exit 1" 1 "$TOP/a" "$TOP/slow" \
    "roofline_frac .*WORSE"
grep -q "step_ms_median .*reported  *not tested: roofline_frac is" "$TOP/out" &&
    ok "... the raw step time reported beside it, not tested" ||
    not_ok "... the raw step time reported beside it, not tested" "$(cat "$TOP/out")"
mkrun "$TOP/moved" 1.2 0.01 5 800 1.2
cmp_case "step 20% slower with its reference (the machine moved): exit 0" 0 \
    "$TOP/a" "$TOP/moved" "1 raw timings and rates reported"
"$BIN" compare "$TOP/a" "$TOP/moved" --family all >"$TOP/out" 2>&1
[ $? -eq 1 ] && grep -q "step_ms_median .*SLOWER" "$TOP/out" &&
    ok "--family all tests the raw step time: SLOWER" ||
    not_ok "--family all tests the raw step time: SLOWER" "$(cat "$TOP/out")"
cmp_case "20% slower in 30% noise: noise, exit 0" 0 "$TOP/a" "$TOP/noisy" "noise (within spread)"
cmp_case "wire bytes differ: CHANGED, exit 1" 1 "$TOP/a" "$TOP/wire" "CHANGED"
cmp_case "one sample per side, 20%: below the 25% margin" 0 "$TOP/one_a" "$TOP/one_b"
cmp_case "one sample per side, 30%: SLOWER" 1 "$TOP/one_a" "$TOP/one_c" "SLOWER"
family "$TOP/f1a" 3 1 1 0.01
family "$TOP/f1b" 3 1 1.1 0.01
cmp_case "3 against 3 apart, the only tested metric: exact p 0.05, WORSE" 1 \
    "$TOP/f1a" "$TOP/f1b" "WORSE"
grep -q "0.05  *WORSE .*n = 3 can detect >= 5.0% here" "$TOP/out" &&
    ok "... with p 0.05 and what n = 3 can detect" || not_ok "... with p 0.05 and what n = 3 can detect" "$(cat "$TOP/out")"
family "$TOP/f24a" 3 24 1 0.01
family "$TOP/f24b" 3 24 1.1 0.01
cmp_case "3 against 3 apart among 24 tested metrics: Holm, exit 0" 0 \
    "$TOP/f24a" "$TOP/f24b" "cannot reach p <= 0.0021 (best 0.05)"
grep -q "10% on every tested metric needs 6 repeats a side" "$TOP/out" &&
    ok "... and says 6 repeats a side reach 10%" || not_ok "... and says 6 repeats a side reach 10%" "$(cat "$TOP/out")"
family "$TOP/f24c" 3 24 1.6 0.01
cmp_case "3 against 3 among 24, 38% slower: beyond --margin-single, WORSE" 1 \
    "$TOP/f24a" "$TOP/f24c" "WORSE"
family "$TOP/f6a" 6 24 1 0.01
family "$TOP/f6b" 6 24 1.1 0.01
cmp_case "6 against 6 among 24, one metric 10% slower: WORSE" 1 \
    "$TOP/f6a" "$TOP/f6b" "n = 6 can detect >= 5.0% here"
[ "$(grep -c WORSE "$TOP/out")" -eq 1 ] && ok "... only that one" || not_ok "... only that one" "$(cat "$TOP/out")"
family "$TOP/f6c" 6 24 1.03 0.01
cmp_case "6 against 6, 3% apart: below the 5% minimum effect, exit 0" 0 \
    "$TOP/f6a" "$TOP/f6c" "below min effect"
"$BIN" compare "$TOP/f6a" "$TOP/f6c" --min-effect 0.02 >"$TOP/out" 2>&1
[ $? -eq 1 ] && grep -q WORSE "$TOP/out" && ok "--min-effect 0.02 makes 3% count" || not_ok "--min-effect 0.02 makes 3% count" "$(cat "$TOP/out")"
family "$TOP/f6s" 6 24 1 0.2
family "$TOP/f6t" 6 24 1.1 0.2 all
cmp_case "6 against 6, 10% apart in a 15% spread: noise, exit 0" 0 \
    "$TOP/f6s" "$TOP/f6t" "noise (within spread)"
grep -q "10% is inside the spread" "$TOP/out" && ok "... and says 10% is inside the spread" || not_ok "... and says 10% is inside the spread" "$(cat "$TOP/out")"
"$BIN" compare "$TOP/f24a" "$TOP/f24b" --json >"$TOP/j" 2>&1
"$PY" -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; s=r[-1]; m=[x for x in r[:-1] if x["metric"]=="gbps"]
assert s["family"]==24 and abs(s["first_step"]-0.05/24)<1e-12 and s["repeats_for_10pct"]==6, s
assert all(x["detectable"] is None and x["repeats_for_10pct"]==6 for x in m), m[0]
assert m[0]["p"]==0.05 and m[0]["p_holm"]==1 and m[0]["verdict"]=="no change", m[0]' "$TOP/j" &&
    ok "--json: family, first step, detectable, repeats per metric" || not_ok "--json: family, first step, detectable, repeats per metric" "$(head -2 "$TOP/j")"
# streamrun DIR N TRIAD [RATIO]: N STREAM rows of triad_gbps TRIAD (1%
# spread), with RATIO also N optim rows whose roofline_frac is 0.8
streamrun() {
    "$PY" - "$@" <<'PY'
import json, os, sys
d, n, triad = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
os.makedirs(d, exist_ok=True)
json.dump({"git_rev": "test"}, open(os.path.join(d, "meta.json"), "w"))
u = [-1, 1, -0.5, 0.5, 0, -0.25, 0.25]
with open(os.path.join(d, "stream.jsonl"), "w") as f:
    for i in range(n):
        f.write(json.dumps({"bench": "stream", "elements": 1000, "threads": 1,
                            "triad_gbps": triad * (1 + 0.01 * u[i % 7]),
                            "wrong": 0}) + "\n")
if len(sys.argv) > 4:
    with open(os.path.join(d, "optim.jsonl"), "w") as f:
        for i in range(n):
            f.write(json.dumps({"bench": "optim", "optim": "lamb",
                                "elements": 1000, "threads": 1,
                                "step_ms_median": 100 * 50 / triad,
                                "roofline_frac": 0.8 * (1 + 0.01 * u[i % 7]),
                                "wrong": 0}) + "\n")
PY
}
streamrun "$TOP/s1" 6 50
streamrun "$TOP/s2" 6 40
cmp_case "STREAM alone, triad 20% lower: tested, WORSE" 1 "$TOP/s1" "$TOP/s2" \
    "triad_gbps .*WORSE"
streamrun "$TOP/s3" 6 50 ratio
streamrun "$TOP/s4" 6 40 ratio
cmp_case "STREAM beside paired ratios: reported, exit 0" 0 "$TOP/s3" "$TOP/s4" \
    "triad_gbps .*reported  *not tested: the kernels' paired ratios are"
"$BIN" compare "$TOP/a" "$TOP/slow" --json >"$TOP/j" 2>&1
"$PY" -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; s=r[-1]; assert s["summary"]=="compare" and s["regressed"]>=1 and s["reported"]==1 and s["family_rule"]=="ratio", s
m=[x for x in r[:-1] if x["metric"]=="step_ms_median"][0]; assert m["verdict"]=="reported" and m["p"] is None and not m["regression"], m' "$TOP/j" &&
    ok "--json ends with a summary object" || not_ok "--json ends with a summary object" "$(tail -3 "$TOP/j")"
"$BIN" compare "$TOP/a" "$TOP/slow" --markdown >"$TOP/m" 2>&1
grep -q '^| verb | configuration' "$TOP/m" && ok "--markdown table" || not_ok "--markdown table"
bad() {  # bad DESC PATTERN ARGS...
    local desc=$1 pat=$2
    shift 2
    "$BIN" compare "$@" >"$TOP/out" 2>"$TOP/err"
    local rc=$?
    if [ "$rc" -eq 2 ] && [ "$(wc -l <"$TOP/err")" -eq 1 ] && grep -q -- "$pat" "$TOP/err" && [ ! -s "$TOP/out" ]; then
        ok "$desc"
    else
        not_ok "$desc" "exit $rc" "$(cat "$TOP/err")"
    fi
}
bad "one run only" "usage" "$TOP/a"
bad "not a results run" "not a results run" "$TOP/a" "$TOP"
bad "bad margin" "--margin" "$TOP/a" "$TOP/same" --margin 2
bad "unknown family rule" "use one of ratio, all" "$TOP/a" "$TOP/same" --family some
mkdir -p "$TOP/empty" && echo '{}' >"$TOP/empty/meta.json"
"$BIN" compare "$TOP/a" "$TOP/empty" >"$TOP/out" 2>"$TOP/err"
[ $? -eq 2 ] && grep -q "share no metric" "$TOP/err" && ok "runs sharing nothing: exit 2" || not_ok "runs sharing nothing: exit 2" "$(cat "$TOP/err")"
tap_end
