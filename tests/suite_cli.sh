#!/usr/bin/env bash
# suite_cli.sh BINARY - `lbscale suite`, `demo`, `plot`, `report` and
# `check` through the real binary, printed as TAP.
#
# Bad suites must be rejected before anything runs (exit 2, one
# "lbscale: " line naming the file/entry/problem, no file written); a
# failing or timed-out entry is recorded with its stderr tail while the
# suite goes on and exits 1; --resume skips what succeeded; Ctrl-C stops
# with 130 and resumes; the example suites and the built-in demo validate;
# plot draws every figure kind from the small hand-made results in
# tests/data/plot-run/ (skipped without gnuplot); report.html is
# self-contained; check passes, fails on a regression and a missing
# metric, and rejects a bad baseline.  Every benchmark run is tiny.
set -u

BIN=${1:?usage: suite_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
SRC=${LBS_TEST_DATA:-$(cd "$(dirname "$0")" && pwd)}   # tests/
ROOT=$(cd "$SRC/.." && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
export OMP_NUM_THREADS=1
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}

. "$(dirname "$0")/tap.sh"

# run ARGS...: fresh results root; sets RC OUT ERR RES
run() {
    case_no=$((case_no + 1))
    local d=$TOP/c$case_no
    mkdir -p "$d/res"
    RES=$d/res OUT=$d/stdout ERR=$d/stderr
    (cd "$TOP" && LBSCALE_RESULTS=$RES timeout 120 "$BIN" "$@" \
        >"$OUT" 2>"$ERR")
    RC=$?
}

# bad DESC 'PAT1|PAT2' ARGS...: exit 2, one stderr line naming every
# pattern, nothing on stdout, no files.
bad() {
    local desc=$1 pats=$2
    shift 2
    run "$@"
    local why=()
    [ "$RC" -eq 2 ] || why+=("exit code $RC, expected 2")
    [ "$(wc -l <"$ERR")" -eq 1 ] || why+=("stderr has $(wc -l <"$ERR") lines, expected 1")
    head -n1 "$ERR" | grep -q '^lbscale: ' || why+=("stderr does not start with 'lbscale: '")
    local IFS='|' p
    for p in $pats; do
        head -n1 "$ERR" | grep -qF -- "$p" || why+=("stderr does not name '$p'")
    done
    unset IFS
    [ -s "$OUT" ] && why+=("stdout not empty: $(head -c 200 "$OUT")")
    [ -z "$(find "$RES" -mindepth 1 | head -n1)" ] ||
        why+=("files created: $(find "$RES" -mindepth 1 | head -n5 | tr '\n' ' ')")
    check "$desc" "${why[@]}" "stderr: $(head -c 400 "$ERR")"
}
# check DESC [WHY...] CONTEXT: ok when only the context is given, else
# not ok listing every WHY and the context.
check() {
    local desc=$1
    shift
    if [ $# -le 1 ]; then ok "$desc"; else not_ok "$desc" "$@"; fi
}

suite() { printf '%s\n' "$2" >"$TOP/$1"; }

# ---- bad suites: rejected before anything runs ---------------------------
suite trunc.json '{"entries": [ {"verb": "stream"'
bad "malformed JSON names file and line" "trunc.json|line" suite "$TOP/trunc.json"
bad "missing suite file" "nope.json" suite "$TOP/nope.json"
suite top.json '{"entries": [{"verb": "stream"}], "entires": []}'
bad "unknown top-level key" "entires" suite "$TOP/top.json"
suite empty.json '{"entries": []}'
bad "no entries" "entries" suite "$TOP/empty.json"
suite verb.json '{"entries": [{"verb": "stream"}, {"name": "x", "verb": "optm"}]}'
bad "unknown verb names entry and verb" "entry 2|optm" suite "$TOP/verb.json"
suite nested.json '{"entries": [{"verb": "demo"}]}'
bad "whole-run verbs are not entries" "demo" suite "$TOP/nested.json"
suite args.json '{"entries": [{"verb": "stream", "args": ["--elements", 1000]}]}'
bad "non-string argument" "args[1]|string" suite "$TOP/args.json"
suite args2.json '{"entries": [{"verb": "stream", "args": "--elements 1M"}]}'
bad "args not an array" "args" suite "$TOP/args2.json"
suite opt.json '{"entries": [{"verb": "stream", "args": ["--elements", "1M", "--bogus"]}]}'
bad "option the verb does not have" "--bogus|stream" suite "$TOP/opt.json"
suite spec.json '{"entries": [{"verb": "optim", "args": ["--optim", "lamb:zz=1"]}]}'
bad "bad optimizer spec" "zz" suite "$TOP/spec.json"
suite cspec.json '{"entries": [{"verb": "compress", "args": ["--compressor", "topk:k=2"]}]}'
bad "bad compressor spec" "topk" suite "$TOP/cspec.json"
suite ph.json '{"entries": [{"verb": "stream", "args": ["--elements", "{nope}"]}]}'
bad "unknown placeholder" "{nope}" suite "$TOP/ph.json"
suite dup.json '{"entries": [{"verb": "stream"}, {"verb": "stream"}]}'
bad "duplicate entry names" "duplicate" suite "$TOP/dup.json"
suite out.json '{"entries": [{"verb": "stream", "args": ["--out", "/tmp/x"]}]}'
bad "--out inside args" "--out" suite "$TOP/out.json"
suite ranks.json '{"entries": [{"verb": "stream", "ranks": 0}]}'
bad "ranks out of range" "ranks" suite "$TOP/ranks.json"
suite rep.json '{"entries": [{"verb": "stream", "repeat": 1.5}]}'
bad "repeat not an integer" "repeat" suite "$TOP/rep.json"
suite fe.json '{"entries": [{"verb": "optim", "foreach": {"o": "@nothing"}, "args": ["--optim", "{o}"]}]}'
bad "foreach of an unknown registry" "@nothing" suite "$TOP/fe.json"
suite key.json '{"entries": [{"verb": "stream", "reps": 2}]}'
bad "unknown entry key" "reps" suite "$TOP/key.json"
suite vars.json '{"vars": {"n": "1M"}, "entries": [{"verb": "stream", "args": ["--elements", "{n}"]}]}'
bad "--set of a var the suite lacks" "nn" suite "$TOP/vars.json" --set nn=5
bad "suite without a file" "suite file" suite
bad "--out with --resume" "--resume" suite "$TOP/vars.json" --out "$TOP/o" --resume "$TOP/o"
bad "--resume of a non-suite directory" "suite.jsonl" suite "$TOP/vars.json" --resume "$TOP"
if ! "$BIN" --help | grep -q '^  coll '; then
    suite coll.json '{"entries": [{"verb": "coll"}]}'
    bad "known verb not built (not optional)" "coll|not built" suite "$TOP/coll.json"
fi

# ---- the example suites and the built-in demo validate --------------------
for f in "$ROOT"/bench/suites/*.json; do
    run suite "$f" --dry-run
    check "$(basename "$f") validates (--dry-run)" \
        $([ "$RC" -eq 0 ] || echo "exit $RC") \
        $([ -z "$(find "$RES" -mindepth 1 | head -n1)" ] || echo "files-written") \
        "stderr: $(head -c 400 "$ERR")"
done
run demo --dry-run
check "demo --dry-run lists stream, every optimizer and compressor" \
    $([ "$RC" -eq 0 ] || echo "exit-$RC") \
    $(grep -q ' stream ' "$OUT" || echo "no-stream") \
    $(for o in $("$BIN" optim --list | awk '/^  [a-z_]+ - /{print $1}'); do
          grep -q "optim-$o " "$OUT" || echo "no-optim-$o"; done) \
    $(grep -q 'compress-topk ' "$OUT" || echo "no-compress") \
    $(grep -q 'sim-bert-xl-lamb ' "$OUT" || echo "no-sim") \
    "stdout: $(head -c 300 "$OUT")"
run demo --print-suite
"$PY" -c 'import json,sys; json.load(open(sys.argv[1]))' "$OUT" 2>/dev/null
js=$?
check "demo --print-suite is a valid suite file" \
    $([ "$js" -eq 0 ] || echo "not-json") $([ "$RC" -eq 0 ] || echo "exit-$RC") ""

# ---- progress lines when stderr is not a terminal (CI) ------------------
suite prog.json '{"suite": "prog", "entries": [
  {"verb": "train", "args": ["--optim", "sgd", "--model", "mlp:784-64-10",
   "--subset", "4096", "--test-subset", "128", "--global-batch", "64",
   "--epochs", "10", "--no-trace"]}]}'
(cd "$TOP" && LBSCALE_PROGRESS_S=0.2 LBSCALE_RESULTS=$TOP/pres timeout 120 \
    "$BIN" suite "$TOP/prog.json" --no-plot >/dev/null 2>"$TOP/prog.err")
if grep -q '^progress: \[1/1\] train running .* | elapsed .* | ETA ' "$TOP/prog.err"; then
    ok "non-tty stderr gets periodic progress lines (entry i/n, elapsed, ETA)"
else
    not_ok "non-tty stderr gets periodic progress lines" "$(head -c 400 "$TOP/prog.err")"
fi

# ---- a suite with failures: recorded, continued, exit 1 ------------------
suite tiny.json '{"suite": "tiny", "vars": {"layers": "uniform:5000"},
 "entries": [
  {"verb": "stream", "args": ["--elements", "1M", "--iters", "2"]},
  {"name": "optim-{o}", "verb": "optim", "foreach": {"o": ["sgd", "lamb"]},
   "args": ["--optim", "{o}", "--elements", "64K", "--iters", "2",
            "--warmup", "0", "--stream-gbps", "{stream.triad_gbps}"]},
  {"name": "bad-layers", "verb": "optim",
   "args": ["--optim", "sgd", "--elements", "1000", "--layers", "{layers}",
            "--stream-gbps", "10"]},
  {"name": "after", "verb": "compress", "repeat": 2,
   "args": ["--compressor", "topk", "--elements", "64K", "--iters", "2",
            "--stream-gbps", "{stream.triad_gbps}"]}]}'
run suite "$TOP/tiny.json" --out "$TOP/run1"
R=$TOP/run1
why=()
[ "$RC" -eq 1 ] || why+=("exit $RC, expected 1")
"$PY" - "$R" <<'PY' || why+=("suite.jsonl check failed")
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/suite.jsonl")]
ent = [r for r in rows if r["event"] == "entry"]
st = [(r["name"], r["status"]) for r in ent]
want = [("stream", "ok"), ("optim-sgd", "ok"), ("optim-lamb", "ok"),
        ("bad-layers", "failed"), ("after", "ok"), ("after", "ok")]
assert st == want, st
bad = ent[3]
assert bad["exit_code"] == 2 and "layers" in bad["stderr_tail"], bad
assert ent[1]["argv"][-2] == "--out" and "--stream-gbps" in ent[1]["argv"]
sg = ent[1]["argv"][ent[1]["argv"].index("--stream-gbps") + 1]
assert float(sg) > 0, sg          # {stream.triad_gbps} resolved
assert rows[0]["event"] == "start" and rows[-1]["event"] == "end"
assert rows[-1]["failed"] == 1 and rows[-1]["ok"] == 5
for r in ent:
    assert r["log"].startswith("logs/"), r
PY
[ "$(wc -l <"$R/optim.jsonl")" -eq 2 ] || why+=("optim.jsonl rows: $(wc -l <"$R/optim.jsonl")")
[ "$(wc -l <"$R/compress.jsonl")" -eq 2 ] || why+=("compress.jsonl rows != 2 (repeat)")
[ -s "$R/report.html" ] || why+=("no report.html")
[ -s "$R/meta.json" ] && grep -q '"suite"' "$R/meta.json" || why+=("meta.json lacks the suite command")
grep -q 'bad-layers' "$OUT" && grep -q '^  failed' "$OUT" || why+=("summary lacks the failure")
grep -q 'Optimizer step vs STREAM' "$OUT" || why+=("summary lacks the optimizer table")
grep -q 'resume:' "$OUT" || why+=("summary lacks the resume hint")
[ "$(grep -c . "$ERR")" -eq 1 ] && grep -q "^lbscale: suite: entry 4 'bad-layers' failed" "$ERR" ||
    why+=("non-tty stderr is not just the failure line: $(head -c 300 "$ERR")")
grep -q $'\r' "$ERR" && why+=("progress (\\r) on a non-terminal")
check "failing entry recorded with stderr tail; suite continues; exit 1" "${why[@]}" \
    "stdout: $(head -c 600 "$OUT")"

# resume: ok runs skipped, the failed one reruns (fixed through --set)
run suite "$TOP/tiny.json" --resume "$R" --set layers=uniform:4 --no-plot
why=()
[ "$RC" -eq 0 ] || why+=("exit $RC, expected 0")
[ "$(wc -l <"$R/optim.jsonl")" -eq 3 ] || why+=("optim.jsonl rows $(wc -l <"$R/optim.jsonl"), expected 3 (only bad-layers reran)")
[ "$(wc -l <"$R/stream.jsonl")" -eq 1 ] || why+=("stream reran")
[ "$(wc -l <"$R/compress.jsonl")" -eq 2 ] || why+=("compress reran")
grep -q '5 run(s) completed earlier' "$OUT" || why+=("summary does not say what was skipped")
check "--resume skips completed entries and reruns the failed one" "${why[@]}" \
    "stdout: $(head -c 600 "$OUT")"
ls -A "$R" | grep -q '^\.lbscale-tmp\.' && not_ok "no temporary files left" || ok "no temporary files left"

# --json: one object per entry, then the summary object
run suite "$TOP/tiny.json" --set layers=uniform:4 --json --no-plot --out "$TOP/run2"
"$PY" - "$OUT" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 7, len(lines)
assert all(l["event"] == "entry" for l in lines[:6])
assert lines[-1]["event"] == "end" and lines[-1]["ok"] == 6, lines[-1]
PY
js=$?
check "--json prints entry records and a summary object" \
    $([ "$js" -eq 0 ] || echo "bad-json-output") $([ "$RC" -eq 0 ] || echo "exit-$RC") \
    "stdout: $(head -c 300 "$OUT")"

# timeout: killed, recorded as failed, the suite goes on
suite slow.json '{"entries": [
  {"name": "slow", "verb": "stream", "args": ["--elements", "4M", "--iters", "100000"], "timeout_s": 1},
  {"name": "next", "verb": "stream", "args": ["--elements", "1M", "--iters", "2"]}]}'
t0=$(date +%s)
run suite "$TOP/slow.json" --no-plot --out "$TOP/run3"
t1=$(date +%s)
why=()
[ "$RC" -eq 1 ] || why+=("exit $RC, expected 1")
[ $((t1 - t0)) -lt 30 ] || why+=("took $((t1 - t0)) s")
grep -q '"name":"slow".*"status":"failed".*timed out' "$TOP/run3/suite.jsonl" || why+=("no timed-out record")
grep -q '"name":"next".*"status":"ok"' "$TOP/run3/suite.jsonl" || why+=("next entry did not run")
check "an entry over its timeout_s is killed and recorded; the suite goes on" "${why[@]}" ""

# Ctrl-C: the running entry and the suite stop (130); resume finishes it
suite int.json '{"entries": [
  {"name": "first", "verb": "stream", "args": ["--elements", "1M", "--iters", "2"]},
  {"name": "long", "verb": "stream", "args": ["--elements", "4M", "--iters", "{iters}"]},
  {"name": "last", "verb": "stream", "args": ["--elements", "1M", "--iters", "2"]}],
 "vars": {"iters": "100000"}}'
(cd "$TOP" && LBSCALE_RESULTS=$TOP/res-int exec "$BIN" suite "$TOP/int.json" --no-plot \
    --out "$TOP/run4" >"$TOP/int.out" 2>"$TOP/int.err") &
pid=$!
for _ in $(seq 50); do
    grep -q '"name":"first"' "$TOP/run4/suite.jsonl" 2>/dev/null && break
    sleep 0.2
done
sleep 1
kill -INT $pid
wait $pid
rc=$?
why=()
[ "$rc" -eq 130 ] || why+=("exit $rc, expected 130")
grep -q '"name":"long".*"status":"interrupted"' "$TOP/run4/suite.jsonl" || why+=("no interrupted record")
grep -q '"name":"last"' "$TOP/run4/suite.jsonl" && why+=("ran past the interrupt")
grep -q -- '--resume' "$TOP/int.err" || why+=("no resume hint on stderr")
run suite "$TOP/int.json" --resume "$TOP/run4" --set iters=2 --no-plot
[ "$RC" -eq 0 ] || why+=("resume exit $RC")
[ "$(wc -l <"$TOP/run4/stream.jsonl")" -eq 3 ] || why+=("stream rows $(wc -l <"$TOP/run4/stream.jsonl"), expected 3")
check "Ctrl-C stops with 130, --resume completes the rest" "${why[@]}" \
    "stderr: $(head -c 300 "$TOP/int.err")"

# ---- --jobs N: entries side by side (training grids) ---------------------
# four cheap 1-thread trainings ({epochs} per entry, so a resume can make
# the killed ones short); a "jobs" suite and its checker of the rows
jobs_suite() {   # jobs_suite FILE EPOCHS_A EPOCHS_B
    suite "$1" '{"suite": "jobs", "vars": {"ea": "'"$2"'", "eb": "'"$3"'"},
 "timeout_s": 120, "entries": [
  {"name": "a-{o}", "verb": "train", "foreach": {"o": ["sgd", "lamb"]},
   "args": ["--optim", "{o}", "--model", "mlp:784-16-10", "--subset", "512",
            "--test-subset", "128", "--global-batch", "64", "--epochs", "{ea}",
            "--threads", "1", "--no-trace"]},
  {"name": "b-{o}", "verb": "train", "foreach": {"o": ["sgd", "lamb"]},
   "args": ["--optim", "{o}", "--model", "mlp:784-16-10", "--subset", "512",
            "--test-subset", "128", "--global-batch", "64", "--epochs", "{eb}",
            "--threads", "1", "--no-trace"]}]}'
}
# jobs_rows RUN: every entry ok exactly once in suite.jsonl, its log there,
# one final row each in train.jsonl; prints what is wrong
jobs_rows() {
    "$PY" - "$1" <<'PY'
import json, os, sys
run = sys.argv[1]
rows = [json.loads(l) for l in open(run + "/suite.jsonl")]
names = ["a-sgd", "a-lamb", "b-sgd", "b-lamb"]
ok = [r["name"] for r in rows if r.get("event") == "entry" and r["status"] == "ok"]
if sorted(ok) != sorted(names):
    print("ok rows: %s" % ok)
for r in rows:
    if r.get("event") == "entry" and r["status"] == "ok" and \
            not os.path.isfile(os.path.join(run, r.get("log", "-"))):
        print("no log for %s" % r["name"])
fin = [json.loads(l) for l in open(run + "/train.jsonl")]
if len(fin) != 4:
    print("train.jsonl has %d rows, expected 4" % len(fin))
PY
}
jobs_suite jobs.json 1 1
run suite "$TOP/jobs.json" --jobs 2 --no-plot --out "$TOP/jobs2"
why=()
[ "$RC" -eq 0 ] || why+=("exit $RC")
w=$(jobs_rows "$TOP/jobs2") && [ -z "$w" ] || why+=("$w")
# two runs overlap: one started before the other ended (the rows' start,
# seconds after the suite started, and seconds); no duration is judged
"$PY" - "$TOP/jobs2" <<'PY' || why+=("no two entries' run intervals overlap, or no \"jobs\": 2 in the start row")
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/suite.jsonl")]
assert rows[0]["event"] == "start" and rows[0]["jobs"] == 2, rows[0]
iv = [(r["started_s"], r["started_s"] + r["seconds"])
      for r in rows if r.get("event") == "entry"]
assert any(a[0] < b[1] and b[0] < a[1]
           for i, a in enumerate(iv) for b in iv[i + 1:]), iv
PY
check "--jobs 2: four train entries, each row once with its log, two runs overlap" \
    "${why[@]}" "stderr: $(head -c 400 "$ERR")"

# --jobs 1 is the suite as before: the same rows, keys and files
run suite "$TOP/jobs.json" --no-plot --out "$TOP/jobs0"
cp "$OUT" "$TOP/jobs0.out"
run suite "$TOP/jobs.json" --jobs 1 --no-plot --out "$TOP/jobs1"
why=()
[ "$RC" -eq 0 ] || why+=("exit $RC")
"$PY" - "$TOP/jobs0" "$TOP/jobs1" <<'PY' || why+=("suite.jsonl differs in structure")
import json, sys
def shape(run):
    return [(r["event"], r.get("name"), r.get("status"), list(r))
            for r in map(json.loads, open(run + "/suite.jsonl"))]
a, b = shape(sys.argv[1]), shape(sys.argv[2])
assert a == b, (a, b)
PY
[ "$(ls "$TOP/jobs0/logs")" = "$(ls "$TOP/jobs1/logs")" ] || why+=("logs differ")
[ "$(ls "$TOP/jobs0")" = "$(ls "$TOP/jobs1")" ] || why+=("files differ")
summary() { grep -E '^(==|  ok|  failed)' "$1" | sed 's/[0-9]*:[0-9][0-9]/T/g'; }
[ "$(summary "$TOP/jobs0.out")" = "$(summary "$OUT")" ] || why+=("summaries differ")
grep -q '"jobs":\|"started_s":' "$TOP/jobs1/suite.jsonl" && why+=("--jobs 1 records side-by-side fields")
check "--jobs 1 writes what no --jobs writes (rows, keys, logs, summary)" "${why[@]}" ""

# refused before anything runs: one line, exit 2, no run directory
bad "--jobs 0" "--jobs|0" suite "$TOP/jobs.json" --jobs 0
bad "--jobs 65" "--jobs|65" suite "$TOP/jobs.json" --jobs 65
bad "--jobs x" "--jobs|'x'" suite "$TOP/jobs.json" --jobs x
suite jobs-stream.json '{"entries": [
  {"verb": "train", "args": ["--optim", "sgd", "--epochs", "1"]},
  {"name": "bw", "verb": "stream", "args": ["--elements", "1M"]}]}'
bad "--jobs 2 with a timing entry names it" "entry 2|'bw'|stream|--jobs 2" \
    suite "$TOP/jobs-stream.json" --jobs 2
"$BIN" suite --help | grep -q -- '--jobs N' &&
    "$BIN" suite --help | grep -q 'timing' && ok "--help documents --jobs" ||
    not_ok "--help documents --jobs" "$("$BIN" suite --help | grep -i jobs)"

# SIGTERM while two entries run: both end (no process left), the suite
# exits 130; --resume --jobs 2 completes it, every row exactly once
jobs_suite jobs-kill.json 1 1000
(cd "$TOP" && LBSCALE_RESULTS=$TOP/res-jk exec "$BIN" suite "$TOP/jobs-kill.json" \
    --jobs 2 --no-plot --out "$TOP/jobsk" >"$TOP/jk.out" 2>"$TOP/jk.err") &
pid=$!
kids=""
for _ in $(seq 300); do
    if [ "$(grep -c '"status":"ok"' "$TOP/jobsk/suite.jsonl" 2>/dev/null)" = 2 ]; then
        kids=$(pgrep -P "$pid" | tr '\n' ' ')
        [ "$(echo $kids | wc -w)" -eq 2 ] && break
    fi
    sleep 0.1
done
kill -TERM $pid
wait $pid
rc=$?
sleep 0.5
why=()
[ "$(echo $kids | wc -w)" -eq 2 ] || why+=("never saw two entries running (saw: '$kids')")
[ "$rc" -eq 130 ] || why+=("exit $rc, expected 130")
for k in $kids; do
    st=$(awk '{print $3}' "/proc/$k/stat" 2>/dev/null)
    [ -n "$st" ] && [ "$st" != Z ] && { why+=("entry process $k left running ($st)"); kill -9 "$k"; }
done
[ "$(grep -c '"status":"interrupted"' "$TOP/jobsk/suite.jsonl")" -eq 2 ] ||
    why+=("not two interrupted rows")
run suite "$TOP/jobs-kill.json" --resume "$TOP/jobsk" --jobs 2 --set eb=1 --no-plot
[ "$RC" -eq 0 ] || why+=("resume exit $RC: $(head -c 300 "$ERR")")
grep -q '2 run(s) completed earlier' "$OUT" || why+=("resume did not skip the two done")
w=$(jobs_rows "$TOP/jobsk") && [ -z "$w" ] || why+=("$w")
check "SIGTERM of a --jobs 2 suite ends both entries (130); --resume --jobs 2 completes it once" \
    "${why[@]}" "stderr: $(head -c 300 "$TOP/jk.err")"

# an mpirun entry (2 ranks)
if ldd "$BIN" 2>/dev/null | grep -q libasan; then
    skip "a 2-rank entry runs under mpirun into the same run" \
        "sanitizer build (Open MPI aborts at exit under ASan)"
elif command -v mpirun >/dev/null 2>&1 && "$BIN" --version | grep -q 'mpi yes'; then
    suite mpi.json '{"entries": [{"name": "train2", "verb": "train", "ranks": 2,
      "args": ["--optim", "lamb", "--max-steps", "3", "--subset", "1024",
               "--test-subset", "512", "--dataset", "teacher", "--no-trace"],
      "timeout_s": 120}]}'
    run suite "$TOP/mpi.json" --no-plot --out "$TOP/run5"
    check "a 2-rank entry runs under mpirun into the same run" \
        $([ "$RC" -eq 0 ] || echo "exit-$RC") \
        $(grep -q '"mpirun\|/mpirun"' "$TOP/run5/suite.jsonl" || echo "no-mpirun-argv") \
        $([ -s "$TOP/run5/train.jsonl" ] || echo "no-train.jsonl") \
        "stderr: $(head -c 400 "$ERR") $(tail -c 600 "$TOP/run5/logs/"*.log 2>/dev/null)"
else
    skip "a 2-rank entry runs under mpirun into the same run" "no mpirun/MPI"
fi

# ---- plot and report from the hand-made results ---------------------------
P=$TOP/plot-run
cp -r "$SRC/data/plot-run" "$P"
if command -v gnuplot >/dev/null 2>&1; then
    run plot "$P"
    why=()
    [ "$RC" -eq 0 ] || why+=("exit $RC")
    for f in roofline scaling_bert-large_dgx-a100 scaling_bert-xl_dgx-a100 \
             itersplit_bert-large_dgx-a100 itersplit_bert-xl_dgx-a100 \
             busbw_allreduce_mpi busbw_allgather_mpi compress wire convergence; do
        for e in png svg dat; do
            [ -s "$P/plots/$f.$e" ] || why+=("missing $f.$e")
        done
        grep -qx "$P/plots/$f.png" "$OUT" || why+=("$f.png not listed")
    done
    [ -e "$P/plots/busbw_allreduce_self.png" ] && why+=("drew busbw of 1 rank")
    [ -s "$ERR" ] && why+=("stderr: $(head -c 300 "$ERR")")
    check "plot draws every figure kind (PNG + SVG) from hand-made JSONL" "${why[@]}" ""
    run plot "$P" --scales 8,1024
    grep -q ' 128 ' "$P/plots/itersplit_bert-large_dgx-a100.dat"
    js=$?
    check "plot --scales chooses the bar groups" \
        $([ "$RC" -eq 0 ] || echo "exit-$RC") $([ "$js" -ne 0 ] || echo "128-still-drawn") ""
    mkdir -p "$TOP/bare"
    cp "$P/meta.json" "$TOP/bare/"
    run plot "$TOP/bare"
    # issue 18: nothing to draw is said, in one line, with exit 2
    check "plot on a run without results says so (one line, exit 2), draws nothing" \
        $([ "$RC" -eq 2 ] || echo "exit-$RC") \
        $([ "$(wc -l <"$ERR")" -eq 1 ] && grep -q "no results to draw" "$ERR" || echo "stderr") \
        $([ ! -e "$TOP/bare/plots" ] || echo "files") ""
else
    skip "plot draws every figure kind" "gnuplot not installed"
fi
run report "$P" --text
why=()
[ "$RC" -eq 0 ] || why+=("exit $RC")
H=$P/report.html
grep -q 'src="http\|href="http\|<link ' "$H" && why+=("external reference")
for id in machine stream optim compress coll train sim commands; do
    grep -q "id=\"$id\"" "$H" || why+=("no section $id")
done
if command -v gnuplot >/dev/null 2>&1; then
    [ "$(grep -o 'data:image/png;base64,' "$H" | wc -l)" -eq 10 ] || why+=("not 10 embedded figures")
fi
grep -q 'Fixture CPU' "$H" || why+=("no machine description")
grep -q 'lbscale suite fixture.json' "$H" || why+=("no command line")
grep -q 'Simulator: scaling' "$OUT" || why+=("--text lacks the simulator table")
check "report.html is self-contained with every section" "${why[@]}" ""
bad "report of a missing directory" "nowhere" report "$TOP/nowhere"

# ---- check ----------------------------------------------------------------
B=$SRC/data/baseline-fixture.json
run check "$P" --baseline "$B"
check "check passes against matching baselines" \
    $([ "$RC" -eq 0 ] || echo "exit-$RC") \
    $(grep -q 'check: 6 metrics, 6 passed, 0 failed' "$OUT" || echo "summary-line") \
    "stdout: $(head -c 800 "$OUT")"
"$PY" - "$B" "$TOP/regress.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
for m in b["metrics"]:
    if m["field"] == "wire_bytes": m["baseline"] += 1          # exact: off by one
    if m["field"] == "roofline_frac": m["baseline"] *= 1.5     # a 33% drop
m = dict(b["metrics"][0]); m["where"] = {"compressor": "nosuch"}
b["metrics"].append(m)                                        # missing
json.dump(b, open(sys.argv[2], "w"))
PY
run check "$P" --baseline "$TOP/regress.json" --strict
check "check --strict fails on a regression and a missing metric (exit 1)" \
    $([ "$RC" -eq 1 ] || echo "exit-$RC") \
    $(grep -q 'wire_bytes.*FAIL' "$OUT" || echo "wire-not-failed") \
    $(grep -q 'roofline_frac.*FAIL' "$OUT" || echo "drop-not-failed") \
    $(grep -q 'FAIL (missing)' "$OUT" || echo "missing-not-failed") \
    $(grep -q 'iter_ms.*pass' "$OUT" || echo "sim-not-passed") \
    "stdout: $(head -c 1200 "$OUT")"
run check "$P" --baseline "$TOP/regress.json"
check "check without --strict skips a configuration the run lacks" \
    $([ "$RC" -eq 1 ] || echo "exit-$RC") \
    $(grep -q 'skip (not run)' "$OUT" || echo "not-skipped") \
    $(grep -q '1 skipped' "$OUT" || echo "no-skip-count") \
    "stdout: $(head -c 600 "$OUT")"
"$PY" - "$TOP/regress.json" "$TOP/other.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
for m in b["metrics"]:
    m["where"] = {"compressor": "nosuch"}
json.dump(b, open(sys.argv[2], "w"))
PY
run check "$P" --baseline "$TOP/other.json"
check "check on a run with none of the baseline's configurations: exit 2" \
    $([ "$RC" -eq 2 ] || echo "exit-$RC") \
    $(grep -q 'nothing to check' "$ERR" || echo "no-message") "stderr: $(cat "$ERR")"
run check "$P" --baseline "$TOP/regress.json" --json
"$PY" -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; assert r[-1]["summary"]=="check" and r[-1]["skipped"]==1' "$OUT" &&
    ok "check --json ends with a summary object" || not_ok "check --json ends with a summary object" "$(tail -2 "$OUT")"
cp "$TOP/regress.json" "$TOP/upd.json"
"$PY" -c 'import json,sys; b=json.load(open(sys.argv[1])); b["metrics"].pop(); json.dump(b, open(sys.argv[1], "w"))' "$TOP/upd.json"
run check "$P" --baseline "$TOP/upd.json" --update
run check "$P" --baseline "$TOP/upd.json"
check "check --update refreshes a baseline from a run" \
    $([ "$RC" -eq 0 ] || echo "exit-$RC") "stdout: $(head -c 600 "$OUT")"
printf '{"format": "lbscale-baseline", "metrics": [{"file": "sim"}]}' >"$TOP/badb.json"
bad "check with a malformed baseline" "badb.json|metric 1" check "$P" --baseline "$TOP/badb.json"
bad "check without --baseline" "--baseline" check "$P"
bad "check of a missing run" "nowhere" check "$TOP/nowhere" --baseline "$B"
bad "check of an unknown baseline name" "nosuchbaseline" check "$P" --baseline nosuchbaseline

tap_end
