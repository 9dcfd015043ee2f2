#!/bin/sh
# check.sh BUILD_DIR SRC_DIR - install the build into a scratch DESTDIR and
# build tests/pkgconfig/outside.c against it using only
# `pkg-config --cflags --libs lbscale`, then run it.  Proves that the
# installed headers are self-contained and that lbscale.pc's Cflags/Libs
# are enough to compile and link an outside program.  Exit 0 ok, 1 fail,
# 77 (skip) when pkg-config or a C compiler is missing.
BUILD=${1:?usage: check.sh BUILD_DIR SRC_DIR}
SRC=${2:?usage: check.sh BUILD_DIR SRC_DIR}
CC=${CC:-cc}

command -v pkg-config >/dev/null 2>&1 || { echo "SKIP: pkg-config not found"; exit 77; }
command -v "$CC" >/dev/null 2>&1 || { echo "SKIP: $CC not found"; exit 77; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/lbs-pkgconfig.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
DEST=$TMP/dest

fail() { echo "FAIL: $*" >&2; exit 1; }

# --no-rebuild: the test runs after the build; never rebuild from a test
if ! meson install -C "$BUILD" --destdir "$DEST" --no-rebuild --quiet \
        >"$TMP/install.log" 2>&1; then
    cat "$TMP/install.log" >&2
    fail "meson install -C $BUILD --destdir $DEST"
fi

PC=$(find "$DEST" -name lbscale.pc | head -n1)
[ -n "$PC" ] || fail "no lbscale.pc installed under $DEST"
PCDIR=$(dirname "$PC")
echo "# lbscale.pc: ${PC#$DEST}"
sed 's/^/#   /' "$PC"

FLAGS=$(PKG_CONFIG_SYSROOT_DIR=$DEST PKG_CONFIG_PATH=$PCDIR \
        pkg-config --cflags --libs lbscale) || fail "pkg-config lbscale"
echo "# flags: $FLAGS"

# The library directory that the .pc's -L names (inside DEST).
LIBDIR=$DEST$(PKG_CONFIG_PATH=$PCDIR pkg-config --variable=libdir lbscale)
[ -e "$LIBDIR/liblbscale.so" ] || fail "no liblbscale.so in $LIBDIR"

# Only the installed tree: no -I into the source or build directory.
# shellcheck disable=SC2086
$CC -std=c11 -Wall -Wextra -Werror -o "$TMP/outside" \
    "$SRC/tests/pkgconfig/outside.c" $FLAGS -lm ||
    fail "compiling outside.c with: $FLAGS"

LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$TMP/outside" ||
    fail "outside program exited $?"
# and it really used the installed library, not the build tree's
LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$TMP/outside" |
    grep -q "$LIBDIR/liblbscale.so" || fail "outside does not load $LIBDIR/liblbscale.so"
echo "ok: outside program built from the installed lbscale.pc and ran"
