#!/usr/bin/env bash
# results_cli.sh BINARY - what the results directory promises, through the
# real binary, printed as TAP (issue 14):
#   - a suite killed (SIGKILL) at 20 random moments and resumed leaves every
#     entry's rows exactly once, its train trace once, no temporaries, and
#     no process of the killed suite behind;
#   - four writers appending to one run lose no row;
#   - temporaries of dead writers are removed, a live writer's are kept;
#   - planted symlinks are never written through;
#   - hostile run-directory names (quotes, semicolons, newlines, backticks,
#     $) reach gnuplot as data, never as code;
#   - bad paths and nonsense options get one line and exit 2, with control
#     characters of the input escaped.
set -u

BIN=${1:?usage: results_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
SRC=${LBS_TEST_DATA:-$(cd "$(dirname "$0")" && pwd)}   # tests/
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
export OMP_NUM_THREADS=1
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
KILLS=${LBS_KILLS:-20}

. "$(dirname "$0")/tap.sh"

check() {   # check DESC [WHY...]: ok when no WHY is given
    local desc=$1
    shift
    if [ $# -eq 0 ]; then ok "$desc"; else not_ok "$desc" "$@"; fi
}
rows() { [ -f "$1" ] && grep -c . "$1" || echo 0; }

# ---- kill -9 the suite at random moments, then resume ---------------------
# Entries of every kind of output: rows (stream, optim x2, compress), a
# multi-row verb (coll, 1 rank), a train run with its trace file.
cat >"$TOP/kill.json" <<'EOF'
{"suite": "kill", "entries": [
 {"verb": "stream", "args": ["--elements", "200K", "--iters", "2"]},
 {"name": "optim-{o}", "verb": "optim", "foreach": {"o": ["sgd", "lamb"]},
  "args": ["--optim", "{o}", "--elements", "200K", "--layers", "uniform:4",
           "--iters", "3", "--threads", "1",
           "--stream-gbps", "10"]},
 {"verb": "coll", "args": ["--coll", "allreduce,allgather", "-b", "8",
                           "-e", "256K", "--iters", "3", "--warmup", "1"]},
 {"verb": "compress", "args": ["--compressor", "topk:k=0.01", "--elements",
                               "100K", "--iters", "2"]},
 {"verb": "train", "args": ["--optim", "sgd", "--model", "mlp:784-16-10",
   "--subset", "512", "--test-subset", "128", "--global-batch", "64",
   "--epochs", "2"]}]}
EOF
R0=$TOP/ref
(cd "$TOP" && timeout 300 "$BIN" suite "$TOP/kill.json" --out "$R0" --no-plot \
    >/dev/null 2>"$TOP/ref.err")
ref_rc=$?
declare -A want
for f in stream optim coll compress train; do want[$f]=$(rows "$R0/$f.jsonl"); done
t0=$(date +%s.%N)
(cd "$TOP" && "$BIN" suite "$TOP/kill.json" --out "$TOP/timing" --no-plot \
    >/dev/null 2>&1)
dur=$("$PY" -c "import sys,time; print(time.time() - float(sys.argv[1]))" "$t0")
if [ "$ref_rc" -ne 0 ]; then
    not_ok "kill-and-resume: the reference suite runs" "exit $ref_rc" \
        "$(tail -n 5 "$TOP/ref.err")"
else
    fails=()
    for k in $(seq 1 "$KILLS"); do
        R=$TOP/kill$k
        at=$("$PY" -c "import random,sys; random.seed($k); print('%.2f' % random.uniform(0.05, float(sys.argv[1])))" "$dur")
        (cd "$TOP" && exec "$BIN" suite "$TOP/kill.json" --out "$R" --no-plot \
            >/dev/null 2>&1) &
        pid=$!
        sleep "$at"
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        if [ -f "$R/suite.jsonl" ]; then
            (cd "$TOP" && timeout 300 "$BIN" suite "$TOP/kill.json" \
                --resume "$R" --no-plot >"$TOP/resume$k.out" 2>&1)
            rc=$?
        else
            # killed before the run existed: a fresh run is the "resume"
            (cd "$TOP" && timeout 300 "$BIN" suite "$TOP/kill.json" \
                --out "$R" --no-plot >"$TOP/resume$k.out" 2>&1)
            rc=$?
        fi
        why=()
        [ "$rc" -eq 0 ] || why+=("resume exit $rc: $(tail -n 3 "$TOP/resume$k.out")")
        for f in stream optim coll compress train; do
            got=$(rows "$R/$f.jsonl")
            [ "$got" -eq "${want[$f]}" ] ||
                why+=("$f.jsonl has $got rows, expected ${want[$f]}")
        done
        nt=$(ls "$R" | grep -c '^train-trace.*\.jsonl$')
        [ "$nt" -eq 1 ] || why+=("$nt train-trace files, expected 1")
        tmp=$(find "$R" -name '.lbscale-tmp.*' | head -n 3)
        [ -z "$tmp" ] || why+=("temporaries left: $tmp")
        # every attempt named in a row was committed by the suite
        bad_att=$("$PY" - "$R" <<'PYEOF'
import glob, json, os, sys
run = sys.argv[1]
ok = set()
for l in open(os.path.join(run, "suite.jsonl")):
    r = json.loads(l)
    if r.get("status") == "ok" and r.get("attempt"):
        ok.add(r["attempt"])
bad = 0
for f in glob.glob(os.path.join(run, "*.jsonl")):
    if f.endswith("suite.jsonl"):
        continue
    for l in open(f):
        a = json.loads(l).get("attempt")
        bad += a is not None and a not in ok
print(bad)
PYEOF
)
        [ "$bad_att" = 0 ] || why+=("$bad_att rows of uncommitted attempts")
        [ ${#why[@]} -eq 0 ] || fails+=("kill $k at ${at}s: ${why[*]}")
    done
    check "kill -9 of the suite at $KILLS random moments, then resume: every entry's rows exactly once" "${fails[@]}"
fi

# ---- the suite's children die with it ------------------------------------
R=$TOP/orphan
# optim prints only at its end: the entry cannot die of SIGPIPE early
cat >"$TOP/slow.json" <<'EOF'
{"entries": [{"verb": "optim", "args": ["--optim", "sgd", "--elements",
  "4M", "--iters", "1000000", "--threads", "1", "--stream-gbps", "10"]}]}
EOF
(cd "$TOP" && exec "$BIN" suite "$TOP/slow.json" --out "$R" --no-plot \
    >/dev/null 2>&1) &
pid=$!
for _ in $(seq 50); do
    child=$(pgrep -P "$pid" | head -n1)
    [ -n "$child" ] && break
    sleep 0.1
done
kill -9 "$pid"
wait "$pid" 2>/dev/null
sleep 1
why=()
[ -n "$child" ] || why+=("never saw the entry's process")
# a zombie (reparented to an init that does not reap) has ended too
state=$(awk '{print $3}' "/proc/$child/stat" 2>/dev/null)
[ -n "$child" ] && [ -n "$state" ] && [ "$state" != Z ] &&
    { why+=("child $child still running ($state) after the suite died"); kill -9 "$child"; }
check "the running entry ends when the suite is killed" "${why[@]}"

# ---- four concurrent writers into one run -------------------------------
R=$TOP/conc
C=(coll --coll allreduce,allgather,alltoall -b 8 -e 1M --iters 2 --warmup 1)
(cd "$TOP" && "$BIN" "${C[@]}" --out "$TOP/conc1" >/dev/null 2>&1)
one=$(rows "$TOP/conc1/coll.jsonl")
pids=()
for w in 1 2 3 4; do
    (cd "$TOP" && exec "$BIN" "${C[@]}" --out "$R" >/dev/null 2>&1) &
    pids+=($!)
done
rcs=0
for p in "${pids[@]}"; do wait "$p" || rcs=$((rcs + 1)); done
got=$(rows "$R/coll.jsonl")
why=()
[ "$rcs" -eq 0 ] || why+=("$rcs writers failed")
[ "$one" -gt 0 ] && [ "$got" -eq $((4 * one)) ] ||
    why+=("$got rows, expected 4 x $one")
"$PY" -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' \
    "$R/coll.jsonl" 2>/dev/null || why+=("a row is not whole JSON")
check "4 concurrent writers: $got rows of 4 x $one, all whole" "${why[@]}"

# ---- temporaries of dead writers ----------------------------------------
R=$TOP/stale
mkdir -p "$R"
sleep 0 & dead=$!
wait "$dead"
# only lbscale's own private names count as its temporaries (issue 33: a
# user's optim.jsonl.tmp.<pid> is kept; tests/edges_cli.sh has more)
touch "$R/.lbscale-tmp.$dead.Ab12Cd" "$R/.lbscale-tmp.$$.Zz99Yy"
(cd "$TOP" && "$BIN" stream --elements 100K --iters 2 --out "$R" >/dev/null 2>&1)
why=()
[ -e "$R/.lbscale-tmp.$dead.Ab12Cd" ] && why+=("temporary of a dead pid kept")
[ -e "$R/.lbscale-tmp.$$.Zz99Yy" ] || why+=("a live writer's temporary removed")
check "temporaries of dead writers removed, a live writer's kept" "${why[@]}"

# ---- planted symlinks ----------------------------------------------------
R=$TOP/links
mkdir -p "$R"
echo precious >"$TOP/victim"
ln -s "$TOP/victim" "$R/stream.jsonl"
ln -s "$TOP/created-by-link" "$R/meta.json"
(cd "$TOP" && "$BIN" stream --elements 100K --iters 2 --out "$R" \
    >/dev/null 2>"$TOP/links.err")
rc=$?
why=()
[ "$(cat "$TOP/victim")" = precious ] || why+=("the link's target was written")
[ -e "$TOP/created-by-link" ] && why+=("a file was created through meta.json's link")
[ "$rc" -ne 0 ] || why+=("appending through a symlink succeeded (exit 0)")
check "planted symlinks are not followed (exit $rc)" "${why[@]}"

# ---- hostile run-directory names reach gnuplot as data -------------------
if command -v gnuplot >/dev/null; then
    mkdir -p "$TOP/h"
    names=("x'; system('touch PWNED'); y='"
           'x"; system("touch PWNED"); y="'
           $'a\nsystem("touch PWNED")\n'
           'b`touch PWNED`'
           'c$(touch PWNED)'
           'd@PWNED;e')
    why=()
    for nm in "${names[@]}"; do
        D=$TOP/h/$nm
        cp -r "$SRC/data/plot-run" "$D"
        (cd "$TOP/h" && "$BIN" plot "$D" >/dev/null 2>"$TOP/h.err") ||
            why+=("plot failed on $(printf %q "$nm"): $(head -c 200 "$TOP/h.err")")
        [ -f "$D/plots/roofline.png" ] || why+=("no figure for $(printf %q "$nm")")
    done
    pw=$(find "$TOP" / -maxdepth 1 -name PWNED 2>/dev/null; find "$TOP" -name PWNED)
    [ -z "$pw" ] || why+=("a command ran: $pw")
    check "hostile run-directory names: figures drawn, nothing executed" "${why[@]}"
else
    skip "hostile run-directory names" "gnuplot not installed"
fi

# ---- bad paths and nonsense: one line, exit 2, nothing left --------------
touch "$TOP/afile"
long=$TOP/$(printf 'd%.0s' $(seq 1 200))
for _ in $(seq 25); do long=$long/$(printf 'e%.0s' $(seq 1 200)); done
bad "--out longer than PATH_MAX" "--out|longer" stream --elements 1M --out "$long"
[ -e "$TOP/$(printf 'd%.0s' $(seq 1 200))" ] &&
    not_ok "--out longer than PATH_MAX created directories" ||
    ok "--out longer than PATH_MAX created nothing"
bad "--out is a file" "afile|Not a directory" stream --elements 1M --out "$TOP/afile"
bad "--out under /proc" "/proc/nope" stream --elements 1M --out /proc/nope/x
bad "--out empty" "--out|empty" optim --optim sgd --out ''
(cd "$TOP" && LBSCALE_RESULTS=/proc/nope "$BIN" stream --elements 1M \
    >/dev/null 2>"$TOP/env.err")
RC=$?
check "\$LBSCALE_RESULTS=/proc/nope named, exit 2" \
    $([ "$RC" -eq 2 ] || echo "exit-$RC") \
    $(grep -q 'LBSCALE_RESULTS.*/proc/nope\|/proc/nope.*LBSCALE_RESULTS' "$TOP/env.err" || echo "not-named:$(head -c 100 "$TOP/env.err" | tr ' ' _)")
bad "coll sizes that hold no element" "-b 1 -e 3|raise -e" coll -b 1 -e 3
bad "train --fault rank out of range" "--fault|rank 99" train --optim sgd \
    --model mlp:784-16-10 --subset 256 --test-subset 64 --fault nan:99:1
bad "train --fault step past the end" "--fault|past" train --optim sgd \
    --model mlp:784-16-10 --subset 256 --test-subset 64 --fault nan:0:100000
mkdir -p "$TOP/garbage" && echo hello >"$TOP/garbage/optim.jsonl"
bad "check on a directory that is not a run" "meta.json|not a results run" \
    check "$TOP/garbage" --baseline wire
bad "plot on a directory that is not a run" "not a results run" plot "$TOP/garbage"
run optim --optim $'lamb\x1b[31m\x0c:x=1'
check "control characters in the input are escaped in the error" \
    $([ "$RC" -eq 2 ] || echo "exit-$RC") \
    $(grep -q $'\x1b' "$ERR" && echo "raw-ESC") \
    $(grep -q $'\x0c' "$ERR" && echo "raw-form-feed") \
    $(grep -qF '\x1b' "$ERR" || echo "no-escape-shown")
"$PY" -c "import json; print(json.dumps({'entries':[{'name':'s-{a}-{b}-{c}','verb':'stream','foreach':{k: list(range(100)) for k in 'abc'}}]}))" >"$TOP/big.json"
t0=$(date +%s)
bad "foreach of 100 x 100 x 100 refused at once" "foreach|10000" suite "$TOP/big.json"
[ $(( $(date +%s) - t0 )) -lt 10 ] && ok "... within 10 s" || not_ok "foreach refusal took more than 10 s"

tap_end
