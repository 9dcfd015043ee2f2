#!/usr/bin/env bash
# cli_conventions.sh BINARY - the command-line conventions every verb
# shares (TAP, issue 18):
#   - "--opt=value" means "--opt value" for every verb (split once, in
#     main.c), and gives the same output; "--opt=" is an empty value;
#   - --version is listed in --help and works;
#   - sim step --help is step's usage; sim list --help, sim list --json
#     (presets sorted), a bad sim list argument exits 2;
#   - plot --json and report --json print one JSON object; plot on an
#     empty directory or a run without results says so and exits 2;
#   - train traces are named by what they hold: train-trace-OPTIM.jsonl,
#     -COMPRESSOR added, -2 on a repeat; train.jsonl's "trace" names each;
#   - optim and compress time whole repetitions hyperfine-style (mean +-
#     sd, min ... max) with mean/sd/outliers in JSON, and export CSV and
#     markdown; an unwritable export path is bad input.
set -u
BIN=${1:?usage: cli_conventions.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
SRC=${LBS_TEST_DATA:-$(cd "$(dirname "$0")" && pwd)}   # tests/
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
export OMP_NUM_THREADS=1
. "$(dirname "$0")/tap.sh"

same() {   # same DESC -- ARGS_A -- ARGS_B: equal stdout, both exit 0
    local desc=$1
    shift 2
    local a=() b=()
    while [ "$1" != "--" ]; do a+=("$1"); shift; done
    shift
    b=("$@")
    "$BIN" "${a[@]}" >"$TOP/a" 2>"$TOP/ae"; local ra=$?
    "$BIN" "${b[@]}" >"$TOP/b" 2>"$TOP/be"; local rb=$?
    if [ $ra -eq 0 ] && [ $rb -eq 0 ] && [ -s "$TOP/a" ] && cmp -s "$TOP/a" "$TOP/b"; then
        ok "$desc"
    else
        not_ok "$desc" "exit $ra / $rb" "$(diff "$TOP/a" "$TOP/b" | head -n 5)" \
            "$(cat "$TOP/ae" "$TOP/be" | head -n 4)"
    fi
}
same "sim step --model=M --platform=P --optim=O --gpus=N == the spaced form" -- \
    sim step --model=bert-large --platform=dgx-a100 --optim=lamb --gpus=64 --no-save -- \
    sim step --model bert-large --platform dgx-a100 --optim lamb --gpus 64 --no-save
same "sim coll --platform=P --bytes=LIST == the spaced form" -- \
    sim coll --platform=dgx-a100 --coll=allreduce --gpus=16 --bytes=1M --no-save -- \
    sim coll --platform dgx-a100 --coll allreduce --gpus 16 --bytes 1M --no-save
same "compare --margin=0.2 A B == compare --margin 0.2 A B" -- \
    compare --margin=0.2 "$SRC/data/plot-run" "$SRC/data/plot-run" -- \
    compare --margin 0.2 "$SRC/data/plot-run" "$SRC/data/plot-run"

"$BIN" stream --elements=200K --iters=2 --json --no-save >"$TOP/s" 2>"$TOP/se"
if [ $? -eq 0 ] && grep -q '"elements": *200000' "$TOP/s"; then
    ok "stream --elements=200K --iters=2 runs with 200000 elements"
else
    not_ok "stream --elements=200K" "$(cat "$TOP/s" "$TOP/se" | head -n 5)"
fi

bad1() {   # bad1 DESC PATTERN ARGS...: exit 2, one line naming PATTERN, no stdout
    local desc=$1 pat=$2
    shift 2
    "$BIN" "$@" >"$TOP/o" 2>"$TOP/e"
    local rc=$? why=()
    [ $rc -eq 2 ] || why+=("exit $rc, expected 2")
    [ "$(wc -l <"$TOP/e")" -eq 1 ] || why+=("stderr: $(head -c 300 "$TOP/e")")
    grep -qF -- "$pat" "$TOP/e" || why+=("stderr does not name '$pat': $(cat "$TOP/e")")
    [ -s "$TOP/o" ] && why+=("stdout: $(head -c 200 "$TOP/o")")
    if [ ${#why[@]} -eq 0 ]; then ok "$desc"; else not_ok "$desc" "${why[@]}"; fi
}
bad1 "--elements= (empty value): one line, exit 2" "--elements" stream --elements= --no-save
bad1 "--gpus=abc: one line, exit 2" "abc" sim step --model=bert-large --platform=dgx-a100 --optim=lamb --gpus=abc --no-save

# --version in --help
"$BIN" --help >"$TOP/h"
if grep -q -- '--version' "$TOP/h" && grep -q -- '--opt=VALUE' "$TOP/h"; then
    ok "--help lists --version and the --opt=VALUE form"
else
    not_ok "--help lists --version" "$(tail -n 8 "$TOP/h")"
fi
if "$BIN" --version | grep -q '^lbscale [0-9]'; then
    ok "--version prints the version"
else
    not_ok "--version prints the version"
fi

# sim step / sim list
"$BIN" sim step --help >"$TOP/h" 2>&1
if [ $? -eq 0 ] && head -n 1 "$TOP/h" | grep -q '^usage: lbscale sim step ' &&
   grep -q -- '--timeline' "$TOP/h" && grep -q -- '--platform P' "$TOP/h"; then
    ok "sim step --help prints step's usage"
else
    not_ok "sim step --help prints step's usage" "$(head -n 3 "$TOP/h")"
fi
"$BIN" sim list --help >"$TOP/h" 2>&1
if [ $? -eq 0 ] && head -n 1 "$TOP/h" | grep -q '^usage: lbscale sim list' ; then
    ok "sim list --help prints help"
else
    not_ok "sim list --help prints help" "$(head -n 3 "$TOP/h")"
fi
"$BIN" sim list --json >"$TOP/j" 2>&1
if "$PY" - "$TOP/j" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines[:3]
o = json.loads(lines[0])
for k in ("platforms", "models", "traces"):
    assert o[k] and o[k] == sorted(o[k]), (k, o[k])
assert "dgx-a100" in o["platforms"] and "bert-large" in o["models"]
PY
then ok "sim list --json: one JSON object, platforms, models and traces sorted"
else not_ok "sim list --json" "$(head -c 300 "$TOP/j")"
fi
"$BIN" sim list >"$TOP/t"
if "$PY" - "$TOP/t" <<'PY'
import sys
blocks, cur = {}, None
for l in open(sys.argv[1]):
    if not l.startswith(" "):
        cur = l.split()[0]
        blocks[cur] = []
    else:
        blocks[cur].append(l.strip())
assert set(blocks) == {"platforms", "models", "traces", "data-parallel"}, \
    blocks.keys()
dp = blocks.pop("data-parallel")   # registry order, from core's props
assert "lamb" in dp and "slamb" not in dp and "jointspar" not in dp, dp
assert all(v == sorted(v) and v for v in blocks.values()), blocks
PY
then ok "sim list (text): each kind sorted"
else not_ok "sim list (text): each kind sorted" "$(head -n 5 "$TOP/t")"
fi
bad1 "sim list --bogus: one line, exit 2" "--bogus" sim list --bogus

# plot / report --json, plot on nothing
mkdir -p "$TOP/empty"
bad1 "plot on an empty directory says so, exit 2" "empty directory" plot "$TOP/empty"
[ -z "$(ls -A "$TOP/empty")" ] && ok "plot on an empty directory leaves it empty" ||
    not_ok "plot on an empty directory leaves it empty" "$(ls -A "$TOP/empty")"
mkdir -p "$TOP/bare"
echo '{"git_rev": "test"}' >"$TOP/bare/meta.json"
bad1 "plot on a run without results says so, exit 2" "no results to draw" plot "$TOP/bare"
[ ! -e "$TOP/bare/plots" ] && ok "... and leaves no plots/ behind" ||
    not_ok "... and leaves no plots/ behind"
if command -v gnuplot >/dev/null 2>&1; then
    cp -r "$SRC/data/plot-run" "$TOP/run"
    chmod -R u+w "$TOP/run"
    "$BIN" plot "$TOP/run" --json >"$TOP/j" 2>"$TOP/e"
    if [ $? -eq 0 ] && "$PY" - "$TOP/j" <<'PY'
import json, os, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1
o = json.loads(lines[0])
assert len(o["figures"]) >= 8, o
for f in o["figures"]:
    assert os.path.exists(f["png"]) and os.path.exists(f["svg"]), f
    assert len(f["caption"]) > 40, f
PY
    then ok "plot --json: one object listing every figure with its caption"
    else not_ok "plot --json" "$(head -c 300 "$TOP/j")" "$(cat "$TOP/e")"
    fi
else
    skip "plot --json" "gnuplot is not installed"
fi
cp -r "$SRC/data/plot-run" "$TOP/run2"
chmod -R u+w "$TOP/run2"
"$BIN" report "$TOP/run2" --json >"$TOP/j" 2>/dev/null
if [ $? -eq 0 ] && "$PY" -c "
import json, sys
l = open(sys.argv[1]).read().splitlines(); assert len(l) == 1
o = json.loads(l[0]); assert o['report'].endswith('report.html') and o['findings']
" "$TOP/j"; then
    ok "report --json: one object with the page and the findings"
else
    not_ok "report --json" "$(head -c 300 "$TOP/j")"
fi

# train traces named by optimizer (and compressor), -2 on a repeat
T=(--model mlp:784-16-10 --subset 256 --test-subset 64 --global-batch 64
   --epochs 1 --out "$TOP/tr")
why=()
for o in "--optim sgd" "--optim slamb" "--optim sgd" \
         "--optim lamb --compress topk:k=0.01,ef=1"; do
    # shellcheck disable=SC2086
    (cd "$TOP" && timeout 120 "$BIN" train $o "${T[@]}" >/dev/null 2>"$TOP/te") ||
        why+=("train $o: $(tail -n 2 "$TOP/te")")
done
got=$(cd "$TOP/tr" 2>/dev/null && ls train-trace*.jsonl | tr '\n' ' ')
want="train-trace-lamb-topk.jsonl train-trace-sgd-2.jsonl train-trace-sgd.jsonl train-trace-slamb.jsonl "
[ "$got" = "$want" ] || why+=("trace files: '$got', want '$want'")
"$PY" - "$TOP/tr/train.jsonl" <<'PY' || why+=("train.jsonl rows do not name their traces")
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
names = [r["trace"].rsplit("/", 1)[-1] for r in rows]
assert names == ["train-trace-sgd.jsonl", "train-trace-slamb.jsonl",
                 "train-trace-sgd-2.jsonl", "train-trace-lamb-topk.jsonl"], names
PY
if [ ${#why[@]} -eq 0 ]; then
    ok "train traces named by optimizer and compressor, -2 on a repeat, each named in train.jsonl"
else
    not_ok "train traces named by what they hold" "${why[@]}"
fi

# hyperfine-style timing and exports
E=(--elements 200K --iters 5 --warmup 1 --stream-gbps 10 --no-save)
"$BIN" optim --optim sgd "${E[@]}" --export-csv "$TOP/o.csv" \
    --export-markdown="$TOP/o.md" >"$TOP/o" 2>"$TOP/oe"
rc=$?
if [ $rc -eq 0 ] && grep -q '^  step time (mean +- sd): .* ms +- .* ms   \[5 runs\]$' "$TOP/o" &&
   grep -q '^  step range (min ... max): .* ms ... .* ms' "$TOP/o"; then
    ok "optim prints the step time as mean +- sd and min ... max over the runs"
else
    not_ok "optim prints hyperfine-style timing" "exit $rc" "$(cat "$TOP/o" "$TOP/oe" | tail -n 5)"
fi
if "$PY" - "$TOP/o.csv" "$TOP/o.md" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 1, rows
r = rows[0]
assert r["optim"] == "sgd" and r["iters"] == "5" and r["elements"] == "200000", r
lo, mean, hi = float(r["step_ms_min"]), float(r["step_ms_mean"]), float(r["step_ms_max"])
assert lo <= mean <= hi and float(r["step_ms_sd"]) >= 0, r
md = open(sys.argv[2]).read().splitlines()
assert len(md) == 3 and md[0].startswith("| optim |") and md[1].startswith("|---|---:"), md
assert md[2].startswith("| sgd | 200000 |"), md
PY
then ok "optim --export-csv / --export-markdown=FILE: one row with mean, sd, min, max"
else not_ok "optim exports" "$(cat "$TOP/o.csv" "$TOP/o.md" 2>&1 | head -n 6)"
fi
"$BIN" optim --optim sgd "${E[@]}" --json >"$TOP/j" 2>/dev/null
if "$PY" -c "
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert r['step_ms_min'] <= r['step_ms_mean'] <= r['step_ms_max'], r
assert r['step_ms_sd'] >= 0 and isinstance(r['outliers'], int), r
" "$TOP/j"; then
    ok "optim --json: step_ms_mean, step_ms_sd and outliers"
else
    not_ok "optim --json timing fields" "$(head -c 300 "$TOP/j")"
fi
"$BIN" compress --compressor topk:k=0.01 --elements 100K --iters 5 \
    --stream-gbps 10 --no-save --export-csv "$TOP/c.csv" >"$TOP/c" 2>"$TOP/ce"
rc=$?
if [ $rc -eq 0 ] && grep -q '^  compress time (mean +- sd): ' "$TOP/c" &&
   "$PY" -c "
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))
assert len(r) == 1 and r[0]['compressor'] == 'topk' and r[0]['params'].startswith('k=0.01'), r
" "$TOP/c.csv"; then
    ok "compress: timing lines and --export-csv (quoted params)"
else
    not_ok "compress timing and export" "exit $rc" "$(cat "$TOP/c" "$TOP/ce" "$TOP/c.csv" | tail -n 6)"
fi
bad1 "--export-csv into a missing directory: bad input before any work" "cannot write" \
    optim --optim sgd "${E[@]}" --export-csv "$TOP/no/such/dir/x.csv"
bad1 "--export-markdown without a file" "--export-markdown" optim --optim sgd "${E[@]}" --export-markdown

tap_end
