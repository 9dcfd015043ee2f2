#!/usr/bin/env bash
# netns_cluster.sh LBSCALE CLUSTER_SH - the emulated cluster end to end.
#
# Brings up 2 network-namespace hosts joined by a bridge, every link
# direction shaped by tc tbf at 500 Mbit/s (tools/emulate/cluster.sh), runs
# `lbscale coll --coll allreduce` on 2 ranks across them under mpirun over
# TCP, and checks: #wrong = 0 at every size; the 4 MB busbw is within
# [0.3, 1.1] x the shaped rate's payload (a path that bypassed the shaping
# would run at veth speed, >10x the rate); the tbf on host 0's veth
# counted at least the bytes rank 0 sent.  The cluster is torn down on
# every exit (trap; also namespaces that an earlier, killed run of this
# test left behind are removed first), and the test checks that none of
# its namespaces remain.
#
# Exit 77 (skipped) with the reason when not root, mpirun is missing, or
# the kernel cannot make namespaces / veth / bridge / tbf.
set -u
BIN=${1:?usage: netns_cluster.sh LBSCALE CLUSTER_SH}
CL=${2:?usage: netns_cluster.sh LBSCALE CLUSTER_SH}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
export LC_ALL=C
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

. "$(dirname "$0")/netns_lib.sh"
netns_setup lbst netns

RATE_BPS=500000000
timeout 30 "$CL" up -n 2 --rate 500mbit 2>"$TMP/up.err"
rc=$?
if [ $rc -eq 77 ]; then
    skip "$(sed 's/^cluster.sh: //' "$TMP/up.err" | head -n1)"
elif [ $rc -ne 0 ]; then
    fail "cluster.sh up exited $rc: $(cat "$TMP/up.err")"
fi
echo "# $(tail -n1 "$TMP/up.err")"

# correctness at every size, then the bandwidth at 4 MB.  Eager protocol
# up to 8 MiB: Open MPI's rendezvous handshake can serialise the two
# directions of an exchange when other jobs load the machine (2x the time),
# which says nothing about the shaping this test checks.
timeout --kill-after=5 40 "$CL" mpirun -np 2 \
    --mca btl_tcp_eager_limit 8388608 --mca btl_tcp_rndv_eager_limit 8388608 \
    --mca btl_tcp_max_send_size 8388608 "$BIN" coll --coll allreduce \
    -b 1Ki -e 4Mi -f 8 -n 5 -w 2 --json --no-save \
    >"$TMP/coll.jsonl" 2>"$TMP/coll.err"
rc=$?
[ $rc -eq 124 ] || [ $rc -eq 137 ] && fail "mpirun did not finish within 40 s: $(tail -n5 "$TMP/coll.err")"
[ $rc -eq 0 ] || fail "mpirun lbscale coll exited $rc: $(tail -n5 "$TMP/coll.err")"
sent=$("$IP" netns exec "$LBS_EMU_PREFIX-h0" tc -s qdisc show dev eth0 |
       awk '/Sent/ { print $2; exit }')

"$PY" - "$TMP/coll.jsonl" "$RATE_BPS" "${sent:-0}" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
rate, sent = float(sys.argv[2]), float(sys.argv[3])
if not rows:
    sys.exit("FAIL: no JSON rows from lbscale coll")
bad = [r for r in rows if r["wrong"] != 0 or r["ranks"] != 2]
if bad:
    sys.exit("FAIL: rows with wrong != 0 or ranks != 2: %r" % bad)
if any(r["nodes"] != 2 for r in rows):
    sys.exit("FAIL: the ranks did not land on 2 hosts (nodes = %r)"
             % sorted({r["nodes"] for r in rows}))
big = max(rows, key=lambda r: r["size"])
# payload rate of the shaped link: tbf charges IP packet + Ethernet
# header; MTU 9000 segments carry 8948 payload bytes per 9014
link = rate / 8 * 8948 / 9014 / 1e9
ratio = big["busbw_gbps"] / link
print("# %d B allreduce: %.1f us, busbw %.4f GB/s = %.2f x the shaped "
      "payload rate %.4f GB/s; tbf on h0 eth0 sent %.0f B"
      % (big["size"], big["time_us"], big["busbw_gbps"], ratio, link, sent))
if not 0.3 <= ratio <= 1.1:
    sys.exit("FAIL: busbw %.4f GB/s is not within [0.3, 1.1] x %.4f GB/s: "
             "the traffic did not cross the shaped links as expected"
             % (big["busbw_gbps"], link))
# rank 0 sends at least size bytes per timed or warm-up 4 MB allreduce
need = big["size"] * (big["iters"] + big["warmup"])
if sent < need:
    sys.exit("FAIL: tbf on h0 eth0 counted %.0f B, rank 0 sent >= %.0f"
             % (sent, need))
EOF
[ $? -eq 0 ] || exit 1

"$CL" down
left=$("$IP" netns list 2>/dev/null | awk '{print $1}' | grep -c "^$LBS_EMU_PREFIX-")
[ "$left" -eq 0 ] || fail "$left namespaces left after cluster.sh down"
echo "PASS: 2 hosts over shaped veths, #wrong = 0, busbw at the tc rate"
exit 0
