#!/usr/bin/python3
"""summary4.py DIR - run 4 (run4.sh): per optimizer the rounds' B/A of the
step ms median and of the roofline ratio (median [min, max])."""
import statistics, sys

rows = {}
for line in open(sys.argv[1] + "/runs.txt"):
    tag, _, rest = line.partition(": ")
    r, x = tag.split()
    f = rest.split()    # optim elements layers threads step min max Melem B GB/s in-place roofline
    rows[(f[0], r, x)] = (float(f[4]), float(f[11]))
print("| optimizer | rounds | step ms, B / A | roofline ratio, B / A | A's step ms | B's step ms |")
print("|---|--:|---|---|---|---|")
for o in dict.fromkeys(k[0] for k in rows):
    rs = sorted({k[1] for k in rows if k[0] == o})
    st = [rows[(o, r, "B")][0] / rows[(o, r, "A")][0] for r in rs]
    rf = [rows[(o, r, "B")][1] / rows[(o, r, "A")][1] for r in rs]
    fmt = lambda v: "%.3f [%.3f, %.3f]" % (statistics.median(v), min(v), max(v))
    print("| %s | %d | %s | %s | %s | %s |" % (o, len(rs), fmt(st), fmt(rf),
          fmt([rows[(o, r, "A")][0] for r in rs]).replace(".000", ""),
          fmt([rows[(o, r, "B")][0] for r in rs])))
