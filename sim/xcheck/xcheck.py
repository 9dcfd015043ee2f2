#!/usr/bin/env python3
"""xcheck.py - lbscale's ring collectives against SimGrid (validation 3c).

    xcheck.py --lbscale BUILD/lbscale --xcheck BUILD/sim/xcheck/simgrid_xcheck
              [--full] [--out DIR] [--platforms A.json,B.json,...]

For every platform (default: sim/xcheck/platforms/xcheck-1gpu.json,
xcheck-plain.json, xcheck-fattree.json), collective (allreduce: ring;
allgather: ring), GPU count P and size, it asks

  lbscale:  `lbscale sim coll --platform F --coll C --gpus .. --bytes ..
            --json --no-save` (the platforms enable only the ring algorithms
            and the Simple protocol, so that is what lbscale picks; checked).
            Its time at 1 byte is taken as its latency term L, the rest of
            its time at n bytes as its bandwidth term B = T - L.
  SimGrid:  `simgrid_xcheck --platform F ...` (FIFO-pipe connections, see
            its header) under SimGrid's CM02 flow model with every
            correction off (latency-factor 1, bandwidth-factor 1, no
            cross-traffic, no TCP window bound, weight-S 0): the same
            alpha-beta links, shared max-min fairly, every block of the
            algorithm simulated as a flow;
            with --full also under SimGrid's shipped default (LV08: latency
            x 13.01, bandwidth x 0.97, cross-traffic, weight-S 20537,
            TCP-gamma 4 MiB), reported only.

and prints one markdown table (diff = lbscale / SimGrid - 1) with the
median and worst |diff|.  Each case is classed by lbscale's own split:
  bw     L <= 1% of T: the bandwidth and link-sharing terms alone decide;
         gate |diff| <= --tol-bw (2%);
  lat    B <= 1% of T: the latency terms alone decide; gate |diff| <=
         --tol-lat (25%, set when lbscale counted NCCL 2.8's 2(N-1)
         inter-node hops per ring allreduce; 0.3% worst since it counts
         the pipelined ring's chain - see sim/README.md);
  mixed  gate: -tol-bw <= diff <= --tol-mixed (15%): lbscale prices the
         ring by the critical path of the pipelined ring at each hop's
         steady share of its links, which SimGrid beats where the NVLink
         hops are not shared by all channels all the time (worst +13.9%,
         xcheck-plain allreduce P=256 64M); below SimGrid it should never
         be.  (Before the critical path, with the alpha-beta sum, the gate
         was max(L, B) (1 - tol-bw) <= SimGrid <= T (1 + tol-lat), worst
         +55.7%.)
Exit 1 when a gate fails, 77 (skipped) when the SimGrid program was not
built (--xcheck none or a missing file), 2 on bad usage.

Default (the meson test, ~15 s on 2 cores): P = 2..64 x {1K, 1M, 64M, 1G}
on every platform, plus P = 128 and 256 at 64M on the last one, CM02 only.
--full: P = 2..256 x the four sizes on every platform, CM02 and LV08, and
with --out DIR writes DIR/table.md, DIR/rows.jsonl and DIR/meta.json
(SimGrid version, commands, wall times).
"""
import argparse
import json
import os
import platform as pyplatform
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CM02 = ["--cfg=network/model:CM02", "--cfg=network/latency-factor:1",
        "--cfg=network/bandwidth-factor:1", "--cfg=network/crosstraffic:0",
        "--cfg=network/TCP-gamma:0", "--cfg=network/weight-S:0"]
ALGO = {"allreduce": "ring", "allgather": "allgather-ring"}
SIZES = "1K,1M,64M,1G"
BIG = 64e6          # bandwidth-bound threshold (bytes)


def run(cmd, log):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    dt = time.time() - t0
    log.append({"cmd": " ".join(shlex.quote(c) for c in cmd),
                "rc": p.returncode, "wall_s": round(dt, 2)})
    if p.returncode != 0:
        sys.stderr.write("xcheck: command failed (rc %d): %s\n%s" %
                         (p.returncode, log[-1]["cmd"], p.stderr[-2000:]))
        sys.exit(1)
    return [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]


def lbscale_rows(args, plat, gpus, sizes, log):
    out = {}
    for coll in ("allreduce", "allgather"):
        for r in run([args.lbscale, "sim", "coll", "--platform", plat,
                      "--coll", coll, "--gpus", gpus, "--bytes", sizes,
                      "--json", "--no-save"], log):
            if r["algo"] != ALGO[coll] or r["proto"] != "Simple":
                sys.stderr.write("xcheck: %s: lbscale chose %s/%s for %s, "
                                 "expected %s/Simple\n" % (plat, r["algo"],
                                 r["proto"], coll, ALGO[coll]))
                sys.exit(1)
            out[(r["platform"], coll, r["gpus"], r["bytes"])] = r["time_us"]
    return out


def simgrid_rows(args, plat, gpus, sizes, cfg, log):
    out, meta = {}, None
    for r in run([args.xcheck, "--platform", plat, "--gpus", gpus,
                  "--bytes", sizes, "--json"] + cfg, log):
        out[(r["platform"], r["coll"], r["gpus"], r["bytes"])] = r["time_us"]
        meta = r
    return out, meta


def probe(cmd):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True,
                              cwd=HERE).stdout.strip() or None
    except OSError:
        return None


def fmt_bytes(b):
    for unit, v in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if b >= v and b % v == 0:
            return "%d%s" % (b / v, unit)
    return "%d" % b


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lbscale", required=True)
    ap.add_argument("--xcheck", required=True,
                    help="the simgrid_xcheck program, or 'none'")
    ap.add_argument("--platforms", default=",".join(
        os.path.relpath(os.path.join(HERE, "platforms", f)) for f in
        ("xcheck-1gpu.json", "xcheck-plain.json", "xcheck-fattree.json")))
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--tol-bw", type=float, default=0.02)
    ap.add_argument("--tol-lat", type=float, default=0.25)
    ap.add_argument("--tol-mixed", type=float, default=0.15)
    args = ap.parse_args()
    if args.xcheck == "none" or not os.path.isfile(args.xcheck):
        print("1..0 # SKIP SimGrid cross-check not built (install "
              "libsimgrid-dev and a C++ compiler, then reconfigure; meson "
              "option -Dsimgrid=enabled makes it required)")
        return 77

    # the revision before anything is written: --out may be the committed
    # results, whose rewrite would mark the tree dirty
    rev = probe(["git", "describe", "--always", "--dirty"])
    plats = args.platforms.split(",")
    # (platform index or None for all, gpus list, sizes) per batch
    if args.full:
        batches = [(None, "2..256", SIZES)]
    else:
        batches = [(None, "2..64", SIZES), (len(plats) - 1, "128,256", "64M")]
    log, lb, lat, cm, lv, sgmeta = [], {}, {}, {}, {}, None
    t0 = time.time()
    for i, plat in enumerate(plats):
        for only, gpus, sizes in batches:
            if only is not None and only != i:
                continue
            rows = lbscale_rows(args, plat, gpus, "1," + sizes, log)
            for k, t in rows.items():
                if k[3] == 1:
                    lat[k[:3]] = t      # latency term L
                else:
                    lb[k] = t
            rows, sgmeta = simgrid_rows(args, plat, gpus, sizes, CM02, log)
            cm.update(rows)
            if args.full:
                rows, _ = simgrid_rows(args, plat, gpus, sizes, [], log)
                lv.update(rows)
    wall = time.time() - t0

    keys = sorted(lb, key=lambda k: (k[0], k[1], k[2], k[3]))
    lines = ["| platform | coll | P | bytes | lbscale (us) | SimGrid CM02 "
             "(us) | diff | class |" +
             (" SimGrid LV08 (us) | diff |" if lv else ""),
             "|---|---|--:|--:|--:|--:|--:|---|" + ("--:|--:|" if lv else "")]
    diffs, bad, rows = [], [], []
    for k in keys:
        if k not in cm:
            sys.stderr.write("xcheck: no SimGrid row for %s\n" % (k,))
            return 1
        T, L, S = lb[k], lat[k[:3]], cm[k]
        B = max(T - L, 0.0)
        cls = "bw" if L <= 0.01 * T else "lat" if B <= 0.01 * T else "mixed"
        d = T / S - 1
        diffs.append((abs(d), cls, k))
        if cls == "bw":
            ok, why = abs(d) <= args.tol_bw, "|diff| > %g%%" % (100 * args.tol_bw)
        elif cls == "lat":
            ok, why = abs(d) <= args.tol_lat, "|diff| > %g%%" % (100 * args.tol_lat)
        else:
            ok = -args.tol_bw <= d <= args.tol_mixed
            why = "diff outside [-%g%%, +%g%%]" % (100 * args.tol_bw,
                                                  100 * args.tol_mixed)
        if not ok:
            bad.append((k, d, why))
        row = {"platform": k[0], "coll": k[1], "gpus": k[2], "bytes": k[3],
               "lbscale_us": T, "lbscale_latency_us": L,
               "simgrid_cm02_us": S, "diff": d, "class": cls}
        cells = "| %s | %s | %d | %s | %.1f | %.1f | %+.1f%% | %s |" % (
            k[0], k[1], k[2], fmt_bytes(k[3]), T, S, 100 * d, cls)
        if lv:
            dl = T / lv[k] - 1
            row.update(simgrid_lv08_us=lv[k], diff_lv08=dl)
            cells += " %.1f | %+.1f%% |" % (lv[k], 100 * dl)
        rows.append(row)
        lines.append(cells)

    def summary(sel, name):
        v = [(a, c, k) for a, c, k in diffs if sel(c, k)]
        if not v:
            return None
        worst = max(v)
        return ("%s (%d cases): median |diff| %.2f%%, worst %.2f%% (%s %s "
                "P=%d %s)" % (name, len(v),
                              100 * statistics.median(a for a, _, _ in v),
                              100 * worst[0], worst[2][0], worst[2][1],
                              worst[2][2], fmt_bytes(worst[2][3])))
    sums = [s for s in [summary(lambda c, k: True, "all")] +
            [summary(lambda c, k, p=p: k[0] == p, p)
             for p in sorted({k[0] for k in keys})] +
            [summary(lambda c, k, x=x: c == x, "class " + x)
             for x in ("bw", "mixed", "lat")] if s]
    if lv:
        vl = sorted(abs(r["diff_lv08"]) for r in rows)
        sums.append("vs SimGrid's LV08 defaults (%d cases): median |diff| "
                    "%.2f%%, worst %.2f%%" % (len(vl),
                                              100 * statistics.median(vl),
                                              100 * vl[-1]))
    gate = ("gate (CM02): bw |diff| <= %g%%, lat |diff| <= %g%%, mixed "
            "-%g%% <= diff <= +%g%%: %d case(s) outside" %
            (100 * args.tol_bw, 100 * args.tol_lat, 100 * args.tol_bw,
             100 * args.tol_mixed, len(bad)))
    # compact view: one row per (platform, coll, P), diff per size
    sizes = sorted({k[3] for k in keys})
    pivot = ["| platform | coll | P | " +
             " | ".join(fmt_bytes(b) for b in sizes) + " |",
             "|---|---|--:|" + "--:|" * len(sizes)]
    for pf, co, P in sorted({k[:3] for k in keys}):
        cells = []
        for b in sizes:
            k = (pf, co, P, b)
            cells.append("%+.1f%%" % (100 * (lb[k] / cm[k] - 1))
                         if k in lb else "")
        pivot.append("| %s | %s | %d | %s |" % (pf, co, P, " | ".join(cells)))
    print("\n".join(lines))
    print()
    print("\n".join(pivot))
    print()
    for s in sums + [gate]:
        print("- " + s)
    for k, d, why in bad:
        print("  FAIL %s %s P=%d %s: diff %+.2f%%: %s" %
              (k[0], k[1], k[2], fmt_bytes(k[3]), 100 * d, why))
    print("- wall time %.1f s" % wall)

    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "table.md"), "w") as f:
            f.write("\n".join(lines) + "\n\n" + "\n".join(pivot) +
                    "\n\n" + "".join("- %s\n" % s for s in sums + [gate]))
        with open(os.path.join(args.out, "rows.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        with open(os.path.join(args.out, "meta.json"), "w") as f:
            json.dump({"simgrid": sgmeta and sgmeta.get("simgrid"),
                       "simgrid_package": probe(["dpkg-query", "-W", "-f",
                                                 "${Package} ${Version}",
                                                 "libsimgrid-dev"]),
                       "lbscale_rev": rev,
                       "connection_model": sgmeta and sgmeta.get("latency"),
                       "slots": sgmeta and sgmeta.get("slots"),
                       "cm02_cfg": CM02,
                       "lv08_cfg": "SimGrid defaults" if lv else None,
                       "command": " ".join(shlex.quote(a) for a in sys.argv),
                       "runs": log, "wall_s": round(wall, 1),
                       "host": pyplatform.node(), "cpus": os.cpu_count(),
                       "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                 time.gmtime())},
                      f, indent=1)
            f.write("\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
