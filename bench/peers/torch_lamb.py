#!/usr/bin/python3
"""Peer comparison: lbscale's LAMB step vs LAMB as PyTorch users run it on
the CPU (torch-optimizer's Lamb, and timm's Lamb when importable), on the
same number of fp32 parameters, the same tensor split and the same threads,
measured back to back in one run.

    /usr/bin/python3 bench/peers/torch_lamb.py [--elements 100M] [--threads 2]

Needs Debian's python3-torch.  torch-optimizer is pure Python; if it is not
importable, install it next to this script (no downloads at run time):
    pip install --no-deps --target bench/peers/.pydeps torch-optimizer pytorch-ranger
Prints one table and, with --json, one JSON line per implementation.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".pydeps"))


def parse_count(s):
    mult = {"K": 10**3, "M": 10**6, "G": 10**9}
    return int(float(s[:-1]) * mult[s[-1]]) if s[-1] in mult else int(s)


def ours(args):
    # Same hyperparameters as the peers below; exclude_1d=0 and no clamp
    # because all tensors here are 2-D and torch-optimizer clamps ||w|| only.
    spec = "lamb:lr=0.001,b1=0.9,b2=0.999,eps=1e-6,wd=0.01"
    cmd = [args.lbscale, "optim", "--optim", spec, "--elements", str(args.n),
           "--layers", f"uniform:{args.tensors}", "--threads", str(args.threads),
           "--iters", str(args.iters), "--warmup", str(args.warmup),
           "--json", "--no-save"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    row = json.loads(out.strip().splitlines()[-1])
    return row["step_ms_median"], row


def peer(name, make_opt, args):
    import torch
    torch.manual_seed(1)
    per = args.n // args.tensors
    params = [torch.nn.Parameter(torch.empty(1, per).uniform_(-0.1, 0.1))
              for _ in range(args.tensors)]
    for p in params:
        p.grad = torch.empty_like(p).uniform_(-0.01, 0.01)
    opt = make_opt(params)
    times = []
    for i in range(args.warmup + args.iters):
        t0 = time.perf_counter()
        opt.step()
        if i >= args.warmup:
            times.append(time.perf_counter() - t0)
    del opt, params
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--elements", default="100M")
    ap.add_argument("--tensors", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--lbscale", default=os.path.join(HERE, "..", "..", "build", "lbscale"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.n = parse_count(args.elements)
    try:
        import torch
    except ImportError:
        sys.exit("torch_lamb.py: python3-torch is not installed (apt-get install python3-torch)")
    torch.set_num_threads(args.threads)

    peers = []
    try:
        import torch_optimizer
        peers.append(("torch-optimizer Lamb", lambda ps: torch_optimizer.Lamb(
            ps, lr=0.001, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01)))
    except ImportError as e:
        print(f"# torch-optimizer not importable ({e}); see --help", file=sys.stderr)
    try:
        from timm.optim import Lamb as TimmLamb
        peers.append(("timm Lamb", lambda ps: TimmLamb(
            ps, lr=0.001, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01,
            max_grad_norm=None)))
    except Exception as e:
        print(f"# timm not importable ({type(e).__name__}); skipped", file=sys.stderr)
    if not peers:
        sys.exit("torch_lamb.py: no peer LAMB implementation importable")

    ours_ms, row = ours(args)
    rows = [("lbscale lamb", ours_ms)]
    for name, make in peers:
        rows.append((name, peer(name, make, args)))
    print(f"# LAMB step, {args.n} fp32 parameters in {args.tensors} tensors, "
          f"{args.threads} threads, median of {args.iters}; torch {torch.__version__}")
    print(f"# {'implementation':<24} {'step(ms)':>10} {'ours/theirs':>12}")
    for name, ms in rows:
        print(f"  {name:<24} {ms:>10.1f} {ours_ms / ms:>12.3f}")
        if args.json:
            print(json.dumps({"impl": name, "elements": args.n, "threads": args.threads,
                              "step_ms_median": ms, "ours_over_theirs": ours_ms / ms}))


if __name__ == "__main__":
    main()
