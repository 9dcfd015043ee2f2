# phase.sh - sourced by the study drivers (convergence-*.sh, decentral-*.sh):
#   phase NAME SUITE [lbscale suite args...]
# runs SUITE into OUT/NAME under $LOCK, or resumes it when OUT/NAME holds an
# interrupted run, and marks it done (OUT/NAME.done: the next call skips
# it).  A suite with no entries is done at once.  A failed entry (a
# diverged run: exit 1) does not stop the study, study.py reports it as
# diverged or failed; anything else (exit 2: bad input) stops the driver.
# The time each phase took, waiting for the lock included, goes to
# OUT/driver.log.
#   extend_phase GRID NAME [lbscale suite args...]
# writes OUT/NAME-suite.json with tools/study.py extend over OUT/GRID (once)
# and runs it as phase NAME.
#   study_plot DIR SCRIPT [NAME=VALUE...]
# draws plots/SCRIPT.gp with gnuplot running in DIR, so that no path is
# ever inside the gnuplot code (the way `lbscale plot` does it): a study
# directory named x'; system("...") is only a directory.  Each VALUE is
# passed as a gnuplot string with ' \ ` $ @ and control characters
# replaced by _ (they could end the string or start a command).
# Source it right after setting ROOT: it sets the drivers' common BIN
# (LBSCALE or build/lbscale), PY, ST (tools/study.py) and LOCK; phase and
# extend_phase need OUT when called.
BIN=${LBSCALE:-$ROOT/build/lbscale}
PY=/usr/bin/python3
ST="$ROOT/tools/study.py"
LOCK="flock /tmp/lbscale-heavy.lock"

phase() {
    local name=$1 suite=$2 rc=0
    shift 2
    [ -f "$OUT/$name.done" ] && return 0
    if ! grep -q '"name"' "$suite"; then
        touch "$OUT/$name.done"
        return 0
    fi
    local t0=$SECONDS
    if [ -f "$OUT/$name/suite.jsonl" ]; then
        $LOCK "$BIN" suite "$suite" --resume "$OUT/$name" "$@" \
            >"$OUT/$name.log" 2>&1 || rc=$?
    else
        $LOCK "$BIN" suite "$suite" --out "$OUT/$name" "$@" \
            >"$OUT/$name.log" 2>&1 || rc=$?
    fi
    [ $rc -eq 0 ] || [ $rc -eq 1 ] || exit $rc
    echo "$name: $((SECONDS - t0)) s (waiting for the lock included)" \
        >>"$OUT/driver.log"
    touch "$OUT/$name.done"
}

extend_phase() {
    [ -f "$OUT/$2-suite.json" ] ||
        "$PY" "$ST" extend "$OUT/$1" --out "$OUT/$2-suite.json"
    phase "$2" "$OUT/$2-suite.json" "${@:3}"
}

study_plot() {
    local dir=$1 script=$2 a="" kv v
    shift 2
    for kv in "$@"; do
        v=$(printf '%s' "${kv#*=}" | tr -c '[:print:]' '_' | tr "'\\\\\`\$@" '_____')
        a+="${kv%%=*}='$v'; "
    done
    (cd "$dir" && gnuplot -e "$a" "$ROOT/plots/$script.gp")
}
