#!/usr/bin/python3
"""summary.py OUT - per-pass CPU ms per step and GB/s from run.sh's perf
reports: samples at 4999 Hz of cpu-clock, both threads summed, over the
11 steps (2 warm-up + 9 timed) each optimizer takes in a process.  GB/s
of a pass = its bytes per element (COMMANDS.md) x 100M / (CPU ms / 2),
the two threads sharing the pass."""
import glob, os, re, sys
from statistics import median

HZ, STEPS, N, THREADS = 4999, 11, 100e6, 2
# pass -> (symbol prefixes, bytes per element at k = 0.1); a pass's
# helpers that the compiler kept out of line are its own (the [kernel]
# share - page faults of the first touches - is in "other")
PASSES = {
    "lamb pass 1": (("lamb_chunks_", "lamb_avx", "lamb_c"), 28.0),
    "lamb pass 2 (axpy)": (("axpy_",), 12.0),
    "slamb q1": (("slamb_q1_chunks_", "slamb_qu_", "slamb_moments_",
                  "compact_"), 30.6),
    "slamb qfix": (("slamb_qfix_chunks_",), 2.0),
    "slamb qupd": (("slamb_qupd_chunks_", "qupd_vec", "qt_vec"), 13.4),
    "slamb expand (q1 and qupd)": (("expand_",), 0.0),
}


def read(report):
    rows = {}
    for line in open(report):
        m = re.match(r"\s*(\d+)\s+\[(.)\]\s+(\S+)", line)
        if m:
            key = "[kernel]" if m.group(2) == "k" else m.group(3)
            rows[key] = rows.get(key, 0) + int(m.group(1))
    return rows


def out_fields(path):
    txt = open(path).read()
    lamb = re.search(r"^\s+lamb\s+\d+\s+\d+\s+\d+\s+([\d.]+)", txt, re.M)
    pair = re.search(r"= ([\d.]+) \[", txt)
    return (float(lamb.group(1)) if lamb else None,
            float(pair.group(1)) if pair else None)


def main(out):
    runs = sorted(glob.glob(os.path.join(out, "r*-*.report")))
    by_arm = {}
    print("| process | lamb step ms | slamb/lamb | " +
          " | ".join(f"{p} ms" for p in PASSES) + " | top other symbols |")
    print("|---|---|---|" + "---|" * len(PASSES) + "---|")
    for rep in runs:
        tag = os.path.basename(rep)[:-7]
        rows = read(rep)
        lamb_ms, ratio = out_fields(rep[:-7] + ".out")
        ms = {}
        used = set()
        for p, (pre, _) in PASSES.items():
            keys = [k for k in rows if k.startswith(pre) and k not in used]
            used.update(keys)
            ms[p] = sum(rows[k] for k in keys) * 1000.0 / HZ / STEPS
        rest = sorted(((v, k) for k, v in rows.items() if k not in used),
                      reverse=True)[:3]
        other = ", ".join(f"{k} {v * 1000.0 / HZ / STEPS:.1f}"
                          for v, k in rest)
        arm = tag.split("-", 1)[1]
        by_arm.setdefault(arm, []).append((lamb_ms, ratio, ms))
        print(f"| {tag} | {lamb_ms} | {ratio} | " +
              " | ".join(f"{ms[p]:.1f}" for p in PASSES) + f" | {other} |")
    print()
    print("Medians per arm (CPU ms per step, both threads; GB/s as in the "
          "docstring):")
    print()
    print("| arm | processes | slamb/lamb | " +
          " | ".join(f"{p} ms (GB/s)" for p in PASSES) +
          " | slamb - lamb, passes ms |")
    print("|---|---|---|" + "---|" * len(PASSES) + "---|")
    for arm, rs in sorted(by_arm.items()):
        cells = []
        med = {}
        for p, (_, b) in PASSES.items():
            med[p] = median(r[2][p] for r in rs)
            gbps = b * N / (med[p] / THREADS / 1000.0) / 1e9 if med[p] else 0
            cells.append(f"{med[p]:.1f} ({gbps:.0f})" if b else f"{med[p]:.1f}")
        diff = (sum(med[p] for p in PASSES if p.startswith("slamb")) -
                sum(med[p] for p in PASSES if p.startswith("lamb")))
        ratios = [r[1] for r in rs if r[1]]
        print(f"| {arm} | {len(rs)} | {median(ratios) if ratios else '-'} | "
              + " | ".join(cells) + f" | {diff:+.1f} |")


if __name__ == "__main__":
    main(sys.argv[1])


def beyond_bytes(out):
    """H1's quantity per process: each SLAMB pass's CPU ms against what
    its bytes would take at its LAMB counterpart's GB/s (q1 at pass 1's,
    qfix and qupd at the update's)."""
    print()
    print("Beyond bytes (CPU ms per step): SLAMB's passes minus LAMB's, "
          "split into what the extra bytes explain at LAMB's GB/s and "
          "what each pass takes beyond that:")
    print()
    print("| process | lamb step ms | slamb - lamb | bytes | q1 beyond | "
          "qfix beyond | qupd beyond | q1 GB/s / pass 1's | "
          "qupd GB/s / update's |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rep in sorted(glob.glob(os.path.join(out, "r*-*.report"))):
        tag = os.path.basename(rep)[:-7]
        rows = read(rep)
        lamb_ms, _ = out_fields(rep[:-7] + ".out")
        ms, used = {}, set()
        for p, (pre, _) in PASSES.items():
            keys = [k for k in rows if k.startswith(pre) and k not in used]
            used.update(keys)
            ms[p] = sum(rows[k] for k in keys) * 1000.0 / HZ / STEPS
        B = {p: b for p, (_, b) in PASSES.items()}
        p1, up = ms["lamb pass 1"], ms["lamb pass 2 (axpy)"]
        exp = {"slamb q1": p1 * B["slamb q1"] / B["lamb pass 1"],
               "slamb qfix": up * B["slamb qfix"] / B["lamb pass 2 (axpy)"],
               "slamb qupd": up * B["slamb qupd"] / B["lamb pass 2 (axpy)"]}
        slamb = sum(ms[p] for p in PASSES if p.startswith("slamb"))
        diff = slamb - p1 - up
        print(f"| {tag} | {lamb_ms} | {diff:+.1f} | "
              f"{sum(exp.values()) - p1 - up:+.1f} | " +
              " | ".join(f"{ms[p] - exp[p]:+.1f}" for p in exp) +
              f" | {exp['slamb q1'] / ms['slamb q1']:.2f} | "
              f"{exp['slamb qupd'] / ms['slamb qupd']:.2f} |")


if __name__ == "__main__":
    beyond_bytes(sys.argv[1])
