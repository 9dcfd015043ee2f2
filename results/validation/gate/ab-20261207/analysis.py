#!/usr/bin/python3
"""analysis.py OUT - every pair of the interleaved gate benchmark, with the
row that decided it: for a planted pair the slowed kernel's gated ratio
(change, p, p after Holm over the family, floor, verdict); for an A/A
pair the tested row with the smallest Holm p.  Markdown on stdout."""
import json
import sys

out = sys.argv[1]
pairs = [json.loads(l) for l in open(out + "/gate.jsonl")]


def rows(p):
    tag = ("%s-%s" % (p["a"], p["b"])).replace("/", ".")
    rs = [json.loads(l) for l in open("%s/runs/%s.json" % (out, tag))]
    return [r for r in rs[:-1] if r.get("p") is not None]


def fmt(r):
    return "%s %s %+.1f%%, p %.5f, Holm %.4f, floor %.1f%%, %s" % (
        r["config"].split(",")[0], r["metric"], 100 * r["change"], r["p"],
        r["p_holm"], 100 * r["floor"], r["verdict"])


print("| pair | kind | exit | deciding row |")
print("|---|---|--:|---|")
aa = pl = fa = caught = 0
for p in pairs:
    rs = rows(p)
    if p["kind"] == "planted":
        verb, name = p["planted"].split("/")
        key = ("optim=" if verb == "optim" else "compressor=") + name
        mine = [r for r in rs if r["config"].split(",")[0] == key]
        what = "; ".join(fmt(r) for r in mine)
        kind = "planted %s: %s" % (p["planted"],
                                   "caught" if p["caught"] else "MISSED")
        pl += 1
        caught += p["caught"]
    else:
        r = min(rs, key=lambda r: r["p_holm"])
        what = "smallest Holm p: " + fmt(r)
        kind = "A/A"
        aa += 1
        fa += p["exit"] != 0
    others = [x for x in p["regressed"]
              if p["kind"] != "planted" or p["planted"].split("/")[1] not in x]
    if others:
        what += "; flagged: " + ", ".join(others)
    print("| %s | %s | %d | %s |" % (p["a"].split("/")[0], kind, p["exit"],
                                     what))
print("\nA/A pairs: %d, exited non-zero: %d.  Planted: %d, caught: %d." %
      (aa, fa, pl, caught))
