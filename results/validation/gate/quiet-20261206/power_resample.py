"""Resampling study of the compare gate's power and false alarms from the
quiet gate benchmark's 21 plain runs (A/A data only; the planted runs are
not used).  Per kernel: the per-process samples of its ratio metric
(optim roofline_frac, compress stream_frac) pooled over P0..P20.  A
comparison draws n per side from one kernel's pool (B scaled by 1/f for a
planted slowdown of factor f), exact one-sided Mann-Whitney, caught when
p <= alpha/F (Holm's first step: F metrics in the family) and the drop >=
the floor max(5%, the larger side's CV).  Also the raw-rate metrics for the
false-alarm side."""
import json, glob, sys, collections, math
import numpy as np

rng = np.random.default_rng(1)
import os
SGEMM = os.environ.get('SGEMM') == '1'   # PowerSGD by sgemm_frac (compare since 2026-12-06)

from functools import lru_cache
@lru_cache(None)
def _cnt(n, m):
    # counts of U = #(a_i > b_j) over all arrangements of n a's and m b's
    if n == 0 or m == 0:
        r = np.zeros(n * m + 1); r[0] = 1; return r
    a = _cnt(n - 1, m); b = _cnt(n, m - 1)
    r = np.zeros(n * m + 1)
    r[m:m + len(a)] += a      # the largest is an a: above all m b's
    r[:len(b)] += b           # the largest is a b: adds nothing
    return r

def mwu_null(n, m):
    r = _cnt(n, m); return r / r.sum()

NULL = {}
def p_worse(a, b):
    # H1: b smaller than a (a ratio drop).  U = #pairs with b_j < a_i
    n, m = len(a), len(b)
    key = (n, m)
    if key not in NULL:
        d = mwu_null(n, m); NULL[key] = np.cumsum(d[::-1])[::-1]  # P(U >= u)
    U = sum((bj < ai) + 0.5 * (bj == ai) for ai in a for bj in b)
    return NULL[key][int(math.ceil(U - 1e-9))]

def cv(x): return np.std(x, ddof=1) / np.mean(x)

def load(root):
    pools = collections.defaultdict(list); raw = collections.defaultdict(list)
    for r in sorted(glob.glob(root + '/P*')):
        for f, key, m, g in (('optim.jsonl', 'optim', 'roofline_frac', 'gbps'),
                             ('compress.jsonl', 'compressor', 'stream_frac', 'gbps')):
            for l in open(r + '/' + f):
                x = json.loads(l)
                if x.get('compress'): continue
                # PowerSGD is held to its sgemm ratio where rows have it
                mm = 'sgemm_frac' if 'sgemm_frac' in x and SGEMM else m
                pools[x[key]].append(x[mm]); raw[x[key]].append(x[g])
    return pools, raw

def trial(pool, n, f, F, alpha=0.05, floor=0.05):
    a = rng.choice(pool, n); b = rng.choice(pool, n) / f
    p = p_worse(a, b)
    drop = 1 - np.median(b) / np.median(a)
    fl = max(floor, cv(a), cv(b))
    return p <= alpha / F and drop >= fl

if __name__ == '__main__':
    pools, raw = load(sys.argv[1])
    T = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    print("| kernel | CV | " + " | ".join("catch n=%d F=%d" % (n, F) for n, F in
          ((7, 54), (7, 21), (12, 21), (12, 54), (16, 21))) + " |")
    print("|---|--:|" + "--:|" * 5)
    for k, pool in pools.items():
        row = [sum(trial(pool, n, 1.10, F) for _ in range(T)) / T
               for n, F in ((7, 54), (7, 21), (12, 21), (12, 54), (16, 21))]
        print("| %s | %.1f%% | %s |" % (k, 100 * cv(pool), " | ".join("%.2f" % x for x in row)))
