#!/usr/bin/env bash
# likewise_cli.sh BINARY - figures and findings that set training runs side
# by side compare like with like (issue 32), through the real binary (TAP):
# compression_tradeoff's dense point is the dense LAMB run of the
# compressed runs' configuration (4 ranks, 89.77%), not the last dense
# LAMB run (a 1-rank study run, 79.30%); where no dense run shares that
# configuration, or the compressed runs differ among themselves, the
# figure is not drawn and one line names the key; the report's
# Convergence finding averages only runs of one configuration and says
# which were left out; an optimizer step above 1.05 of the in-place
# bandwidth is flagged on the roofline figure, its caption and the
# finding (saying when the reference was given once), and the demo's
# optimizer steps use the reference measured next to each step.
set -u
BIN=${1:?usage: likewise_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
command -v gnuplot >/dev/null || { echo "1..0 # SKIP gnuplot not installed"; exit 0; }
. "$(dirname "$0")/tap.sh"

# mkrun DIR SPEC...: train.jsonl final rows from SPEC = optim:compress:
# ranks:epochs:accuracy (compress "-" for none), plus the simulator's
# BERT-Large rows of LAMB dense and compressed at 1,024 GPUs
mkrun() {
    local d=$1
    shift
    "$BIN" sim sweep --model bert-large --platform dgx-a100 \
        --optim lamb,lamb_topk,lamb_powersgd --gpus 1024 --out "$d" >/dev/null 2>&1
    "$PY" - "$d" "$@" <<'PY'
import json, sys
d = sys.argv[1]
with open(d + "/train.jsonl", "w") as f:
    for spec in sys.argv[2:]:
        o, c, ranks, ep, acc = spec.split(":")
        comp = None if c == "-" else c.replace("/", ":")
        curve = [{"bench": "train", "event": "epoch", "epoch": e + 1, "step": 10 * (e + 1),
                  "test_accuracy": float(acc) * (e + 1) / int(ep)} for e in range(int(ep))]
        f.write(json.dumps({"bench": "train", "event": "final", "optim": o, "spec": o,
                            "compress": comp, "model": "mlp:784-512-256-10",
                            "dataset": "fashion-mnist", "n_train": 55000,
                            "ranks": int(ranks), "epochs": float(ep),
                            "global_batch": 1024, "test_accuracy": float(acc),
                            "curve": curve}) + "\n")
PY
}
# the dense point of compression_tradeoff's .dat ("" when not drawn)
dense_point() {
    "$PY" -c 'import sys
for l in open(sys.argv[1]):
    if l.rstrip().endswith("\"none\""): print(l.split()[1]); break' "$1/plots/compression_tradeoff.dat" 2>/dev/null
}

# the demo's case: dense LAMB on 4 ranks, compressors on 4 ranks, then a
# 1-rank dense LAMB study run last
mkrun "$TOP/demo" lamb:-:4:3:0.8977 lamb:topk/k=0.01,ef=1:4:3:0.8715 \
    lamb:powersgd/r=4,ef=1:4:3:0.8914 lamb:-:1:3:0.7930
"$BIN" plot "$TOP/demo" >"$TOP/out" 2>"$TOP/err"
got=$(dense_point "$TOP/demo")
[ "$got" = "89.7700" ] && ok "compression_tradeoff: the dense point is the 4-rank dense run (89.77)" ||
    not_ok "compression_tradeoff: the dense point is the 4-rank dense run" "got '${got}'" "$(cat "$TOP/err")"

mkrun "$TOP/nodense" lamb:topk/k=0.01,ef=1:4:3:0.8715 lamb:-:1:3:0.7930
"$BIN" plot "$TOP/nodense" >"$TOP/out" 2>"$TOP/err"
if [ ! -e "$TOP/nodense/plots/compression_tradeoff.png" ] &&
   grep -q "^lbscale: plot: compression_tradeoff not drawn: no dense LAMB run of the compressed runs' configuration (ranks 4 vs 1)$" "$TOP/err"; then
    ok "compression_tradeoff: no dense run of that configuration, not drawn, the key named"
else
    not_ok "compression_tradeoff: no dense run of that configuration" "$(cat "$TOP/err")" "$(ls "$TOP/nodense/plots")"
fi

mkrun "$TOP/mixed" lamb:-:4:3:0.8977 lamb:topk/k=0.01,ef=1:4:3:0.8715 \
    lamb:powersgd/r=4,ef=1:4:5:0.8914
"$BIN" plot "$TOP/mixed" >"$TOP/out" 2>"$TOP/err"
[ ! -e "$TOP/mixed/plots/compression_tradeoff.png" ] && grep -q "compressed LAMB runs differ in epochs 3.0 vs 5.0" "$TOP/err" &&
    ok "compression_tradeoff: compressed runs of unlike epochs, not drawn, the key named" ||
    not_ok "compression_tradeoff: compressed runs of unlike epochs" "$(cat "$TOP/err")"

# the Convergence finding: lamb 4 ranks twice (89, 91) and once on 1 rank
mkrun "$TOP/conv" lamb:-:4:3:0.89 slamb:-:4:3:0.88 lamb:-:4:3:0.91 lamb:-:1:3:0.70
"$BIN" report "$TOP/conv" --json >"$TOP/out" 2>"$TOP/err"
"$PY" - "$TOP/out" <<'PY' && ok "Convergence finding: lamb 90.00 +- 1.41 (2 runs), the 1-rank run left out and named" || not_ok "Convergence finding" "$(cat "$TOP/out" "$TOP/err" | head -c 1500)"
import json, sys
j = json.load(open(sys.argv[1]))
f = [x for x in j["findings"] if x["id"] == "train"][0]["text"]
assert "lamb 90.00% +- 1.41 (2 runs)" in f and "slamb 88.00%" in f, f
assert "1 run left out: ranks 4 vs 1" in f, f
PY
"$BIN" plot "$TOP/conv" >"$TOP/out" 2>"$TOP/err"
blocks=$(grep -c '^# ' "$TOP/conv/plots/convergence.dat" 2>/dev/null)
if grep -q "^lbscale: plot: convergence: 1 run of another configuration left out (ranks 4 vs 1)" "$TOP/err" &&
   [ "$blocks" = 4 ] && grep -q "left out (ranks 4 vs 1)" "$TOP/conv/plots/convergence.caption" 2>/dev/null; then
    ok "convergence figure: the 1-rank run left out, said on stderr and in the caption"
else
    not_ok "convergence figure: the 1-rank run left out" "blocks ${blocks:-?} (header + 3 runs expected)" "$(cat "$TOP/err")" "$(ls "$TOP/conv/plots")"
fi

# at most 8 series a panel: 10 like runs are two panels of 5
specs=()
for o in sgd lars lamb adamw slamb jointspar dmsgd decentlam onebit_lamb jointspar_lars; do
    specs+=("$o:-:4:3:0.8")
done
mkrun "$TOP/many" "${specs[@]}"
"$BIN" plot "$TOP/many" >"$TOP/out" 2>"$TOP/err"
n1=$(grep -c '^# ' "$TOP/many/plots/convergence_1.dat" 2>/dev/null)
n2=$(grep -c '^# ' "$TOP/many/plots/convergence_2.dat" 2>/dev/null)
[ "$n1" = 6 ] && [ "$n2" = 6 ] && [ -s "$TOP/many/plots/convergence_2.png" ] && [ ! -e "$TOP/many/plots/convergence.png" ] &&
    ok "convergence: 10 runs drawn as two panels of 5 (at most 8 series each)" ||
    not_ok "convergence: 10 runs in panels of at most 8" "blocks ${n1:-?} ${n2:-?}" "$(ls "$TOP/many/plots")"

# the roofline: dmsgd at 1.46 against a reference given once
mkdir -p "$TOP/roof" && echo '{"git_rev": "test"}' >"$TOP/roof/meta.json"
"$PY" - "$TOP/roof/optim.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for o, fr in (("lamb", 0.92), ("dmsgd", 1.46), ("sgd", 1.15)):
        f.write(json.dumps({"bench": "optim", "optim": o, "elements": 100000000,
                            "threads": 2, "gbps": 30 * fr, "stream_gbps": 30,
                            "roofline_frac": fr, "stream_ref": "given (--stream-gbps)",
                            "wrong": 0}) + "\n")
PY
"$BIN" plot "$TOP/roof" >/dev/null 2>"$TOP/err"
"$BIN" report "$TOP/roof" --json >"$TOP/out" 2>>"$TOP/err"
"$PY" - "$TOP/out" "$TOP/roof/plots/roofline.caption" <<'PY' && ok "roofline: ratios above 1.05 flagged in the finding and the caption, the given reference named" || not_ok "roofline: ratios above 1.05 flagged" "$(cat "$TOP/out" "$TOP/err" | head -c 1500)"
import json, sys
j = json.load(open(sys.argv[1]))
f = [x for x in j["findings"] if x["id"] == "optim"][0]["text"]
cap = open(sys.argv[2]).read()
for t in (f, cap):
    assert "Above 1.05" in t and "dmsgd 1.46" in t and "sgd 1.15" in t and "lamb" not in t.split("wrong:")[1], t
    assert "given once with --stream-gbps" in t, t
PY
grep -q "1.05!" "$TOP/roof/plots/roofline.svg" && ok "roofline: the bar label says > 1.05!" || not_ok "roofline: the bar label says > 1.05!"
"$BIN" demo --print-suite >"$TOP/demo.json" 2>"$TOP/err"
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); o=[e for e in s["entries"] if e["verb"]=="optim"]
assert o and all("--stream-gbps" not in e["args"] for e in o), o' "$TOP/demo.json" &&
    ok "demo: optimizer steps against the reference measured next to each step" ||
    not_ok "demo: optimizer steps against the paired reference" "$(head -c 600 "$TOP/demo.json")"
tap_end
