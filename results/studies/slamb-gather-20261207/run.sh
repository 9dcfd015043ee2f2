#!/usr/bin/env bash
# run.sh OUT OLD NEW [ROUNDS] - SLAMB/LAMB (the issue's measure: 9
# interleaved pairs in one process, 100M elements, 2 threads) at k = 0.01
# (100 chunks) and k = 0.1 (10 chunks, the default), OLD and NEW builds
# in ABBA rounds, and OLD at LBSCALE_ISA=avx2 for k = 0.01 once a round.
# Run under the machine's heavy lock:
#   flock /tmp/lbscale-heavy.lock results/studies/slamb-gather-20261207/run.sh OUT OLD NEW 8
set -u
D=${1:?usage: run.sh OUT OLD NEW [ROUNDS]} OLD=${2:?} NEW=${3:?} R=${4:-8}
mkdir -p "$D"
one() {  # one LABEL BIN K [ISA]: one process, its pair line kept
    local r
    r=$(env ${4:+LBSCALE_ISA=$4} "$2" optim --optim lamb --pair "slamb:k=$3" \
        --elements 100M --threads 2 --iters 9 --warmup 2 --no-save 2>&1)
    printf '%s %s %s %s\n' "$1" "$3" \
        "$(sed -n 's/^# pair: slamb.* = \([0-9.]*\) \[\([0-9.]*\), \([0-9.]*\)\].*/\1 \2 \3/p' <<<"$r")" \
        "$(awk '$1 == "lamb" {print $5}' <<<"$r" | head -1)" >>"$D/pairs.txt"
}
{ date -u +"start %FT%TZ"; uptime; } >"$D/window.txt"
echo "# build k ratio min max lamb_ms" >"$D/pairs.txt"
for ((i = 0; i < R; i++)); do
    for k in 0.01 0.1; do
        if [ $((i % 2)) -eq 0 ]; then one old "$OLD" $k; one new "$NEW" $k
        else one new "$NEW" $k; one old "$OLD" $k; fi
    done
    one old-avx2 "$OLD" 0.01 avx2
done
{ date -u +"end %FT%TZ"; uptime; } >>"$D/window.txt"
