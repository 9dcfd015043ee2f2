# netns_lib.sh - what the emulated-cluster tests share, sourced after BIN
# and CL (tools/emulate/cluster.sh) are set:  netns_setup PREFIX NAME
# skips (77) unless root with Open MPI's mpirun, unshare and iproute2;
# tears down the namespaces PREFIX<pid>-* of earlier runs that were
# killed; exports this run's LBS_EMU_PREFIX / LBS_EMU_STATE; makes TMP
# (lbs-NAME.XXXXXX) and traps EXIT to take the cluster down and remove TMP
# (copied to $KEEP_TMP first when set).  Defines skip and fail.
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

netns_setup() {  # netns_setup PREFIX NAME
    local prefix=$1 name=$2 ns pid
    [ "$(id -u)" -eq 0 ] || skip "not root: network namespaces and tc need CAP_NET_ADMIN"
    command -v mpirun >/dev/null 2>&1 || skip "mpirun not found"
    mpirun --version 2>/dev/null | grep -q "Open MPI" ||
        skip "cluster.sh drives Open MPI's mpirun (plm_rsh_agent); this mpirun is not Open MPI"
    command -v unshare >/dev/null 2>&1 || skip "unshare (util-linux) not found"
    IP=$(command -v ip 2>/dev/null || echo /usr/sbin/ip)
    [ -x "$IP" ] || skip "iproute2 'ip' not found"
    # namespaces of earlier runs whose process is gone (a run killed with
    # SIGKILL cannot clean up after itself)
    for ns in $("$IP" netns list 2>/dev/null | awk '{print $1}' |
                grep -E "^$prefix[0-9]+-(sw|h[0-9]+)\$"); do
        pid=${ns#"$prefix"}
        pid=${pid%%-*}
        kill -0 "$pid" 2>/dev/null && continue
        LBS_EMU_PREFIX=$prefix$pid LBS_EMU_STATE=/run/lbscale-emu-$prefix$pid "$CL" down
    done
    export LBS_EMU_PREFIX=$prefix$$
    export LBS_EMU_STATE=/run/lbscale-emu-$LBS_EMU_PREFIX
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/lbs-$name.XXXXXX") || exit 1
    trap netns_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

netns_cleanup() {
    "$CL" down
    [ -n "${KEEP_TMP:-}" ] && cp -r "$TMP" "$KEEP_TMP"
    rm -rf "$TMP"
}
