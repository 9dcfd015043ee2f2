#!/usr/bin/env python3
"""Writes the calibration fixtures of tests/calib_formats_cli.sh: tables in
the layouts nccl-tests and the OSU micro-benchmarks print (not produced by
those programs: no GPU and no OSU build here), filled with times from the
ring forms of `lbscale sim calibrate` (sim/README.md, "Calibration") with
the constants below, rounded as each tool prints them.  So the test knows
what the fit must recover.  Layouts followed:

  nccl-tests 2.13+ (src/util.cu): '# nccl-tests version', '# Collective
    test starting: PROG', '# nThread ...', '# Using devices', one
    '#  Rank  R Group  G Pid P on HOST device D [BUS] NAME' line per rank,
    the two-group header (size count type redop root | time algbw busbw
    #wrong | time algbw busbw #wrong), the units line, rows, '# Out of
    bounds values', '# Avg bus bandwidth', '# Collective test concluded'.
  nccl-tests 2.0-2.10: no 'Collective test starting' line, rank lines
    without Group, no root column, 'error' (max error) columns.
  nccl-tests -J FILE (JSON version 2): version, args, config.devices,
    results[] {size, count, type, redop, root, out_of_place {time, alg_bw,
    bus_bw, nwrong}, in_place {...}}, out_of_bounds, average_bus_bandwidth.
  OSU 7.x osu_allreduce: '# OSU MPI Allreduce Latency Test v7.4',
    '# Datatype: MPI_CHAR.', '# Size       Avg Latency(us)', rows.

Run: /usr/bin/python3 tests/data/calib/gen_fixtures.py tests/data/calib
"""
import json
import os
import sys

# one node: the link inside a node (per rank); several nodes: the ring's
# exit from a node
INTRA = dict(base=8.0, hop=1.5, bw=60e9)      # us, us, B/s
INTER = dict(base=15.0, hop=6.0, bw=12e9)


def ring_us(coll, P, n, c):
    """Ring-form time (us) of one call, n = the per-rank payload."""
    steps = {"allreduce": 2 * (P - 1), "allgather": P - 1,
             "alltoall": P - 1, "bcast": P - 1}[coll]
    vol = {"allreduce": 2 * (P - 1) / P * n, "allgather": (P - 1) * n,
           "alltoall": (P - 1) / P * n, "bcast": n}[coll]
    return c["base"] + steps * c["hop"] + vol / c["bw"] * 1e6


def busbw_factor(coll, P):
    return {"allreduce": 2 * (P - 1) / P, "allgather": (P - 1) / P,
            "alltoall": (P - 1) / P, "bcast": 1.0}[coll]


def fmt_float(v, width):
    """nccl-tests' getFloatStr: 2, 1 or 0 decimals as the value grows."""
    power, val = 0, 1
    while v >= val:
        power += 1
        val *= 10
    if power < width - 2:
        return "%*.2f" % (width, v)
    if power < width - 1:
        return "%*.1f" % (width, v)
    if power < width + 1:
        return "%*.0f" % (width, v)
    return "%*.1e" % (width, v)


def sizes(lo, hi, f):
    s = lo
    while s <= hi:
        yield s
        s *= f


def rows(coll, P, c, lo, hi, f):
    """(size, count, time_us, algbw, busbw) as nccl-tests reports them."""
    for S in sizes(lo, hi, f):
        n = S / P if coll == "allgather" else S
        t = ring_us(coll, P, n, c)
        alg = S / t / 1e3
        yield S, S // 4, t, alg, alg * busbw_factor(coll, P)


def hosts_of(P, per):
    return ["node%02d" % (r // per + 1) for r in range(P)]


def nccl_text(prog, coll, P, per, c, lo, hi, f, old=False, info=False):
    out = []
    redop = "sum" if coll == "allreduce" else "none"
    if not old:
        out.append("# nccl-tests version 2.17.6 nccl-headers=22703 "
                   "nccl-library=22703")
        out.append("# Collective test starting: %s" % prog)
        out.append("# nThread 1 nGpus 1 minBytes %d maxBytes %d step: "
                   "%d(factor) warmup iters: 5 iters: 20 agg iters: 1 "
                   "validation: 1 graph: 0 unalign: 0" % (lo, hi, f))
    else:
        out.append("# nThread 1 nGpus 1 minBytes %d maxBytes %d step: "
                   "%d(factor) warmup iters: 5 iters: 20 validation: 1 "
                   % (lo, hi, f))
    out.append("#")
    out.append("# Using devices")
    for r, h in enumerate(hosts_of(P, per)):
        if old:
            out.append("#   Rank %2d Pid %6d on %10s device %2d [0x%02x] "
                       "Tesla V100-SXM2-32GB" % (r, 4000 + r, h, r % per,
                                                 0x10 + r % per))
        else:
            out.append("#  Rank %2d Group  0 Pid %6d on %10s device %2d "
                       "[0000:%02x:00] NVIDIA A100-SXM4-80GB"
                       % (r, 4000 + r, h, r % per, 0x10 + r % per))
    out.append("#")
    if old:
        out.append("#                                                 "
                   "out-of-place                       in-place          ")
        out.append("#       size         count      type   redop     time"
                   "   algbw   busbw  error     time   algbw   busbw  error")
        out.append("#        (B)    (elements)                     (us)  "
                   "(GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ")
    else:
        out.append("# %10s  %12s  %8s  %6s  %6s           out-of-place    "
                   "                   in-place          " % ("", "", "", "",
                                                              ""))
        out.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  "
                   "%6s  %6s  %6s " % ("size", "count", "type", "redop",
                                       "root", "time", "algbw", "busbw",
                                       "#wrong", "time", "algbw", "busbw",
                                       "#wrong"))
        out.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  "
                   "%6s  %6s  %6s " % ("(B)", "(elements)", "", "", "",
                                       "(us)", "(GB/s)", "(GB/s)", "",
                                       "(us)", "(GB/s)", "(GB/s)", ""))
    bws = []
    for i, (S, cnt, t, alg, bus) in enumerate(rows(coll, P, c, lo, hi, f)):
        ti = t * 1.01     # in-place: 1% slower, so the test sees which
        algi, busi = S / ti / 1e3, S / ti / 1e3 * busbw_factor(coll, P)
        bws.append(bus)
        if old:
            out.append("%12d  %12d  %8s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  "
                       "%6s  %6s" % (S, cnt, "float", redop,
                                     fmt_float(t, 7), fmt_float(alg, 6),
                                     fmt_float(bus, 6), "0e+00",
                                     fmt_float(ti, 7), fmt_float(algi, 6),
                                     fmt_float(busi, 6), "0e+00"))
        else:
            out.append("%12d  %12d  %8s  %6s  %6s  %7s  %6s  %6s  %6d  %7s  "
                       "%6s  %6s  %6d" % (S, cnt, "float", redop, "-1",
                                          fmt_float(t, 7), fmt_float(alg, 6),
                                          fmt_float(bus, 6), 0,
                                          fmt_float(ti, 7),
                                          fmt_float(algi, 6),
                                          fmt_float(busi, 6), 0))
        if info and i == 2:   # a log line inside the table, as NCCL_DEBUG
            out.append("node02:4005:4030 [1] NCCL INFO comm 0x55d0 rank 5 "
                       "nRanks %d nNodes 2 localRanks %d - Init COMPLETE"
                       % (P, per))
    out.append("# Out of bounds values : 0 OK")
    out.append("# Avg bus bandwidth    : %g " % (sum(bws) / len(bws)))
    out.append("#")
    if not old:
        out.append("# Collective test concluded: %s" % prog)
    out.append("")
    return "\n".join(out) + "\n"


def nccl_json(prog, coll, P, per, c, lo, hi, f):
    devs = [{"rank": r, "group": 0, "pid": 4000 + r, "hostname": h,
             "device": r % per, "device_hex": "0000:%02x:00" % (0x10 + r % per),
             "device_info": "NVIDIA H100 80GB HBM3"}
            for r, h in enumerate(hosts_of(P, per))]
    res, bws = [], []
    for S, cnt, t, alg, bus in rows(coll, P, c, lo, hi, f):
        bws.append(bus)
        m = {"time": round(t, 6), "alg_bw": round(alg, 6),
             "bus_bw": round(bus, 6), "nwrong": 0.0}
        res.append({"size": S, "count": cnt, "type": "float",
                    "redop": "sum", "root": "    -1", "out_of_place": m,
                    "in_place": dict(m, time=round(t * 1.01, 6)),
                    "actual_iterations": 20, "experiment_name": ""})
    doc = {"version": 2, "start_time": "2026-12-05 23:10:00",
           "args": ["/opt/nccl-tests/build/" + prog, "-b", str(lo), "-e",
                    str(hi), "-f", str(f), "-J", "ar.json"],
           "env": ["NCCL_IB_HCA=mlx5"], "nccl_version": 22703,
           "config": {"nthreads": 1, "ngpus": 1, "minimum_bytes": lo,
                      "maximum_bytes": hi, "step_factor": f,
                      "warmup_iters": 5, "iterations": 20,
                      "aggregated_iterations": 1, "validation": 1,
                      "graph": 0, "blocking_collectives": "false",
                      "per_iter_timing": "false", "parallel_init": "false",
                      "devices": devs},
           "results": res,
           "out_of_bounds": {"count": 0, "okay": "true"},
           "average_bus_bandwidth": {"bandwidth": sum(bws) / len(bws),
                                     "okay": "unchecked"},
           "errors": [], "end_time": "2026-12-05 23:10:09"}
    # nccl-tests writes the document on one line, no newline at the end
    return json.dumps(doc, separators=(",", ":"))


def osu(P, c, lo, hi):
    out = ["", "# OSU MPI Allreduce Latency Test v7.4",
           "# Datatype: MPI_CHAR.", "# Size       Avg Latency(us)"]
    for s in sizes(lo, hi, 2):
        out.append("%-10d%18.2f" % (s, ring_us("allreduce", P, s, c)))
    return "\n".join(out) + "\n"


def main(d):
    files = {
        "nccl-allreduce-1node.txt": nccl_text(
            "all_reduce_perf", "allreduce", 4, 4, INTRA, 1024, 1 << 30, 4),
        "nccl-allreduce-2node.txt": nccl_text(
            "all_reduce_perf", "allreduce", 8, 4, INTER, 1024, 1 << 30, 4,
            info=True),
        "nccl-allgather-2node-old.txt": nccl_text(
            "all_gather_perf", "allgather", 8, 4, INTER, 8192, 1 << 30, 4,
            old=True),
        "nccl-allreduce-4node.json": nccl_json(
            "all_reduce_perf", "allreduce", 16, 4, INTER, 1024, 1 << 30, 4),
        "osu-allreduce-2ranks.txt": osu(2, INTRA, 4, 1 << 22),
    }
    for name, text in files.items():
        with open(os.path.join(d, name), "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
