#!/usr/bin/env bash
# edges_cli.sh BINARY - nothing overwritten, nothing torn, no wrong answer
# at the edges (issue 33), through the real binary, printed as TAP:
#   - output goes only to regular files: a device, FIFO, directory or
#     symlink at an output path is refused (one line, exit 2) before any
#     work and left as it was;
#   - figures and logs are never written through a symlink planted in a run
#     (RUN/plots, RUN/logs, a figure's temporary name);
#   - the stale-temporary cleaner removes only lbscale's own temporaries,
#     never a user's notes.tmp.4000000.txt;
#   - concurrent train runs into one run keep every trace;
#   - suite reads its file with the bounded regular-file reader.
# Full disks, starved memory and the remaining refusals follow in
# sections of their own below.
set -u

BIN=${1:?usage: edges_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
SRC=${LBS_TEST_DATA:-$(cd "$(dirname "$0")" && pwd)}   # tests/
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
export OMP_NUM_THREADS=1
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}

. "$(dirname "$0")/tap.sh"

check() {   # check DESC [WHY...]: ok when no WHY is given
    local desc=$1
    shift
    if [ $# -eq 0 ]; then ok "$desc"; else not_ok "$desc" "$@"; fi
}
has_gnuplot() { command -v gnuplot >/dev/null; }
MLP=(--model mlp:784-16-10 --subset 256 --test-subset 64 --global-batch 64
     --epochs 1)

# ---- non-regular output paths ---------------------------------------------
N=$TOP/nodes
mkdir -p "$N/dir"
mkfifo "$N/fifo"
echo precious >"$N/target"
ln -s "$N/target" "$N/link"
ln -s /dev/null "$N/devlink"
# a character device of our own (the /dev/null numbers) when mknod is
# allowed; otherwise /dev/null itself, which the refusal never touches
if mknod "$N/dev" c 1 3 2>/dev/null; then DEV=$N/dev; else DEV=/dev/null; fi
OUTS=(
 "optim --trace|--trace" "optim --optim sgd --comm record:4 --elements 1M --steps 1 --no-save --trace"
 "train --export-layers|--export-layers" "train --optim sgd --model mlp:784-16-10 --export-layers"
 "compress --save-input|--save-input" "compress --compressor topk:k=0.01 --elements 100K --iters 1 --no-save --save-input"
 "stream --export-csv|--export-csv" "stream --elements 100K --iters 2 --no-save --export-csv")
for ((k = 0; k < ${#OUTS[@]}; k += 2)); do
    desc=${OUTS[k]%%|*} opt=${OUTS[k]#*|}
    read -r -a cmd <<<"${OUTS[k + 1]}"
    for p in "$DEV" "$N/fifo" "$N/dir" "$N/link" "$N/devlink"; do
        what=$(basename "$p")
        [ "$p" = /dev/null ] && what=/dev/null
        case $what in
            dev | /dev/null) kind="a device" ;; fifo) kind="a FIFO" ;;
            dir) kind="a directory" ;; *) kind="a symbolic link" ;;
        esac
        bad "$desc at $what: refused" "$opt|$p|$kind" "${cmd[@]}" "$p"
    done
done
why=()
[ "$DEV" = /dev/null ] || [ -c "$DEV" ] || why+=("the device node was replaced")
[ -p "$N/fifo" ] || why+=("the FIFO was replaced")
[ -L "$N/link" ] && [ "$(cat "$N/target")" = precious ] ||
    why+=("the symlink or its target was replaced")
[ -c /dev/null ] || why+=("/dev/null is no longer a device")
[ -z "$(ls -A "$N/dir")" ] || why+=("something was written into the directory")
R=$TOP/fiforep
cp -r "$SRC/data/plot-run" "$R"
mkfifo "$R/report.html"
bad "report with RUN/report.html a FIFO: refused" "report.html|a FIFO" report "$R"
[ -p "$R/report.html" ] || why+=("RUN/report.html (a FIFO) was replaced")
check "every node left as it was" "${why[@]}"

# ---- symlinks planted inside a run ----------------------------------------
if has_gnuplot; then
    R=$TOP/plantp
    cp -r "$SRC/data/plot-run" "$R"
    rm -rf "$R/plots"
    mkdir -p "$TOP/outside"
    ln -s "$TOP/outside" "$R/plots"
    (cd "$TOP" && timeout 120 "$BIN" plot "$R" >/dev/null 2>"$TOP/pp.err")
    rc=$?
    why=()
    [ "$rc" -eq 2 ] || why+=("exit $rc, expected 2")
    [ -z "$(ls -A "$TOP/outside")" ] ||
        why+=("written outside the run: $(ls "$TOP/outside" | head -n3 | tr '\n' ' ')")
    grep -q "plots" "$TOP/pp.err" || why+=("stderr does not name plots: $(head -c 200 "$TOP/pp.err")")
    check "RUN/plots -> outside: plot refuses, nothing written outside" "${why[@]}"

    # the old predictable figure temporary <fig>.tmp.<pid>.svg: a link
    # planted at every name the next process could take
    R=$TOP/planttmp
    cp -r "$SRC/data/plot-run" "$R"
    mkdir -p "$R/plots"
    echo precious >"$TOP/victim"
    (cd "$TOP" && exec bash -c 'for f in roofline scaling wire; do
        for e in svg png; do ln -s "$1" "$2/plots/$f.tmp.$$.$e"; done; done
        exec "$3" plot "$4"' _ "$TOP/victim" "$R" "$BIN" "$R" \
        >/dev/null 2>"$TOP/pt.err")
    rc=$?
    why=()
    [ "$rc" -eq 0 ] || why+=("plot exit $rc: $(head -c 200 "$TOP/pt.err")")
    [ "$(cat "$TOP/victim")" = precious ] || why+=("the victim was overwritten")
    [ -f "$R/plots/roofline.svg" ] && [ ! -L "$R/plots/roofline.svg" ] ||
        why+=("roofline.svg not drawn as a regular file")
    check "links planted at the old temporary names are never followed" "${why[@]}"
else
    skip "RUN/plots -> outside" "gnuplot not installed"
    skip "links planted at the old temporary names" "gnuplot not installed"
fi

R=$TOP/plantl
mkdir -p "$R" "$TOP/outside-logs"
echo '{"entries": [{"verb": "stream", "args": ["--elements", "100K", "--iters", "2"]}]}' >"$TOP/one.json"
ln -s "$TOP/outside-logs" "$R/logs"
(cd "$TOP" && timeout 120 "$BIN" suite "$TOP/one.json" --out "$R" --no-plot \
    >/dev/null 2>"$TOP/pl.err")
rc=$?
why=()
[ "$rc" -eq 2 ] || why+=("exit $rc, expected 2")
[ -z "$(ls -A "$TOP/outside-logs")" ] ||
    why+=("log written outside the run: $(ls "$TOP/outside-logs")")
[ -e "$R/stream.jsonl" ] && why+=("the entry ran")
[ "$(grep -c . "$TOP/pl.err")" -eq 1 ] && grep -q "logs" "$TOP/pl.err" ||
    why+=("stderr is not one line naming logs: $(head -c 200 "$TOP/pl.err")")
check "RUN/logs -> outside: suite refuses before any entry, nothing written through it" "${why[@]}"

# ---- the cleaner removes only its own temporaries ---------------------------
R=$TOP/clean
mkdir -p "$R/plots"
sleep 0 & dead=$!
wait "$dead"
touch "$R/notes.tmp.4000000.txt" "$R/plots/draft.tmp.4000001.png" \
      "$R/rows.jsonl.tmp.$dead" "$R/.lbscale-tmp.$dead.0123456789abcdef"
mkdir "$R/plots/.lbscale-tmp.$dead.fedcba9876543210"
touch "$R/plots/.lbscale-tmp.$dead.fedcba9876543210/roofline.svg"
touch "$R/.lbscale-tmp.$$.00000000live0000"
(cd "$TOP" && timeout 60 "$BIN" stream --elements 100K --iters 2 --out "$R" >/dev/null 2>&1)
if has_gnuplot; then
    cp "$SRC/data/plot-run/"*.jsonl "$R/"
    (cd "$TOP" && timeout 120 "$BIN" plot "$R" >/dev/null 2>&1)
fi
why=()
for f in notes.tmp.4000000.txt plots/draft.tmp.4000001.png "rows.jsonl.tmp.$dead" \
         ".lbscale-tmp.$$.00000000live0000"; do
    [ -e "$R/$f" ] || why+=("$f removed")
done
[ -e "$R/.lbscale-tmp.$dead.0123456789abcdef" ] && why+=("own temporary of a dead writer kept")
if has_gnuplot; then
    [ -e "$R/plots/.lbscale-tmp.$dead.fedcba9876543210" ] &&
        why+=("own figure directory of a dead writer kept")
fi
check "cleaner: user files named *.tmp.<pid>* kept, only dead .lbscale-tmp.* removed" "${why[@]}"

# ---- concurrent train runs into one run keep every trace ------------------
fails=()
for round in 1 2 3; do
    R=$TOP/ctrain$round
    pids=()
    for w in 1 2 3 4; do
        (cd "$TOP" && exec timeout 120 "$BIN" train --optim sgd "${MLP[@]}" \
            --out "$R" >/dev/null 2>&1) &
        pids+=($!)
    done
    rcs=0
    for p in "${pids[@]}"; do wait "$p" || rcs=$((rcs + 1)); done
    res=$("$PY" - "$R" <<'PYEOF'
import json, os, sys
run = sys.argv[1]
rows = [json.loads(l) for l in open(os.path.join(run, "train.jsonl"))]
names = [r.get("trace") for r in rows]
files = sorted(f for f in os.listdir(run) if f.startswith("train-trace"))
bad = [n for n in names if not n or not os.path.isfile(os.path.join(run, n))]
print(len(rows), len(set(names)), len(files), len(bad))
PYEOF
)
    [ "$rcs" -eq 0 ] && [ "$res" = "4 4 4 0" ] ||
        fails+=("round $round: $rcs failed runs; rows, distinct names, trace files, missing = $res")
done
check "4 concurrent train runs into one run, 3 rounds: 4 rows naming 4 distinct existing traces" "${fails[@]}"

# ---- suite reads its file with the bounded reader ---------------------------
mkfifo "$TOP/suite.fifo"
truncate -s 17M "$TOP/big.json"
bad "suite FILE a FIFO: refused, no hang" "suite.fifo|FIFO" suite "$TOP/suite.fifo"
bad "suite /dev/zero: refused" "/dev/zero|device" suite /dev/zero
bad "suite FILE over 16 MiB: refused" "big.json|larger than 16 MiB" suite "$TOP/big.json"
bad "suite FILE a directory: refused" "$TOP|directory" suite "$TOP"

# ---- a killed rank leaves no coll rows that look complete -----------------
MPIRUN=$(command -v mpirun 2>/dev/null)
if [ -z "$MPIRUN" ] || ! "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI"; then
    skip "coll with a rank killed mid-run" "no Open MPI mpirun"
else
    R=$TOP/killrank
    (cd "$TOP" && OMPI_MCA_rmaps_base_oversubscribe=1 exec timeout -k 5 120 \
        "$MPIRUN" --oversubscribe --allow-run-as-root -np 2 "$BIN" coll \
        --coll allreduce,allgather,alltoall -b 8 -e 4M --iters 200 --warmup 1 \
        --out "$R" >"$TOP/kr.out" 2>"$TOP/kr.err") &
    mp=$!
    printed=0
    for _ in $(seq 300); do
        printed=$(grep -c '^ *[0-9]' "$TOP/kr.out" 2>/dev/null)   # data rows
        [ "${printed:-0}" -ge 6 ] && break
        sleep 0.1
    done
    victim=
    for p in $(pgrep -f "$BIN coll"); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
            grep -q '^OMPI_COMM_WORLD_RANK=1$' && victim=$p
    done
    [ -n "$victim" ] && kill -9 "$victim"
    wait "$mp"
    rc=$?
    why=()
    [ -n "$victim" ] || why+=("never found rank 1")
    [ "${printed:-0}" -ge 6 ] || why+=("only ${printed:-0} rows printed before the kill")
    [ "$rc" -ne 0 ] || why+=("the run exited 0 after a rank died")
    [ -s "$R/coll.jsonl" ] &&
        why+=("$(grep -c . "$R/coll.jsonl") rows saved that look complete")
    check "coll: rank 1 killed after $printed printed rows: exit $rc, no rows saved" "${why[@]}"

    # only rank 0 opens the results run; its failure must reach rank 1
    # before rank 1 waits for it in the first step's barrier (it hung)
    t0=$(date +%s)
    (cd "$TOP" && exec timeout -k 5 60 "$MPIRUN" --oversubscribe \
        --allow-run-as-root -np 2 "$BIN" optim --comm mpi --optim lamb \
        --elements 1M --iters 3 --out /proc/lbscale-refused \
        >/dev/null 2>"$TOP/lead.err")
    rc=$? dt=$(( $(date +%s) - t0 ))
    why=()
    case $rc in
        124 | 137) why+=("hung: killed by the timeout after ${dt} s") ;;
        0) why+=("exit 0 though rank 0 could not open its results") ;;
    esac
    grep -q "^lbscale: optim: .*/proc/lbscale-refused" "$TOP/lead.err" ||
        why+=("no line naming the path: $(head -c 200 "$TOP/lead.err")")
    check "optim --comm mpi: rank 0 alone fails to open its run: all ranks end (exit $rc in ${dt} s)" "${why[@]}"
fi

# ---- study scripts pass paths and notes to gnuplot as data ----------------
if has_gnuplot; then
    ROOT=$(cd "$SRC/.." && pwd)
    D="$TOP/study x'; system('touch PWNED'); y='"
    mkdir -p "$D"
    printf 'nrow = 1; ncol = 1; npanel = 1\narray PT[1] = ["p"]\n' \
        >"$D/consensus-panels.gp"
    printf '1 0.5 0.4 0.6\n2 0.3 0.2 0.4\n\n\n1 0.6 0.5 0.7\n2 0.4 0.3 0.5\n' \
        >"$D/consensus.dat"
    (cd "$TOP" && ROOT=$ROOT && . "$ROOT/bench/suites/phase.sh" &&
        study_plot "$D" consensus dir=. dat=consensus.dat \
            "outbase=c'; system('touch PWNED2'); z='" >/dev/null 2>"$TOP/sp.err")
    rc=$?
    why=()
    [ "$rc" -eq 0 ] || why+=("study_plot exit $rc: $(head -c 200 "$TOP/sp.err")")
    ls "$D" | grep -q 'png$' || why+=("no figure drawn")
    pw=$(find "$TOP" -name 'PWNED*'; ls / | grep PWNED)
    [ -z "$pw" ] || why+=("a command ran: $pw")
    grep -n 'gnuplot -e "[^"]*\$OUT' "$ROOT"/bench/suites/*.sh >"$TOP/sp.grep" &&
        why+=("a study script still puts a variable into gnuplot code: $(head -c 200 "$TOP/sp.grep")")
    grep -q 'system(' "$ROOT/plots/consensus.gp" && why+=("consensus.gp still calls system()")
    check "study scripts: a quoted directory and value reach gnuplot as data" "${why[@]}"
else
    skip "study scripts and gnuplot" "gnuplot not installed"
fi

# ---- accepted nonsense, now refused (issue 33 item 8, outside sim) ---------
bad "optim --optim 'lamb:' (empty key list)" "lamb:|nothing after ':'" \
    optim --optim 'lamb:' --elements 1K
bad "compress --compressor 'topk:'" "topk:|nothing after ':'" \
    compress --compressor 'topk:' --elements 1K
bad "train --optim 'lamb:'" "lamb:|nothing after ':'" \
    train --optim 'lamb:' --model mlp:784-16-10
bad "coll --coll 'allreduce,,' (empty item)" "--coll|empty item" \
    coll --coll 'allreduce,,'
bad "coll --coll ','" "--coll|empty item" coll --coll ','
bad "coll --message-size : (neither MIN nor MAX)" "--message-size|neither" \
    coll --message-size :
bad "coll -m 8:64 (OSU's range, now --message-size)" "-m|--message-size" coll -m 8:64
echo '{"layers": [{"name": "w", "shape": [4, 4]}], "layer": []}' >"$TOP/typo.json"
bad "optim --layers FILE with an unknown top-level key" "typo.json|unknown key 'layer'" \
    optim --optim sgd --layers "$TOP/typo.json"
train_layers=$TOP/exported.json
(cd "$TOP" && "$BIN" train --optim sgd --model mlp:784-16-10 \
    --export-layers "$train_layers" >/dev/null 2>&1)
run optim --optim sgd --layers "$train_layers" --iters 1 --warmup 0 \
    --stream-gbps 10 --no-save
check "optim --layers reads what train --export-layers wrote (exit $RC)" \
    $([ "$RC" -eq 0 ] || echo "$(head -c 200 "$ERR")")
touch "$TOP/a-file"
bad "suite --dry-run --resume of no suite run: refused as the run would" \
    "--resume|not a suite run" suite "$TOP/one.json" --dry-run --resume "$TOP/nope"
bad "suite --dry-run --out a file: refused as the run would" \
    "a-file|not a directory" suite "$TOP/one.json" --dry-run --out "$TOP/a-file"
bad "suite --out a file: exit 2, not 1" "a-file|not a directory" \
    suite "$TOP/one.json" --out "$TOP/a-file"
(cd "$TOP" && LBSCALE_BLAS_AUTO=bogus timeout 60 "$BIN" stream --elements 100K \
    --no-save >"$TOP/ba.out" 2>"$TOP/ba.err")
rc=$?
check "LBSCALE_BLAS_AUTO=bogus: one line, exit 2" \
    $([ "$rc" -eq 2 ] || echo "exit-$rc") \
    $([ "$(grep -c . "$TOP/ba.err")" -eq 1 ] && grep -q '^lbscale: LBSCALE_BLAS_AUTO' "$TOP/ba.err" ||
      echo "stderr:$(head -c 100 "$TOP/ba.err" | tr ' ' _)")
long=$(head -c 2000 /dev/zero | tr '\0' x)
bad "an over-long verb keeps the 'lbscale:' prefix" "unknown verb" "$long"
bad "lbscale with no verb: one line" "no verb" 
for c in "stream --elements 100K --iters 2 --no-save --json" \
         "optim --optim sgd --elements 100K --iters 1 --warmup 0 --stream-gbps 10 --no-save" \
         "--help" "optim --list"; do
    read -r -a A <<<"$c"
    (cd "$TOP" && timeout 60 "$BIN" "${A[@]}" >/dev/full 2>"$TOP/full-out.err")
    rc=$?
    check "lbscale $c >/dev/full: exit 1 with one line (exit $rc)" \
        $([ "$rc" -eq 1 ] || echo "exit-$rc") \
        $(grep -q '^lbscale: stdout' "$TOP/full-out.err" || echo "no-stdout-line")
done

# ---- a full disk: every append whole or absent, exit 1 everywhere ---------
# A tmpfs of our own, filled up: needs the right to mount (root in a
# container that allows it); otherwise skipped with the reason.
M=$TOP/mnt
mkdir -p "$M"
trap 'umount "$M" 2>/dev/null; rm -rf "$TOP"' EXIT
fresh() { umount "$M" 2>/dev/null; mount -t tmpfs -o "size=${1:-512k}" tmpfs "$M"; }
# leave BYTES: fill the tmpfs until about BYTES remain (0: none at all)
leave() {
    rm -f "$M/fill" "$M/fill2"
    local avail
    avail=$(df -B1 --output=avail "$M" | tail -n1)
    dd if=/dev/zero of="$M/fill" bs=4096 count=$(( (avail - $1) / 4096 )) \
        >/dev/null 2>&1
    [ "$1" -gt 0 ] || dd if=/dev/zero of="$M/fill2" bs=64 >/dev/null 2>&1
}
# pad FILE: a valid row so FILE ends 50 bytes short of a page: the next
# row's first bytes fit, the rest meets ENOSPC (a short write)
pad() {
    local f=$1 sz=0 want
    [ -f "$f" ] && sz=$(stat -c %s "$f")
    want=$(( (sz / 4096 + 1) * 4096 - 50 - sz - 23 ))
    [ "$want" -lt 20 ] && want=$((want + 4096))
    printf '{"verb":"pad","x":"%s"}\n' "$(head -c "$want" /dev/zero | tr '\0' a)" >>"$f"
}
full() {   # full DESC ARGS...: run in the full tmpfs; RC, ERR
    (cd "$TOP" && timeout 120 "$BIN" "$@" >/dev/null 2>"$TOP/full.err")
    RC=$?
}
if ! fresh 512k 2>/dev/null; then
    skip "full disk" "cannot mount a tmpfs here (needs root and a container that allows mount)"
else
    # appends: each verb's row is whole or absent, the verb exits 1
    for v in stream optim compress coll; do
        case $v in
            stream) A=(stream --elements 100K --iters 2) ;;
            optim) A=(optim --optim sgd --elements 100K --iters 2 --stream-gbps 10) ;;
            compress) A=(compress --compressor topk:k=0.01 --elements 100K --iters 2 --stream-gbps 10) ;;
            coll) A=(coll --coll allreduce -b 8 -e 64 --iters 2 --warmup 1) ;;
        esac
        fresh 512k
        (cd "$TOP" && "$BIN" stream --elements 100K --iters 2 --out "$M/r" >/dev/null 2>&1)
        pad "$M/r/$v.jsonl"
        before=$(stat -c %s "$M/r/$v.jsonl")
        leave 0
        full "${A[@]}" --out "$M/r"
        after=$(stat -c %s "$M/r/$v.jsonl")
        why=()
        [ "$RC" -eq 1 ] || why+=("exit $RC, expected 1")
        [ "$after" -eq "$before" ] || why+=("$v.jsonl grew from $before to $after bytes: a torn row")
        grep -q "No space left" "$TOP/full.err" || why+=("stderr: $(head -c 200 "$TOP/full.err")")
        check "full disk: $v's row whole or absent, exit 1" "${why[@]}"
    done
    fresh 512k
    (cd "$TOP" && "$BIN" stream --elements 100K --iters 2 --out "$M/r" >/dev/null 2>&1)
    leave 0
    full train --optim sgd "${MLP[@]}" --out "$M/r"
    why=()
    [ "$RC" -eq 1 ] || why+=("exit $RC, expected 1")
    ls -A "$M/r" | grep -q 'train' && why+=("train files left: $(ls -A "$M/r" | tr '\n' ' ')")
    ls -A "$M/r" | grep -q 'lbscale-tmp' && why+=("temporaries left")
    check "full disk: train exits 1, no trace, row or temporary left" "${why[@]}"
    fresh 512k
    leave 0
    full optim --optim sgd --comm record:4 --elements 1M --steps 1 --no-save --trace "$M/t.jsonl"
    why=()
    [ "$RC" -eq 1 ] || why+=("exit $RC, expected 1")
    [ -z "$(ls -A "$M" | grep -v '^fill')" ] || why+=("left: $(ls -A "$M" | tr '\n' ' ')")
    check "full disk: optim --trace exits 1, nothing left" "${why[@]}"
    if has_gnuplot; then
        # figures: gnuplot's truncated file never replaces a good figure
        fresh 2m
        mkdir "$M/p"
        cp "$SRC/data/plot-run/meta.json" "$SRC/data/plot-run/optim.jsonl" "$M/p/"
        (cd "$TOP" && "$BIN" plot "$M/p" >/dev/null 2>&1)
        cp "$M/p/plots/roofline.svg" "$TOP/good.svg"
        cp "$M/p/plots/roofline.png" "$TOP/good.png"
        leave 12288
        full plot "$M/p"
        why=()
        [ "$RC" -eq 1 ] || why+=("exit $RC, expected 1: $(head -c 300 "$TOP/full.err")")
        cmp -s "$TOP/good.svg" "$M/p/plots/roofline.svg" || why+=("roofline.svg replaced")
        cmp -s "$TOP/good.png" "$M/p/plots/roofline.png" || why+=("roofline.png replaced")
        check "full disk: plot exits 1, the good figures kept" "${why[@]}"
        leave 0
        full report "$M/p"
        check "full disk: report exits 1 (a runtime failure, not bad input)" \
            $([ "$RC" -eq 1 ] || echo "exit $RC: $(head -c 200 "$TOP/full.err")")
        # a suite whose entries are done: the figures cannot be written
        echo '{"entries": [{"verb": "optim", "args": ["--optim", "sgd", "--elements", "100K", "--iters", "2", "--stream-gbps", "10"]}]}' >"$TOP/opt.json"
        fresh 2m
        (cd "$TOP" && "$BIN" suite "$TOP/opt.json" --out "$M/s" --no-plot >/dev/null 2>&1)
        leave 16384
        full suite "$TOP/opt.json" --resume "$M/s"
        check "full disk: suite exits 1 when its figures cannot be written" \
            $([ "$RC" -eq 1 ] || echo "exit $RC: $(head -c 200 "$TOP/full.err")")
    else
        skip "full disk: figures, report, suite" "gnuplot not installed"
    fi
    umount "$M"
fi

# ---- starved memory: one line, then a prompt exit --------------------------
# Under ulimit -v an allocation fails; OpenBLAS's worker can then spin in
# malloc and its exit handler (or the prefork handler of a suite's fork)
# would join it for ever.  Each case must end (exit 1 with its one line,
# or 0 where the machine had room) well within its timeout.
ROOT=$(cd "$SRC/.." && pwd)
if ldd "$BIN" 2>/dev/null | grep -q 'libasan'; then
    skip "starved memory (ulimit -v)" "an AddressSanitizer build reserves terabytes of address space"
else
    STARVE=(
     "stream --elements 4M --iters 2 --sgemm 4096 --no-save"
     "optim --optim sgd --comm record:4 --elements 64M --steps 1 --no-save"
     "compress --compressor powersgd:r=4 --elements 64M --iters 2 --no-save"
     "train --optim sgd --model cnn --subset 256 --test-subset 64 --global-batch 64 --epochs 1 --no-save"
     "suite $ROOT/bench/suites/quick.json --no-plot --out $TOP/starved-suite")
    for c in "${STARVE[@]}"; do
        read -r -a A <<<"$c"
        t0=$(date +%s)
        # a hang is what this catches: the suite runs every entry (each
        # refused quickly), 25 s alone but past 60 s on a loaded 2-core VM
        to=60
        [ "${A[0]}" = suite ] && to=240
        (ulimit -v 300000; cd "$TOP" && exec timeout -k 5 $to "$BIN" "${A[@]}" \
            >/dev/null 2>"$TOP/starve.err")
        rc=$? dt=$(( $(date +%s) - t0 ))
        why=()
        case $rc in
            0) ;;
            1) grep -q '^lbscale: ' "$TOP/starve.err" ||
                   why+=("exit 1 without a 'lbscale:' line: $(head -c 200 "$TOP/starve.err")") ;;
            124 | 137) why+=("hung: killed by the timeout after ${dt} s; stderr: $(head -c 200 "$TOP/starve.err")") ;;
            *) why+=("exit $rc: $(head -c 200 "$TOP/starve.err")") ;;
        esac
        check "ulimit -v 300000: lbscale ${A[0]} ends (exit $rc in ${dt} s)" "${why[@]}"
    done
fi

# ---- readers report a torn last row -----------------------------------------
R=$TOP/torn
cp -r "$SRC/data/plot-run" "$R"
printf '{"verb":"optim","optim":"sg' >>"$R/optim.jsonl"
(cd "$TOP" && timeout 60 "$BIN" report "$R" >/dev/null 2>"$TOP/torn.err")
rc=$?
why=()
[ "$rc" -eq 0 ] || why+=("report exit $rc")
grep -q "optim.jsonl line .*torn" "$TOP/torn.err" ||
    why+=("no word of the torn row: $(head -c 200 "$TOP/torn.err")")
check "report says so when it skips a torn last row" "${why[@]}"

tap_end
