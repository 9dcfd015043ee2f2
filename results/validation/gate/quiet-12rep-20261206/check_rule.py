#!/usr/bin/python3
"""check_rule.py LBSCALE - does `compare`'s rule (the ratio family, its
default since 2026-12-07) give the verdicts ratio_family.py wrote down?

For every pair of this benchmark: the runs' rows are unpacked from
runs-data.tar.xz, read by LBSCALE's `compare --json` (the new rule), and
the kernels it flags are set beside those ratio_family.py flags from the
pair's stored compare output (runs/A-B.json, every metric tested, whose
per-metric p-values and floors it reuses).  Prints one line a pair and
the count that agree; exit 1 if any differs.
"""
import json
import os
import subprocess
import sys
import tarfile
import tempfile

import ratio_family as rf

HERE = os.path.dirname(os.path.abspath(__file__))


def expected(a, b):
    rows = [json.loads(line) for line in
            open("%s/runs/%s-%s.json" % (HERE, a, b))][:-1]
    rr = rf.ratio_rows(rows)
    adj = rf.holm([r["p"] for r in rr])
    return {(r["config"].split(",")[0], r["metric"]) for r, p in zip(rr, adj)
            if r["change"] < 0 and -r["change"] >= r["floor"]
            and p <= rf.ALPHA}


def main():
    lbscale = os.path.abspath(sys.argv[1])
    agree = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(HERE + "/runs-data.tar.xz") as t:
            t.extractall(tmp)
        for line in open(HERE + "/gate.jsonl"):
            p = json.loads(line)
            a, b = p["a"], p["b"]
            out = subprocess.run([lbscale, "compare", "%s/%s" % (tmp, a),
                                  "%s/%s" % (tmp, b), "--json"],
                                 capture_output=True, text=True)
            rows = [json.loads(x) for x in out.stdout.splitlines()]
            got = {(r["config"].split(",")[0], r["metric"])
                   for r in rows[:-1] if r["regression"]}
            want = expected(a, b)
            total += 1
            agree += got == want
            print("%s-%s: exit %d, family %d, flagged %s%s" % (
                a, b, out.returncode, rows[-1]["family"],
                ", ".join(sorted("%s %s" % x for x in got)) or "-",
                "" if got == want else "  DIFFERS from ratio_family.py: %s"
                % sorted(want)))
    print("agree: %d of %d pairs" % (agree, total))
    return 0 if agree == total else 1


if __name__ == "__main__":
    sys.exit(main())
