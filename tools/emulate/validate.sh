#!/usr/bin/env bash
# shellcheck disable=SC2154  # variables from cluster.sh's settings file
# validate.sh - measure collectives and short training runs on an emulated
# cluster (cluster.sh) and compare them with `lbscale sim` (compare.py).
#
#   tools/emulate/validate.sh [--rate 1gbit] [--hosts "2 4"] [--max 16Mi]
#                             [--iters 10] [--steps 40] [--local-batch 128]
#                             [--bin build/lbscale] [--out DIR] [--no-train]
#                             [--no-coll]
#
# Brings up max(--hosts) namespaces (cluster.sh up; always torn down on
# exit), measures the one-way TCP latency (tcp_pingpong.py, h0 <-> h1) and
# one core's STREAM triad (`lbscale stream --threads 1`), writes the
# platform (cluster.sh platform: rate, MTU framing, that latency, that
# memory bandwidth; nothing fitted to lbscale coll), then for every P in
# --hosts:
#   lbscale coll --coll allreduce,allgather,alltoall -b 1Ki -e MAX -f 4
#     into DIR/coll-default (Open MPI's own algorithm choice) and
#     DIR/coll-fixed (ring allreduce, ring allgather, pairwise alltoall,
#     eager protocol: see FIXED below);
#   lbscale train --optim lamb / slamb, STEPS steps, local batch B
#     (global batch P x B, weak scaling), every rank's trace, into
#     DIR/train-OPTIM-pP (Open MPI defaults) and DIR/train-OPTIM-pP-eager
#     (eager protocol, as in coll-fixed);
# and finally compare.py DIR (DIR/validation.md).  Needs root (cluster.sh
# exits 77 when it cannot build the cluster; so does this script).
set -u
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
RATE=1gbit
HOSTS="2 4"
MAX=16Mi
ITERS=10
STEPS=40
LB=128
BIN=$TOP/build/lbscale
OUT=
TRAIN=1
COLL=1
while [ $# -gt 0 ]; do
    case $1 in
        --rate) RATE=$2; shift 2 ;;
        --hosts) HOSTS=$2; shift 2 ;;
        --max) MAX=$2; shift 2 ;;
        --iters) ITERS=$2; shift 2 ;;
        --steps) STEPS=$2; shift 2 ;;
        --local-batch) LB=$2; shift 2 ;;
        --bin) BIN=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --no-train) TRAIN=0; shift ;;
        --no-coll) COLL=0; shift ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "validate.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
[ -x "$BIN" ] || { echo "validate.sh: no lbscale binary at $BIN (--bin)" >&2; exit 2; }
NMAX=0
for p in $HOSTS; do [ "$p" -gt "$NMAX" ] && NMAX=$p; done
if [ -z "$OUT" ]; then
    OUT=${LBSCALE_RESULTS:-$TOP/results}/$(date -u +%Y%m%dT%H%M%SZ)-emu-$RATE
fi
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
mkdir -p "$OUT" || exit 1
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

export LBS_EMU_PREFIX=${LBS_EMU_PREFIX:-lbsv}
export LBS_EMU_STATE=/run/lbscale-emu-$LBS_EMU_PREFIX
CL=$HERE/cluster.sh
cleanup() { "$CL" down; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log() { echo "validate.sh: $*" >&2; }
"$CL" down     # a cluster of this prefix that a killed run left behind
"$CL" up -n "$NMAX" --rate "$RATE" || exit $?
# hosts, rate, rate_bps, burst, limit, port_limit, mtu, delay_us, tsq,
# wmem, tcp_cc, prefix
# shellcheck disable=SC1091
. "$LBS_EMU_STATE/settings"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# 1. one-way latency of a link, independent of MPI
"$CL" exec 1 "$PY" "$HERE/tcp_pingpong.py" server 5999 &
spid=$!
"$CL" exec 0 "$PY" "$HERE/tcp_pingpong.py" client "10.77.0.2" 5999 5000 \
    >"$OUT/tcp_pingpong.json" || { log "ping-pong failed"; exit 1; }
wait $spid
hop=$("$PY" -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["half_rtt_us_median"])' "$OUT/tcp_pingpong.json")
# 2. one core's memory bandwidth (the optimizer's memory-bound time)
"$BIN" stream --threads 1 --elements 16M --json --out "$OUT" >"$OUT/stream.json" 2>/dev/null ||
    { log "lbscale stream failed"; exit 1; }
membw=$("$PY" -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("%.2f" % max(r["triad_gbps"] for r in rows))' "$OUT/stream.json")
log "one-way TCP latency $hop us, STREAM triad $membw GB/s"
LBS_EMU_HOP_US=$hop LBS_EMU_HOP_SRC="median half round trip of tcp_pingpong.py h0<->h1, this run" \
LBS_EMU_MEMBW_GBS=$membw "$CL" platform "$OUT/platform.json" || exit 1

# "fixed": the algorithms the simulator is asked about (ring allreduce,
# ring allgather, pairwise alltoall) and the eager protocol up to 32 MiB,
# so a message is one bulk transfer with no rendezvous handshake (RTS,
# then the receiver's ACK): that handshake needs the receiver scheduled
# and its ACK can queue behind the receiver's own bulk data in the one
# TCP connection of the pair, which on this shared 2-core machine turned
# 4 MiB exchanges into serialised ones (2x the time).
EAGER=(--mca btl_tcp_eager_limit 33554432
       --mca btl_tcp_rndv_eager_limit 33554432
       --mca btl_tcp_max_send_size 33554432)
FIXED=(--mca coll_tuned_use_dynamic_rules 1
       --mca coll_tuned_allreduce_algorithm 4
       --mca coll_tuned_allgather_algorithm 4
       --mca coll_tuned_alltoall_algorithm 2
       "${EAGER[@]}")
CMDS=()
run_cmd() {  # run_cmd LOGNAME CMD...: record, run under a timeout
    local name=$1
    shift
    CMDS+=("$*")
    log "$*"
    timeout --kill-after=10 1200 "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
    local rc=$?
    [ $rc -eq 0 ] || { log "failed ($rc): $*"; tail -5 "$OUT/$name.err" >&2; }
    return $rc
}

fail=0
for P in $HOSTS; do
    if [ "$COLL" = 1 ]; then
        run_cmd "coll-default-p$P" "$CL" mpirun -np "$P" "$BIN" coll \
            --coll allreduce,allgather,alltoall -b 1Ki -e "$MAX" -f 4 \
            -n "$ITERS" -w 3 --json --out "$OUT/coll-default" || fail=1
        run_cmd "coll-fixed-p$P" "$CL" mpirun "${FIXED[@]}" -np "$P" "$BIN" \
            coll --coll allreduce,allgather,alltoall -b 1Ki -e "$MAX" -f 4 \
            -n "$ITERS" -w 3 --json --out "$OUT/coll-fixed" || fail=1
    fi
    if [ "$TRAIN" = 1 ]; then
        for opt in lamb slamb; do
            for v in default eager; do
                sfx='' mca=()
                [ $v = eager ] && sfx=-eager mca=("${EAGER[@]}")
                run_cmd "train-$opt-p$P$sfx" "$CL" mpirun "${mca[@]}" \
                    -np "$P" "$BIN" train --optim "$opt" \
                    --global-batch $((P * LB)) --max-steps "$STEPS" \
                    --test-subset 1000 --stall-timeout 120 \
                    --trace-all-ranks --json \
                    --out "$OUT/train-$opt-p$P$sfx" || fail=1
            done
        done
    fi
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
"$PY" - "$OUT/env.json" <<EOF
import json, sys
cmds = $(printf '%s\n' "${CMDS[@]}" | "$PY" -c 'import json,sys; print(json.dumps([l.rstrip("\n") for l in sys.stdin]))')
json.dump({"hosts": $hosts, "rate": "$rate", "rate_bps": $rate_bps,
           "burst": $burst, "limit": $limit, "port_limit": $port_limit,
           "mtu": $mtu, "delay_us": $delay_us, "tcp_cc": "$tcp_cc",
           "tsq": $tsq, "wmem": "$wmem", "hop_us": $hop,
           "membw_gbs": $membw, "load_before": "$load_before",
           "load_after": "$load_after",
           "git": "$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null)",
           "commands": cmds}, open(sys.argv[1], "w"), indent=1)
EOF
"$CL" down
trap - EXIT
"$PY" "$HERE/compare.py" "$OUT" --bin "$BIN" || fail=1
log "results in $OUT (validation.md)"
exit $fail
