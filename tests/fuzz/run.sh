#!/usr/bin/env bash
# run.sh [-r RUNS] [-t SECONDS] [-o RESULTS_DIR] [HARNESS...] - build every
# libFuzzer harness (build.sh), seed its corpus from the repository's
# files (seeds.py) and its committed regression inputs (regress/HARNESS/,
# crash seeds of fixed bugs: run first, every time), then run each in
# turn, one at a time, to RUNS executions (-runs, default 1M) or for
# SECONDS (both given: whichever comes first).  Writes the table (reader,
# harness, executions, crashes, seconds, exec/s) as fuzz.jsonl and
# fuzz.md into RESULTS_DIR (default results/fuzz-<UTC>); a crash's input
# lands there as crash-HARNESS-*.  Exit 0 clean, 1 a crash (or a harness
# that failed to run), 77 no clang/libFuzzer.  Objects, corpora and logs
# live in $FUZZ_OUT (default build-fuzz/).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${FUZZ_OUT:-$ROOT/build-fuzz}
RUNS=1000000 SECS= RES= RUNS_GIVEN=0
while getopts r:t:o: opt; do
    case $opt in
    r) RUNS=$OPTARG RUNS_GIVEN=1 ;;
    t) SECS=$OPTARG ;;
    o) RES=$OPTARG ;;
    *) echo "usage: run.sh [-r RUNS] [-t SECONDS] [-o DIR] [HARNESS...]" >&2
       exit 2 ;;
    esac
done
shift $((OPTIND - 1))
"$ROOT/tests/fuzz/build.sh" "$OUT" || exit $?
RES=${RES:-$ROOT/results/fuzz-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$RES" "$OUT/logs" || exit 1
rm -rf "$OUT/seeds"
python3 "$ROOT/tests/fuzz/seeds.py" "$ROOT" "$OUT/seeds" || exit 1

# reader each harness covers, and the longest input worth trying
declare -A READER=(
    [fuzz_sim_json]="sim platform/model/trace readers + engine"
    [fuzz_spec]="optimizer/compressor spec strings (core/param.c)"
    [fuzz_suite]="suite JSON parser/expander (bench/suite_parse.c)"
    [fuzz_idx]="IDX reader (train/data.c), plain and gzip"
    [fuzz_chakra]="Chakra execution traces (sim/chakra.c, sim import)"
    [fuzz_jsonl]="results JSONL: suite_load_jsonl, report, check"
    [fuzz_calib]="sim calibrate inputs: coll JSONL, nccl-tests, OSU; fits"
    [fuzz_torch]="PyTorch profiler traces (sim/torch_import.c, sim model import)"
)
declare -A MAXLEN=([fuzz_sim_json]=20000 [fuzz_spec]=1024 [fuzz_suite]=8192
                   [fuzz_idx]=4096 [fuzz_jsonl]=4096 [fuzz_chakra]=8192
                   [fuzz_calib]=8192 [fuzz_torch]=20000)
[ $# -gt 0 ] || set -- fuzz_sim_json fuzz_spec fuzz_suite fuzz_idx fuzz_jsonl fuzz_chakra fuzz_calib fuzz_torch
budget=(-runs="$RUNS")   # both given: whichever ends first
[ -n "$SECS" ] && budget+=(-max_total_time="$SECS")
[ -n "$SECS" ] && [ "$RUNS_GIVEN" = 0 ] && budget=(-max_total_time="$SECS")

# the revision fuzzed, so a table names the code it speaks for
rev=$(git -C "$ROOT" rev-parse --short=7 HEAD 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD -- . 2>/dev/null || rev="$rev+changes"
rc=0
: >"$RES/fuzz.jsonl"
printf 'revision %s, %s, one harness at a time\n\n' "$rev" "${budget[*]}" >"$RES/fuzz.md"
printf '| reader | harness | executions | crashes | seconds | exec/s |\n|---|---|--:|--:|--:|--:|\n' >>"$RES/fuzz.md"
for h in "$@"; do
    [ -x "$OUT/$h" ] || { echo "run.sh: no harness $h" >&2; rc=1; continue; }
    mkdir -p "$OUT/corpus/$h"
    dirs=("$OUT/corpus/$h" "$OUT/seeds/$h")
    [ -d "$ROOT/tests/fuzz/regress/$h" ] && dirs+=("$ROOT/tests/fuzz/regress/$h")
    log=$OUT/logs/$h.log
    t0=$(date +%s.%N)
    # one thread: the machine runs one harness at a time; stdout/stderr of
    # the target closed (refusals print a line each), libFuzzer keeps its own
    (cd "$OUT" && OMP_NUM_THREADS=1 "./$h" "${budget[@]}" \
        -max_len="${MAXLEN[$h]:-65536}" -timeout=60 -rss_limit_mb=2560 \
        -close_fd_mask=3 -print_final_stats=1 \
        -artifact_prefix="$RES/crash-$h-" "${dirs[@]}") >"$log" 2>&1
    hrc=$?
    t1=$(date +%s.%N)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    crashes=$(find "$RES" -maxdepth 1 -name "crash-$h-*" | wc -l)
    [ "$hrc" -ne 0 ] && [ "$crashes" -eq 0 ] && crashes=1   # died without an artifact
    [ "$hrc" -ne 0 ] && { rc=1; echo "run.sh: $h failed (exit $hrc), see $log" >&2; tail -30 "$log" >&2; }
    secs=$(echo "$t1 - $t0" | bc)
    rate=$(echo "scale=0; ${execs:-0} / $secs" | bc)
    printf '{"reader": "%s", "harness": "%s", "executions": %s, "crashes": %s, "seconds": %.1f, "exec_per_s": %s, "budget": "%s", "revision": "%s"}\n' \
        "${READER[$h]:-$h}" "$h" "${execs:-0}" "$crashes" "$secs" "$rate" \
        "${budget[*]}" "$rev" >>"$RES/fuzz.jsonl"
    printf '| %s | %s | %s | %s | %.0f | %s |\n' "${READER[$h]:-$h}" "$h" \
        "${execs:-0}" "$crashes" "$secs" "$rate" >>"$RES/fuzz.md"
done
cat "$RES/fuzz.md"
exit $rc
