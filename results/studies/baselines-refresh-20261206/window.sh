#!/usr/bin/env bash
# two quiet ci.json runs for the kernels baseline (compressors on 2 MiB pages)
cd "$(dirname "$0")/../../.."
{ date -u +"start %FT%TZ"; git rev-parse --short HEAD; uptime; } > results/studies/baselines-refresh-20261206/window.txt
for r in 1 2; do
  rm -rf results/studies/baselines-refresh-20261206/cg$r
  build/lbscale suite bench/suites/ci.json --no-plot --out results/studies/baselines-refresh-20261206/cg$r > results/studies/baselines-refresh-20261206/cg$r.out 2>&1
done
{ date -u +"end %FT%TZ"; uptime; } >> results/studies/baselines-refresh-20261206/window.txt
