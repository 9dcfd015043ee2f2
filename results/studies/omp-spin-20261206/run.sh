#!/usr/bin/env bash
# run.sh OUT MODE - libgomp's spin count against the default (issue 34
# item 2): does a short spin keep the quiet machine's speed and SLAMB's
# ratio under the light load of one nice-19 process?
#   MODE quiet: the background study stopped (SIGSTOP) for the run
#   MODE load:  the study's one training process left running (nice 19)
# Each round runs every configuration in turn (A B C A B C ...).
set -u
OUT=${1:?usage: run.sh OUT quiet|load}
MODE=${2:?usage: run.sh OUT quiet|load}
ROUNDS=${ROUNDS:-3}
BIN=build/lbscale
STUDY=$(pgrep -f 'wt-study/build/lbscale' | tr '\n' ' ')
if [ "$MODE" = quiet ] && [ -n "$STUDY" ]; then
    kill -STOP $STUDY
    trap 'kill -CONT $STUDY' EXIT
fi
CONFS=("default" "GOMP_SPINCOUNT=10000" "OMP_WAIT_POLICY=PASSIVE")
{ date -u +"start %FT%TZ $MODE"; git rev-parse --short HEAD; uptime; } >>"$OUT/window.txt"
for ((r = 1; r <= ROUNDS; r++)); do
    for c in "${CONFS[@]}"; do
        e=(); [ "$c" != default ] && e=("$c")
        tag="$MODE r$r $c"
        env "${e[@]}" $BIN optim --optim lamb --pair slamb --elements 100M \
            --threads 2 --iters 9 --warmup 2 --no-save 2>&1 |
            sed "s|^|$tag pair: |" >>"$OUT/$MODE.txt"
        if [ "$MODE" = quiet ]; then
            env "${e[@]}" $BIN optim --optim sgd --elements 16M --threads 2 \
                --iters 9 --warmup 2 --no-save 2>&1 |
                sed "s|^|$tag sgd16M: |" >>"$OUT/$MODE.txt"
            env "${e[@]}" $BIN stream --threads 2 --no-save 2>&1 |
                sed -n 2p | sed "s|^|$tag stream: |" >>"$OUT/$MODE.txt"
        fi
    done
done
{ date -u +"end %FT%TZ"; uptime; } >>"$OUT/window.txt"
