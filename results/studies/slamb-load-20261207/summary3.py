#!/usr/bin/python3
"""summary3.py DIR - run 3's table (run3.sh): per round SLAMB/LAMB beside
the busy loop and beside the STREAM neighbour, their difference, and the
median of the differences."""
import re, statistics, sys

d = sys.argv[1]
rows = {}
for line in open(d + "/runs.txt"):
    tag, _, rest = line.partition(": ")
    load, r, _b = tag.split()
    x = rows.setdefault((load, r), {})
    m = re.search(r"= ([\d.]+) \[([\d.]+), ([\d.]+)\]", rest)
    if "# pair:" in rest and m:
        x["ratio"], x["rng"] = float(m.group(1)), (m.group(2), m.group(3))
    f = rest.split()
    if len(f) > 10 and f[0] == "lamb":
        x["lamb"], x["ip"] = float(f[4]), float(f[10])
print("| round | busy: SLAMB/LAMB [min, max] | LAMB ms | in-place GB/s "
      "| stream: SLAMB/LAMB [min, max] | LAMB ms | in-place GB/s | stream - busy |")
print("|--:|---|--:|--:|---|--:|--:|--:|")
diffs = []
for r in sorted({k[1] for k in rows}, key=lambda x: int(x[1:])):
    b, s = rows.get(("busy", r), {}), rows.get(("stream", r), {})
    if "ratio" not in b or "ratio" not in s:
        continue
    diffs.append(s["ratio"] - b["ratio"])
    print("| %s | %.3f [%s, %s] | %.1f | %.1f | %.3f [%s, %s] | %.1f | %.1f | %+.3f |" % (
        r[1:], b["ratio"], *b["rng"], b["lamb"], b["ip"],
        s["ratio"], *s["rng"], s["lamb"], s["ip"], diffs[-1]))
print("\nstream - busy, same round: median %+.3f [%+.3f, %+.3f], stream higher "
      "in %d of %d rounds" % (statistics.median(diffs), min(diffs), max(diffs),
                              sum(x > 0 for x in diffs), len(diffs)))
