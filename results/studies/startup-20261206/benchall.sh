#!/bin/bash
# everything that needs the machine, in one go under the lock
export OMP_NUM_THREADS=2
B=/tmp/i34/base/build/lbscale; N=/tmp/i34/new/build/lbscale
echo "== start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== SLAMB vs LAMB, one-step processes (new, fdb67cf)"
farm-bench -n 5 --warmup 1 --timeout 600 \
  --vs "$N optim --optim lamb --elements 100M --threads 2 --iters 1 --warmup 0 --stream-gbps 80 --no-save" \
  -- $N optim --optim slamb --elements 100M --threads 2 --iters 1 --warmup 0 --stream-gbps 80 --no-save
echo "== SLAMB one-step process, after (fdb67cf) / before (5b3e5d9)"
farm-bench -n 3 --warmup 0 --timeout 600 \
  --vs "$B optim --optim slamb --elements 100M --threads 2 --iters 1 --warmup 0 --stream-gbps 80 --no-save" \
  -- $N optim --optim slamb --elements 100M --threads 2 --iters 1 --warmup 0 --stream-gbps 80 --no-save
echo "== SLAMB vs LAMB, one-step processes (before, 5b3e5d9)"
farm-bench -n 3 --warmup 0 --timeout 600 \
  --vs "$B optim --optim lamb --elements 100M --threads 2 --iters 1 --warmup 0 --stream-gbps 80 --no-save" \
  -- $B optim --optim slamb --elements 100M --threads 2 --iters 1 --warmup 0 --stream-gbps 80 --no-save
echo "== end part 1 $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
./bench4.sh
./bench3.sh
echo "== end $(date -u +%T)"
