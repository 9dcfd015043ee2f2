#!/usr/bin/env bash
# convergence-study.sh OUT [--set k=v ...] - issue 17's convergence study,
# every phase in order, each suite under flock /tmp/lbscale-heavy.lock
# (the machine is shared) and resumable (a finished phase is skipped; an
# interrupted suite is resumed with `lbscale suite --resume`):
#   1  grid: bench/suites/convergence-grid.json (3 base rates per
#      optimizer and batch, seed 1, scored on the validation split)
#   1b extension: tools/study.py extend, past the edge the choice sits on
#      (highest x4, x16 where the highest rate won; lowest/4, lowest/16
#      where the lowest won or nothing trained)
#   2  seeds: tools/study.py seeds (the chosen rate, seeds $SEEDS; DmSGD,
#      DecentLaM and parallel momentum SGD on $DRANKS ranks, ring; 1-bit
#      LAMB on 4 ranks)
#   3  report: tools/study.py report (statistics, verdicts) + plots/study.gp,
#      with OUT/slamb-authors's runs when convergence-slamb-authors.sh has
#      made them
# Environment: SEEDS (default 1,2,3,4,5), DRANKS (8), LBSCALE (build/lbscale).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/phase.sh"
OUT=${1:?usage: convergence-study.sh OUT [--set k=v ...]}
shift
SEEDS=${SEEDS:-1,2,3,4,5}
DRANKS=${DRANKS:-8}
"$PY" "$ST" check --seeds "$SEEDS"
mkdir -p "$OUT"
phase grid "$ROOT/bench/suites/convergence-grid.json" "$@"
extend_phase grid extend
EXT=()
[ -d "$OUT/extend" ] && EXT=("$OUT/extend")
[ -f "$OUT/seeds-suite.json" ] ||
    "$PY" "$ST" seeds "$OUT/grid" "${EXT[@]}" --out "$OUT/seeds-suite.json" \
        --seeds "$SEEDS" --decentral-ranks "$DRANKS" \
        --decentral-batches 2048,8192 --topology ring --onebit-ranks 4 \
        --onebit-batches 2048,8192
phase seeds "$OUT/seeds-suite.json"
# the SLAMB re-run with the authors' behaviour (convergence-slamb-authors.sh),
# when there: study.py report uses its SLAMB rows instead of these
SA=()
for d in grid extend seeds; do
    [ -f "$OUT/slamb-authors/$d.done" ] && SA+=("$OUT/slamb-authors/$d")
done
"$PY" "$ST" report "$OUT/grid" "${EXT[@]}" "$OUT/seeds" "${SA[@]}" \
    --out "$OUT/report" >"$OUT/report.txt"
study_plot "$OUT/report" study dir=. outbase=study big=8192 \
    "note=$(cat "$OUT/note" 2>/dev/null || true)"
echo "report: $OUT/report (table.md, verdicts.md, study.json, study.png)"
