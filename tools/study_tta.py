"""study_tta.py - simulated time to a target accuracy for the convergence
study (issue 17): `study.py tta`.

  study.py tta STUDY_JSON --inputs SIM_INPUTS.json [--out DIR]
        [--platforms dgx-a100,eth-100g] [--gpus 8,64,1024]
        [--batches LIST] [--lbscale BIN]

What is measured and what is simulated:
  - steps to the target: measured, from the study's recorded runs
    (STUDY_JSON = the study.json that `study.py report` writes; its
    per-epoch test-accuracy curves of every finished seed at the chosen
    rate).  The target of one (model, batch, shards) is 98% of the lowest
    mean final test accuracy among its optimizers (the rule study.py's
    JointSpar verdict uses for a pair), so that every optimizer can reach
    it on average.  Per configuration: the first epoch end at or above it,
    mean over the seeds that get there; the others (and diverged seeds)
    are counted as not reaching it.  Epoch resolution.
  - time per step at scale: simulated, one `lbscale sim step` per point:
    per-layer compute from a traced `lbscale train` run of the same model
    (--compute), scaled to the per-GPU batch = global batch / GPUs
    (--batch-per-gpu), communication from a trace of the same model (the
    optimizers that are not plain data-parallel) or the data-parallel
    contract (sgd, lars, lamb, adamw).  A point whose global batch is
    smaller than (or not a multiple of) the GPU count is skipped, and said.
  - time to target = steps x simulated step time.

SIM_INPUTS.json names the simulator's inputs per model (paths relative to
the file):
  {"models": {"mlp:784-512-256-10": {
      "compute": "compute-mlp",
      "traces": [{"optim": "slamb", "batch": 1024, "file": "t/x.jsonl"},
                 {"optim": "dmsgd", "file": "t/y.jsonl"}, ...]}}}
A trace entry with a batch applies to that global batch only (SLAMB's k
warm-up and 1-bit LAMB's warm-up depend on the run's steps); without one,
to every batch.  A configuration without a compute run for its model or a
trace for its non-data-parallel optimizer is listed as skipped.

Bad input (unknown platform, empty or malformed lists, unreadable files):
one line on stderr, exit 2.
"""
import json
import os
import subprocess
import sys

import study

DENSE = ("sgd", "lars", "lamb", "adamw")   # the simulator's contract
TARGET_FRAC = 0.98
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTE = (
    "Measured: the steps to the target, on this 2-core CPU (the study's "
    "runs, epoch resolution, mean over the seeds that reach it). "
    "Simulated: the time of one step at scale (`lbscale sim step`: the "
    "MLP's per-layer forward/backward times measured on this CPU, scaled "
    "to the per-GPU batch, plus the optimizer's communication priced on "
    "the platform). The compute of a tiny MLP on a CPU core is small, so "
    "the absolute times are small and say nothing about a real model; the "
    "ratios between optimizers at one point are the point. Steps were "
    "measured at the training run's rank count (P): data-parallel methods "
    "compute the same update at any GPU count, but a decentralized ring "
    "(DmSGD, DecentLaM) of more GPUs mixes more slowly, so their steps at "
    "64 or 1024 GPUs are optimistic. A trace's step time is the mean over "
    "a whole run's steps (SLAMB's k warm-up, 1-bit LAMB's dense warm-up), "
    "applied to the steps up to the target.")


# ---- arithmetic (no simulator) --------------------------------------------

def group_of(c):
    return (c["model"], int(c["batch"]), c.get("shards") or "iid")


def targets(configs):
    """(model, batch, shards) -> target test accuracy (%): 98% of the
    lowest mean final accuracy among the group's configurations with a
    finished run."""
    low = {}
    for c in configs:
        m = c.get("test_acc_mean")
        if not c.get("n") or m is None or m != m:
            continue
        g = group_of(c)
        low[g] = min(low.get(g, m), m)
    return {g: round(TARGET_FRAC * m, 2) for g, m in low.items()}


def steps_to_target(c, target):
    """First epoch-end step at or above `target` per finished seed; mean
    over those that get there.  runs counts the diverged seeds too (they
    never get there)."""
    hits = []
    for curve in c.get("curves") or []:
        hit = next((step for step, _sec, acc in curve
                    if step is not None and acc >= target), None)
        if hit is not None:
            hits.append(hit)
    runs = len(c.get("curves") or []) + int(c.get("diverged") or 0)
    return {"target_pct": target, "reached": len(hits), "runs": runs,
            "steps_mean": sum(hits) / len(hits) if hits else None}


def point_skip(batch, gpus):
    """Why (batch, gpus) has no point, or None."""
    if batch < gpus:
        return ("global batch %d is smaller than %d GPUs (less than one "
                "sample per GPU)" % (batch, gpus))
    if batch % gpus:
        return "global batch %d is not a multiple of %d GPUs" % (batch, gpus)
    return None


def label(c):
    s = study.optim_name(c["spec"])
    extra = []
    if int(c.get("ranks") or 1) > 1:
        extra.append("P=%d" % int(c["ranks"]))
    if c.get("topology"):
        extra.append(c["topology"])
    if (c.get("shards") or "iid") != "iid":
        extra.append(c["shards"])
    return s + (" (%s)" % ", ".join(extra) if extra else "")


def sim_plan(c, inputs):
    """(compute run, --optim argument) for configuration c, or (None,
    reason)."""
    m = inputs.get(c["model"])
    if not m:
        return None, "no compute run for model %s in the inputs" % c["model"]
    name = study.optim_name(c["spec"])
    for t in m.get("traces") or []:
        if t["optim"] == name and t.get("batch") == int(c["batch"]):
            return m["compute"], t["file"]
    for t in m.get("traces") or []:
        if t["optim"] == name and t.get("batch") is None:
            return m["compute"], t["file"]
    if name in DENSE:
        return m["compute"], name
    return None, "no communication trace for %s on %s" % (name, c["model"])


def build_rows(configs, inputs, platforms, gpus, step_fn):
    """The table's rows and the skipped points.  step_fn(compute, optim,
    platform, gpus, batch_per_gpu) -> simulated step time in ms."""
    tg = targets(configs)
    rows, skipped, points = [], [], {}
    for c in sorted(configs, key=lambda c: (c["model"], int(c["batch"]),
                                            c["spec"], int(c.get("ranks")
                                                           or 1))):
        b = int(c["batch"])
        if group_of(c) not in tg:
            skipped.append("%s b=%d: no finished run" % (label(c), b))
            continue
        if "curves" not in c:
            skipped.append("%s b=%d: no per-epoch curves (a study.json of "
                           "an older study.py: run its report again)"
                           % (label(c), b))
            continue
        st = steps_to_target(c, tg[group_of(c)])
        compute, optim = sim_plan(c, inputs)
        if compute is None:
            skipped.append("%s %s b=%d: %s" % (label(c), c["model"], b,
                                               optim))
            continue
        for plat in platforms:
            for g in gpus:
                why = point_skip(b, g)
                if why:
                    points.setdefault((b, g, why), []).append(label(c))
                    continue
                ms = step_fn(compute, optim, plat, g, b // g)
                rows.append({
                    "optimizer": label(c), "spec": c["spec"],
                    "model": c["model"], "batch": b, "ranks_trained":
                    int(c.get("ranks") or 1), "shards": c.get("shards"),
                    "platform": plat, "gpus": g, "batch_per_gpu": b // g,
                    "sim_input": optim, **st, "step_ms": ms,
                    "tta_s": (st["steps_mean"] * ms / 1000.0
                              if st["steps_mean"] is not None else None)})
    mark_fastest(rows)
    # the optimizers at one point next to each other
    rows.sort(key=lambda r: (r["model"], r["batch"], r["shards"] or "",
                             platforms.index(r["platform"]), r["gpus"],
                             r["optimizer"]))
    for (b, g, why), who in sorted(points.items()):
        skipped.append("b=%d at %d GPUs, every platform: %s (%s)" % (
            b, g, why, ", ".join(sorted(set(who)))))
    return rows, skipped


def mark_fastest(rows):
    """vs_fastest: each row's time over the least time among the
    optimizers at its (model, batch, shards, platform, GPUs)."""
    best = {}
    for r in rows:
        k = (r["model"], r["batch"], r["shards"], r["platform"], r["gpus"])
        if r["tta_s"] is not None:
            best[k] = min(best.get(k, r["tta_s"]), r["tta_s"])
    for r in rows:
        k = (r["model"], r["batch"], r["shards"], r["platform"], r["gpus"])
        r["vs_fastest"] = (r["tta_s"] / best[k] if r["tta_s"] is not None
                           and best.get(k) else None)


# ---- output ------------------------------------------------------------------

def fmt_steps(r):
    if not r["reached"]:
        return "not reached (0/%d runs)" % r["runs"]
    return "%.1f (%d/%d runs)" % (r["steps_mean"], r["reached"], r["runs"])


def table(rows):
    out = ["| optimizer | model | batch (samples) | target (% test acc) | "
           "platform (preset) | GPUs (count) | batch/GPU (samples) | "
           "steps to target (steps, measured) | sim step time (ms) | "
           "simulated time to target (s) | vs fastest (x) |",
           "|---|---|--:|--:|---|--:|--:|--:|--:|--:|--:|"]
    for r in rows:
        out.append("| %s | %s | %d | %.2f | %s | %d | %d | %s | %.4g | %s "
                   "| %s |" % (
                       r["optimizer"], r["model"], r["batch"],
                       r["target_pct"], r["platform"], r["gpus"],
                       r["batch_per_gpu"], fmt_steps(r), r["step_ms"],
                       "%.4g" % r["tta_s"] if r["tta_s"] is not None
                       else "-", "%.2f" % r["vs_fastest"]
                       if r["vs_fastest"] is not None else "-"))
    return out


def report_text(rows, skipped):
    lines = table(rows) + ["", "Note: " + NOTE]
    if skipped:
        lines += ["", "Skipped:"] + ["- " + s for s in skipped]
    return "\n".join(lines) + "\n"


# ---- the simulator -------------------------------------------------------------

def sim_platforms(binary):
    """Platform presets `lbscale sim list` names."""
    try:
        p = subprocess.run([binary, "sim", "list"], capture_output=True,
                           text=True, timeout=60)
    except OSError as e:
        study.die("tta: %s: %s" % (binary, e.strerror))
    names, inside = [], False
    for line in p.stdout.splitlines():
        if not line.startswith(" "):
            inside = line.startswith("platforms")
        elif inside:
            names.append(line.strip())
    if p.returncode or not names:
        study.die("tta: '%s sim list' named no platforms" % binary, 1)
    return names


def sim_step_fn(binary):
    """step_fn for build_rows: one `lbscale sim step` per distinct point
    (iter_ms of its --json row); a failure stops the command (exit 1)."""
    cache = {}

    def step(compute, optim, plat, gpus, bpg):
        key = (compute, optim, plat, gpus, bpg)
        if key not in cache:
            argv = [binary, "sim", "step", "--compute", compute,
                    "--platform", plat, "--optim", optim, "--gpus",
                    str(gpus), "--batch-per-gpu", str(bpg), "--json",
                    "--no-save"]
            p = subprocess.run(argv, capture_output=True, text=True,
                               timeout=300)
            if p.returncode:
                study.die("tta: %s: %s" % (" ".join(argv[1:]), (
                    p.stderr.strip().splitlines() or ["exit %d" %
                                                      p.returncode])[-1]),
                          1)
            cache[key] = float(json.loads(p.stdout.splitlines()[-1])
                               ["iter_ms"])
        return cache[key]
    return step


# ---- command line ------------------------------------------------------------

def load_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        study.die("tta: %s %s: %s" % (what, path, e.strerror))
    except ValueError as e:
        study.die("tta: %s %s: not JSON (%s)" % (what, path, e))


def load_inputs(path):
    """SIM_INPUTS.json -> {model: {"compute": path, "traces": [...]}},
    paths made absolute and checked."""
    d = load_json(path, "--inputs")
    base = os.path.dirname(os.path.abspath(path))
    models = d.get("models") if isinstance(d, dict) else None
    if not isinstance(models, dict) or not models:
        study.die("tta: --inputs %s: no \"models\" object" % path)
    out = {}
    for model, m in models.items():
        if not isinstance(m, dict) or not isinstance(m.get("compute"), str):
            study.die("tta: --inputs %s: model %s has no \"compute\" run"
                      % (path, model))
        comp = os.path.join(base, m["compute"])
        if not os.path.exists(comp):
            study.die("tta: --inputs %s: compute run %s does not exist"
                      % (path, comp))
        traces = []
        for t in m.get("traces") or []:
            if not isinstance(t, dict) or not isinstance(t.get("optim"),
                                                         str) or \
                    not isinstance(t.get("file"), str):
                study.die("tta: --inputs %s: a trace of %s needs \"optim\" "
                          "and \"file\"" % (path, model))
            f = os.path.join(base, t["file"])
            if not os.path.isfile(f):
                study.die("tta: --inputs %s: trace %s does not exist"
                          % (path, f))
            b = t.get("batch")
            traces.append({"optim": t["optim"], "file": f,
                           "batch": int(b) if b is not None else None})
        out[model] = {"compute": comp, "traces": traces}
    return out


def parse_gpus(text):
    g = study.parse_list("--gpus", text, int, 8, 16384)
    for v in g:
        if v & (v - 1):
            study.die("--gpus: %d is not a power of two" % v)
    return g


def parse_platforms(text, known):
    if text is None or not text.strip():
        study.die("--platforms: empty list")
    out = []
    for p in (t.strip() for t in text.split(",")):
        if p not in known and not (p.endswith(".json") and
                                   os.path.isfile(p)):
            study.die("--platforms: unknown platform '%s' (presets: %s)"
                      % (p, ", ".join(known)))
        if p in out:
            study.die("--platforms: %s appears twice" % p)
        out.append(p)
    return out


def default_binary():
    return os.environ.get("LBSCALE") or os.path.join(ROOT, "build",
                                                     "lbscale")


def main(args):
    opts = {"--inputs": None, "--out": None,
            "--platforms": "dgx-a100,eth-100g", "--gpus": "8,64,1024",
            "--batches": None, "--lbscale": None}
    files = study.parse_opts("tta", args, opts)
    if len(files) != 1 or not opts["--inputs"]:
        study.die("tta: usage: study.py tta STUDY_JSON --inputs "
                  "SIM_INPUTS.json [--out DIR] [--platforms LIST] "
                  "[--gpus LIST] [--batches LIST] [--lbscale BIN]")
    gpus = parse_gpus(opts["--gpus"])
    batches = (study.parse_batches(opts["--batches"])
               if opts["--batches"] is not None else None)
    binary = opts["--lbscale"] or default_binary()
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        study.die("tta: no lbscale binary at %s (--lbscale BIN or "
                  "$LBSCALE)" % binary)
    platforms = parse_platforms(opts["--platforms"], sim_platforms(binary))
    d = load_json(files[0], "study")
    configs = d.get("configurations") if isinstance(d, dict) else None
    if not isinstance(configs, list):
        study.die("tta: %s: no \"configurations\" (not a study.json of "
                  "study.py report)" % files[0])
    inputs = load_inputs(opts["--inputs"])
    if batches is not None:
        configs = [c for c in configs if int(c["batch"]) in batches]
    rows, skipped = build_rows(configs, inputs, platforms, gpus,
                               sim_step_fn(binary))
    text = report_text(rows, skipped)
    if opts["--out"]:
        os.makedirs(opts["--out"], exist_ok=True)
        with open(os.path.join(opts["--out"], "tta.md"), "w") as f:
            f.write(text)
        with open(os.path.join(opts["--out"], "tta.json"), "w") as f:
            json.dump({"study": files[0], "platforms": platforms,
                       "gpus": gpus, "target_rule": "%g x the lowest mean "
                       "final test accuracy of the (model, batch, shards)"
                       % TARGET_FRAC, "note": NOTE, "rows": rows,
                       "skipped": skipped}, f, indent=1)
            f.write("\n")
    sys.stdout.write(text)
    return 0
