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
# (nccl-tests' check: average < 0.9 x the floor; its footer says FAILED,
# its -J average_bus_bandwidth.okay is false; it exits non-zero - 7, its
# testNumResults - where lbscale exits 1, its runtime failure)
NCCL_TESTS_MIN_BW=5 run 0 --coll allreduce -b 1K -e 2K -J "$TOP/minbw.json"
if [ "$RC" -eq 1 ] && grep -q "^# Check failed: avg bus bandwidth 0 GB/s < 0.9 x NCCL_TESTS_MIN_BW 5" "$OUT" &&
   grep -q '^# Avg bus bandwidth    : 0 FAILED$' "$OUT" &&
   grep -q "below 0.9 x NCCL_TESTS_MIN_BW=5" "$ERR" &&
   "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["average_bus_bandwidth"]["okay"] is False' "$TOP/minbw.json"; then
    ok "NCCL_TESTS_MIN_BW=5: the run fails (exit 1, footer FAILED, -J okay false), as nccl-tests"
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
# both forms where the pattern has them (nccl-tests' two column groups)
ip_none = {"neighbor", "topk_allgather", "onebit"}
for r in rows:
    for pre in ("oop", "ip"):
        have = pre + "_time_us" in r
        want = pre == "oop" or r.get("coll") not in ip_none
        if have != want:
            err.append("%s: %s form %s" % (r.get("coll"), pre, "missing" if want else "present"))
        elif have and (r[pre + "_wrong"] != 0 or not r[pre + "_time_us"] > 0):
            err.append("%s size %d: %s wrong %s" % (r["coll"], r["size"], pre, r[pre + "_wrong"]))
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
sizes=$(printf '%s\n' "$out" | awk '!/^#/ && NF {print $1}' | tr '\n' ' ')
[ "$sizes" = "1024 2048 4096 " ] && ok "-b 1K -e 4K are 1024..4096 bytes (nccl-tests K)" ||
    not_ok "-b 1K -e 4K are 1024..4096 bytes" "sizes: $sizes"
printf '%s\n' "$out" | grep -q '^# Avg bus bandwidth    : ' && ok "closing 'Avg bus bandwidth' line" ||
    not_ok "closing 'Avg bus bandwidth' line" "$out"
out=$("$BIN" coll --coll allreduce --message-size 8:64 --latency --no-save 2>&1)
printf '%s\n' "$out" | grep -q 'Avg Latency(us) Min Latency(us) Max Latency(us) Iterations' &&
    [ "$(printf '%s\n' "$out" | grep -c '^allreduce')" -eq 4 ] &&
    ok "--latency: OSU table, --message-size 8:64 gives 4 sizes" || not_ok "--latency OSU table" "$out"
out=$("$BIN" coll --coll bcast -e 64 -c 0 --no-save 2>&1)
printf '%s\n' "$out" | grep -q 'N/A' && ok "-c 0: #wrong is N/A" || not_ok "-c 0: #wrong is N/A" "$out"
for a in "-d half" "-o max" "-c 2"; do
    "$BIN" coll $a --no-save >/dev/null 2>"$TOP/e"
    [ $? -eq 2 ] && [ "$(wc -l <"$TOP/e")" -eq 1 ] && ok "coll $a refused (exit 2, one line)" ||
        not_ok "coll $a refused" "$(cat "$TOP/e")"
done


# ---- nccl-tests parity (issue 32 item 5) ------------------------------------
# The layout below is written from nccl-tests 2.19.6 as published
# (github.com/NVIDIA/nccl-tests, src/util.cu at a0b82b2:
# writeResultHeader's "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s
# %7s  %6s  %6s  %6s" name and unit lines, writeBenchmarkLinePreamble's
# "%12li  %12li  %8s  %6s  %6s" and writeBenchmarkLineBody's
# "  %7s  %6s  %6s  %6g" twice per row, writeResultFooter's lines; -J:
# jsonOutputInit, writeDeviceReport's config, JSON_FILE_VERSION 3).
# lbscale's own columns may only follow nccl-tests' thirteen.
NP=2; [ -z "$MPIRUN" ] && NP=0
NPR=$((NP > 0 ? NP : 1)); ROOT=$((NPR - 1))
run "$NP" --coll allreduce,allgather,bcast,neighbor -b 64 -e 256 -n 2 -w 1 \
    -r "$ROOT" --no-save -J "$TOP/nt.json"
cp "$OUT" "$TOP/nt.txt"
msg=$("$PY" - "$TOP/nt.txt" "$TOP/nt.json" "$NPR" "$ROOT" "$RC" <<'PYEOF'
import json, sys
txt, js, P, root, rc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
HEAD = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s"
ROW = "%12s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s"
names = ("size", "count", "type", "redop", "root", "time", "algbw", "busbw",
         "#wrong", "time", "algbw", "busbw", "#wrong")
units = ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "",
         "(us)", "(GB/s)", "(GB/s)", "")
err = [] if rc == 0 else ["exit %d" % rc]
lines = open(txt).read().splitlines()
heads = [i for i, l in enumerate(lines) if l.startswith(HEAD % names)]
if len(heads) != 4:
    err.append("%d header lines in nccl-tests' layout, expected 4" % len(heads))
for i in heads:
    g = lines[i - 1]
    if not (g.startswith("#") and 0 < g.find("out-of-place") < g.find("in-place")):
        err.append("group line: %r" % g)
    if not lines[i + 1].startswith((HEAD % units).rstrip()):
        err.append("units line: %r" % lines[i + 1])
    if not lines[i - 3].startswith("# Collective test starting: "):
        err.append("no '# Collective test starting' before line %d" % i)
    if "oop_med" not in lines[i] or "ip_med" not in lines[i]:
        err.append("lbscale's median columns not labelled")
rows = {}
coll = None
for l in lines:
    if l.startswith("# Collective test starting: "):
        coll = l.split()[-1]
    elif l.strip() and not l.startswith("#"):
        t = l.split()
        if len(t) < 13 or not l.startswith(ROW % tuple(t[:13])):
            err.append("row not in nccl-tests' widths: %r" % l)
            continue
        rows.setdefault(coll, []).append(t)
want_count = {"allreduce": lambda s: s // 4, "allgather": lambda s: s // 4 // P,
              "bcast": lambda s: s // 4, "neighbor": lambda s: s // 4}
for c, f in want_count.items():
    for t in rows.get(c, []):
        S = int(t[0])
        if int(t[1]) != f(S):
            err.append("%s %d: count %s, nccl-tests' is %d" % (c, S, t[1], f(S)))
        if t[2] != "float" or t[3] != ("sum" if c == "allreduce" else "none"):
            err.append("%s: type/redop %s %s" % (c, t[2], t[3]))
        if int(t[4]) != (root if c == "bcast" else -1):
            err.append("%s: root %s" % (c, t[4]))
        if c == "neighbor" and t[9:13] != ["N/A"] * 4:
            err.append("neighbor: in-place columns %s, expected N/A" % t[9:13])
        if c != "neighbor" and (t[8] != "0" or t[12] != "0"):
            err.append("%s: #wrong %s %s" % (c, t[8], t[12]))
if sorted(rows) != sorted(want_count):
    err.append("tables of %s" % sorted(rows))
foot = [l for l in lines if l.startswith("# Out of bounds values") or
        l.startswith("# Avg bus bandwidth") or l.startswith("# Collective test concluded")]
if len(foot) != 3 or foot[0] != "# Out of bounds values : 0 OK":
    err.append("footer %s" % foot)
d = json.load(open(js))
for k in ("version", "start_time", "args", "env", "nccl_version", "config",
          "results", "out_of_bounds", "average_bus_bandwidth", "errors", "end_time"):
    if k not in d:
        err.append("-J: no %s" % k)
if d.get("version") != 3:
    err.append("-J version %s" % d.get("version"))
cfg = d.get("config", {})
for k in ("nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "step_factor",
          "warmup_iters", "iterations", "aggregated_iterations", "validation",
          "devices"):
    if k not in cfg:
        err.append("-J config: no %s" % k)
if len(cfg.get("devices", [])) != P or any("hostname" not in x for x in cfg.get("devices", [])):
    err.append("-J devices %s" % cfg.get("devices"))
res = d.get("results", [])
if len(res) != sum(len(v) for v in rows.values()):
    err.append("-J: %d results, the table has %d rows" % (len(res), sum(len(v) for v in rows.values())))
for r in res:
    for k in ("size", "count", "type", "redop", "root", "out_of_place",
              "in_place", "actual_iterations", "experiment_name"):
        if k not in r:
            err.append("-J result: no %s" % k)
    oop = r.get("out_of_place") or {}
    if sorted(oop) != ["alg_bw", "bus_bw", "nwrong", "time"]:
        err.append("-J out_of_place keys %s" % sorted(oop))
    if (r.get("in_place") is None) != (r.get("coll") == "neighbor"):
        err.append("-J %s in_place %s" % (r.get("coll"), r.get("in_place")))
if d.get("out_of_bounds") != {"count": 0, "okay": True} or \
        d.get("average_bus_bandwidth", {}).get("okay") != "unchecked":
    err.append("-J summary %s %s" % (d.get("out_of_bounds"), d.get("average_bus_bandwidth")))
print("; ".join(err[:6]))
PYEOF
)
[ -z "$msg" ] && ok "nccl-tests' layout: header, units, widths, count/redop/root, footer, -J keys" ||
    not_ok "nccl-tests' layout" "$msg" "$(head -c 600 "$ERR")"

# -J never overwrites: an existing FILE is kept, FILE.0 written
run 0 --coll allreduce -e 64 -n 1 -w 0 --no-save -J "$TOP/nt.json"
[ "$RC" -eq 0 ] && [ -s "$TOP/nt.json.0" ] && grep -q "^# Writing JSON output to $TOP/nt.json.0" "$OUT" &&
    ok "-J FILE exists: FILE.0 written, as nccl-tests" || not_ok "-J FILE exists: FILE.0" "rc $RC" "$(cat "$ERR")"

# -a: how nccl-tests' time is reduced over ranks
names=(rank0 avg min max)
for a in 0 1 2 3; do
    run "$NP" --coll allreduce -e 64 -n 2 -w 0 -a "$a" --json --no-save
    if [ "$RC" -eq 0 ] && "$PY" -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert rows and all(r["average"] == sys.argv[2] and r["oop_time_us"] > 0 for r in rows)' "$OUT" "${names[$a]}"; then
        ok "-a $a: nccl-tests' time is the ${names[$a]} over ranks"
    else
        not_ok "-a $a" "rc $RC" "$(head -c 300 "$OUT" "$ERR")"
    fi
done
run 0 --coll allreduce -e 64 -n 1 -w 0 -a 2 --no-save
grep -q "min over ranks (-a 2)" "$OUT" && ok "-a 2 stated in the preamble" || not_ok "-a 2 stated" "$(head -12 "$OUT")"

# -n, -w, -m, -N with nccl-tests' meanings
run 0 --coll allreduce -b 8 -e 16 -n 4 -w 2 -m 3 -N 2 --out "$TOP/runN"
cp "$OUT" "$TOP/n.txt"
if [ "$RC" -eq 0 ] && grep -q "warmup iters: 2 iters: 4 agg iters: 3" "$TOP/n.txt" &&
   [ "$(grep -c '^# Collective test starting: allreduce' "$TOP/n.txt")" -eq 2 ] &&
   "$PY" -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(rows) == 4, len(rows)
assert all(r["iters"] == 4 and r["warmup"] == 2 and r["agg_iters"] == 3 for r in rows)
assert [r["size"] for r in rows] == [8, 16, 8, 16]' "$TOP/runN/coll.jsonl"; then
    ok "-n 4 -w 2 -m 3 -N 2: iterations, warm-up, aggregated calls, two cycles"
else
    not_ok "-n -w -m -N" "rc $RC" "$(head -c 400 "$TOP/n.txt" "$ERR")"
fi
out=$("$BIN" coll --coll allreduce -b 8 -e 32 -i 8 --no-save 2>&1)
sizes=$(printf '%s\n' "$out" | awk '!/^#/ && NF {print $1}' | tr '\n' ' ')
[ "$sizes" = "8 16 24 32 " ] && ok "-i 8: sizes step by 8 bytes (nccl-tests' stepbytes)" ||
    not_ok "-i 8" "sizes: $sizes"
out=$("$BIN" coll --coll allreduce -b 8 -e 128 -i 8 -f 4 --no-save 2>&1)
sizes=$(printf '%s\n' "$out" | awk '!/^#/ && NF {print $1}' | tr '\n' ' ')
[ "$sizes" = "8 32 128 " ] && ok "-i 8 -f 4: the factor wins, as nccl-tests" || not_ok "-i -f" "sizes: $sizes"
run 0 --coll allreduce -e 64 -n 1 -w 0 -t 1 -g 1 --no-save
[ "$RC" -eq 0 ] && ok "-t 1 -g 1 accepted" || not_ok "-t 1 -g 1 accepted" "$(cat "$ERR")"
bad 0 "-t 2 refused (one rank per process)" "-t" -t 2
bad 0 "-g 2 refused (one device per rank)" "-g" -g 2
bad 0 "-a 4 refused" "-a" -a 4
bad 0 "-m 8:64 (OSU's range) names --message-size" "--message-size" -m 8:64
bad 0 "-J to a name not ending in .json" "-J" -J out.txt
bad 0 "-J with -N 0 (never written)" "-J" -N 0 -J x.json

# --layout lbscale: the one-group table of before
out=$("$BIN" coll --coll allreduce -e 64 -n 1 -w 0 --layout lbscale --no-save 2>&1)
printf '%s\n' "$out" | grep -q '^# coll .*size(B) .*time(us)' &&
    printf '%s\n' "$out" | grep -q '^allreduce ' && ok "--layout lbscale: the classic table" ||
    not_ok "--layout lbscale" "$out"

# Round trip: the text and the -J of one run read back by sim calibrate,
# the same samples from each (allreduce, allgather, alltoall, bcast: 4 x 3)
if [ -z "$MPIRUN" ]; then
    skip "sim calibrate reads coll's nccl-tests text and -J" "mpirun not found"
else
    run 2 --coll allreduce,allgather,alltoall,bcast -b 1K -e 16K -f 4 -n 2 \
        -w 1 --no-save -J "$TOP/rt.json"
    cp "$OUT" "$TOP/rt.txt"
    rrc=$RC
    for f in rt.txt rt.json; do
        (cd "$TOP" && timeout 60 "$BIN" sim calibrate "$TOP/$f" \
            --out "$TOP/$f.plat.json" --mem-bw-gbs 10 >"$TOP/$f.out" 2>&1)
        echo "rc $?" >>"$TOP/$f.out"
    done
    if [ "$rrc" -eq 0 ] && grep -q "from 12 samples" "$TOP/rt.txt.out" &&
       grep -q "from 12 samples" "$TOP/rt.json.out" &&
       grep -q "^rc 0" "$TOP/rt.txt.out" && grep -q "^rc 0" "$TOP/rt.json.out" &&
       [ -s "$TOP/rt.txt.plat.json" ] && [ -s "$TOP/rt.json.plat.json" ]; then
        ok "sim calibrate reads coll's nccl-tests text and -J (12 samples each)"
    else
        not_ok "sim calibrate round trip" "$(cat "$TOP/rt.txt.out" "$TOP/rt.json.out" | head -c 800)"
    fi
fi

tap_end
