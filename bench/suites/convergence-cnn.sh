#!/usr/bin/env bash
# convergence-cnn.sh OUT [--set k=v ...] - issue 17's CNN runs under the
# MLP study's protocol, each phase under flock /tmp/lbscale-heavy.lock and
# resumable (a finished phase is skipped, an interrupted suite resumed):
#   1  OUT/cnn-grid: bench/suites/convergence-cnn.json (3 base rates per
#      optimizer and batch, seed 1, scored on the validation split)
#   1b OUT/cnn-extend: tools/study.py extend, past the edge the choice sits
#      on (as convergence-study.sh)
#   2  OUT/cnn-seeds: tools/study.py seeds (the chosen rate, seeds $SEEDS)
#   3  OUT/cnn-report, OUT/cnn-report.txt: tools/study.py report
# Environment: SEEDS (default 1,2,3,4,5), LBSCALE (build/lbscale).
# Training time on this 2-core VM: about 8 + 3 + 6 minutes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/phase.sh"
OUT=${1:?usage: convergence-cnn.sh OUT [--set k=v ...]}
shift
SEEDS=${SEEDS:-1,2,3,4,5}
"$PY" "$ST" check --seeds "$SEEDS"
mkdir -p "$OUT"
phase cnn-grid "$ROOT/bench/suites/convergence-cnn.json" "$@"
extend_phase cnn-grid cnn-extend
EXT=()
[ -d "$OUT/cnn-extend" ] && EXT=("$OUT/cnn-extend")
[ -f "$OUT/cnn-seeds-suite.json" ] ||
    "$PY" "$ST" seeds "$OUT/cnn-grid" "${EXT[@]}" \
        --out "$OUT/cnn-seeds-suite.json" --seeds "$SEEDS" \
        --decentral-batches none --onebit-batches none
phase cnn-seeds "$OUT/cnn-seeds-suite.json"
"$PY" "$ST" report "$OUT/cnn-grid" "${EXT[@]}" "$OUT/cnn-seeds" \
    --out "$OUT/cnn-report" --model cnn >"$OUT/cnn-report.txt"
echo "report: $OUT/cnn-report.txt, $OUT/cnn-report/"
