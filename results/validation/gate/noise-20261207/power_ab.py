#!/usr/bin/python3
"""power_ab.py - the prediction for ../prediction-ab.md: the chance that
the interleaved gate (gate-ab.sh, 12 rounds a side) catches a planted 10%
slowdown of each kernel the benchmark plants, by resampling the kernels'
own process-to-process spread from the plain runs of the two 12-repeat
benchmarks (each run's log ratios centred on the run's median: the
drift between runs left out, as interleaving leaves it out).  A draw is
caught when B (shifted by -10%) is below A by at least the floor
(max(5%, the larger side's CV), compare's) and the exact one-sided rank
test gives p <= 0.05/21 (Holm's first step; the planted ratio is the
family's smallest p whenever it is caught).  Also the chance that a
plain pair (no shift) is flagged on the kernel, summed over all 21
kernels: the expected A/A flags per pair with no drift at all."""
import json, math, os, random, statistics as st, sys, tarfile, tempfile
from functools import lru_cache

HERE = os.path.dirname(os.path.abspath(__file__))
PLANTED = ["lamb", "qsgd", "sgd", "topk", "adamw", "sign", "lars",
           "powersgd", "slamb", "fp16"]
N, DRAWS, LEVEL = 12, 4000, 0.05 / 21


@lru_cache(None)
def null_cdf(n):
    """counts of the rank sum of one side of n against n (no ties)"""
    dp = [[0] * (n * (2 * n + 1) + 1) for _ in range(n + 1)]
    dp[0][0] = 1
    for i in range(1, 2 * n + 1):
        for j in range(min(i, n), 0, -1):
            row, prev = dp[j], dp[j - 1]
            for s in range(len(row) - 1, i - 1, -1):
                row[s] += prev[s - i]
    c, tot, acc = dp[n], sum(dp[n]), []
    run = 0
    for x in c:
        run += x
        acc.append(run / tot)
    return acc


def p_lower(a, b):
    pool = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    rs = sum(i + 1 for i, (_, g) in enumerate(pool) if g)
    return null_cdf(len(a))[rs]


def cv(logs):
    e = [math.exp(x) for x in logs]
    return st.stdev(e) / st.mean(e)


def residuals(tmp):
    res = {}
    for name in ("quiet-12rep-20261206", "ratio-family-20261207"):
        d = os.path.join(tmp, name)
        with tarfile.open(os.path.join(HERE, "..", name, "runs-data.tar.xz")) as t:
            t.extractall(d)
        for run in os.listdir(d):
            if not run.startswith("P"):
                continue
            for verb in ("optim", "compress"):
                by = {}
                for l in open(os.path.join(d, run, verb + ".jsonl")):
                    r = json.loads(l)
                    k = r.get("optim") or r.get("compressor")
                    v = (r["sgemm_frac"] if k == "powersgd" else
                         r.get("roofline_frac") or r.get("stream_frac"))
                    by.setdefault(k, []).append(math.log(v))
                for k, v in by.items():
                    m = st.median(v)
                    res.setdefault(k, []).extend(x - m for x in v)
    return res


def flagged(a, b):
    change = math.exp(st.median(b) - st.median(a)) - 1
    floor = max(0.05, cv(a), cv(b))
    return -change >= floor and p_lower(a, b) <= LEVEL


def main():
    rnd = random.Random(20261207)
    with tempfile.TemporaryDirectory() as tmp:
        res = residuals(tmp)
    shift = math.log(0.9)
    total, fa = 0.0, 0.0
    print("| kernel | process spread (SD of log ratio, %) | P(caught) | P(flagged, no shift) |")
    print("|---|--:|--:|--:|")
    for k in sorted(res):
        r = res[k]
        hit = aa = 0
        for _ in range(DRAWS):
            a = [rnd.choice(r) for _ in range(N)]
            b = [rnd.choice(r) for _ in range(N)]
            aa += flagged(a, b)
            hit += flagged(a, [x + shift for x in b])
        fa += aa / DRAWS
        if k in PLANTED:
            total += hit / DRAWS
        print("| %s | %.2f | %s | %.4f |" % (
            k, 100 * st.stdev(r), "%.3f" % (hit / DRAWS) if k in PLANTED
            else "(not planted)", aa / DRAWS))
    print("\nExpected planted caught: %.2f of %d.  Expected A/A flags per "
          "pair with no drift (sum over the 21 kernels): %.3f, so %.2f in "
          "20 pairs." % (total, len(PLANTED), fa, 20 * fa))


main()
