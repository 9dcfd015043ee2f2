#!/usr/bin/env bash
# run4.sh OUT A B [ROUNDS] - the other optimizers whose passes claim chunks
# (LARS's norms, 1-bit LAMB's passes, LAMB), quiet, A and B back to back
# (A B in odd rounds, B A in even ones): step ms and roofline ratio.
set -u
OUT=${1:?usage: run4.sh OUT A B [ROUNDS]}
A=${2:?}; B=${3:?}; R=${4:-5}
mkdir -p "$OUT"
{ date -u +"start %FT%TZ"; uptime; } >>"$OUT/window.txt"
for ((r = 1; r <= R; r++)); do
    if [ $((r % 2)) -eq 1 ]; then order="A B"; else order="B A"; fi
    for o in lars onebit_lamb lamb; do
        for x in $order; do
            if [ "$x" = A ]; then bin=$A; else bin=$B; fi
            "$bin" optim --optim $o --elements 100M --threads 2 --iters 9 \
                --warmup 2 --no-save 2>&1 | grep "^  $o " | sed "s|^|r$r $x: |" >>"$OUT/runs.txt"
        done
    done
done
{ date -u +"end %FT%TZ"; uptime; } >>"$OUT/window.txt"
