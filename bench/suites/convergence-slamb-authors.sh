#!/usr/bin/env bash
# convergence-slamb-authors.sh OUT - the SLAMB part of issue 17's
# convergence study (OUT: a study run of convergence-study.sh) re-run with
# the authors' SLAMB (lbscale's defaults since issue 17 item 5, plus the
# k warm-up that lbscale train sets: kwarm = 1/200 of the run's steps),
# into OUT/slamb-authors, resumable like convergence-study.sh (each suite
# under flock /tmp/lbscale-heavy.lock; a finished phase is skipped):
#   1  grid: bench/suites/convergence-slamb-authors.json (slamb at 1024 and
#      8192, the grid's 3 base rates, seed 1, 4 ranks)
#   1b extension: tools/study.py extend, past the edge the choice sits on
#      (highest x4, x16 or lowest/4, lowest/16).  The study of 2026-12-03
#      ran the downward one first (the rule then); its extension and seeds
#      were resumed with the upward one (results/studies/
#      convergence-20261203/COMMANDS.md): remove extend-suite.json,
#      extend.done, seeds-suite.json and seeds.done and rerun, and
#      `lbscale suite --resume` runs only the entries not yet run (its key
#      is the entry's name and arguments)
#   2  seeds: tools/study.py seeds (the chosen rate, seeds $SEEDS)
#   3  the study's report again (convergence-study.sh OUT: its phases are
#      done, so only the report runs; it reads OUT/slamb-authors too, and
#      tools/study.py report then uses these SLAMB rows instead of the
#      former variant's)
# Environment: SEEDS (default 1,2,3,4,5), LBSCALE (build/lbscale).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/phase.sh"
STUDY=${1:?usage: convergence-slamb-authors.sh OUT}
OUT=$STUDY/slamb-authors
SEEDS=${SEEDS:-1,2,3,4,5}
"$PY" "$ST" check --seeds "$SEEDS"
[ -f "$STUDY/seeds.done" ] || { echo "$STUDY: the study's phases are not done" >&2; exit 2; }
mkdir -p "$OUT"
phase grid "$ROOT/bench/suites/convergence-slamb-authors.json"
extend_phase grid extend
EXT=()
grep -q '"name"' "$OUT/extend-suite.json" && EXT=("$OUT/extend")
[ -f "$OUT/seeds-suite.json" ] ||
    "$PY" "$ST" seeds "$OUT/grid" "${EXT[@]}" --out "$OUT/seeds-suite.json" \
        --seeds "$SEEDS" --decentral-batches none --onebit-batches none
phase seeds "$OUT/seeds-suite.json"
LBSCALE="$BIN" "$ROOT/bench/suites/convergence-study.sh" "$STUDY"
