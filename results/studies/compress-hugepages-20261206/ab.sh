#!/usr/bin/env bash
# ab.sh OUT ROUNDS: compressors timed by two binaries, interleaved per
# compressor and round (old new new old ...), one JSON row per process
set -euo pipefail
OUT=$1; R=${2:-8}
cd /work/main
CS="none fp16 bf16 topk thresh randk cyclick sign qsgd powersgd"
for r in $(seq "$R"); do
  for c in $CS; do
    if [ $((r % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
    for b in $order; do
      build/lbscale-$b compress --compressor "$c" --elements 16M --threads 1 \
        --seed 1 --no-save --json 2>/dev/null | tail -1 |
        /usr/bin/python3 -c "import json,sys; x=json.loads(sys.stdin.read()); x['bin']='$b'; x['round']=$r; print(json.dumps(x))" >>"$OUT"
    done
  done
done
