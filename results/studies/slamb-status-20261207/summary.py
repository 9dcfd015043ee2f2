#!/usr/bin/env python3
"""summary.py DIR - per load: the 12 runs' SLAMB/LAMB medians (their
median, range, how many <= 1.25) and LAMB's step ms, from DIR/runs.txt."""
import re
import statistics as st
import sys

rat, lamb = {}, {}
for line in open(sys.argv[1] + "/runs.txt"):
    m = re.match(r"(\w+) r\d+ [AB]: # pair: slamb step time / lamb step time = ([\d.]+)", line)
    if m:
        rat.setdefault(m.group(1), []).append(float(m.group(2)))
    m = re.match(r"(\w+) r\d+ [AB]:   lamb +\d+ +\d+ +\d+ +([\d.]+)", line)
    if m:
        lamb.setdefault(m.group(1), []).append(float(m.group(2)))
for k, v in rat.items():
    v = sorted(v)
    print(f"{k}: {len(v)} runs, median {st.median(v):.3f} [{v[0]:.3f}, {v[-1]:.3f}], "
          f"<= 1.25 in {sum(x <= 1.25 for x in v)}; LAMB {min(lamb[k]):.0f}-{max(lamb[k]):.0f} ms")
