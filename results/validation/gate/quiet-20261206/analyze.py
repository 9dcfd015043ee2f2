#!/usr/bin/python3
"""analyze.py GATE_OUT - why each pair of gate-bench.sh's runs read as it did.

For every suite run: the median, min and max single-thread triad of its
STREAM entry's repeats (how the machine's memory bandwidth moved during
the run).  For every pair: each
flagged row, and for a planted pair the slowed kernel's rows, with their
change, exact one-sided p, Holm-adjusted p, floor (max of 5% and the
spread) and verdict, all as `lbscale compare --json` wrote them
(OUT/runs/A-B.json).  Prints markdown; reads only, computes nothing
that compare did not.
"""
import json
import statistics
import sys


def triad(out, run):
    rows = [json.loads(line) for line in open("%s/runs/%s/stream.jsonl"
                                              % (out, run))]
    v = [r["triad_gbps"] for r in rows if "triad_gbps" in r]
    return statistics.median(v), min(v), max(v)


def main():
    out = sys.argv[1]
    pairs = [json.loads(line) for line in open(out + "/gate.jsonl")]
    runs = []
    for p in pairs:
        for r in (p["a"], p["b"]):
            if r not in runs:
                runs.append(r)
    print("| run | triad GB/s, 1 thread: median [min, max] of its STREAM processes |")
    print("|---|---|")
    for r in runs:
        print("| %s | %.1f [%.1f, %.1f] |" % ((r,) + triad(out, r)))
    print()
    print("| pair | kind | row | change | p | p (Holm) | floor | verdict |")
    print("|---|---|---|--:|--:|--:|--:|---|")
    for p in pairs:
        rows = [json.loads(line) for line in
                open("%s/runs/%s-%s.json" % (out, p["a"], p["b"]))][:-1]
        want = None
        if p["planted"]:
            verb, name = p["planted"].split("/")
            want = (verb, ("optim=" if verb == "optim" else "compressor=")
                    + name)
        for r in rows:
            key = (r["verb"], r["config"].split(",")[0])
            if r["p"] is None or not (r["regression"] or key == want):
                continue
            print("| %s-%s | %s | %s %s | %+.1f%% | %.5f | %.4f | %.1f%% | %s |"
                  % (p["a"], p["b"], "planted " + p["planted"]
                     if p["planted"] else "A/A", key[1], r["metric"],
                     100 * r["change"], r["p"], r["p_holm"],
                     100 * r["floor"], r["verdict"]))


if __name__ == "__main__":
    main()
