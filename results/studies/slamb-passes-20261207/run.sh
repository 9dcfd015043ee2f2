#!/usr/bin/env bash
# run.sh OUT BIN [ROUNDS] - where SLAMB's step spends its time beyond
# LAMB's: each round profiles one process of 9 interleaved LAMB/SLAMB
# pairs (perf record, cpu-clock sampling: this guest has no hardware
# counters) at the best kernel level, then one at --isa avx2; the order
# alternates by round (COMMANDS.md).  The whole run, perf's reports
# included, holds /tmp/lbscale-heavy.lock: other timed work waits.
set -u
exec 9>/tmp/lbscale-heavy.lock
flock 9
OUT=${1:?usage: run.sh OUT BIN [ROUNDS]}
BIN=${2:?}; R=${3:-4}
mkdir -p "$OUT"
one() {  # one TAG ISA-ARGS...
    local tag=$1; shift
    perf record -q -F 4999 -o "$OUT/$tag.data" -- \
        "$BIN" optim --optim lamb --pair slamb --elements 100M --threads 2 \
        --iters 9 --warmup 2 --no-save "$@" >"$OUT/$tag.out" 2>&1
    perf report -q -i "$OUT/$tag.data" --stdio --no-children --sort sym \
        -F sample,sym >"$OUT/$tag.report" 2>/dev/null
    rm -f "$OUT/$tag.data"
}
{ date -u +"start %FT%TZ"; uptime; } >>"$OUT/window.txt"
for ((r = 1; r <= R; r++)); do
    if [ $((r % 2)) -eq 1 ]; then
        one "r$r-best"; one "r$r-avx2" --isa avx2
    else
        one "r$r-avx2" --isa avx2; one "r$r-best"
    fi
done
{ date -u +"end %FT%TZ"; uptime; } >>"$OUT/window.txt"
