#!/usr/bin/env bash
# ci_geomean.sh: per pair of CI-suite runs, the geometric mean of B/A over
# the optimizers' step times, roofline ratios, the compressors' GB/s and
# the triad (lbscale compare --json), with min and max
cd "$(dirname "$0")"
for p in "ci-default-1 ci-passive-1" "ci-default-2 ci-passive-2" \
         "ci-default-1 ci-default-2" "ci-passive-1 ci-passive-2"; do
    set -- $p
    ../../../build/lbscale compare "$1" "$2" --json 2>/dev/null |
        /usr/bin/python3 -c "
import json, sys, math
rows = [json.loads(l) for l in sys.stdin][:-1]
for verb, met in (('optim', 'step_ms_median'), ('optim', 'roofline_frac'),
                  ('compress', 'gbps'), ('stream', 'triad_gbps')):
    xs = [r['b'] / r['a'] for r in rows
          if r['verb'] == verb and r['metric'] == met and r['a'] and r['b']]
    g = math.exp(sum(map(math.log, xs)) / len(xs))
    print('| %s -> %s | %s %s | %d | %.3f | %.2f | %.2f |' % (
        sys.argv[1], sys.argv[2], verb, met, len(xs), g, min(xs), max(xs)))
" "$1" "$2"
done
