#!/bin/sh
# run_mpi.sh PROGRAM NP [ARGS...] - run a multi-rank test under mpirun.
#
# Exit 77 (meson: skipped) when mpirun is not installed.  The run is under
# `timeout`, so a deadlocked collective fails the test instead of blocking
# CI.  The program also gets NP as its first argument, to check the size.
# Open MPI needs --oversubscribe to put more ranks than cores on a small
# machine and --allow-run-as-root in containers; other MPIs get neither.
PROG=${1:?usage: run_mpi.sh PROGRAM NP [ARGS...]}
NP=${2:?usage: run_mpi.sh PROGRAM NP [ARGS...]}
shift 2
TIMEOUT=${LBS_MPI_TIMEOUT:-120}

MPIRUN=$(command -v mpirun 2>/dev/null)
if [ -z "$MPIRUN" ]; then
    echo "SKIP: mpirun not found"
    exit 77
fi
if "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI"; then
    # shared memory only: no network probing, no hang on missing interfaces
    export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
    export OMPI_MCA_rmaps_base_oversubscribe=1
    FLAGS="--oversubscribe --allow-run-as-root"
else
    FLAGS=
fi
echo "# $MPIRUN $FLAGS -np $NP $PROG $NP $*"
# --kill-after: mpirun that ignores SIGTERM is killed 10 s later
timeout --kill-after=10 "$TIMEOUT" "$MPIRUN" $FLAGS -np "$NP" "$PROG" "$NP" "$@"
rc=$?
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "FAIL: $PROG on $NP ranks did not finish within ${TIMEOUT}s" >&2
    exit 1
fi
exit $rc
