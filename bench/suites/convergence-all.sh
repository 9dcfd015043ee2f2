#!/usr/bin/env bash
# convergence-all.sh ROOT [TAG] - issue 17's whole study, every driver in
# order, each resumable (a finished phase is skipped, an interrupted suite
# resumed), so one command runs it or picks it up where it stopped:
#   ROOT/convergence-TAG      convergence-study.sh (grid, extension, seeds,
#                             report) and convergence-slamb-authors.sh
#                             (the authors' SLAMB), then the report again
#                             with its rows
#   ROOT/convergence-TAG/cnn-* convergence-cnn.sh (the CNN: grid,
#                             extension, seeds, report)
#   ROOT/decentral-TAG        decentral-study.sh (16 ranks, Dirichlet,
#                             consensus curves)
#   ROOT/decentral-tuned-TAG  decentral-tune.sh (per-method rates)
#   ROOT/tta-TAG              convergence-tta.sh (simulated time to
#                             accuracy; skipped once ROOT/tta-TAG.done is
#                             there, as it re-records its inputs)
# TAG defaults to today's UTC date.  Training time on this 2-core VM, from
# the recorded study of 2026-12-03: about 40 + 4 + 3 (convergence, SLAMB,
# extensions) + 17 (CNN) + 22 (decentral) + 11 (tuning) + 4 (tta) = 101
# minutes.  Environment as the drivers: LBSCALE, SEEDS, DRANKS.
#   bench/suites/convergence-all.sh results/studies 20261203
# resumes the recorded study (every phase done: only reports are redone).
set -euo pipefail
S=$(cd "$(dirname "$0")" && pwd)
ROOT=${1:?usage: convergence-all.sh ROOT [TAG]}
TAG=${2:-$(date -u +%Y%m%d)}
C="$ROOT/convergence-$TAG" D="$ROOT/decentral-$TAG"
T="$ROOT/decentral-tuned-$TAG" A="$ROOT/tta-$TAG"
"$S/convergence-study.sh" "$C"
"$S/convergence-slamb-authors.sh" "$C"
"$S/convergence-study.sh" "$C"
"$S/convergence-cnn.sh" "$C"
"$S/decentral-study.sh" "$D" "$C"
"$S/decentral-tune.sh" "$T" "$D" "$C"
if [ ! -f "$A.done" ]; then
    "$S/convergence-tta.sh" "$A" "$C" "$D"
    touch "$A.done"
fi
echo "study: $C/report $C/cnn-report $D/report $T/report $A/tta"
