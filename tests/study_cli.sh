#!/usr/bin/env bash
# study_cli.sh - issue 17's convergence study end to end at toy size (TAP):
# bench/suites/convergence-ci.json (real training, 1 rank, 1 epoch of 2,048
# samples, a 3-value grid per optimizer and batch), tools/study.py seeds
# (two seeds at the chosen rates, plus DmSGD/DecentLaM/parallel and 1-bit
# LAMB), tools/study.py report --require-verdicts: fails when any verdict
# cannot be computed.  Also: bad seed/batch/lr lists (one line, exit 2) and
# a diverged run reported as diverged, never averaged.
BIN=${1:?usage: study_cli.sh LBSCALE_BINARY}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/tap.sh"
PY=/usr/bin/python3
STUDY="$ROOT/tools/study.py"

if ! "$PY" -c 'import numpy' 2>/dev/null; then
    skip "study" "no numpy for /usr/bin/python3"
    tap_end
    exit $?
fi

# ---- bad lists: one line on stderr, exit 2 -------------------------------
badlist() {
    local desc=$1 pat=$2
    shift 2
    "$PY" "$STUDY" "$@" >"$TOP/o" 2>"$TOP/e"
    local rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$TOP/e")" -eq 1 ] && grep -Eq -- "$pat" "$TOP/e" &&
        [ ! -s "$TOP/o" ]; then
        ok "$desc"
    else
        not_ok "$desc" "exit $rc" "stderr: $(head -c 300 "$TOP/e")"
    fi
}
badlist "empty seed list" "--seeds: empty" check --seeds ""
badlist "malformed seed list" "--seeds: 'x'" check --seeds 1,x
badlist "negative seed" "--seeds: -1 out of range" check --seeds -1
badlist "duplicate seed" "--seeds: 2 appears twice" check --seeds 1,2,2
badlist "batch 0" "--batches: 0 out of range" check --batches 128,0
badlist "batch 2.5" "--batches: '2.5'" check --batches 2.5
badlist "empty lr grid" "--lr-grid: empty" check --lr-grid " "
badlist "lr nan" "--lr-grid: 'nan'" check --lr-grid 0.1,nan
badlist "lr negative" "--lr-grid: -0.1 out of range" check --lr-grid -0.1
badlist "seeds phase: bad --seeds" "--seeds" seeds "$TOP" --out "$TOP/x.json" --seeds 1,,2
badlist "decentral: bad --shards" "--shards: 'dirichlet:alpha=0'" decentral "$TOP" --out "$TOP/x.json" --ranks 2 --shards dirichlet:alpha=0
badlist "decentral: no --ranks" "usage" decentral "$TOP" --out "$TOP/x.json"
badlist "decentral: bad --optims" "--optims" decentral "$TOP" --out "$TOP/x.json" --ranks 2 --optims sgd,lamb
badlist "decentral: batch not a multiple" "--batches: 100 is not a multiple" decentral "$TOP" --out "$TOP/x.json" --ranks 8 --batches 100

# ---- the toy study -------------------------------------------------------
G=$TOP/grid S=$TOP/seeds R=$TOP/report
if "$BIN" suite "$ROOT/bench/suites/convergence-ci.json" --out "$G" \
        >"$TOP/g.out" 2>"$TOP/g.err"; then
    ok "convergence-ci grid suite runs"
else
    not_ok "convergence-ci grid suite runs" "$(tail -c 600 "$TOP/g.err")"
fi
if "$PY" "$STUDY" extend "$G" --out "$TOP/ext.json" >"$TOP/x.out" 2>"$TOP/x.err" &&
    "$PY" -c 'import json, sys; s = json.load(open(sys.argv[1])); assert isinstance(s["entries"], list)' "$TOP/ext.json"; then
    ok "extend writes the grid extension suite"
else
    not_ok "extend writes the grid extension suite" "$(cat "$TOP/x.err")"
fi
if "$PY" "$STUDY" seeds "$G" --out "$TOP/seeds.json" --seeds 1,2 \
        --decentral-ranks 1 --decentral-batches 64,512 --onebit-ranks 1 \
        --onebit-batches 64,512 >"$TOP/s.out" 2>"$TOP/s.err" &&
    "$BIN" suite "$TOP/seeds.json" --out "$S" >"$TOP/s2.out" 2>"$TOP/s2.err"; then
    ok "seed phase written and run"
else
    not_ok "seed phase written and run" "$(tail -c 600 "$TOP/s.err" "$TOP/s2.err")"
fi
"$PY" "$STUDY" report "$G" "$S" --out "$R" --require-verdicts \
    >"$TOP/r.out" 2>"$TOP/r.err"
rc=$?
if [ $rc -eq 0 ] && [ -s "$R/study.json" ] && ! grep -q "NOT COMPUTED" "$R/verdicts.md" &&
    "$PY" - "$R/study.json" <<'PYEOF'
import json, math, sys
d = json.load(open(sys.argv[1]))
v = d["verdicts"]
assert not d["missing_verdicts"], d["missing_verdicts"]
lb = v["large_batch"]["statistic"]
assert lb["ci"][0] <= lb["estimate"] <= lb["ci"][1]
for c in d["configurations"]:
    if c["n"] >= 2:
        lo, hi = c["test_acc_ci95"]
        assert lo <= c["test_acc_mean"] <= hi, c["config"]
        assert len(c["seeds"]) == 2, c["config"]
PYEOF
then
    ok "report computes every verdict (--require-verdicts)"
else
    not_ok "report computes every verdict (--require-verdicts)" "exit $rc" \
        "$(tail -c 600 "$TOP/r.err")"
fi

# ---- the report's figure as `lbscale plot` draws it (the demo's) --------
# the seed phase holds configurations over two seeds at one rate: plot runs
# tools/study.py report into plots/study/ and draws plots/study.png
if LBSCALE_STUDY="$STUDY" "$BIN" plot "$S" >"$TOP/p.out" 2>"$TOP/p.err" &&
    [ -s "$S/plots/study.png" ] && [ -s "$S/plots/study/verdicts.md" ] &&
    [ -s "$S/plots/study.caption" ]; then
    ok "plot draws the study figure from a seed study"
else
    not_ok "plot draws the study figure from a seed study" \
        "$(tail -c 600 "$TOP/p.err" "$S/plots/study.log" 2>/dev/null)"
fi

# ---- the authors' SLAMB rows replace the former variant's -----------------
# two runs with the same SLAMB configuration keys: the former variant
# (exclude_1d=1, no avg key) at 50%, the authors' at 80-81%; LAMB at 80%
mkdir -p "$TOP/sv/former" "$TOP/sv/authors"
"$PY" - "$TOP/sv" <<'PYEOF'
import json, os, sys
d = sys.argv[1]
base = "lr=0.01,b1=0.9,b2=0.999,eps=1e-06,wd=0.01,k=0.1,beta3=0.99,H=50"
def row(optim, params, seed, acc):
    return {"event": "final", "optim": optim, "spec": optim if optim == "lamb"
            else "slamb:k=0.1,H=50", "params": params,
            "model": "mlp:784-512-256-10", "global_batch": 1024,
            "ranks": 1 if optim == "lamb" else 4, "topology": None,
            "lr_base": 0.0035, "lr": 0.0099, "lr_scaling": "sqrt", "seed": seed,
            "test_accuracy": acc, "train_loss": 0.3, "val_accuracy": acc,
            "steps": 161, "sent_bytes_per_rank": 1e6 if optim != "lamb" else 0,
            "dense_bytes_per_step": 2143272, "wall_s": 1.0}
rows = {"former": [row("lamb", "lr=0.0099", s, 0.80 + s / 1000)
                   for s in (1, 2)] +
                  [row("slamb", base + ",exclude_1d=1", s, 0.50 + s / 1000)
                   for s in (1, 2)],
        "authors": [row("slamb", base + ",exclude_1d=0,clamp_1d=0,"
                        "avg=authors,kwarm=1", s, 0.80 + s / 1000)
                    for s in (1, 2)]}
for k, rs in rows.items():
    with open(os.path.join(d, k, "train.jsonl"), "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rs))
PYEOF
svok=1
for order in "former authors" "authors former"; do
    set -- $order
    "$PY" "$STUDY" report "$TOP/sv/$1" "$TOP/sv/$2" --out "$TOP/sv/rep" \
        >/dev/null 2>"$TOP/sv.err" || svok=0
    grep -q "SLAMB rows: the authors' SLAMB .* k warm-up" "$TOP/sv/rep/verdicts.md" &&
        grep -q "b=1024: SLAMB - LAMB +0.00 pt" "$TOP/sv/rep/verdicts.md" || svok=0
done
"$PY" "$STUDY" report "$TOP/sv/former" --out "$TOP/sv/rep1" >/dev/null 2>&1 &&
    grep -q "SLAMB rows: lbscale's former" "$TOP/sv/rep1/verdicts.md" || svok=0
if [ $svok = 1 ]; then
    ok "report: the authors' SLAMB rows replace the former variant's, named"
else
    not_ok "report: the authors' SLAMB rows replace the former variant's, named" \
        "$(cat "$TOP/sv/rep/verdicts.md" "$TOP/sv.err" 2>/dev/null | head -c 800)"
fi

# ---- the decentralized verdict on 2 ranks with Dirichlet shards -----------
# (study.py decentral -> suite -> report: the setting's verdict, its shard
# kind and rank count, and the consensus-vs-step data for the figure)
if ldd "$BIN" 2>/dev/null | grep -q libasan; then
    skip "decentral suite" "sanitizer build (Open MPI aborts at exit under ASan)"
elif command -v mpirun >/dev/null 2>&1; then
    DS=$TOP/dec DR=$TOP/decrep
    if "$PY" "$STUDY" decentral "$G" --out "$TOP/dec.json" --ranks 2 \
            --shards dirichlet:alpha=0.5 --batches 64,512 --seeds 1,2 \
            --consensus-samples 256 >"$TOP/dc.out" 2>"$TOP/dc.err" &&
        "$BIN" suite "$TOP/dec.json" --out "$DS" >"$TOP/dc2.out" 2>"$TOP/dc2.err" &&
        "$PY" "$STUDY" report "$G" "$DS" --out "$DR" >"$TOP/dr.out" 2>"$TOP/dr.err" &&
        "$PY" - "$DR" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1] + "/study.json"))
st = d["verdicts"]["decentral"]["settings"]["2 ranks, ring, dirichlet:alpha=0.5 shards"]
assert st["verdict"], st
assert set(st["batches"]) == {"64", "512"}, st["batches"].keys()
for b in st["batches"].values():
    assert b["seeds"] == [2, 2, 2], b
    c = b["dmsgd_minus_parallel"]
    assert c["ci"][0] <= c["estimate"] <= c["ci"][1]
panels = d["verdicts"]["decentral"]["consensus_panels"]
assert len(panels) == 2, panels
blocks = open(sys.argv[1] + "/consensus.dat").read().strip().split("\n\n\n")
assert len(blocks) == 4, len(blocks)
for blk in blocks:
    pts = [l.split() for l in blk.splitlines() if not l.startswith("#")]
    assert pts and all(int(p[4]) == 2 and float(p[2]) <= float(p[1]) <= float(p[3])
                       for p in pts), blk
PYEOF
    then
        ok "decentral: 2-rank Dirichlet suite, verdict per setting, consensus curves"
    else
        not_ok "decentral: 2-rank Dirichlet suite, verdict per setting, consensus curves" \
            "$(tail -c 600 "$TOP/dc.err" "$TOP/dc2.err" "$TOP/dr.err")"
    fi
else
    skip "decentral suite" "mpirun not found"
fi

# ---- time to a target accuracy: the first epoch at or above it ----------
if "$PY" - "$STUDY" 2>"$TOP/tta.err" <<'PYEOF'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("study", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
# (step, seconds, test accuracy %) after each epoch, three runs
st = {"curves": [[(10, 1.0, 50.0), (20, 2.0, 80.0)],
                 [(10, 1.5, 81.0), (20, 3.0, 85.0)],
                 [(10, 1.0, 40.0), (20, 2.0, 60.0)]]}
t = m.time_to_target(st, 80.0)
assert (t["reached"], t["runs"]) == (2, 3), t
assert (t["steps_median"], t["seconds_median"]) == (15.0, 1.75), t
assert m.time_to_target(st, 90.0)["reached"] == 0
assert m.fmt_tta(m.time_to_target(st, 90.0)) == "not reached (0/3)"
PYEOF
then
    ok "report: time to a target accuracy (first epoch at or above it)"
else
    not_ok "report: time to a target accuracy (first epoch at or above it)" \
        "$(tail -c 600 "$TOP/tta.err")"
fi

# ---- choosing a rate, and extending a grid past its chosen edge ---------
# rates are compared on the grid seed only (later seeds at one rate never
# change the choice); the extension goes up when the highest rate won,
# down when the lowest won or nothing trained, and not at all from inside
# the grid or from a grid of one rate
if "$PY" - "$STUDY" 2>"$TOP/ext.err" <<'PYEOF'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("study", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
def row(lr, seed, val, opt="sgd"):
    return {"spec": opt, "model": m.MLP_DEFAULT, "global_batch": 512,
            "ranks": 1, "topology": None, "shards": "iid", "lr_base": lr,
            "seed": seed, "val_accuracy": val, "test_accuracy": val,
            "train_loss": 0.5}
def pick(vals, extra=()):
    rows = [row(lr, 1, v) for lr, v in vals] + list(extra)
    return next(iter(m.choose(rows).values()))
up = pick([(0.01, 0.80), (0.02, 0.82), (0.04, 0.85)])
assert (up["lr_base"], up["grid_edge"], up["grid_seed"]) == (0.04, "highest", 1), up
assert m.extension_rates(up, [4, 16]) == [0.16, 0.64], m.extension_rates(up, [4, 16])
assert m.extension_rates(up, [2]) == [0.08]
down = pick([(0.01, 0.85), (0.02, 0.82), (0.04, 0.80)])
assert down["grid_edge"] == "lowest"
assert m.extension_rates(down, [4, 16]) == [0.0025, 0.000625]
mid = pick([(0.01, 0.80), (0.02, 0.85), (0.04, 0.80)])
assert mid["grid_edge"] is None and m.extension_rates(mid, [2]) == []
# nothing trained: downwards even though the highest rate "won"
none = pick([(0.01, 0.10), (0.02, 0.11), (0.04, 0.12)])
assert none["grid_edge"] == "highest" and m.extension_rates(none, [2]) == [0.005]
# ties go to the lower rate; a diverged run never wins
tie = pick([(0.01, 0.85), (0.02, 0.85)])
assert tie["lr_base"] == 0.01
div = [row(0.01, 1, 0.5), dict(row(0.02, 1, 0.9), diverged=True)]
assert next(iter(m.choose(div).values()))["lr_base"] == 0.01
assert m.extension_rates(pick([(0.01, 0.8)]), [2]) == []
# seeds 2-5 at 0.02 (better than 0.04's seed 1) do not change the choice
# made on seed 1, where 0.04 wins
late = pick([(0.02, 0.80), (0.04, 0.85)],
            [row(0.02, s, 0.95) for s in (2, 3, 4, 5)])
assert late["lr_base"] == 0.04 and late["grid_seed"] == 1, late
# seed entries are named after the model trained (the CNN's were "mlp")
tags = [m.model_tag(x) for x in ("cnn", m.MLP_DEFAULT,
                                 "mlp:784-256-256-256-256-256-256-256-10")]
assert tags == ["cnn", "mlp", "mlp8"], tags
PYEOF
then
    ok "choose on the grid seed; extension past the chosen edge, either way"
else
    not_ok "choose on the grid seed; extension past the chosen edge, either way" \
        "$(tail -c 600 "$TOP/ext.err")"
fi
# the same through the CLI: a grid whose top rate won gets an upward
# extension suite with the grid seed's arguments; --optims filters
mkdir -p "$TOP/eg"
"$PY" - "$TOP/eg/train.jsonl" <<'PYEOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for opt, vals in (("lamb", (0.80, 0.82, 0.85)), ("sgd", (0.85, 0.82, 0.80))):
        for lr, v in zip((0.01, 0.02, 0.04), vals):
            a = ["train", "--optim", opt, "--global-batch", "512", "--lr-base",
                 repr(lr), "--seed", "1", "--epochs", "1", "--out", "x"]
            f.write(json.dumps({"event": "final", "spec": opt,
                "model": "mlp:784-512-256-10", "global_batch": 512, "ranks": 1,
                "topology": None, "lr_base": lr, "seed": 1, "val_accuracy": v,
                "test_accuracy": v, "train_loss": 0.5, "argv": a}) + "\n")
PYEOF
if "$PY" "$STUDY" extend "$TOP/eg" --out "$TOP/eg.json" >/dev/null 2>"$TOP/eg.err" &&
    "$PY" "$STUDY" extend "$TOP/eg" --out "$TOP/eg2.json" --factors 2 --optims lamb \
        >/dev/null 2>>"$TOP/eg.err" &&
    "$PY" - "$TOP/eg.json" "$TOP/eg2.json" <<'PYEOF'
import json, sys
e = {x["name"]: x for x in json.load(open(sys.argv[1]))["entries"]}
assert e["ext-lamb-mlp-b512-p1-lr{lr}"]["foreach"]["lr"] == ["0.16", "0.64"], e
assert e["ext-sgd-mlp-b512-p1-lr{lr}"]["foreach"]["lr"] == ["0.0025", "0.000625"], e
a = e["ext-lamb-mlp-b512-p1-lr{lr}"]["args"]
assert a[a.index("--lr-base") + 1] == "{lr}" and "--out" not in a, a
e2 = json.load(open(sys.argv[2]))["entries"]
assert [x["foreach"]["lr"] for x in e2] == [["0.08"]], e2
PYEOF
then
    ok "extend: upward and downward suites, --factors, --optims"
else
    not_ok "extend: upward and downward suites, --factors, --optims" "$(cat "$TOP/eg.err")"
fi
badlist "extend: factor 1" "--factors: 1 out of range" extend "$TOP/eg" --out "$TOP/x.json" --factors 1
badlist "decentral: --tuned with --lr-factors" "exclude each other" decentral "$TOP" --out "$TOP/x.json" --ranks 2 --tuned --lr-factors 0.5,2

# ---- decentral --tuned: each method's own rate, only the seeds missing ----
mkdir -p "$TOP/tg"
"$PY" - "$TOP/tg/train.jsonl" <<'PYEOF'
import json, sys
def row(opt, ranks, lr, seed, v):
    r = {"event": "final", "spec": opt, "model": "mlp:784-512-256-10",
         "global_batch": 64, "ranks": ranks, "lr_base": lr, "seed": seed,
         "topology": None if opt == "sgd" else "ring", "shards": "iid",
         "val_accuracy": v, "test_accuracy": v, "train_loss": 0.5,
         "argv": ["train", "--optim", opt, "--epochs", "1"]}
    return json.dumps(r) + "\n"
with open(sys.argv[1], "w") as f:
    f.write(row("sgd", 1, 0.02, 1, 0.8))
    # DmSGD: 1x (0.02) has seeds 1-3, 2x wins on seed 1; DecentLaM: 1x wins
    for s in (1, 2, 3):
        f.write(row("dmsgd", 2, 0.02, s, 0.9 if s > 1 else 0.7))
        f.write(row("decentlam", 2, 0.02, s, 0.8))
    f.write(row("dmsgd", 2, 0.04, 1, 0.75))
    f.write(row("decentlam", 2, 0.04, 1, 0.6))
PYEOF
if "$PY" "$STUDY" decentral "$TOP/tg" --out "$TOP/tg.json" --ranks 2 --batches 64 \
        --seeds 1,2,3 --optims dmsgd,decentlam --tuned >/dev/null 2>"$TOP/tg.err" &&
    "$PY" - "$TOP/tg.json" <<'PYEOF'
import json, sys
e = json.load(open(sys.argv[1]))["entries"]
assert len(e) == 1, e
a = e[0]["args"]
assert a[a.index("--optim") + 1] == "dmsgd" and a[a.index("--lr-base") + 1] == "0.04", a
assert e[0]["foreach"]["seed"] == ["2", "3"], e[0]
assert e[0]["name"] == "dec-dmsgd-ring-b64-p2-iid-lr0.04-s{seed}", e[0]["name"]
PYEOF
then
    ok "decentral --tuned: the chosen rate's missing seeds only"
else
    not_ok "decentral --tuned: the chosen rate's missing seeds only" "$(cat "$TOP/tg.err")"
fi

# ---- a diverged run is reported as diverged, not averaged ----------------
D=$TOP/div
for s in 1 2; do
    "$BIN" train --optim sgd --lr-base 1e4 --global-batch 64 --epochs 1 \
        --subset 512 --val 128 --test-subset 200 --no-trace --seed $s \
        --out "$D" >/dev/null 2>&1
done
"$PY" "$STUDY" report "$D" --out "$TOP/drep" >"$TOP/d.out" 2>"$TOP/d.err"
if grep -q "all diverged" "$TOP/drep/table.md" &&
    grep -q '| 2 | 2 |' "$TOP/drep/table.md"; then
    ok "diverged runs: counted and marked, never averaged"
else
    not_ok "diverged runs: counted and marked, never averaged" \
        "$(cat "$TOP/drep/table.md" 2>/dev/null | head -c 600)"
fi
# ---- issue 35: the budget criterion, the claims' grids, power, progress ---
if "$PY" - "$STUDY" 2>"$TOP/b35.err" <<'PYEOF'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("study", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
# 10% a epoch, then flat: the first E whose last 20% improved < 1% is 12
# (epochs 10..12 flat: E=12 compares L[round(9.6)] = L[10] with L[12])
loss = [0.9 ** e for e in range(1, 11)] + [0.9 ** 10] * 10
assert m.loss_plateau(loss, 0.2, 0.01) == 12, m.loss_plateau(loss, 0.2, 0.01)
assert m.loss_plateau([0.9 ** e for e in range(1, 30)], 0.2, 0.01) is None
# power: seeds for a CI to clear a gap shrink as the gap grows, and 80%
# power needs more than an expected clearance
t = [(1, [80.0, 81.0, 82.0]), (-1, [79.0, 80.0, 81.5])]
small = m.seeds_needed(t, 0.5, 0.95, 0.5)
big = m.seeds_needed(t, 2.0, 0.95, 0.5)
assert big < small and m.seeds_needed(t, 2.0, 0.95, 0.8) > big, (small, big)
assert m.seeds_needed(t, 0.0, 0.95, 0.5) is None
d = {"estimate": -0.6, "ci": [-0.9, -0.3]}
assert m.tost_decision(d, 0.5) == "undecided"
assert m.tost_decision({"estimate": 0.1, "ci": [-0.2, 0.3]}, 0.5) == "equivalent"
assert m.tost_decision({"estimate": -1, "ci": [-1.4, -0.6]}, 0.5) == "not equivalent"
PYEOF
then
    ok "budget criterion, seeds needed for a CI to clear a gap, TOST decisions"
else
    not_ok "budget criterion, seeds needed for a CI to clear a gap, TOST decisions" \
        "$(tail -c 600 "$TOP/b35.err")"
fi
if "$PY" "$STUDY" plan onebit --epochs 7 --out "$TOP/p1.json" >/dev/null 2>"$TOP/p.err" &&
    "$PY" - "$TOP/p1.json" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["vars"]["epochs"] == 7, s["vars"]
e = {x["name"]: x for x in s["entries"]}
assert e["lb-lamb-b{batch}-lr{lr}"]["foreach"]["batch"] == [2048], e
o = e["onebit-b{batch}-lr{lr}"]
assert o["foreach"]["batch"] == [2048, 8192] and o["ranks"] == 4, o
assert o["args"][o["args"].index("--optim") + 1] == "onebit_lamb", o
PYEOF
then
    ok "plan: a claim's grid at E epochs from the study's suites"
else
    not_ok "plan: a claim's grid at E epochs from the study's suites" "$(cat "$TOP/p.err")"
fi
badlist "plan: unknown claim" "usage" plan nosuch --epochs 5 --out "$TOP/x.json"
badlist "plan: bad epochs" "--epochs: '0.5'" plan lb --epochs 0.5 --out "$TOP/x.json"
# progress over a study directory with the toy grid as a partial lb-grid
mkdir -p "$TOP/bs"
cp -r "$G" "$TOP/bs/lb-grid"
echo 9 >"$TOP/bs/epochs"
if "$PY" "$STUDY" progress "$TOP/bs" --claims "lb cnn" >"$TOP/bs.md" 2>"$TOP/bs.err" &&
    grep -q "^budget: 9 epochs" "$TOP/bs.md" && grep -q "| lb-grid | partial |" "$TOP/bs.md" &&
    grep -q "| cnn-seeds | not started |" "$TOP/bs.md" &&
    grep -q "not finished: budget, lb-grid" "$TOP/bs.md"; then
    ok "progress: each phase's state and what is not finished"
else
    not_ok "progress: each phase's state and what is not finished" \
        "$(cat "$TOP/bs.md" "$TOP/bs.err" | head -c 600)"
fi
# report --budget-ref: the reference's cells beside this run's
if "$PY" "$STUDY" report "$G" "$S" --out "$TOP/br" --budget-ref "$R/study.json" \
        >/dev/null 2>"$TOP/br.err" &&
    grep -q "^Budget sensitivity" "$TOP/br/verdicts.md" &&
    grep -q "large batch .*: here .*; reference " "$TOP/br/verdicts.md" &&
    [ -s "$TOP/br/claims.dat" ] && [ -s "$TOP/br/claims-panels.gp" ]; then
    ok "report --budget-ref: the budget-sensitivity row; claims' curves"
else
    not_ok "report --budget-ref: the budget-sensitivity row; claims' curves" \
        "$(cat "$TOP/br.err" "$TOP/br/verdicts.md" 2>/dev/null | tail -c 600)"
fi
badlist "report: --budget-ref missing" "--budget-ref: '/nonexistent' is not a file" report "$G" --out "$TOP/x" --budget-ref /nonexistent
# 1-bit LAMB whose every seed diverged: a finding, not NOT COMPUTED
mkdir -p "$TOP/ob"
"$PY" - "$TOP/ob/train.jsonl" <<'PYEOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for opt, ranks, acc, tl in (("lamb", 1, 0.8, 0.4), ("onebit_lamb", 4, 0.1, 99.0)):
        for s in (1, 2):
            f.write(json.dumps({"event": "final", "spec": opt,
                "model": "mlp:784-512-256-10", "global_batch": 2048,
                "ranks": ranks, "topology": None, "lr_base": 0.007, "seed": s,
                "val_accuracy": acc, "test_accuracy": acc + s / 1000,
                "train_loss": tl, "steps": 10, "wall_s": 1.0}) + "\n")
PYEOF
if "$PY" "$STUDY" report "$TOP/ob" --out "$TOP/obr" >/dev/null 2>"$TOP/ob.err";
    grep -q "1-bit LAMB .*: b=2048: no interval: 2 of 2 seeds diverged" "$TOP/obr/verdicts.md"; then
    ok "report: 1-bit LAMB with every seed diverged says so"
else
    not_ok "report: 1-bit LAMB with every seed diverged says so" \
        "$(cat "$TOP/ob.err" "$TOP/obr/verdicts.md" 2>/dev/null | head -c 600)"
fi
# A run that failed for another reason than divergence (a watchdog) is
# named apart from the diverged ones (a diverged rank under mpirun says so
# in its log, not in the tail), and a failed attempt that the suite ran
# again to the end (--resume) is not counted at all
mkdir -p "$TOP/fw"
"$PY" - "$TOP/fw" <<'PYEOF'
import json, sys
d = sys.argv[1]
with open(d + "/train.jsonl", "w") as f:
    for s in (1, 2, 3):
        f.write(json.dumps({"event": "final", "spec": "lamb",
            "model": "mlp:784-512-256-10", "global_batch": 128, "ranks": 1,
            "topology": None, "lr_base": 0.007, "lr": 0.007, "seed": s,
            "val_accuracy": 0.8, "test_accuracy": 0.8 + s / 1000,
            "train_loss": 0.4, "steps": 10, "wall_s": 1.0}) + "\n")
def entry(name, seed, status, tail=""):
    return json.dumps({"event": "entry", "name": name, "verb": "train",
        "ranks": 1, "status": status, "stderr_tail": tail,
        "args": ["--optim", "lamb", "--global-batch", "128", "--lr-base",
                 "0.007", "--seed", str(seed)]}) + "\n"
stall = "lbscale: train: rank 0 made no progress for 30 s"
import os
os.makedirs(d + "/logs", exist_ok=True)
with open(d + "/logs/s5.log", "w") as f:   # under mpirun: the tail is mpirun's
    f.write("lbscale: train: rank 1, step 85: lamb: non-finite gradient\n"
            "Primary job terminated normally, but 1 process returned\n")
with open(d + "/suite.jsonl", "w") as f:
    f.write(entry("s3", 3, "failed", stall))   # then redone: s3 ok
    f.write(entry("s3", 3, "ok"))
    f.write(entry("s4", 4, "failed", stall))   # never redone
    e5 = json.loads(entry("s5", 5, "failed", "mpirun noticed ... Exit code: 2"))
    e5["log"] = "logs/s5.log"                   # diverged: its log says so
    f.write(json.dumps(e5) + "\n")
PYEOF
if "$PY" "$STUDY" report "$TOP/fw" --out "$TOP/fwr" >/dev/null 2>"$TOP/fw.err" &&
    grep -q "| 5 | 1 (+1 failed, not diverged) | 80.20 +- 0.10 |" "$TOP/fwr/table.md"; then
    ok "report: a failed run named apart from diverged; a redone one not counted"
else
    not_ok "report: a failed run named apart from diverged; a redone one not counted" \
        "$(cat "$TOP/fw.err" "$TOP/fwr/table.md" 2>/dev/null | head -c 600)"
fi
tap_end
