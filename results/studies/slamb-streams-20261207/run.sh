#!/usr/bin/env bash
# run.sh OUT [ROUNDS] - build streams.c and run its four modes in turn,
# ROUNDS times (100M elements, 2 threads, 5 timed rounds of each kernel
# per process).  Under the machine's heavy lock:
#   flock /tmp/lbscale-heavy.lock results/studies/slamb-streams-20261207/run.sh OUT 4
set -eu
D=${1:?usage: run.sh OUT [ROUNDS]} R=${2:-4}
mkdir -p "$D"
gcc -O2 -Wall -fopenmp -mavx512f -mavx512bw -mavx512vl -o "$D/streams" \
    "$(dirname "$0")/streams.c"
{ date -u +"start %FT%TZ"; uptime; } >"$D/window.txt"
for ((r = 0; r < R; r++)); do
    for md in 0 1 2 3; do
        OMP_NUM_THREADS=2 "$D/streams" 100000000 5 $md >>"$D/runs.txt"
    done
done
{ date -u +"end %FT%TZ"; uptime; } >>"$D/window.txt"
rm -f "$D/streams"
python3 - "$D/runs.txt" <<'PY'
import re, statistics as st, sys
runs = open(sys.argv[1]).read().split("mode ")[1:]
by = {}
for r in runs:
    md = int(r.split()[0])
    p1, up = [float(x) for x in re.findall(r"ratio ([0-9.]+)", r)]
    by.setdefault(md, []).append((p1, up))
for md in sorted(by):
    p1 = [x[0] for x in by[md]]; up = [x[1] for x in by[md]]
    print(f"mode {md}: pass-1 shape {st.median(p1):.3f} [{min(p1):.3f}, {max(p1):.3f}]"
          f"  update shape {st.median(up):.3f} [{min(up):.3f}, {max(up):.3f}]  ({len(p1)} runs)")
PY
