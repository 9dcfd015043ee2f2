#!/usr/bin/env bash
# run2.sh OUT A B [ROUNDS] - pass 1's compact stores as 256-bit (B) against
# 512-bit (A): one profiled process of the command per binary per
# round, A B in odd rounds, B A in even ones (COMMANDS.md, run 2).  Holds
# /tmp/lbscale-heavy.lock throughout.
set -u
exec 9>/tmp/lbscale-heavy.lock
flock 9
OUT=${1:?usage: run2.sh OUT A B [ROUNDS]}
A=${2:?}; B=${3:?}; R=${4:-6}
mkdir -p "$OUT"
one() {  # one TAG BIN
    perf record -q -F 4999 -o "$OUT/$1.data" -- \
        "$2" optim --optim lamb --pair slamb --elements 100M --threads 2 \
        --iters 9 --warmup 2 --no-save >"$OUT/$1.out" 2>&1
    perf report -q -i "$OUT/$1.data" --stdio --no-children --sort sym \
        -F sample,sym >"$OUT/$1.report" 2>/dev/null
    rm -f "$OUT/$1.data"
}
{ date -u +"start %FT%TZ"; uptime; } >>"$OUT/window.txt"
for ((r = 1; r <= R; r++)); do
    if [ $((r % 2)) -eq 1 ]; then one "r$r-A" "$A"; one "r$r-B" "$B"
    else one "r$r-B" "$B"; one "r$r-A" "$A"; fi
done
{ date -u +"end %FT%TZ"; uptime; } >>"$OUT/window.txt"
