#!/bin/bash
# compress cyclick before/after, and sign as the yardstick
export OMP_NUM_THREADS=2
B=/tmp/i34/base/build/lbscale; N=/tmp/i34/new/build/lbscale
date -u
flock /tmp/lbscale-heavy.lock farm-bench -n 3 --warmup 0 --timeout 600 \
  --vs "$B compress --compressor cyclick:k=0.01 --elements 100M --no-save" \
  -- $N compress --compressor cyclick:k=0.01 --elements 100M --no-save
date -u
flock /tmp/lbscale-heavy.lock farm-bench -n 5 --warmup 1 --timeout 600 \
  --vs "$N compress --compressor sign --elements 100M --no-save" \
  -- $N compress --compressor cyclick:k=0.01 --elements 100M --no-save
date -u
