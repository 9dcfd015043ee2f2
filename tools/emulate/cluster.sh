#!/usr/bin/env bash
# cluster.sh - an emulated cluster of Linux network namespaces for lbscale.
#
#   cluster.sh up [-n HOSTS] [--slots R] [--rate RATE] [--burst BYTES] [--mtu MTU]
#                 [--limit BYTES] [--port-limit BYTES] [--delay US]
#                 [--tsq BYTES] [--wmem-max BYTES]
#   cluster.sh mpirun [mpirun options] -np P PROGRAM [args...]
#   cluster.sh exec H CMD...        run CMD inside host H's namespace
#   cluster.sh status               settings and qdisc counters
#   cluster.sh platform [FILE]      the lbscale-platform JSON of this cluster
#   cluster.sh down                 remove everything (idempotent)
#   cluster.sh run [up options] -- CMD...
#                                   up, CMD (with $LBS_EMU = this script and
#                                   the prefix exported), down, even when
#                                   CMD fails or is interrupted
#
# Topology: HOSTS (2..8, default 2) namespaces $PFX-h0..h{N-1} (PFX from
# $LBS_EMU_PREFIX, default "lbs"), each with one veth "eth0" at
# 10.77.0.(i+1)/24, whose peer "p<i>" sits in the switch namespace $PFX-sw
# on a Linux bridge: a flat, non-blocking switch.  Both directions of
# every host link are shaped by a tc token bucket (tbf) at RATE (default
# 1gbit): on eth0 (the host's upload) and on p<i> (its download), i.e. a
# full-duplex NIC of RATE per direction.
#
# Why these defaults (measured on a 2-core VM whose kernel has tbf and htb
# but no netem, fq or fq_codel):
#   --mtu 9000      jumbo frames: at MTU 1500, two shaped directions at
#                   1 Gb/s cost ~2/3 of both cores in softirq and reached
#                   ~70% of the rate; at 9000 they reach the rate.
#   --burst 2 frames (18028 B): 1 frame lost ~20% of the rate to timer
#                   slack; larger buckets let more of a message through at
#                   memory speed (messages up to ~burst are not slowed).
#   --limit / --port-limit 1 MiB: queue per qdisc; no drops seen.
#   --delay         needs netem; refused with the reason where missing.
#   --tsq / --wmem-max  optional per-namespace TCP limits
#                   (tcp_limit_output_bytes, tcp_wmem max); default: the
#                   machine's.
#
# MPI: `cluster.sh mpirun` runs Open MPI's mpirun inside $PFX-h0 with a
# hostfile of the host addresses (slots=R each, default 1: --slots 2 puts
# two ranks on every host, a multi-GPU node's layout; ranks of one host
# share its namespace, its NIC and its hostname) and a plm_rsh_agent that
# starts each remote orted with `ip netns exec $PFX-hI unshare --uts`
# (hostname $PFX-hI), so every rank lives in its own host namespace and
# all MPI traffic (pml ob1, btl tcp, oob tcp) crosses the shaped links.
# Ranks are not bound to cores (each orted would pin its one rank to core
# 0 of the shared machine) and yield when idle (mpi_yield_when_idle=1
# unless set: every "host" thinks it has all cores, so Open MPI does not
# see that 4 ranks on 2 cores oversubscribe them).
#
# State (hostfile, agent, settings): $LBS_EMU_STATE, default
# /run/lbscale-emu-$PFX.  Needs root, iproute2 (ip, tc), util-linux
# unshare, the veth and bridge link types and the tbf qdisc; `up` checks
# them and exits 77 with the reason when one is missing (the tests' skip
# code).  `down` kills what still runs inside the namespaces (by pid) and
# deletes them.
set -u
export LC_ALL=C

PFX=${LBS_EMU_PREFIX:-lbs}
STATE=${LBS_EMU_STATE:-/run/lbscale-emu-$PFX}
NET=10.77.0
SW=$PFX-sw
TC=$(command -v tc 2>/dev/null || echo /usr/sbin/tc)
IP=$(command -v ip 2>/dev/null || echo /usr/sbin/ip)

die() { echo "cluster.sh: $*" >&2; exit 1; }
skip() { echo "cluster.sh: cannot build the emulated cluster: $*" >&2; exit 77; }

host_ns() { echo "$PFX-h$1"; }
host_ip() { echo "$NET.$(($1 + 1))"; }

# ---- down --------------------------------------------------------------
down() {
    local ns
    # Kill whatever still runs inside our namespaces (a crashed mpirun's
    # orteds), by pid, then delete the namespaces; veths and the bridge go
    # with them.
    for ns in $("$IP" netns list 2>/dev/null | awk '{print $1}' |
                grep -E "^$PFX-(sw|h[0-9]+)\$"); do
        local pids
        pids=$("$IP" netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
        "$IP" netns del "$ns" 2>/dev/null ||
            echo "cluster.sh: could not delete namespace $ns" >&2
    done
    rm -rf "$STATE"
    return 0
}

# ---- up ----------------------------------------------------------------
RATE=1gbit
BURST=
DELAY_US=0
HOSTS=2
SLOTS=1
MTU=9000
LIMIT=
PORT_LIMIT=
TSQ=
WMEM=

parse_up() {
    while [ $# -gt 0 ]; do
        case $1 in
            -n|--hosts) HOSTS=${2:?}; shift 2 ;;
            --slots) SLOTS=${2:?}; shift 2 ;;
            --rate) RATE=${2:?}; shift 2 ;;
            --burst) BURST=${2:?}; shift 2 ;;
            --delay) DELAY_US=${2:?}; shift 2 ;;
            --mtu) MTU=${2:?}; shift 2 ;;
            --limit) LIMIT=${2:?}; shift 2 ;;
            --port-limit) PORT_LIMIT=${2:?}; shift 2 ;;
            --tsq) TSQ=${2:?}; shift 2 ;;
            --wmem-max) WMEM=${2:?}; shift 2 ;;
            *) echo "cluster.sh: up: unknown option '$1'" >&2; exit 2 ;;
        esac
    done
    case $HOSTS in 2|3|4|5|6|7|8) ;; *)
        echo "cluster.sh: up: -n must be 2..8 (got '$HOSTS')" >&2; exit 2 ;;
    esac
    case $SLOTS in 1|2|3|4) ;; *)
        echo "cluster.sh: up: --slots must be 1..4 (got '$SLOTS')" >&2; exit 2 ;;
    esac
    case $DELAY_US in ''|*[!0-9]*)
        echo "cluster.sh: up: --delay is whole microseconds (got '$DELAY_US')" >&2
        exit 2 ;;
    esac
}

# rate_bps RATE: bits per second of a tc rate (kbit, mbit, gbit, bit)
rate_bps() {
    awk -v r="$1" 'BEGIN {
        n = r + 0; u = tolower(r); sub(/^[0-9.]+/, "", u)
        m["bit"] = 1; m["kbit"] = 1e3; m["mbit"] = 1e6; m["gbit"] = 1e9
        if (!(u in m) || n <= 0) { print "bad"; exit }
        printf "%.0f\n", n * m[u] }'
}

preflight() {
    [ "$(id -u)" -eq 0 ] || skip "not root (needs CAP_NET_ADMIN for ip netns and tc)"
    [ -x "$IP" ] || skip "iproute2 'ip' not found"
    [ -x "$TC" ] || skip "tc not found"
    local t=$PFX-probe$$
    "$IP" netns add "$t" 2>/dev/null || skip "'ip netns add' failed (no permission or no network namespaces)"
    local why=
    if ! "$IP" -n "$t" link add name pa type veth peer name pb 2>/dev/null; then
        why="the kernel has no veth link type"
    elif ! "$IP" -n "$t" link add name probebr type bridge 2>/dev/null; then
        why="the kernel has no bridge link type"
    elif ! "$TC" -n "$t" qdisc add dev pa root tbf rate 1gbit burst 16kb \
            limit 1mb 2>/dev/null; then
        why="the kernel has no tbf qdisc (sch_tbf)"
    elif [ "$DELAY_US" -gt 0 ] && ! "$TC" -n "$t" qdisc add dev pb root \
            netem delay 1ms 2>/dev/null; then
        why="--delay needs the netem qdisc (sch_netem), which this kernel lacks"
    fi
    "$IP" netns del "$t" 2>/dev/null
    [ -z "$why" ] || skip "$why"
}

# shape NS DEV LIMIT: tbf at RATE (plus netem delay when asked) on DEV's
# egress, queue of LIMIT bytes
shape() {
    local ns=$1 dev=$2 LIMIT=$3
    if [ "$DELAY_US" -gt 0 ]; then
        "$TC" -n "$ns" qdisc add dev "$dev" root handle 1: tbf rate "$RATE" \
            burst "$BURST" limit "$LIMIT" || return 1
        "$TC" -n "$ns" qdisc add dev "$dev" parent 1:1 handle 10: netem \
            delay "${DELAY_US}us" limit 100000 || return 1
    else
        "$TC" -n "$ns" qdisc add dev "$dev" root tbf rate "$RATE" \
            burst "$BURST" limit "$LIMIT" || return 1
    fi
}

up() {
    parse_up "$@"
    local bps
    bps=$(rate_bps "$RATE")
    [ "$bps" != bad ] || { echo "cluster.sh: up: --rate '$RATE' is not N[k|m|g]bit" >&2; exit 2; }
    # Defaults (see the header): burst 2 frames, host queue 1 MB, switch
    # port queue 1 MB.
    [ -n "$BURST" ] || BURST=$((2 * (MTU + 14)))
    [ -n "$LIMIT" ] || LIMIT=1048576
    [ -n "$PORT_LIMIT" ] || PORT_LIMIT=1048576
    preflight
    "$IP" netns list 2>/dev/null | awk '{print $1}' | grep -qx "$SW" &&
        die "a cluster with prefix '$PFX' is up already (cluster.sh down first, or set LBS_EMU_PREFIX)"
    mkdir -p "$STATE" || die "cannot create $STATE"

    "$IP" netns add "$SW" || { down; die "ip netns add $SW failed"; }
    "$IP" -n "$SW" link add name br0 type bridge &&
    "$IP" -n "$SW" link set br0 up &&
    "$IP" -n "$SW" link set lo up || { down; die "bridge setup failed"; }
    : >"$STATE/hostfile"
    : >"$STATE/hosts"
    local i
    for ((i = 0; i < HOSTS; i++)); do
        local ns addr
        ns=$(host_ns $i) addr=$(host_ip $i)
        "$IP" netns add "$ns" &&
        "$IP" -n "$SW" link add "p$i" type veth peer name eth0 netns "$ns" &&
        "$IP" -n "$SW" link set "p$i" mtu "$MTU" &&
        "$IP" -n "$ns" link set eth0 mtu "$MTU" &&
        "$IP" -n "$SW" link set "p$i" master br0 &&
        "$IP" -n "$SW" link set "p$i" up &&
        "$IP" -n "$ns" addr add "$addr/24" dev eth0 &&
        "$IP" -n "$ns" link set eth0 up &&
        "$IP" -n "$ns" link set lo up &&
        shape "$ns" eth0 "$LIMIT" && shape "$SW" "p$i" "$PORT_LIMIT" ||
            { down; die "setting up host $i ($ns, $addr) failed"; }
        # per-namespace TCP settings (only when asked)
        if [ -n "$TSQ" ]; then
            "$IP" netns exec "$ns" sysctl -q -w \
                net.ipv4.tcp_limit_output_bytes="$TSQ" >/dev/null ||
                { down; die "cannot set tcp_limit_output_bytes in $ns"; }
        fi
        if [ -n "$WMEM" ]; then
            "$IP" netns exec "$ns" sysctl -q -w \
                net.ipv4.tcp_wmem="4096 16384 $WMEM" >/dev/null ||
                { down; die "cannot set tcp_wmem in $ns"; }
        fi
        echo "$addr slots=$SLOTS" >>"$STATE/hostfile"
        echo "$addr $ns" >>"$STATE/hosts"
    done
    cat >"$STATE/settings" <<EOF
hosts=$HOSTS
slots=$SLOTS
rate=$RATE
rate_bps=$bps
burst=$BURST
limit=$LIMIT
port_limit=$PORT_LIMIT
mtu=$MTU
delay_us=$DELAY_US
tsq=$("$IP" netns exec "$(host_ns 0)" sysctl -n net.ipv4.tcp_limit_output_bytes)
wmem="$("$IP" netns exec "$(host_ns 0)" sysctl -n net.ipv4.tcp_wmem | tr '\t' ' ')"
tcp_cc=$("$IP" netns exec "$(host_ns 0)" sysctl -n net.ipv4.tcp_congestion_control)
prefix=$PFX
EOF
    # plm_rsh_agent: Open MPI calls it as `agent HOST COMMAND...` to start
    # an orted on HOST; run that command in HOST's namespace.
    cat >"$STATE/agent.sh" <<EOF
#!/bin/sh
# generated by cluster.sh: start an orted inside the namespace of \$1
host=\$1
shift
ns=\$(awk -v h="\$host" '\$1 == h { print \$2 }' "$STATE/hosts")
[ -n "\$ns" ] || { echo "agent.sh: unknown host \$host" >&2; exit 1; }
exec "$IP" netns exec "\$ns" unshare --uts sh -c 'hostname "\$0"; exec sh -c "\$1"' "\$ns" "\$*"
EOF
    chmod +x "$STATE/agent.sh"
    # Wait until the bridge forwards (no STP by default: immediate; still,
    # check one round trip so a broken setup fails here, not in mpirun).
    if ! "$IP" netns exec "$(host_ns 0)" timeout 5 bash -c \
            "exec 3<>/dev/tcp/$(host_ip 1)/9" 2>/dev/null; then
        # port 9 is closed: a refused connection still proves the path
        "$IP" netns exec "$(host_ns 0)" timeout 5 bash -c \
            "exec 3<>/dev/tcp/$(host_ip 1)/9" 2>&1 | grep -q -i refused ||
            { down; die "host 0 cannot reach host 1 through the bridge"; }
    fi
    echo "cluster.sh: up: $HOSTS hosts $(host_ip 0)..$(host_ip $((HOSTS - 1))), $RATE per direction, burst $BURST B, delay ${DELAY_US} us (state $STATE)" >&2
}

# need_up: read the settings `up` wrote (hosts, rate, rate_bps, burst,
# limit, port_limit, mtu, delay_us, tsq, wmem, tcp_cc, prefix)
need_up() {
    [ -f "$STATE/settings" ] || die "no cluster '$PFX' is up (cluster.sh up)"
    # shellcheck disable=SC1091
    . "$STATE/settings"
}

# ---- mpirun --------------------------------------------------------------
emu_mpirun() {
    need_up
    local mpirun xs=()
    mpirun=$(command -v mpirun 2>/dev/null) || die "mpirun not found"
    [ -n "${LBSCALE_RESULTS:-}" ] && xs=(-x LBSCALE_RESULTS)
    # Every host "has" the machine's cores, so Open MPI sees no
    # oversubscription; with more ranks than cores, spinning ranks starve
    # each other (4 ranks on 2 cores ran at ~half the link rate): yield.
    export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
    exec "$IP" netns exec "$(host_ns 0)" unshare --uts sh -c \
        'hostname "$0"; exec "$@"' "$(host_ns 0)" \
        "$mpirun" --allow-run-as-root \
        --hostfile "$STATE/hostfile" \
        --mca plm_rsh_agent "$STATE/agent.sh" \
        --mca plm_rsh_no_tree_spawn 1 \
        --mca pml ob1 --mca btl tcp,self \
        --mca btl_tcp_if_include "$NET.0/24" \
        --mca oob_tcp_if_include "$NET.0/24" \
        --mca osc ^ucx \
        --mca orte_keep_fqdn_hostnames 1 \
        --bind-to none \
        -x OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" \
        "${xs[@]}" "$@"
}

# ---- platform ------------------------------------------------------------
# The lbscale-platform JSON of the cluster.  Every number comes from the tc
# settings or from protocol header sizes; the per-step latency is an input
# ($LBS_EMU_HOP_US, e.g. a plain TCP ping-pong measured by emu_compare.py),
# never fitted to lbscale coll.
# shellcheck disable=SC2154  # the settings' variables, see need_up
platform() {
    need_up
    local hop_us=${LBS_EMU_HOP_US:-20} base_us=${LBS_EMU_BASE_US:-0}
    local hop_src=${LBS_EMU_HOP_SRC:-"stated assumption (kernel TCP, as eth-25g)"}
    # Payload share of what tbf counts: tbf charges the skb length = IP
    # packet + 14-byte Ethernet header; a full TCP segment carries MTU - 52
    # bytes (IP 20 + TCP 20 + timestamp option 12): (MTU-52) / (MTU+14).
    local gbps bwf
    gbps=$(awk -v b="$rate_bps" 'BEGIN { printf "%.6g", b / 1e9 }')
    bwf=$(awk -v m="$mtu" 'BEGIN { printf "%.4f", (m - 52) / (m + 14) }')
    local hop_tot
    hop_tot=$(awk -v h="$hop_us" -v d="$delay_us" 'BEGIN { printf "%.6g", h + d }')
    cat <<EOF
{
  "format": "lbscale-platform", "version": 1,
  "name": "emu-$rate-$hosts",
  "description": "Emulated cluster (tools/emulate/cluster.sh): $hosts network namespaces, one MPI rank each, on a Linux bridge; every host link shaped by tc tbf at $rate per direction (burst $burst B), netem delay $delay_us us; Open MPI 4.1 ob1/btl tcp",
  "sources": [
    "node.nic_gbps: the tc tbf rate ($rate = $gbps Gb/s) on each host veth and on its bridge port",
    "protocols.Simple.bw_factor $bwf: TCP payload per byte tbf charges at MTU $mtu ($((mtu - 52)) B of payload with timestamps per $((mtu + 14)) B skb: IP packet + Ethernet header)",
    "protocols.Simple.inter_hop_us $hop_tot: per message step, $hop_us us software latency ($hop_src) + $delay_us us netem delay",
    "protocols.Simple.base_lat_us $base_us: per-call overhead (stated)",
    "fabric: one Linux bridge, non-blocking (flat); gpu.*: placeholders, the model gives measured layer times",
    "algorithms: those Open MPI's tuned component implements for these collectives (no NCCL tree, no hierarchy: one rank per host)"
  ],
  "gpu": {"name": "cpu-core", "peak_tflops": ${LBS_EMU_TFLOPS:-0.05}, "mem_bw_gbs": ${LBS_EMU_MEMBW_GBS:-10}},
  "node": {"gpus": 1, "intra": "none (one rank per host)", "nics": 1, "nic_gbps": $gbps},
  "fabric": {"kind": "flat", "lat_us": 0},
  "max_gpus": $hosts,
  "protocols": {"Simple": {"base_lat_us": $base_us, "intra_hop_us": 0, "inter_hop_us": $hop_tot, "bw_factor": $bwf}},
  "algorithms": ["ring", "rhd", "allgather-ring", "allgather-rd", "allgather-bruck",
                 "alltoall-pairwise", "alltoall-bruck", "bcast-pipeline", "bcast-binomial",
                 "barrier-dissemination", "neighbor-direct"]
}
EOF
}

status() {
    need_up
    cat "$STATE/settings"
    local i
    for ((i = 0; i < hosts; i++)); do
        local ns
        ns=$(host_ns $i)
        echo "== $ns $(host_ip $i)"
        "$TC" -s -n "$ns" qdisc show dev eth0 | sed 's/^/  eth0: /'
        "$TC" -s -n "$SW" qdisc show dev "p$i" | sed 's/^/  p'"$i"': /'
    done
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
    up) up "$@" ;;
    down) down ;;
    mpirun) emu_mpirun "$@" ;;
    exec)
        need_up
        h=${1:?usage: cluster.sh exec H CMD...}
        shift
        exec "$IP" netns exec "$(host_ns "$h")" "$@" ;;
    status) status ;;
    platform)
        if [ $# -gt 0 ]; then
            out=$1
            platform >"$out.tmp.$$" && mv "$out.tmp.$$" "$out" ||
                { rm -f "$out.tmp.$$"; exit 1; }
        else
            platform
        fi ;;
    run)
        args=()
        while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
        [ "${1:-}" = "--" ] || { echo "cluster.sh: run: missing '--' before the command" >&2; exit 2; }
        shift
        [ $# -gt 0 ] || { echo "cluster.sh: run: no command" >&2; exit 2; }
        trap 'down' EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
        ( up "${args[@]}" ) || exit $?
        LBS_EMU="$0" LBS_EMU_PREFIX=$PFX LBS_EMU_STATE=$STATE "$@"
        exit $? ;;
    -h|--help|help|'')
        sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'
        [ -n "$cmd" ] ;;
    *) echo "cluster.sh: unknown command '$cmd' (up, down, mpirun, exec, status, platform, run)" >&2
       exit 2 ;;
esac
