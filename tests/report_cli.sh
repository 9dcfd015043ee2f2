#!/usr/bin/env bash
# report_cli.sh BINARY - what `lbscale report` promises, on the hand-made
# run in tests/data/plot-run/ (TAP, no browser needed; report_browser.sh
# opens the page for real):
#   - findings come first, each linked to a table id and a figure id that
#     exist in the page; then the figures with plot's captions, then the
#     tables, then the machine and the suite's entries;
#   - tables are sortable (thead, inline script), numeric cells carry
#     data-v and are right-aligned, text cells are not;
#   - no 1-rank row in the collective table;
#   - --baseline and --compare put check's and compare's verdicts in the
#     page and the --json summary, the same numbers the verbs print;
#   - the page references nothing outside itself;
#   - bad input: one line, exit 2, no page written.
set -u
BIN=${1:?usage: report_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
SRC=${LBS_TEST_DATA:-$(cd "$(dirname "$0")" && pwd)}   # tests/
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
. "$(dirname "$0")/tap.sh"

R=$TOP/run
cp -r "$SRC/data/plot-run" "$R"
chmod -R u+w "$R"
# a 1-rank row, as `lbscale coll` alone writes (the 289,260 GB/s "bcast")
echo '{"bench":"coll","coll":"bcast","backend":"self","ranks":1,"size":8388608,"bytes":8388608,"time_us":29,"busbw_gbps":289260.0,"wrong":0}' >>"$R/coll.jsonl"
command -v gnuplot >/dev/null 2>&1 && "$BIN" plot "$R" >/dev/null 2>&1
B=$SRC/data/baseline-fixture.json

"$BIN" report "$R" --baseline "$B" --compare "$R" --json >"$TOP/j" 2>"$TOP/e"
rc=$?
H=$R/report.html
if [ $rc -eq 0 ] && [ -s "$H" ]; then
    ok "report --baseline --compare --json: exit 0, report.html written"
else
    not_ok "report --baseline --compare --json" "exit $rc" "$(cat "$TOP/e")"
fi

"$PY" - "$H" "$TOP/j" >"$TOP/py" 2>&1 <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
j = json.loads(open(sys.argv[2]).read())
out = []
def check(desc, cond, why=""):
    print(("ok " if cond else "FAIL ") + desc + ("" if cond else ": " + why))

# order: findings, verdicts, figures, tables, machine, suite, commands
ids = ["findings", "verdicts", "figures", "stream", "optim", "coll",
       "machine", "commands"]
pos = [page.find('id="%s"' % i) for i in ids]
check("sections in order findings, verdicts, figures, tables, machine, "
      "commands", all(p >= 0 for p in pos) and pos == sorted(pos),
      str(list(zip(ids, pos))))
# every finding's links point at ids in the page
hrefs = [l["href"] for f in j["findings"] for l in f["links"]]
missing = [h for h in hrefs if 'id="%s"' % h[1:] not in page]
check("every finding links to an id in the page (%d links)" % len(hrefs),
      hrefs and not missing, str(missing))
labels = [f["label"] for f in j["findings"]]
for want in ("Memory bandwidth", "Optimizer step", "Collectives",
             "Convergence", "Check against baselines",
             "Compared with another run"):
    check("finding '%s'" % want, any(l.startswith(want) for l in labels),
          str(labels))
check("a scaling finding per model and platform",
      sum(l.startswith("Scaling:") for l in labels) >= 2, str(labels))
fig = [f for f in j["findings"] if f["id"] == "optim"][0]
check("the optimizer finding names the best kernel and its fraction",
      "lamb at 0.63 of the in-place bandwidth" in fig["text"] and
      abs(fig["value"] - 0.627) < 0.01, fig["text"])
# figures carry plot's captions
if 'id="figures"' in page:
    caps = re.findall(r'<figure id="fig-([^"]+)">.*?<figcaption>(.*?)'
                      r'</figcaption>', page, re.S)
    check("every figure has a caption sentence (%d)" % len(caps),
          caps and all(len(c[1]) > 80 for c in caps),
          str([c[0] for c in caps if len(c[1]) <= 80]))
# sortable tables: thead, the script, numbers right-aligned with data-v
check("tables sortable: thead and an inline script",
      page.count('<table class="sort">') >= 5 and "<thead>" in page and
      "aria-sort" in page and "<script>" in page)
check("numeric cells carry data-v and class n",
      re.search(r'<td class="n" data-v="[-0-9.e+]+">0\.63</td>', page)
      is not None)
check("text cells are not right-aligned",
      re.search(r'<td>lamb</td>', page) is not None and
      re.search(r'<td class="n"[^>]*>lamb</td>', page) is None)
check("CSS: text left, numbers right",
      "text-align:left" in page and ".n{text-align:right" in page)
# no 1-rank rows in the collective table
coll = page[page.find('<h2 id="coll">'):]
coll = coll[:coll.find("</table>")]
check("no 1-rank (self) row in the collective table",
      "self" not in coll and "289260" not in coll and
      re.search(r"\d+ rows? measured on 1 rank left out", page) is not None,
      coll[-600:])
# verdicts
check("check verdicts in the page", 'id="check"' in page and
      j["check"]["metrics"] >= 5 and j["check"]["failed"] == 0,
      str(j.get("check")))
check("compare verdicts in the page", 'id="compare"' in page and
      j["compare"]["compared"] > 0 and j["compare"]["regressed"] == 0,
      str(j.get("compare")))
# self-contained
ext = re.findall(r'(?:src|href)="(?!#|data:)[^"]*"', page)
check("nothing outside the page is referenced", not ext, str(ext[:5]))
PY
while read -r word desc; do
    case $word in
        ok) ok "$desc" ;;
        FAIL) not_ok "${desc%%: *}" "${desc#*: }" ;;
        *) not_ok "report checker" "$word $desc" ;;
    esac
done <"$TOP/py"

# the verdicts are the verbs' own: same counts as check --json / compare --json
"$BIN" check "$R" --baseline "$B" --json 2>/dev/null | tail -n 1 >"$TOP/cs"
"$BIN" compare "$R" "$R" --json 2>/dev/null | tail -n 1 >"$TOP/ms"
if "$PY" - "$TOP/j" "$TOP/cs" "$TOP/ms" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
c = json.load(open(sys.argv[2]))
m = json.load(open(sys.argv[3]))
assert j["check"] == c, (j["check"], c)
assert j["compare"] == m, (j["compare"], m)
PY
then ok "report's verdict summaries equal check --json's and compare --json's"
else not_ok "report's verdict summaries equal check --json's and compare --json's"
fi

# a changed wire size: the report shows CHANGED and still exits 0
cp -r "$R" "$TOP/changed"
sed -i 's/"wire_bytes": *320000/"wire_bytes":320008/' "$TOP/changed/compress.jsonl"
"$BIN" report "$R" --compare "$TOP/changed" >/dev/null 2>"$TOP/e"
rc=$?
if [ $rc -eq 0 ] && grep -q '<td class="bad">CHANGED</td>' "$H" &&
   grep -q '1 regressed' "$H"; then
    ok "a changed metric is marked CHANGED in the page (exit 0: the page does not gate)"
else
    not_ok "a changed metric is marked CHANGED in the page" "exit $rc" "$(cat "$TOP/e")"
fi

# --text: findings first
"$BIN" report "$R" --text >"$TOP/t" 2>/dev/null
if [ "$(sed -n 3p "$TOP/t")" = "Findings" ] && grep -q '^  Optimizer step: fastest kernel lamb' "$TOP/t"; then
    ok "report --text opens with the findings"
else
    not_ok "report --text opens with the findings" "$(head -n 5 "$TOP/t")"
fi

# a row whose paired reference read far below the others' (issue 34):
# flagged as a reference problem; a given reference (--stream-gbps) and
# rows near the others' are not
L=$TOP/lowref
mkdir -p "$L"
cp "$R/meta.json" "$L/"
PAIRED='"stream_ref":"in-place a += s*c interleaved with the steps (median of the pairs)"'
for o in lamb:80.1:0.93 lars:77.5:0.9 sgd:86.9:0.96 jointspar:43.0:1.07 lamb:74.2:0.94; do
    IFS=: read -r name ref frac <<<"$o"
    echo "{\"bench\":\"optim\",\"optim\":\"$name\",\"threads\":2,\"elements\":100000000,\"stream_gbps\":$ref,\"roofline_frac\":$frac,\"gbps\":70,$PAIRED}" >>"$L/optim.jsonl"
done
echo '{"bench":"optim","optim":"adamw","threads":2,"elements":100000000,"stream_gbps":20,"roofline_frac":0.5,"gbps":10,"stream_ref":"given (--stream-gbps)"}' >>"$L/optim.jsonl"
"$BIN" report "$L" --text >"$TOP/t" 2>"$TOP/e"
rc=$?
nref=$(grep -c "Reference problem" "$TOP/t")
if [ $rc -eq 0 ] && [ "$nref" = 1 ] &&
   grep -q 'Reference problem: optim jointspar: its reference read 43.0 GB/s, 0.55 of the median of the run.s 4 other optim rows (78.8 GB/s), so its ratio 1.070' "$TOP/t"; then
    ok "report flags the row whose reference read far below the others' (only that one)"
else
    not_ok "report flags a low reference" "exit $rc, $nref flagged" "$(grep -A1 Findings "$TOP/t"; grep Reference "$TOP/t"; cat "$TOP/e")"
fi

# the answer first: a netsweep's "which optimizer pays on which network"
# is the first finding, the simulator's section and its anchors table come
# before the evidence (training, kernels)
A=$TOP/answer
mkdir -p "$A"
cp "$R/meta.json" "$A/" && cp "$R"/optim.jsonl "$R"/train.jsonl "$A/" 2>/dev/null
"$BIN" sim netsweep --model bert-xl --platform dgx-a100 --optim lamb,slamb \
    --gpus 1024 --out "$A" >/dev/null 2>&1
"$BIN" sim anchors --out "$A" >/dev/null 2>&1
"$BIN" report "$A" --json >"$TOP/aj" 2>"$TOP/ae"
"$PY" - "$TOP/aj" "$A/report.html" <<'PY' && ok "report: the answer first (netsweep finding, simulator and anchors before the evidence)" || not_ok "report: the answer first" "$(head -c 800 "$TOP/aj")" "$(cat "$TOP/ae")"
import json, re, sys
j = json.load(open(sys.argv[1]))
f = j["findings"][0]
assert f["label"].startswith("Answer: which optimizer pays on which network"), f
assert "slamb from " in f["text"] and "lamb not within the sweep" in f["text"], f
ids = re.findall(r'<h2 id="([a-z_]+)"', open(sys.argv[2]).read())
assert ids.index("netsweep") < ids.index("anchors") < ids.index("optim"), ids
if "train" in ids:
    assert ids.index("anchors") < ids.index("train") < ids.index("optim"), ids
PY

# bad input: one line, exit 2, no page
bad_report() {   # bad_report DESC PATTERN ARGS...
    local desc=$1 pat=$2
    shift 2
    rm -f "$H"
    "$BIN" report "$@" >"$TOP/o" 2>"$TOP/e"
    local rc=$? why=()
    [ $rc -eq 2 ] || why+=("exit $rc, expected 2")
    [ "$(wc -l <"$TOP/e")" -eq 1 ] || why+=("stderr: $(cat "$TOP/e")")
    grep -qF -- "$pat" "$TOP/e" || why+=("stderr does not name '$pat': $(cat "$TOP/e")")
    [ -s "$TOP/o" ] && why+=("stdout: $(head -c 200 "$TOP/o")")
    [ -e "$H" ] && why+=("report.html written")
    if [ ${#why[@]} -eq 0 ]; then ok "$desc"; else not_ok "$desc" "${why[@]}"; fi
}
bad_report "--baseline of a missing file" "no-such-baseline" "$R" --baseline "$TOP/no-such-baseline.json"
bad_report "--baseline without a name" "--baseline" "$R" --baseline
bad_report "--compare of a directory that is no run" "$TOP/nothing" "$R" --compare "$TOP/nothing"
bad_report "--compare twice" "--compare" "$R" --compare "$R" --compare "$R"
bad_report "--text with --json" "exclude" "$R" --text --json
bad_report "an unknown option" "--bogus" "$R" --bogus

tap_end
