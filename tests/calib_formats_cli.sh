#!/usr/bin/env bash
# calib_formats_cli.sh BINARY - `lbscale sim calibrate` on what cluster
# users already have, through the real binary, printed as TAP (issue 31).
#
# The fixtures in tests/data/calib/ are tables in the published layouts
# of nccl-tests (2.17 text with NCCL INFO noise, a pre-2.13 text, -J JSON)
# and OSU 7.4, filled from known constants (gen_fixtures.py: one node
# 60 GB/s per rank, 8 us + 1.5 us per step; across nodes 12 GB/s per
# node).  Checked: the fit recovers the constants, the written platform
# holds --nodes x --gpus-per-node GPUs and sweeps to 1,024, each input is
# recorded with its CRC-32, without --out the platform lands in a new run
# directory and not in the source tree, and every bad input (binary,
# truncated, too large, wrong format, missing rank count or collective)
# exits 2 with one line naming the file, writing nothing.
set -u

BIN=${1:?usage: calib_formats_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

. "$(dirname "$0")/tap.sh"
FIX=$(cd "$(dirname "$0")/data/calib" && pwd)
SRCDATA=$(cd "$(dirname "$0")/../sim/data" && pwd)
ALL=("$FIX/nccl-allreduce-1node.txt" "$FIX/nccl-allreduce-2node.txt"
     "$FIX/nccl-allgather-2node-old.txt" "$FIX/nccl-allreduce-4node.json"
     "$FIX/osu-allreduce-2ranks.txt")
C=(--mem-bw-gbs 10)

# ---- every format at once, the cluster given ------------------------------
good "calibrate from nccl-tests text/JSON and OSU" sim calibrate "${ALL[@]}" \
    --coll allgather --ranks 2 --nodes 256 --gpus-per-node 4 \
    --out "$TOP/plat.json" "${C[@]}"
cp "$OUT" "$TOP/calib.out"
"$PY" - "$TOP/plat.json" "$TOP/calib.out" "${ALL[@]}" <<'PY' && ok "constants recovered; 256 x 4 GPUs; inputs with CRC-32" || not_ok "constants recovered; 256 x 4 GPUs; inputs with CRC-32" "$(cat "$TOP/calib.out")"
import json, sys, zlib
p = json.load(open(sys.argv[1]))
out = open(sys.argv[2]).read()
files = sys.argv[3:]
def near(x, want, tol=0.01):
    assert abs(x / want - 1) <= tol, (x, want)
near(p["node"]["intra_bw_gbs"], 60.0)          # one node: 60 GB/s per rank
near(p["node"]["nic_gbps"], 96.0, 0.02)        # across nodes: 12 GB/s
assert p["node"]["gpus"] == 4 and p["max_gpus"] == 1024, (p["node"], p["max_gpus"])
near(p["protocols"]["Simple"]["base_lat_us"], 8.0)
near(p["protocols"]["Simple"]["intra_hop_us"], 1.5, 0.02)
cal = p["calibration"]
ins = cal["inputs"]
assert [i["file"] for i in ins] == files, ins
fmt = {"nccl-allreduce-1node.txt": "nccl-tests", "nccl-allreduce-2node.txt":
       "nccl-tests", "nccl-allgather-2node-old.txt": "nccl-tests",
       "nccl-allreduce-4node.json": "nccl-tests-json",
       "osu-allreduce-2ranks.txt": "osu"}
for i in ins:
    data = open(i["file"], "rb").read()
    assert i["checksum"] == "crc32:%08x" % zlib.crc32(data), i
    assert i["bytes"] == len(data), i
    assert i["format"] == fmt[i["file"].rsplit("/", 1)[1]], i
# every table row is a sample: 11 + 11 + 9 + 11 rows of nccl-tests, 21 OSU
assert [i["samples"] for i in ins] == [11, 11, 9, 11, 21], ins
assert "inter_node" in cal and cal["samples"] == 32, cal
assert "of one node" in out and "across nodes" in out, out
PY
grep -q "the written platform (lbscale sim coll) on 63 of 63 samples: median 0.0%" "$TOP/calib.out" &&
    ok "the written platform reproduces the samples (median 0.0%)" ||
    not_ok "the written platform reproduces the samples (median 0.0%)" "$(cat "$TOP/calib.out")"
good "sweep to 1,024 GPUs on it" sim sweep --platform "$TOP/plat.json" --model resnet-50 --optim sgd --gpus 4,64,1024 --no-save
grep -q "^ *sgd *1024 " "$OUT" && ok "the sweep has a 1,024-GPU row" ||
    not_ok "the sweep has a 1,024-GPU row" "$(cat "$OUT")"
bad "beyond --nodes x --gpus-per-node" "at most 1024|max_gpus" sim sweep --platform "$TOP/plat.json" --model resnet-50 --optim sgd --gpus 2048

# the old table names no collective: without --coll it is refused
bad "nccl-tests text without the collective" "nccl-allgather-2node-old.txt|--coll" sim calibrate "$FIX/nccl-allgather-2node-old.txt" --out "$TOP/never.json" "${C[@]}"
good "pre-2.13 layout with --coll" sim calibrate "$FIX/nccl-allgather-2node-old.txt" --coll allgather --out "$TOP/ag.json" "${C[@]}"
"$PY" - "$TOP/ag.json" <<'PY' && ok "allgather: size / P per rank, 2 nodes x 4 from the Rank lines" || not_ok "allgather: size / P per rank, 2 nodes x 4 from the Rank lines" "$(cat "$TOP/ag.json")"
import json, sys
p = json.load(open(sys.argv[1]))
# only multi-node rows: the ring-form fit, whose bandwidth is the node's exit
assert abs(p["node"]["nic_gbps"] / 96.0 - 1) < 0.01, p["node"]
assert p["node"]["gpus"] == 4 and p["max_gpus"] == 8, (p["node"], p["max_gpus"])
PY

# ---- where it writes --------------------------------------------------------
before=$(ls "$SRCDATA/platforms")
good "without --out: into a new run directory" sim calibrate "$FIX/nccl-allreduce-1node.txt" --name mine "${C[@]}"
made=$(find "$RES" -name 'platform-mine.json' | head -n1)
if [ -n "$made" ] && [ "$(ls "$SRCDATA/platforms")" = "$before" ] &&
   grep -qF "wrote $made" "$OUT" && [ -z "$(ls "$CWD")" ]; then
    ok "the platform is in the run directory, the source tree untouched"
else
    not_ok "the platform is in the run directory, the source tree untouched" \
        "found: ${made:-none}" "$(cat "$OUT")"
fi

# ---- bad input: one line naming the file, exit 2, nothing written ---------
head -c 2048 /dev/urandom >"$TOP/bin.dat"
printf '\0' >>"$TOP/bin.dat"
bad "binary file"            "bin.dat|binary" sim calibrate "$TOP/bin.dat" --out "$TOP/never.json" "${C[@]}"
printf 'coll,ranks,bytes,time_us\nallreduce,2,1024,5.0\n' >"$TOP/rows.csv"
bad "wrong format (CSV)"     "rows.csv|not a format" sim calibrate "$TOP/rows.csv" --out "$TOP/never.json" "${C[@]}"
sed '/# Avg bus bandwidth/,$d' "$FIX/nccl-allreduce-2node.txt" >"$TOP/nofooter.txt"
bad "nccl-tests text cut before its footer" "nofooter.txt|truncated" sim calibrate "$TOP/nofooter.txt" --out "$TOP/never.json" "${C[@]}"
head -c 1900 "$FIX/nccl-allreduce-2node.txt" >"$TOP/cut.txt"
bad "nccl-tests text cut inside a row" "cut.txt|truncated" sim calibrate "$TOP/cut.txt" --out "$TOP/never.json" "${C[@]}"
head -c 3000 "$FIX/nccl-allreduce-4node.json" >"$TOP/cut.json"
bad "nccl-tests JSON cut short" "cut.json|does not parse" sim calibrate "$TOP/cut.json" --out "$TOP/never.json" "${C[@]}"
"$PY" - "$FIX/nccl-allreduce-4node.json" "$TOP/notime.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["results"][3]["out_of_place"]["time"]
d["results"][3]["in_place"] = None
json.dump(d, open(sys.argv[2], "w"))
PY
bad "nccl-tests JSON row without a time" "notime.json|results[3].out_of_place.time" sim calibrate "$TOP/notime.json" --out "$TOP/never.json" "${C[@]}"
bad "OSU table without --ranks" "osu-allreduce-2ranks.txt|--ranks" sim calibrate "$FIX/osu-allreduce-2ranks.txt" --out "$TOP/never.json" "${C[@]}"
head -c 300 "$FIX/osu-allreduce-2ranks.txt" >"$TOP/osu-cut.txt"
bad "OSU table cut inside a row" "osu-cut.txt|truncated" sim calibrate "$TOP/osu-cut.txt" --ranks 2 --out "$TOP/never.json" "${C[@]}"
printf '# OSU MPI Allreduce Latency Test v7.4\n# Size       Avg Latency(us)\n4    abc\n' >"$TOP/osu-nan.txt"
bad "OSU row that is not a number" "osu-nan.txt:3|latency" sim calibrate "$TOP/osu-nan.txt" --ranks 2 --out "$TOP/never.json" "${C[@]}"
cat "$FIX/nccl-allreduce-1node.txt" "$FIX/nccl-allreduce-2node.txt" >"$TOP/two.txt"
bad "two nccl-tests runs in one file" "two.txt:31|second" sim calibrate "$TOP/two.txt" --out "$TOP/never.json" "${C[@]}"
cat "$FIX/osu-allreduce-2ranks.txt" "$FIX/osu-allreduce-2ranks.txt" >"$TOP/two-osu.txt"
bad "two OSU tables in one file" "two-osu.txt|second" sim calibrate "$TOP/two-osu.txt" --ranks 2 --out "$TOP/never.json" "${C[@]}"
truncate -s 257M "$TOP/huge.txt"
bad "file over 256 MiB"      "huge.txt|256 MiB" sim calibrate "$TOP/huge.txt" --out "$TOP/never.json" "${C[@]}"
bad "fewer GPUs per node than measured" "--gpus-per-node|4" sim calibrate "$FIX/nccl-allreduce-2node.txt" --gpus-per-node 2 --out "$TOP/never.json" "${C[@]}"
bad "fewer nodes than measured" "--nodes|4" sim calibrate "$FIX/nccl-allreduce-4node.json" --nodes 2 --out "$TOP/never.json" "${C[@]}"
bad "bad --fabric"           "--fabric|star" sim calibrate "$FIX/nccl-allreduce-1node.txt" --fabric star --out "$TOP/never.json" "${C[@]}"
bad "fat-tree without a leaf size" "--fabric|nodes_per_leaf" sim calibrate "$FIX/nccl-allreduce-1node.txt" --fabric fat-tree:oversubscription=2 --out "$TOP/never.json" "${C[@]}"
bad "unknown --coll"         "--coll|gossip" sim calibrate "$FIX/nccl-allreduce-1node.txt" --coll gossip --out "$TOP/never.json" "${C[@]}"
[ -e "$TOP/never.json" ] && not_ok "no platform written for refused input" || ok "no platform written for refused input"

# a fat-tree cluster: the platform says so and still sweeps
good "--fabric fat-tree" sim calibrate "${ALL[@]}" --coll allgather --ranks 2 --nodes 256 --fabric fat-tree:nodes_per_leaf=16,oversubscription=2 --out "$TOP/ft.json" "${C[@]}"
"$PY" - "$TOP/ft.json" <<'PY' && ok "fat-tree written as given" || not_ok "fat-tree written as given"
import json, sys
f = json.load(open(sys.argv[1]))["fabric"]
assert f["kind"] == "fat-tree" and f["nodes_per_leaf"] == 16 and f["oversubscription"] == 2, f
PY
good "sweep on the fat-tree platform" sim sweep --platform "$TOP/ft.json" --model resnet-50 --optim sgd --gpus 4,1024 --no-save

# ---- --nccl-model: NCCL's model fitted over a GPU preset -----------------
# (the fit recovering known factors: tests/test_calib_nccl.c)
good "--nccl-model over dgx-a100" sim calibrate "$FIX/nccl-allreduce-1node.txt" "$FIX/nccl-allreduce-2node.txt" --nccl-model dgx-a100 --name gpus --out "$TOP/nccl.json" --nodes 64
if /usr/bin/python3 - "$TOP/nccl.json" "$OUT" "$SRCDATA/platforms/dgx-a100.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[3]))["nccl"]
c = p["calibration"]
out = open(sys.argv[2]).read()
assert p["name"] == "gpus" and c["base"] == "dgx-a100", c
assert p["node"]["gpus"] == 4 and p["max_gpus"] == 256, (p["node"], p.get("max_gpus"))
assert c["rows_one_node"] > 0 and c["rows_several_nodes"] > 0, c
for g, f in (("inter_graph", "inter_factor"), ("intra_graph", "intra_factor")):
    assert abs(p["nccl"][g]["bw_gbs"] - b[g]["bw_gbs"] * c[f]) < 1e-6, (g, p["nccl"][g])
assert c["error_fitted"]["median_rel_err"] < c["error_of_base"]["median_rel_err"], c
assert len(c["inputs"]) == 2 and c["inputs"][0]["checksum"].startswith("crc32:")
assert "node links x" in out and "network x" in out and "held-out" in out, out
PY
then ok "--nccl-model: the bandwidths scaled, provenance, errors printed"
else not_ok "--nccl-model: the bandwidths scaled, provenance, errors printed" "$(head -c 600 "$TOP/nccl.json")"; fi
good "sweep on the NCCL-model platform" sim sweep --platform "$TOP/nccl.json" --model resnet-50 --optim sgd --gpus 4,256 --no-save
bad "--nccl-model with a typo" "dgx-a10|did you mean" sim calibrate "$FIX/nccl-allreduce-1node.txt" --nccl-model dgx-a10 --out "$TOP/never.json"
bad "--gpus-per-node against the rows of several nodes" "--gpus-per-node|4 per node" sim calibrate "$FIX/nccl-allreduce-2node.txt" --nccl-model dgx-a100 --gpus-per-node 8 --out "$TOP/never.json"

# bench/cluster: run.sh runs end to end in tests/netns_calib.sh (root);
# the Slurm script cannot run here (no Slurm): it must at least parse and
# hand run.sh the allocation's shape
CLDIR=$(cd "$(dirname "$0")/../bench/cluster" && pwd)
bash -n "$CLDIR/run.sh" && bash -n "$CLDIR/lbscale.sbatch" &&
    grep -q 'exec bench/cluster/run.sh' "$CLDIR/lbscale.sbatch" &&
    ok "bench/cluster scripts parse" || not_ok "bench/cluster scripts parse"
(cd "$TOP" && LBS=/nonexistent "$CLDIR/run.sh" "$TOP/x" >"$TOP/rs.out" 2>&1)
[ $? -eq 2 ] && grep -q "LBS=/nonexistent" "$TOP/rs.out" && [ ! -e "$TOP/x" ] &&
    ok "run.sh refuses a missing binary (exit 2, nothing made)" ||
    not_ok "run.sh refuses a missing binary (exit 2, nothing made)" "$(cat "$TOP/rs.out")"

tap_end
