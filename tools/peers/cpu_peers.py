#!/usr/bin/python3
"""Peers side by side, interleaved: lbscale's kernels against what PyTorch
users run on the CPU, same element count, tensor split and threads, in
rounds A B A B ... so that a machine that slows down mid-run slows both.

    /usr/bin/python3 tools/peers/cpu_peers.py [--elements 100M] [--threads 2]
        [--rounds 5] [--iters 5] [--only lamb,adamw,sgd,topk] [--out DIR]

Pairs (hyperparameters equal on both sides):
  lamb   lbscale lamb        vs torch-optimizer's Lamb (issue 16 goal: 3x)
  adamw  lbscale adamw       vs torch.optim.AdamW(foreach=True), PyTorch's
                                multi-tensor path (goal: 1.5x)
  sgd    lbscale sgd         vs torch.optim.SGD(momentum=0.9, foreach=True)
  topk   lbscale topk:k=0.01 vs torch.topk(x.abs(), K, sorted=False) on the
                                same input (lbscale --save-input; goal: 50x)

One round = lbscale in its own process (median of --iters timed steps or
compress calls after --warmup) then the peer in this process (median of as
many); the round's speedup is peer ms / lbscale ms.  The table gives the
median [min, max] of the rounds' speedups, and both medians of ms.  The
lbscale step includes its gradient check pass (its bytes model's +4); the
peer's does not.  GB/s for both uses lbscale's bytes model (the peer moves
at least as much), so the bars of --out's figure compare like with like.

Pages: lbscale advises its arrays as transparent huge pages
(lbscale/mem.h); torch 1.13 allocates through glibc's malloc, which does
not unless this script runs under GLIBC_TUNABLES=glibc.malloc.hugetlb=1
(bench/kernels_run.sh runs it both ways).

Needs Debian's python3-torch (apt-get install python3-torch) and, for the
LAMB pair, torch-optimizer next to this script (no download at run time):
    pip install --no-deps --target tools/peers/.pydeps torch-optimizer pytorch-ranger
A pair whose peer is not importable is skipped with a line saying why.
--out DIR writes peers.jsonl (one row per pair), peers.dat and, with
gnuplot, peers.png / peers.svg (plots/peers.gp).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".pydeps"))

LAMB = dict(lr=0.001, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01)
ADAMW = dict(lr=0.001, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
SPECS = {
    "lamb": "lamb:lr=0.001,b1=0.9,b2=0.999,eps=1e-6,wd=0.01",
    "adamw": "adamw:lr=0.001,b1=0.9,b2=0.999,eps=1e-8,wd=0.01",
    "sgd": "sgd:lr=0.1,momentum=0.9",
}
GOALS = {"lamb": 3.0, "adamw": 1.5, "sgd": None, "topk": 50.0}


def parse_count(s):
    mult = {"K": 10**3, "M": 10**6, "G": 10**9}
    return int(float(s[:-1]) * mult[s[-1]]) if s[-1] in mult else int(s)


def run_json(cmd, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def ours_optim(a, name):
    # --stream-gbps 1: no reference pairs (this script compares peers, not
    # the roofline), so the lbscale process does only the steps
    row = run_json([a.lbscale, "optim", "--optim", SPECS[name], "--elements",
                    str(a.n), "--layers", f"uniform:{a.tensors}", "--threads",
                    str(a.threads), "--iters", str(a.iters), "--warmup",
                    str(a.warmup), "--stream-gbps", "1", "--json",
                    "--no-save"], a.threads)
    return row["step_ms_median"], row["bytes_per_elem"]


def ours_topk(a, path):
    row = run_json([a.lbscale, "compress", "--compressor", f"topk:k={a.k}",
                    "--elements", str(a.n), "--threads", str(a.threads),
                    "--iters", str(a.iters), "--warmup", str(a.warmup),
                    "--stream-gbps", "1", "--save-input", path, "--json",
                    "--no-save"], a.threads)
    return row["compress_ms_median"], 4.0, row


def median_ms(fn, a):
    times = []
    for i in range(a.warmup + a.iters):
        t0 = time.perf_counter()
        fn()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def make_params(a):
    import torch
    torch.manual_seed(1)
    per = a.n // a.tensors
    ps = [torch.nn.Parameter(torch.empty(1, per).uniform_(-0.1, 0.1))
          for _ in range(a.tensors)]
    for p in ps:
        p.grad = torch.empty_like(p).uniform_(-0.01, 0.01)
    return ps


def peer_factory(name):
    """(label, params -> optimizer), or (None, why) when not importable."""
    import torch
    if name == "lamb":
        try:
            import torch_optimizer
        except ImportError as e:
            return None, f"torch-optimizer not importable ({e}); see --help"
        return "torch-optimizer Lamb", lambda ps: torch_optimizer.Lamb(ps, **LAMB)
    if name == "adamw":
        return "torch AdamW foreach", lambda ps: torch.optim.AdamW(
            ps, foreach=True, **ADAMW)
    return "torch SGD foreach", lambda ps: torch.optim.SGD(
        ps, lr=0.1, momentum=0.9, foreach=True)


def peer_optim(a, make):
    ps = make_params(a)
    opt = make(ps)
    ms = median_ms(opt.step, a)
    del opt, ps
    return ms


def peer_topk(a, path, K):
    import numpy as np
    import torch
    x = torch.from_numpy(np.fromfile(path, dtype="<f4", count=a.n))
    out = {}

    def call():
        out["v"], _ = torch.topk(x.abs(), K, sorted=False)
    ms = median_ms(call, a)
    return ms, float(out["v"].min())


def spread(xs):
    return statistics.median(xs), min(xs), max(xs)


def pair_rounds(a, name):
    """Interleaved rounds of one pair; None when the peer is missing."""
    K = max(1, min(a.n, int(a.k * a.n + 0.5)))
    label, make = ("torch.topk", None) if name == "topk" else peer_factory(name)
    if label is None:
        print(f"# {name}: skipped: {make}", file=sys.stderr)
        return None
    mine, theirs, wrong = [], [], 0
    fd, path = tempfile.mkstemp(prefix="lbs_peer_", suffix=".f32")
    os.close(fd)
    try:
        for _ in range(a.rounds):
            if name == "topk":
                ms, bpe, row = ours_topk(a, path)
                pms, kth = peer_topk(a, path, K)
                # both must find the same K-th largest magnitude
                wrong += int(row["wrong"]) + (abs(row.get("kth_abs", kth) - kth) > 0)
            else:
                ms, bpe = ours_optim(a, name)
                pms = peer_optim(a, make)
            mine.append(ms)
            theirs.append(pms)
    finally:
        os.unlink(path)
    speed = [t / m for m, t in zip(mine, theirs)]
    return {"bench": "peer", "kernel": name, "peer": label,
            "elements": a.n, "tensors": a.tensors, "threads": a.threads,
            "rounds": a.rounds, "iters": a.iters, "bytes_per_elem": bpe,
            "lbscale_ms_median": statistics.median(mine),
            "peer_ms_median": statistics.median(theirs),
            "speedup_median": spread(speed)[0], "speedup_min": min(speed),
            "speedup_max": max(speed), "goal": GOALS[name], "wrong": wrong}


def write_out(a, rows, torch_version):
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "peers.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(dict(r, torch=torch_version)) + "\n")
    dat = os.path.join(a.out, "peers.dat")
    with open(dat, "w") as f:
        f.write("# kernel peer lbscale_gbps peer_gbps speedup_median\n")
        for r in rows:
            gb = r["elements"] * r["bytes_per_elem"] / 1e9
            f.write('"%s" "%s" %.3f %.3f %.3f\n' % (
                r["kernel"], r["peer"], gb / (r["lbscale_ms_median"] / 1e3),
                gb / (r["peer_ms_median"] / 1e3), r["speedup_median"]))
    gp = os.path.join(ROOT, "plots", "peers.gp")
    try:
        subprocess.run(["gnuplot", "-e", f"datafile='{dat}'; outbase='"
                        f"{os.path.join(a.out, 'peers')}'; threads={a.threads};"
                        f" elems={a.n}", gp], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"# figure not drawn: {e}", file=sys.stderr)


def fail(msg):
    """Bad input: one line naming the problem, exit 2."""
    print(f"cpu_peers.py: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.error = fail   # argparse's own errors too: one line, no usage
    ap.add_argument("--elements", default="100M")
    ap.add_argument("--tensors", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--k", type=float, default=0.01)
    ap.add_argument("--only", default="lamb,adamw,sgd,topk")
    ap.add_argument("--lbscale", default=os.path.join(ROOT, "build", "lbscale"))
    ap.add_argument("--out")
    a = ap.parse_args()
    try:
        a.n = parse_count(a.elements)
    except (ValueError, IndexError):
        ap.error(f"--elements: '{a.elements}' is not a count (e.g. 100M)")
    a.only = [x for x in a.only.split(",") if x]
    bad = [x for x in a.only if x not in GOALS]
    if bad or not a.only:
        ap.error(f"--only: use some of {','.join(GOALS)} (got '{','.join(bad)}')")
    for key in ("tensors", "threads", "rounds", "iters"):
        if getattr(a, key) < 1:
            ap.error(f"--{key} must be >= 1")
    if a.warmup < 0 or a.n < a.tensors or not 0 < a.k <= 1:
        ap.error("--warmup >= 0, --elements >= --tensors, 0 < --k <= 1")
    return a


def main():
    a = parse_args()
    try:
        import torch
    except ImportError:
        fail("python3-torch is not installed (apt-get install python3-torch)")
    torch.set_num_threads(a.threads)
    print(f"# {a.n} fp32 elements in {a.tensors} tensors, {a.threads} "
          f"threads, {a.rounds} rounds of (lbscale, peer), median of "
          f"{a.iters} calls each; torch {torch.__version__}")
    print(f"# {'kernel':<6} {'peer':<22} {'lbscale ms':>11} {'peer ms':>10} "
          f"{'speedup [min, max]':>26} {'goal':>6}")
    rows = []
    for name in a.only:
        r = pair_rounds(a, name)
        if r is None:
            continue
        rows.append(r)
        goal = f"{r['goal']:.1f}x" if r["goal"] else "-"
        print(f"  {name:<6} {r['peer']:<22} {r['lbscale_ms_median']:>11.1f} "
              f"{r['peer_ms_median']:>10.1f} {r['speedup_median']:>9.2f}x "
              f"[{r['speedup_min']:.2f}, {r['speedup_max']:.2f}] {goal:>6}",
              flush=True)
        if r["wrong"]:
            print(f"cpu_peers.py: {name}: {r['wrong']} disagreement(s) "
                  "with the peer's result", file=sys.stderr)
    if a.out and rows:
        write_out(a, rows, torch.__version__)
    sys.exit(1 if any(r["wrong"] for r in rows) else 0)


if __name__ == "__main__":
    main()
