#!/usr/bin/env python3
"""compare.py - measured (emulated cluster) vs predicted (lbscale sim).

    compare.py RUN_DIR [--bin LBSCALE] [--out FILE.md]

RUN_DIR is what tools/emulate/validate.sh wrote:
  platform.json            the emulated cluster as an lbscale platform
  coll-default/coll.jsonl  `lbscale coll` rows, Open MPI's own algorithm
                           choice (compared with the simulator's choice)
  coll-fixed/coll.jsonl    the same with Open MPI forced to ring allreduce,
                           ring allgather, pairwise alltoall and to the
                           eager protocol (no rendezvous handshake),
                           compared with the simulator's cost of those
                           algorithms
  train-OPTIM-pP/          `lbscale train` runs (train.jsonl,
                           train-trace-OPTIM.jsonl)
  env.json                 settings, load averages

For every coll row it asks `lbscale sim coll --platform platform.json
--json --no-save` for the same collective, rank count and bytes (trace-v1
convention: the `bytes` field of the row) and prints size, measured median
time, predicted time, measured/predicted, and per table the median and
worst relative error |pred - meas| / meas.  For every train run it converts
the trace (train2sim.py: measured per-layer compute, the recorded calls)
and runs `lbscale sim step` with it; the trainer does not overlap
communication with the backward pass, so the comparable prediction is
compute + communication (the engine's comm stream busy time) + optimizer,
beside the engine's own iteration time (which overlaps, as DDP would).
Writes the markdown to --out (default RUN_DIR/validation.md) and stdout.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

FIXED_ALGO = {"allreduce": "ring/Simple", "allgather": "allgather-ring/Simple",
              "alltoall": "alltoall-pairwise/Simple"}


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def human(n):
    for unit, f in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if n >= f and n % f == 0:
            return "%d%s" % (n // f, unit)
    return "%d" % n


def sim_coll(binp, platform, coll, P, sizes):
    out = subprocess.run(
        [binp, "sim", "coll", "--platform", platform, "--coll", coll,
         "--gpus", str(P), "--bytes", ",".join("%d" % s for s in sizes),
         "--json", "--no-save"], check=True, capture_output=True, text=True)
    return {int(round(r["bytes"])): r for r in
            (json.loads(l) for l in out.stdout.splitlines() if l.strip())}


def errstats(pairs):
    """median and worst |p - m| / m, and the worst factor max(m/p, p/m)
    (|p - m| / m cannot exceed 100% when the prediction is too low)."""
    ok = [(m, p) for m, p in pairs if m > 0 and p > 0]
    if not ok:
        return "n/a"
    errs = [abs(p - m) / m for m, p in ok]
    fac = max(max(m / p, p / m) for m, p in ok)
    return "median %.1f%%, worst %.1f%%, worst factor %.2f (%d points)" % (
        100 * statistics.median(errs), 100 * max(errs), fac, len(errs))


def coll_tables(run, binp, platform, variant, md, summary):
    path = os.path.join(run, "coll-%s" % variant, "coll.jsonl")
    if not os.path.exists(path):
        return
    rows = [r for r in read_jsonl(path) if r.get("bench") == "coll"]
    groups = {}
    for r in rows:
        groups.setdefault((r["coll"], r["ranks"]), []).append(r)
    allpairs = []
    for (coll, P), rs in sorted(groups.items()):
        rs.sort(key=lambda r: r["bytes"])
        pred = sim_coll(binp, platform, coll, P,
                        [int(round(r["bytes"])) for r in rs])
        md.append("")
        md.append("**%s, %d hosts** (%s)" % (
            coll, P, "Open MPI's default algorithm vs the simulator's "
            "choice" if variant == "default" else
            "Open MPI forced to %s, eager protocol, vs the simulator's %s" % (
                {"allreduce": "ring", "allgather": "ring",
                 "alltoall": "pairwise"}[coll], FIXED_ALGO[coll])))
        md.append("")
        md.append("| size | measured us (median) | min | predicted us | "
                  "sim algorithm | measured/predicted | #wrong |")
        md.append("|---:|---:|---:|---:|---|---:|---:|")
        pairs = []
        for r in rs:
            p = pred[int(round(r["bytes"]))]
            if variant == "fixed":
                t = p["candidates_us"].get(FIXED_ALGO[coll])
                algo = FIXED_ALGO[coll]
            else:
                t = p["time_us"]
                algo = "%s/%s" % (p["algo"], p["proto"])
            m = r["time_us"]
            pairs.append((m, t))
            md.append("| %s | %.1f | %.1f | %.1f | %s | %.2f | %d |" % (
                human(r["size"]), m, r["time_us_min"], t, algo, m / t,
                r["wrong"]))
        big = [(m, t) for (m, t), r in zip(pairs, rs) if r["size"] >= 1 << 20]
        md.append("")
        md.append("relative error: all sizes %s; sizes >= 1 MiB %s"
                  % (errstats(pairs), errstats(big)))
        summary.append((variant, coll, P, errstats(pairs), errstats(big)))
        allpairs += pairs
    return allpairs


def train_tables(run, binp, platform, md, summary):
    runs = sorted(glob.glob(os.path.join(run, "train-*-p*")))
    if not runs:
        return
    md.append("")
    md.append("| optimizer | hosts | Open MPI | steps | measured step ms | "
              "predicted step ms | meas/pred | meas/pred with the measured "
              "optimizer time | measured comm ms (rank 0 / "
              "last-in) | predicted comm ms | meas/pred (last-in) | "
              "measured compute / optimizer / data ms | predicted "
              "optimizer ms | sim iteration ms (DDP overlap) |")
    md.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
              "---:|---:|")
    pairs_step, pairs_comm = [], []
    for d in runs:
        # train-trace-OPTIM[.rankR].jsonl (before: train-trace[.rankR].jsonl)
        r0 = sorted(glob.glob(os.path.join(d, "train-trace*.rank0.jsonl")))
        one = sorted(p for p in glob.glob(os.path.join(d, "train-trace*.jsonl"))
                     if ".rank" not in p)
        if r0:
            tr = r0[0]
            stem = tr[:-len(".rank0.jsonl")]
            rest = sorted(glob.glob(glob.escape(stem) + ".rank*.jsonl"))
            rest.remove(tr)
            traces = [tr] + rest
        elif one:
            traces = [one[0]]
        else:
            continue
        sd = os.path.join(d, "sim")
        subprocess.run([sys.executable, os.path.join(HERE, "train2sim.py")] +
                       traces + [sd, "--name", "run"], check=True)
        with open(os.path.join(sd, "run-measured.json")) as f:
            meas = json.load(f)
        out = subprocess.run(
            [binp, "sim", "step", "--model",
             os.path.join(sd, "run-model.json"), "--platform", platform,
             "--optim", os.path.join(sd, "run-plan.jsonl"), "--gpus",
             str(meas["ranks"]), "--json", "--no-save"],
            check=True, capture_output=True, text=True)
        s = json.loads(out.stdout.splitlines()[-1])
        with open(os.path.join(sd, "sim-step.json"), "w") as f:
            json.dump(s, f, indent=1)
        # the trainer: data, forward, backward, then the optimizer step
        # with its communication inside (no overlap)
        m_step = meas["step_ms"]["mean"]
        p_step = (meas["data_ms"]["mean"] + s["compute_ms"] + s["comm_ms"] +
                  s["optimizer_ms"])
        m_comm0 = meas["comm_ms"]["mean"]
        li = meas.get("comm_lastin_ms")
        m_comm = li["mean"] if li else m_comm0
        p_comm = s["comm_ms"]
        pairs_step.append((m_step, p_step))
        pairs_comm.append((m_comm, p_comm))
        proto = "eager" if d.endswith("-eager") else "default"
        p_step_mo = p_step - s["optimizer_ms"] + meas["optimizer_ms"]["mean"]
        md.append("| %s | %d | %s | %d | %.2f | %.2f | %.2f | %.2f | "
                  "%.2f / %s | %.2f | %.2f | %.2f / %.2f / %.2f | %.2f | "
                  "%.2f |" % (
                      meas["optim"], meas["ranks"], proto,
                      meas["steps_used"], m_step, p_step, m_step / p_step,
                      m_step / p_step_mo,
                      m_comm0, "%.2f" % li["mean"] if li else "-", p_comm,
                      m_comm / p_comm if p_comm > 0 else float("nan"),
                      meas["compute_ms"]["mean"],
                      meas["optimizer_ms"]["mean"], meas["data_ms"]["mean"],
                      s["optimizer_ms"], s["iter_ms"]))
    md.append("")
    md.append("Predicted step = measured data time + the simulator's compute "
              "(the model carries the measured per-layer times) + its "
              "communication (comm stream busy time: the trainer runs the "
              "calls after the backward pass, one at a time, no buckets) + "
              "its optimizer time (parameters x core's bytes/element / "
              "mem_bw_gbs); the column after meas/pred puts the measured "
              "optimizer computation (optim_ms - comm_ms) in its place, "
              "which isolates the compute + communication part.  Last-in: "
              "per call the smallest time over the ranks (the rank that "
              "arrived last did not wait).")
    md.append("")
    md.append("relative error, step time: %s; communication (last-in): %s"
              % (errstats(pairs_step), errstats(pairs_comm)))
    summary.append(("train", "step", 0, errstats(pairs_step), ""))
    summary.append(("train", "comm (last-in)", 0, errstats(pairs_comm), ""))


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("run")
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "..", "build",
                                                 "lbscale"))
    ap.add_argument("--out")
    a = ap.parse_args()
    platform = os.path.join(a.run, "platform.json")
    env = {}
    if os.path.exists(os.path.join(a.run, "env.json")):
        with open(os.path.join(a.run, "env.json")) as f:
            env = json.load(f)
    md = ["## Emulated cluster: measured vs predicted", ""]
    if env:
        md.append("Run `%s`: %s hosts max, tc tbf %s per direction (burst "
                  "%s B, queue %s B), MTU %s, TCP %s, one-way TCP latency "
                  "%.1f us (median ping-pong, the platform's inter_hop_us), "
                  "STREAM triad 1 thread %.1f GB/s (the platform's "
                  "mem_bw_gbs); load average %s before, %s after; "
                  "git %s." % (
                      os.path.basename(os.path.normpath(a.run)),
                      env.get("hosts"), env.get("rate"), env.get("burst"),
                      env.get("limit"), env.get("mtu"), env.get("tcp_cc"),
                      env.get("hop_us", float("nan")),
                      env.get("membw_gbs", float("nan")),
                      env.get("load_before"), env.get("load_after"),
                      env.get("git")))
    summary = []
    for variant in ("fixed", "default"):
        if os.path.isdir(os.path.join(a.run, "coll-%s" % variant)):
            md.append("")
            md.append("### Collectives, %s" % (
                "same algorithm on both sides" if variant == "fixed" else
                "each side's own algorithm choice"))
            coll_tables(a.run, a.bin, platform, variant, md, summary)
    if glob.glob(os.path.join(a.run, "train-*-p*")):
        md.append("")
        md.append("### Training steps (LAMB vs SLAMB)")
        train_tables(a.run, a.bin, platform, md, summary)
    md.append("")
    md.append("### Summary (relative error |predicted - measured| / measured)")
    md.append("")
    md.append("| comparison | all sizes | sizes >= 1 MiB |")
    md.append("|---|---|---|")
    for v, c, P, e_all, e_big in summary:
        what = ("%s %s, %d hosts" % (v, c, P)) if P else ("%s: %s" % (v, c))
        md.append("| %s | %s | %s |" % (what, e_all, e_big))
    text = "\n".join(md) + "\n"
    out = a.out or os.path.join(a.run, "validation.md")
    with open(out, "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
