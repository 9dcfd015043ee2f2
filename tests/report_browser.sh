#!/usr/bin/env bash
# report_browser.sh BINARY - the report in a real headless browser (TAP):
# `lbscale plot` and `lbscale report` on the hand-made run in
# tests/data/plot-run/ (every figure kind), then Debian's
# chromium-headless-shell (or chromium) opens report.html offline and
# tests/browser_check.py fails on a console error or warning, an uncaught
# exception, an image that does not decode or anything the page fetches;
# sorting a table by a click on a numeric header must order its rows both
# ways.  The run directory stays after the test, in
# $LBSCALE_RESULTS/report-browser/ (meson: build/tests/results/), with the
# screenshots next to report.html: report-screenshot.png (the top of the
# page) and report-screenshot-full.png.  With LBS_REPORT_RUN=RUN the same
# check runs on that run's report.html too (a demo's), its screenshots
# written into RUN.  At a phone's width (390 px) the page must not scroll
# sideways.  The checker itself is tested: a page with a broken image, one
# with a console error and one wider than a phone must fail.
#
# Skipped with the reason when no browser is installed (a TAP plan of
# "1..0 # SKIP why" and exit 0: meson's TAP runner calls any other exit
# status, 77 included, an error):
# chromium-headless-shell is not in ./lbscale's PKGS (about 100 MB to
# download and 300 MB installed with chromium-common, for this one test);
# LBSCALE_WITH_BROWSER=1 ./lbscale test installs it.
set -u

BIN=${1:?usage: report_browser.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
SRC=${LBS_TEST_DATA:-$(cd "$(dirname "$0")" && pwd)}   # tests/
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

BROWSER=${LBS_BROWSER:-}
if [ -z "$BROWSER" ]; then
    for b in chromium-headless-shell chromium; do
        if command -v "$b" >/dev/null 2>&1; then BROWSER=$(command -v "$b"); break; fi
    done
fi
if [ -z "$BROWSER" ]; then
    echo "1..0 # SKIP no headless browser: chromium-headless-shell is not" \
        "installed (not in ./lbscale's PKGS: ~100 MB download, ~300 MB" \
        "installed; LBSCALE_WITH_BROWSER=1 ./lbscale test installs it)"
    exit 0
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "1..0 # SKIP gnuplot is not installed: no figures to show"
    exit 0
fi

. "$(dirname "$0")/tap.sh"

R=${LBSCALE_RESULTS:-$TOP}/report-browser
rm -rf "$R"
mkdir -p "$(dirname "$R")"
cp -r "$SRC/data/plot-run" "$R"
chmod -R u+w "$R"
"$BIN" plot "$R" >"$TOP/plot.out" 2>&1 || {
    not_ok "plot the fixture run" "$(tail -n 5 "$TOP/plot.out")"
    tap_end
    exit
}
npng=$(ls "$R/plots" | grep -c '\.png$')
"$BIN" report "$R" >"$TOP/report.out" 2>&1
rc=$?
if [ $rc -ne 0 ] || [ ! -s "$R/report.html" ]; then
    not_ok "report writes report.html" "exit $rc" "$(tail -n 5 "$TOP/report.out")"
    tap_end
    exit
fi
ok "report writes report.html ($npng figures)"

# The real page: clean, every image shown, sortable, screenshots kept.
timeout 120 "$PY" "$SRC/browser_check.py" "$BROWSER" "$R/report.html" \
    "$R/report-screenshot.png" --sort >"$TOP/check.out" 2>&1
rc=$?
nimg=$(grep -o '[0-9]* images' "$TOP/check.out" | cut -d' ' -f1)
if [ $rc -eq 0 ] && [ "${nimg:-0}" -eq "$npng" ]; then
    ok "$(basename "$BROWSER") shows report.html: no console error, $nimg of $npng images, tables sort both ways"
else
    not_ok "$(basename "$BROWSER") shows report.html cleanly" "exit $rc," \
        "images shown: ${nimg:-?} of $npng" "$(tail -n 20 "$TOP/check.out")"
fi
for f in report-screenshot.png report-screenshot-full.png; do
    if head -c 8 "$R/$f" 2>/dev/null | od -An -c | grep -q 'P   N   G'; then
        ok "screenshot $f is a PNG ($(wc -c <"$R/$f") bytes)"
    else
        not_ok "screenshot $f is a PNG"
    fi
done
if [ -n "${LBS_REPORT_RUN:-}" ]; then
    timeout 120 "$PY" "$SRC/browser_check.py" "$BROWSER" \
        "$LBS_REPORT_RUN/report.html" "$LBS_REPORT_RUN/report-screenshot.png" \
        --sort >"$TOP/run.out" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        ok "$LBS_REPORT_RUN/report.html: $(tail -n 1 "$TOP/run.out")"
    else
        not_ok "$LBS_REPORT_RUN/report.html shows cleanly" "exit $rc" \
            "$(tail -n 20 "$TOP/run.out")"
    fi
fi

# The checker catches what it is for: a broken image, a console error.
"$PY" - "$R/report.html" "$TOP/broken.html" "$TOP/noisy.html" "$TOP/wide.html" <<'PY'
import sys
page = open(sys.argv[1]).read()
i = page.index("data:image/png;base64,") + len("data:image/png;base64,")
open(sys.argv[2], "w").write(page[:i] + "AAAA" + page[i + 400:])
open(sys.argv[3], "w").write(page.replace(
    "</body>", "<script>console.error('planted error')</script></body>"))
open(sys.argv[4], "w").write(page.replace(
    "</body>", "<div id=planted style='width:900px'>x</div></body>"))
PY
# checker_fails DESC NAME PATTERN: the checker on $TOP/NAME.html must exit 1
# and say PATTERN
checker_fails() {
    timeout 120 "$PY" "$SRC/browser_check.py" "$BROWSER" "$TOP/$2.html" \
        "$TOP/$2.png" >"$TOP/$2.out" 2>&1
    local rc=$?
    if [ $rc -eq 1 ] && grep -q "$3" "$TOP/$2.out"; then ok "$1"; else
        not_ok "$1" "exit $rc" "$(tail -n 5 "$TOP/$2.out")"
    fi
}
checker_fails "the check fails on an image that does not decode" broken \
    'image not shown'
checker_fails "the check fails on a console error" noisy \
    'console error: planted error'
checker_fails "the check fails on a page wider than a phone (390 px)" wide \
    'at 390 px the page is'

tap_end
