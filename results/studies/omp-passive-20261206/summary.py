#!/usr/bin/python3
"""summary.py DIR: one row per (mode, round, configuration) from run.sh's
quiet.txt / load.txt - the triad (bandwidth mode), LAMB's 100M step and
SLAMB/LAMB from the pair run, the short steps, training's train_s."""
import json, re, sys
d = sys.argv[1]
rows = {}
for mode in ("quiet", "load"):
    try:
        lines = open("%s/%s.txt" % (d, mode)).read().splitlines()
    except OSError:
        continue
    for l in lines:
        m = re.match(r"(\w+) r(\d+) (\w+) (\w+): (.*)", l)
        if not m:
            continue
        key = (m[1], int(m[2]), m[3])
        kind, rest = m[4], m[5]
        r = rows.setdefault(key, {})
        f = rest.split()
        if kind == "stream" and f and f[0].isdigit():
            r["triad"] = float(f[3])
        elif kind == "pair" and "slamb step time / lamb" in rest:
            r["ratio"] = float(rest.split("=")[1].split()[0])
        elif kind in ("pair", "sgd16M", "lamb1M") and f and f[0] in (
                "lamb", "sgd") and len(f) > 4 and f[1].isdigit():
            r[kind + "_ms"] = float(f[4])
        elif kind == "train" and rest.startswith("{"):
            j = json.loads(rest)
            r["train_s"] = j["train_s"]
cols = ["triad", "pair_ms", "ratio", "sgd16M_ms", "lamb1M_ms", "train_s"]
print("| mode | round | wait | triad GB/s | LAMB 100M ms | SLAMB/LAMB | "
      "SGD 16M ms | LAMB 1M ms | train 2 epochs s |")
print("|---|--:|---|--:|--:|--:|--:|--:|--:|")
for k in sorted(rows):
    r = rows[k]
    print("| %s | %d | %s | " % k + " | ".join(
        "%.3f" % r[c] if c == "ratio" and c in r else
        "%.2f" % r[c] if c in r else "-" for c in cols) + " |")
