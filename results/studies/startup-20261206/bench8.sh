#!/bin/bash
# OpenBLAS kernel families side by side: sgemm 1024^3 on 2 threads, in turn
N=/tmp/i34/new3/build/lbscale
export OMP_NUM_THREADS=2
echo "== start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in 1 2 3 4 5; do
  for ct in SkylakeX Cooperlake Haswell; do
    OPENBLAS_CORETYPE=$ct LBSCALE_BLAS_AUTO=0 $N stream --elements 1M --iters 1 --threads 2 --json --no-save 2>/dev/null |
      python3 -c "import json,sys; r=json.loads(sys.stdin.readline()); print('$r $ct', r['blas_core'], '%.1f' % r['sgemm_gflops'], 'fma %.1f' % r['fma_peak_gflops'])"
  done
done
echo "== end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
