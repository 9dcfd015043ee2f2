#!/usr/bin/env bash
# run.sh OUT OLD NEW [ROUNDS] - SLAMB/LAMB (the issue's measure: 9
# interleaved pairs in one process, 100M elements, 2 threads) for the
# configurations that run SLAMB's counter form - the Bernoulli mask,
# k below 1/255, a k warm-up - and the default (chunk ids, the control),
# OLD and NEW builds in ABBA rounds.  Run under the machine's heavy lock:
#   flock /tmp/lbscale-heavy.lock results/studies/slamb-counters-20261207/run.sh OUT OLD NEW 6
set -u
D=${1:?usage: run.sh OUT OLD NEW [ROUNDS]} OLD=${2:?} NEW=${3:?} R=${4:-6}
CFGS=${CFGS:-"mask=bernoulli k=0.003 kwarm=1000 k=0.1"}
mkdir -p "$D"
one() {  # one LABEL BIN CFG: one process, its pair line kept
    local r
    r=$("$2" optim --optim lamb --pair "slamb:$3" --elements 100M --threads 2 \
        --iters 9 --warmup 2 --no-save 2>&1)
    printf '%s %s %s %s\n' "$1" "$3" \
        "$(sed -n 's/^# pair: slamb.* = \([0-9.]*\) \[\([0-9.]*\), \([0-9.]*\)\].*/\1 \2 \3/p' <<<"$r")" \
        "$(awk '$1 == "lamb" {print $5}' <<<"$r" | head -1)" >>"$D/pairs.txt"
}
{ date -u +"start %FT%TZ"; uptime; } >"$D/window.txt"
echo "# build config ratio min max lamb_ms" >"$D/pairs.txt"
for ((i = 0; i < R; i++)); do
    for c in $CFGS; do
        if [ $((i % 2)) -eq 0 ]; then one old "$OLD" "$c"; one new "$NEW" "$c"
        else one new "$NEW" "$c"; one old "$OLD" "$c"; fi
    done
done
{ date -u +"end %FT%TZ"; uptime; } >>"$D/window.txt"
