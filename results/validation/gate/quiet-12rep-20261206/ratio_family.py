#!/usr/bin/python3
"""ratio_family.py GATE_OUT - the gate benchmark's pairs read a second way.

compare's family is every shared timing and rate (55 here: raw step
times and GB/s besides the ratios).  This reading keeps compare's own
per-metric numbers (p, floor, change, from OUT/runs/A-B.json) and
changes one thing: the family is one paired ratio per kernel (optim
roofline_frac; compress stream_frac; PowerSGD sgemm_frac: 21 metrics),
Holm over those 21.  A ratio regresses when it fell by at least its
floor and its Holm p is at most 0.05 - compare's rule.  The earlier
benchmark (../quiet-20261206) named this family as the candidate to be
tried on new runs, and ../prediction-12-repeats.md gave its expectation
(9.9 of 11 at 12 repeats).  Prints markdown; every pair is a row.
"""
import json
import sys

ALPHA = 0.05


def ratio_rows(rows):
    out = []
    for r in rows:
        if r.get("p") is None:
            continue
        pw = "compressor=powersgd" in r["config"]
        if (r["metric"] == "roofline_frac" or
                (r["metric"] == "stream_frac" and not pw) or
                (r["metric"] == "sgemm_frac" and pw)):
            out.append(r)
    return out


def holm(ps):
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adj, run = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        run = max(run, min(1.0, (len(ps) - rank) * ps[i]))
        adj[i] = run
    return adj


def main():
    out = sys.argv[1]
    pairs = [json.loads(line) for line in open(out + "/gate.jsonl")]
    print("| pair | kind | family | flagged (change, p Holm over the family) | reading |")
    print("|---|---|--:|---|---|")
    tally = {"aa": [0, 0], "planted": [0, 0], "other": 0}
    for p in pairs:
        rows = [json.loads(line) for line in
                open("%s/runs/%s-%s.json" % (out, p["a"], p["b"]))][:-1]
        if p.get("gap_min", 0) > 45 or not p.get("same_machine", True):
            print("| %s-%s | %s | | | not counted (gate-bench.sh) |"
                  % (p["a"], p["b"], p["kind"]))
            continue
        rr = ratio_rows(rows)
        adj = holm([r["p"] for r in rr])
        flagged = [(r, a) for r, a in zip(rr, adj)
                   if r["change"] < 0 and -r["change"] >= r["floor"]
                   and a <= ALPHA]
        names = [r["config"].split(",")[0].split("=")[1] for r, _ in flagged]
        text = ", ".join("%s %s %+.1f%% %.4f" % (
            r["config"].split(",")[0].split("=")[1], r["metric"],
            100 * r["change"], a) for r, a in flagged) or "-"
        if p["kind"] == "aa":
            tally["aa"][0] += 1
            tally["aa"][1] += bool(flagged)
            reading = "false alarm" if flagged else "quiet"
        else:
            want = p["planted"].split("/")[1]
            caught = want in names
            others = [n for n in names if n != want]
            tally["planted"][0] += 1
            tally["planted"][1] += caught
            tally["other"] += bool(others)
            reading = ("caught" if caught else "MISSED") + (
                ", other kernel flagged" if others else "")
        print("| %s-%s | %s | %d | %s | %s |" % (
            p["a"], p["b"], "A/A" if p["kind"] == "aa" else
            "planted " + p["planted"], len(rr), text, reading))
    print()
    print("A/A pairs: %d, flagged: %d.  Planted: %d, caught: %d; planted "
          "pairs that flagged another kernel: %d." % (
              tally["aa"][0], tally["aa"][1], tally["planted"][0],
              tally["planted"][1], tally["other"]))


if __name__ == "__main__":
    main()
