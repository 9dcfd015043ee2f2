#!/usr/bin/env bash
# run.sh - lbscale on a cluster under mpirun: the kernels on one node,
# the collective benchmark on one node and across every node, a short
# training run, then `sim calibrate` and a sweep to the cluster's size.
# docs/cluster.md explains each step and setting.
#
#   bench/cluster/run.sh OUTDIR
#
# Set by the environment (defaults in brackets):
#   LBS             the lbscale binary, on a path every node sees
#                   [build/lbscale]
#   HOSTFILE        Open MPI hostfile ("node01 slots=8" per line; see
#                   hostfile.example); empty: the launcher's own (Slurm's
#                   allocation, or MPIRUN's) [empty]
#   NODES           nodes to run on [2]
#   RANKS_PER_NODE  ranks (= GPUs with BACKEND=nccl) per node [8]
#   FABRIC          ib | tcp | none: the Open MPI MCA and NCCL settings
#                   below; none leaves them to MPIRUN [tcp]
#   IFACE           the Ethernet interface for TCP and for NCCL's
#                   bootstrap [eth0]
#   IB_HCA          NCCL_IB_HCA for FABRIC=ib [mlx5]
#   BACKEND         lbscale coll --backend: mpi (CPU) or nccl (GPU) [mpi]
#   MINBYTES, MAXBYTES  smallest and largest collective size [1K, 256M]
#   SIM_NODES       nodes of the cluster to simulate [NODES]
#   SIM_FABRIC      sim calibrate --fabric [flat]
#   MODEL, OPTIM    the sweep's model and optimizers [bert-large, lamb,slamb]
#   MPIRUN          the launcher [mpirun]
#   MPI_EXTRA       more mpirun options (e.g. forced algorithms) [empty]
#   SKIP            steps to leave out, of: kernels train [empty]
set -u
OUT=${1:?usage: run.sh OUTDIR   (settings: see the header)}
LBS=${LBS:-build/lbscale}
NODES=${NODES:-2}
RPN=${RANKS_PER_NODE:-8}
FABRIC=${FABRIC:-tcp}
IFACE=${IFACE:-eth0}
IB_HCA=${IB_HCA:-mlx5}
BACKEND=${BACKEND:-mpi}
MINBYTES=${MINBYTES:-1K}
MAXBYTES=${MAXBYTES:-256M}
SIM_NODES=${SIM_NODES:-$NODES}
SIM_FABRIC=${SIM_FABRIC:-flat}
MODEL=${MODEL:-bert-large}
OPTIM=${OPTIM:-lamb,slamb}
read -r -a MPIRUN <<<"${MPIRUN:-mpirun}"
read -r -a EXTRA <<<"${MPI_EXTRA:-}"
SKIP=" ${SKIP:-} "

die() { echo "run.sh: $*" >&2; exit 2; }
[ -x "$LBS" ] || die "LBS=$LBS is not an executable lbscale"
case $FABRIC in ib|tcp|none) ;; *) die "FABRIC must be ib, tcp or none" ;; esac
case $NODES$RPN in *[!0-9]*) die "NODES and RANKS_PER_NODE are counts" ;; esac
mkdir -p "$OUT" || die "cannot create $OUT"

# Open MPI settings per fabric (Open MPI 4.1; 5.x names vader "sm"):
#   ib   UCX for point-to-point and one-sided (pml/osc ucx), which drives
#        InfiniBand and RoCE; the old openib BTL off.
#   tcp  ob1 over TCP between nodes, shared memory inside a node, on one
#        interface (else Open MPI tries every one, docker0 included).
# Ranks: RPN per node in blocks, each bound to its cores; --report-
# bindings prints where each landed (check it against `lstopo`).
# NCCL (BACKEND=nccl): NCCL_SOCKET_IFNAME for its bootstrap; ib: the HCAs
# and GPUDirect RDMA up to the host bridge; tcp: InfiniBand off and more
# sockets per connection.  NCCL_DEBUG=INFO logs the rings, trees and the
# NIC each GPU uses.
MCA=()
case $FABRIC in
    ib) MCA=(--mca pml ucx --mca osc ucx --mca btl ^openib
             -x NCCL_IB_HCA="$IB_HCA" -x NCCL_SOCKET_IFNAME="$IFACE"
             -x NCCL_NET_GDR_LEVEL=PHB -x NCCL_DEBUG=INFO
             -x NCCL_DEBUG_SUBSYS=INIT,GRAPH,NET) ;;
    tcp) MCA=(--mca pml ob1 --mca btl tcp,self,vader
              --mca btl_tcp_if_include "$IFACE"
              --mca oob_tcp_if_include "$IFACE"
              -x NCCL_IB_DISABLE=1 -x NCCL_SOCKET_IFNAME="$IFACE"
              -x NCCL_SOCKET_NTHREADS=4 -x NCCL_NSOCKS_PERTHREAD=4
              -x NCCL_DEBUG=INFO) ;;
esac
PLACE=(--map-by "ppr:$RPN:node")
[ "$FABRIC" = none ] || PLACE+=(--bind-to core --report-bindings)
HF=()
[ -n "${HOSTFILE:-}" ] && HF=(--hostfile "$HOSTFILE")

# mpi NP ARGS...: lbscale ARGS on NP ranks, RPN per node
mpi() {
    local np=$1
    shift
    echo "+ ${MPIRUN[*]} -np $np $*" >&2
    "${MPIRUN[@]}" "${HF[@]}" -np "$np" "${PLACE[@]}" "${MCA[@]}" \
        "${EXTRA[@]}" "$LBS" "$@"
}

set -e
# 1. the kernels: one process on one node (memory bandwidth, one
#    optimizer step); `srun -N$NODES --ntasks-per-node=1` runs them on
#    every node to find a slow one
case $SKIP in *" kernels "*) ;; *)
    "$LBS" stream --out "$OUT/kernels" >/dev/null
    "$LBS" optim --optim lamb --elements 16M --out "$OUT/kernels" >/dev/null ;;
esac
# 2. collectives on one node (the link inside a node) and across all
#    nodes (the network); sim calibrate needs both to tell them apart
COLL=(coll --coll allreduce,allgather,alltoall --backend "$BACKEND"
      -b "$MINBYTES" -e "$MAXBYTES" -f 4 --json)
mpi "$RPN" "${COLL[@]}" --out "$OUT/coll-1node" >/dev/null
mpi $((NODES * RPN)) "${COLL[@]}" --out "$OUT/coll-${NODES}nodes" >/dev/null
# 3. a short data-parallel training run across the nodes
case $SKIP in *" train "*) ;; *)
    mpi $((NODES * RPN)) train --optim lamb --global-batch $((NODES * RPN * 64)) \
        --epochs 1 --out "$OUT/train" >/dev/null ;;
esac
# 4. the platform, sized to the cluster, and a sweep up to it
"$LBS" sim calibrate "$OUT/coll-1node/coll.jsonl" \
    "$OUT/coll-${NODES}nodes/coll.jsonl" --name cluster \
    --nodes "$SIM_NODES" --gpus-per-node "$RPN" --fabric "$SIM_FABRIC" \
    --out "$OUT/platform-cluster.json" | tee "$OUT/calibrate.txt"
"$LBS" sim sweep --platform "$OUT/platform-cluster.json" --model "$MODEL" \
    --optim "$OPTIM" --gpus "$RPN..$((SIM_NODES * RPN))" --out "$OUT/sim" |
    tee "$OUT/sweep.txt"
