#!/bin/bash
# 8af6faf (radix chunks) against main (5b3e5d9)
export OMP_NUM_THREADS=2
B=/tmp/i34/base/build/lbscale; R=/tmp/i34/new3/build/lbscale
echo "== start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== the mask alone, 8af6faf / 5b3e5d9"
farm-bench -n 3 --warmup 0 --timeout 600 \
  --vs "/tmp/i34/mt_base 100000000 0.01 1" -- /tmp/i34/mt_new4 100000000 0.01 1
echo "== compress cyclick, 8af6faf / 5b3e5d9"
farm-bench -n 3 --warmup 0 --timeout 600 \
  --vs "$B compress --compressor cyclick:k=0.01 --elements 100M --no-save" \
  -- $R compress --compressor cyclick:k=0.01 --elements 100M --no-save
echo "== compress cyclick / sign, 8af6faf"
farm-bench -n 3 --warmup 0 --timeout 600 \
  --vs "$R compress --compressor sign --elements 100M --no-save" \
  -- $R compress --compressor cyclick:k=0.01 --elements 100M --no-save
echo "== end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
