#!/bin/bash
# SLAMB/LAMB step ratio (in-process pairs, --pair) on 2 threads and on 1, in turn
N=/tmp/i34/cur/build/lbscale
date -u; uptime
for r in 1 2 3; do
  for T in 2 1; do
    echo "threads=$T round=$r $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    OMP_NUM_THREADS=$T $N optim --optim lamb --pair slamb --elements 100M --threads $T --iters 9 --warmup 2 --stream-gbps 80 --json --no-save 2>/dev/null |
      python3 -c "import json,sys; r=json.loads(sys.stdin.readline()); print('  lamb %.1f ms  slamb/lamb median %.3f [%.3f, %.3f]' % (r['step_ms_median'], r['pair_ratio_median'], r['pair_ratio_min'], r['pair_ratio_max']))"
  done
done
date -u
