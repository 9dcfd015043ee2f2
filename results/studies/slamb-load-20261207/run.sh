#!/usr/bin/env bash
# run.sh OUT A B [ROUNDS] - SLAMB/LAMB beside three loads (none, a nice-19
# busy loop, a nice-19 training process), binaries A and B alternating:
# A B in odd rounds, B A in even ones (COMMANDS.md).  Nothing else may
# run meanwhile; the whole run holds /tmp/lbscale-heavy.lock.
set -u
OUT=${1:?usage: run.sh OUT A B [ROUNDS]}
A=${2:?}; B=${3:?}; R=${4:-4}
mkdir -p "$OUT"
pair() {  # pair TAG BIN: one run of 9 interleaved pairs
    "$2" optim --optim lamb --pair slamb --elements 100M --threads 2 \
        --iters 9 --warmup 2 --no-save 2>&1 | sed "s|^|$1: |" >>"$OUT/runs.txt"
}
rounds() {  # rounds LOAD
    for ((r = 1; r <= R; r++)); do
        if [ $((r % 2)) -eq 1 ]; then order="A B"; else order="B A"; fi
        for x in $order; do
            if [ "$x" = A ]; then pair "$1 r$r A" "$A"; else pair "$1 r$r B" "$B"; fi
        done
    done
}
{ date -u +"start %FT%TZ"; uptime; } >>"$OUT/window.txt"
rounds quiet
nice -n 19 sh -c 'while :; do :; done' &
LOAD=$!
sleep 2
date -u +"busy start %FT%TZ" >>"$OUT/window.txt"
rounds busy
kill $LOAD; wait $LOAD 2>/dev/null
rm -rf "$OUT/load-train"
nice -n 19 "$A" train --optim sgd --epochs 1000 --threads 1 --no-trace \
    --out "$OUT/load-train" >/dev/null 2>&1 &
LOAD=$!
sleep 5
date -u +"train start %FT%TZ" >>"$OUT/window.txt"
rounds train
kill $LOAD; wait $LOAD 2>/dev/null
rm -rf "$OUT/load-train"
{ date -u +"end %FT%TZ"; uptime; } >>"$OUT/window.txt"
