#!/usr/bin/python3
"""summary.py DIR - the table of DIR/runs.txt (run.sh): per run SLAMB/LAMB
(median [min, max] of 9 pairs), LAMB's step ms and the in-place reference
GB/s; then per load and binary the median of the runs' medians, all runs
and by the guest's bandwidth mode (in-place below or above 58 GB/s)."""
import re, statistics, sys

rows = {}
for line in open(sys.argv[1] + "/runs.txt"):
    tag, _, rest = line.partition(": ")
    load, r, b = tag.split()
    d = rows.setdefault((load, r, b), {})
    m = re.search(r"= ([\d.]+) \[([\d.]+), ([\d.]+)\]", rest)
    if "# pair:" in rest and m:
        d["ratio"] = tuple(float(x) for x in m.groups())
    f = rest.split()
    if len(f) > 10 and f[0] == "lamb":  # optim elements layers threads step min max Melem B GB/s in-place
        d["lamb_ms"], d["inplace"] = float(f[4]), float(f[10])
print("| load | round | binary | SLAMB/LAMB [min, max] | LAMB ms | in-place GB/s |")
print("|---|--:|---|---|--:|--:|")
for (load, r, b), d in rows.items():
    rt = d.get("ratio")
    print("| %s | %s | %s | %s | %s | %s |" % (
        load, r[1:], b, "%.3f [%.3f, %.3f]" % rt if rt else "-",
        d.get("lamb_ms", "-"), d.get("inplace", "-")))
MODE = 58.0     # GB/s: between the guest's two modes (docs/kernels.md)
print("\n| load | binary | mode | runs | median of medians | their range | LAMB ms median |")
print("|---|---|---|--:|--:|---|--:|")
for load in dict.fromkeys(k[0] for k in rows):
    for b in ("A", "B"):
        for mode in ("all", "low", "high"):
            ds = [d for k, d in rows.items() if k[0] == load and k[2] == b
                  and "ratio" in d and (mode == "all" or
                  (d["inplace"] < MODE) == (mode == "low"))]
            if not ds:
                continue
            med = [d["ratio"][0] for d in ds]
            print("| %s | %s | %s | %d | %.3f | [%.3f, %.3f] | %.1f |" % (
                load, b, mode, len(ds), statistics.median(med), min(med),
                max(med), statistics.median(d["lamb_ms"] for d in ds)))
