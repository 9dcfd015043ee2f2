#!/usr/bin/python3
"""Peer comparison: lbscale's exact top-k compressor vs torch.topk on the
same data (lbscale writes its input with --save-input), the same size,
density and threads, measured back to back in one run.

    /usr/bin/python3 tools/peers/torch_topk.py [--elements 100M] [--k 0.01]
                                               [--threads 2] [--json]
                                               [--device cpu|cuda]

--device cuda times both on the GPU: `lbscale compress --device cuda` and
torch.topk on a CUDA tensor (each call synchronised, as lbscale's calls
are); GB/s is then compared with the device-to-device copy bandwidth that
lbscale measures.  Without a CUDA-enabled torch or a GPU the script stops
with one line, as it does without torch.

torch side: torch.topk(x.abs(), K, sorted=False) - the magnitudes and the
indices, which is what a top-k compressor needs before gathering values
(PyTorch users and GRACE's TopKCompressor call exactly this).  lbscale side:
`lbscale compress --compressor topk:k=K` compress time (selection plus
index/value payload).  Both report input GB/s = 4 N / median time; the
ratio is lbscale / torch.  The K-th largest magnitude of both must agree
(#wrong counts a mismatch).  Needs Debian's python3-torch and numpy.
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


def parse_count(s):
    mult = {"K": 10**3, "M": 10**6, "G": 10**9}
    return int(float(s[:-1]) * mult[s[-1]]) if s[-1] in mult else int(s)


def ours(args, path):
    cmd = [args.lbscale, "compress", "--compressor", f"topk:k={args.k}",
           "--elements", str(args.n), "--threads", str(args.threads),
           "--iters", str(args.iters), "--warmup", str(args.warmup),
           "--save-input", path, "--json", "--no-save"]
    if args.device == "cuda":
        cmd += ["--device", "cuda"]
    elif args.stream_gbps:
        cmd += ["--stream-gbps", str(args.stream_gbps)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def theirs(args, path, K):
    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    x = torch.from_numpy(np.fromfile(path, dtype="<f4", count=args.n))
    cuda = args.device == "cuda"
    if cuda:
        x = x.cuda()
        torch.cuda.synchronize()
    times = []
    for i in range(args.warmup + args.iters):
        t0 = time.perf_counter()
        vals, idx = torch.topk(x.abs(), K, sorted=False)
        if cuda:
            torch.cuda.synchronize()
        if i >= args.warmup:
            times.append(time.perf_counter() - t0)
    kth = float(vals.min())
    return statistics.median(times), min(times), max(times), kth


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--elements", default="100M")
    ap.add_argument("--k", type=float, default=0.01)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--stream-gbps", type=float, default=0)
    ap.add_argument("--lbscale",
                    default=os.path.join(HERE, "..", "..", "build", "lbscale"))
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.n = parse_count(args.elements)
    if not 0 < args.k <= 1:
        sys.exit("torch_topk.py: --k must be in (0, 1]")
    try:
        import numpy  # noqa: F401
        import torch
    except ImportError as e:
        sys.exit(f"torch_topk.py: {e.name} is not installed "
                 "(apt-get install python3-torch python3-numpy)")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"torch_topk.py: torch {torch.__version__} has no CUDA "
                 "device (torch.cuda.is_available() is False)")
    K = max(1, min(args.n, int(args.k * args.n + 0.5)))
    fd, path = tempfile.mkstemp(prefix="lbs_topk_", suffix=".f32")
    os.close(fd)
    try:
        row = ours(args, path)
        t_med, t_min, t_max, kth = theirs(args, path, K)
    finally:
        os.unlink(path)
    in_bytes = 4.0 * args.n
    mine = in_bytes / (row["compress_ms_median"] / 1e3) / 1e9
    peer = in_bytes / t_med / 1e9
    wrong = int(row["wrong"]) + (abs(row.get("kth_abs", kth) - kth) > 0)
    # the bandwidth reference: STREAM triad (cpu) or device copy (cuda)
    ref_key = "copy_gbps" if args.device == "cuda" else "stream_gbps"
    common = {"bench": "peer_topk", "device": args.device,
              "elements": args.n, "k": args.k, "K": K,
              "threads": args.threads, ref_key: row[ref_key]}
    if args.device == "cuda":
        common["gpu"] = row.get("gpu")
    rows = [
        dict(common, impl="lbscale topk", ms_median=row["compress_ms_median"],
             ms_min=row["compress_ms_min"], ms_max=row["compress_ms_max"],
             gbps=mine, kth_abs=row.get("kth_abs"), wrong=wrong),
        dict(common, impl=f"torch.topk {torch.__version__}",
             ms_median=t_med * 1e3, ms_min=t_min * 1e3, ms_max=t_max * 1e3,
             gbps=peer, kth_abs=kth, wrong=0),
    ]
    if args.json:
        for r in rows:
            print(json.dumps(r))
    else:
        if args.device == "cuda":
            print(f"# top-k of |x| on {row.get('gpu')}: N={args.n} k={args.k} "
                  f"(K={K}) device copy {row['copy_gbps']:.1f} GB/s")
        else:
            print(f"# top-k of |x|: N={args.n} k={args.k} (K={K}) "
                  f"threads={args.threads} STREAM triad "
                  f"{row['stream_gbps']:.2f} GB/s")
        print(f"# {'impl':<22} {'ms(median)':>10} {'min':>8} {'max':>8} "
              f"{'GB/s':>7} {'kth|x|':>12} {'#wrong':>6}")
        for r in rows:
            print(f"  {r['impl']:<22} {r['ms_median']:10.2f} {r['ms_min']:8.2f} "
                  f"{r['ms_max']:8.2f} {r['gbps']:7.2f} {r['kth_abs']:12.6g} "
                  f"{r['wrong']:6d}")
        print(f"  ratio lbscale / torch: {mine / peer:.2f}x")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
