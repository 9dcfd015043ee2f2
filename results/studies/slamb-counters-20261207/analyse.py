#!/usr/bin/env python3
"""analyse.py RUN_DIR - medians per build and configuration from run.sh's
pairs.txt, and the round-by-round differences NEW - OLD."""
import statistics as st
import sys

rows = [l.split() for l in open(sys.argv[1] + "/pairs.txt") if not l.startswith("#")]
for c in dict.fromkeys(r[1] for r in rows):
    old = [float(r[2]) for r in rows if r[0] == "old" and r[1] == c]
    new = [float(r[2]) for r in rows if r[0] == "new" and r[1] == c]
    lamb = [float(r[5]) for r in rows if r[1] == c]
    d = [n - o for o, n in zip(old, new)]
    print(f"{c}: old {st.median(old):.3f} new {st.median(new):.3f} "
          f"(rounds {len(d)}; new lower in {sum(x < 0 for x in d)}; "
          f"median difference {st.median(d):+.3f}; LAMB {min(lamb):.2f}-{max(lamb):.2f} ms)")
    print("  differences: " + " ".join(f"{x:+.3f}" for x in d))
