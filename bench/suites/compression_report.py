#!/usr/bin/python3
"""Tables and figure of the compressor comparison (bench/suites/compression.json).

    /usr/bin/python3 bench/suites/compression_report.py RUN_DIR

Reads RUN_DIR/{compress,train,optim-record,sim}.jsonl (nothing else) and
prints a Markdown table (one row per compressor setting).  The figure
(LAMB's final test accuracy against the simulated BERT-Large time per step
at 1,024 GPUs, one point per compressor, one series per platform) is
`lbscale plot RUN_DIR`'s compression_tradeoff.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def rows(run, name):
    path = os.path.join(run, name + ".jsonl")
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip()]


def key(name, params):
    """'topk' + 'k=0.01,ef=1' -> 'topk:k=0.01' (the setting, without ef)."""
    kv = dict(p.split("=", 1) for p in params.split(",") if "=" in p) if params else {}
    for k in ("k", "r"):
        if k in kv:
            return f"{name}:{k}={float(kv[k]):g}"
    return name


def spec_key(spec):
    if not spec:
        return "none"
    name, _, params = spec.partition(":")
    return key(name, params)


def main():
    run = sys.argv[1]
    table = {}

    def entry(k):
        return table.setdefault(k, {})

    for r in rows(run, "compress"):
        e = entry(key(r["compressor"], r.get("params", "")))
        e["collective"] = r["collective"]
        e["stream_frac"] = r["stream_frac"]
        e["gbps"] = r["gbps"]
        e["rel_err"] = r["rel_err"]
    for r in rows(run, "train"):
        if r.get("event") != "final":
            continue
        e = entry(spec_key(r.get("compress")))
        e["acc_" + r["optim"]] = 100 * r["test_accuracy"]
    traces = {}
    for r in rows(run, "optim-record"):
        k = spec_key(r.get("compress"))
        entry(k)["bytes"] = r["bytes_per_step"]
        entry(k)["dense"] = r["dense_bytes_per_step"]
        traces[os.path.basename(r.get("trace", ""))] = k
    for r in rows(run, "sim"):
        src = os.path.basename(r.get("trace") or r.get("plan", "").split(" ")[-1])
        k = traces.get(src)
        if k is None:
            continue
        entry(k)[f"{r['platform']}_{r['gpus']}"] = (r["iter_ms"], r["scaling_efficiency"])

    order = sorted(table, key=lambda k: -table[k].get("bytes", 0))
    print("| compressor | collective | bytes/step/rank (BERT-Large) | of dense | compress GB/s (of STREAM) | rel. error | LAMB acc. | SGD acc. "
          "| DGX-A100 ms/step @64 / 256 / 1024 (eff. @1024) | 25 GbE ms/step @64 / 256 / 1024 (eff. @1024) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for k in order:
        e = table[k]

        def plat(p):
            pts = [e.get(f"{p}_{g}") for g in (64, 256, 1024)]
            if not all(pts):
                return "-"
            return " / ".join(f"{t:.0f}" for t, _ in pts) + f" ({pts[2][1]:.2f})"

        fmt = lambda v, f: f.format(v) if v is not None else "-"
        print(f"| `{k}` | {e.get('collective', '-')} | {fmt(e.get('bytes'), '{:,.0f}')} "
              f"| {fmt(e['bytes'] / e['dense'] if 'bytes' in e else None, '{:.4f}')} "
              f"| {fmt(e.get('gbps'), '{:.2f}')} ({fmt(e.get('stream_frac'), '{:.2f}')}) "
              f"| {fmt(e.get('rel_err'), '{:.3f}')} | {fmt(e.get('acc_lamb'), '{:.2f}%')} "
              f"| {fmt(e.get('acc_sgd'), '{:.2f}%')} | {plat('dgx-a100')} | {plat('eth-25g')} |")

    # the figure is plot's (compression_tradeoff, from the same rows):
    # no gnuplot code is built here from a path
    print(f"\nfigure: lbscale plot {run}  (plots/compression_tradeoff.png)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
