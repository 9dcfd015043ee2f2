#!/usr/bin/env bash
# cli_bad_input.sh BINARY - the real lbscale binary against bad and good
# command lines, printed as TAP.
#
# Every bad input must: exit exactly 2, print exactly one line on stderr
# that starts with "lbscale: " and names the offending word, print nothing
# on stdout, and create no file (neither under $LBSCALE_RESULTS nor in the
# working directory).  The good cases check --help, --list and one tiny
# optimizer run with its results directory (meta.json, optim.jsonl).
#
# Every invocation is tiny (1M elements, --stream-gbps given) and under a
# timeout, so even a regression that lets a bad input run stays cheap.
set -u

BIN=${1:?usage: cli_bad_input.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

. "$(dirname "$0")/tap.sh"

# Cheap defaults for optim cases whose point is elsewhere.
Q=(--elements 1M --iters 1 --warmup 0 --stream-gbps 10 --no-save)
# Same but saving (default), to prove a bad spec writes nothing.
S=(--elements 1M --iters 1 --warmup 0 --stream-gbps 10)

bad "unknown verb"                     "bogusverb"        bogusverb
bad "a typo'd verb: did you mean"     "did you mean 'compare'" comapre A B
bad "a typo'd option: did you mean"   "did you mean '--elements'" optim --optim sgd --elemnts 1M
bad "a typo'd --opt=v: did you mean"  "did you mean '--margin'" compare A B --marign=0.1
bad "a typo'd optimizer: did you mean" "did you mean 'lamb'" optim --optim lmab "${S[@]}"
bad "a typo'd compressor: did you mean" "did you mean 'topk'" compress --compressor tokp --elements 1K --no-save
bad "unknown option"                   "--bogus-opt"      optim --optim sgd "${S[@]}" --bogus-opt
bad "unknown option (stream)"          "--bogus-opt"      stream --elements 1M --bogus-opt
bad "unknown option (demo)"            "--bogus-opt"      demo --elements 1M --bogus-opt
bad "unknown optimizer"                "foo"              optim --optim foo "${S[@]}"
bad "unknown key"                      "zz"               optim --optim lamb:zz=1 "${S[@]}"
bad "key of another optimizer"         "b1"               optim --optim sgd:b1=0.9 "${S[@]}"
bad "lr < 0"                           "'lr'|-0.5"        optim --optim lamb:lr=-0.5 "${S[@]}"
bad "b1 = 1"                           "'b1'"             optim --optim lamb:b1=1 "${S[@]}"
bad "b2 = -0.1"                        "'b2'|-0.1"        optim --optim lamb:b2=-0.1 "${S[@]}"
bad "eps = 0"                          "'eps'"            optim --optim lamb:eps=0 "${S[@]}"
bad "eps = -1"                         "'eps'|-1"         optim --optim adamw:eps=-1 "${S[@]}"
bad "lr = nan"                         "'lr'|nan"         optim --optim lamb:lr=nan "${S[@]}"
bad "lr = inf"                         "'lr'|inf"         optim --optim sgd:lr=inf "${S[@]}"
bad "malformed number '1e'"            "'lr'|1e"          optim --optim lamb:lr=1e "${S[@]}"
bad "malformed number 'abc'"           "'wd'|abc"         optim --optim lamb:wd=abc "${S[@]}"
bad "malformed number '10Q'"           "'lr'|10Q"         optim --optim lars:lr=10Q "${S[@]}"
bad "duplicate key"                    "'lr'|twice"       optim --optim lamb:lr=0.1,lr=0.2 "${S[@]}"
bad "trailing comma in spec"           "lamb"             optim --optim lamb:lr=0.1, "${S[@]}"
bad "spec item without '='"            "lr"               optim --optim lamb:lr "${S[@]}"
bad "empty spec"                       "empty"            optim --optim "" "${S[@]}"
bad "missing --optim"                  "--optim"          optim "${S[@]}"
bad "missing value for --optim"        "--optim"          optim --elements 1M --optim
bad "--elements 10Q"                   "--elements|10Q"   optim --optim sgd --stream-gbps 10 --elements 10Q
bad "--elements abc"                   "--elements|abc"   optim --optim sgd --stream-gbps 10 --elements abc
bad "--elements 0"                     "--elements|0"     optim --optim sgd --stream-gbps 10 --elements 0
bad "--elements -5"                    "--elements|-5"    optim --optim sgd --stream-gbps 10 --elements -5
bad "--elements 1.5"                   "--elements|1.5"   stream --elements 1.5
bad "--threads 0"                      "--threads"        optim --optim sgd "${S[@]}" --threads 0
bad "--threads 0 (stream)"             "--threads"        stream --elements 1M --threads 0
bad "--iters abc"                      "--iters|abc"      optim --optim sgd --elements 1M --stream-gbps 10 --iters abc
bad "--iters 0 (stream)"               "--iters"          stream --elements 1M --iters 0
bad "--stream-gbps nan"                "--stream-gbps"    optim --optim sgd --elements 1M --stream-gbps nan
bad "--layers unknown preset"          "nope"             optim --optim sgd "${S[@]}" --layers nope
bad "--layers uniform:0"               "uniform:0"        optim --optim sgd "${S[@]}" --layers uniform:0
bad "--layers more layers than elements" "--layers"       optim --optim sgd --elements 10 --stream-gbps 10 --layers uniform:20
# JSON layer files (validated before anything is measured or written)
printf '{"layers": [' >"$TOP/trunc.json"
printf '{"layers": [{"name": "a", "shape": [0, 3]}]}' >"$TOP/zero.json"
printf '{"layers": []}' >"$TOP/empty.json"
printf '{"layers": [{"name": "fc.w", "shape": [16, 8]}, {"name": "fc.b", "shape": [16]}]}' \
    >"$TOP/good.json"
bad "--layers missing .json file"      "/nonexistent/x.json" optim --optim lamb "${S[@]}" --layers /nonexistent/x.json
bad "--layers malformed .json"         "trunc.json"       optim --optim lamb "${S[@]}" --layers "$TOP/trunc.json"
bad "--layers .json zero dimension"    "zero.json|'a'"    optim --optim lamb "${S[@]}" --layers "$TOP/zero.json"
bad "--layers .json without layers"    "empty.json"       optim --optim lamb "${S[@]}" --layers "$TOP/empty.json"
bad "--comm bogus"                     "bogus"            optim --optim sgd "${S[@]}" --comm bogus
bad "optim --help bogusname"           "bogusname"        optim --help bogusname
bad "--out without directory"          "--out"            optim --optim sgd --elements 1M --stream-gbps 10 --out
C=(--elements 1M --iters 1 --warmup 0 --stream-gbps 10)
bad "compress: k=0"                     "'k'"              compress --compressor topk:k=0 "${C[@]}"
bad "compress: k>1"                     "'k'"              compress --compressor randk:k=1.5 "${C[@]}"
bad "compress: r<1"                     "'r'"              compress --compressor powersgd:r=0 "${C[@]}"
bad "compress: unknown compressor"      "zip"              compress --compressor zip "${C[@]}"
bad "compress: ef on a lossless one"    "ef"               compress --compressor none:ef=1 "${C[@]}"
bad "compress: unknown key"             "zz"               compress --compressor topk:zz=1 "${C[@]}"
bad "optim: --trace without record"     "--trace"          optim --optim sgd "${S[@]}" --trace x.jsonl
bad "optim: --comm record:0"            "record"           optim --optim sgd "${S[@]}" --comm record:0
# --compress: with an optimizer that communicates itself, unknown
# compressor or key, ef where refused (optim timed and record, train)
bad "optim: compress with slamb"        "topk|slamb"       optim --optim slamb --compress topk:k=0.01 "${S[@]}"
bad "optim: compress with onebit_lamb"  "sign|onebit_lamb" optim --optim onebit_lamb --compress sign "${S[@]}"
bad "optim: compress with dmsgd (rec)"  "fp16|dmsgd"       optim --optim dmsgd --compress fp16 --comm record:4 --elements 1M --steps 1
bad "optim: unknown compressor"         "zip"              optim --optim lamb --compress zip "${S[@]}"
bad "optim: unknown compressor key"     "zz"               optim --optim lamb --compress topk:zz=1 "${S[@]}"
bad "optim: compress ef on none"        "ef"               optim --optim lamb --compress none:ef=1 --comm record:4 --elements 1M --steps 1
bad "train: compress with decentlam"    "sign|decentlam"   train --optim decentlam --compress sign:ef=1 --max-steps 1
bad "train: unknown compressor key"     "qsgd|foo"         train --optim lamb --compress qsgd:foo=1 --max-steps 1
bad "train: compress ef on fp16"        "ef"               train --optim lamb --compress fp16:ef=1 --max-steps 1
bad "optim: compress ef on bf16"        "bf16|ef"          optim --optim lamb --compress bf16:ef=1 --comm record:4 --elements 1M --steps 1

# ---- issue 14 (7): sizes that overflow or cannot fit are refused up front --
bad "stream: --elements 2^61 wraps size_t" "--elements 2305843009213693952|address space" stream --elements 2305843009213693952
bad "stream --device cuda: 2^62 wraps"  "--elements|address space" stream --device cuda --elements 4611686018427387904
bad "stream: more than memory"          "--elements|memory" stream --elements 1000G
bad "optim: more than memory"           "--elements 1000000000000|memory" optim --optim lamb --elements 1000G --stream-gbps 10
grep -q -- '--layers' "$ERR" && not_ok "optim --elements 1000G does not blame --layers" "$(cat "$ERR")" ||
    ok "optim --elements 1000G does not blame --layers"
bad "optim: bert preset beyond memory"  "--elements|memory" optim --optim lamb --elements 1000G --layers bert --stream-gbps 10
printf '{"layers": [{"name": "big", "shape": [17179869184, 17179869184, 17179869184]}]}' >"$TOP/huge.json"
bad "--layers .json shape wraps size_t" "huge.json|'big'|address space" optim --optim lamb --stream-gbps 10 --layers "$TOP/huge.json"
bad "optim --comm record: beyond memory" "--elements|memory" optim --optim lamb --comm record:4 --elements 1000G --steps 1
avail_gb=$(awk '/MemAvailable/ { print int($2 / 1048576) }' /proc/meminfo)
if [ "${avail_gb:-0}" -lt 50 ]; then
    bad "compress: more than memory"    "--elements 4000000000|memory" compress --compressor topk:k=0.01 --elements 4000000000 --stream-gbps 10
else
    skip "compress: more than memory" "$avail_gb GB available: 4e9 elements would fit"
fi

# ---- issue 14 (8): results readers take regular files only, within a cap --
# finishes DESC PATTERN ARGS...: ends within the timeout (no hang) and
# stderr names PATTERN.
finishes() {
    local desc=$1 pat=$2
    shift 2
    run "$@"
    if [ "$RC" -ne 124 ] && grep -qF -- "$pat" "$ERR"; then ok "$desc"; else
        not_ok "$desc" "command: lbscale $*" "exit $RC" "stderr: $(head -c 300 "$ERR")"
    fi
}
mkdir -p "$TOP/zrun"
echo '{}' >"$TOP/zrun/meta.json"
ln -s /dev/zero "$TOP/zrun/optim.jsonl"
mkfifo "$TOP/zrun/coll.jsonl"
finishes "report: optim.jsonl -> /dev/zero does not hang" "optim.jsonl: not a regular file" report "$TOP/zrun" --text
finishes "report: a FIFO coll.jsonl does not hang" "coll.jsonl: not a regular file" report "$TOP/zrun" --text
mkfifo "$TOP/base.json"
bad "check: a FIFO baseline"            "base.json|regular file" check "$TOP/zrun" --baseline "$TOP/base.json"
good_help() { run "$1" --help; grep -q "256 MiB" "$OUT"; }
good_help report && ok "report --help states the 256 MiB cap" || not_ok "report --help states the 256 MiB cap"
good_help check && ok "check --help states the 256 MiB cap" || not_ok "check --help states the 256 MiB cap"

# ---- good inputs ----------------------------------------------------------

# good DESC CHECK ARGS...: exit 0, CHECK (a shell snippet) must succeed.
good() {
    local desc=$1 check=$2
    shift 2
    run "$@"
    local why=()
    [ "$RC" -eq 0 ] || why+=("exit code $RC, expected 0")
    (eval "$check") || why+=("check failed: $check")
    if [ ${#why[@]} -eq 0 ]; then
        ok "$desc"
    else
        not_ok "$desc" "command: lbscale $*" "${why[@]}" \
            "stdout: $(head -c 500 "$OUT")" "stderr: $(head -c 500 "$ERR")"
    fi
}

good "lbscale --help" 'grep -q "^usage: lbscale" "$OUT" && [ ! -s "$ERR" ]' --help
for v in stream optim demo; do
    good "$v --help" "grep -q '^usage: lbscale $v' \"\$OUT\" && [ ! -s \"\$ERR\" ] &&
        [ -z \"\$(find \"\$RES\" \"\$CWD\" -mindepth 1)\" ]" $v --help
done
good "optim --help lamb lists its keys" \
    'grep -q "lamb" "$OUT" && grep -qw "b1" "$OUT" && grep -qw "wd" "$OUT"' \
    optim --help lamb
good "optim --list lists sgd lars lamb adamw" \
    'for o in sgd lars lamb adamw; do grep -qw "$o" "$OUT" || exit 1; done' \
    optim --list

# issue 17: OpenBLAS's kernel family.  A forced fallback (Prescott) is
# replaced at start-up on an AVX2/AVX-512 machine (re-exec with
# OPENBLAS_CORETYPE); LBSCALE_BLAS_AUTO=0 keeps it; stream reports sgemm.
if grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=Prescott LBSCALE_BLAS_AUTO=force
    good "blas: Prescott fallback replaced (LBSCALE_BLAS_AUTO=force)" \
        'grep -q "\"blas_core\"" "$OUT" && ! grep -q "\"blas_core\":\"Prescott\"" "$OUT" &&
         grep -q "\"sgemm_gflops\"" "$OUT"' \
        stream --elements 1M --iters 1 --sgemm 256 --no-save --json
    export OPENBLAS_CORETYPE=Prescott LBSCALE_BLAS_AUTO=0
    good "blas: LBSCALE_BLAS_AUTO=0 keeps OpenBLAS's choice" \
        'grep -q "\"blas_core\":\"Prescott\"" "$OUT"' \
        stream --elements 1M --iters 1 --sgemm 256 --no-save --json
    unset OPENBLAS_CORETYPE LBSCALE_BLAS_AUTO
else
    ok "blas: # SKIP no AVX2 on this machine"
    ok "blas: # SKIP no AVX2 on this machine"
fi

# issue 34: OpenMP threads wait passively unless the user chose
# (bench/main.c re-executes with OMP_WAIT_POLICY=PASSIVE), and meta.json
# says which policy ran and who set it
omp_saved=$(env | grep -E '^(OMP_WAIT_POLICY|GOMP_SPINCOUNT)=' || true)
unset OMP_WAIT_POLICY GOMP_SPINCOUNT
omp_meta() {  # omp_meta POLICY SET_BY_LBSCALE: the run in $TOP/ow says so
    "$PY" -c "import json, sys
w = json.load(open(sys.argv[1]))['omp_wait']
sys.exit(not (w['policy'] == sys.argv[2] and str(w['set_by_lbscale']) == sys.argv[3]))" \
        "$TOP/ow/meta.json" "$1" "$2"
}
rm -rf "$TOP/ow"
good "omp wait: passive by default, set by lbscale (meta.json)" \
    'omp_meta PASSIVE True' stream --elements 100K --iters 1 --out "$TOP/ow"
rm -rf "$TOP/ow"
export OMP_WAIT_POLICY=active
good "omp wait: the user's OMP_WAIT_POLICY wins" \
    'omp_meta active False' stream --elements 100K --iters 1 --out "$TOP/ow"
unset OMP_WAIT_POLICY
[ -n "$omp_saved" ] && export $omp_saved

# issue 19: the half-precision compressors travel as one allreduce of 2
# bytes per element, summed in their own format (was an allgather)
for c in fp16 bf16; do
    good "optim record:8 --compress $c: allreduce only, 2 B/element" \
        '"$PY" -c "import json, sys
r = json.loads(open(sys.argv[1]).read())
pc = r[\"per_collective\"]
sys.exit(list(pc) != [\"allreduce\"] or pc[\"allreduce\"][\"bytes_per_step\"] != 2e6
         or r[\"fraction_of_dense\"] != 0.5)" "$OUT"' \
        optim --optim lamb --compress $c --comm record:8 --steps 1 \
        --layers uniform:4 --elements 1M --json --no-save
done

# every optimizer in the registry (optim --list)
for o in $("$BIN" optim --list | sed -n 's/^  \([a-z0-9_]*\) - .*/\1/p'); do
    good "tiny $o run (--no-save) exits 0" \
        '[ -z "$(find "$RES" "$CWD" -mindepth 1)" ] && [ -s "$OUT" ]' \
        optim --optim $o "${Q[@]}" --layers uniform:4
done
good "tiny run with a .json layer file" \
    '"$PY" -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(r[\"elements\"] != 144 or r[\"layers\"] != 2)" "$OUT"' \
    optim --optim lamb --iters 1 --warmup 0 --stream-gbps 10 --no-save --json --layers "$TOP/good.json"
good "tiny run with bert layers" '[ -s "$OUT" ]' \
    optim --optim lamb:lr=0.01,wd=0.01 "${Q[@]}" --layers bert

# The full good run: one JSON line, a results dir with meta.json + optim.jsonl.
run optim --optim sgd --elements 1M --iters 2 --warmup 1 --stream-gbps 10 \
    --json --out "$TOP/outdir"
why=()
[ "$RC" -eq 0 ] || why+=("exit code $RC")
[ "$(wc -l <"$OUT")" -eq 1 ] || why+=("stdout has $(wc -l <"$OUT") lines, expected 1")
[ -s "$ERR" ] && why+=("stderr not empty: $(head -c 300 "$ERR")")
msg=$("$PY" -c '
import json, sys
row = json.loads(open(sys.argv[1]).read())
need = ["optim", "elements", "threads", "step_ms_median", "gbps",
        "stream_gbps", "roofline_frac", "wrong"]
miss = [k for k in need if k not in row]
if miss: sys.exit("missing fields %s" % miss)
if row["optim"] != "sgd": sys.exit("optim = %r" % row["optim"])
if row["elements"] != 1000000: sys.exit("elements = %r" % row["elements"])
if row["wrong"] != 0: sys.exit("wrong = %r" % row["wrong"])
if row["stream_gbps"] != 10: sys.exit("stream_gbps = %r" % row["stream_gbps"])
if not row["step_ms_median"] > 0: sys.exit("step_ms_median not > 0")
if abs(row["roofline_frac"] - row["gbps"] / 10) > 1e-9 * max(1, row["gbps"]):
    sys.exit("roofline_frac != gbps / stream_gbps")
' "$OUT" 2>&1) || why+=("JSON line: $msg")
if [ ${#why[@]} -eq 0 ]; then ok "good run prints one JSON line with the fields"
else not_ok "good run prints one JSON line with the fields" "${why[@]}"; fi

why=()
msg=$("$PY" -c '
import json, sys
m = json.load(open(sys.argv[1]))
for k in ["cpu_model", "topology", "versions", "git_rev", "command"]:
    if k not in m: sys.exit("meta.json lacks %s" % k)
if not isinstance(m["command"], list) or "--optim" not in m["command"]:
    sys.exit("meta.json command = %r" % (m["command"],))
if not isinstance(m["topology"], dict) or not isinstance(m["versions"], dict):
    sys.exit("topology/versions not objects")
' "$TOP/outdir/meta.json" 2>&1) || why+=("$msg")
if [ ${#why[@]} -eq 0 ]; then ok "--out DIR has a valid meta.json"
else not_ok "--out DIR has a valid meta.json" "${why[@]}"; fi

why=()
f=$TOP/outdir/optim.jsonl
if [ ! -f "$f" ]; then
    why+=("no optim.jsonl")
else
    [ "$(wc -l <"$f")" -eq 1 ] || why+=("optim.jsonl has $(wc -l <"$f") lines")
    msg=$("$PY" -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("optim") != "sgd": sys.exit("row optim = %r" % r.get("optim"))
' "$f" 2>&1) || why+=("optim.jsonl: $msg")
fi
left=$(find "$TOP/outdir" -name '.lbscale-tmp.*')
[ -z "$left" ] && [ "$(find "$TOP/outdir" -type f | wc -l)" -eq 2 ] ||
    why+=("unexpected files: $(find "$TOP/outdir" -type f | tr '\n' ' ')")
if [ ${#why[@]} -eq 0 ]; then ok "optim.jsonl has one row, no leftover temp files"
else not_ok "optim.jsonl has one row, no leftover temp files" "${why[@]}"; fi

# Without --out: one new run directory under $LBSCALE_RESULTS, nothing in cwd.
good "default run directory under \$LBSCALE_RESULTS" \
    'd=$(find "$RES" -mindepth 1 -maxdepth 1); [ "$(echo "$d" | wc -l)" -eq 1 ] &&
     [ -f "$d/meta.json" ] && [ "$(wc -l <"$d/optim.jsonl")" -eq 1 ] &&
     [ -z "$(find "$CWD" -mindepth 1)" ]' \
    optim --optim lamb --elements 1M --iters 1 --warmup 0 --stream-gbps 10 --json

# Kernel levels (core/kern): a level that is not one, or one the CPU lacks
# (LBSCALE_CPU_MAX=c makes any CPU look like baseline x86-64), by the
# environment or by --isa: one line, exit 2, nothing run or written.
LBSCALE_ISA=avx9 bad "LBSCALE_ISA not a level" "LBSCALE_ISA|avx9" \
    optim --optim sgd "${S[@]}"
LBSCALE_CPU_MAX=c LBSCALE_ISA=avx512 bad "LBSCALE_ISA level the CPU lacks" \
    "LBSCALE_ISA|avx512|not supported" optim --optim sgd "${S[@]}"
LBSCALE_CPU_MAX=c LBSCALE_ISA=avx2 bad "LBSCALE_ISA lacking (compress)" \
    "LBSCALE_ISA|avx2" compress --compressor sign --elements 1M --stream-gbps 10
bad "--isa not a level"                "--isa|sse9"        optim --optim sgd "${S[@]}" --isa sse9
bad "--isa missing value"              "--isa"             optim --optim sgd "${S[@]}" --isa
LBSCALE_CPU_MAX=c bad "--isa level the CPU lacks" "--isa|avx2|not supported" \
    optim --optim sgd "${S[@]}" --isa avx2
# The huge-page switch (lbscale/mem.h) takes 0 or 1.
LBSCALE_HUGEPAGES=yes bad "LBSCALE_HUGEPAGES not 0 or 1" \
    "LBSCALE_HUGEPAGES|yes|0 or 1" optim --optim sgd "${S[@]}"
LBSCALE_CPU_MAX=c bad "--isa lacking (compress)" "--isa|avx512" \
    compress --compressor topk --elements 1M --stream-gbps 10 --isa avx512
good "--isa c: the row and meta.json name the level" \
    'd=$(find "$RES" -mindepth 1 -maxdepth 1); "$PY" -c "
import json, sys
r = json.loads(open(sys.argv[1] + \"/optim.jsonl\").readline())
m = json.load(open(sys.argv[1] + \"/meta.json\"))
sys.exit(0 if r[\"isa\"] == \"c\" and m[\"isa\"][\"level\"] == \"c\" and
         m[\"isa\"][\"best\"] in (\"c\", \"avx2\", \"avx512\") else 1)
" "$d"' \
    optim --optim lamb --elements 1M --iters 1 --warmup 0 --stream-gbps 10 --isa c
good "compress row names the level (LBSCALE_ISA)" \
    'grep -q "\"isa\": *\"c\"" "$OUT"' \
    compress --compressor sign --elements 1M --iters 1 --warmup 0 --stream-gbps 10 --json --no-save --isa c

# The in-place reference holds a and c only (issue 34): 2 x 32M doubles,
# 488 MiB, as optim --help says; three arrays would put the peak past 732.
good "optim: the in-place reference's two arrays, as --help says" \
    '"$PY" -c "import json,sys; r=json.loads(open(sys.argv[1]).readline()); sys.exit(0 if 488 < r[\"peak_rss_mib\"] < 2.5 * 256e6 / 2**20 else 1)" "$OUT" &&
     "$BIN" optim --help | grep -q "2 x 32M doubles, 512 MB"' \
    optim --optim sgd --elements 1M --iters 1 --warmup 0 --json --no-save

# stream puts sgemm beside the FP32 FMA peak it measured at each kernel
# level the CPU has (issue 34); LBSCALE_CPU_MAX=avx2 hides avx512
FMA_CHECK='"$PY" -c "
import json, sys
r = json.loads(open(sys.argv[1]).readline())
lv = list(r[\"fma_gflops\"])
want = {\"c\": [\"c\"], \"avx2\": [\"c\", \"avx2\"],
        \"avx512\": [\"c\", \"avx2\", \"avx512\"]}[sys.argv[2]]
ok = (lv == want and r[\"fma_level\"] == want[-1] and
      all(v > 0 for v in r[\"fma_gflops\"].values()) and
      r[\"fma_peak_gflops\"] == r[\"fma_gflops\"][want[-1]] and
      abs(r[\"sgemm_fma_frac\"] - r[\"sgemm_gflops\"] / r[\"fma_peak_gflops\"]) < 1e-9)
sys.exit(0 if ok else 1)
" "$OUT"'
BEST=$("$BIN" optim --optim sgd --elements 64K --iters 1 --warmup 0 --stream-gbps 10 --json --no-save 2>/dev/null |
       "$PY" -c "import json,sys; print(json.loads(sys.stdin.readline())['isa'])")
good "stream: sgemm beside the measured FMA peak of each level ($BEST)" \
    "$FMA_CHECK $BEST" stream --elements 1M --iters 1 --sgemm 64 --json --no-save
LBSCALE_CPU_MAX=avx2 good "stream: the FMA probe skips the levels the CPU lacks" \
    "$FMA_CHECK avx2" stream --elements 1M --iters 1 --sgemm 64 --json --no-save

bad "--pair unknown optimizer"         "bogus"             optim --optim lamb "${S[@]}" --pair bogus
good "--pair: the row has the pair's step-time ratio" \
    '"$PY" -c "import json,sys; r=json.loads(open(sys.argv[1]).readline()); sys.exit(0 if r[\"pair_name\"] == \"slamb\" and r[\"pair_ratio_min\"] <= r[\"pair_ratio_median\"] <= r[\"pair_ratio_max\"] else 1)" "$OUT"' \
    optim --optim lamb --pair slamb --elements 1M --iters 3 --warmup 0 --stream-gbps 10 --json --no-save

tap_end
