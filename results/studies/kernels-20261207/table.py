#!/usr/bin/env python3
"""table.py OUT - the README's kernel table (markdown) from run.sh's
OUT/run1 and OUT/run2 (bench/kernels_run.sh's optim.txt and compress.txt):
median ms, the median ratio of the pairs [min, max] with the reference's
GB/s, and the start-up column (setup(ms)), run 1 / run 2."""
import sys

OPT = [("lamb", "LAMB"), ("adamw", "AdamW"), ("lars", "LARS"),
       ("sgd", "momentum SGD"), ("dmsgd", "DmSGD (1 rank)"),
       ("decentlam", "DecentLaM (1 rank)"), ("slamb", "SLAMB"),
       ("onebit_lamb", "1-bit LAMB (1 rank)")]
CMP = [("topk", "top-k 1% (exact)"), ("thresh", "threshold 1%"),
       ("randk", "random-k 1%"), ("cyclick", "cyclic random-k 1%"),
       ("sign", "sign"), ("qsgd", "QSGD"), ("powersgd", "PowerSGD r=2")]


def rows(path, key):
    """name -> fields of its result line; sgemm_frac kept for powersgd"""
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) > 14 and f[1].isdigit():
            out[f[0]] = f
        elif f and f[0] == "sgemm_frac":
            out["sgemm_frac"] = f
    return out


def ms(x):
    return f"{float(x):.1f}"


def ratio(f, i):
    """ratio [min, max] from fields i, i+1, i+2, two decimals"""
    lo, hi = f[i + 1].strip("[,"), f[i + 2].strip("]")
    return f"{float(f[i]):.2f} [{float(lo):.2f}, {float(hi):.2f}]"


def run(d, name):
    return rows(f"{d}/{name}.txt", name)


def main(d):
    o = [run(f"{d}/run{r}", "optim") for r in (1, 2)]
    c = [run(f"{d}/run{r}", "compress") for r in (1, 2)]
    print("| optimizer step | ms, run 1 / 2 | ratio to in-place (its GB/s), "
          "run 1 / run 2 | start-up ms | compressor | ms | B/elem | ratio to "
          "STREAM triad (its GB/s), run 1 / run 2 | start-up ms |")
    print("|---|--:|--|--:|---|--:|--:|--|--:|")
    for i, (k, label) in enumerate(OPT):
        a, b = o[0][k], o[1][k]
        # optim: 4 step ms, 10 in-place GB/s, 11 ratio, 12-13 [min, max], 15 setup
        left = (f"| {label} | {ms(a[4])} / {ms(b[4])} | {ratio(a, 11)} "
                f"({float(a[10]):.0f}) / {ratio(b, 11)} "
                f"({float(b[10]):.0f}) | {float(a[15]):.0f} / "
                f"{float(b[15]):.0f} |")
        if i < len(CMP):
            k2, l2 = CMP[i]
            x, y = c[0][k2], c[1][k2]
            # compress: 4 ms, 8 B/elem, 10 triad GB/s, 11 ratio, 12-13, 15 setup
            if k2 == "powersgd":
                sx, sy = c[0]["sgemm_frac"], c[1]["sgemm_frac"]
                r = f"{ratio(sx, 1)} / {ratio(sy, 1)} of sgemm"
            else:
                r = (f"{ratio(x, 11)} ({float(x[10]):.0f}) / "
                     f"{ratio(y, 11)} ({float(y[10]):.0f})")
            right = (f" {l2} | {ms(x[4])} / {ms(y[4])} | {float(x[8]):g} | {r} | "
                     f"{float(x[15]):.0f} / {float(y[15]):.0f} |")
        else:
            right = " | | | | |"
        print(left + right)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
