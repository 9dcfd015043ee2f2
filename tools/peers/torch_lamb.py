#!/usr/bin/python3
"""Peer comparison on the GPU: lbscale's fused AdamW step (`lbscale optim
--device cuda`, CUDA events around each step) against PyTorch's fused
AdamW (torch.optim.AdamW(fused=True)), and lbscale's LAMB against apex's
FusedLAMB when apex is importable; same parameters, same tensor split,
timed with CUDA events in the same run.  When torch has no CUDA it says so
on stderr and exits 77 (skipped).

    /usr/bin/python3 tools/peers/torch_lamb.py --device cuda [--elements 100M]

The CPU comparison (torch-optimizer's Lamb, PyTorch's foreach AdamW and
SGD, torch.topk, in interleaved rounds) is tools/peers/cpu_peers.py;
`--device cpu` (the default) runs its LAMB pair with these options.
Needs Debian's python3-torch.  Prints one table and, with --json, one JSON
line per implementation.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".pydeps"))


def parse_count(s):
    mult = {"K": 10**3, "M": 10**6, "G": 10**9}
    return int(float(s[:-1]) * mult[s[-1]]) if s[-1] in mult else int(s)


def make_params(args, device=None):
    """args.tensors parameters of args.n elements in all, with gradients."""
    import torch
    torch.manual_seed(1)
    per = args.n // args.tensors
    params = [torch.nn.Parameter(torch.empty(1, per, device=device).uniform_(-0.1, 0.1))
              for _ in range(args.tensors)]
    for p in params:
        p.grad = torch.empty_like(p).uniform_(-0.01, 0.01)
    return params


def ours_cuda(args, spec):
    cmd = [args.lbscale, "optim", "--device", "cuda", "--optim", spec,
           "--elements", str(args.n), "--layers", f"uniform:{args.tensors}",
           "--iters", str(args.iters), "--warmup", str(args.warmup),
           "--json", "--no-save"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def peer_cuda(make_opt, args):
    """Median device time of one step, CUDA events around it (as lbscale)."""
    import torch
    params = make_params(args, torch.device("cuda"))
    opt = make_opt(params)
    times = []
    for i in range(args.warmup + args.iters):
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0.record()
        opt.step()
        t1.record()
        t1.synchronize()
        if i >= args.warmup:
            times.append(t0.elapsed_time(t1))
    del opt, params
    torch.cuda.empty_cache()
    return statistics.median(times)


def main_cuda(args):
    import torch
    if not torch.cuda.is_available():
        print(f"torch_lamb.py: SKIP: torch {torch.__version__} has no CUDA "
              f"(built without it, or no GPU/driver)", file=sys.stderr)
        sys.exit(77)
    hp = dict(lr=0.001, betas=(0.9, 0.999), weight_decay=0.01)
    pairs = [("adamw", "adamw:lr=0.001,b1=0.9,b2=0.999,eps=1e-8,wd=0.01",
              "torch AdamW fused",
              lambda ps: torch.optim.AdamW(ps, eps=1e-8, fused=True, **hp))]
    try:
        from apex.optimizers import FusedLAMB
        # apex's default global-norm clip (1.0) on both sides: apex has no
        # "off" (max_grad_norm=0 would zero the gradients)
        pairs.append(("lamb", "lamb:lr=0.001,b1=0.9,b2=0.999,eps=1e-6,wd=0.01,clip=1",
                      "apex FusedLAMB",
                      lambda ps: FusedLAMB(ps, eps=1e-6, max_grad_norm=1.0, **hp)))
    except Exception as e:
        print(f"# apex not importable ({type(e).__name__}); FusedLAMB skipped",
              file=sys.stderr)
    gpu = torch.cuda.get_device_name(0)
    print(f"# GPU {gpu}: {args.n} fp32 parameters in {args.tensors} tensors, "
          f"median of {args.iters} steps (CUDA events); torch {torch.__version__}")
    print(f"# {'implementation':<22} {'step(ms)':>10} {'GB/s':>9} {'ours/theirs':>12}")
    for optim, spec, name, make in pairs:
        row = ours_cuda(args, spec)
        mine, bpe = row["step_ms_median"], row["bytes_per_elem"]
        theirs = peer_cuda(make, args)
        for impl, ms in ((f"lbscale {optim}", mine), (name, theirs)):
            gbps = args.n * bpe / (ms * 1e-3) / 1e9
            print(f"  {impl:<22} {ms:>10.3f} {gbps:>9.1f} {mine / ms:>12.3f}")
            if args.json:
                print(json.dumps({"bench": "peer_optim", "device": "cuda",
                                  "gpu": gpu, "impl": impl, "optim": optim,
                                  "elements": args.n, "tensors": args.tensors,
                                  "step_ms_median": ms, "gbps_model": gbps,
                                  "bytes_per_elem": bpe,
                                  "copy_gbps": row["stream_gbps"],
                                  "ours_over_theirs": mine / ms}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--elements", default="100M")
    ap.add_argument("--tensors", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--lbscale", default=os.path.join(HERE, "..", "..", "build", "lbscale"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = ap.parse_args()
    args.n = parse_count(args.elements)
    try:
        import torch
    except ImportError:
        if args.device == "cuda":   # a missing peer: skipped, as below
            print("torch_lamb.py: SKIP: python3-torch is not installed",
                  file=sys.stderr)
            sys.exit(77)
        sys.exit("torch_lamb.py: python3-torch is not installed (apt-get install python3-torch)")
    if args.device == "cuda":
        return main_cuda(args)
    # the CPU pair lives in cpu_peers.py (interleaved rounds)
    cmd = [sys.executable, os.path.join(HERE, "cpu_peers.py"), "--only",
           "lamb", "--elements", str(args.n), "--tensors", str(args.tensors),
           "--threads", str(args.threads), "--iters", str(args.iters),
           "--warmup", str(args.warmup), "--lbscale", args.lbscale]
    return subprocess.call(cmd)

if __name__ == "__main__":
    sys.exit(main())
