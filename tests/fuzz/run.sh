#!/bin/sh
# run.sh [SECONDS] [JOBS] - build the fuzzer, seed a corpus from the presets
# (platforms, models, and small traces), and fuzz for SECONDS (default 60).
# Crashes land in build-fuzz/ as crash-*; the corpus in build-fuzz/corpus.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$ROOT/build-fuzz
SECS=${1:-60}
"$ROOT/tests/fuzz/build.sh" "$OUT" >/dev/null
SEEDS=$OUT/seeds
mkdir -p "$SEEDS" "$OUT/corpus"
for f in "$ROOT"/sim/data/platforms/*.json; do
    { printf P; cat "$f"; } >"$SEEDS/P-$(basename "$f")"
done
for f in "$ROOT"/sim/data/models/*.json; do
    # the smaller presets whole; the big ones cut to their first layers
    { printf M; head -c 60000 "$f"; } >"$SEEDS/M-$(basename "$f")"
done
printf 'M{"format": "lbscale-model", "version": 1, "name": "t", "efficiency": 0.5, "bucket_mb": 0.001, "layers": [{"name": "a", "n": 1000, "fwd_ms": 1}, {"name": "b", "shape": [30, 40], "fwd_gflops": 2}]}' >"$SEEDS/M-tiny"
H='{"format": "lbscale-trace", "version": 1, "optim": "slamb", "params": "k=0.1,topology=exp", "compress": null, "ranks": 8, "steps": 4, "layers": [{"name": "a", "n": 100, "ndim": 2}, {"name": "b", "n": 10, "ndim": 1}]}'
{ printf 'T%s\n' "$H"
  for s in 1 2 3 4; do
    printf '{"step": %d, "layer": 1, "coll": "allreduce", "bytes": 40}\n' $s
    printf '{"step": %d, "layer": 0, "coll": "allreduce", "bytes": 40}\n' $s
    printf '{"step": %d, "layer": -1, "coll": "allreduce", "bytes": 4}\n' $s
  done
  printf '{"step": 4, "layer": 0, "coll": "allreduce", "bytes": 400}\n'
} >"$SEEDS/T-slamb"
{ printf 'T%s\n' "$(echo "$H" | sed 's/slamb/onebit_lamb/')"
  printf '{"step": 1, "layer": 0, "coll": "allreduce", "bytes": 400}\n'
  for s in 2 3 4; do
    printf '{"step": %d, "layer": -1, "coll": "alltoall", "bytes": 16}\n' $s
    printf '{"step": %d, "layer": -1, "coll": "allgather", "bytes": 2}\n' $s
    printf '{"step": %d, "layer": 0, "coll": "neighbor", "bytes": 8}\n' $s
    printf '{"step": %d, "layer": -1, "coll": "barrier", "bytes": 0}\n' $s
    printf '{"step": %d, "layer": 1, "coll": "bcast", "bytes": 8}\n' $s
  done
} >"$SEEDS/T-onebit"
cd "$OUT"
exec ./fuzz_sim_json -max_total_time="$SECS" -max_len=70000 -rss_limit_mb=2048 \
    -print_final_stats=1 corpus "$SEEDS"
