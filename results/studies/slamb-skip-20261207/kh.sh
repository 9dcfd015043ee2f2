#!/usr/bin/env bash
# kh.sh ROUNDS TREE... - build kh.c against each tree's AVX-512 kernel
# archive (TREE/build/core/liblbskern_avx512.a, a release build) and run
# the builds in turn, ROUNDS times, one per CPU 1 process; per tree the
# median of SLAMB's passes over LAMB's (each run: min over 2000 reps of
# one 16K-element chunk, in L2), q1/p1 (pass 1) and qupd/axpy (update).
set -eu
R=${1:?usage: kh.sh ROUNDS TREE...}; shift
H=$(dirname "$0"); B=$(mktemp -d)
for t in "$@"; do
    gcc -O2 -DSK=lbs_slamb_kern_avx512 -o "$B/$(basename "$t")" "$H/kh.c" \
        -I"$t/core/kern" -I"$t/core/optim" -I"$t/core/include" -I"$t/build/core" \
        -Wl,--whole-archive "$t/build/core/liblbskern_avx512.a" \
        -Wl,--no-whole-archive -lm -fopenmp
done
for ((r = 0; r < R; r++)); do
    for t in "$@"; do
        echo "$(basename "$t") $(taskset -c 1 "$B/$(basename "$t")" 16384 2000)"
    done
done | tee "$B/runs.txt" | python3 -c '
import re, statistics as st, sys
d = {}
for l in sys.stdin:
    f = dict(re.findall(r"(p1|axpy|q1|qfix|qupd|ratio) ([0-9.]+)", l))
    d.setdefault(l.split()[0], []).append({k: float(x) for k, x in f.items()})
for t, v in d.items():
    r = [x["ratio"] for x in v]
    q1 = st.median([x["q1"] / x["p1"] for x in v])
    up = st.median([x["qupd"] / x["axpy"] for x in v])
    print("%s: slamb/lamb %.3f [%.3f, %.3f] q1/p1 %.3f qupd/axpy %.3f (%d runs)"
          % (t, st.median(r), min(r), max(r), q1, up, len(v)))'
cat "$B/runs.txt" >&2
rm -rf "$B"
