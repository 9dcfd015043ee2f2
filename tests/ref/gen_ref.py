#!/usr/bin/python3
"""gen_ref.py - independent numpy reference trajectories for the optimizers.

Writes tests/ref/optim_ref.json, which tests/test_optim.c replays through
the real C optimizers (lbs_optim_new / lbs_optim_step) and compares w after
every step with |c - ref| <= rtol * max(1, |ref|).

The update rules below are written from the published equations (and the
key/default tables documented for lbscale), not from the C code:

  sgd    PyTorch momentum SGD, dampening 0:
             d = g + wd w;  b = mu b + d (b starts at 0)
             step = d + mu b (nesterov) or b;  w <- w - lr step
  lars   You, Gitman & Ginsburg 2017:
             local = eta ||w|| / (||g|| + wd ||w||)  (1 if ||w|| or ||g|| = 0)
             v = mu v + lr local (g + wd w);  w <- w - v
             exclude_1d: 1-D tensors use local = 1 and wd = 0
  lamb   You et al. 2019 (apex FusedLAMB options):
             clip > 0: g <- g min(1, clip / ||g||_global)   (all layers)
             m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
             m^ = m / (1 - b1^t), v^ = v / (1 - b2^t)  (bias_correction=1)
             u = m^ / (sqrt(v^) + eps) + wd w
             phi = clamp(||w|| / ||u||, cmin, cmax), the ratio being 1 when
                   either norm is 0;  w <- w - lr phi u
             exclude_1d: 1-D tensors use phi = 1 and wd = 0
  adamw  Loshchilov & Hutter:  w <- w - lr (m^ / (sqrt(v^) + eps) + wd w)

Element-wise arithmetic is float32 (as the C kernels do; w, m, v, b are
stored as float32), norms and per-layer scalars are float64.  Small
ordering differences against the C code are far below the test tolerance.

Run:  /usr/bin/python3 tests/ref/gen_ref.py     (numpy required)
"""
import json
import os
import sys

import numpy as np

F32 = np.float32
STEPS = 5
RTOL = 1e-5

# Defaults of every key, as documented in DESIGN.md / each optimizer's
# key table.  A spec that omits a key must behave like these values.
DEFAULTS = {
    "sgd": dict(lr=0.1, momentum=0.9, wd=0.0, nesterov=0),
    "lars": dict(lr=0.1, momentum=0.9, wd=0.0005, eta=0.001, exclude_1d=1),
    "lamb": dict(lr=0.01, b1=0.9, b2=0.999, eps=1e-6, wd=0.01,
                 bias_correction=1, cmin=0.0, cmax=1e9, clip=0.0,
                 exclude_1d=1),
    "adamw": dict(lr=0.001, b1=0.9, b2=0.999, eps=1e-8, wd=0.01,
                  bias_correction=1),
}

# The parameter set every case uses: a matrix, a 1-D bias, a 3-D tensor,
# a layer whose gradient is always 0 and a layer whose weights start at 0
# (both hit the "norm is 0 -> ratio 1" rules of LARS and LAMB).
LAYOUT = [
    # name, shape, w scale, g scale ("zero" = all zeros)
    ("fc.weight", [7, 5], 0.5, 0.3),
    ("fc.bias", [3], 0.2, 0.1),
    ("conv.weight", [4, 3, 2], 0.8, 0.5),
    ("frozen.weight", [2, 3], 0.6, "zero"),
    ("fresh.weight", [3, 2], "zero", 0.2),
]


def norm(x):
    return float(np.sqrt(np.sum(np.asarray(x, dtype=np.float64) ** 2)))


class Stats:
    """What each case exercised, so a reviewer can see every rule is hit."""

    def __init__(self):
        self.hits = set()

    def hit(self, what):
        self.hits.add(what)


# ---------------------------------------------------------------- optimizers
def sgd_step(p, layers, ws, gs, state, t, st):
    lr, mu, wd = F32(p["lr"]), F32(p["momentum"]), F32(p["wd"])
    for i in range(len(layers)):
        w, g = ws[i], gs[i]
        d = g + wd * w
        buf = state.setdefault(("b", i), np.zeros_like(w))
        buf = mu * buf + d
        state[("b", i)] = buf
        direction = d + mu * buf if p["nesterov"] else buf
        ws[i] = w - lr * direction
    if p["nesterov"]:
        st.hit("nesterov")


def lars_step(p, layers, ws, gs, state, t, st):
    mu = F32(p["momentum"])
    for i, (name, shape) in enumerate(layers):
        w, g = ws[i], gs[i]
        excluded = p["exclude_1d"] and len(shape) == 1
        wd = 0.0 if excluded else p["wd"]
        wn, gn = norm(w), norm(g)
        if excluded:
            local = 1.0
            st.hit("1d excluded")
        elif wn > 0 and gn > 0:
            local = p["eta"] * wn / (gn + wd * wn)
        else:
            local = 1.0
            st.hit("zero norm -> local 1")
        v = state.setdefault(("v", i), np.zeros_like(w))
        v = mu * v + F32(p["lr"] * local) * (g + F32(wd) * w)
        state[("v", i)] = v
        ws[i] = w - v


def adam_direction(p, m, v, t):
    if p["bias_correction"]:
        mhat = m / F32(1.0 - p["b1"] ** t)
        vhat = v / F32(1.0 - p["b2"] ** t)
    else:
        mhat, vhat = m, v
    return mhat / (np.sqrt(vhat) + F32(p["eps"]))


def moments(p, state, i, g):
    b1, b2 = F32(p["b1"]), F32(p["b2"])
    m = state.setdefault(("m", i), np.zeros_like(g))
    v = state.setdefault(("v", i), np.zeros_like(g))
    m = b1 * m + F32(1.0 - p["b1"]) * g
    v = b2 * v + F32(1.0 - p["b2"]) * (g * g)
    state[("m", i)], state[("v", i)] = m, v
    return m, v


def lamb_step(p, layers, ws, gs, state, t, st):
    gscale = 1.0
    if p["clip"] > 0:
        total = np.sqrt(sum(norm(g) ** 2 for g in gs))
        if total > p["clip"]:
            gscale = p["clip"] / total
            st.hit("clip active")
        else:
            st.hit("clip inactive")
    for i, (name, shape) in enumerate(layers):
        w = ws[i]
        g = gs[i] * F32(gscale) if gscale != 1.0 else gs[i]
        m, v = moments(p, state, i, g)
        excluded = p["exclude_1d"] and len(shape) == 1
        wd = 0.0 if excluded else p["wd"]
        u = adam_direction(p, m, v, t) + F32(wd) * w
        if excluded:
            phi = 1.0
            st.hit("1d excluded")
        else:
            wn, un = norm(w), norm(u)
            if wn > 0 and un > 0:
                ratio = wn / un
            else:
                ratio = 1.0
                st.hit("zero norm -> ratio 1")
            phi = min(max(ratio, p["cmin"]), p["cmax"])
            if ratio == 1.0 and phi != 1.0:
                st.hit("fallback ratio 1 clamped")
            if phi > ratio:
                st.hit("cmin clamps")
            if phi < ratio:
                st.hit("cmax clamps")
        ws[i] = w - F32(p["lr"] * phi) * u


def adamw_step(p, layers, ws, gs, state, t, st):
    for i in range(len(layers)):
        w = ws[i]
        m, v = moments(p, state, i, gs[i])
        ws[i] = w - F32(p["lr"]) * (adam_direction(p, m, v, t) + F32(p["wd"]) * w)


STEP = {"sgd": sgd_step, "lars": lars_step, "lamb": lamb_step,
        "adamw": adamw_step}

# ------------------------------------------------------------------- cases
# (case name, optimizer, keys given in the spec).  Keys not given take the
# DEFAULTS above, so the default cases also check the C defaults.
CASES = [
    ("sgd_defaults", "sgd", {}),
    ("sgd_plain", "sgd", dict(lr=0.05, momentum=0)),
    ("sgd_momentum_wd", "sgd", dict(lr=0.05, momentum=0.9, wd=0.01)),
    ("sgd_nesterov", "sgd", dict(lr=0.03, momentum=0.8, nesterov=1, wd=0.001)),
    ("sgd_nesterov_nowd", "sgd", dict(lr=0.2, momentum=0.5, nesterov=1)),
    ("lars_defaults", "lars", dict(lr=10)),
    ("lars_no_exclude", "lars", dict(lr=2, eta=0.02, wd=0.001, exclude_1d=0)),
    ("lars_no_momentum_nowd", "lars", dict(lr=0.5, eta=0.05, wd=0, momentum=0)),
    ("lars_big_wd", "lars", dict(lr=1, eta=0.05, wd=0.1, momentum=0.5)),
    ("lamb_defaults", "lamb", {}),
    ("lamb_no_bias_correction", "lamb", dict(bias_correction=0, lr=0.02)),
    ("lamb_clamp", "lamb", dict(cmin=0.6, cmax=2)),
    ("lamb_clip_active", "lamb", dict(clip=1)),
    ("lamb_clip_inactive", "lamb", dict(clip=100, lr=0.05)),
    ("lamb_no_exclude", "lamb", dict(exclude_1d=0, wd=0.1)),
    ("lamb_betas_eps_nowd", "lamb", dict(b1=0.8, b2=0.99, eps=1e-4, wd=0)),
    ("lamb_everything", "lamb", dict(lr=0.02, b1=0.85, b2=0.98, eps=1e-5,
                                     wd=0.05, bias_correction=0, cmin=0.1,
                                     cmax=0.9, clip=2, exclude_1d=0)),
    ("lamb_trust_one", "lamb", dict(cmin=1, cmax=1, exclude_1d=0, lr=0.01)),
    ("adamw_defaults", "adamw", {}),
    ("adamw_no_bias_correction", "adamw", dict(bias_correction=0, lr=0.01,
                                               wd=0.1)),
    ("adamw_betas_eps_nowd", "adamw", dict(lr=0.005, b1=0.5, b2=0.9,
                                           eps=1e-3, wd=0)),
]


def fmt(x):
    """Shortest decimal that rounds back to the same float32."""
    return [float(np.format_float_positional(F32(v), unique=True, trim="-"))
            for v in np.asarray(x, dtype=F32).ravel()]


def spec_string(opt, keys):
    if not keys:
        return opt
    return opt + ":" + ",".join("%s=%s" % (k, repr(v)) for k, v in keys.items())


def run_case(idx, name, opt, keys):
    rng = np.random.default_rng(20240 + idx)
    p = dict(DEFAULTS[opt])
    for k in keys:
        assert k in p, (name, k)
    p.update(keys)
    layers = [(n, shape) for n, shape, _, _ in LAYOUT]
    ws = []
    for n, shape, wscale, _ in LAYOUT:
        if wscale == "zero":
            ws.append(np.zeros(shape, dtype=F32))
        else:
            ws.append(rng.normal(0, wscale, size=shape).astype(F32))
    w0 = [w.copy() for w in ws]
    grads, expected = [], []
    state, st = {}, Stats()
    for t in range(1, STEPS + 1):
        gs = []
        for n, shape, _, gscale in LAYOUT:
            if gscale == "zero":
                gs.append(np.zeros(shape, dtype=F32))
            else:
                # vary the size per step so moments and ratios move
                s = gscale * (1.0 + 0.5 * np.sin(t + idx))
                gs.append(rng.normal(0, s, size=shape).astype(F32))
        STEP[opt](p, layers, ws, gs, state, t, st)
        for w in ws:
            assert w.dtype == F32 and np.all(np.isfinite(w)), name
        grads.append([fmt(g) for g in gs])
        expected.append([fmt(w) for w in ws])
    case = {
        "name": name,
        "optimizer": opt,
        "spec": spec_string(opt, keys),
        "params": p,
        "covers": sorted(st.hits),
        "layers": [{"name": n, "ndim": len(shape), "shape": shape,
                    "w": fmt(w)} for (n, shape), w in zip(layers, w0)],
        "grads": grads,
        "expected": expected,
    }
    return case


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, "optim_ref.json")
    cases = [run_case(i, *c) for i, c in enumerate(CASES)]
    # Every rule must be exercised by some case, or the reference is weak.
    need = {"lars": {"1d excluded", "zero norm -> local 1"},
            "lamb": {"1d excluded", "zero norm -> ratio 1", "cmin clamps",
                     "cmax clamps", "clip active", "clip inactive"},
            "sgd": {"nesterov"}}
    for opt, rules in need.items():
        got = set().union(*[set(c["covers"]) for c in cases
                            if c["optimizer"] == opt])
        missing = rules - got
        if missing:
            sys.exit("gen_ref: %s cases never hit %s" % (opt, sorted(missing)))
    doc = {
        "about": "reference trajectories written by tests/ref/gen_ref.py "
                 "(numpy, independent of the C code); compare w after every "
                 "step with |c - ref| <= rtol * max(1, |ref|)",
        "numpy": np.__version__,
        "rtol": RTOL,
        "steps": STEPS,
        "cases": cases,
    }
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    for c in cases:
        print("%-26s %-60s %s" % (c["name"], c["spec"], ", ".join(c["covers"])))
    print("wrote %s: %d cases, %d bytes" % (out, len(cases),
                                             os.path.getsize(out)))


if __name__ == "__main__":
    main()
