#!/usr/bin/env bash
# netns_calib.sh LBSCALE CLUSTER_SH RUN_SH - from measurements across
# emulated nodes to a 1,024-GPU sweep, with no JSON edited by hand
# (issue 31), through bench/cluster/run.sh (RUN_SH) as docs/cluster.md
# tells a cluster user to run it.
#
# tools/emulate/cluster.sh brings up 2 network-namespace hosts with 2
# ranks each (--slots 2) on tc-shaped veths (500 Mbit/s).  Then:
#   1. `lbscale coll` (allreduce, allgather, alltoall) on 2 ranks of one
#      host and on 4 ranks over both hosts, under mpirun over TCP;
#   2. `lbscale sim calibrate` on those two coll.jsonl files, --nodes 512
#      --gpus-per-node 2;
#   3. `lbscale sim sweep` on the written platform to 1,024 GPUs.
# Checked: rows record nodes 1 / 2 and ranks_per_node 2, #wrong = 0; the
# fitted node exit bandwidth lies within [0.3, 1.5] x the shaped rate
# (the link, not the loopback at 1-2 GB/s; above 1 where tbf's burst lets
# part of a message through unshaped); max_gpus 1,024; the sweep has a 1,024-GPU
# row.  Exit 77 (skipped) with the reason when not root, no Open MPI, or
# the kernel cannot make namespaces / veth / bridge / tbf.  The cluster
# is torn down on every exit.
set -u
BIN=${1:?usage: netns_calib.sh LBSCALE CLUSTER_SH RUN_SH}
CL=${2:?usage: netns_calib.sh LBSCALE CLUSTER_SH RUN_SH}
RUNSH=${3:?usage: netns_calib.sh LBSCALE CLUSTER_SH RUN_SH}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
export LC_ALL=C
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

. "$(dirname "$0")/netns_lib.sh"
netns_setup lbsc netns-calib

RATE_BPS=500000000
timeout 30 "$CL" up -n 2 --slots 2 --rate 500mbit 2>"$TMP/up.err"
rc=$?
if [ $rc -eq 77 ]; then
    skip "$(sed 's/^cluster.sh: //' "$TMP/up.err" | head -n1)"
elif [ $rc -ne 0 ]; then
    fail "cluster.sh up exited $rc: $(cat "$TMP/up.err")"
fi
echo "# $(tail -n1 "$TMP/up.err")"

# bench/cluster/run.sh as a user runs it, with cluster.sh's mpirun as the
# launcher (FABRIC=none: cluster.sh sets the TCP transport itself), the
# algorithms the calibrated platform prices forced in Open MPI's tuned
# component (ring allreduce and allgather, pairwise alltoall: as
# tools/emulate/validate.sh's "fixed" runs) and the eager protocol (see
# netns_cluster.sh: Open MPI's rendezvous handshake serialises exchanges
# on a loaded host); the kernels and the training run left out for time.
timeout --kill-after=5 200 env LBS="$BIN" MPIRUN="$CL mpirun" FABRIC=none \
    NODES=2 RANKS_PER_NODE=2 SIM_NODES=512 MINBYTES=64K MAXBYTES=4M \
    MODEL=resnet-50 OPTIM=sgd SKIP="kernels train" \
    MPI_EXTRA="--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4 --mca coll_tuned_allgather_algorithm 4 --mca coll_tuned_alltoall_algorithm 2 --mca btl_tcp_eager_limit 8388608 --mca btl_tcp_rndv_eager_limit 8388608 --mca btl_tcp_max_send_size 8388608" \
    "$RUNSH" "$TMP/out" >"$TMP/run.out" 2>&1 ||
    fail "bench/cluster/run.sh exited $?: $(tail -n 8 "$TMP/run.out")"
grep -A12 '^calibrated one node' "$TMP/run.out" | sed 's/^/# /'

"$PY" - "$TMP/out/coll-1node/coll.jsonl" "$TMP/out/coll-2nodes/coll.jsonl" <<'EOF2' || exit 1
import json, sys
for path, P, nodes in ((sys.argv[1], 2, 1), (sys.argv[2], 4, 2)):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    if not rows:
        sys.exit("FAIL: no rows in %s" % path)
    for r in rows:
        if (r["ranks"], r["nodes"], r["ranks_per_node"], r["wrong"]) != (P, nodes, 2, 0):
            sys.exit("FAIL: %s: ranks/nodes/ranks_per_node/wrong = %r, want %r"
                     % (path, (r["ranks"], r["nodes"], r["ranks_per_node"], r["wrong"]),
                        (P, nodes, 2, 0)))
print("# rows: 2 ranks on 1 node, 4 ranks on 2 nodes, 2 per node, #wrong 0")
EOF2

"$PY" - "$TMP/out/platform-cluster.json" "$TMP/out/sim/sim.jsonl" "$RATE_BPS" <<'EOF2' || exit 1
import json, sys
p = json.load(open(sys.argv[1]))
rows = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
rate = float(sys.argv[3])
# the shaped link's payload rate (MTU 9000: 8948 of every 9014 bytes)
link = rate / 8 * 8948 / 9014 / 1e9
nic = p["node"]["nic_gbps"] / 8
print("# fitted node exit %.4f GB/s = %.2f x the shaped payload rate %.4f GB/s"
      % (nic, nic / link, link))
if not 0.3 <= nic / link <= 1.5:
    sys.exit("FAIL: the fitted network (%.4f GB/s) is not the shaped link" % nic)
if p["node"]["gpus"] != 2 or p["max_gpus"] != 1024:
    sys.exit("FAIL: platform holds %r x %r" % (p["node"]["gpus"], p["max_gpus"]))
if len(p["calibration"]["inputs"]) != 2 or "inter_node" not in p["calibration"]:
    sys.exit("FAIL: calibration lacks inputs or the inter-node fit")
big = [r for r in rows if r["gpus"] == 1024]
if not big or not 0 < big[0]["scaling_efficiency"] <= 1:
    sys.exit("FAIL: no sane 1,024-GPU row: %r" % rows)
print("# sim sweep resnet-50 sgd at 1,024 GPUs: iteration %.1f ms, efficiency %.3f"
      % (big[0]["iter_ms"], big[0]["scaling_efficiency"]))
EOF2

"$CL" down
left=$("$IP" netns list 2>/dev/null | awk '{print $1}' | grep -c "^$LBS_EMU_PREFIX-")
[ "$left" -eq 0 ] || fail "$left namespaces left after cluster.sh down"
echo "PASS: coll across 2 emulated nodes x 2 ranks -> sim calibrate -> sim sweep to 1,024 GPUs"
exit 0
