#!/usr/bin/python3
"""before.py LBSCALE DATA_DIR - the validation list through an lbscale that
predates `sim validate` (issue 29's baseline, 5b3e5d9): each manifest point
becomes one `sim step --json` row; platform files are stripped of the fields
that build does not read (job, fabric size, nic_path, compute_capability,
tree_bw_intra_gbs), which it would refuse.  Prints every row and the
geometric mean of |prediction/published - 1|, as `sim validate` does.

    git worktree add --detach /tmp/old 5b3e5d9
    meson setup /tmp/oldbuild /tmp/old -Dcuda=disabled -Dtests=false
    ninja -C /tmp/oldbuild lbscale
    /usr/bin/python3 sim/data/validation/before.py /tmp/oldbuild/lbscale $PWD/sim/data
"""
import json, math, os, subprocess, sys, tempfile

BIN, DATA = sys.argv[1], sys.argv[2]
man = json.load(open(f"{DATA}/validation/validation.json"))
tmp = tempfile.mkdtemp()
def plat(p):
    path = p if p.startswith("/") else (f"{DATA}/{p}" if "/" in p else f"{DATA}/platforms/{p}.json")
    d = json.load(open(path))
    d.pop("job", None)
    for k in ("tiers", "switch_radix", "rail_optimized", "nodes_per_pod", "lat_core_us", "size_note"):
        d["fabric"].pop(k, None)
    n = d.get("nccl", {})
    for k in ("nic_path", "compute_capability"):
        n.pop(k, None)
    for g in ("inter_graph",):
        if g in n:
            n[g].pop("tree_bw_intra_gbs", None); n[g].pop("tree_pattern", None)
    d.setdefault("max_gpus", 16384)
    out = f"{tmp}/{os.path.basename(path)}"
    json.dump(d, open(out, "w"))
    return out
def point(pt):
    model = pt["model"]
    model = f"{DATA}/{model}" if "/" in model else model
    optim = pt["optim"]
    optim = f"{DATA}/{optim}" if "/" in optim else optim
    cmd = [BIN, "sim", "step", "--model", model, "--platform", plat(pt["platform"]),
           "--optim", optim, "--gpus", str(pt["gpus"]), "--accum", str(pt.get("accum", 1)),
           "--grad-dtype", pt.get("grad_dtype", "fp32"), "--json", "--no-save"]
    if pt.get("no_overlap"):
        cmd.append("--no-overlap")
    r = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()[0])
    return r["final_phase_iter_ms"] if pt.get("phase") == "final" else r["iter_ms"]
errs = []
for row in man["rows"]:
    ratio = point(row["num"]) / point(row["den"])
    w = row.get("warmup", 0)
    pred = 1 / (w + (1 - w) / ratio) if w else ratio
    e = pred / row["published"] - 1
    errs.append(abs(e))
    print(f"{row['id']:4} {row['published']:8.4g} {pred:8.4g} {100*e:+6.1f}%")
g = math.exp(sum(math.log(max(e, 1e-4)) for e in errs) / len(errs))
print(f"geometric mean {100*g:.1f}%, worst {100*max(errs):.1f}%")
