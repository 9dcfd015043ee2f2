#!/usr/bin/env bash
# gpu-check.sh - on a machine with an NVIDIA GPU: build with CUDA, run the
# CPU-vs-GPU equivalence tests and the GPU benchmarks, all into ONE results
# run, in about 8 minutes.  Run from the repository root:
#
#   bench/gpu-check.sh            (BUILD=build-gpu, results/<UTC>-<rev>-gpu)
#
# Every step runs under `timeout` with its output in <run>/gpu-check/*.log;
# a failing step is recorded and the script goes on.  The summary at the
# end lists each step (ok / FAIL rc / skipped / TIMEOUT, seconds) and the
# headline numbers; the exit status is 1 if any step failed.
set -u

BUILD=${BUILD:-build-gpu}
N=${N:-100M}                        # elements for the 100M benchmarks
REV=$(git rev-parse --short=7 HEAD 2>/dev/null || echo unknown)
RUN=${RUN:-${LBSCALE_RESULTS:-results}/$(date -u +%Y%m%dT%H%M%SZ)-$REV-gpu}
LOG=$RUN/gpu-check
mkdir -p "$LOG" || exit 1
BIN=$BUILD/lbscale
SUMMARY=()
FAILED=0
T0=$(date +%s)

# step NAME SECONDS CMD...: run under timeout, log, remember the outcome.
step() {
    local name=$1 limit=$2 t=$(date +%s) rc what
    shift 2
    echo "== $name: $*" | tee -a "$LOG/steps.txt"
    timeout -k 10 "$limit" "$@" >"$LOG/$name.log" 2>&1
    rc=$?
    case $rc in
        0) what=ok ;;
        77) what=skipped ;;
        124|137) what=TIMEOUT; FAILED=1 ;;
        *) what="FAIL rc=$rc"; FAILED=1 ;;
    esac
    SUMMARY+=("$(printf '%-22s %-12s %4ss' "$name" "$what" $(($(date +%s) - t)))")
    echo "   -> $what (log: $LOG/$name.log)"
    tail -n 3 "$LOG/$name.log" | sed 's/^/   | /'
    return $rc
}

nvidia-smi >"$LOG/nvidia-smi.txt" 2>&1 || echo "warning: nvidia-smi failed" >&2

# 1. build: release, CUDA required, NCCL if found, code for this GPU
#    (-arch=native; if nvcc refuses it, the toolkit's default arch, whose
#    PTX the driver compiles at first launch)
CFG=(--buildtype=release -Dcuda=enabled -Dnccl=auto)
RECONF=()
[ -f "$BUILD/build.ninja" ] && RECONF=(--reconfigure)
if ! step configure 300 meson setup "${RECONF[@]}" "$BUILD" "${CFG[@]}" \
        -Dcuda_args=-arch=native; then
    rm -rf "$BUILD"
    # the fallback succeeding is a good outcome: only its own result counts
    FAILED=0
    step configure-plain 300 meson setup "$BUILD" "${CFG[@]}"
fi && step build 600 meson compile -C "$BUILD"

if [ -x "$BIN" ]; then
    # 2. equivalence tests (check_optim, check_compress, nccl), log kept
    step test-gpu 240 meson test -C "$BUILD" --suite gpu --print-errorlogs
    cp "$BUILD/meson-logs/testlog.txt" "$LOG/testlog-gpu.txt" 2>/dev/null

    # 3. benchmarks, all into $RUN
    step stream 60 "$BIN" stream --device cuda --out "$RUN"
    for o in lamb slamb adamw sgd; do
        step "optim-$o" 90 "$BIN" optim --device cuda --optim "$o" \
            --elements "$N" --out "$RUN"
    done
    step compress-topk 120 "$BIN" compress --device cuda \
        --compressor topk:k=0.01 --elements "$N" --out "$RUN"
    if grep -q 'LBS_HAVE_NCCL 1' "$BUILD/lbs_config.h"; then
        NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
        if [ "${NGPU:-0}" -gt 1 ] && command -v mpirun >/dev/null; then
            step coll-nccl 120 mpirun --allow-run-as-root --oversubscribe \
                -np "$NGPU" "$BIN" coll --backend nccl --out "$RUN"
        else
            step coll-nccl 120 "$BIN" coll --backend nccl --out "$RUN"
        fi
    fi

    # 4. peers, where torch has CUDA (rows appended to the same run)
    if python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' \
            >/dev/null 2>&1; then
        step peer-adamw 180 python3 bench/peers/torch_lamb.py --device cuda \
            --elements "$N" --lbscale "$BIN" --json
        grep '^{' "$LOG/peer-adamw.log" >>"$RUN/peer_optim.jsonl"
        step peer-topk 180 python3 bench/peers/torch_topk.py --device cuda \
            --elements "$N" --k 0.01 --lbscale "$BIN" --json
        grep '^{' "$LOG/peer-topk.log" >>"$RUN/peer_topk.jsonl"
    else
        SUMMARY+=("$(printf '%-22s %-12s' peers 'skipped (no torch with CUDA)')")
    fi
fi

# 5. summary: every step, then the headline numbers of the run
{
    echo
    echo "gpu-check: $(nvidia-smi -L 2>/dev/null | head -n 1)"
    echo "run: $RUN   ($(($(date +%s) - T0)) s)"
    printf '  %s\n' "${SUMMARY[@]}"
    grep -E '^ *[0-9]+/[0-9]+ ' "$LOG/test-gpu.log" 2>/dev/null | sed 's/^ */    /'
    python3 - "$RUN" <<'EOF'
import json, os, sys
run = sys.argv[1]
def rows(verb):
    try:
        return [json.loads(l) for l in open(os.path.join(run, verb + ".jsonl")) if l.strip()]
    except OSError:
        return []
for r in rows("stream"):
    if r.get("device") == "cuda":
        print(f"  copy: cudaMemcpy {r['memcpy_gbps']:.0f} GB/s, kernel {r['kernel_gbps']:.0f} GB/s, #wrong {r['wrong']}")
for r in rows("optim"):
    print(f"  optim {r['optim']:<6} {r['elements']:>11} el  {r['step_ms_median']:8.3f} ms  "
          f"{r['gbps']:7.0f} GB/s  {r['roofline_frac']:.2f} of copy  #wrong {r['wrong']}")
for r in rows("compress"):
    print("  compress " + ", ".join(f"{k}={r[k]}" for k in
          ("compressor", "elements", "compress_ms_median", "gbps", "wrong") if k in r))
for r in rows("peer_optim") + rows("peer_topk"):
    print("  peer " + ", ".join(f"{k}={r[k]:.4g}" if isinstance(r[k], float) else f"{k}={r[k]}"
          for k in ("impl", "step_ms_median", "ms_median", "ours_over_theirs") if k in r))
EOF
} | tee "$LOG/summary.txt"
exit $FAILED
