#!/bin/bash
# e31df3f (ids in the spare segment, SLAMB's one scratch) against fdb67cf, and SLAMB/LAMB again
export OMP_NUM_THREADS=2
N=/tmp/i34/new/build/lbscale; M=/tmp/i34/new2/build/lbscale
echo "== start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== SLAMB vs LAMB, one-step processes (e31df3f)"
farm-bench -n 5 --warmup 1 --timeout 600 \
  --vs "$M optim --optim lamb --elements 100M --threads 2 --iters 1 --warmup 0 --stream-gbps 80 --no-save" \
  -- $M optim --optim slamb --elements 100M --threads 2 --iters 1 --warmup 0 --stream-gbps 80 --no-save
echo "== SLAMB one-step process, e31df3f / fdb67cf"
farm-bench -n 5 --warmup 0 --timeout 600 \
  --vs "$N optim --optim slamb --elements 100M --threads 2 --iters 1 --warmup 0 --stream-gbps 80 --no-save" \
  -- $M optim --optim slamb --elements 100M --threads 2 --iters 1 --warmup 0 --stream-gbps 80 --no-save
echo "== the mask alone, e31df3f / fdb67cf"
farm-bench -n 5 --warmup 0 --timeout 600 \
  --vs "/tmp/i34/mt_new2 100000000 0.01 1" -- /tmp/i34/mt_new3 100000000 0.01 1
echo "== end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
