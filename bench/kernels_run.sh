#!/usr/bin/env bash
# kernels_run.sh [OUTDIR] - the measurements behind docs/kernels.md: every
# optimizer step and compressor at 100M fp32 elements on 2 threads against
# the STREAM triad interleaved in the same process (median [min, max] of
# the pairs), SLAMB's step time over LAMB's as process pairs A B A B, and
# the kernel levels side by side (LBSCALE_ISA=c against the best), and the
# PyTorch peers in interleaved rounds (tools/peers/cpu_peers.py; skipped
# with a line when python3-torch is not installed), twice: as torch
# allocates by default (4 KiB pages) and with glibc's huge-page tunable,
# since lbscale's own arrays are on huge pages (lbscale/mem.h).
# Each part takes 1-3 minutes; on a shared machine run it under
#   flock /tmp/lbscale-heavy.lock bench/kernels_run.sh OUT
# Parts: PARTS="optim compress slamb isa peers" (default all).
set -eu
OUT=${1:-/tmp/kernels-run}
BIN=${LBSCALE:-build/lbscale}
N=${N:-100M}
T=${THREADS:-2}
PARTS=${PARTS:-"optim compress slamb isa peers"}
mkdir -p "$OUT"
export OMP_NUM_THREADS=$T
for part in $PARTS; do
case $part in
optim)
    for o in lamb adamw lars sgd dmsgd decentlam slamb onebit_lamb; do
        "$BIN" optim --optim $o --elements $N --threads $T --iters 7 \
            --warmup 2 --no-save 2>&1 | grep -v "^#" | tee -a "$OUT/optim.txt"
    done ;;
compress)
    for c in topk:k=0.01 thresh:k=0.01 randk:k=0.01 cyclick:k=0.01 sign \
             qsgd powersgd; do
        "$BIN" compress --compressor $c --elements $N --threads $T \
            --iters 7 --warmup 2 --no-save 2>&1 | grep -v "^#" |
            tee -a "$OUT/compress.txt"
    done ;;
slamb)
    python3 tools/pair_ratio.py --lbscale "$BIN" --rounds 5 \
        --label "slamb/lamb step time" \
        --a "optim --optim lamb --elements $N --threads $T --iters 5" \
        --b "optim --optim slamb --elements $N --threads $T --iters 5" |
        tee "$OUT/slamb_vs_lamb.txt" ;;
isa)
    for spec in "optim --optim lamb" "compress --compressor sign" \
                "compress --compressor qsgd"; do
        f=step_ms_median
        case $spec in compress*) f=compress_ms_median ;; esac
        python3 tools/pair_ratio.py --lbscale "$BIN" --rounds 3 \
            --field $f --label "$spec: best level / c" \
            --a "$spec --elements $N --threads $T --iters 5" --a-env LBSCALE_ISA=c \
            --b "$spec --elements $N --threads $T --iters 5" |
            tee -a "$OUT/isa.txt"
    done ;;
peers)
    if /usr/bin/python3 -c "import torch" 2>/dev/null; then
        /usr/bin/python3 tools/peers/cpu_peers.py --lbscale "$BIN" \
            --elements $N --threads $T --out "$OUT/peers" |
            tee "$OUT/peers.txt"
        GLIBC_TUNABLES=glibc.malloc.hugetlb=1 /usr/bin/python3 \
            tools/peers/cpu_peers.py --lbscale "$BIN" --elements $N \
            --threads $T --only lamb,adamw,sgd --out "$OUT/peers-thp" |
            tee "$OUT/peers-thp.txt"
    else
        echo "peers: skipped: python3-torch is not installed" |
            tee "$OUT/peers.txt"
    fi ;;
esac
done
