#!/usr/bin/env bash
# window.sh OUTDIR - the compressor rows of the kernel table again, now on
# 2 MiB pages, and the A/B of ab.sh on a quiet machine, in one window with
# the background study stopped (SIGSTOP; resumed on exit).  Run from the
# repository root.
set -u
D=${1:?usage: window.sh OUTDIR}
STUDY=$(pgrep -f 'build/lbscale train' | tr '\n' ' ')
[ -n "$STUDY" ] && kill -STOP $STUDY
trap '[ -n "$STUDY" ] && kill -CONT $STUDY' EXIT
{ date -u +"start %FT%TZ"; git rev-parse --short HEAD; uptime; } >"$D/window.txt"
for r in 1 2; do
    PARTS="compress" bench/kernels_run.sh "$D/run$r" >/dev/null 2>&1
done
"$D/ab.sh" "$PWD/$D/ab-quiet.jsonl" 4
{ date -u +"end %FT%TZ"; uptime; } >>"$D/window.txt"
