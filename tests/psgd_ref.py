#!/usr/bin/python3
"""psgd_ref.py PSGD_DUMP: PowerSGD on gradients whose rank is at most r
(0 .. r, for r = 2, 3, 4, 8; tall, wide and square) against numpy's SVD.
When rank(M) <= r the best rank-r approximation is M itself (numpy's
singular values say so), so every step of PowerSGD (warm-started) must
reproduce M to float rounding, and its factor P must have orthonormal
columns.  Prints TAP."""
import subprocess
import sys

import numpy as np

DUMP = sys.argv[1]
STEPS = 5
TOL = 2e-5          # relative error allowed on top of the SVD's optimum
ORTH = 2e-5         # max |P^T P - I|

n_test = 0
failed = 0


def tap(ok, desc, why=""):
    global n_test, failed
    n_test += 1
    failed += not ok
    print(("ok" if ok else "not ok") + " %d - %s" % (n_test, desc))
    if not ok:
        print("#   " + why)


rng = np.random.default_rng(33)
for r in (2, 3, 4, 8):
    for rows, cols in ((64, 100), (100, 64), (80, 80)):
        for k in range(r + 1):
            # a linear layer's gradient over k samples: sum of k outer
            # products, rank k (0: a zero gradient)
            a = rng.standard_normal((rows, k)) * 1e-2
            b = rng.standard_normal((k, cols))
            m = (a @ b).astype(np.float32)
            s = np.linalg.svd(m.astype(np.float64), compute_uv=False)
            norm = np.sqrt((s ** 2).sum())
            best = np.sqrt((s[r:] ** 2).sum()) / norm if norm > 0 else 0.0
            res = subprocess.run(
                [DUMP, "powersgd:r=%d,rows=%d" % (r, rows), str(rows),
                 str(cols), str(STEPS)], input=m.tobytes(),
                capture_output=True, check=False)
            desc = "r=%d %dx%d rank %d" % (r, rows, cols, k)
            if res.returncode:
                tap(False, desc, res.stderr.decode()[:200])
                continue
            out = np.frombuffer(res.stdout, dtype=np.float32)
            per = rows * cols + rows * r
            errs, orth = [], []
            for t in range(STEPS):
                d = out[t * per:t * per + rows * cols].reshape(rows, cols)
                p = out[t * per + rows * cols:(t + 1) * per].reshape(rows, r)
                p = p.astype(np.float64)
                orth.append(np.abs(p.T @ p - np.eye(r)).max())
                diff = np.linalg.norm(m.astype(np.float64) - d)
                errs.append(diff / norm if norm > 0 else diff)
            ok = (all(np.isfinite(errs)) and max(errs) <= best + TOL and
                  max(orth) <= ORTH)
            tap(ok, "%s: rel err %.2g (SVD optimum %.1g), |P^T P - I| %.1g"
                % (desc, max(errs), best, max(orth)),
                "errors per step %s, orthogonality %s" % (
                    ["%.3g" % e for e in errs], ["%.2g" % o for o in orth]))
print("1..%d" % n_test)
sys.exit(1 if failed else 0)
