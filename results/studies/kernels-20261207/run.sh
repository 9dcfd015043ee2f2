#!/usr/bin/env bash
# run.sh - the README's kernel table with its start-up column, regenerated
# after the chunk labels (957a68e, f3b1734), and issue 34's SLAMB/LAMB
# pairs, in one window.  Run from the repository root under the machine's
# heavy lock (other heavy work waits between its rounds):
#   flock /tmp/lbscale-heavy.lock results/studies/kernels-20261207/run.sh OUT
# then: python3 results/studies/kernels-20261207/table.py OUT
set -u
D=${1:?usage: run.sh OUTDIR}
BIN=${LBSCALE:-build/lbscale}
mkdir -p "$D"
{ date -u +"start %FT%TZ"; git rev-parse --short HEAD; uptime; } >"$D/window.txt"
for r in 1 2; do
    LBSCALE=$BIN PARTS="optim compress" bench/kernels_run.sh "$D/run$r" >/dev/null 2>&1
done
for r in 1 2 3; do
    "$BIN" optim --optim lamb --pair slamb --elements 100M --threads 2 \
        --iters 9 --warmup 2 --no-save >>"$D/slamb_pairs.txt" 2>&1
done
B="$BIN optim --elements 100M --threads 2 --iters 1 --warmup 0 --stream-gbps 80 --no-save"
farm-bench -n 5 --warmup 1 --vs "$B --optim lamb" -- $B --optim slamb \
    >"$D/onestep_slamb_lamb.txt" 2>&1
{ date -u +"end %FT%TZ"; uptime; } >>"$D/window.txt"
