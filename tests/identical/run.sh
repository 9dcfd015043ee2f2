#!/bin/sh
# tests/identical/run.sh - the redesign's "no behaviour change" check.
#
#   tests/identical/run.sh BASE_REV [BUILD_DIR]
#
# Builds BASE_REV in a temporary worktree and compares, byte for byte, what
# it and BUILD_DIR's lbscale (default build/) print for:
#   - `sim sweep` over every model x platform preset (each model with every
#     optimizer that has a trace preset for it, and the data-parallel
#     ones), `sim coll` on every platform, and `sim step --timeline` /
#     `sim netsweep` / `sim anchors`,
#   - the trace-v1 files `optim --comm record:P` writes for every optimizer,
#     and for lamb with every compressor (plus a few non-default specs),
#   - `train`'s per-epoch losses and accuracies for every optimizer (MLP,
#     --threads 1).
# The presets, optimizers and compressors are the BASE build's (its `sim
# list`, `optim --list`, `compress --list`), so a new one is covered with
# no edit here; one only the current build has has nothing to compare with.
# Wall-clock columns are not compared (they are measurements).  A field
# the current build adds on purpose is named in NEW_FIELDS (space list,
# e.g. NEW_FIELDS=samples_layers): it is removed from the current build's
# outputs before comparing, and the script says so.  Exit 0 when all
# outputs are identical, 1 on any difference (the diff is printed).
set -eu
base=${1:?usage: tests/identical/run.sh BASE_REV [BUILD_DIR]}
head_build=$(cd "${2:-build}" && pwd)
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git -C "$root" worktree add --detach "$tmp/base" "$base" >/dev/null 2>&1
(cd "$tmp/base" && meson setup "$tmp/bbuild" -Dcuda=disabled >/dev/null &&
 ninja -C "$tmp/bbuild" lbscale >/dev/null)

# The names of the base build's registries and presets (lists BIN DATA):
# "sweep MODEL OPTIM,...", "platform NAME", "optim NAME", "compress NAME".
lists() {
    LBSCALE_SIM_DATA=$2 "$1" sim list --json | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
for m in d["models"]:
    tr = []
    for t in d["traces"]:   # OPTIM-MODEL[-rP]
        o, _, rest = t.partition("-")
        if (rest == m or rest.startswith(m + "-r")) and o not in tr:
            tr.append(o)
    print("sweep", m, ",".join(d["data_parallel"] + tr))
for p in d["platforms"]:
    print("platform", p)'
    "$1" optim --list | sed -n 's/^  \([a-z0-9_]*\) - .*/optim \1/p'
    "$1" compress --list | sed -n 's/^  \([a-z0-9_]*\) - .*/compress \1/p'
}

capture() { # capture LBSCALE SIMDATA OUTDIR
    bin=$1 data=$2 out=$3
    mkdir -p "$out"
    export LBSCALE_SIM_DATA="$data" OMP_NUM_THREADS=1
    platforms=$(sed -n 's/^platform //p' "$tmp/lists")
    optims=$(sed -n 's/^optim //p' "$tmp/lists")
    sed -n 's/^sweep //p' "$tmp/lists" | while read -r m opts; do
        for p in $platforms; do
            "$bin" sim sweep --model "$m" --platform "$p" --optim "$opts" \
                --gpus 8,64,1024,4096 --json --no-save >"$out/sweep-$m-$p" 2>&1 || true
        done
    done
    "$bin" sim step --model bert-xl --platform dgx-h100 --optim slamb --gpus 256 \
        --timeline --json --no-save >"$out/step" 2>&1 || true
    "$bin" sim netsweep --model bert-xl --platform dgx-a100 \
        --optim lamb,slamb,onebit_lamb --gpus 1024 --json --no-save >"$out/netsweep" 2>&1 || true
    "$bin" sim anchors --json --no-save >"$out/anchors" 2>&1 || true
    for p in $platforms; do
        for c in allreduce allgather alltoall; do
            "$bin" sim coll --platform "$p" --coll $c --bytes 64M --gpus 64 \
                --json --no-save >"$out/coll-$p-$c" 2>&1 || true
        done
    done
    for o in $optims $(sed -n 's/^compress /lamb+/p' "$tmp/lists") \
             lamb+topk:k=0.01,ef=1 sgd+qsgd lamb+powersgd:rank=2 sgd+randk:k=0.1; do
        opt=${o%%+*} comp=
        [ "$o" != "$opt" ] && comp="--compress ${o#*+}"
        f="$out/rec-$(echo "$o" | tr ':,=+' '____')"
        # shellcheck disable=SC2086
        "$bin" optim --optim "$opt" $comp --comm record:64 --steps 12 --layers bert \
            --elements 2M --trace "$f.jsonl" --no-save >"$f.out" 2>&1 || true
        # the trace header names the lbscale revision: not behaviour
        [ -f "$f.jsonl" ] && sed -i 's/"git_rev": *"[^"]*"//; s/"git":"[^"]*"//' "$f.jsonl"
    done
    for o in $optims slamb:k=0.1,H=10; do
        "$bin" train --optim "$o" --subset 2048 --test-subset 512 --epochs 2 \
            --global-batch 256 --threads 1 --no-trace --json --no-save 2>&1 |
            sed 's/"[a-z_]*_s": *[0-9.e+-]*,\{0,1\}//g; s/"[a-z_]*time[a-z_]*": *[0-9.e+-]*,\{0,1\}//g' \
            >"$out/train-$(echo "$o" | tr ':,=' '___')" || true
    done
    # where the checkout lies is not behaviour: rows name their preset files
    find "$out" -type f -exec sed -i "s|$data|DATA|g; s|$(dirname "$data")|ROOT|g" {} +
}
lists "$tmp/bbuild/lbscale" "$tmp/base/sim/data" >"$tmp/lists"
for k in sweep platform optim compress; do
    grep -q "^$k " "$tmp/lists" || { echo "$base lists no $k: nothing to compare"; exit 1; }
done
capture "$tmp/bbuild/lbscale" "$tmp/base/sim/data" "$tmp/a"
capture "$head_build/lbscale" "$root/sim/data" "$tmp/b"
for f in ${NEW_FIELDS:-}; do
    find "$tmp/b" -type f -exec sed -i -E "s/\"$f\": *[^,}]*,?//g" {} +
    echo "not compared: the field \"$f\" this build adds (NEW_FIELDS)"
done
n=$(ls "$tmp/a" | wc -l)
if diff -r "$tmp/a" "$tmp/b"; then
    echo "identical: $n outputs of $base and $(git -C "$root" rev-parse --short HEAD) (worktree) agree byte for byte"
else
    echo "DIFFERENT: see above ($n outputs compared)"
    exit 1
fi
