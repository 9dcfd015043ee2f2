#!/usr/bin/env python3
"""pair_ratio.py - time ratio of two lbscale benchmark commands, measured
side by side: A B A B ... (ROUNDS rounds, each a fresh process), and the
ratio of each round's medians, B / A, reported as median [min, max].

  tools/pair_ratio.py --rounds 5 --field step_ms_median \\
      --a 'optim --optim lamb --elements 100M --threads 2 --iters 5' \\
      --b 'optim --optim slamb --elements 100M --threads 2 --iters 5'

Each command runs as `lbscale CMD --json --no-save`; FIELD is read from
its JSON row.  Environment for one side: --a-env 'LBSCALE_ISA=c'.  Two
builds side by side: --a-lbscale OLD/lbscale --b-lbscale NEW/lbscale
(each defaults to --lbscale; a launcher may precede the binary, e.g.
'mpirun -np 2 build/lbscale').
Wrap the whole run in flock /tmp/lbscale-heavy.lock on a shared machine.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys


def run(binary, cmd, env_extra):
    env = dict(os.environ)
    for kv in shlex.split(env_extra or ""):
        k, v = kv.split("=", 1)
        env[k] = v
    p = subprocess.run(shlex.split(binary) + shlex.split(cmd) + ["--json", "--no-save"],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit("lbscale %s: exit %d: %s" % (cmd, p.returncode,
                                              p.stderr.strip()))
    rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return rows[-1], p.stderr.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lbscale", default="build/lbscale")
    ap.add_argument("--a-lbscale", default=None,
                    help="binary (and launcher) of side A; default --lbscale")
    ap.add_argument("--b-lbscale", default=None,
                    help="binary (and launcher) of side B; default --lbscale")
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--a-env", default="")
    ap.add_argument("--b-env", default="")
    ap.add_argument("--field", default="step_ms_median")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--label", default="B/A")
    a = ap.parse_args()
    ratios, ra, rb = [], [], []
    for i in range(a.rounds):
        xa, ea = run(a.a_lbscale or a.lbscale, a.a, a.a_env)
        xb, eb = run(a.b_lbscale or a.lbscale, a.b, a.b_env)
        ra.append(xa)
        rb.append(xb)
        ratios.append(xb[a.field] / xa[a.field])
        print("round %d: A %s = %.4g  B %s = %.4g  B/A = %.3f" %
              (i + 1, a.field, xa[a.field], a.field, xb[a.field],
               ratios[-1]), flush=True)
        for e in (ea, eb):
            if e:
                print("  stderr: " + e.replace("\n", "\n  stderr: "))
    print("%s: %s ratio median %.3f [min %.3f, max %.3f] over %d rounds" %
          (a.label, a.field, statistics.median(ratios), min(ratios),
           max(ratios), len(ratios)))
    for name, rows in (("A", ra), ("B", rb)):
        fr = [r.get("roofline_frac", r.get("stream_frac")) for r in rows]
        fr = [f for f in fr if f is not None]
        if fr:
            print("  %s roofline medians per round: %s (isa %s)" %
                  (name, " ".join("%.3f" % f for f in fr),
                   rows[0].get("isa")))


if __name__ == "__main__":
    main()
