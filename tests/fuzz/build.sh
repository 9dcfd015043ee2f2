#!/bin/sh
# build.sh [OUT_DIR] - build every libFuzzer harness (tests/fuzz/fuzz_*.c)
# with clang, ASan and UBSan into OUT_DIR (default build-fuzz/ at the
# repository root), incrementally (tests/fuzz/Makefile).  Not part of the
# meson build: meson builds with the project's compiler, libFuzzer needs
# clang.  Exit 77 (skip) when clang or its libFuzzer runtime is missing.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/build-fuzz}
command -v clang >/dev/null 2>&1 || { echo "SKIP: clang not found"; exit 77; }
command -v make >/dev/null 2>&1 || { echo "SKIP: make not found"; exit 77; }
mkdir -p "$OUT"
probe=$OUT/probe.c
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe"
if ! clang -fsanitize=fuzzer,address,undefined "$probe" -o "$OUT/probe" \
        >/dev/null 2>&1; then
    echo "SKIP: clang cannot link -fsanitize=fuzzer,address,undefined (libFuzzer runtime missing)"
    exit 77
fi
exec make -s -C "$ROOT/tests/fuzz" OUT="$OUT" -j"${JOBS:-2}"
