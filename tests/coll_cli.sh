#!/usr/bin/env bash
# coll_cli.sh BINARY - `lbscale coll` end to end, printed as TAP:
# --help states the busbw factors; bad input (exit 2, one "lbscale: " line,
# nothing on stdout, no files) alone and under mpirun (only rank 0 speaks);
# every collective on 1, 2 and 3 ranks (3: not a power of two, sizes that
# do not divide) with tiny sizes: wrong = 0 in every row, the JSON fields
# present and consistent, the same rows in <run>/coll.jsonl; and
# `lbscale sim calibrate` accepting those rows.
#
# mpirun cases are skipped when mpirun is missing; every command runs
# under `timeout`, so a hang fails a case instead of blocking CI.
set -u

BIN=${1:?usage: coll_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
export OMP_NUM_THREADS=1

. "$(dirname "$0")/tap.sh"

MPIRUN=$(command -v mpirun 2>/dev/null)
MPIFLAGS=()
if [ -n "$MPIRUN" ] && "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI"; then
    export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
    export OMPI_MCA_rmaps_base_oversubscribe=1
    MPIFLAGS=(--oversubscribe --allow-run-as-root)
fi

# run NP ARGS...: `lbscale coll ARGS` on NP ranks (NP 0: no mpirun) in a
# fresh cwd and results root.  Sets RC OUT ERR RES CWD.
run() {
    local np=$1
    shift
    case_no=$((case_no + 1))
    local d=$TOP/c$case_no
    mkdir -p "$d/res" "$d/cwd"
    RES=$d/res CWD=$d/cwd OUT=$d/stdout ERR=$d/stderr
    if [ "$np" -eq 0 ]; then
        (cd "$CWD" && LBSCALE_RESULTS=$RES timeout 60 "$BIN" coll "$@" \
            >"$OUT" 2>"$ERR")
    else
        (cd "$CWD" && LBSCALE_RESULTS=$RES timeout --kill-after=10 120 \
            "$MPIRUN" "${MPIFLAGS[@]}" -x LBSCALE_RESULTS -np "$np" \
            "$BIN" coll "$@" >"$OUT" 2>"$ERR")
    fi
    RC=$?
}

# bad NP DESC PATTERN ARGS...
bad() {
    local np=$1 desc=$2 pat=$3
    shift 3
    run "$np" "$@"
    local why=()
    [ "$RC" -eq 2 ] || why+=("exit code $RC, expected 2")
    local lines
    lines=$(grep -c '^lbscale: ' "$ERR")
    [ "$lines" -eq 1 ] || why+=("$lines 'lbscale: ' lines on stderr, expected 1")
    if [ "$np" -eq 0 ] && [ "$(wc -l <"$ERR")" -ne 1 ]; then
        why+=("stderr is not exactly one line")
    fi
    grep '^lbscale: ' "$ERR" | grep -qF -- "$pat" || why+=("stderr does not name '$pat'")
    [ -s "$OUT" ] && why+=("stdout not empty: $(head -c 200 "$OUT")")
    [ -z "$(find "$RES" "$CWD" -mindepth 1 | head -n1)" ] ||
        why+=("files created: $(find "$RES" "$CWD" -mindepth 1 | head -n5 | tr '\n' ' ')")
    if [ ${#why[@]} -eq 0 ]; then ok "$desc"; else
        not_ok "$desc" "command: lbscale coll $*" "${why[@]}" \
            "stderr: $(head -c 500 "$ERR")"
    fi
}

# --help
run 0 --help
if [ "$RC" -eq 0 ] && grep -q '2(P-1)/P' "$OUT" && grep -q 'busbw' "$OUT"; then
    ok "--help states the busbw factors"
else
    not_ok "--help states the busbw factors" "rc $RC"
fi

bad 0 "-b larger than -e" "-b" -b 1M -e 1K
bad 0 "-f below 2" "-f" -f 1
bad 0 "unknown collective" "frobnicate" --coll allreduce,frobnicate
bad 0 "unknown topology" "--topo" --topo star
bad 0 "bad size" "-e" -e 12Q
bad 0 "density out of range" "-k" -k 1.5
bad 0 "unknown option" "--bogus" --bogus
NCCL_TESTS_MIN_BW=abc bad 0 "NCCL_TESTS_MIN_BW not a number" "NCCL_TESTS_MIN_BW" --coll allreduce -b 1K -e 1K
# NCCL_TESTS_MIN_BW as nccl-tests: an average bus bandwidth below it fails
# the run (exit 1); 1 rank moves no bus bytes, so any floor above 0 fails
NCCL_TESTS_MIN_BW=5 run 0 --coll allreduce -b 1K -e 2K
if [ "$RC" -eq 1 ] && grep -q "^# Check failed: avg bus bandwidth 0 GB/s < NCCL_TESTS_MIN_BW 5" "$OUT" &&
   grep -q "below NCCL_TESTS_MIN_BW=5" "$ERR"; then
    ok "NCCL_TESTS_MIN_BW=5: the run fails (exit 1), as nccl-tests"
else
    not_ok "NCCL_TESTS_MIN_BW=5: the run fails" "rc $RC" "$(tail -3 "$OUT")" "$(cat "$ERR")"
fi
NCCL_TESTS_MIN_BW=0 run 0 --coll allreduce -b 1K -e 2K
[ "$RC" -eq 0 ] && ok "NCCL_TESTS_MIN_BW=0: no floor" || not_ok "NCCL_TESTS_MIN_BW=0: no floor" "rc $RC" "$(cat "$ERR")"
# --backend nccl without an NCCL build or a GPU: one line, exit 2.  Where
# NCCL works the command would run for real, so the case is skipped there.
if (cd "$TOP" && timeout 60 "$BIN" coll --backend nccl --coll allreduce \
        -e 8 -n 1 -w 0 --no-save >/dev/null 2>&1); then
    ok "nccl without NCCL or GPU # SKIP NCCL works here"
else
    bad 0 "nccl without NCCL or GPU" "nccl" --backend nccl
    bad 0 "nccl without NCCL or GPU (--comm)" "nccl" --comm nccl
fi

# check NP: rows of all collectives, JSON on stdout == coll.jsonl
T=(-b 8 -e 40K -f 8 -n 3 -w 1 --json)
check_rows() {
    local np=$1 desc=$2
    run "$np" "${T[@]}" --out "$TOP/run$np"
    local msg
    msg=$("$PY" - "$OUT" "$TOP/run$np/coll.jsonl" "$((np > 0 ? np : 1))" <<'EOF'
import json, sys
out, saved, P = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [json.loads(l) for l in open(out) if l.strip()]
srows = [json.loads(l) for l in open(saved) if l.strip()]
err = []
if rows != srows:
    err.append("stdout rows differ from coll.jsonl (%d vs %d)" % (len(rows), len(srows)))
need = ["bench", "coll", "ranks", "nodes", "ranks_per_node", "bytes", "size", "count",
        "time_us", "time_us_min", "time_us_max", "algbw_gbps", "busbw_gbps",
        "wrong"]
colls = {"allreduce", "allgather", "allgatherv", "reduce_scatter",
         "alltoall", "bcast", "neighbor", "masked_allreduce",
         "topk_allgather", "onebit"}
seen = set()
fac = {"allreduce": 2 * (P - 1) / P, "allgather": (P - 1) / P,
       "reduce_scatter": (P - 1) / P, "alltoall": (P - 1) / P, "bcast": 1.0}
for r in rows:
    miss = [k for k in need if k not in r]
    if miss:
        err.append("%s: missing %s" % (r.get("coll"), miss)); continue
    seen.add(r["coll"])
    if r["bench"] != "coll" or r["ranks"] != P or r["nodes"] != 1 \
            or r["ranks_per_node"] != P:
        err.append("bad bench/ranks/nodes/ranks_per_node: %s" % r)
    if r["wrong"] != 0:
        err.append("%s size %d: wrong %d" % (r["coll"], r["size"], r["wrong"]))
    if not (0 < r["time_us_min"] <= r["time_us"] <= r["time_us_max"]):
        err.append("%s: times not ordered" % r["coll"])
    if r["size"] > 40000 or r["size"] <= 0 or r["count"] <= 0:
        err.append("%s: size %d out of the sweep" % (r["coll"], r["size"]))
    alg = r["size"] / r["time_us"] / 1e3
    if abs(r["algbw_gbps"] - alg) > 1e-6 * max(1, alg):
        err.append("%s: algbw %g != size/time %g" % (r["coll"], r["algbw_gbps"], alg))
    f = fac.get(r["coll"])
    if f is not None and abs(r["busbw_gbps"] - alg * f) > 1e-6 * max(1, alg):
        err.append("%s: busbw factor" % r["coll"])
    exp = {"allreduce": r["size"], "bcast": r["size"], "alltoall": r["size"],
           "allgather": r["size"] / P}.get(r["coll"])
    if exp is not None and r["bytes"] != exp:
        err.append("%s: bytes %g, expected %g" % (r["coll"], r["bytes"], exp))
if seen != colls:
    err.append("collectives missing: %s" % sorted(colls - seen))
print("; ".join(err[:5]))
EOF
)
    if [ "$RC" -eq 0 ] && [ -z "$msg" ]; then ok "$desc"; else
        not_ok "$desc" "rc $RC" "$msg" "stderr: $(head -c 500 "$ERR")"
    fi
}

check_rows 0 "1 rank (self): every collective, wrong 0, fields, coll.jsonl"
if [ -z "$MPIRUN" ]; then
    for d in "bad input under mpirun" "2 ranks" "3 ranks" "calibrate"; do
        skip "$d" "mpirun not found"
    done
else
    bad 2 "bad input under mpirun: one line from rank 0, no files" \
        "frobnicate" --coll frobnicate -b 8 -e 64
    bad 2 "-b > -e under mpirun" "-b" -b 64 -e 8
    check_rows 2 "2 ranks (mpi): every collective, wrong 0, fields"
    check_rows 3 "3 ranks (mpi): every collective, wrong 0, fields"
    run 0 --help  # fresh dirs
    (cd "$CWD" && timeout 60 "$BIN" sim calibrate "$TOP/run2/coll.jsonl" \
        "$TOP/run3/coll.jsonl" --out "$TOP/local.json" --mem-bw-gbs 10 \
        >"$OUT" 2>"$ERR")
    RC=$?
    if [ "$RC" -eq 0 ] && [ -s "$TOP/local.json" ] &&
        grep -q 'skipped' "$OUT"; then
        ok "sim calibrate reads coll rows (other patterns skipped)"
    else
        not_ok "sim calibrate reads coll rows (other patterns skipped)" \
            "rc $RC" "$(cat "$OUT" "$ERR" | head -c 500)"
    fi
fi

# ---- nccl-tests and OSU conventions ---------------------------------------
out=$("$BIN" coll --coll allreduce -b 1K -e 4K --no-save 2>&1)
sizes=$(printf '%s\n' "$out" | awk '$1 == "allreduce" {print $2}' | tr '\n' ' ')
[ "$sizes" = "1024 2048 4096 " ] && ok "-b 1K -e 4K are 1024..4096 bytes (nccl-tests K)" ||
    not_ok "-b 1K -e 4K are 1024..4096 bytes" "sizes: $sizes"
printf '%s\n' "$out" | grep -q '^# Avg bus bandwidth    : ' && ok "closing 'Avg bus bandwidth' line" ||
    not_ok "closing 'Avg bus bandwidth' line" "$out"
out=$("$BIN" coll --coll allreduce -m 8:64 --latency --no-save 2>&1)
printf '%s\n' "$out" | grep -q 'Avg Latency(us) Min Latency(us) Max Latency(us) Iterations' &&
    [ "$(printf '%s\n' "$out" | grep -c '^allreduce')" -eq 4 ] &&
    ok "--latency: OSU table, -m 8:64 gives 4 sizes" || not_ok "--latency OSU table" "$out"
out=$("$BIN" coll --coll bcast -e 64 -c 0 --no-save 2>&1)
printf '%s\n' "$out" | grep -q 'N/A' && ok "-c 0: #wrong is N/A" || not_ok "-c 0: #wrong is N/A" "$out"
for a in "-d half" "-o max" "-c 2" "-m 8"; do
    "$BIN" coll $a --no-save >/dev/null 2>"$TOP/e"
    [ $? -eq 2 ] && [ "$(wc -l <"$TOP/e")" -eq 1 ] && ok "coll $a refused (exit 2, one line)" ||
        not_ok "coll $a refused" "$(cat "$TOP/e")"
done

tap_end
