"""refresh.py BASELINE RUN1 RUN2: the compressor rows of the kernels
baseline set to the lower of two ci.json runs' medians (each run's
compress.jsonl rows matching the row's "where"), PowerSGD's row moved to
sgemm_frac; optimizer rows untouched.  Prints old -> new; writes
BASELINE in place."""
import json, statistics, sys
path = sys.argv[1]
base = json.load(open(path))
runs = [[json.loads(l) for l in open(r + "/compress.jsonl")] for r in sys.argv[2:4]]
for m in base["metrics"]:
    if m["file"] != "compress":
        continue
    old = (m["field"], m["baseline"])
    if m["where"].get("compressor") == "powersgd":
        m["field"] = "sgemm_frac"
    meds = []
    for rows in runs:
        v = [x[m["field"]] for x in rows
             if all(x.get(k) == w for k, w in m["where"].items())]
        meds.append(statistics.median(v))
    m["baseline"] = min(meds)
    print("%-10s %s %.4f -> %s %.4f (runs: %s)" % (m["where"]["compressor"], old[0], old[1],
          m["field"], m["baseline"], ", ".join("%.4f" % x for x in meds)))
json.dump(base, open(path, "w"), indent=2)
open(path, "a").write("\n")
