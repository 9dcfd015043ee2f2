#!/usr/bin/env bash
# convergence-budget.sh OUT [--set k=v ...] - issue 35: the convergence study's claims at a
# budget chosen by a stated criterion, in one resumable command (a finished
# phase is skipped, an interrupted suite resumed: run the same command
# again).  Every suite runs under flock /tmp/lbscale-heavy.lock (phase.sh).
#   budget   bench/suites/convergence-budget.json: LAMB and SGD-M at batch
#            128 on the MLP at the 3-epoch study's rates, constant rate, 60
#            epochs; tools/study.py budget: the first epoch E at which the
#            training loss improved < 1% over the last 20% of the epochs,
#            the larger of the two = the budget (OUT/epochs, kept once
#            written, so that a resumed study keeps its budget)
#   then per claim C, most important first (CLAIMS): C-grid (tools/study.py
#   plan C: the 3-epoch study's grid entries for the claim at E epochs),
#   C-extend (study.py extend: past the edge the choice sits on), C-seeds
#   (study.py seeds: seeds $SEEDS at the chosen rate), and after each
#   claim the reports, partial until every claim is done:
#     OUT/report      study.py report over every MLP phase run so far, with
#                     the 3-epoch study's verdicts as the budget-sensitivity
#                     row and power statements for the open comparisons
#     OUT/cnn-report  the same for the CNN (--model cnn)
#     OUT/progress.md study.py progress: each phase done / partial / not
#                     started, training time so far (verdicts.md's first
#                     line says PARTIAL and what is missing until done)
# CLAIMS: lb (SGD-M, AdamW, LARS, LAMB at 128 and 8192), slamb (SLAMB,
# authors' default, vs LAMB at 1024 and 8192), onebit (1-bit LAMB, 20%
# warm-up, vs LAMB at 2048 and 8192), jointspar (JointSpar, JointSpar-LARS
# vs SGD-M, LARS on mlp8 at 2048 and 8192), cnn (SGD-M, LAMB at 128 and
# 2048 on the CNN).
# --set: passed to the grid phases (e.g. subset=2048 for a toy run); the
# extension and seed phases copy the grid runs' arguments.
# JOBS=N (default 1): the phases of the claims judged on accuracy alone
# (lb, slamb, onebit, cnn) run N single-threaded training entries side by
# side (lbscale suite --jobs; on 2 cores, 2 use both; a one-thread run's
# numbers do not depend on its neighbours, only its wall time does).
# JointSpar's phases always run one at a time: its claim includes the
# time to a target, measured in wall seconds.
# Environment: SEEDS (1,2,3,4,5), CLAIMS (lb slamb onebit jointspar cnn),
# REF (the 3-epoch study: results/studies/convergence-20261203), LBSCALE,
# EPOCHS (a budget other than the measured one; read only before OUT/epochs
# exists, and recorded there), REPORT_ONLY=1 (only the reports of the runs
# so far, e.g. beside a running study: runs nothing, takes no lock).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/phase.sh"
OUT=${1:?usage: convergence-budget.sh OUT [--set k=v ...]}
shift
SEEDS=${SEEDS:-1,2,3,4,5}
CLAIMS=${CLAIMS:-lb slamb onebit jointspar cnn}
REF=${REF:-$ROOT/results/studies/convergence-20261203}
"$PY" "$ST" check --seeds "$SEEDS"
mkdir -p "$OUT"

if [ "${REPORT_ONLY:-0}" != 1 ]; then
    phase budget "$ROOT/bench/suites/convergence-budget.json"
    "$PY" "$ST" budget "$OUT/budget" --out "$OUT/budget-report" \
        >"$OUT/budget.txt"
    if [ ! -f "$OUT/epochs" ]; then
        if [ -n "${EPOCHS:-}" ]; then
            "$PY" "$ST" plan lb --epochs "$EPOCHS" --out /dev/null >/dev/null
            echo "$EPOCHS" >"$OUT/epochs"
        else
            sed -n 's/^epochs=//p' "$OUT/budget.txt" >"$OUT/epochs"
        fi
    fi
    E=$(cat "$OUT/epochs")
    MET=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["criterion_met"])' \
        "$OUT/budget-report/budget.json" 2>/dev/null || echo True)
    [ "$MET" = True ] && EP="$E epochs" ||
        EP="$E epochs (the length of the measuring run, a lower bound: the criterion was not met)"
    study_plot "$OUT/budget-report" budget dir=. outbase=budget "epochs=$EP"
fi
[ -f "$OUT/epochs" ] || { echo "convergence-budget.sh: $OUT has no budget yet" >&2; exit 2; }
E=$(cat "$OUT/epochs")

# the run directories of the claims' phases that have rows so far
dirs() {
    local c p
    for c in "$@"; do
        for p in grid extend seeds; do
            [ -f "$OUT/$c-$p/train.jsonl" ] && echo "$OUT/$c-$p"
        done
    done
    return 0
}

reports() {
    local mlp cnn note
    "$PY" "$ST" progress "$OUT" --claims "$CLAIMS" >"$OUT/progress.md"
    note=$(sed -n 's/^not finished: //p' "$OUT/progress.md")
    case "$note" in
        nothing*) note="Complete: every phase of $CLAIMS at $E epochs." ;;
        *) note="PARTIAL ($E epochs): not finished: $note (progress.md)" ;;
    esac
    mapfile -t mlp < <(dirs lb slamb onebit jointspar)
    mapfile -t cnn < <(dirs cnn)
    if [ ${#mlp[@]} -gt 0 ]; then
        "$PY" "$ST" report "${mlp[@]}" --out "$OUT/report" --note "$note" \
            --budget-ref "$REF/report/study.json" >"$OUT/report.txt" || true
        study_plot "$OUT/report" study dir=. outbase=study big=8192 \
            "note=$E epochs, seeds $SEEDS" || true
        study_plot "$OUT/report" claims dir=. outbase=claims \
            "note=$E epochs, seeds $SEEDS" || true
    fi
    if [ ${#cnn[@]} -gt 0 ]; then
        "$PY" "$ST" report "${cnn[@]}" --model cnn --out "$OUT/cnn-report" \
            --note "$note" --budget-ref "$REF/cnn-report/study.json" \
            >"$OUT/cnn-report.txt" || true
        study_plot "$OUT/cnn-report" claims dir=. outbase=claims \
            "note=$E epochs, seeds $SEEDS" || true
    fi
}

# REPORT_ONLY=1: the (partial) reports of what has run so far, nothing run
if [ "${REPORT_ONLY:-0}" = 1 ]; then
    reports
    echo "report: $OUT/report, $OUT/cnn-report, $OUT/progress.md"
    exit 0
fi

for c in $CLAIMS; do
    [ -f "$OUT/$c-grid-suite.json" ] ||
        "$PY" "$ST" plan "$c" --epochs "$E" --out "$OUT/$c-grid-suite.json"
    J=()
    [ "${JOBS:-1}" -gt 1 ] && [ "$c" != jointspar ] && J=(--jobs "$JOBS")
    phase "$c-grid" "$OUT/$c-grid-suite.json" "$@" "${J[@]}"
    [ -f "$OUT/$c-extend-suite.json" ] ||
        "$PY" "$ST" extend "$OUT/$c-grid" --out "$OUT/$c-extend-suite.json" \
            --timeout-s 14400
    extend_phase "$c-grid" "$c-extend" "${J[@]}"
    EXT=()
    [ -d "$OUT/$c-extend" ] && EXT=("$OUT/$c-extend")
    [ -f "$OUT/$c-seeds-suite.json" ] ||
        "$PY" "$ST" seeds "$OUT/$c-grid" "${EXT[@]}" \
            --out "$OUT/$c-seeds-suite.json" --seeds "$SEEDS" \
            --decentral-batches none --onebit-batches none --timeout-s 14400
    phase "$c-seeds" "$OUT/$c-seeds-suite.json" "${J[@]}"
    reports
done
reports
echo "report: $OUT/report, $OUT/cnn-report, $OUT/progress.md"
