#!/usr/bin/env bash
# gpu_cli.sh BINARY - `lbscale optim|stream|compress --device cuda` and
# `lbscale coll --backend nccl` where they cannot run: without a CUDA (or
# NCCL) build or without a GPU.  Each must exit exactly 2 with exactly one line on stderr,
# "lbscale optim: --device cuda: no CUDA GPU: ..." (CUDA build, no GPU) or
# "...: this lbscale was built without CUDA ..." (no CUDA build), print
# nothing on stdout and create no file (no results directory, not even the
# one --out names).  Bad input around --device is rejected the same way.
# Printed as TAP.
#
# Where the GPU path works (the probe command below succeeds) these
# commands would run for real, so the script is skipped (a TAP "1..0 # SKIP" plan);
# tests/gpu/check_optim, tests/gpu/check_compress, tests/gpu_nccl.sh and
# bench/gpu-check.sh cover that side.
set -u

BIN=${1:?usage: gpu_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac

. "$(dirname "$0")/tap.sh"

if (cd "$TOP" && timeout 60 "$BIN" stream --device cuda --elements 4K \
        --iters 1 --no-save >/dev/null 2>&1); then
    echo "1..0 # SKIP a CUDA GPU works here: the no-GPU paths cannot be taken"
    exit 0   # TAP skip: meson counts a nonzero exit as an error
fi
if "$BIN" --version | grep -q 'cuda yes'; then
    WHY="no CUDA GPU"
else
    WHY="built without CUDA"
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

# The --out directory the next run would not be allowed to create.
next_out() { echo "$TOP/c$((case_no + 1))/res/run"; }

# No GPU / no CUDA build: the lines bench/gpu-check.sh runs, and others,
# for every optimizer `optim --list` says has GPU kernels.
GPU_OPTS=$("$BIN" optim --list | awk '/^  [a-z0-9_]+ - /{n=$1} /GPU kernels/{print n}')
[ -n "$GPU_OPTS" ] && ok "optim --list names optimizers with GPU kernels" ||
    not_ok "optim --list names optimizers with GPU kernels"
for o in $GPU_OPTS; do
    bad "optim --device cuda --optim $o" \
        "lbscale: optim: --device cuda: |$WHY" \
        optim --device cuda --optim "$o" --elements 100M
done
bad "optim --device cuda --json --layers bert" \
    "optim: --device cuda: |$WHY" \
    optim --device cuda --optim lamb:lr=0.01 --layers bert --elements 1M --json
bad "optim --device cuda --out DIR creates nothing" \
    "optim: --device cuda: |$WHY" \
    optim --device cuda --optim adamw --elements 1M --out "$(next_out)"
bad "optim --device cuda --stream-gbps given" "optim: --device cuda: |$WHY" \
    optim --device cuda --optim sgd --elements 1M --stream-gbps 3000
bad "stream --device cuda" "lbscale: stream: --device cuda: |$WHY" \
    stream --device cuda
bad "stream --device cuda --out DIR creates nothing" \
    "stream: --device cuda: |$WHY" \
    stream --device cuda --elements 1M --iters 2 --out "$(next_out)"

# Bad input around --device, whatever the machine.
bad "optim --device tpu" "--device|tpu" optim --device tpu --optim lamb
bad "optim --device without a value" "--device" optim --optim lamb --device
bad "stream --device tpu" "--device|tpu" stream --device tpu
bad "optim --device cuda, bad spec first" "bogus" \
    optim --device cuda --optim lamb:bogus=1
bad "optim --device cuda, bad preset first" "layers" \
    optim --device cuda --optim lamb --layers nosuch:3
if [ "$WHY" = "no CUDA GPU" ]; then   # kernels exist: the name is checked
    bad "optim --device cuda, optimizer without kernels" "lars|CUDA" \
        optim --device cuda --optim lars
fi
bad "optim --device cuda --comm mpi" "--device cuda|--comm" \
    optim --device cuda --optim lamb --comm mpi
bad "optim --device cuda --compress" "--device cuda|--compress" \
    optim --device cuda --optim lamb --compress topk:k=0.01
bad "optim --device cuda --comm record" "--device cuda|--comm" \
    optim --device cuda --optim lamb --comm record:4

# --help documents the device paths.
for v in optim stream; do
    run $v --help
    if [ "$RC" -eq 0 ] && grep -q -- '--device D' "$OUT" &&
       grep -q cuda "$OUT"; then
        ok "$v --help documents --device"
    else
        not_ok "$v --help documents --device" "rc $RC"
    fi
done

# --device cpu is the CPU path, unchanged.
run optim --device cpu --optim lamb --elements 100K --iters 1 --warmup 0 \
    --stream-gbps 10 --no-save --json
if [ "$RC" -eq 0 ] && grep -q '"wrong":0' "$OUT" && ! grep -q '"device"' "$OUT"
then
    ok "optim --device cpu runs the CPU path (#wrong 0)"
else
    not_ok "optim --device cpu runs the CPU path (#wrong 0)" "rc $RC" \
        "stderr: $(head -c 300 "$ERR")"
fi
run stream --device cpu --elements 100K --iters 1 --no-save --json
if [ "$RC" -eq 0 ] && grep -q '"triad_gbps"' "$OUT"; then
    ok "stream --device cpu runs STREAM"
else
    not_ok "stream --device cpu runs STREAM" "rc $RC"
fi

# ---- compress --device cuda and coll --backend nccl ----

# The exact line bench/gpu-check.sh runs.
bad "compress --device cuda (gpu-check's line)" "--device|cuda" \
    compress --device cuda --compressor topk:k=0.01 --elements 100M
bad "compress --device cuda --json" "--device|cuda" \
    compress --device cuda --compressor sign:ef=1 --elements 1M --json
bad "compress --device cuda --out DIR creates nothing" "--device|cuda" \
    compress --device cuda --compressor randk:k=0.1 --elements 1M \
    --out "$(next_out)"
bad "compress --device cuda, compressor without a kernel" "cuda" \
    compress --device cuda --compressor qsgd --elements 1M
bad "compress --device cuda, bad spec first" "topk|bogus" \
    compress --device cuda --compressor topk:bogus=1
bad "compress --device tpu" "--device|tpu" \
    compress --device tpu --compressor topk
bad "compress --device without a value" "--device" \
    compress --compressor topk --device
bad "coll --backend nccl" "--backend|nccl" coll --backend nccl -e 64
bad "coll --backend nccl --coll reduce_scatter" "nccl" \
    coll --backend nccl --coll reduce_scatter -e 64
bad "coll --backend bogus" "--backend|bogus" coll --backend bogus

# --help documents the device paths.
run compress --help
if [ "$RC" -eq 0 ] && grep -q -- '--device cuda' "$OUT"; then
    ok "compress --help documents --device cuda"
else
    not_ok "compress --help documents --device cuda" "rc $RC"
fi
run coll --help
if [ "$RC" -eq 0 ] && grep -q -- '--backend' "$OUT" && grep -q nccl "$OUT"; then
    ok "coll --help documents --backend nccl"
else
    not_ok "coll --help documents --backend nccl" "rc $RC"
fi

# The CPU path is untouched by --device cpu.
run compress --device cpu --compressor topk:k=0.01 --elements 100K --iters 1 \
    --warmup 0 --stream-gbps 10 --no-save --json
if [ "$RC" -eq 0 ] && grep -q '"wrong":0' "$OUT"; then
    ok "compress --device cpu runs (#wrong 0)"
else
    not_ok "compress --device cpu runs (#wrong 0)" "rc $RC" \
        "stderr: $(head -c 300 "$ERR")"
fi

bad "optim --comm nccl (host buffers)" "--comm|nccl|host memory" \
    optim --comm nccl --optim slamb --elements 1M

tap_end
