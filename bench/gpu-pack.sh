#!/usr/bin/env bash
# gpu-pack.sh - run HERE (a Debian machine with apt) before sending the tree
# to a GPU machine that cannot download anything.  It fetches the Debian
# packages the build needs beyond a compiler, CUDA, meson and ninja
# (jansson, hwloc, OpenBLAS, zlib and pkgconf, with their libraries) into
# .gpupack/debs/ and records the git revision in .gpupack/rev.
# bench/gpu-check.sh unpacks them into a private prefix on the GPU machine
# (nothing is installed into /) and builds against them.  The Criterion
# unit tests are not packed: the GPU build disables them (-Dcriterion).
#
#   bench/gpu-pack.sh                   right before sending .gpupack with
#                                        the tree (its rev names the commit)
#                                        (the device tool: carry [".gpupack"])
set -eu
cd "$(dirname "$0")/.."
OUT=.gpupack
PKGS=(libjansson-dev libjansson4
      libhwloc-dev libhwloc15 libudev1
      libopenblas-dev libopenblas0 libopenblas-pthread-dev libopenblas0-pthread
      libgfortran5 libquadmath0
      zlib1g-dev zlib1g
      pkgconf-bin libpkgconf3)

if ! command -v apt-get >/dev/null; then
    echo "gpu-pack: needs apt-get (a Debian machine)" >&2
    exit 2
fi
rm -rf "$OUT"
mkdir -p "$OUT/debs"
# apt-get download writes into the current directory (as root it warns
# that the download is unsandboxed; that line is dropped)
if ! log=$(cd "$OUT/debs" && apt-get download -q "${PKGS[@]}" 2>&1); then
    echo "$log" >&2
    echo "gpu-pack: apt-get download failed (try: apt-get update)" >&2
    exit 1
fi
echo "$log" | grep -E '^(E|W):' | grep -v 'unsandboxed as root' >&2 || true
rev=$(git rev-parse --short=7 HEAD 2>/dev/null || echo unknown)
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && rev=$rev-dirty
echo "$rev" >"$OUT/rev"
n=$(ls "$OUT/debs" | wc -l)
echo "gpu-pack: $n packages, $(du -sh "$OUT" | cut -f1) in $OUT/ (revision $rev)"
