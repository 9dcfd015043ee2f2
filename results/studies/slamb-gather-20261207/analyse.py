#!/usr/bin/env python3
"""analyse.py RUN_DIR - medians per build and k from run.sh's pairs.txt,
and the round-by-round differences NEW - OLD."""
import statistics as st
import sys

rows = [l.split() for l in open(sys.argv[1] + "/pairs.txt") if not l.startswith("#")]
for k in ("0.01", "0.1"):
    old = [float(r[2]) for r in rows if r[0] == "old" and r[1] == k]
    new = [float(r[2]) for r in rows if r[0] == "new" and r[1] == k]
    lamb = [float(r[5]) for r in rows if r[1] == k]
    d = [n - o for o, n in zip(old, new)]
    print(f"k={k}: old {st.median(old):.3f} new {st.median(new):.3f} "
          f"(rounds {len(d)}; new lower in {sum(x < 0 for x in d)}; "
          f"median difference {st.median(d):+.3f}; LAMB {min(lamb):.2f}-{max(lamb):.2f} ms)")
    print("  differences: " + " ".join(f"{x:+.3f}" for x in d))
a = [float(r[2]) for r in rows if r[0] == "old-avx2"]
print(f"k=0.01 old at avx2: {st.median(a):.3f} [{min(a):.3f}, {max(a):.3f}] ({len(a)} runs)")
