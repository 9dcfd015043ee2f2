#!/bin/sh
# build.sh [OUT_DIR] - build the simulator JSON fuzzer with clang + libFuzzer
# (ASan + UBSan).  Not part of the default build.  Output: OUT_DIR
# (default build-fuzz/ at the repository root)/fuzz_sim_json.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/build-fuzz}
CC=${CC:-clang}
mkdir -p "$OUT"
$CC -std=c11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined \
    -I"$ROOT/sim" -I"$ROOT/core/include" \
    "$ROOT"/sim/json.c "$ROOT"/sim/platform.c "$ROOT"/sim/model.c \
    "$ROOT"/sim/trace.c "$ROOT"/sim/coll.c "$ROOT"/sim/engine.c \
    "$ROOT"/sim/sweep.c "$ROOT"/sim/calib.c \
    "$ROOT"/core/error.c "$ROOT"/core/param.c \
    "$ROOT"/tests/fuzz/fuzz_sim_json.c \
    -ljansson -lm -o "$OUT/fuzz_sim_json"
echo "$OUT/fuzz_sim_json"
