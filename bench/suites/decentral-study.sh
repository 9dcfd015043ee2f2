#!/usr/bin/env bash
# decentral-study.sh OUT [BASE] - issue 17's decentralized verdict: DmSGD,
# DecentLaM (ring) and parallel momentum SGD at 16 ranks with iid shards and
# at 8 and 16 ranks with Dirichlet(alpha=0.1) label-skewed shards, batches
# 2048 and 8192, seeds 1-5, at parallel SGD's rates chosen by the
# convergence study BASE (default results/studies/convergence-20261203,
# whose seed phase holds the 8-rank iid runs; p8-iid-curves reruns its
# DmSGD and DecentLaM seeds to log their consensus curves), then the report
# over BASE's runs and these, and the consensus figure (plots/consensus.gp).
# Every phase is one suite of <= 10 minutes on an idle machine, under flock
# /tmp/lbscale-heavy.lock (the machine is shared), written by
# tools/study.py decentral and resumable: a finished phase is skipped (its
# .done file), an interrupted one is resumed with `lbscale suite --resume`.
# Phases named -a/-b split one configuration's seeds (1-3, 4-5) so that no
# suite runs past 10 minutes on a loaded machine.
# DmSGD and DecentLaM run at parallel SGD's rate here; decentral-tune.sh
# gives each its own rate (a grid around it, chosen on validation) on top
# of these runs.
# Environment: LBSCALE (default build/lbscale); PHASES (default all).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/phase.sh"
OUT=${1:?usage: decentral-study.sh OUT [BASE]}
BASE=${2:-$ROOT/results/studies/convergence-20261203}
ALL="p8-dir p16-iid-b8192 p16-iid-b2048-a p16-iid-b8192-b p16-iid-b2048-b
     p16-dir-b8192 p16-dir-b2048 p8-iid-curves"
PHASES=${PHASES:-$ALL}
GRID=("$BASE/grid" "$BASE/extend" "$BASE/seeds")
DIR=dirichlet:alpha=0.1
mkdir -p "$OUT"

# write NAME ARGS...: OUT/NAME-suite.json from study.py decentral (once)
write() {
    local name=$1
    shift
    [ -f "$OUT/$name-suite.json" ] ||
        "$PY" "$ST" decentral "${GRID[@]}" --out "$OUT/$name-suite.json" "$@"
}
write p8-dir --ranks 8 --shards $DIR --batches 2048,8192 --seeds 1,2,3,4,5
write p16-iid-b8192 --ranks 16 --shards iid --batches 8192 --seeds 1,2,3
write p16-iid-b2048-a --ranks 16 --shards iid --batches 2048 --seeds 1,2,3
write p16-iid-b8192-b --ranks 16 --shards iid --batches 8192 --seeds 4,5
write p16-iid-b2048-b --ranks 16 --shards iid --batches 2048 --seeds 4,5
write p16-dir-b8192 --ranks 16 --shards $DIR --batches 8192 --seeds 1,2,3,4,5
write p16-dir-b2048 --ranks 16 --shards $DIR --batches 2048 --seeds 1,2,3,4,5
write p8-iid-curves --ranks 8 --shards iid --batches 2048,8192 \
    --seeds 1,2,3,4,5 --optims dmsgd,decentlam

for p in $PHASES; do
    phase "$p" "$OUT/$p-suite.json"
done

RUNS=()
for p in $ALL; do
    [ -f "$OUT/$p/train.jsonl" ] && RUNS+=("$OUT/$p")
done
"$PY" "$ST" report "${GRID[@]}" "${RUNS[@]}" --out "$OUT/report" \
    >"$OUT/report.txt"
study_plot "$OUT/report" consensus dir=. dat=consensus.dat outbase=consensus
echo "report: $OUT/report (verdicts.md, study.json, consensus.png)"
