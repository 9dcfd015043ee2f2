#!/usr/bin/env bash
# decentral-tune.sh OUT [DEC] [BASE] - per-method learning rates for issue
# 17's decentralized verdict.  decentral-study.sh (DEC, default
# results/studies/decentral-20261203) ran DmSGD and DecentLaM at parallel
# momentum SGD's rate (BASE's 1-rank grid choice, default
# results/studies/convergence-20261203); here each of them gets its own
# rate per (ranks, shard kind, batch), by the study's protocol:
#   grid-S    seed 1 at 0.5x and 2x parallel's rate (1x is DEC's/BASE's run,
#             reused): tools/study.py decentral --lr-factors 0.5,2
#   ext-S     once, one grid step (x2 or /2) past the edge the choice sits
#             on: tools/study.py extend --factors 2 --optims dmsgd,decentlam
#   seeds-S   seeds 2-5 at the chosen rate where it is not 1x (seeds already
#             run at it are skipped): tools/study.py decentral --tuned
# The choice (tools/study.py choose) is on seed 1's validation accuracy,
# diverged runs never win, ties go to the lower rate.  Settings S: p8-iid,
# p8-dir, p16-iid, p16-dir (Dirichlet alpha = 0.1), batches 2048 and 8192,
# 8 ranks first.  Then the report over BASE's, DEC's and these runs into
# OUT/report, and the consensus figure.  Every phase is one suite under
# flock /tmp/lbscale-heavy.lock, resumable like decentral-study.sh (a
# finished phase's .done file skips it, an interrupted one resumes).
# Environment: LBSCALE (default build/lbscale); SETTINGS (default all four).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/phase.sh"
OUT=${1:?usage: decentral-tune.sh OUT [DEC] [BASE]}
DEC=${2:-$ROOT/results/studies/decentral-20261203}
BASE=${3:-$ROOT/results/studies/convergence-20261203}
SETTINGS=${SETTINGS:-p8-iid p8-dir p16-iid p16-dir}
G=("$BASE/grid" "$BASE/extend" "$BASE/seeds")
DECRUNS=()
for p in p8-dir p16-iid-b8192 p16-iid-b2048-a p16-iid-b8192-b \
         p16-iid-b2048-b p16-dir-b8192 p16-dir-b2048 p8-iid-curves; do
    [ -f "$DEC/$p/train.jsonl" ] && DECRUNS+=("$DEC/$p")
done
mkdir -p "$OUT"


done_runs() {   # the finished phases' run directories of setting $1
    local s=$1 d
    for d in grid ext seeds; do
        [ -f "$OUT/$d-$s/train.jsonl" ] && echo "$OUT/$d-$s"
    done
    return 0
}

tune() {   # tune SETTING: grid, extension, seeds of one (ranks, shards)
    local s=$1 p=${1%%-*} sh=iid
    p=${p#p}
    [ "${s#*-}" = dir ] && sh=dirichlet:alpha=0.1
    local common=(--ranks "$p" --shards "$sh" --batches 2048,8192
                  --optims dmsgd,decentlam)
    [ -f "$OUT/grid-$s-suite.json" ] ||
        "$PY" "$ST" decentral "${G[@]}" --out "$OUT/grid-$s-suite.json" \
            "${common[@]}" --seeds 1 --lr-factors 0.5,2
    phase "grid-$s" "$OUT/grid-$s-suite.json"
    # the setting's grid run first: its seed-1 rows give the extension's
    # arguments; DEC's and BASE's runs hold the 1x point
    [ -f "$OUT/ext-$s-suite.json" ] ||
        "$PY" "$ST" extend "$OUT/grid-$s" "${G[@]}" "${DECRUNS[@]}" \
            --out "$OUT/ext-$s-suite.json" --factors 2 \
            --optims dmsgd,decentlam
    phase "ext-$s" "$OUT/ext-$s-suite.json"
    local runs
    mapfile -t runs < <(done_runs "$s")
    [ -f "$OUT/seeds-$s-suite.json" ] ||
        "$PY" "$ST" decentral "${G[@]}" "${DECRUNS[@]}" "${runs[@]}" \
            --out "$OUT/seeds-$s-suite.json" "${common[@]}" \
            --seeds 1,2,3,4,5 --tuned
    phase "seeds-$s" "$OUT/seeds-$s-suite.json"
}
for s in $SETTINGS; do
    tune "$s"
done

RUNS=()
for s in p8-iid p8-dir p16-iid p16-dir; do
    mapfile -t -O ${#RUNS[@]} RUNS < <(done_runs "$s")
done
"$PY" "$ST" report "${G[@]}" "${DECRUNS[@]}" "${RUNS[@]}" --out "$OUT/report" \
    >"$OUT/report.txt"
study_plot "$OUT/report" consensus dir=. dat=consensus.dat outbase=consensus
echo "report: $OUT/report (verdicts.md, study.json, consensus.png)"
