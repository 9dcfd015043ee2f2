#!/usr/bin/env bash
# gpu-check.sh - on a machine with an NVIDIA GPU: build with CUDA, run the
# CPU-vs-GPU equivalence tests and the GPU benchmarks, all into ONE results
# run, in about 8 minutes (compute-sanitizer over the checks last, only
# while time is left).  Run from the repository root:
#
#   bench/gpu-check.sh            (BUILD=build-gpu, results/<UTC>-<rev>-gpu)
#
# A GPU machine that cannot download (no apt): run bench/gpu-pack.sh on a
# Debian machine first and send .gpupack/ with the tree; the Debian
# packages in it are unpacked into a private prefix ($DEPS, nothing goes
# into /), found through their own pkg-config and loaded through
# LD_LIBRARY_PATH by this script's steps alone.  Without Criterion the
# unit tests are left out of the build (-Dcriterion=disabled); without
# git the revision comes from .gpupack/rev; NCCL comes from
# /usr/local/cuda or, failing that, from pip's nvidia-nccl wheel.
#
# Every step runs under `timeout` with its output in <run>/gpu-check/*.log;
# a failing step is recorded and the script goes on.  The summary at the
# end lists each step (ok / FAIL rc / skipped / TIMEOUT, seconds) and the
# headline numbers; the exit status is 1 if any step failed.
set -u

BUILD=${BUILD:-build-gpu}
N=${N:-100M}                        # elements for the 100M benchmarks
PACK=.gpupack
DEPS=${DEPS:-/tmp/lbscale-deps}
REV=$(git rev-parse --short=7 HEAD 2>/dev/null || cat "$PACK/rev" 2>/dev/null ||
      echo unknown)
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
    env ${DEPS_LIB:+LD_LIBRARY_PATH=$DEPS_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}} \
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

# 0. tools and libraries.  meson and ninja may be pip's, off PATH.
MESON=(meson)
command -v meson >/dev/null || MESON=(python3 -m mesonbuild.mesonmain)
if ! command -v ninja >/dev/null; then
    NINJA=$(python3 -c 'import ninja, os; print(os.path.join(ninja.BIN_DIR, "ninja"))' 2>/dev/null) &&
        export NINJA
fi
DEPS_LIB=
# unpack_pack: .gpupack/debs -> $DEPS; its .pc files point into $DEPS and a
# pkg-config wrapper searches them first (then the system's).
unpack_pack() {
    local d a tmp
    rm -rf "$DEPS" && mkdir -p "$DEPS/bin" || return 1
    tmp=$(mktemp -d) || return 1
    for d in "$PACK"/debs/*.deb; do
        a=$(readlink -f "$d")
        dpkg-deb -x "$a" "$DEPS" 2>/dev/null ||
            (cd "$tmp" && rm -f data.tar.* && ar x "$a" && tar -C "$DEPS" -xf data.tar.*) ||
            { echo "cannot unpack $d" >&2; rm -rf "$tmp"; return 1; }
    done
    rm -rf "$tmp"
    local lib=$DEPS/usr/lib/x86_64-linux-gnu
    find "$DEPS/usr" -name '*.pc' -exec sed -i -E \
        "s#^(prefix|exec_prefix|libdir|includedir)=/usr#\\1=$DEPS/usr#" {} +
    local pcs=$lib/pkgconfig:$lib/openblas-pthread/pkgconfig:$DEPS/usr/share/pkgconfig
    local sys=/usr/lib/x86_64-linux-gnu/pkgconfig:/usr/lib/pkgconfig:/usr/share/pkgconfig
    cat >"$DEPS/bin/pkg-config" <<EOF2
#!/bin/sh
LD_LIBRARY_PATH=$lib PKG_CONFIG_LIBDIR=$pcs:$sys exec $DEPS/usr/bin/pkgconf "\$@"
EOF2
    chmod +x "$DEPS/bin/pkg-config"
    export PKG_CONFIG=$DEPS/bin/pkg-config
    # Debian's multiarch headers (hwloc/autogen/config.h): a default
    # include directory on Debian, not in a private prefix
    export CPATH=$DEPS/usr/include/x86_64-linux-gnu${CPATH:+:$CPATH}
    DEPS_LIB=$lib:$lib/openblas-pthread
    echo "deps: $(ls "$PACK"/debs | wc -l) packages from $PACK unpacked into $DEPS"
}
if [ -d "$PACK/debs" ]; then
    unpack_pack || { echo "gpu-check: cannot use $PACK" >&2; exit 1; }
fi

# NCCL: the toolkit's, else pip's wheel (a folder with include/ and
# lib/libnccl.so{,.2} links to the wheel's libnccl.so.2, which the
# binaries' run path then finds)
NCCL_OPT=()
if [ ! -e /usr/local/cuda/include/nccl.h ]; then
    w=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
    if [ -n "$w" ] && [ -e "$w/include/nccl.h" ] && [ -e "$w/lib/libnccl.so.2" ]; then
        mkdir -p "$BUILD-nccl/lib" &&
            ln -sfn "$w/include" "$BUILD-nccl/include" &&
            ln -sf "$w/lib/libnccl.so.2" "$BUILD-nccl/lib/libnccl.so" &&
            ln -sf "$w/lib/libnccl.so.2" "$BUILD-nccl/lib/libnccl.so.2" &&
            NCCL_OPT=(-Dnccl_dir="$(readlink -f "$BUILD-nccl")")
    fi
fi

# 1. build: release, CUDA required, NCCL if found; code for this GPU
#    (meson's gpu_arch=auto reads the compute capability from nvidia-smi)
CFG=(--buildtype=release -Dcuda=enabled -Dnccl=auto -Drevision="$REV" "${NCCL_OPT[@]}")
PKGC=${PKG_CONFIG:-pkg-config}
"$PKGC" --exists criterion 2>/dev/null || CFG+=(-Dcriterion=disabled)
RECONF=()
[ -f "$BUILD/build.ninja" ] && RECONF=(--reconfigure)
step configure 300 "${MESON[@]}" setup "${RECONF[@]}" "$BUILD" "${CFG[@]}" &&
    { grep -E 'cuda arch|^ *nccl *: (True|False)' "$LOG/configure.log"; true; } &&
    step build 600 "${MESON[@]}" compile -C "$BUILD"

if [ -x "$BIN" ]; then
    # 2. equivalence tests (check_optim, check_compress, nccl), log kept
    step test-gpu 240 "${MESON[@]}" test -C "$BUILD" --suite gpu --print-errorlogs
    cp "$BUILD/meson-logs/testlog.txt" "$LOG/testlog-gpu.txt" 2>/dev/null

    # 3. benchmarks, all into $RUN
    step stream 60 "$BIN" stream --device cuda --out "$RUN"
    # every optimizer `optim --list` says has GPU kernels
    for o in $("$BIN" optim --list |
               awk '/^  [a-z0-9_]+ - /{n=$1} /GPU kernels/{print n}'); do
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
    #    Python runs without the packed libraries; our binary gets them
    #    through a wrapper.
    PEER_BIN=$BIN
    if [ -n "$DEPS_LIB" ]; then
        PEER_BIN=$BUILD/lbscale-with-deps
        printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
            "$DEPS_LIB" "$(readlink -f "$BIN")" >"$PEER_BIN" && chmod +x "$PEER_BIN"
    fi
    if python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' \
            >/dev/null 2>&1; then
        DEPS_LIB= step peer-adamw 180 python3 tools/peers/torch_lamb.py --device cuda \
            --elements "$N" --lbscale "$PEER_BIN" --json
        grep '^{' "$LOG/peer-adamw.log" >>"$RUN/peer_optim.jsonl"
        DEPS_LIB= step peer-topk 180 python3 tools/peers/torch_topk.py --device cuda \
            --elements "$N" --k 0.01 --lbscale "$PEER_BIN" --json
        grep '^{' "$LOG/peer-topk.log" >>"$RUN/peer_topk.jsonl"
    else
        SUMMARY+=("$(printf '%-22s %-12s' peers 'skipped (no torch with CUDA)')")
    fi
fi

# 5. compute-sanitizer over the equivalence checks (compare only, small
#    sizes), if this toolkit has it and time is left (SANITIZE=0: none):
#    memcheck (out of bounds, misaligned), racecheck (shared-memory
#    hazards), synccheck (barrier misuse), initcheck (reads of device
#    memory never written).  A finding fails the step; its log names it.
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ "${SANITIZE:-1}" = 0 ]; then
    SUMMARY+=("$(printf '%-22s %-12s' sanitizers 'skipped (SANITIZE=0)')")
elif [ -z "$CS" ] || [ ! -x "$BUILD/tests/check_optim" ]; then
    SUMMARY+=("$(printf '%-22s %-12s' sanitizers 'skipped (no compute-sanitizer or no build)')")
else
    for tool in memcheck racecheck synccheck initcheck; do
        if [ $(($(date +%s) - T0)) -gt "${SANITIZE_UNTIL_S:-330}" ]; then
            SUMMARY+=("$(printf '%-22s %-12s' "san-$tool..." 'skipped (time)')")
            break
        fi
        f0=$FAILED
        step "san-$tool-optim" 60 "$CS" --tool "$tool" --error-exitcode 1 \
            "$BUILD/tests/check_optim" --no-bench
        # gVisor's runtime: "Device not supported" (KINDS.md), not a finding
        if grep -q "Device not supported" "$LOG/san-$tool-optim.log"; then
            FAILED=$f0
            SUMMARY[${#SUMMARY[@]}-1]=$(printf '%-22s %-12s' sanitizers \
                'skipped (compute-sanitizer: device not supported here)')
            break
        fi
        step "san-$tool-compress" 60 "$CS" --tool "$tool" --error-exitcode 1 \
            "$BUILD/tests/check_compress" --no-bench --elements 65536
    done
fi

# 6. summary: every step, then the headline numbers of the run
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
