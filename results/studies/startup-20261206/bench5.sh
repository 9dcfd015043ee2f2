#!/bin/bash
# SLAMB/LAMB step ratio on CPU 0 (1 thread) beside a companion on CPU 1:
# one that streams memory, one that only computes, in turn
N=/tmp/i34/cur/build/lbscale
for r in 1 2 3; do
  for comp in streamer spinner; do
    taskset -c 1 /tmp/i34/$comp & cp=$!
    sleep 1
    echo "companion=$comp round=$r $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    OMP_NUM_THREADS=1 taskset -c 0 $N optim --optim lamb --pair slamb --elements 100M --threads 1 --iters 9 --warmup 2 --stream-gbps 80 --json --no-save 2>/dev/null |
      python3 -c "import json,sys; r=json.loads(sys.stdin.readline()); print('  lamb %.1f ms  slamb/lamb median %.3f [%.3f, %.3f]' % (r['step_ms_median'], r['pair_ratio_median'], r['pair_ratio_min'], r['pair_ratio_max']))"
    kill $cp; wait $cp 2>/dev/null
  done
done
