#!/usr/bin/env bash
# gpu_nccl.sh BINARY - the nccl comm backend end to end: `lbscale coll
# --backend nccl` over every GPU of this machine (one rank per GPU under
# mpirun; one GPU, or no mpirun: one rank alone), every collective it has
# at sizes 8 B .. 4 MiB, each checked exactly (#wrong = 0, else exit 1).
# Exit 77 (skipped) without a GPU or without an NCCL (or MPI) build.
set -u
BIN=${1:?usage: gpu_nccl.sh LBSCALE_BINARY}
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${ngpu:-0}" -lt 1 ]; then
    echo "SKIP: no GPU (nvidia-smi -L lists none)"
    exit 77
fi
ARGS=(coll --backend nccl -b 8 -e 4M -f 16 -n 3 -w 1 --no-save)
ERR=$(mktemp) || exit 1
trap 'rm -f "$ERR"' EXIT
MPIRUN=$(command -v mpirun 2>/dev/null)
if [ "$ngpu" -gt 1 ] && [ -n "$MPIRUN" ]; then
    FLAGS=()
    if "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI"; then
        export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
        FLAGS=(--oversubscribe --allow-run-as-root)
    fi
    echo "# $MPIRUN ${FLAGS[*]} -np $ngpu $BIN ${ARGS[*]}"
    timeout --kill-after=10 240 "$MPIRUN" "${FLAGS[@]}" -np "$ngpu" \
        "$BIN" "${ARGS[@]}" 2>"$ERR"
else
    echo "# $BIN ${ARGS[*]}   (1 rank)"
    timeout --kill-after=10 240 "$BIN" "${ARGS[@]}" 2>"$ERR"
fi
rc=$?
cat "$ERR" >&2
# no nccl backend in this build: no NCCL, or no MPI to pass its unique id
if [ $rc -eq 2 ] && grep -qE "built without (NCCL|MPI)" "$ERR"; then
    echo "SKIP: $(head -n1 "$ERR")"
    exit 77
fi
[ $rc -eq 124 ] || [ $rc -eq 137 ] && echo "FAIL: did not finish in 240 s" >&2
exit $rc
