#!/usr/bin/env bash
# run.sh - issue 34's kernel table with its start-up column, and the
# start-up pairs, in one window with the background study stopped
# (SIGSTOP; resumed on exit).  Run from the repository root:
#   results/studies/kernels-20261206/run.sh results/studies/kernels-20261206
# BASE: a library of main before the mask change (the mask pairs).
set -u
D=${1:?usage: run.sh OUTDIR}
BASE=${BASE:-/tmp/mask_base}
NEW=${NEW:-/tmp/mask_build}
STUDY=$(pgrep -f 'wt-study/build/lbscale' | tr '\n' ' ')
[ -n "$STUDY" ] && kill -STOP $STUDY
trap '[ -n "$STUDY" ] && kill -CONT $STUDY' EXIT
{ date -u +"start %FT%TZ"; git rev-parse --short HEAD; uptime; } >"$D/window.txt"
for r in 1 2; do
    PARTS="optim compress" bench/kernels_run.sh "$D/run$r" >/dev/null 2>&1
done
for r in 1 2 3; do
    build/lbscale optim --optim lamb --pair slamb --elements 100M --threads 2 \
        --iters 9 --warmup 2 --no-save >>"$D/slamb_pairs.txt" 2>&1
done
B="build/lbscale optim --elements 100M --threads 2 --iters 1 --warmup 0 --stream-gbps 80 --no-save"
farm-bench -n 5 --warmup 1 --vs "$B --optim lamb" -- $B --optim slamb \
    >"$D/onestep_slamb_lamb.txt" 2>&1
OMP_NUM_THREADS=2 farm-bench -n 8 --warmup 1 --vs "$BASE 100000000 0.01 1" \
    -- $NEW 100000000 0.01 1 >"$D/mask_alone.txt" 2>&1
{ date -u +"end %FT%TZ"; uptime; } >>"$D/window.txt"
