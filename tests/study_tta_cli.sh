#!/usr/bin/env bash
# study_tta_cli.sh - `study.py tta` (tools/study_tta.py), the convergence
# study's simulated time to accuracy (TAP): the arithmetic on a fixture
# (first epoch at or above the target, mean over the seeds that reach it,
# steps x step time, a run that never reaches it, a batch smaller than the
# GPU count), the same end to end through the real `lbscale sim step` with
# a real traced compute run and a recorded trace, and bad input (one line,
# exit 2).
BIN=${1:?usage: study_tta_cli.sh LBSCALE_BINARY}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/tap.sh"
PY=/usr/bin/python3
STUDY="$ROOT/tools/study.py"

if ! "$PY" -c 'import numpy' 2>/dev/null; then
    skip "study tta" "no numpy for /usr/bin/python3"
    tap_end
    exit $?
fi

# ---- the fixture: a study.json as study.py report writes it ---------------
# group (mlp, 64): lamb mean 85 and sgd mean 80 -> target 0.98 x 80 = 78.4
#   lamb: seeds reach it at steps 20 and 10 -> mean 15 (2/2)
#   sgd:  one seed reaches it at step 30, one never, one diverged -> 30 (1/3)
#   dmsgd (P=8): step 20 (1/1); onebit_lamb: no trace in the inputs
# group (mlp, 256): adamw alone, mean 90 -> target 88.2; its two seeds
#   stop at 85 and 88 -> not reached (0/2)
MODEL=mlp:784-16-10
"$PY" - "$TOP/study.json" "$MODEL" <<'PYEOF'
import json, sys
def cfg(spec, batch, mean, curves, diverged=0, ranks=1):
    return {"spec": spec, "model": sys.argv[2], "batch": batch,
            "ranks": ranks, "topology": "ring" if spec == "dmsgd" else None,
            "shards": "iid", "n": len(curves), "diverged": diverged,
            "test_acc_mean": mean, "curves": curves}
c = [cfg("lamb", 64, 85.0, [[[10, 1.0, 70.0], [20, 2.0, 79.0]],
                            [[10, 1.0, 78.4], [20, 2.0, 86.0]]]),
     cfg("sgd", 64, 80.0, [[[10, 1.0, 50.0], [20, 2.0, 60.0],
                            [30, 3.0, 81.0]],
                           [[10, 1.0, 50.0], [20, 2.0, 60.0],
                            [30, 3.0, 78.39]]], diverged=1),
     cfg("dmsgd", 64, 82.0, [[[10, 1.0, 70.0], [20, 2.0, 80.0]]], ranks=8),
     cfg("onebit_lamb", 64, 83.0, [[[10, 1.0, 80.0]]], ranks=4),
     cfg("adamw", 256, 90.0, [[[4, 1.0, 80.0], [8, 2.0, 85.0]],
                              [[4, 1.0, 82.0], [8, 2.0, 88.0]]])]
json.dump({"configurations": c}, open(sys.argv[1], "w"))
PYEOF

# ---- arithmetic with a stand-in simulator --------------------------------
if "$PY" - "$ROOT/tools" "$TOP/study.json" 2>"$TOP/a.err" <<'PYEOF'
import json, sys
sys.path.insert(0, sys.argv[1])
import study_tta as t
cs = json.load(open(sys.argv[2]))["configurations"]
tg = t.targets(cs)
m = cs[0]["model"]
assert tg == {(m, 64, "iid"): 78.4, (m, 256, "iid"): 88.2}, tg
lamb = t.steps_to_target(cs[0], 78.4)
assert (lamb["reached"], lamb["runs"], lamb["steps_mean"]) == (2, 2, 15.0), lamb
sgd = t.steps_to_target(cs[1], 78.4)
assert (sgd["reached"], sgd["runs"], sgd["steps_mean"]) == (1, 3, 30.0), sgd
inputs = {m: {"compute": "C", "traces": [{"optim": "dmsgd", "batch": None,
                                          "file": "D.jsonl"}]}}
calls = []
def step(compute, optim, plat, gpus, bpg):
    calls.append((compute, optim, plat, gpus, bpg))
    return 2.0 if gpus == 8 else 0.5          # ms
rows, skipped = t.build_rows(cs, inputs, ["p1"], [8, 128], step)
by = {(r["optimizer"], r["batch"], r["gpus"]): r for r in rows}
# steps x step time: 15 x 2 ms = 0.03 s, 15 x 0.5 ms at 128 GPUs
assert abs(by[("lamb", 64, 8)]["tta_s"] - 0.030) < 1e-12, by
assert by[("lamb", 64, 8)]["batch_per_gpu"] == 8
assert abs(by[("sgd", 64, 8)]["tta_s"] - 0.060) < 1e-12
assert by[("sgd", 64, 8)]["vs_fastest"] == 2.0
assert by[("dmsgd (P=8, ring)", 64, 8)]["sim_input"] == "D.jsonl"
# batch 64 on 128 GPUs: no point, said once with who it concerns
assert ("lamb", 64, 128) not in by
assert any("b=64 at 128 GPUs" in s and "smaller than 128 GPUs" in s and
           "lamb" in s and "sgd" in s for s in skipped), skipped
# adamw 256 never reaches its target: rows with no time
a = by[("adamw", 256, 128)]
assert a["reached"] == 0 and a["tta_s"] is None and a["batch_per_gpu"] == 2
assert t.fmt_steps(a) == "not reached (0/2 runs)"
# onebit_lamb has no trace in the inputs: skipped, not priced as dense
assert not any(r["optimizer"].startswith("onebit") for r in rows)
assert any("no communication trace for onebit_lamb" in s for s in skipped)
assert ("C", "adamw", "p1", 128, 2) in calls and \
    ("C", "D.jsonl", "p1", 8, 8) in calls, calls
PYEOF
then
    ok "tta arithmetic: targets, steps to target, steps x step time, skips"
else
    not_ok "tta arithmetic: targets, steps to target, steps x step time, skips" \
        "$(tail -c 800 "$TOP/a.err")"
fi

# ---- end to end through lbscale sim step ---------------------------------
mkdir -p "$TOP/in/t"
if "$BIN" train --optim lamb --model $MODEL --export-layers "$TOP/in/layers.json" \
        >/dev/null 2>"$TOP/e.err" &&
    "$BIN" train --optim lamb --model $MODEL --global-batch 64 --epochs 1 \
        --max-steps 4 --subset 512 --test-subset 200 --threads 1 \
        --out "$TOP/in/compute" >/dev/null 2>>"$TOP/e.err" &&
    "$BIN" optim --optim dmsgd:topology=ring --comm record:8 \
        --layers "$TOP/in/layers.json" --steps 2 --trace "$TOP/in/t/dmsgd.jsonl" \
        --no-save >/dev/null 2>>"$TOP/e.err"; then
    cat >"$TOP/in/inputs.json" <<EOF
{"models": {"$MODEL": {"compute": "compute",
  "traces": [{"optim": "dmsgd", "file": "t/dmsgd.jsonl"}]}}}
EOF
    "$PY" "$STUDY" tta "$TOP/study.json" --inputs "$TOP/in/inputs.json" \
        --platforms dgx-a100 --gpus 8,128 --lbscale "$BIN" --out "$TOP/tta" \
        >"$TOP/e.out" 2>>"$TOP/e.err"
    rc=$?
else
    rc=99
fi
if [ $rc -eq 0 ] && "$PY" - "$TOP/tta/tta.json" "$BIN" "$TOP/in" \
        2>>"$TOP/e.err" <<'PYEOF'
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
assert len(rows) == 5, [(r["optimizer"], r["batch"], r["gpus"]) for r in rows]
for r in rows:
    if r["steps_mean"] is None:
        assert r["tta_s"] is None and r["reached"] == 0, r
    else:
        assert abs(r["tta_s"] - r["steps_mean"] * r["step_ms"] / 1000) \
            <= 1e-12 * r["tta_s"], r
    assert r["batch_per_gpu"] * r["gpus"] == r["batch"], r
# one point priced again by hand: the same step time
r = next(r for r in rows if r["optimizer"].startswith("dmsgd"))
p = subprocess.run([sys.argv[2], "sim", "step", "--compute",
                    sys.argv[3] + "/compute", "--platform", "dgx-a100",
                    "--optim", sys.argv[3] + "/t/dmsgd.jsonl", "--gpus", "8",
                    "--batch-per-gpu", "8", "--json", "--no-save"],
                   capture_output=True, text=True, check=True)
assert json.loads(p.stdout)["iter_ms"] == r["step_ms"], (p.stdout, r)
assert any("b=64 at 128 GPUs" in s for s in d["skipped"]), d["skipped"]
PYEOF
    grep -q "steps to target (steps, measured) | sim step time (ms) | simulated time to target (s)" "$TOP/e.out" &&
    grep -q "not reached (0/2 runs)" "$TOP/e.out" &&
    grep -q "^Note: Measured: the steps" "$TOP/e.out"; then
    ok "tta end to end: lbscale sim step per point, steps x step time, table"
else
    not_ok "tta end to end: lbscale sim step per point, steps x step time, table" \
        "exit $rc" "$(tail -c 800 "$TOP/e.err")" "$(head -c 400 "$TOP/e.out")"
fi

# ---- bad input: one line, exit 2 -----------------------------------------
echo '{"models": {}}' >"$TOP/empty.json"
badtta() {
    local desc=$1 pat=$2
    shift 2
    "$PY" "$STUDY" tta "$@" >"$TOP/o" 2>"$TOP/e"
    local rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$TOP/e")" -eq 1 ] &&
        grep -Eq -- "$pat" "$TOP/e" && [ ! -s "$TOP/o" ]; then
        ok "$desc"
    else
        not_ok "$desc" "exit $rc" "stderr: $(head -c 300 "$TOP/e")"
    fi
}
S=$TOP/study.json I=$TOP/in/inputs.json
badtta "unknown platform" "--platforms: unknown platform 'moon-a100'" \
    "$S" --inputs "$I" --lbscale "$BIN" --platforms dgx-a100,moon-a100
badtta "empty platform list" "--platforms: empty list" \
    "$S" --inputs "$I" --lbscale "$BIN" --platforms ""
badtta "empty GPU list" "--gpus: empty list" \
    "$S" --inputs "$I" --lbscale "$BIN" --gpus ""
badtta "GPU count not a power of two" "--gpus: 96 is not a power of two" \
    "$S" --inputs "$I" --lbscale "$BIN" --gpus 8,96
badtta "GPU count out of range" "--gpus: 4 out of range" \
    "$S" --inputs "$I" --lbscale "$BIN" --gpus 4
badtta "no --inputs" "usage" "$S" --lbscale "$BIN"
badtta "missing study.json" "study $TOP/nope.json" \
    "$TOP/nope.json" --inputs "$I" --lbscale "$BIN"
badtta "inputs without models" "no \"models\" object" \
    "$S" --inputs "$TOP/empty.json" --lbscale "$BIN"
badtta "no lbscale binary" "no lbscale binary at $TOP/none" \
    "$S" --inputs "$I" --lbscale "$TOP/none"
tap_end
