#!/usr/bin/python3
"""noise.py LBSCALE OUT_MD - where the run-against-run gate's false alarms
come from, read from the plain runs of the two 12-repeat gate benchmarks
(../quiet-12rep-20261206, ../ratio-family-20261207; their runs-data.tar.xz).

1. Per kernel, the paired ratio's spread (log scale, %): from process to
   process within a run (sd_proc), what that predicts for a run's median
   of 12 (1.25 sd_proc / sqrt(12), the median's efficiency), and what
   the medians of the plain runs actually spread (sd_runs).  sd_runs well
   above the prediction is drift of the machine between runs minutes
   apart, which a second run cannot average away.
2. The same runs read as interleaved A/A pairs: each plain run's repeats
   of every entry split into the odd and the even rounds (6 against 6,
   taken in alternation within the same minutes, as bench/suites/
   gate-ab.sh takes its arms), compared by the real `LBSCALE compare`
   (its default rule: the ratio family, Holm, floor max(5%, spread)) in
   both directions.  No new measurement: these are the runs' own rows.
Writes markdown to OUT_MD.
"""
import json, math, os, statistics as st, subprocess, sys, tarfile, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SETS = ["quiet-12rep-20261206", "ratio-family-20261207"]


def ratio(r):
    if r.get("compressor") == "powersgd":
        return r["sgemm_frac"]
    return r.get("roofline_frac") or r.get("stream_frac")


def kernel(r):
    return r.get("optim") or r.get("compressor")


def plain_runs(tmp, name):
    d = os.path.join(tmp, name)
    with tarfile.open(os.path.join(HERE, "..", name, "runs-data.tar.xz")) as t:
        t.extractall(d)
    return sorted((os.path.join(d, p) for p in os.listdir(d)
                   if p.startswith("P")), key=lambda p: int(p.rsplit("P", 1)[1]))


def rows(run, verb):
    with open(os.path.join(run, verb + ".jsonl")) as f:
        return [json.loads(l) for l in f if l.strip()]


def spread_table(runs):
    per = {}
    for run in runs:
        for verb in ("optim", "compress"):
            by = {}
            for r in rows(run, verb):
                by.setdefault(kernel(r), []).append(math.log(ratio(r)))
            for k, v in by.items():
                per.setdefault(k, []).append(v)
    out = []
    for k in sorted(per):
        v = per[k]
        sdp = st.mean(st.stdev(x) for x in v)
        n = st.mean(len(x) for x in v)
        sdr = st.stdev(st.median(x) for x in v)
        out.append((k, len(v), 100 * sdp, 100 * 1.2533 * sdp / math.sqrt(n),
                    100 * sdr))
    return out


def half(run, parity, dest):
    """dest: run's rows of every config, only its odd or even repeats."""
    os.makedirs(dest)
    for f in os.listdir(run):
        src = os.path.join(run, f)
        if f in ("meta.json", "suite.jsonl"):
            with open(src) as a, open(os.path.join(dest, f), "w") as b:
                b.write(a.read())
        elif f.endswith(".jsonl"):
            seen = {}
            with open(src) as a, open(os.path.join(dest, f), "w") as b:
                for line in a:
                    r = json.loads(line)
                    key = json.dumps({x: r.get(x) for x in
                                      ("bench", "optim", "compressor",
                                       "elements", "threads", "params")})
                    i = seen[key] = seen.get(key, -1) + 1
                    if i % 2 == parity:
                        b.write(line)


def compare(lbs, a, b):
    p = subprocess.run([lbs, "compare", a, b, "--json"], capture_output=True,
                       text=True)
    res = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    flagged = ["%s %s %+.1f%%" % (r["config"].split(",")[0], r["metric"],
                                   100 * r["change"])
               for r in res[:-1] if r["regression"]]
    det = [r["detectable"] for r in res[:-1]
           if r.get("p") is not None and r.get("detectable") is not None]
    return p.returncode, flagged, res[-1], det


def main():
    lbs, out_md = sys.argv[1], sys.argv[2]
    md = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in SETS:
            runs = plain_runs(tmp, name)
            md.append("## %s: %d plain runs of 12 repeats\n" % (name, len(runs)))
            md.append("| kernel | runs | sd_proc % | predicted sd of a run's median % | sd_runs % (observed) | observed / predicted |")
            md.append("|---|--:|--:|--:|--:|--:|")
            for k, n, sdp, pred, sdr in spread_table(runs):
                md.append("| %s | %d | %.2f | %.2f | %.2f | %.2f |" %
                          (k, n, sdp, pred, sdr, sdr / pred))
            md.append("")
            md.append("Interleaved A/A pairs from the same runs (odd rounds against even, 6 a side, `compare` default rule, both directions):\n")
            md.append("| run | odd vs even: exit, flagged | even vs odd: exit, flagged | family |")
            md.append("|---|---|---|--:|")
            nflag = npair = 0
            dets = []
            for run in runs:
                tag = os.path.basename(run)
                ev, od = os.path.join(tmp, tag + "e"), os.path.join(tmp, tag + "o")
                half(run, 0, ev)
                half(run, 1, od)
                c1 = compare(lbs, od, ev)
                c2 = compare(lbs, ev, od)
                for c in (c1, c2):
                    dets += c[3]
                    npair += 1
                    nflag += c[0] != 0
                md.append("| %s | %d %s | %d %s | %d |" % (
                    tag, c1[0], ", ".join(c1[1]) or "-", c2[0],
                    ", ".join(c2[1]) or "-", c1[2]["family"]))
                for d in (ev, od):
                    subprocess.run(["rm", "-rf", d])
            md.append("\n**%d of %d interleaved A/A comparisons exited non-zero.**  What 6 a side could detect (compare's `detectable`, tested ratios of every comparison): median %.1f%%, quartiles %.1f-%.1f%%; infinite (the exact test cannot reach Holm's level) in %d of %d rows.\n" % (
                nflag, npair, 100 * st.median(d for d in dets if d < 1e9),
                100 * sorted(dets)[len(dets) // 4],
                100 * sorted(dets)[3 * len(dets) // 4],
                sum(d >= 1e9 for d in dets), len(dets)))
    open(out_md, "w").write("\n".join(md) + "\n")
    print("\n".join(md))


main()
