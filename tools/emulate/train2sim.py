#!/usr/bin/env python3
"""train2sim.py - turn a `lbscale train` trace into simulator inputs.

    train2sim.py TRAIN_TRACE.jsonl [MORE_RANKS.jsonl...] OUTDIR
                 [--skip K] [--name NAME]

Reads train-trace-v1 files (results/schema/train-trace-v1.md) of one run,
the first one (rank 0) and optionally the other ranks' (--trace-all-ranks),
and writes

  OUTDIR/NAME-model.json   lbscale-model v1: the trace's layers with the
                           measured per-layer fwd_ms / bwd_ms (mean over
                           the steps used), bucket_mb tiny so that every
                           recorded call stays its own collective (the
                           trainer does not fuse gradients into buckets);
  OUTDIR/NAME-plan.jsonl   trace-v1: the same steps' calls (the `ms` field
                           and the step lines dropped), steps renumbered
                           from 1;
  OUTDIR/NAME-measured.json  what the run measured per step over the same
                           steps (means and medians, ms): step, data,
                           fwd+bwd, optimizer computation (optim - comm),
                           comm, and the per-call times by size; with all
                           ranks' traces also comm_lastin_ms: per call the
                           smallest time over the ranks (the rank that
                           arrived last waited for nobody), summed per
                           step, i.e. the communication without the wait
                           for slower ranks.

The first K steps (default 2: allocation, first-touch, TCP slow start)
are left out on both sides, so prediction and measurement cover the same
steps.  NAME defaults to the trace's optimizer name.
"""
import argparse
import json
import os
import statistics
import sys


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--skip", type=int, default=2)
    ap.add_argument("--name")
    a = ap.parse_args()
    if len(a.traces) < 2:
        ap.error("give TRAIN_TRACE.jsonl and OUTDIR")
    a.outdir = a.traces.pop()
    a.trace = a.traces[0]

    with open(a.trace) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    if not lines:
        sys.exit("train2sim.py: %s: empty" % a.trace)
    h = lines[0]
    if h.get("format") != "lbscale-train-trace" or h.get("version") != 1:
        sys.exit("train2sim.py: %s: field 'format': not lbscale-train-trace "
                 "version 1" % a.trace)
    name = a.name or h["optim"]
    L = len(h["layers"])
    calls, steps = [], []
    for r in lines[1:]:
        if r.get("type") == "step":
            steps.append(r)
        else:
            calls.append(r)
    used = [s for s in steps if s["step"] > a.skip and not s["skipped"]]
    if not used:
        sys.exit("train2sim.py: %s: no steps after the first %d"
                 % (a.trace, a.skip))
    keep = {s["step"] for s in used}
    renum = {st: i + 1 for i, st in enumerate(sorted(keep))}

    def mean(xs):
        return sum(xs) / len(xs)

    fwd = [mean([s["fwd_ms"][i] for s in used]) for i in range(L)]
    bwd = [mean([s["bwd_ms"][i] for s in used]) for i in range(L)]
    model = {
        "format": "lbscale-model", "version": 1,
        "name": "%s-%s" % (h.get("model", "mlp"), name),
        "description": "%s as trained by `lbscale train` (%s, %d ranks, "
                       "local batch %s): per-layer forward/backward times "
                       "measured on rank %s, mean over steps %d..%d"
                       % (h.get("model"), h["optim"], h["ranks"],
                          h.get("local_batch"), h.get("rank", 0),
                          min(keep), max(keep)),
        "sources": ["converted by tools/emulate/train2sim.py from %s"
                    % os.path.abspath(a.trace),
                    "bucket_mb 1e-6: the trainer allreduces each layer on "
                    "its own (no DDP bucket fusion)"],
        "batch_per_gpu": h.get("local_batch", 1), "seq_len": 1,
        "efficiency": 1, "bucket_mb": 1e-6,
        "layers": [{"name": l["name"],
                    "shape": l.get("shape") or [l["n"]],
                    "fwd_ms": max(fwd[i], 0.0),
                    "bwd_ms": max(bwd[i], 0.0)}
                   for i, l in enumerate(h["layers"])],
    }
    plan_h = {"format": "lbscale-trace", "version": 1,
              "optim": h["optim"], "params": h.get("params", ""),
              "compress": h.get("compress"), "ranks": h["ranks"],
              "steps": len(keep),
              "layers": [{"name": l["name"], "n": l["n"],
                          "ndim": l.get("ndim", 2)} for l in h["layers"]]}
    plan = [plan_h]
    by_size = {}
    for c in calls:
        if c["step"] not in keep:
            continue
        plan.append({"step": renum[c["step"]], "layer": c["layer"],
                     "coll": c["coll"], "bytes": c["bytes"]})
        by_size.setdefault("%s:%d" % (c["coll"], c["bytes"]), []).append(
            c["ms"])

    # the other ranks: per (step, call index) the smallest time
    lastin = None
    if len(a.traces) > 1:
        percall = {}
        for path in a.traces:
            with open(path) as f:
                rl = [json.loads(l) for l in f if l.strip()][1:]
            idx = {}
            for c in rl:
                if c.get("type") == "step" or c["step"] not in keep:
                    continue
                k = idx.get(c["step"], 0)
                idx[c["step"]] = k + 1
                key = (c["step"], k)
                percall[key] = min(percall.get(key, c["ms"]), c["ms"])
        per_step = {}
        for (st, _), ms in percall.items():
            per_step[st] = per_step.get(st, 0.0) + ms
        xs = [per_step.get(s["step"], 0.0) for s in used]
        lastin = {"mean": mean(xs), "median": statistics.median(xs),
                  "ranks": len(a.traces)}

    def stat(key, f=lambda s, k: s[k]):
        xs = [f(s, key) for s in used]
        return {"mean": mean(xs), "median": statistics.median(xs)}

    comp = lambda s, k: sum(s["fwd_ms"]) + sum(s["bwd_ms"])
    opt = lambda s, k: s["optim_ms"] - s["comm_ms"]
    meas = {"optim": h["optim"], "ranks": h["ranks"],
            "steps_used": len(used), "first_step": min(keep),
            "step_ms": stat("step_ms"), "data_ms": stat("data_ms"),
            "compute_ms": stat(None, comp),
            "optimizer_ms": stat(None, opt),
            "comm_ms": stat("comm_ms"),
            "comm_lastin_ms": lastin,
            "comm_calls": stat("comm_calls"),
            "calls": {k: {"n": len(v), "median_ms": statistics.median(v),
                          "mean_ms": mean(v)}
                      for k, v in sorted(by_size.items())}}
    os.makedirs(a.outdir, exist_ok=True)
    for fn, obj in (("%s-model.json" % name, model),
                    ("%s-measured.json" % name, meas)):
        with open(os.path.join(a.outdir, fn), "w") as f:
            json.dump(obj, f, indent=1)
            f.write("\n")
    with open(os.path.join(a.outdir, "%s-plan.jsonl" % name), "w") as f:
        for r in plan:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
