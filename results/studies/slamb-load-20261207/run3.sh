#!/usr/bin/env bash
# run3.sh OUT BIN [ROUNDS] - H2 (COMMANDS.md, run 3): SLAMB/LAMB beside a
# nice-19 busy loop (time, no memory) against beside a nice-19 STREAM
# process (one thread streaming 768 MB: the L3 and bandwidth), the two
# loads alternating within each round (busy first in odd rounds).
set -u
OUT=${1:?usage: run3.sh OUT BIN [ROUNDS]}
BIN=${2:?}; R=${3:-10}
mkdir -p "$OUT"
start_load() {
    if [ "$1" = busy ]; then
        nice -n 19 sh -c 'while :; do :; done' &
    else
        nice -n 19 sh -c "while :; do '$BIN' stream --threads 1 --elements 32M --no-save >/dev/null 2>&1; done" &
    fi
    LOAD=$!
    sleep 2
}
stop_load() { pkill -P $LOAD 2>/dev/null; kill $LOAD 2>/dev/null; wait $LOAD 2>/dev/null; }
{ date -u +"start %FT%TZ"; uptime; } >>"$OUT/window.txt"
for ((r = 1; r <= R; r++)); do
    if [ $((r % 2)) -eq 1 ]; then order="busy stream"; else order="stream busy"; fi
    for l in $order; do
        start_load $l
        "$BIN" optim --optim lamb --pair slamb --elements 100M --threads 2 \
            --iters 9 --warmup 2 --no-save 2>&1 | sed "s|^|$l r$r B: |" >>"$OUT/runs.txt"
        stop_load
    done
done
{ date -u +"end %FT%TZ"; uptime; } >>"$OUT/window.txt"
