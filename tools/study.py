#!/usr/bin/python3
"""study.py - issue 17's convergence study: choose learning rates, write the
seed phase, compute statistics and verdicts.  Python 3 standard library and
numpy only.

  study.py check [--seeds LIST] [--batches LIST] [--lr-grid LIST]
      validate lists (one line on stderr and exit 2 when a list is empty,
      malformed or out of range)
  study.py seeds GRID_RUN --out SUITE.json [--seeds 1,2,3,4,5]
        [--decentral-ranks 8] [--decentral-batches 2048,8192]
        [--topology ring] [--onebit-ranks 4] [--onebit-batches 2048,8192]
        [--timeout-s 1800]
      phase 2: from the grid run (bench/suites/convergence-grid.json) pick,
      per (optimizer spec, model, batch, ranks, topology), the base rate
      with the best validation accuracy on the grid seed (diverged runs
      never win; see choose()), and write a suite that runs the other
      seeds at that rate, plus DmSGD, DecentLaM and parallel momentum SGD
      on the decentral ranks (SGD's rate) and 1-bit LAMB (LAMB's rate;
      dense warm-up 20% of the steps).  The grid seed's run is reused as
      one of the seeds.  Writes SUITE.chosen.json (the rates and their
      grids) next to the suite.
  study.py decentral GRID_RUN [RUN...] --out SUITE.json --ranks P
        --shards iid|dirichlet:alpha=A --batches 2048,8192 [--seeds 1,2,3]
        [--topology ring] [--consensus-samples 8192]
        [--optims sgd,dmsgd,decentlam] [--lr-factors 1 | --tuned]
      the decentralized comparison for one (ranks, shards): DmSGD,
      DecentLaM and parallel momentum SGD (the global average), every
      seed; DmSGD and DecentLaM log their consensus distance every
      max(1, S / batch) steps (every S samples: --consensus-samples).
      --optims: a subset (e.g. to add consensus curves to runs recorded
      without them).  Rates: parallel SGD's, chosen on the 1-rank grid,
      times each --lr-factors value (e.g. 0.5,2: DmSGD's and DecentLaM's
      own grid around it, on one seed); --tuned: DmSGD's and DecentLaM's
      own rate chosen on the runs given (their grid and extension), only
      the seeds not yet run at it (bench/suites/decentral-tune.sh).
  study.py extend GRID_RUN [RUN...] --out SUITE.json [--factors 4,16]
        [--optims LIST] [--timeout-s 1800]
      phase 1b: where the chosen rate is the grid's highest, a suite with
      highest x f for f in --factors; where it is the lowest (or nothing
      reached 50% validation accuracy), lowest / f.  --optims: only these
      optimizers' grids.  Grids of one rate are not extended.
  study.py report RUN [RUN...] --out DIR [--model M] [--require-verdicts]
        [--budget-ref STUDY_JSON] [--hours 3] [--note TEXT]
      statistics per configuration (optimizer spec, model, batch, ranks,
      topology, shards) at its chosen rate (test accuracy mean +- sd, 95%
      CI from Student's t, final training loss, validation accuracy, bytes
      sent per rank, wall time; diverged runs counted and never averaged)
      and the verdicts with their statistics (the decentralized one per
      ranks, topology and shard kind); DIR gets study.json, table.md,
      verdicts.md and gnuplot data files (consensus.dat and
      consensus-panels.gp for plots/consensus.gp).
      --model: the model of the large-batch verdict (default
      mlp:784-512-256-10; cnn for the CNN's runs).
      --require-verdicts: exit 1 when any verdict cannot be computed.
      Every comparison whose interval does not decide it gets a power
      statement: the seeds per configuration at which the interval is
      expected to clear the observed difference (and at 80% power), and
      whether their training fits --hours here.  --budget-ref: another
      budget's study.json, whose cells are listed beside this run's (the
      budget-sensitivity row).  --note: a first line for verdicts.md.
      claims.dat / claims-panels.gp: accuracy vs epoch per claim
      (plots/claims.gp).
  study.py plan CLAIM --epochs E --out SUITE.json
      issue 35: the rate grid of one claim (lb, slamb, onebit, jointspar,
      cnn) at E epochs, from the 3-epoch study's suites
  study.py budget RUN --out DIR [--window 0.2] [--tol 0.01]
      issue 35: the first epoch at which each optimizer's training loss
      improved by less than tol over the last window of the epochs; the
      largest (the run's length when one never does) as epochs=E
  study.py progress OUT [--claims LIST]
      a budget study's phases (done, partial, not started), runs and
      training time, and what is not finished (markdown)
  study.py tta STUDY_JSON --inputs SIM_INPUTS.json [--out DIR]
        [--platforms dgx-a100,eth-100g] [--gpus 8,64,1024] [--batches LIST]
      simulated time to a target accuracy: the report's measured steps to
      it x `lbscale sim step`'s time per step at scale (tools/study_tta.py)

Exit status: 0 ok, 1 runtime failure (or a missing verdict with
--require-verdicts), 2 bad input.
"""
import json
import math
import os
import sys

import numpy as np

PROG = "study.py"


def die(msg, code=2):
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    sys.exit(code)


def parse_opts(cmd, args, opts, flags=()):
    """Options of a subcommand: `opts` maps each valued option to its
    default (updated in place), `flags` lists the valueless ones (set to
    True when given); anything else not starting with '-' is a run
    directory.  Returns the run directories."""
    runs = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in flags:
            opts[a] = True
            i += 1
        elif a in opts:
            if i + 1 >= len(args):
                die("%s: missing value" % a)
            opts[a] = args[i + 1]
            i += 2
        elif a.startswith("-"):
            die("%s: unknown option '%s'" % (cmd, a))
        else:
            runs.append(a)
            i += 1
    return runs


# ---- list parsing -----------------------------------------------------------

def parse_list(opt, text, kind, lo, hi):
    """'1,2,3' -> [1, 2, 3]; one line and exit 2 on any problem."""
    if text is None or not text.strip():
        die("%s: empty list" % opt)
    out = []
    for tok in text.split(","):
        tok = tok.strip()
        try:
            v = int(tok) if kind is int else float(tok)
        except ValueError:
            die("%s: '%s' is not %s" % (opt, tok, "an integer" if kind is int
                                         else "a number"))
        if kind is float and not math.isfinite(v):
            die("%s: '%s' is not finite" % (opt, tok))
        if not lo <= v <= hi:
            die("%s: %s out of range [%g, %g]" % (opt, tok, lo, hi))
        if v in out:
            die("%s: %s appears twice" % (opt, tok))
        out.append(v)
    return out


def parse_seeds(t):
    return parse_list("--seeds", t, int, 0, 2 ** 52)


def parse_batches(t):
    return parse_list("--batches", t, int, 1, 2 ** 24)


def parse_grid(t):
    v = parse_list("--lr-grid", t, float, 1e-9, 1e4)
    return v


# ---- Student t ----------------------------------------------------------------

def _betacf(a, b, x):
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        de = d * c
        h *= de
        if abs(de - 1.0) < 1e-14:
            break
    return h


def betainc(a, b, x):
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbt = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) +
           a * math.log(x) + b * math.log(1 - x))
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1 - x) / b


def t_cdf(t, df):
    x = df / (df + t * t)
    p = 0.5 * betainc(df / 2.0, 0.5, x)
    return 1 - p if t > 0 else p


def t_ppf(q, df):
    """Quantile of Student's t (df > 0, real) by bisection."""
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < q:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def mean_ci(x, level=0.95):
    x = np.asarray(x, float)
    n = len(x)
    m = float(x.mean()) if n else float("nan")
    if n < 2:
        return m, float("nan"), (float("nan"), float("nan"))
    sd = float(x.std(ddof=1))
    h = t_ppf(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return m, sd, (m - h, m + h)


def lin_comb(terms, level=0.95):
    """sum c_i * mean(x_i) over independent samples, with a Welch-
    Satterthwaite CI.  terms: [(c, samples)].  None when a sample has < 2
    values."""
    est, var, dfden = 0.0, 0.0, 0.0
    for c, x in terms:
        x = np.asarray(x, float)
        if len(x) < 2:
            return None
        v = c * c * float(x.var(ddof=1)) / len(x)
        est += c * float(x.mean())
        var += v
        dfden += v * v / (len(x) - 1)
    se = math.sqrt(var)
    df = var * var / dfden if dfden > 0 else 1e9
    df = max(df, 1.0)
    h = t_ppf(0.5 + level / 2, df) * se if se > 0 else 0.0
    return {"estimate": est, "se": se, "df": df, "level": level,
            "ci": [est - h, est + h]}


# ---- rows -------------------------------------------------------------------

def load_rows(run):
    path = os.path.join(run, "train.jsonl")
    if not os.path.isfile(path):
        die("%s: no train.jsonl (not a study run directory)" % run)
    rows = []
    with open(path) as f:
        for ln, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except ValueError as e:
                die("%s line %d: %s" % (path, ln, e), 1)
            if r.get("event") == "final":
                r["_run"] = run
                rows.append(r)
    # suite --jobs appends rows in the order runs end: put the suite's
    # runs back in the order they started (as lbs_run_rows does), so that
    # the first row of a configuration is the same whatever the timing
    when = started_order(run)
    slots = [i for i, r in enumerate(rows) if r.get("attempt") in when]
    for i, r in zip(slots, sorted((rows[i] for i in slots),
                                  key=lambda r: when[r["attempt"]])):
        rows[i] = r
    rows += failed_rows(run)
    return rows


def started_order(run):
    """attempt -> (suite invocation, when its run started): "started_s"
    where the suite ran entries side by side, else the commit's line (one
    at a time, runs commit in the order they start)."""
    when, inv = {}, 0
    path = os.path.join(run, "suite.jsonl")
    if not os.path.isfile(path):
        return when
    with open(path) as f:
        for ln, line in enumerate(f):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            inv += r.get("event") == "start"
            if r.get("attempt") and r.get("status") == "ok":
                when[r["attempt"]] = (inv, r.get("started_s", ln))
    return when


MLP_DEFAULT = "mlp:784-512-256-10"
MODEL_ALIAS = {"mlp8": "mlp:784-256-256-256-256-256-256-256-10"}


def failed_rows(run):
    """A training entry that the suite recorded as failed left no result
    row: a non-finite update makes `lbscale train` stop (exit 2 on every
    rank).  Such runs become rows marked diverged (when their stderr says
    non-finite) or failed, so that they are counted, never dropped."""
    path = os.path.join(run, "suite.jsonl")
    out = []
    if not os.path.isfile(path):
        return out
    with open(path) as f:
        entries = []
        for line in f:
            try:
                entries.append(json.loads(line))
            except ValueError:
                continue
    # an entry that failed and then ran again to the end (suite --resume)
    # has its result row: the failed attempt is not a run of its own
    redone = {e.get("name") for e in entries
              if e.get("event") == "entry" and e.get("status") == "ok"}
    for e in entries:
        if e.get("event") != "entry" or e.get("verb") != "train" or \
                e.get("status") not in ("failed",) or \
                e.get("name") in redone:
            continue
        a = e.get("args") or e.get("argv") or []
        if "train" in a:
            a = a[a.index("train") + 1:]
        spec = argval(a, "--optim")
        if not spec or argval(a, "--global-batch") is None:
            continue
        model = argval(a, "--model", MLP_DEFAULT)
        model = MODEL_ALIAS.get(model, model)
        name = optim_name(spec)
        topo = argval(a, "--topology")
        if topo is None and name in ("dmsgd", "decentlam"):
            topo = "ring"
        shards = argval(a, "--shards", "iid")
        lrb = argval(a, "--lr-base")
        nonfinite = "non-finite" in failure_text(run, e)
        out.append({"event": "final", "spec": spec, "model": model,
                    "global_batch": int(argval(a, "--global-batch")),
                    "ranks": int(e.get("ranks", 1)), "topology": topo,
                    "shards": shards,
                    "lr_base": float(lrb) if lrb else None, "lr": None,
                    "seed": int(argval(a, "--seed", "1")),
                    "test_accuracy": None, "train_loss": None,
                    "diverged": True, "failed": not nonfinite,
                    "note": e.get("name"), "_run": run, "argv": a})
    return out


def failure_text(run, e):
    """What a failed entry printed: its whole log where the suite kept one
    (under mpirun the stderr tail is mpirun's footer, and the ranks'
    'non-finite' lines come before it), else the tail."""
    log = e.get("log")
    if log:
        try:
            with open(os.path.join(run, log), errors="replace") as f:
                return f.read()
        except OSError:
            pass
    return e.get("stderr_tail") or ""


def optim_name(spec):
    return spec.split(":", 1)[0]


def key_of(r):
    """A configuration: (spec, model, batch, ranks, topology, shards);
    rows written before --shards existed are iid."""
    return (r["spec"], r.get("model"), int(r["global_batch"]),
            int(r.get("ranks", 1)), r.get("topology"),
            r.get("shards") or "iid")


def key_str(k):
    spec, model, b, p, topo, shards = k
    s = "%s %s b=%d P=%d" % (spec, model, b, p)
    return (s + (" topo=%s" % topo if topo else "") +
            (" shards=%s" % shards if shards != "iid" else ""))


def diverged(r):
    """NaN/Inf loss (null in the row) or a final training loss above ten
    times chance's (10 ln 10 for 10 classes)."""
    acc = r.get("test_accuracy")
    tl = r.get("train_loss")
    return (bool(r.get("diverged")) or acc is None or tl is None or
            not math.isfinite(tl) or tl > 10 * math.log(10))


def dedupe(rows):
    seen, out = set(), []
    for r in rows:
        k = key_of(r) + (r.get("lr_base"), r.get("lr"), r.get("seed"))
        if k in seen:
            continue
        seen.add(k)
        out.append(r)
    return out


def val_score(r):
    """A run's score for choosing a rate: validation accuracy (test
    accuracy for runs without a validation split), -1 when diverged."""
    if diverged(r):
        return -1.0
    v = r.get("val_accuracy")
    return v if v is not None else (r.get("test_accuracy") or -1.0)


def choose(rows):
    """config key -> the chosen lr_base (or lr), the seed it was chosen on,
    its place in the grid ("lowest", "highest" or None) and the grid's
    scores.  Rates are compared on one seed, the grid's: the lowest seed
    that every rate of the configuration ran (the protocol's seed 1), so
    that seeds run later at one rate (phase 2, or the earlier study's
    seeds at a rate that is now one point of a per-method grid) never
    change the choice.  The best validation accuracy wins (diverged = -1),
    ties go to the lower rate.  Without a seed common to every rate: the
    rate with the most seeds, then the best mean validation accuracy."""
    by = {}
    for r in rows:
        by.setdefault(key_of(r), []).append(r)
    out = {}
    for k, rs in by.items():
        lrs = {}
        for r in rs:
            lrs.setdefault(r.get("lr_base", r.get("lr")), []).append(r)
        common = set.intersection(*({r.get("seed") for r in g}
                                    for g in lrs.values()))
        common.discard(None)
        gseed = min(common) if common else None

        def score(item):
            lr, g = item
            if gseed is not None:
                g = [r for r in g if r.get("seed") == gseed]
                return (float(np.mean([val_score(r) for r in g])), -(lr or 0))
            return (len(g), float(np.mean([val_score(r) for r in g])),
                    -(lr or 0))
        best = max(lrs.items(), key=score)
        grid = []
        for lr, g in sorted(lrs.items(), key=lambda t: t[0] or 0):
            grid.append({"lr_base": lr, "runs": len(g),
                         "val_accuracy": [None if diverged(r) else
                                          r.get("val_accuracy") for r in g],
                         "grid_seed_val_accuracy": None if gseed is None
                         else float(np.mean([val_score(r) for r in g
                                             if r.get("seed") == gseed])),
                         "diverged": sum(diverged(r) for r in g)})
        rates = [lr for lr in lrs if lr is not None]
        edge = (None if len(rates) < 2 else
                "lowest" if best[0] == min(rates) else
                "highest" if best[0] == max(rates) else None)
        out[k] = {"lr_base": best[0], "lr": best[1][0].get("lr"),
                  "grid": grid, "grid_seed": gseed, "grid_edge": edge,
                  "best_val": score(best)[-2]}
    return out


# ---- seeds ------------------------------------------------------------------

def argval(argv, opt, default=None):
    if opt in argv:
        i = argv.index(opt)
        if i + 1 < len(argv):
            return argv[i + 1]
    return default


def model_tag(model):
    """The model part of a seed entry's name: cnn, mlp8 (the deeper MLP,
    JointSpar's) or mlp."""
    if model and model.startswith("cnn"):
        return "cnn"
    if model and model.count("-") > 4:
        return "mlp8"
    return "mlp"


def cmd_seeds(args):
    opts = {"--seeds": "1,2,3,4,5", "--decentral-ranks": "8",
            "--decentral-batches": "2048,8192", "--topology": "ring",
            "--onebit-ranks": "4", "--onebit-batches": "2048,8192",
            "--out": None, "--timeout-s": "1800"}
    runs = parse_opts("seeds", args, opts)
    timeout = parse_list("--timeout-s", opts["--timeout-s"], int, 1,
                         10 ** 6)[0]
    run = runs[0] if runs else None
    if run is None or not opts["--out"]:
        die("seeds: usage: study.py seeds GRID_RUN --out SUITE.json [...]")
    seeds = parse_seeds(opts["--seeds"])
    dbatches = [] if opts["--decentral-batches"] == "none" else parse_list(
        "--decentral-batches", opts["--decentral-batches"], int, 1, 2 ** 24)
    obatches = [] if opts["--onebit-batches"] == "none" else parse_list(
        "--onebit-batches", opts["--onebit-batches"], int, 1, 2 ** 24)
    dranks = parse_list("--decentral-ranks", opts["--decentral-ranks"], int,
                        1, 4096)
    oranks = parse_list("--onebit-ranks", opts["--onebit-ranks"], int, 1, 4096)
    if len(dranks) != 1 or len(oranks) != 1:
        die("--decentral-ranks/--onebit-ranks: one rank count each")
    if opts["--topology"] not in ("ring", "symexp", "full", "exponential",
                                  "onepeer"):
        die("--topology: '%s' is not one of ring, symexp, full, exponential, "
            "onepeer" % opts["--topology"])
    rows = []
    for r in runs:
        rows += load_rows(r)
    rows = dedupe(rows)
    if not rows:
        die("%s: no finished training rows" % run, 1)
    chosen = choose(rows)
    argv0 = rows[0].get("argv", [])
    common = {}
    for o in ("--epochs", "--subset", "--val", "--test-subset", "--warmup",
              "--threads"):
        v = argval(argv0, o)
        if v is not None:
            common[o] = v
    grid_seed = int(rows[0].get("seed", 1))
    entries = []

    def add(name, spec, model, batch, ranks, lr, extra=(), seeds_=None):
        a = ["--optim", spec, "--global-batch", str(batch), "--lr-base",
             repr(lr), "--seed", "{seed}", "--no-trace"]
        for o, v in common.items():
            a += [o, v]
        if model and model != "mlp:784-512-256-10":
            a += ["--model", model]
        a += list(extra)
        e = {"name": name + "-s{seed}", "verb": "train",
             "foreach": {"seed": [str(s) for s in (seeds_ or seeds)]},
             "args": a, "est_s": 10}
        if ranks != 1:
            e["ranks"] = ranks
        entries.append(e)

    others = [s for s in seeds if s != grid_seed]
    for k, c in sorted(chosen.items(), key=lambda t: key_str(t[0])):
        spec, model, b, p, topo, _ = k
        if others:
            nm = "%s-%s-b%d-p%d" % (optim_name(spec), model_tag(model), b, p)
            add(nm, spec, model, b, p, c["lr_base"], seeds_=others)

    def find(name, batch, model="mlp:784-512-256-10"):
        for k, c in chosen.items():
            if optim_name(k[0]) == name and k[1] == model and k[2] == batch:
                return c["lr_base"]
        return None

    P = dranks[0]
    for b in dbatches:
        lr = find("sgd", b)
        if lr is None:
            die("seeds: the grid has no sgd run at batch %d (needed for the "
                "decentralized runs)" % b, 1)
        add("dec-parallel-sgd-b%d-p%d" % (b, P), "sgd", None, b, P, lr)
        for o in ("dmsgd", "decentlam"):
            add("dec-%s-%s-b%d-p%d" % (o, opts["--topology"], b, P), o, None,
                b, P, lr, extra=["--topology", opts["--topology"]])
    for b in obatches:
        lr = find("lamb", b)
        if lr is None:
            die("seeds: the grid has no lamb run at batch %d (needed for "
                "1-bit LAMB)" % b, 1)
        add("onebit-b%d-p%d" % (b, oranks[0]), "onebit_lamb", None, b,
            oranks[0], lr)
    suite = {"suite": "convergence-seeds",
             "description": "Issue 17, phase 2 (written by tools/study.py "
             "seeds from %s): every configuration at the rate chosen on the "
             "validation split, seeds %s (seed %d's run is the grid's)."
             % (" ".join(runs), ",".join(map(str, seeds)), grid_seed),
             "timeout_s": timeout, "entries": entries}
    with open(opts["--out"], "w") as f:
        json.dump(suite, f, indent=1)
        f.write("\n")
    ch = [{"config": key_str(k), "spec": k[0], "model": k[1], "batch": k[2],
           "ranks": k[3], "topology": k[4], "lr_base": c["lr_base"],
           "lr": c["lr"], "grid": c["grid"]} for k, c in chosen.items()]
    chosen_path = os.path.splitext(os.path.abspath(opts["--out"]))[0]
    with open(chosen_path + ".chosen.json", "w") as f:
        json.dump(ch, f, indent=1)
        f.write("\n")
    print("%s: %d configurations, %d entries -> %s" % (PROG, len(chosen),
                                                       len(entries),
                                                       opts["--out"]))


# ---- decentral --------------------------------------------------------------

def shards_tag(shards):
    """'iid' -> 'iid', 'dirichlet:alpha=0.1' -> 'dir0.1' (entry names);
    None when the text is neither iid nor a valid Dirichlet spec."""
    if shards == "iid":
        return "iid"
    pre = "dirichlet:alpha="
    try:
        alpha = float(shards[len(pre):]) if shards.startswith(pre) else None
    except ValueError:
        alpha = None
    if alpha is None or not math.isfinite(alpha) or not 0 < alpha <= 1e6:
        return None
    return "dir%g" % alpha


def decentral_opts(args):
    """cmd_decentral's options, validated (exit 2 with one line)."""
    opts = {"--seeds": "1,2,3", "--ranks": None, "--shards": "iid",
            "--batches": "2048,8192", "--topology": "ring",
            "--consensus-samples": "8192", "--optims": "sgd,dmsgd,decentlam",
            "--lr-factors": "1", "--out": None, "--tuned": False}
    runs = parse_opts("decentral", args, opts, flags=("--tuned",))
    if not runs or not opts["--out"] or not opts["--ranks"]:
        die("decentral: usage: study.py decentral GRID_RUN --out SUITE.json "
            "--ranks P [--shards S] [--batches LIST] [--seeds LIST] "
            "[--lr-factors LIST | --tuned]")
    o = {"runs": runs, "out": opts["--out"], "topo": opts["--topology"],
         "shards": opts["--shards"], "tuned": opts["--tuned"],
         "seeds": parse_seeds(opts["--seeds"]),
         "batches": parse_list("--batches", opts["--batches"], int, 1,
                               2 ** 24),
         "factors": parse_list("--lr-factors", opts["--lr-factors"], float,
                               1e-6, 1e6)}
    ranks = parse_list("--ranks", opts["--ranks"], int, 2, 4096)
    every_s = parse_list("--consensus-samples", opts["--consensus-samples"],
                         int, 1, 2 ** 40)
    if len(ranks) != 1 or len(every_s) != 1:
        die("--ranks/--consensus-samples: one value each")
    o["P"], o["every_s"] = ranks[0], every_s[0]
    o["optims"] = [x.strip() for x in opts["--optims"].split(",")]
    for x in o["optims"]:
        if x not in ("sgd", "dmsgd", "decentlam") or o["optims"].count(x) > 1:
            die("--optims: '%s' is not a list of distinct sgd, dmsgd, "
                "decentlam" % opts["--optims"])
    if o["tuned"] and o["factors"] != [1.0]:
        die("--tuned and --lr-factors exclude each other (--tuned runs the "
            "rate chosen on the grid that --lr-factors wrote)")
    o["tag"] = shards_tag(o["shards"])
    if o["tag"] is None:
        die("--shards: '%s' is not iid or dirichlet:alpha=A with "
            "0 < A <= 1e6" % o["shards"])
    if o["topo"] not in ("ring", "symexp", "full"):
        die("--topology: '%s' is not one of ring, symexp, full (the "
            "symmetric graphs DecentLaM's analysis assumes)" % o["topo"])
    for b in o["batches"]:
        if b % o["P"]:
            die("--batches: %d is not a multiple of the %d ranks"
                % (b, o["P"]))
    return o


def decentral_rates(o, rows, chosen, optim, b):
    """[(lr_base, name suffix, seeds)] for one optimizer and batch.
    Parallel SGD's rate is the 1-rank grid's choice (exit 1 without one).
    Default: that rate times each --lr-factors value (the per-method grid;
    factor 1 keeps the former names).  --tuned: DmSGD's and DecentLaM's
    own rate chosen on the runs (their grid, extension included), only the
    seeds not yet run at it."""
    par = next((c["lr_base"] for k, c in chosen.items()
                if optim_name(k[0]) == "sgd" and k[1] == MLP_DEFAULT
                and k[2] == b and k[3] == 1), None)
    if par is None:
        die("decentral: the grid has no 1-rank sgd run at batch %d" % b, 1)
    if not o["tuned"] or optim == "sgd":
        return [(par * f, "" if f == 1 else "-x%g" % f, o["seeds"])
                for f in o["factors"]]
    k = (optim, MLP_DEFAULT, b, o["P"], o["topo"], o["shards"])
    if k not in chosen:
        die("decentral --tuned: no %s runs on %d ranks, %s shards, batch %d"
            % (optim, o["P"], o["shards"], b), 1)
    lr = chosen[k]["lr_base"]
    have = {r.get("seed") for r in rows
            if key_of(r) == k and r.get("lr_base") == lr}
    todo = [s for s in o["seeds"] if s not in have]
    return [(lr, "-lr%.10g" % lr, todo)] if todo else []


def cmd_decentral(args):
    o = decentral_opts(args)
    runs, P, topo, shards = o["runs"], o["P"], o["topo"], o["shards"]
    rows = []
    for r in runs:
        rows += load_rows(r)
    rows = dedupe(rows)
    if not rows:
        die("%s: no finished training rows" % runs[0], 1)
    chosen = choose(rows)
    argv0 = rows[0].get("argv", [])
    common = []
    for x in ("--epochs", "--subset", "--val", "--test-subset", "--warmup",
              "--threads"):
        v = argval(argv0, x)
        if v is not None:
            common += [x, v]
    entries = []
    for b in o["batches"]:
        every = max(1, o["every_s"] // b)
        for opt in o["optims"]:
            for lr, suffix, seeds in decentral_rates(o, rows, chosen, opt, b):
                a = ["--optim", opt, "--global-batch", str(b), "--lr-base",
                     repr(lr), "--seed", "{seed}", "--no-trace"] + common
                if shards != "iid":
                    a += ["--shards", shards]
                name = "dec-parallel-sgd"
                if opt != "sgd":
                    a += ["--topology", topo, "--consensus-every", str(every)]
                    name = "dec-%s-%s" % (opt, topo)
                entries.append({"name": "%s-b%d-p%d-%s%s-s{seed}" % (
                                    name, b, P, o["tag"], suffix),
                                "verb": "train",
                                "foreach": {"seed": [str(x) for x in seeds]},
                                "args": a, "est_s": 10 * P // 8 + 10,
                                "ranks": P})
    rate = ("each method's own rate chosen on the validation split of the "
            "grid seed (--tuned; seeds already run at it are skipped)"
            if o["tuned"] else "parallel SGD's rate chosen on the grid" +
            ("" if o["factors"] == [1.0] else " times %s" %
             ", ".join("%g" % f for f in o["factors"])))
    suite = {"suite": "decentral-p%d-%s" % (P, o["tag"]),
             "description": "Issue 17, decentralized verdict (written by "
             "tools/study.py decentral from %s): %s on %d ranks, %s shards, "
             "batches %s, seeds %s, at %s; the consensus distance every %d "
             "samples." % (" ".join(runs), ", ".join(o["optims"]), P, shards,
                           ",".join(map(str, o["batches"])),
                           ",".join(map(str, o["seeds"])), rate,
                           o["every_s"]),
             "timeout_s": 1800, "entries": entries}
    with open(o["out"], "w") as f:
        json.dump(suite, f, indent=1)
        f.write("\n")
    print("%s: %d entries -> %s" % (PROG, len(entries), o["out"]))


# ---- extend -----------------------------------------------------------------

def extension_rates(c, factors):
    """The rates that extend configuration c's grid (an entry of choose())
    one step past the edge its choice sits on, or [] when the choice is
    inside the grid.  Upwards (highest * f for f in factors) when the
    highest rate won; downwards (lowest / f) when the lowest won or nothing
    trained (best validation accuracy under 50%: the scaling rules
    over-predict at large batch in short runs).  A grid of one rate has no
    edge and is not extended."""
    rates = [g["lr_base"] for g in c["grid"] if g["lr_base"] is not None]
    if len(rates) < 2:
        return []
    if c["grid_edge"] == "highest" and c["best_val"] >= 0.5:
        new = [max(rates) * f for f in factors]
    elif c["grid_edge"] == "lowest" or c["best_val"] < 0.5:
        new = [min(rates) / f for f in factors]
    else:
        return []
    return [x for x in new if x not in rates]


def config_tag(k):
    """Entry-name part of a configuration: optimizer, model, batch, ranks,
    and the shard kind when not iid (so that one suite can hold the same
    optimizer on iid and label-skewed shards)."""
    spec, model, b, p, _, shards = k
    tag = "%s-%s-b%d-p%d" % (optim_name(spec), model_tag(model), b, p)
    if shards != "iid":
        tag += "-" + shards_tag(shards)
    return tag


def cmd_extend(args):
    """Phase 1b: one extension of every grid whose choice sits on its edge
    (extension_rates), at the grid seed, with the grid run's other
    arguments."""
    opts = {"--out": None, "--factors": "4,16", "--optims": None,
            "--timeout-s": "1800"}
    runs = parse_opts("extend", args, opts)
    timeout = parse_list("--timeout-s", opts["--timeout-s"], int, 1,
                         10 ** 6)[0]
    out = opts["--out"]
    if not runs or not out:
        die("extend: usage: study.py extend GRID_RUN [RUN...] --out SUITE.json "
            "[--factors 4,16] [--optims LIST]")
    factors = parse_list("--factors", opts["--factors"], float, 1.000001, 1e4)
    only = None
    if opts["--optims"] is not None:
        only = [o.strip() for o in opts["--optims"].split(",")]
        if not all(only) or len(set(only)) != len(only):
            die("--optims: '%s' is not a list of distinct optimizer names"
                % opts["--optims"])
    rows = []
    for r in runs:
        rows += load_rows(r)
    rows = dedupe(rows)
    chosen = choose(rows)
    entries = []
    for k, c in sorted(chosen.items(), key=lambda t: key_str(t[0])):
        if only is not None and optim_name(k[0]) not in only:
            continue
        new = extension_rates(c, factors)
        # the grid seed's run of this configuration gives the arguments
        r0 = next((r for r in rows if key_of(r) == k and
                   r.get("seed") == c["grid_seed"] and r.get("argv")), None)
        if not new or r0 is None:
            continue
        argv = r0["argv"]
        a = list(argv[argv.index("train") + 1:]) if "train" in argv else \
            list(argv)
        if "--lr-base" not in a:
            continue
        a[a.index("--lr-base") + 1] = "{lr}"
        if "--out" in a:
            q = a.index("--out")
            del a[q:q + 2]
        e = {"name": "ext-%s-lr{lr}" % config_tag(k),
             "verb": "train", "foreach": {"lr": ["%.10g" % x for x in new]},
             "args": a, "est_s": 10}
        if k[3] != 1:
            e["ranks"] = k[3]
        entries.append(e)
    suite = {"suite": "convergence-grid-extension",
             "description": "Issue 17, phase 1b (tools/study.py extend %s "
             "--factors %s): each grid extended past the edge its choice "
             "sits on (highest x f upwards, lowest / f downwards, f in "
             "%s; downwards also where nothing trained)."
             % (" ".join(runs), opts["--factors"], opts["--factors"]),
             "timeout_s": timeout, "entries": entries}
    with open(out, "w") as f:
        json.dump(suite, f, indent=1)
        f.write("\n")
    print("%s: %d configurations extended -> %s" % (PROG, len(entries), out))


# ---- SLAMB variants ---------------------------------------------------------

SLAMB_VARIANTS = {
    "authors+kwarm": "the authors' SLAMB (hangxu0304/SLAMB: 1-D tensors get "
                     "the plain unclamped trust ratio, parameters averaged "
                     "when t % H == 1) with their k warm-up (kwarm = 1/200 "
                     "of the run's steps, set by lbscale train)",
    "authors": "the authors' SLAMB (1-D tensors get the plain unclamped "
               "trust ratio, parameters averaged when t % H == 1), no k "
               "warm-up",
    "lbscale-former": "lbscale's former SLAMB variant (1-D tensors phi = 1 "
                      "and no weight decay, parameters averaged when "
                      "(t-1) % H == 0)",
}


def slamb_variant(r):
    """Which SLAMB a row ran, from its effective params: the authors' keys
    (avg=authors, exclude_1d=0, clamp_1d=0; kwarm > 0 with the warm-up) or
    lbscale's former variant (exclude_1d=1, written before the avg key
    existed).  None for rows without params (failed runs)."""
    if not r.get("params"):
        return None
    kv = dict(x.split("=", 1) for x in r["params"].split(",") if "=" in x)
    if (kv.get("avg") == "authors" and kv.get("exclude_1d", "0") == "0" and
            kv.get("clamp_1d", "0") == "0"):
        return "authors+kwarm" if kv.get("kwarm", "0") != "0" else "authors"
    return "lbscale-former"


def prefer_authors_slamb(rows):
    """SLAMB rows of the authors' variant replace the others when present
    (convergence-slamb-authors.sh re-ran the study's SLAMB part; the two
    runs' rows have the same configuration keys).  A failed row takes the
    variant of its run's other SLAMB rows.  Returns (rows, the variant
    kept or None when there are no SLAMB rows)."""
    by_run = {}
    for r in rows:
        if optim_name(r["spec"]) == "slamb" and slamb_variant(r):
            by_run.setdefault(r["_run"], set()).add(slamb_variant(r))

    def variant(r):
        v = slamb_variant(r)
        if v is None:
            vs = by_run.get(r["_run"], set())
            v = next(iter(vs)) if len(vs) == 1 else "lbscale-former"
        return v
    kinds = {variant(r) for r in rows if optim_name(r["spec"]) == "slamb"}
    if not kinds:
        return rows, None
    keep = next((k for k in ("authors+kwarm", "authors") if k in kinds),
                "lbscale-former")
    return [r for r in rows if optim_name(r["spec"]) != "slamb" or
            variant(r) == keep], keep


# ---- report -----------------------------------------------------------------

def stats_for(rs):
    ok = [r for r in rs if not diverged(r)]
    acc = [100 * r["test_accuracy"] for r in ok]
    m, sd, ci = mean_ci(acc)
    tl = [r["train_loss"] for r in ok]
    va = [100 * r["val_accuracy"] for r in ok if r.get("val_accuracy")
          is not None]
    real = [r for r in rs if not r.get("failed") and "steps" in r]
    by = [r.get("sent_bytes_per_rank", 0) for r in real]
    dense = [r.get("dense_bytes_per_step", 0) * r.get("steps", 0)
             for r in real]
    return {"seeds": sorted(int(r["seed"]) for r in rs), "n": len(ok),
            "diverged": len(rs) - len(ok),
            "failed": sum(bool(r.get("failed")) for r in rs),
            "test_acc_mean": m, "test_acc_sd": sd, "test_acc_ci95": list(ci),
            "test_acc": acc,
            "train_loss_mean": float(np.mean(tl)) if tl else None,
            "val_acc_mean": float(np.mean(va)) if va else None,
            "sent_bytes_per_rank": float(np.mean(by)) if by else None,
            "dense_bytes_per_run": float(np.mean(dense)) if dense else None,
            "steps": (real or rs)[0].get("steps"),
            "wall_s": float(np.mean([r.get("wall_s", 0) for r in real]))
            if real else None,
            "bwd_s": float(np.mean([r.get("bwd_s", 0) for r in real]))
            if real else None,
            "wgrad_s": float(np.mean([r.get("wgrad_s", 0) for r in real]))
            if real else None,
            "wgrad_kept_frac": float(np.mean([r.get("wgrad_kept_frac", 1)
                                               for r in real]))
            if real else None,
            # diverged runs' distances (up to 1e10) are not averaged in
            "consensus_rms": float(np.mean([r.get("consensus_rms") or 0
                                             for r in ok if r in real]))
            if any(r in real for r in ok) else None,
            "warning": next((r.get("warning") for r in rs
                             if r.get("warning")), None),
            # per finished run: (step, seconds so far, test accuracy %)
            # after every epoch, for the time to a target accuracy
            "curves": [[(e.get("step"), e.get("wall_s"),
                         100 * (e.get("test_accuracy") or 0.0))
                        for e in (r.get("curve") or [])] for r in ok],
            "spec_eff": rs[0].get("lr_rule"), "lr": rs[0].get("lr"),
            "lr_base": rs[0].get("lr_base"),
            "lr_scaling": rs[0].get("lr_scaling")}


def time_to_target(st, target):
    """Over the runs of one configuration: how many reach `target` (test
    accuracy, %) at an epoch's end, and the median step and measured
    seconds (this machine, training only) of the first epoch that does.
    Epoch resolution: a run that gets there mid-epoch is counted at the
    epoch's end."""
    hits = []
    for c in st.get("curves") or []:
        hit = next(((step, sec) for step, sec, acc in c if acc >= target),
                   None)
        if hit and hit[0] is not None and hit[1] is not None:
            hits.append(hit)
    n = len(st.get("curves") or [])
    return {"target_pct": target, "reached": len(hits), "runs": n,
            "steps_median": float(np.median([h[0] for h in hits]))
            if hits else None,
            "seconds_median": float(np.median([h[1] for h in hits]))
            if hits else None}


def fmt_tta(t):
    if not t["reached"]:
        return "not reached (0/%d)" % t["runs"]
    return "%.1f s, %d steps (%d/%d runs)" % (
        t["seconds_median"], t["steps_median"], t["reached"], t["runs"])


def fmt_ci(d, unit="pt"):
    if d is None:
        return "n/a"
    return "%+.2f %s (95%% CI %+.2f .. %+.2f, df %.1f)" % (
        d["estimate"], unit, d["ci"][0], d["ci"][1], d["df"])


def setting_name(ranks, topo, shards):
    return "%d ranks, %s, %s shards" % (ranks, topo, shards)


def decentral_verdict(cfg, get):
    """DmSGD and DecentLaM minus parallel momentum SGD (same ranks, shards,
    batch; Welch CIs over seeds) for every (ranks, topology, shards) that
    has all three, and per setting the change of the DmSGD gap from the
    smallest to the largest batch.  The setting's verdict: whether that gap
    grows (CI of the change below 0), and whether DecentLaM at the largest
    batch is within noise of parallel (its CI contains 0)."""
    v = {"name": "DmSGD and DecentLaM vs parallel momentum SGD",
         "settings": {}}
    # settings in the order iid before label-skewed, then by rank count
    for k, st in sorted(cfg.items(), key=lambda t: (t[0][5] != "iid",
                                                    t[0][5], t[0][3],
                                                    t[0][2])):
        if optim_name(k[0]) != "dmsgd":
            continue
        par = get("sgd", k[2], model=k[1], ranks=k[3], shards=k[5])
        dl = get("decentlam", k[2], model=k[1], ranks=k[3], topo=k[4],
                 shards=k[5])
        if not par or not dl:
            continue
        sv = v["settings"].setdefault(setting_name(k[3], k[4], k[5]), {
            "ranks": k[3], "topology": k[4], "shards": k[5], "batches": {}})
        sv["batches"][str(k[2])] = {
            "seeds": [len(st["test_acc"]), len(dl[1]["test_acc"]),
                      len(par[1]["test_acc"])],
            "diverged": [st["diverged"], dl[1]["diverged"],
                         par[1]["diverged"]],
            "dmsgd_minus_parallel": lin_comb([(1, st["test_acc"]),
                                              (-1, par[1]["test_acc"])]),
            "decentlam_minus_parallel": lin_comb([(1, dl[1]["test_acc"]),
                                                  (-1, par[1]["test_acc"])]),
            "consensus_rms": {"dmsgd": st["consensus_rms"],
                              "decentlam": dl[1]["consensus_rms"]},
            "lr_base": {"dmsgd": rate_choice(st), "decentlam":
                        rate_choice(dl[1]), "parallel": par[1]["lr_base"]},
            "_cells": (st["test_acc"], dl[1]["test_acc"], par[1]["test_acc"])}
    verdicts = []
    for name, sv in v["settings"].items():
        bs = sorted(sv["batches"], key=int)
        if len(bs) < 2:
            continue
        a, b = sv["batches"][bs[0]]["_cells"], sv["batches"][bs[-1]]["_cells"]
        g = sv["gap_growth"] = lin_comb([(1, b[0]), (-1, b[2]), (-1, a[0]),
                                         (1, a[2])])
        dl = sv["batches"][bs[-1]]["decentlam_minus_parallel"]
        if g is None or dl is None:
            continue
        sv["verdict"] = (
            "DmSGD-minus-parallel gap at %s vs %s: %s; DecentLaM at %s %s"
            % (bs[-1], bs[0], "grows" if g["ci"][1] < 0 else "shrinks"
               if g["ci"][0] > 0 else "no significant change", bs[-1],
               "within noise of parallel (CI contains 0)"
               if dl["ci"][0] <= 0 <= dl["ci"][1] else
               "differs from parallel (%s)" % ("below" if dl["ci"][1] < 0
                                               else "above")))
        verdicts.append("%s: %s" % (name, sv["verdict"]))
    for sv in v["settings"].values():
        for b in sv["batches"].values():
            b.pop("_cells", None)
    if verdicts and len(verdicts) == len(v["settings"]):
        v["verdict"] = "; ".join(verdicts)
    return v


def rate_choice(st):
    """How a configuration's rate was chosen: its base rate, the grid it
    was chosen from on the grid seed's validation accuracy (one rate: no
    per-method grid) and where in the grid it sits."""
    rates = [g["lr_base"] for g in st["grid"] if g["lr_base"] is not None]
    return {"lr_base": st["lr_base"], "grid": rates,
            "grid_seed": st.get("grid_seed"), "edge": st.get("grid_edge")}


def fmt_rate(c):
    if len(c["grid"]) < 2:
        return "%g (no grid of its own)" % c["lr_base"]
    return "%g (chosen on seed %s's validation accuracy from %s%s)" % (
        c["lr_base"], c["grid_seed"], ", ".join("%g" % x for x in c["grid"]),
        "; %s of the grid" % c["edge"] if c["edge"] else "")


def decentral_lines(v):
    """verdicts.md's lines under the decentralized verdict."""
    out = []
    for name, sv in v["settings"].items():
        out.append("  - %s: %s" % (name, sv.get("verdict", "NOT COMPUTED")))
        for b, x in sv["batches"].items():
            out.append("    - b=%s base rates: DmSGD %s; DecentLaM %s; "
                       "parallel SGD %g (its 1-rank grid's choice)" % (
                           b, fmt_rate(x["lr_base"]["dmsgd"]),
                           fmt_rate(x["lr_base"]["decentlam"]),
                           x["lr_base"]["parallel"]))
            out.append("    - b=%s (seeds %d/%d/%d): DmSGD - parallel %s; "
                       "DecentLaM - parallel %s; final consensus rms DmSGD "
                       "%.3g, DecentLaM %.3g" % (
                           b, x["seeds"][0], x["seeds"][1], x["seeds"][2],
                           fmt_ci(x["dmsgd_minus_parallel"]),
                           fmt_ci(x["decentlam_minus_parallel"]),
                           x["consensus_rms"]["dmsgd"] or 0,
                           x["consensus_rms"]["decentlam"] or 0))
            if any(x["diverged"]):
                out.append("      (diverged DmSGD/DecentLaM/parallel: "
                           "%d/%d/%d, not averaged)" % tuple(x["diverged"]))
        if sv.get("gap_growth"):
            out.append("    - change of the DmSGD - parallel gap from the "
                       "smallest to the largest batch: %s" %
                       fmt_ci(sv["gap_growth"]))
    return out


def write_consensus(out, rows, cfg, dv):
    """consensus.dat: consensus distance vs step of DmSGD and DecentLaM per
    (setting, batch) that has curves (train --consensus-every), mean over
    seeds with a min..max band, gnuplot index 2p (DmSGD) and 2p+1
    (DecentLaM) for panel p; consensus-panels.gp: npanel and the panels'
    titles.  Curves come from every row (before de-duplication, so that a
    rerun that logged the curve serves a configuration whose first run did
    not); a step is plotted where every seed has it."""
    curves = {}
    for r in rows:
        if diverged(r) or not r.get("consensus_curve"):
            continue
        k = key_of(r)
        st = cfg.get(k)
        if not st or r.get("lr_base", r.get("lr")) != st["lr_base"]:
            continue
        o = optim_name(k[0])
        pk = (k[3], k[4], k[5], k[2])
        curves.setdefault(pk, {}).setdefault(o, {})[r.get("seed")] = \
            r["consensus_curve"]
    panels = sorted(pk for pk, c in curves.items()
                    if "dmsgd" in c and "decentlam" in c)
    # columns: settings, rows: batches (panels that have curves only)
    settings = sorted({p[:3] for p in panels},
                      key=lambda t: (t[2] != "iid", t[2], t[0]))
    titles = []
    with open(os.path.join(out, "consensus.dat"), "w") as f:
        for pk in sorted(panels, key=lambda p: (p[3], settings.index(p[:3]))):
            titles.append("%s, batch %d, %d seeds" % (
                setting_name(*pk[:3]), pk[3],
                min(len(curves[pk][o]) for o in ("dmsgd", "decentlam"))))
            for o in ("dmsgd", "decentlam"):
                f.write("# %s, %s\n" % (titles[-1], o))
                by = list(curves[pk][o].values())
                steps = set.intersection(*({int(x[0]) for x in c}
                                           for c in by))
                for stp in sorted(steps):
                    a = np.array([dict((int(x[0]), x[1]) for x in c)[stp]
                                  for c in by])
                    f.write("%d %.6g %.6g %.6g %d\n" % (
                        stp, a.mean(), a.min(), a.max(), len(a)))
                f.write("\n\n")
    with open(os.path.join(out, "consensus-panels.gp"), "w") as f:
        f.write("# written by tools/study.py report\n")
        f.write("nrow = %d\nncol = %d\nnpanel = %d\n" % (
            (len(titles) + len(settings) - 1) // max(1, len(settings)),
            len(settings), len(titles)))
        f.write("array PT[%d] = [%s]\n" % (max(1, len(titles)), ", ".join(
            '"%s"' % t for t in titles) or '""'))
    dv["consensus_panels"] = titles


def report_opts(args):
    """cmd_report's options: (runs, out dir, the large-batch model,
    --require-verdicts, --budget-ref study.json or None, --hours, --note:
    a line to put first in verdicts.md, e.g. that the study is partial)."""
    opts = {"--model": "mlp:784-512-256-10", "--out": None,
            "--require-verdicts": False, "--budget-ref": None,
            "--hours": "3", "--note": None}
    runs = parse_opts("report", args, opts, flags=("--require-verdicts",))
    if not runs or not opts["--out"]:
        die("report: usage: study.py report RUN [RUN...] --out DIR")
    hours = parse_list("--hours", opts["--hours"], float, 1e-3, 1e4)
    if len(hours) != 1:
        die("--hours: one value")
    ref = opts["--budget-ref"]
    if ref is not None and not os.path.isfile(ref):
        die("--budget-ref: '%s' is not a file" % ref)
    return (runs, opts["--out"], opts["--model"],
            opts["--require-verdicts"], ref, hours[0], opts["--note"])


def report_configs(rows):
    """config key -> stats_for() of its runs at the chosen rate, with the
    grid it was chosen from."""
    cfg = {}
    for k, c in choose(rows).items():
        rs = [r for r in rows if key_of(r) == k and
              r.get("lr_base", r.get("lr")) == c["lr_base"]]
        st = stats_for(rs)
        st["grid"] = c["grid"]
        st["grid_edge"] = c["grid_edge"]
        st["grid_seed"] = c["grid_seed"]
        cfg[k] = st
    return cfg


def config_getter(cfg, lbmodel):
    """get(name, batch, model, ranks, topo, shards): the (key, stats) of
    the configuration with that optimizer and batch (the one with the most
    finished runs when several match), or None."""
    def get(name, batch, model=lbmodel, ranks=None, topo=None,
            shards="iid"):
        best = None
        for k, st in cfg.items():
            if optim_name(k[0]) != name or k[1] != model or k[2] != batch:
                continue
            if ranks is not None and k[3] != ranks:
                continue
            if topo is not None and k[4] != topo:
                continue
            if k[5] != shards:
                continue
            if best is None or st["n"] > best[1]["n"]:
                best = (k, st)
        return best
    return get


LB_OPTIMS = ("sgd", "adamw", "lars", "lamb")


def large_batch_batches(cfg, model):
    """The batches of the large-batch set (1 rank, the verdict's model)."""
    return sorted({k[2] for k in cfg if optim_name(k[0]) in LB_OPTIMS
                   and k[1] == model and k[3] == 1})


def verdict_large_batch(cfg, get, lbb):
    """1. The drop from the smallest to the largest batch: mean drop of
    (SGD-M, AdamW) minus mean drop of (LARS, LAMB), Welch CI."""
    v = {"name": "large-batch accuracy drop: (SGD-M, AdamW) vs (LARS, LAMB)"}
    if len(lbb) < 2:
        return v
    lo, hi = lbb[0], lbb[-1]
    cells = {}
    for o in LB_OPTIMS:
        for b in (lo, hi):
            g = get(o, b, ranks=1)
            cells[(o, b)] = g[1]["test_acc"] if g else []
    have = [o for o in LB_OPTIMS if cells[(o, lo)] and cells[(o, hi)]]
    drops = {o: lin_comb([(1, cells[(o, lo)]), (-1, cells[(o, hi)])])
             for o in have}
    ga = [o for o in ("sgd", "adamw") if o in have]
    gb = [o for o in ("lars", "lamb") if o in have]
    terms = []
    for grp, sign in ((ga, 1.0), (gb, -1.0)):
        for o in grp:
            terms += [(sign / len(grp), cells[(o, lo)]),
                      (-sign / len(grp), cells[(o, hi)])]
    d = lin_comb(terms) if ga and gb else None
    v["groups"] = [ga, gb]
    v.update({"batches": [lo, hi], "drops": drops, "statistic": d,
              "diverged": {"%s@%d" % (o, b): (get(o, b, ranks=1) or
                                              (None, {"diverged": None}))[1]
                           ["diverged"] for o in LB_OPTIMS
                           for b in (lo, hi)},
              "_terms": terms,
              "_wall": [(get(o, b, ranks=1) or (None, {}))[1].get("wall_s")
                        for o in have for b in (lo, hi)]})
    v["missing"] = ["%s@%d" % (o, b) for o in LB_OPTIMS for b in (lo, hi)
                    if not cells[(o, b)]]
    if d is not None:
        v["verdict"] = ("confirmed" if d["ci"][0] > 0 else "refuted"
                        if d["ci"][1] < 0 else "inconclusive")
    return v


def slamb_kh(spec):
    """SLAMB's k and H from its spec (defaults 0.1 and 100)."""
    kk, hh = 0.1, 100.0
    for kv in spec.split(":", 1)[-1].split(","):
        if kv.startswith("k="):
            kk = float(kv[2:])
        if kv.startswith("H="):
            hh = float(kv[2:])
    return kk, hh


def tost_decision(d, margin):
    """TOST at the 90% CI: equivalent when it lies inside +-margin, not
    equivalent when it lies wholly outside, else undecided."""
    if d["ci"][0] > -margin and d["ci"][1] < margin:
        return "equivalent"
    if d["ci"][1] < -margin or d["ci"][0] > margin:
        return "not equivalent"
    return "undecided"


def verdict_slamb(cfg, get, slamb_kind):
    """2. SLAMB vs LAMB: TOST +-0.5 points (90% CI inside the margin)."""
    v = {"name": "SLAMB within +-0.5 points of LAMB (TOST, alpha 0.05)",
         "margin": 0.5, "batches": {}, "variant": slamb_kind,
         "variant_text": SLAMB_VARIANTS.get(slamb_kind)}
    for k, st in sorted(cfg.items(), key=lambda t: t[0][2]):
        if optim_name(k[0]) != "slamb":
            continue
        lamb = get("lamb", k[2], model=k[1])
        if not lamb:
            continue
        terms = [(1, st["test_acc"]), (-1, lamb[1]["test_acc"])]
        d = lin_comb(terms, level=0.90)
        kk, hh = slamb_kh(k[0])
        dense = lamb[1]["dense_bytes_per_run"] or 0
        ratio = st["sent_bytes_per_rank"] / dense if dense else None
        bv = {"slamb": key_str(k), "lamb": key_str(lamb[0]),
              "difference_90ci": d, "bytes_ratio_vs_dense_gradient": ratio,
              "k_plus_1_over_H": kk + 1 / hh, "_terms": terms,
              "_wall": [st["wall_s"], lamb[1]["wall_s"]]}
        if d is not None:
            bv["verdict"] = ("equivalent" if -0.5 < d["ci"][0] and
                             d["ci"][1] < 0.5 else "not shown equivalent")
            bv["decision"] = tost_decision(d, 0.5)
        v["batches"][str(k[2])] = bv
    if v["batches"] and all("verdict" in b for b in v["batches"].values()):
        v["verdict"] = "; ".join("%s: %s" % (b, x["verdict"])
                                 for b, x in v["batches"].items())
    return v


def jointspar_cell(st, ref, base):
    """One JointSpar cell: accuracy difference to its baseline, the
    backward time saved and the time to a target both can reach (98% of
    the pair's lower mean final test accuracy)."""
    terms = [(1, st["test_acc"]), (-1, ref["test_acc"])]
    c = {"vs": base, "accuracy_difference": lin_comb(terms),
         "wgrad_kept_frac": st["wgrad_kept_frac"],
         "backward_time_saved_frac": (1 - st["bwd_s"] / ref["bwd_s"]
                                      if ref["bwd_s"] else None),
         "wall_s": [st["wall_s"], ref["wall_s"]], "_terms": terms,
         "_wall": [st["wall_s"], ref["wall_s"]]}
    lo = min(st["test_acc_mean"], ref["test_acc_mean"])
    if lo == lo:   # not NaN: both have finished runs
        tgt = round(0.98 * lo, 2)
        c["time_to_target"] = [time_to_target(st, tgt),
                               time_to_target(ref, tgt)]
    return c


def fmt_jointspar(n, b):
    return "%s: %s, backward time saved %.0f%%%s" % (
        n, fmt_ci(b["accuracy_difference"]),
        100 * (b["backward_time_saved_frac"] or 0),
        "" if "time_to_target" not in b else
        ", to %.2f%% test accuracy %s vs %s %s" % (
            b["time_to_target"][0]["target_pct"],
            fmt_tta(b["time_to_target"][0]), b["vs"],
            fmt_tta(b["time_to_target"][1])))


def verdict_jointspar(cfg, get):
    """4. JointSpar / JointSpar-LARS vs SGD-M / LARS on the deeper model."""
    v = {"name": "JointSpar / JointSpar-LARS vs SGD / LARS (deeper model)",
         "batches": {}}
    for k, st in sorted(cfg.items(), key=lambda t: t[0][2]):
        base = {"jointspar": "sgd", "jointspar_lars": "lars"}.get(
            optim_name(k[0]))
        if not base:
            continue
        ref = get(base, k[2], model=k[1], ranks=k[3])
        if not ref:
            continue
        c = jointspar_cell(st, ref[1], base)
        c["model"] = k[1]
        v["batches"]["%s@%d" % (optim_name(k[0]), k[2])] = c
    if v["batches"] and all(b["accuracy_difference"] is not None
                            for b in v["batches"].values()):
        v["verdict"] = "; ".join(fmt_jointspar(n, b)
                                 for n, b in v["batches"].items())
    return v


def verdict_onebit(cfg, get):
    """5. 1-bit LAMB with its dense warm-up at 20% of the steps."""
    v = {"name": "1-bit LAMB (warm-up 20% of steps) vs LAMB", "batches": {}}
    for k, st in sorted(cfg.items(), key=lambda t: t[0][2]):
        if optim_name(k[0]) != "onebit_lamb":
            continue
        ref = get("lamb", k[2], model=k[1])
        if not ref:
            continue
        terms = [(1, st["test_acc"]), (-1, ref[1]["test_acc"])]
        v["batches"][str(k[2])] = {
            "ranks": k[3], "accuracy_difference": lin_comb(terms),
            "diverged": st["diverged"], "runs": len(st["seeds"]),
            "_terms": terms, "_wall": [st["wall_s"], ref[1]["wall_s"]],
            "bytes_ratio_vs_dense": (st["sent_bytes_per_rank"] /
                                     ref[1]["dense_bytes_per_run"]
                                     if ref[1]["dense_bytes_per_run"]
                                     else None)}
    # a batch where divergence left fewer than 2 finished seeds has no
    # interval, but it has a finding: how many of its seeds diverged
    if v["batches"] and all(b["accuracy_difference"] is not None or
                            b["diverged"] for b in v["batches"].values()):
        v["verdict"] = "; ".join("b=%s: %s" % (b, fmt_ci(
            x["accuracy_difference"]) if x["accuracy_difference"] else
            "no interval: %d of %d seeds diverged" % (x["diverged"],
                                                      x["runs"]))
            for b, x in v["batches"].items())
    return v


def diverged_cell(st):
    """The runs not averaged: diverged ones, and those that failed for
    another reason (a crash, a watchdog) named apart."""
    f = st.get("failed", 0)
    d = st["diverged"] - f
    return "%d" % d if not f else "%d (+%d failed, not diverged)" % (d, f)


def table_row(k, st):
    return "| %s | %s (%s, %s) | %d | %s | %s | %s | %s | %s | %s | " \
        "%.2f | %.1f |" % (
            key_str(k), "%.4g" % st["lr"] if st["lr"] else "-",
            st["lr_base"], (st["lr_scaling"] or "no --lr-base") + (
                ", %s of grid" % st["grid_edge"] if st["grid_edge"] else ""),
            len(st["seeds"]), diverged_cell(st),
            "%.2f +- %.2f" % (st["test_acc_mean"], st["test_acc_sd"])
            if st["n"] else "all diverged",
            "%.2f .. %.2f" % tuple(st["test_acc_ci95"])
            if st["n"] >= 2 else "n/a",
            "%.2f" % st["val_acc_mean"] if st["val_acc_mean"] else "-",
            "%.4f" % st["train_loss_mean"]
            if st["train_loss_mean"] is not None else "-",
            st["steps"], (st["sent_bytes_per_rank"] or 0) / 1e6,
            st["wall_s"] or 0)


def write_table(out, cfg):
    """table.md: one row per configuration at its chosen rate."""
    table = ["| configuration | lr (base, rule) | seeds | diverged | test acc "
             "% mean +- sd | 95% CI | val acc % | final train loss | steps "
             "| MB sent/rank | wall s |", "|" + "---|" * 11]
    for k, st in sorted(cfg.items(), key=lambda t: (optim_name(t[0][0]),
                                                    t[0][1] or "", t[0][2],
                                                    t[0][3])):
        table.append(table_row(k, st))
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("\n".join(table) + "\n")
    return table


def large_batch_lines(v):
    out = []
    if "statistic" not in v:
        return out
    out.append("  - statistic: mean drop (%s) minus mean drop (%s), batch "
               "%d -> %d: %s" % (", ".join(v["groups"][0]),
                                 ", ".join(v["groups"][1]), v["batches"][0],
                                 v["batches"][1], fmt_ci(v["statistic"])))
    for o, d in v["drops"].items():
        out.append("  - drop %s: %s" % (o, fmt_ci(d)))
    return out


def slamb_lines(v):
    out = []
    if v.get("variant"):
        out.append("  - SLAMB rows: %s" % v["variant_text"])
    for b, x in v["batches"].items():
        out.append("  - b=%s: SLAMB - LAMB %s (90%% CI for TOST); "
                   "bytes/dense %s vs k+1/H = %.3f" % (
                       b, fmt_ci(x["difference_90ci"]).replace("95%", "90%"),
                       "%.3f" % x["bytes_ratio_vs_dense_gradient"]
                       if x["bytes_ratio_vs_dense_gradient"] else "n/a",
                       x["k_plus_1_over_H"]))
    return out


VERDICT_LINES = {"large_batch": large_batch_lines, "slamb": slamb_lines,
                 "decentral": lambda v: decentral_lines(v)}


def verdict_lines(verdicts):
    """verdicts.md's lines and the keys of the verdicts not computed."""
    vm, missing = [], []
    for key, v in verdicts.items():
        vm.append("- **%s**: %s" % (v["name"], v.get("verdict",
                                                    "NOT COMPUTED")))
        vm += VERDICT_LINES.get(key, lambda v: [])(v)
        if "verdict" not in v:
            missing.append(key)
    return vm, missing


def write_acc_vs_batch(out, get, lbb):
    """acc_vs_batch.dat: accuracy vs batch per optimizer (large-batch set).
    Every block starts with a missing point ("?", plots/study.gp) so that
    an optimizer without runs keeps its block: gnuplot's index would skip
    an empty one and give the next optimizer its colour and name."""
    with open(os.path.join(out, "acc_vs_batch.dat"), "w") as f:
        for o in LB_OPTIMS:
            f.write("# %s\n? ? ? ? 0\n" % o)
            for b in lbb:
                g = get(o, b, ranks=1)
                if g and g[1]["n"]:
                    st = g[1]
                    lo, hi = st["test_acc_ci95"]
                    f.write("%d %.4f %.4f %.4f %d\n" % (
                        b, st["test_acc_mean"],
                        lo if math.isfinite(lo) else st["test_acc_mean"],
                        hi if math.isfinite(hi) else st["test_acc_mean"],
                        st["n"]))
            f.write("\n\n")


def epoch_band(rows, k, lr_base):
    """(epoch, mean, lo, hi) of the test accuracy % over the finished
    seeds of configuration k at lr_base, per epoch that every seed has:
    lo..hi is mean +- sd kept within the seeds' own min..max, so a seed
    that collapsed to chance cannot draw a band above 100% (or below
    any seed)."""
    curves = [c for c in (load_curve(r) for r in rows
                          if key_of(r) == k and r.get("lr_base") == lr_base
                          and not diverged(r)) if c]
    if not curves:
        return []
    pts = []
    for j in range(min(len(c) for c in curves)):
        a = np.array([c[j][1] for c in curves]) * 100
        sd = a.std(ddof=1) if len(a) > 1 else 0.0
        pts.append((curves[0][j][0], a.mean(), max(a.mean() - sd, a.min()),
                    min(a.mean() + sd, a.max())))
    return pts


def write_acc_vs_epoch(out, rows, get, lbb):
    """acc_vs_epoch.dat: accuracy vs epoch at the largest batch, mean and
    band over seeds, one block per optimizer of the large-batch set."""
    big = lbb[-1] if lbb else None
    with open(os.path.join(out, "acc_vs_epoch.dat"), "w") as f:
        for o in LB_OPTIMS:
            f.write("# %s b=%s\n? ? ? ?\n" % (o, big))
            g = get(o, big, ranks=1) if big else None
            for p in (epoch_band(rows, g[0], g[1]["lr_base"]) if g else []):
                f.write("%.3f %.4f %.4f %.4f\n" % p)
            f.write("\n\n")


MLP8 = MODEL_ALIAS["mlp8"]


def claim_panels(lbmodel):
    """The accuracy-vs-epoch panels of the claims: (title, [(label,
    optimizer, batch, model)])."""
    if lbmodel != MLP_DEFAULT:
        return [("large batch, %s, b=%d" % (lbmodel, b),
                 [(o, o, b, lbmodel) for o in ("sgd", "lamb")])
                for b in (128, 2048)]
    m = MLP_DEFAULT
    return [
        ("large batch, b=8192", [(o, o, 8192, m) for o in LB_OPTIMS]),
        ("SLAMB vs LAMB", [("%s b=%d" % (o, b), o, b, m)
                           for b in (1024, 8192) for o in ("slamb", "lamb")]),
        ("1-bit LAMB vs LAMB", [("%s b=%d" % (o, b), o, b, m)
                                for b in (2048, 8192)
                                for o in ("onebit_lamb", "lamb")]),
        ("JointSpar, mlp8, b=2048", [(o, o, 2048, MLP8) for o in (
            "sgd", "jointspar", "lars", "jointspar_lars")]),
        ("JointSpar, mlp8, b=8192", [(o, o, 8192, MLP8) for o in (
            "sgd", "jointspar", "lars", "jointspar_lars")]),
    ]


def write_claim_curves(out, rows, get, lbmodel):
    """claims.dat: test accuracy vs epoch of every curve of every claim
    panel (mean over the seeds at the chosen rate, band +-1 sd; a block
    per curve, each starting with a missing point so that a curve without
    runs keeps its index), claims-panels.gp: the panels' titles, curve
    counts, first block, whether it has points (PH) and labels for
    plots/claims.gp."""
    panels = claim_panels(lbmodel)
    titles, first, count, labels, blk, have = [], [], [], [], 0, []
    with open(os.path.join(out, "claims.dat"), "w") as f:
        for title, curves in panels:
            titles.append(title)
            first.append(blk)
            count.append(len(curves))
            have.append(0)
            for label, o, b, model in curves:
                g = get(o, b, model=model)
                pts = epoch_band(rows, g[0], g[1]["lr_base"]) if g else []
                labels.append("%s (%d seeds)" % (label, g[1]["n"]) if g
                              else label + " (no runs yet)")
                f.write("# %s: %s\n? ? ? ?\n" % (title, label))
                for p in pts:
                    f.write("%.3f %.4f %.4f %.4f\n" % p)
                f.write("\n\n")
                blk += 1
                have[-1] = int(have[-1] or bool(pts))

    def arr(name, xs, q):
        return "array %s[%d] = [%s]\n" % (name, len(xs), ", ".join(
            ('"%s"' % x) if q else str(x) for x in xs))
    with open(os.path.join(out, "claims-panels.gp"), "w") as f:
        f.write("# written by tools/study.py report\nnpanel = %d\n"
                % len(panels))
        f.write(arr("PT", titles, True) + arr("PF", first, False) +
                arr("PN", count, False) + arr("PH", have, False) +
                arr("CL", labels, True))


def cmd_report(args):
    runs, out, lbmodel, require, ref, hours, note = report_opts(args)
    rows = []
    for r in runs:
        rows += load_rows(r)
    rows, slamb_kind = prefer_authors_slamb(rows)
    all_rows = rows
    rows = dedupe(rows)
    if not rows:
        die("no finished training rows in %s" % " ".join(runs), 1)
    cfg = report_configs(rows)
    os.makedirs(out, exist_ok=True)
    get = config_getter(cfg, lbmodel)
    lbb = large_batch_batches(cfg, lbmodel)
    verdicts = {"large_batch": verdict_large_batch(cfg, get, lbb),
                "slamb": verdict_slamb(cfg, get, slamb_kind),
                "decentral": decentral_verdict(cfg, get),
                "jointspar": verdict_jointspar(cfg, get),
                "onebit": verdict_onebit(cfg, get)}
    table = write_table(out, cfg)
    vm, missing = verdict_lines(verdicts)
    vm += power_lines(verdicts, hours)
    if ref:
        vm += budget_lines(verdicts, ref)
    strip_private(verdicts)
    if note:
        vm = [note, ""] + vm
    with open(os.path.join(out, "verdicts.md"), "w") as f:
        f.write("\n".join(vm) + "\n")
    write_acc_vs_batch(out, get, lbb)
    write_acc_vs_epoch(out, rows, get, lbb)
    write_claim_curves(out, rows, get, lbmodel)
    write_gnuplot_have(out)
    write_consensus(out, all_rows, cfg, verdicts["decentral"])
    res = {"runs": runs, "configurations": [
        dict(config=key_str(k), spec=k[0], model=k[1], batch=k[2], ranks=k[3],
             topology=k[4], shards=k[5], **st) for k, st in cfg.items()],
        "verdicts": verdicts, "missing_verdicts": missing}
    with open(os.path.join(out, "study.json"), "w") as f:
        json.dump(res, f, indent=1, default=lambda x: None)
        f.write("\n")
    sys.stdout.write("\n".join(table) + "\n\n" + "\n".join(vm) + "\n")
    if missing:
        sys.stderr.write("%s: verdicts not computed: %s\n" % (
            PROG, ", ".join(missing)))
        if require:
            sys.exit(1)


# ---- power statements and the budget-sensitivity row ------------------------

def se_at(terms, n):
    """The standard error and Welch df of sum c_i mean(x_i) when every
    sample has n values and keeps its measured sd."""
    vs = [(c * c * float(np.var(np.asarray(x, float), ddof=1)) / n)
          for c, x in terms]
    var = sum(vs)
    dfden = sum(v * v / (n - 1) for v in vs)
    return math.sqrt(var), (var * var / dfden if dfden > 0 else 1e9)


def seeds_needed(terms, gap, level, power, nmax=1000):
    """The fewest seeds per configuration (all equal) at which a CI of the
    given level, with the measured sds, is expected to be narrower than
    `gap` (power 0.5: half-width < gap) or to leave it with probability
    `power` (t quantiles of level and power added).  None past nmax or
    when gap <= 0."""
    if gap <= 0 or any(len(x) < 2 for _, x in terms):
        return None
    for n in range(2, nmax + 1):
        se, df = se_at(terms, n)
        q = t_ppf(0.5 + level / 2, max(df, 1.0))
        if power > 0.5:
            q += t_ppf(power, max(df, 1.0))
        if q * se < gap:
            return n
    return None


def power_cell(terms, wall, est, gap, level, hours):
    """A power statement for one open comparison: seeds per configuration
    for a CI of `level` to clear `gap` (expected, and with 80% power), and
    the training time the extra seeds take on this machine (each run's
    mean wall time, runs one after another)."""
    have = min(len(x) for _, x in terms)
    out = {"estimate": est, "gap": gap, "level": level, "seeds_now": have}
    for key, pw in (("seeds_expected", 0.5), ("seeds_80pct", 0.8)):
        n = seeds_needed(terms, gap, level, pw)
        out[key] = n
        w = [x for x in wall if x]
        out[key.replace("seeds", "hours")] = (
            None if n is None or not w else
            max(0, n - have) * sum(w) / len(w) * len(terms) / 3600)
    h80 = out["hours_80pct"]
    out["fits"] = h80 is not None and h80 <= hours
    return out


def fmt_power(name, p, hours):
    if p["seeds_now"] < 2:
        return ("  - %s: %+.2f pt; fewer than 2 finished seeds on one side: "
                "no spread to compute the seeds needed from" %
                (name, p["estimate"]))
    if p["seeds_80pct"] is None:
        return ("  - %s: %+.2f pt; not resolvable with <= 1000 seeds at this "
                "budget (the estimate sits on the boundary the interval must "
                "clear)" % (name, p["estimate"]))
    return ("  - %s: %+.2f pt, %d seeds now; a %d%% CI clears %.2f pt with "
            "%s seeds per configuration (expected) and %d for 80%% power: "
            "%.1f h more training here (%s %g h)" % (
                name, p["estimate"], p["seeds_now"], round(100 * p["level"]),
                p["gap"], p["seeds_expected"], p["seeds_80pct"],
                p["hours_80pct"], "fits" if p["fits"] else "does not fit",
                hours))


def open_cells(verdicts):
    """(label, terms, wall, estimate, gap, level) for every comparison
    whose interval does not decide it: a 95% CI that contains 0 (gap =
    |estimate|), or a TOST 90% CI that straddles +-margin (gap = the
    estimate's distance to the margin)."""
    out = []
    lb = verdicts["large_batch"]
    if lb.get("verdict") == "inconclusive":
        wall = [None]
        out.append(("large batch (%s)" % "/".join(map(str, lb["batches"])),
                    lb["_terms"], lb.get("_wall", wall),
                    lb["statistic"]["estimate"],
                    abs(lb["statistic"]["estimate"]), 0.95))
    for b, x in verdicts["slamb"]["batches"].items():
        if x.get("decision") == "undecided":
            d = x["difference_90ci"]
            out.append(("SLAMB - LAMB b=%s (TOST)" % b, x["_terms"],
                        x["_wall"], d["estimate"],
                        abs(0.5 - abs(d["estimate"])), 0.90))
    for key, label in (("jointspar", "%s"), ("onebit", "1-bit LAMB b=%s")):
        for b, x in verdicts[key]["batches"].items():
            d = x["accuracy_difference"]
            if d and d["ci"][0] <= 0 <= d["ci"][1]:
                out.append((label % b, x["_terms"], x["_wall"],
                            d["estimate"], abs(d["estimate"]), 0.95))
    return out


def power_lines(verdicts, hours):
    """verdicts.md's power statements, also kept in verdicts["power"]."""
    lines, pw = [], {}
    for label, terms, wall, est, gap, level in open_cells(verdicts):
        p = power_cell(terms, wall, est, gap, level, hours)
        pw[label] = p
        lines.append(fmt_power(label, p, hours))
    verdicts["power"] = {"name": "power statements for open comparisons",
                         "cells": pw, "hours": hours, "verdict": "%d open"
                         % len(pw)}
    if not lines:
        return []
    return (["", "Power (measured sds, equal seeds per configuration; "
             "time = the extra seeds' runs at their mean wall time here):"]
            + lines)


def strip_private(v):
    """Drop the '_'-prefixed working keys (samples) before writing JSON."""
    if isinstance(v, dict):
        for k in [k for k in v if str(k).startswith("_")]:
            del v[k]
        for x in v.values():
            strip_private(x)


def sign_word(d):
    """A 95% CI's decision: below / above 0, or no significant difference."""
    return ("below" if d["ci"][1] < 0 else "above" if d["ci"][0] > 0
            else "no significant difference")


def fmt_short(d, word):
    return "%+.2f (%.2f .. %.2f) %s" % (d["estimate"], d["ci"][0],
                                        d["ci"][1], word)


def decisions(verdicts):
    """cell -> its estimate, CI and decision, for the four claims of a
    report's verdicts (this run's, or another budget's study.json)."""
    out = {}
    lb = verdicts.get("large_batch", {})
    if lb.get("statistic"):
        out["large batch %s" % "->".join(map(str, lb["batches"]))] = \
            fmt_short(lb["statistic"], lb["verdict"])
    for b, x in verdicts.get("slamb", {}).get("batches", {}).items():
        d = x.get("difference_90ci")
        if d:
            out["SLAMB - LAMB b=%s (90%% CI, TOST)" % b] = fmt_short(
                d, tost_decision(d, 0.5))
    for key, label in (("onebit", "1-bit LAMB - LAMB b=%s"),
                       ("jointspar", "%s")):
        for b, x in verdicts.get(key, {}).get("batches", {}).items():
            d = x.get("accuracy_difference")
            if not d and x.get("diverged"):
                out[label % b] = "no interval: %d diverged" % x["diverged"]
            if d:
                word = sign_word(d)
                if x.get("diverged"):
                    word += ", %d diverged" % x["diverged"]
                out[label % b + (" - %s" % x["vs"] if "vs" in x else "")] \
                    = fmt_short(d, word)
    return out


def budget_lines(verdicts, ref):
    """The budget-sensitivity row: each claim's cells here beside the same
    cells in `ref` (another budget's study.json)."""
    try:
        with open(ref) as f:
            old = decisions(json.load(f)["verdicts"])
    except (OSError, ValueError, KeyError) as e:
        die("--budget-ref %s: %s" % (ref, e), 1)
    new = decisions(verdicts)
    rel = os.path.relpath(ref)      # no machine's paths in a committed report
    lines = ["", "Budget sensitivity (difference in points, 95%% CI unless "
             "stated; here vs %s):" % (ref if rel.startswith("..") else rel)]
    for cell in list(new) + [c for c in old if c not in new]:
        lines.append("  - %s: here %s; reference %s" % (
            cell, new.get(cell, "not yet run"), old.get(cell, "-")))
    return lines


# ---- a study at a longer budget (issue 35) ----------------------------------

SUITES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "bench", "suites")

# claim -> [(suite file, entry name prefix, batches, extra)], in the order
# the budget driver runs them.  The grids (rates, seeds, split) are the
# 3-epoch study's suites, so each claim's rates have one home; `extra`
# turns an entry into another optimizer's grid (1-bit LAMB gets its own
# grid of LAMB's rates on 4 ranks, its dense warm-up 20% of the steps,
# the default).
CLAIMS = {
    "lb": [("convergence-grid.json", "lb-", [128, 8192], None)],
    "slamb": [("convergence-grid.json", "slamb-lamb-", [1024], None),
              ("convergence-slamb-authors.json", "slamb-authors-",
               [1024, 8192], None)],
    "onebit": [("convergence-grid.json", "lb-lamb-", [2048], None),
               ("convergence-grid.json", "lb-lamb-", [2048, 8192],
                {"optim": "onebit_lamb", "name": "onebit-b{batch}-lr{lr}",
                 "ranks": 4})],
    "jointspar": [("convergence-grid.json", "js-", [2048, 8192], None)],
    "cnn": [("convergence-cnn.json", "cnn-", [128, 2048], None)],
}


def plan_entry(e, batches, extra):
    """A grid entry restricted to `batches` (and turned into `extra`'s
    optimizer when given); None when none of its batches is wanted."""
    e = json.loads(json.dumps(e))
    fe = e.get("foreach", {})
    keep = [b for b in fe.get("batch", []) if int(b) in batches]
    if not keep:
        return None
    fe["batch"] = keep
    if extra:
        a = e["args"]
        a[a.index("--optim") + 1] = extra["optim"]
        e["name"] = extra["name"]
        e["ranks"] = extra["ranks"]
    return e


def cmd_plan(args):
    """study.py plan CLAIM --epochs E --out SUITE.json: the rate grid of
    one claim at E epochs (the 3-epoch study's grid entries, restricted to
    the claim's batches)."""
    opts = {"--epochs": None, "--out": None}
    rest = parse_opts("plan", args, opts)
    if len(rest) != 1 or rest[0] not in CLAIMS or not opts["--out"] or \
            opts["--epochs"] is None:
        die("plan: usage: study.py plan %s --epochs E --out SUITE.json"
            % "|".join(CLAIMS))
    epochs = parse_list("--epochs", opts["--epochs"], int, 1, 10000)
    if len(epochs) != 1:
        die("--epochs: one value")
    entries, vars_ = [], None
    for fname, prefix, batches, extra in CLAIMS[rest[0]]:
        with open(os.path.join(SUITES, fname)) as f:
            s = json.load(f)
        v = dict(s.get("vars", {}), epochs=epochs[0])
        if vars_ is not None and v != vars_:
            die("plan: %s's vars differ from the claim's other suite" % fname,
                1)
        vars_ = v
        for e in s["entries"]:
            if e["name"].startswith(prefix):
                pe = plan_entry(e, batches, extra)
                if pe:
                    entries.append(pe)
    suite = {"suite": "convergence-budget-%s-grid" % rest[0],
             "description": "Issue 35: the %s claim's rate grid (tools/"
             "study.py plan from bench/suites/%s) at %d epochs."
             % (rest[0], ", ".join(sorted({c[0] for c in CLAIMS[rest[0]]})),
                epochs[0]),
             "vars": vars_, "timeout_s": 14400, "entries": entries}
    with open(opts["--out"], "w") as f:
        json.dump(suite, f, indent=1)
        f.write("\n")
    print("%s: %d entries -> %s" % (PROG, len(entries), opts["--out"]))


def loss_plateau(losses, window, tol, first=5):
    """The first epoch E (1-based, E >= first) at which the training loss
    improved by less than tol (relative) over the last `window` of the
    epochs: (L[0.8 E] - L[E]) / L[0.8 E] < tol for window 0.2.  None when
    no epoch of the curve meets it."""
    for e in range(first, len(losses) + 1):
        s = max(1, int(round((1 - window) * e)))
        a, b = losses[s - 1], losses[e - 1]
        if a > 0 and (a - b) / a < tol:
            return e
    return None


def cmd_budget(args):
    """study.py budget RUN --out DIR [--window 0.2] [--tol 0.01]: the
    epochs at which each optimizer's training loss stops improving by the
    criterion (loss_plateau), the budget (the largest of them; the run's
    length when one never meets it) on stdout as epochs=E, and DIR/budget.json, budget.dat (epoch, training loss,
    validation and test accuracy per optimizer, for plots/budget.gp)."""
    opts = {"--out": None, "--window": "0.2", "--tol": "0.01"}
    runs = parse_opts("budget", args, opts)
    if len(runs) != 1 or not opts["--out"]:
        die("budget: usage: study.py budget RUN --out DIR [--window 0.2] "
            "[--tol 0.01]")
    window = parse_list("--window", opts["--window"], float, 0.01, 0.9)[0]
    tol = parse_list("--tol", opts["--tol"], float, 1e-6, 0.5)[0]
    rows = [r for r in load_rows(runs[0]) if r.get("curve")]
    if not rows:
        die("%s: no finished runs with per-epoch rows" % runs[0], 1)
    os.makedirs(opts["--out"], exist_ok=True)
    res = {"window": window, "tol": tol, "optimizers": {}}
    with open(os.path.join(opts["--out"], "budget.dat"), "w") as f:
        for r in sorted(rows, key=lambda r: r["spec"]):
            loss = [e.get("train_loss") for e in r["curve"]]
            e = loss_plateau(loss, window, tol)
            res["optimizers"][r["spec"]] = {
                "lr_base": r.get("lr_base"), "lr": r.get("lr"),
                "batch": r.get("global_batch"), "epochs_run": len(loss),
                "plateau_epoch": e, "train_loss": loss,
                "wall_s": r.get("wall_s"),
                "test_accuracy": [c.get("test_accuracy") for c in r["curve"]]}
            f.write("# %s lr %s plateau %s\n" % (r["spec"], r.get("lr"), e))
            for j, c in enumerate(r["curve"]):
                f.write("%d %.6g %.4f %.4f\n" % (
                    j + 1, c.get("train_loss"),
                    100 * (c.get("val_accuracy") or 0),
                    100 * (c.get("test_accuracy") or 0)))
            f.write("\n\n")
    names = list(res["optimizers"])
    with open(os.path.join(opts["--out"], "budget_vars.gp"), "w") as f:
        f.write("# written by tools/study.py budget\nnopt = %d\n" % len(names))
        f.write("array N[%d] = [%s]\n" % (len(names), ", ".join(
            '"%s"' % n for n in names)))
        f.write("array PE[%d] = [%s]\n" % (len(names), ", ".join(
            str(res["optimizers"][n]["plateau_epoch"] or 0) for n in names)))
    es = [o["plateau_epoch"] for o in res["optimizers"].values()]
    # not met within the run: the run's length, marked as a lower bound
    res["criterion_met"] = None not in es
    res["budget_epochs"] = (max(es) if res["criterion_met"] else
                            min(o["epochs_run"]
                                for o in res["optimizers"].values()))
    with open(os.path.join(opts["--out"], "budget.json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    for spec, o in res["optimizers"].items():
        sys.stderr.write("%s: %s plateau at epoch %s of %d\n" % (
            PROG, spec, o["plateau_epoch"], o["epochs_run"]))
    if not res["criterion_met"]:
        sys.stderr.write("%s: budget: the criterion is not met within the "
                         "run; the budget is its length, a lower bound\n"
                         % PROG)
    print("epochs=%d" % res["budget_epochs"])


def suite_size(path):
    """How many runs a suite file expands to (the product of each entry's
    foreach list lengths), or None when it cannot be read."""
    try:
        with open(path) as f:
            s = json.load(f)
    except (OSError, ValueError):
        return None
    n = 0
    for e in s.get("entries", []):
        k = 1
        for v in (e.get("foreach") or {}).values():
            k *= len(v) if isinstance(v, list) else 1
        n += k
    return n


def phase_state(out, name):
    """(state, runs with a result, runs planned, training seconds) of one
    phase of a budget study: done, partial or not started."""
    d = os.path.join(out, name)
    planned = suite_size(os.path.join(out, name + "-suite.json"))
    have, secs = 0, 0.0
    if os.path.isfile(os.path.join(d, "train.jsonl")):
        rows = load_rows(d)
        have = len(rows)
        secs = sum(r.get("wall_s") or 0 for r in rows)
    if os.path.isfile(os.path.join(out, name + ".done")):
        return "done", have, planned, secs
    return ("partial" if os.path.isdir(d) else "not started"), have, \
        planned, secs


def cmd_progress(args):
    """study.py progress OUT [--claims "lb slamb ..."]: a budget study's
    phases (bench/suites/convergence-budget.sh), each done, partial or not
    started, with its runs and training time, and what the report still
    lacks; markdown on stdout."""
    opts = {"--claims": " ".join(CLAIMS)}
    rest = parse_opts("progress", args, opts)
    if len(rest) != 1 or not os.path.isdir(rest[0]):
        die("progress: usage: study.py progress OUT [--claims LIST]")
    out = rest[0]
    claims = opts["--claims"].split()
    for c in claims:
        if c not in CLAIMS:
            die("--claims: '%s' is not one of %s" % (c, ", ".join(CLAIMS)))
    ep = os.path.join(out, "epochs")
    lines = ["# progress of %s" % out, "",
             "budget: %s" % ("%s epochs" % open(ep).read().strip()
                             if os.path.isfile(ep) else "not yet measured"),
             "",
             "| phase | state | runs with a result | runs planned | "
             "training s |", "|---|---|---|---|---|"]
    total, missing = 0.0, []
    for name in ["budget"] + ["%s-%s" % (c, p) for c in claims
                              for p in ("grid", "extend", "seeds")]:
        st, have, planned, secs = phase_state(out, name)
        if name == "budget":
            planned = suite_size(os.path.join(SUITES,
                                              "convergence-budget.json"))
        total += secs
        lines.append("| %s | %s | %d | %s | %.0f |" % (
            name, st, have, "-" if planned is None else planned, secs))
        if st != "done":
            missing.append(name)
    # runs made side by side (this study's, for a while) overlap: their
    # sum is then more than the time the machine spent
    lines += ["", "training time so far (sum of the runs' wall_s; runs "
              "made side by side overlap in it): %.0f s = %.2f h"
              % (total, total / 3600), ""]
    lines.append("not finished: %s" % (", ".join(missing) or "nothing: "
                                       "the report is complete"))
    sys.stdout.write("\n".join(lines) + "\n")


def write_gnuplot_have(out):
    """study_have.gp next to the data files: which of the optimizer blocks
    (1 = SGD-M, 2 = AdamW, 3 = LARS, 4 = LAMB) of acc_vs_batch.dat and
    acc_vs_epoch.dat hold points, as plots/study.gp's bhave and ehave, so
    that it plots only those (gnuplot warns on an empty block, and a
    subset such as the demo's has two optimizers)."""
    have = {}
    for var, name in (("bhave", "acc_vs_batch.dat"),
                      ("ehave", "acc_vs_epoch.dat")):
        blocks, cur = [], None
        with open(os.path.join(out, name)) as f:
            for line in f:
                if line.startswith("#"):
                    cur = len(blocks) + 1
                    blocks.append(False)
                elif line.strip() and not line.startswith("?") and cur:
                    blocks[cur - 1] = True
        have[var] = " ".join(str(i + 1) for i, b in enumerate(blocks) if b)
    with open(os.path.join(out, "study_have.gp"), "w") as f:
        f.write("# written by tools/study.py report: blocks with points\n")
        for var, v in have.items():
            f.write('%s = "%s"\n' % (var, v))


_curves = {}


def load_curve(r):
    """The per-epoch (epoch, test_accuracy) curve of a final row: the
    train.jsonl rows of the same run carry it in "curve" only when written
    by the run directory (train.jsonl keeps it)."""
    c = r.get("curve")
    if not c:
        return None
    return [(e.get("epoch"), e.get("test_accuracy") or 0.0) for e in c]


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0 if len(argv) >= 2 else 2
    cmd, args = argv[1], argv[2:]
    if cmd == "check":
        i = 0
        while i < len(args):
            a = args[i]
            v = args[i + 1] if i + 1 < len(args) else None
            if a == "--seeds":
                parse_seeds(v)
            elif a == "--batches":
                parse_batches(v)
            elif a == "--lr-grid":
                parse_grid(v)
            else:
                die("check: unknown option '%s'" % a)
            i += 2
        return 0
    if cmd == "tta":
        import study_tta   # tools/, next to this file
        return study_tta.main(args)
    cmds = {"seeds": cmd_seeds, "extend": cmd_extend,
            "decentral": cmd_decentral, "report": cmd_report,
            "plan": cmd_plan, "budget": cmd_budget,
            "progress": cmd_progress}
    if cmd not in cmds:
        die("unknown command '%s' (check, %s, tta)" % (cmd, ", ".join(cmds)))
    cmds[cmd](args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
