#!/usr/bin/env bash
# run.sh OUT OLD NEW [ROUNDS] - SLAMB/LAMB (9 interleaved pairs in one
# process, the issue's measure) from two builds in ABBA rounds, at 100M
# elements (memory-bound) and 1M (in cache: the passes' work exposed).
# Run under the machine's heavy lock:
#   flock /tmp/lbscale-heavy.lock results/studies/slamb-stores-20261207/run.sh OUT OLD NEW 6
set -u
D=${1:?usage: run.sh OUT OLD NEW [ROUNDS]} OLD=${2:?} NEW=${3:?} R=${4:-6}
mkdir -p "$D"
one() {  # one LABEL BIN ELEMENTS ITERS: one process, its pair line kept
    local r
    r=$("$2" optim --optim lamb --pair slamb --elements "$3" --threads 2 \
        --iters "$4" --warmup 2 --no-save 2>&1)
    printf '%s %s %s %s\n' "$1" "$3" \
        "$(sed -n 's/^# pair: slamb step time \/ lamb step time = \([0-9.]*\) \[\([0-9.]*\), \([0-9.]*\)\].*/\1 \2 \3/p' <<<"$r")" \
        "$(awk '$1 == "lamb" {print $5}' <<<"$r" | head -1)" >>"$D/pairs.txt"
}
{ date -u +"start %FT%TZ"; uptime; } >"$D/window.txt"
echo "# build elements ratio min max lamb_ms" >"$D/pairs.txt"
for ((i = 0; i < R; i++)); do
    for e in 100M 1M; do
        it=9; [ $e = 1M ] && it=41
        if [ $((i % 2)) -eq 0 ]; then one old "$OLD" $e $it; one new "$NEW" $e $it
        else one new "$NEW" $e $it; one old "$OLD" $e $it; fi
    done
done
{ date -u +"end %FT%TZ"; uptime; } >>"$D/window.txt"
