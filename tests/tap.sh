# tap.sh - the TAP harness of the CLI test scripts, sourced once BIN is
# set: a scratch TOP removed on exit, ok / skip / not_ok and tap_end; and
# run, good and bad for the scripts that call `lbscale ARGS` as is.  A script
# whose runs differ (a verb, mpirun, environment, another cwd) defines its
# own run and bad after sourcing this.

TOP=$(mktemp -d "${TMPDIR:-/tmp}/lbs-$(basename "$0" .sh).XXXXXX") || exit 1
trap 'rm -rf "$TOP"' EXIT

n=0
failed=0
case_no=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
not_ok() {
    n=$((n + 1)); failed=$((failed + 1))
    echo "not ok $n - $1"
    shift
    for m in "$@"; do printf '%s\n' "$m" | sed 's/^/#   /'; done
}
# tap_end: the plan; the script's status is 0 when no test failed.
tap_end() {
    echo "1..$n"
    [ "$failed" -eq 0 ]
}

# run ARGS...: BIN ARGS in a fresh cwd with a fresh results root, 60 s at
# most.  Sets RC, OUT (stdout file), ERR (stderr file), RES, CWD.
run() {
    case_no=$((case_no + 1))
    local d=$TOP/c$case_no
    mkdir -p "$d/res" "$d/cwd"
    RES=$d/res CWD=$d/cwd OUT=$d/stdout ERR=$d/stderr
    (cd "$CWD" && LBSCALE_RESULTS=$RES timeout 60 "$BIN" "$@" \
        >"$OUT" 2>"$ERR")
    RC=$?
}

# bad DESC 'PAT1|PAT2' ARGS...: exit 2; stderr exactly one
# newline-terminated line, starting with "lbscale: " and naming every
# |-separated fixed string; empty stdout; no file created.
# good DESC ARGS...: the binary with ARGS exits 0 (ok), else not ok with
# the command, its exit code and the start of its stderr.
good() {
    local desc=$1
    shift
    run "$@"
    if [ "$RC" -eq 0 ]; then ok "$desc"; else
        not_ok "$desc" "command: lbscale $*" "exit $RC" "$(head -c 500 "$ERR")"
    fi
}

bad() {
    local desc=$1 pats=$2
    shift 2
    run "$@"
    local why=() lines
    lines=$(wc -l <"$ERR")
    [ "$RC" -eq 2 ] || why+=("exit code $RC, expected 2")
    if [ "$lines" -ne 1 ] || [ "$(awk 'END { print NR }' "$ERR")" -ne 1 ]; then
        why+=("stderr has $lines newline-terminated lines, expected exactly 1")
    fi
    head -n1 "$ERR" | grep -q '^lbscale: ' ||
        why+=("stderr does not start with 'lbscale: '")
    local IFS='|' p
    for p in $pats; do
        head -n1 "$ERR" | grep -qF -- "$p" || why+=("stderr does not name '$p'")
    done
    unset IFS
    [ -s "$OUT" ] && why+=("stdout not empty: $(head -c 200 "$OUT")")
    [ -z "$(find "$RES" "$CWD" -mindepth 1 | head -n1)" ] ||
        why+=("files created: $(find "$RES" "$CWD" -mindepth 1 | head -n5 | tr '\n' ' ')")
    if [ ${#why[@]} -eq 0 ]; then
        ok "$desc"
    else
        not_ok "$desc" "command: lbscale $*" "${why[@]}" \
            "stderr: $(head -c 500 "$ERR")"
    fi
}
