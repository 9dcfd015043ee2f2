#!/usr/bin/env bash
# train_cli.sh BINARY - `lbscale train` end to end, printed as TAP:
# bad input (exit 2, one "lbscale: " line naming the problem, no files),
# a truncated/wrong IDX file named in the error, the teacher fallback,
# and under mpirun (skipped when it is missing): every registered
# optimizer on 2 ranks, bit-identical reruns, options that differ across
# ranks refused, a NaN gradient on one rank skipped everywhere, and a rank
# that dies (SIGKILL, from inside and from outside) or hangs making the
# job exit non-zero within a bounded time.
#
# Everything is tiny (a few hundred samples, a few steps) and every
# command runs under `timeout`, so a hang fails a case instead of CI.
set -u

BIN=${1:?usage: train_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
export OMP_NUM_THREADS=1

. "$(dirname "$0")/tap.sh"

report() {  # report DESC WHY...
    local d=$1
    shift
    if [ $# -eq 0 ]; then ok "$d"; else not_ok "$d" "$@"; fi
}

# Tiny, fast settings shared by most runs.
T=(--model mlp:784-32-10 --subset 512 --test-subset 256 --global-batch 64
   --stall-timeout 60)
# With the package missing, the same runs go to the teacher task.
FM=/usr/share/datasets/fashion-mnist

# run [ENV=VAL...] -- ARGS...: BIN in a fresh cwd/results root.
run() {
    case_no=$((case_no + 1))
    local d=$TOP/c$case_no
    mkdir -p "$d/res" "$d/cwd"
    RES=$d/res CWD=$d/cwd OUT=$d/stdout ERR=$d/stderr
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    (cd "$CWD" && env LBSCALE_RESULTS="$RES" "${envs[@]}" timeout 120 \
        "$BIN" train "$@" >"$OUT" 2>"$ERR")
    RC=$?
}

# bad DESC 'FRAG1|FRAG2' ARGS...: exit 2, exactly one stderr line starting
# "lbscale: " containing every fragment, empty stdout, no files created.
bad() {
    local desc=$1 pats=$2
    shift 2
    run -- "$@"
    local why=()
    [ "$RC" -eq 2 ] || why+=("exit code $RC, expected 2")
    [ "$(awk 'END { print NR }' "$ERR")" -eq 1 ] ||
        why+=("stderr has $(awk 'END { print NR }' "$ERR") lines")
    head -n1 "$ERR" | grep -q '^lbscale: ' || why+=("no 'lbscale: ' prefix")
    local IFS='|' p
    for p in $pats; do
        grep -qF -- "$p" "$ERR" || why+=("stderr does not name '$p'")
    done
    unset IFS
    [ -s "$OUT" ] && why+=("stdout not empty")
    [ -z "$(find "$RES" "$CWD" -mindepth 1 | head -n1)" ] ||
        why+=("files created: $(find "$RES" "$CWD" -mindepth 1 | head -n3)")
    if [ ${#why[@]} -eq 0 ]; then ok "$desc"
    else not_ok "$desc" "command: lbscale train $*" "${why[@]}" \
        "stderr: $(head -c 400 "$ERR")"; fi
}

# ---- bad input, one process --------------------------------------------
bad "missing --optim"          "--optim"          "${T[@]}"
bad "unknown optimizer"        "nosuchopt"        --optim nosuchopt "${T[@]}"
bad "unknown optimizer key"    "zz"               --optim lamb:zz=1 "${T[@]}"
bad "unknown option"           "--bogus"          --optim lamb --bogus
bad "--global-batch 0"         "--global-batch"   --optim lamb --global-batch 0
bad "--epochs abc"             "--epochs|abc"     --optim lamb --epochs abc
bad "--model garbage"          "--model|cnn:3"    --optim lamb --model cnn:3
bad "--model one width"        "--model"          --optim lamb --model mlp:784
bad "--topology bogus"         "--topology|mesh"  --optim lamb --topology mesh
bad "--topology on lamb"       "--topology|lamb"  --optim lamb --topology ring "${T[@]}" --dataset teacher
bad "--dataset bogus"          "--dataset|imagenet" --optim lamb --dataset imagenet
bad "--decay bogus"            "--decay|exp"      --optim lamb --decay exp
bad "--shards bogus"           "--shards|noniid"  --optim lamb --shards noniid
bad "--shards alpha 0"         "--shards|alpha 0|out of range" --optim lamb --shards dirichlet:alpha=0
bad "--shards alpha text"      "--shards|'x'"     --optim lamb --shards dirichlet:alpha=x
bad "--consensus-every -1"     "--consensus-every" --optim lamb --consensus-every -1
bad "--fault malformed"        "--fault"          --optim lamb --fault nan:x:1
bad "--data missing dir"       "/nonexistent/fm|train-images-idx3-ubyte" \
    --optim lamb --data /nonexistent/fm "${T[@]}"

# Wrong and truncated IDX files: the error names the file.
mk_idx() {  # mk_idx DIR: a valid tiny 4-file set (plain), 40/20 images
    "$PY" - "$1" <<'EOF'
import struct, sys, os
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
def w(name, magic, dims, payload):
    with open(os.path.join(d, name), "wb") as f:
        f.write(struct.pack(">I", magic))
        for x in dims: f.write(struct.pack(">I", x))
        f.write(payload)
for pre, n in (("train", 40), ("t10k", 20)):
    w(pre + "-images-idx3-ubyte", 0x803, (n, 28, 28), bytes(i % 256 for i in range(n * 784)))
    w(pre + "-labels-idx1-ubyte", 0x801, (n,), bytes(i % 10 for i in range(n)))
EOF
}
mk_idx "$TOP/idx_trunc"
truncate -s -100 "$TOP/idx_trunc/t10k-images-idx3-ubyte"
bad "truncated IDX file named" "t10k-images-idx3-ubyte|truncated" \
    --optim lamb --data "$TOP/idx_trunc" --global-batch 8
mk_idx "$TOP/idx_magic"
printf '\x00\x00\x08\x01' | dd of="$TOP/idx_magic/train-images-idx3-ubyte" \
    bs=1 count=4 conv=notrunc status=none
bad "wrong IDX magic named"    "train-images-idx3-ubyte|magic" \
    --optim lamb --data "$TOP/idx_magic" --global-batch 8
mk_idx "$TOP/idx_swap"
cp "$TOP/idx_swap/t10k-labels-idx1-ubyte" "$TOP/idx_swap/train-labels-idx1-ubyte"
bad "mismatched label count named" "train-labels-idx1-ubyte|20 labels" \
    --optim lamb --data "$TOP/idx_swap" --global-batch 8

# ---- good runs, one process ---------------------------------------------
mk_idx "$TOP/idx_good"
bad "--model input width vs the data" "--model|100|784" \
    --optim lamb --data "$TOP/idx_good" --global-batch 8 --model mlp:100-10
run -- --optim lamb --data "$TOP/idx_good" --global-batch 8 --epochs 2 \
    --model mlp:784-16-10 --json --out "$TOP/good1"
why=()
[ "$RC" -eq 0 ] || why+=("exit $RC: $(head -c 300 "$ERR")")
msg=$("$PY" - "$OUT" "$TOP/good1" <<'EOF' 2>&1
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
if len(lines) < 3: sys.exit("expected >= 3 JSON lines, got %d" % len(lines))
if [l["event"] for l in lines[:-1]] != ["epoch"] * (len(lines) - 1):
    sys.exit("epoch lines wrong")
fin = lines[-1]
if fin["event"] != "final": sys.exit("last line is not the final one")
for k in ("test_accuracy", "steps", "wall_s", "sent_bytes_per_rank",
          "comm_bytes_per_rank", "skipped_steps", "dataset", "params"):
    if k not in fin: sys.exit("final line lacks " + k)
if fin["steps"] != 10: sys.exit("steps %r != 2 epochs x 40/8" % fin["steps"])
if fin["test_accuracy"] != lines[-2]["test_accuracy"]:
    sys.exit("final test_accuracy differs from the last epoch's")
res = [json.loads(l) for l in open(sys.argv[2] + "/train.jsonl")]
if len(res) != 1 or res[0]["test_accuracy"] != fin["test_accuracy"]:
    sys.exit("train.jsonl row does not match")
if len(res[0]["curve"]) != 2: sys.exit("curve has %d epochs" % len(res[0]["curve"]))
import glob
names = [p.rsplit("/", 1)[1] for p in glob.glob(sys.argv[2] + "/train-trace*.jsonl")]
if names != ["train-trace-%s.jsonl" % res[0]["optim"]] or res[0]["trace"] != names[0]:
    sys.exit("trace file %r, row names %r: want train-trace-OPTIM.jsonl" % (names, res[0].get("trace")))
tr = [json.loads(l) for l in open(sys.argv[2] + "/" + names[0])]
h = tr[0]
if h["format"] != "lbscale-train-trace" or h["version"] != 1:
    sys.exit("trace header %r" % h)
if h["steps"] != 10 or len(h["layers"]) != 4: sys.exit("trace header counts")
steps = [l for l in tr[1:] if l.get("type") == "step"]
if [s["step"] for s in steps] != list(range(1, 11)): sys.exit("step lines")
for s in steps:
    for k in ("fwd_ms", "bwd_ms", "wgrad_ms"):
        if len(s[k]) != 4 or min(s[k]) < 0: sys.exit("bad " + k)
    if s["optim_ms"] < 0: sys.exit("optim_ms")
EOF
) || why+=("$msg")
report "1-process run on a tiny IDX set: epochs, final line, results, trace" "${why[@]}"

run LBSCALE_DATA=/nonexistent/none -- --optim sgd "${T[@]}" --max-steps 3 \
    --json --out "$TOP/teach"
why=()
[ "$RC" -eq 0 ] || why+=("exit $RC: $(head -c 300 "$ERR")")
grep -q "teacher" "$ERR" || why+=("stderr does not mention the fallback")
"$PY" -c '
import json, sys
r = json.loads(open(sys.argv[1]).readlines()[-1])
row = json.loads(open(sys.argv[2]).readline())
ok = (r["dataset"] == "teacher" and "dataset_note" in r and
      row["dataset"] == "teacher" and "not found" in row["dataset_note"])
sys.exit(0 if ok else 1)' "$OUT" "$TOP/teach/train.jsonl" ||
    why+=("output/results do not say teacher + note")
report "package missing: teacher fallback, said in output and results" "${why[@]}"

# The epoch rows' lr is the rate the optimizer runs at, never the bare
# schedule factor: with --decay none and no warm-up the factor is 1, so
# every epoch row's lr must equal the lr of the run's effective params
# (train's tuned rule, the optimizer's own default where it has none, or
# the spec's), for every optimizer in the registry and for an lr given in
# the spec; null where the optimizer has no lr key.
lr_column() {  # lr_column SPEC
    run -- --optim "$1" "${T[@]}" --epochs 2 --decay none --warmup 0 --json \
        --no-save
    why=()
    [ "$RC" -eq 0 ] || why+=("exit $RC: $(head -c 300 "$ERR")")
    msg=$( ("$PY" - "$OUT" <<'EOF2'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
ep = [r for r in rows if r.get("event") == "epoch"]
kv = dict(x.split("=", 1) for x in rows[-1]["params"].split(",") if "=" in x)
want = float(kv["lr"]) if "lr" in kv else None
if not ep: sys.exit("no epoch rows")
for r in ep:
    got = r.get("lr")
    if (want is None) != (got is None) or (
            want is not None and abs(got - want) > 1e-5 * abs(want)):
        sys.exit("epoch %s: lr %r, the optimizer runs at %r" %
                 (r.get("epoch"), got, want))
print(want)
EOF2
) 2>&1) || why+=("$msg")
    report "$1: the epoch rows' lr is the optimizer's rate ($msg)" "${why[@]}"
}
for o in $("$BIN" optim --list | sed -n 's/^  \([a-z0-9_]*\) - .*/\1/p') \
         sgd:lr=0.0123; do
    lr_column "$o"
done

# ---- under mpirun ----------------------------------------------------------
MPIRUN=$(command -v mpirun 2>/dev/null)
if [ -z "$MPIRUN" ]; then
    skip "mpirun cases" "mpirun not found"
    tap_end
    exit
fi
MPIFLAGS=()
if "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI"; then
    export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
    export OMPI_MCA_rmaps_base_oversubscribe=1
    MPIFLAGS=(--oversubscribe --allow-run-as-root)
fi
# mrun NP TIMEOUT ARGS...: mpirun BIN train ARGS (or an MPMD line when
# ARGS contain ':'), in a fresh directory; sets RC, OUT, ERR, SECS.
mrun() {
    local np=$1 to=$2
    shift 2
    case_no=$((case_no + 1))
    local d=$TOP/c$case_no
    mkdir -p "$d/res" "$d/cwd"
    RES=$d/res CWD=$d/cwd OUT=$d/stdout ERR=$d/stderr
    local t0=$(date +%s.%N)
    (cd "$CWD" && LBSCALE_RESULTS="$RES" timeout --kill-after=10 "$to" \
        "$MPIRUN" "${MPIFLAGS[@]}" -np "$np" "$BIN" train "$@" \
        >"$OUT" 2>"$ERR")
    RC=$?
    SECS=$("$PY" -c "import sys,time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$t0")
}
final() { tail -n1 "$OUT"; }
hung() {  # hung LIMIT: did the last mrun run into its timeout?
    "$PY" -c 'import sys; sys.exit(float(sys.argv[1]) < float(sys.argv[2]) - 5)' \
        "$SECS" "$1"
}
field() {  # field KEY: from the final JSON line
    "$PY" -c 'import json,sys; v=json.loads(sys.stdin.read())[sys.argv[1]]; print(json.dumps(v))' "$1" <<<"$(final)"
}

# Every optimizer in the registry trains on 2 ranks (a few steps): above
# chance (0.1) by more than 5 sd of a guess over 256 test images (0.019),
# i.e. > 0.2.  SLAMB (k = 0.1, 48 steps) lands anywhere in 0.26-0.42 with
# the seed (1-4, with or without its k warm-up), so 0.3 was a coin toss.
OPTS=$("$BIN" optim --list | sed -n 's/^  \([a-z0-9_]*\) - .*/\1/p')
for o in $OPTS; do
    mrun 2 120 --optim "$o" "${T[@]}" --global-batch 32 --epochs 3 --json --no-save
    why=()
    [ "$RC" -eq 0 ] || why+=("exit $RC: $(tail -c 400 "$ERR")")
    acc=$(field test_accuracy 2>/dev/null)
    "$PY" -c 'import sys; a=float(sys.argv[1]); sys.exit(not (0.2 < a <= 1))' \
        "$acc" 2>/dev/null || why+=("test_accuracy $acc (expected > 0.2)")
    report "2 ranks: $o trains (test_accuracy $acc)" "${why[@]}"
done

# Dirichlet shards and the consensus curve: recorded in the row, the last
# curve point equal to the last epoch row's consensus_rms, and the same
# seed giving the same shards (sizes) and curve.
cons=()
for k in 1 2; do
    mrun 2 120 --optim dmsgd --topology ring "${T[@]}" --epochs 2 --json \
        --shards dirichlet:alpha=0.1 --consensus-every 1 --out "$TOP/dir$k"
    [ "$RC" -eq 0 ] || cons+=("run $k exit $RC: $(tail -c 300 "$ERR")")
done
"$PY" - "$TOP/dir1" "$TOP/dir2" <<'EOF' || cons+=("rows wrong")
import json, sys
a, b = [json.loads(open(d + "/train.jsonl").readline()) for d in sys.argv[1:]]
def need(c, msg):
    if not c:
        print("#", msg); sys.exit(1)
need(a["shards"] == "dirichlet:alpha=0.1", "shards %r" % a.get("shards"))
need(a["shard_size_min"] <= a["shard_size_max"] and a["shard_label_tv"] > 0,
     "sizes/tv %r %r %r" % (a["shard_size_min"], a["shard_size_max"],
                            a["shard_label_tv"]))
cv = a["consensus_curve"]
need([s for s, _ in cv] == list(range(1, a["steps"] + 1)), "curve steps")
need(abs(cv[-1][1] - a["consensus_rms"]) <= 1e-9 * max(1, a["consensus_rms"]),
     "last point %r vs consensus_rms %r" % (cv[-1][1], a["consensus_rms"]))
need(all(r > 0 for _, r in cv), "dmsgd consensus distance 0")
for k in ("shard_size_min", "shard_size_max", "shard_label_tv",
          "consensus_curve", "test_accuracy"):
    need(a[k] == b[k], "%s differs between identical runs" % k)
EOF
report "2 ranks: dirichlet shards and the consensus curve recorded, reproducible" "${cons[@]}"

# Same seed, same ranks: bit-identical results (curve and per-step losses).
same=()
for k in 1 2; do
    mrun 2 120 --optim lamb "${T[@]}" --epochs 2 --json --out "$TOP/det$k"
    [ "$RC" -eq 0 ] || same+=("run $k exit $RC: $(tail -c 300 "$ERR")")
done
"$PY" - "$TOP/det1" "$TOP/det2" <<'EOF' || same+=("results differ")
import json, sys
def key(d):
    r = json.loads(open(d + "/train.jsonl").readline())
    c = [(e["step"], e["train_loss"], e["test_loss"], e["test_accuracy"])
         for e in r["curve"]]
    tr = [json.loads(l) for l in open(d + "/" + r["trace"])][1:]
    losses = [l["loss"] for l in tr if l.get("type") == "step"]
    calls = [(l["step"], l["layer"], l["coll"], l["bytes"]) for l in tr
             if "coll" in l]
    return c, losses, calls, r["test_accuracy"], r["sent_bytes_per_rank"]
a, b = key(sys.argv[1]), key(sys.argv[2])
if a != b:
    print("# first:", a[3], "second:", b[3])
    sys.exit(1)
EOF
report "2 ranks: same seed twice gives bit-identical results" "${same[@]}"

# JointSpar: dropped layers get no weight-gradient GEMM (wgrad_ms 0 in the
# trace), every rank drops the same layers (--trace-all-ranks).
if echo "$OPTS" | grep -qx jointspar; then
    mrun 2 120 --optim jointspar "${T[@]}" --max-steps 20 --trace-all-ranks \
        --json --out "$TOP/js"
    why=()
    [ "$RC" -eq 0 ] || why+=("exit $RC: $(tail -c 300 "$ERR")")
    msg=$("$PY" - "$TOP/js" <<'EOF' 2>&1
import json, sys
d = sys.argv[1]
keeps = []
for r in (0, 1):
    tr = [json.loads(l) for l in open("%s/train-trace-jointspar.rank%d.jsonl" % (d, r))]
    if tr[0]["rank"] != r: sys.exit("rank %d file says rank %r" % (r, tr[0]["rank"]))
    st = [l for l in tr[1:] if l.get("type") == "step"]
    keeps.append([s["keep"] for s in st])
    dropped = 0
    for s in st:
        for k, w in zip(s["keep"], s["wgrad_ms"]):
            if not k:
                dropped += 1
                if w != 0: sys.exit("dropped layer has wgrad_ms %r" % w)
    if dropped == 0: sys.exit("no layer was ever dropped")
if keeps[0] != keeps[1]: sys.exit("ranks dropped different layers")
row = json.loads(open(d + "/train.jsonl").readline())
if not 0 < row["wgrad_kept_frac"] < 1: sys.exit("wgrad_kept_frac %r" % row["wgrad_kept_frac"])
EOF
) || why+=("$msg")
    report "jointspar: dropped layers skip the weight-gradient GEMM, same on all ranks" "${why[@]}"
else
    skip "jointspar trace check" "jointspar not registered"
fi

# Mismatched options across ranks are refused at start-up (MPMD launch).
mismatch() {  # mismatch DESC FRAG ARGS_RANK0 -- ARGS_RANK1
    local desc=$1 frag=$2
    shift 2
    local a=() b=()
    while [ "$1" != "--" ]; do a+=("$1"); shift; done
    shift
    b=("$@")
    mrun 1 60 "${a[@]}" : "${MPIFLAGS[@]}" -np 1 "$BIN" train "${b[@]}"
    local why=()
    [ "$RC" -ne 0 ] || why+=("exit 0")
    hung 60 && why+=("timed out")
    grep -q "^lbscale: $frag: differs across ranks" "$ERR" ||
        why+=("no 'lbscale: $frag: differs across ranks' line")
    [ -z "$(find "$RES" -mindepth 1 | head -n1)" ] || why+=("files created")
    report "$desc (exit $RC)" "${why[@]}"
}
mismatch "different specs across ranks refused" "--optim" \
    --optim lamb "${T[@]}" -- --optim sgd "${T[@]}"
mismatch "different seeds across ranks refused" "--seed" \
    --optim lamb "${T[@]}" --seed 1 -- --optim lamb "${T[@]}" --seed 2

# A NaN gradient on rank 1 at step 2: every rank skips it, counted.
mrun 2 120 --optim lamb "${T[@]}" --max-steps 5 --fault nan:1:2 --json --no-save
why=()
[ "$RC" -eq 0 ] || why+=("exit $RC: $(tail -c 300 "$ERR")")
[ "$(field skipped_steps 2>/dev/null)" = 1 ] || why+=("skipped_steps $(field skipped_steps 2>/dev/null)")
[ "$(field steps 2>/dev/null)" = 5 ] || why+=("steps $(field steps 2>/dev/null)")
report "NaN on one rank: step skipped on all ranks and reported" "${why[@]}"

# A rank that dies (SIGKILL at step 3): the job exits non-zero, bounded.
mrun 2 90 --optim lamb "${T[@]}" --epochs 50 --fault kill:1:3 --no-save
why=()
[ "$RC" -ne 0 ] || why+=("exit 0")
hung 90 && why+=("hung: ended by the timeout")
report "rank killed (SIGKILL from inside): exit $RC after ${SECS}s" "${why[@]}"

# The same from outside: kill -9 one rank process while the job runs.
case_no=$((case_no + 1))
d=$TOP/c$case_no
mkdir -p "$d"
t0=$(date +%s)
(cd "$d" && exec timeout --kill-after=10 90 "$MPIRUN" "${MPIFLAGS[@]}" -np 2 \
    "$BIN" train --optim lamb "${T[@]}" --epochs 1000 --no-save \
    >"$d/stdout" 2>"$d/stderr") &
TPID=$!
victim=
for _ in $(seq 1 100); do
    sleep 0.2
    # the rank processes: children of mpirun (the child of timeout)
    mp=$(ps -o pid= --ppid "$TPID" 2>/dev/null | head -n1 | tr -d ' ')
    [ -n "$mp" ] || continue
    ranks=$(ps -o pid= --ppid "$mp" 2>/dev/null | tr -d ' ')
    if [ "$(echo "$ranks" | grep -c .)" -ge 2 ] && grep -q "step" "$d/stdout" 2>/dev/null; then
        victim=$(echo "$ranks" | tail -n1)
        break
    fi
done
why=()
if [ -z "$victim" ]; then
    why+=("could not find a rank process to kill")
    kill "$TPID" 2>/dev/null
    wait "$TPID"
else
    kill -9 "$victim"
    wait "$TPID"
    RC=$?
    SECS=$(( $(date +%s) - t0 ))
    [ "$RC" -ne 0 ] || why+=("exit 0")
    [ "$SECS" -lt 85 ] || why+=("hung: ended by the timeout")
fi
report "kill -9 of one rank from outside: exit ${RC:-?} after ${SECS:-?}s" "${why[@]}"

# A rank that hangs: the others' watchdog ends the job (no hang).
mrun 2 90 --optim lamb "${T[@]}" --epochs 50 --fault hang:1:3 \
    --stall-timeout 5 --no-save
why=()
[ "$RC" -ne 0 ] || why+=("exit 0")
hung 90 && why+=("hung: ended by the timeout")
grep -q "no progress for 5 s" "$ERR" || why+=("no watchdog message")
report "hung rank: watchdog exits non-zero (exit $RC after ${SECS}s)" "${why[@]}"

# The same with the default (auto) stall timeout: the steps of this tiny
# run take milliseconds, so the job ends after the 30 s floor, not 300 s.
mrun 2 90 --optim lamb --model mlp:784-32-10 --subset 512 --test-subset 256 \
    --global-batch 64 --epochs 50 --fault hang:1:3 --no-save
why=()
[ "$RC" -ne 0 ] || why+=("exit 0")
hung 90 && why+=("hung: ended by the timeout")
"$PY" -c 'import sys; sys.exit(float(sys.argv[1]) > 45)' "$SECS" ||
    why+=("took ${SECS}s, expected about 30")
grep -q "no progress for 30 s" "$ERR" || why+=("no watchdog message for 30 s")
report "hung rank, default stall timeout: ends in ${SECS}s (exit $RC)" "${why[@]}"

# A stopped run is not a stalled one: SIGSTOP for twice the stall limit,
# then SIGCONT (a harness pausing a background study for a timing): the
# alarm that fell due while stopped must not end it.
SD=$(mktemp -d)
(cd "$SD" && exec "$BIN" train --optim lamb --model mlp:784-32-10 \
    --subset 2048 --test-subset 256 --global-batch 64 --epochs 400 \
    --stall-timeout 3 --no-save >/dev/null 2>"$SD/err") &
SP=$!
sleep 1
why=()
if kill -STOP "$SP" 2>/dev/null; then
    sleep 6
    kill -CONT "$SP"
    wait "$SP"
    SRC=$?
    [ "$SRC" -eq 0 ] || why+=("exit $SRC: $(head -c 200 "$SD/err")")
else
    wait "$SP"
    why+=("the run ended before it could be stopped (make it longer)")
fi
report "stopped 6 s with a 3 s stall limit, then continued: finishes" "${why[@]}"
rm -rf "$SD"

# A global batch that is not a multiple of the rank count.
mrun 2 60 --optim lamb "${T[@]}" --global-batch 63
why=()
[ "$RC" -ne 0 ] || why+=("exit 0")
[ "$(grep -c '^lbscale: --global-batch' "$ERR")" -eq 1 ] ||
    why+=("expected one 'lbscale: --global-batch' line")
report "--global-batch not a multiple of the ranks refused" "${why[@]}"

tap_end
