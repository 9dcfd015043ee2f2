#!/usr/bin/env bash
# run.sh OUT - should lbscale wait passively by default? (issue 34 item 2)
# libgomp's default spin-wait let one nice-19 process triple LAMB's
# step (results/studies/omp-spin-20261206); this asks what passive
# waiting costs on a quiet machine, where a spin-wait is meant to pay:
# short steps (many parallel regions a millisecond) and training's
# small layers, as well as the kernels the CI gate holds to baselines.
# Every measurement records the guest's bandwidth mode (the triad of the
# same round and configuration), which decides SLAMB/LAMB on its own.
#   quiet:  ROUNDS rounds, each: default then passive, or passive then
#           default (alternating), each running the triad, the SLAMB/LAMB
#           pair (100M, 9 pairs), a 16M SGD step, a 1M LAMB step (16
#           small layers) and 2 epochs of MLP training at batch 128 on 2
#           threads (train_s)
#   load:   LOAD_RUNS runs of the pair per configuration, alternating,
#           beside one nice-19 training process (the light load of a
#           shared machine), started here and killed at the end
#   ci:     the CI suite (bench/suites/ci.json, repeat 3), default and
#           passive alternating, CI_RUNS each (compare them afterwards)
# Nothing else may run on the machine meanwhile.
set -u
OUT=${1:?usage: run.sh OUT}
ROUNDS=${ROUNDS:-4}
LOAD_RUNS=${LOAD_RUNS:-3}
CI_RUNS=${CI_RUNS:-2}
BIN=${LBSCALE:-build/lbscale}
mkdir -p "$OUT"
conf_env() { [ "$1" = passive ] && echo OMP_WAIT_POLICY=PASSIVE || echo LBSCALE_OMP_NOTE=default; }
tagged() { sed "s|^|$1: |"; }
one_round() {  # one_round MODE R CONF
    local t="$1 r$2 $3" e; e=$(conf_env "$3")
    env "$e" $BIN stream --threads 2 --no-save 2>&1 | sed -n 2p | tagged "$t stream" >>"$OUT/$1.txt"
    env "$e" $BIN optim --optim lamb --pair slamb --elements 100M --threads 2 \
        --iters 9 --warmup 2 --no-save 2>&1 | tagged "$t pair" >>"$OUT/$1.txt"
    [ "$1" = quiet ] || return 0
    env "$e" $BIN optim --optim sgd --elements 16M --threads 2 --iters 9 \
        --warmup 2 --no-save 2>&1 | tagged "$t sgd16M" >>"$OUT/$1.txt"
    env "$e" $BIN optim --optim lamb --elements 1M --threads 2 --iters 50 \
        --warmup 5 --no-save 2>&1 | tagged "$t lamb1M" >>"$OUT/$1.txt"
    rm -rf "$OUT/train-tmp"
    env "$e" $BIN train --optim lamb --epochs 2 --global-batch 128 --threads 2 \
        --no-trace --json --out "$OUT/train-tmp" 2>/dev/null | tail -1 |
        tagged "$t train" >>"$OUT/$1.txt"
}
order() { [ $(($1 % 2)) -eq 1 ] && echo "default passive" || echo "passive default"; }
{ date -u +"start %FT%TZ"; git rev-parse --short HEAD; uptime; } >>"$OUT/window.txt"
for ((r = 1; r <= ROUNDS; r++)); do
    for c in $(order $r); do one_round quiet $r $c; done
done
date -u +"load start %FT%TZ" >>"$OUT/window.txt"
rm -rf "$OUT/load-train"
nice -n 19 $BIN train --optim sgd --epochs 1000 --threads 1 --no-trace \
    --out "$OUT/load-train" >/dev/null 2>&1 &
LOAD=$!
sleep 5
for ((r = 1; r <= LOAD_RUNS; r++)); do
    for c in $(order $r); do one_round load $r $c; done
done
kill $LOAD; wait $LOAD 2>/dev/null
rm -rf "$OUT/load-train" "$OUT/train-tmp"
date -u +"ci start %FT%TZ" >>"$OUT/window.txt"
/usr/bin/python3 - bench/suites/ci.json "$OUT/ci3.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for e in s["entries"]:
    if e["verb"] in ("stream", "optim", "compress"):
        e["repeat"] = 3
json.dump(s, open(sys.argv[2], "w"), indent=1)
PY
for ((r = 1; r <= CI_RUNS; r++)); do
    for c in $(order $r); do
        rm -rf "$OUT/ci-$c-$r"
        env "$(conf_env $c)" $BIN suite "$OUT/ci3.json" --no-plot \
            --out "$OUT/ci-$c-$r" >"$OUT/ci-$c-$r.log" 2>&1
    done
done
{ date -u +"end %FT%TZ"; uptime; } >>"$OUT/window.txt"
