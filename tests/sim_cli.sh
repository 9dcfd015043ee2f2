#!/usr/bin/env bash
# sim_cli.sh BINARY - `lbscale sim` through the real binary, printed as TAP.
#
# Bad input (malformed or inconsistent platform/model/trace JSON, bad
# options) must exit exactly 2 with one "lbscale: " line on stderr naming
# the file and the field, nothing on stdout and no file created.  Good
# cases: sweep rows carry the documented fields, results land in the run
# directory, calibrate writes a platform that sweeps can use.
set -u

BIN=${1:?usage: sim_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

. "$(dirname "$0")/tap.sh"
DATA=$(cd "$(dirname "$0")/../sim/data" && pwd)

M=(--model bert-large --platform dgx-a100)

# ---- bad input ----
bad "unknown sim command"      "bogus"            sim bogus
bad "unknown option"           "--bogus"          sim sweep "${M[@]}" --optim lamb --bogus
bad "missing --model"          "--model"          sim sweep --platform dgx-a100 --optim lamb
bad "unknown platform"         "nope|dgx-a100"    sim sweep --model bert-large --platform nope --optim lamb
bad "unknown model"            "nope|bert-large"  sim sweep --model nope --platform dgx-a100 --optim lamb
bad "platform typo"            "dgx-a10'|did you mean 'dgx-a100'" sim sweep --model bert-large --platform dgx-a10 --optim lamb
bad "model typo"               "did you mean 'bert-large'" sim sweep --model bert-larg --platform dgx-a100 --optim lamb
bad "optimizer without trace"  "nosuchopt|bert-large" sim sweep "${M[@]}" --optim nosuchopt
bad "gpus not a multiple"      "12|multiple"      sim sweep "${M[@]}" --optim lamb --gpus 12
bad "gpus beyond max_gpus"     "131072|max_gpus|fabric"   sim sweep "${M[@]}" --optim lamb --gpus 131072
bad "gpus zero"                "--gpus"           sim sweep "${M[@]}" --optim lamb --gpus 0
bad "bucket larger than model" "--bucket-mb|larger" sim sweep "${M[@]}" --optim lamb --bucket-mb 100000
bad "bucket-mb malformed"      "--bucket-mb|1e"   sim sweep "${M[@]}" --optim lamb --bucket-mb 1e

sed 's/"nic_gbps": 200/"nic_gbps": -200/' "$DATA/platforms/dgx-a100.json" >"$TOP/negbw.json"
bad "negative bandwidth"       "negbw.json|node.nic_gbps" sim sweep --model bert-large --platform "$TOP/negbw.json" --optim lamb
sed 's/"gpus": 8/"gpus": 0/' "$DATA/platforms/dgx-a100.json" >"$TOP/zerogpu.json"
bad "zero GPUs per node"       "zerogpu.json|node.gpus" sim sweep --model bert-large --platform "$TOP/zerogpu.json" --optim lamb
"$PY" - "$DATA/platforms/dgx-a100.json" "$TOP/algo.json" "$TOP/algo2.json" "$TOP/mix.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["nccl"]["algorithms"] = ["ring", "butterfly"]
json.dump(p, open(sys.argv[2], "w"))
q = json.load(open(sys.argv[1]))
del q["nccl"]
q["algorithms"] = ["ring", "butterfly"]
json.dump(q, open(sys.argv[3], "w"))
q = json.load(open(sys.argv[1]))
q["algorithms"] = ["ring"]
json.dump(q, open(sys.argv[4], "w"))
PY
bad "unknown NCCL algorithm"   "algo.json|nccl.algorithms|butterfly" sim sweep --model bert-large --platform "$TOP/algo.json" --optim lamb
bad "unknown MPI algorithm"    "algo2.json|algorithms[1]|butterfly" sim sweep --model bert-large --platform "$TOP/algo2.json" --optim lamb
bad "MPI algorithms on an NCCL platform" "mix.json|nccl" sim sweep --model bert-large --platform "$TOP/mix.json" --optim lamb
sed 's/"bucket_mb": 25/"bucket_mb": 4000/' "$DATA/models/bert-large.json" >"$TOP/bigbucket.json"
bad "bucket larger than model (JSON)" "bigbucket.json|bucket_mb" sim sweep --model "$TOP/bigbucket.json" --platform dgx-a100 --optim lamb
printf '{"format": "lbscale-trace", "version": 2, "optim": "x"}\n' >"$TOP/v2.jsonl"
bad "trace of another version" "v2.jsonl|version" sim sweep "${M[@]}" --optim "$TOP/v2.jsonl"
printf '{"format": "lbscale-trace", "version": 1, "optim": "x", "ranks": 8, "steps": 1, "layers": [{"name": "a", "n": 5}]}\n{"step": 1, "layer": 0, "coll": "allreduce", "bytes": 20}\n' >"$TOP/short.jsonl"
bad "trace with other layers"  "short.jsonl|layers|bert-large" sim sweep "${M[@]}" --optim "$TOP/short.jsonl"
printf '{"coll": "allreduce", "ranks": 4, "bytes": 1024}\n' >"$TOP/coll-bad.jsonl"
bad "calibrate: row without time" "coll-bad.jsonl:1|time_us" sim calibrate "$TOP/coll-bad.jsonl" --out "$TOP/never.json" --mem-bw-gbs 10

# ---- issue 14 (8): readers take regular files within a cap, never hang ----
mkfifo "$TOP/fifo.json"
bad "platform /dev/zero"       "/dev/zero|regular file" sim sweep --model bert-large --platform /dev/zero --optim lamb
bad "model is a FIFO"          "fifo.json|regular file" sim sweep --model "$TOP/fifo.json" --platform dgx-a100 --optim lamb
bad "trace /dev/zero"          "/dev/zero|regular file" sim sweep "${M[@]}" --optim /dev/zero
bad "platform is a directory"  "dir.json|regular file" sim coll --platform "$(mkdir -p "$TOP/dir.json" && echo "$TOP/dir.json")"
truncate -s 2M "$TOP/huge.json"
bad "platform over 1 MiB"      "huge.json|larger than 1 MiB" sim coll --platform "$TOP/huge.json"
bad "calibrate /dev/zero"      "/dev/zero|regular file" sim calibrate /dev/zero --out "$TOP/never.json" --mem-bw-gbs 10
bad "anchors trace /dev/zero"  "/dev/zero|regular file" sim anchors --optim /dev/zero
good "sweep --help states the caps" sim sweep --help
grep -q '1 MiB' "$OUT" && grep -q '1 GiB' "$OUT" && ok "help names the size caps" ||
    not_ok "help names the size caps"

# ---- issue 14 (10): physical ranges, empty traces, nothing printed first ----
edit() {   # edit SRC DEST SED-EXPR: a preset with one field changed
    sed "$3" "$1" >"$2"
}
P_A100=$DATA/platforms/dgx-a100.json
edit "$P_A100" "$TOP/peak.json" 's/"peak_tflops": 312/"peak_tflops": 1e-320/'
bad "denormal peak_tflops"     "peak.json|gpu.peak_tflops" sim sweep --model bert-large --platform "$TOP/peak.json" --optim lamb
edit "$P_A100" "$TOP/nic.json" 's/"nic_gbps": 200/"nic_gbps": 1e-300/'
bad "nic_gbps 1e-300"          "nic.json|node.nic_gbps" sim sweep --model bert-large --platform "$TOP/nic.json" --optim lamb
bad "nic_gbps 1e-300 (coll)"   "nic.json|node.nic_gbps" sim coll --platform "$TOP/nic.json" --gpus 16
edit "$P_A100" "$TOP/mem.json" 's/"mem_bw_gbs": [0-9]*/"mem_bw_gbs": 1e-9/'
bad "mem_bw_gbs 1e-9"          "mem.json|gpu.mem_bw_gbs" sim sweep --model bert-large --platform "$TOP/mem.json" --optim lamb
edit "$DATA/models/bert-large.json" "$TOP/eff.json" 's/"efficiency": [0-9.]*/"efficiency": 1e-300/'
bad "efficiency 1e-300"        "eff.json|efficiency" sim sweep --model "$TOP/eff.json" --platform dgx-a100 --optim lamb
edit "$DATA/models/bert-large.json" "$TOP/fwd.json" '0,/"fwd_gflops": [0-9.e+]*/s//"fwd_gflops": 1e300/'
bad "fwd_gflops 1e300"         "fwd.json|fwd_gflops" sim sweep --model "$TOP/fwd.json" --platform dgx-a100 --optim lamb
printf '{"format": "lbscale-trace", "version": 1, "optim": "x", "ranks": 8, "steps": 4, "layers": [{"name": "a", "n": 5}]}\n' >"$TOP/nocalls.jsonl"
bad "trace without calls"      "nocalls.jsonl|no calls" sim sweep "${M[@]}" --optim "$TOP/nocalls.jsonl"
# a platform whose only protocol carries 1 KB: no table header, no run dir
"$PY" - "$P_A100" "$TOP/ll.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
del p["nccl"]        # the MPI model: protocols of its own
p["protocols"] = {"LL": {"base_lat_us": 1, "intra_hop_us": 1,
                         "inter_hop_us": 1, "bw_factor": 1, "max_bytes": 1000}}
json.dump(p, open(sys.argv[2], "w"))
PY
bad "sweep point that cannot run" "no enabled algorithm" sim sweep "${M[@]/dgx-a100/$TOP/ll.json}" --optim lamb --gpus 8
bad "coll size that cannot run"   "ll.json|no enabled algorithm" sim coll --platform "$TOP/ll.json" --bytes 1K,1G
bad "timeline point that fails"   "multiple" sim step "${M[@]}" --optim lamb --gpus 12 --timeline
edit "$P_A100" "$TOP/small.json" 's/"name": "dgx-a100"/"name": "dgx-a100", "max_gpus": 64/'
bad "speed on a small platform"   "max_gpus" sim speed --platform "$TOP/small.json" --optim lamb

# ---- good runs ----
good "sim --help" sim --help
good "sweep --help" sim sweep --help
grep -q 'E(P) = T(one node' "$OUT" && ok "help states the efficiency definition" ||
    not_ok "help states the efficiency definition"
good "sweep --json" sim sweep "${M[@]}" --optim sgd,lamb --gpus 8..32 --json --no-save
if "$PY" - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
need = {"optim", "gpus", "iter_ms", "compute_ms", "exposed_comm_ms",
        "bytes_per_gpu", "scaling_efficiency"}
assert len(rows) == 6, len(rows)
for r in rows:
    assert need <= set(r), need - set(r)
    assert r["iter_ms"] >= r["compute_ms"] > 0
    assert 0 < r["scaling_efficiency"] <= 1.0 + 1e-9
assert [r["gpus"] for r in rows[:3]] == [8, 16, 32]
PY
then ok "sweep rows carry the documented fields"; else not_ok "sweep rows carry the documented fields"; fi
good "sweep saves results" sim sweep "${M[@]}" --optim lamb --gpus 8,1024
[ -n "$(find "$RES" -name sim.jsonl)" ] && ok "sim.jsonl written" ||
    not_ok "sim.jsonl written"
good "step --timeline" sim step "${M[@]}" --optim lamb --gpus 1024 --timeline
grep -q 'after backward\|allreduce' "$OUT" && ok "timeline lists collectives" ||
    not_ok "timeline lists collectives"
good "coll" sim coll --platform dgx-h100 --gpus 8,64 --bytes 1M,1G --no-save

# calibrate from a synthetic coll JSONL (ring forms, 4 us + 0.5 us/step,
# 5 GB/s); three rank counts, so each is predicted from two others
"$PY" - "$TOP/coll.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for P in (2, 3, 4):
        b = 1024
        while b <= 1 << 26:
            t = 4 + 2 * (P - 1) * 0.5 + 2 * (P - 1) / P * b / 5e3
            f.write(json.dumps({"bench": "coll", "coll": "allreduce",
                                "ranks": P, "bytes": b, "time_us": t,
                                "wrong": 0}) + "\n")
            b *= 4
    f.write(json.dumps({"bench": "stream"}) + "\n")
PY
good "calibrate" sim calibrate "$TOP/coll.jsonl" --out "$TOP/local.json" --mem-bw-gbs 10
grep -q "held-out sizes (.*): median 0.0%" "$OUT" && grep -q "held-out rank counts (.*): median 0.0%" "$OUT" && grep -q "bandwidth 5.000 GB/s" "$OUT" &&
    ok "calibrate recovers 5 GB/s and reports held-out error" ||
    not_ok "calibrate recovers 5 GB/s and reports held-out error" "$(cat "$OUT")"
good "sweep on the calibrated platform" sim sweep --model resnet-50 --platform "$TOP/local.json" --optim sgd --gpus 2,4 --no-save

# ---- issue 19: measured compute, netsweep, slowdown, gradient precision --
(cd "$TOP" && "$BIN" train --optim sgd --model mlp:784-32-10 --subset 512 \
    --test-subset 128 --global-batch 64 --epochs 2 --out "$TOP/tr" \
    >/dev/null 2>&1) || not_ok "tiny train run for --compute"
good "sweep --compute RUN" sim sweep --compute "$TOP/tr" --platform dgx-a100 --optim lamb --gpus 8,64 --json --no-save
"$PY" - "$TOP/tr/train-trace-sgd.jsonl" "$OUT" <<'PY' && ok "compute time = sum of the measured medians" || not_ok "compute time = sum of the measured medians"
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
steps = [l for l in lines[1:] if l.get("type") == "step"][1:]
L = len(lines[0]["layers"])
want = sum(statistics.median(s[k][i] for s in steps)
           for k in ("fwd_ms", "bwd_ms") for i in range(L))
rows = [json.loads(l) for l in open(sys.argv[2])]
assert rows and all(abs(r["compute_ms"] - want) <= 1e-9 * want for r in rows), (want, rows)
PY
bad "--compute of another model" "layers|bert-large" sim sweep --compute "$TOP/tr" --model bert-large --platform dgx-a100 --optim lamb
bad "--compute of a trace-v1"  "lbscale-train-trace" sim sweep --compute "$DATA/traces/dmsgd-bert-large.jsonl" --platform dgx-a100 --optim lamb
good "netsweep" sim netsweep --model bert-large --platform dgx-a100 --optim lamb,slamb --gpus 1024 --node-gbps 50,200,800 --no-save
grep -q "slamb .* E reaches 0.90 at" "$OUT" && ok "netsweep names where SLAMB reaches 0.90" ||
    not_ok "netsweep names where SLAMB reaches 0.90" "$(cat "$OUT")"
bad "netsweep with two GPU counts" "one GPU count" sim netsweep "${M[@]}" --optim lamb --gpus 64,128
bad "netsweep bandwidth list"  "--node-gbps" sim netsweep "${M[@]}" --optim lamb --node-gbps 0
bad "bad --grad-dtype"          "--grad-dtype|fp8" sim sweep "${M[@]}" --optim lamb --grad-dtype fp8
bad "bad --accum"               "--accum" sim sweep "${M[@]}" --optim lamb --accum 0
"$PY" - "$BIN" <<'PY' && ok "slowdown raises exposed comm; fp16 gradients halve dense bytes" || not_ok "slowdown raises exposed comm; fp16 gradients halve dense bytes"
import json, subprocess, sys
def rows(*extra):
    out = subprocess.run([sys.argv[1], "sim", "sweep", "--model", "bert-xl",
                          "--platform", "dgx-a100", "--optim", "lamb",
                          "--gpus", "1024", "--json", "--no-save", *extra],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[0])
on, off, half = rows(), rows("--no-slowdown"), rows("--grad-dtype", "fp16")
assert on["exposed_comm_ms"] > off["exposed_comm_ms"] and on["iter_ms"] > off["iter_ms"], (on, off)
assert on["slowdown_ms"] > 0 and abs(off["slowdown_ms"]) < 1e-6, (on, off)
assert abs(half["bytes_per_gpu"] * 2 - on["bytes_per_gpu"]) < 1, (half, on)
assert half["grad_dtype"] == "fp16"
PY

# ---- issue 29: validation, compressed compute, the job, NCCL's view ----
good "validate" sim validate --json --no-save
"$PY" - "$OUT" "$DATA/validation/validation.json" <<'PY' && ok "validate reports every row of the list" || not_ok "validate reports every row of the list" "$(head -c 600 "$OUT")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
want = [r["id"] for r in json.load(open(sys.argv[2]))["rows"]]
assert [r["id"] for r in rows] == want, ([r["id"] for r in rows], want)
for r in rows:
    assert r["published"] > 0 and r["predicted"] > 0
    assert abs(r["ratio"] - r["predicted"] / r["published"]) < 1e-9
PY
echo '{"format": "lbscale-validation", "version": 1, "rows": [{"id": "X", "what": "w", "source": "s", "published": 1, "num": {"platform": "dgx-a100", "model": "bert-large", "optim": "lamb", "gpus": 8}, "den": {"platform": "dgx-a100", "model": "bert-large", "optim": "lamb", "gpus": 12}}]}' > "$TOP/v.json"
bad "validate: a point that cannot run" "v.json|multiple" sim validate --manifest "$TOP/v.json"
sed 's/"gpus": 12/"gpus": 8, "phase": "last"/' "$TOP/v.json" > "$TOP/v2.json"
bad "validate: bad field"  "v2.json|phase" sim validate --manifest "$TOP/v2.json"
good "sweep of every compressed exchange" sim sweep --model bert-large --platform dgx-a100 --optim lamb_topk,lamb_powersgd,onebit_lamb --gpus 64,1024 --json --no-save
"$PY" - "$OUT" <<'PY' && ok "no compressed exchange is free on a GPU preset" || not_ok "no compressed exchange is free on a GPU preset" "$(head -c 800 "$OUT")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 6
for r in rows:
    assert r["compress_ms"] > 0, (r["optim"], r["gpus"], r["compress_cost"])
    assert "none" not in r["compress_cost"], r["compress_cost"]
PY
good "sweep with a job spread" sim sweep "${M[@]}" --optim lamb --gpus 8,1024 --compute-cv 0.05 --overhead-ms 2 --json --no-save
"$PY" - "$OUT" <<'PY' && ok "the slowest rank and the overhead are counted, named" || not_ok "the slowest rank and the overhead are counted, named" "$(head -c 800 "$OUT")"
import json, sys
a, b = [json.loads(l) for l in open(sys.argv[1])]
assert b["straggle_ms"] > a["straggle_ms"] > 0, (a["straggle_ms"], b["straggle_ms"])
assert a["overhead_ms"] == b["overhead_ms"] == 2
assert a["job_source"].startswith("--compute-cv 0.05"), a["job_source"]
PY
bad "bad --compute-cv"  "--compute-cv" sim sweep "${M[@]}" --optim lamb --compute-cv 2
bad "bad --overhead-ms" "--overhead-ms" sim sweep "${M[@]}" --optim lamb --overhead-ms -1
good "coll --timeline" sim coll --platform dgx-a100 --gpus 16 --bytes 1G --timeline --no-save
grep -q "NCCL INFO 1000000000 Bytes -> Algo 1 proto 2 time .* (ring/Simple, 8 channels)" "$OUT" &&
    ok "coll --timeline prints NCCL's tuning line" || not_ok "coll --timeline prints NCCL's tuning line" "$(cat "$OUT")"
good "sweep to 131,072 GPUs" sim sweep --model bert-large --platform dgx-h100 --optim lamb --gpus 131072 --no-save
# issue 33, item 8 (the sim parts): accepted nonsense is refused
bad "coll on one GPU"        "--gpus|2 GPUs"   sim coll --platform dgx-a100 --gpus 1
bad "coll of 0 bytes"        "--bytes"         sim coll --platform dgx-a100 --bytes 0
bad "coll of 2^61 bytes"     "--bytes|9e15"    sim coll --platform dgx-a100 --bytes 2305843009213693952
bad "empty optimizer item"   "empty item"      sim sweep "${M[@]}" --optim lamb,,
bad "leading comma"          "empty item"      sim sweep "${M[@]}" --optim ,lamb
mkfifo "$TOP/fifo"
LBSCALE_SIM_DATA="$TOP/fifo" bad "LBSCALE_SIM_DATA a FIFO" "LBSCALE_SIM_DATA" sim list
mkfifo "$TOP/calfifo"
bad "calibrate --out a FIFO, before any work" "--out|calfifo" sim calibrate "$TOP/coll.jsonl" --out "$TOP/calfifo"
good "sweep below one node" sim sweep "${M[@]}" --optim lamb --gpus 2,8 --json --no-save
"$PY" - "$OUT" <<'PY' && ok "E is not defined below one node (null), 1 at one node" || not_ok "E is not defined below one node (null), 1 at one node" "$(cat "$OUT")"
import json, sys
a, b = [json.loads(l) for l in open(sys.argv[1])]
assert a["gpus"] == 2 and a["scaling_efficiency"] is None, a
assert b["gpus"] == 8 and b["scaling_efficiency"] == 1, b
PY

tap_end
