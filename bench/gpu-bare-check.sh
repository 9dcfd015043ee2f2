#!/usr/bin/env bash
# gpu-bare-check.sh [ROOT] - rehearse bench/gpu-check.sh on a bare machine,
# here, without a GPU: a Debian bookworm minbase chroot (debootstrap) with
# only gcc, g++, python3, meson and ninja, CUDA bind-mounted read-only from
# /usr/local/cuda, and the tree copied in as a GPU machine receives it
# (tracked and untracked-not-ignored files plus .gpupack/, no .git).  It
# shows that the packed libraries are enough to configure, build and load
# the binaries; on this machine the GPU tests then skip and each benchmark
# stops with "no CUDA GPU" (exit 2), so gpu-check's own exit status is 1.
# Needs root and network access to the Debian mirror (first run ~3 min).
set -eu
ROOT=${1:-/var/tmp/lbscale-bare}
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "gpu-bare-check: needs root (chroot)" >&2; exit 2; }
bench/gpu-pack.sh      # fresh: .gpupack/rev must name this tree
if [ ! -x "$ROOT/usr/bin/meson" ]; then
    debootstrap --variant=minbase --include=gcc,g++,libc6-dev,python3,ninja-build,meson \
        bookworm "$ROOT" http://deb.debian.org/debian >"$ROOT.debootstrap.log" 2>&1 ||
        { echo "gpu-bare-check: debootstrap failed, see $ROOT.debootstrap.log" >&2; exit 1; }
fi
rm -rf "$ROOT/work/lbs"
mkdir -p "$ROOT/work/lbs" "$ROOT/usr/local/cuda" "$ROOT/proc" "$ROOT/dev"
{ git ls-files -co --exclude-standard; find .gpupack -type f; } | sort -u |
    while read -r f; do [ -e "$f" ] && echo "$f"; done |
    tar -cf - -T - | tar -C "$ROOT/work/lbs" -xf -
cleanup() {
    for m in dev proc usr/local/cuda; do
        mountpoint -q "$ROOT/$m" && umount "$ROOT/$m"
    done
    return 0
}
trap cleanup EXIT
mountpoint -q "$ROOT/usr/local/cuda" || mount --bind -o ro /usr/local/cuda "$ROOT/usr/local/cuda"
mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
mountpoint -q "$ROOT/dev" || mount --bind /dev "$ROOT/dev"
chroot "$ROOT" /bin/bash -c \
    'cd /work/lbs && PATH=/usr/local/cuda/bin:$PATH N=1M bench/gpu-check.sh' || true
echo "gpu-bare-check: logs under $ROOT/work/lbs/results/*-gpu/gpu-check/"
