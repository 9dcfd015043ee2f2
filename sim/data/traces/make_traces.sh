#!/usr/bin/env bash
# make_traces.sh - record the communication plans the simulator replays for
# the optimizers that are not plain data-parallel, by running the real
# optimizer code over the record backend (lbscale optim --comm record:P).
#
#   sim/data/traces/make_traces.sh [BUILD_DIR]
#
# BERT-Large is recorded at full size.  BERT-XL (2.9B parameters) does not
# fit this machine's memory with optimizer state, so it is recorded on a
# copy with every tensor's first dimension divided by 32 (same tensor list);
# the simulator scales each call's bytes by n_model / n_trace of its layer
# (results/schema/trace-v1.md).  1-bit LAMB's fused buffer is on layer -2,
# which the simulator scales by the ratio of the whole models' sizes.
#
# Every trace is recorded at 64 ranks and again at 8 (--trace-rule 8): the
# header's bytes_rule says the bytes were checked at two rank counts, and
# calls whose bytes depend on P (1-bit LAMB's per-rank share of its fused
# buffer) carry bytes_split, exact at every multiple of 8 GPUs.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
BIN="${1:-$ROOT/build}/lbscale"
MODELS="$ROOT/sim/data/models"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

/usr/bin/python3 - "$MODELS/bert-xl.json" "$TMP/bert-xl-small.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for l in m["layers"]:
    l["shape"][0] = max(1, l["shape"][0] // 32)
json.dump({"layers": [{"name": l["name"], "shape": l["shape"]} for l in m["layers"]]},
          open(sys.argv[2], "w"))
PY

rec() {  # OUT LAYERS SPEC STEPS [COMPRESS]
    echo "trace: $1 ($3${5:+ + $5}, $4 steps)" >&2
    "$BIN" optim --optim "$3" ${5:+--compress "$5"} --comm record:64 \
        --trace-rule 8 --layers "$2" --steps "$4" --trace "$HERE/$1" --no-save >/dev/null
}
for model in bert-large bert-xl; do
    layers="$MODELS/bert-large.json"
    [ "$model" = bert-xl ] && layers="$TMP/bert-xl-small.json"
    rec "slamb-$model.jsonl"          "$layers" slamb          100
    rec "jointspar-$model.jsonl"      "$layers" jointspar       20
    rec "jointspar_lars-$model.jsonl" "$layers" jointspar_lars  20
    rec "dmsgd-$model.jsonl"          "$layers" dmsgd            3
    rec "decentlam-$model.jsonl"      "$layers" decentlam        3
    rec "onebit_lamb-$model.jsonl"    "$layers" \
        "onebit_lamb:freeze_step=10" 50
done
# LAMB with a gradient compressor on BERT-Large, for the demo's
# compression trade-off figure (`sim sweep --optim lamb_topk`): one step,
# the exchange is the same every step.  Full size: PowerSGD's factors do
# not scale with the first dimension.  About 50 s and 5.5 GB each.
rec "lamb_topk-bert-large.jsonl"     "$MODELS/bert-large.json" lamb 1 topk:k=0.01
rec "lamb_powersgd-bert-large.jsonl" "$MODELS/bert-large.json" lamb 1 powersgd:r=4
