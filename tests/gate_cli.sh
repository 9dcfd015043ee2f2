#!/usr/bin/env bash
# gate_cli.sh BINARY - the regression gates' floors and knobs through the
# real binary (TAP): `lbscale check` never holds a ratio to a margin
# smaller than the run's own spread (a 33% drop among samples spread 40%
# passes, and says "(spread)"; the same drop among steady samples fails).
set -u
BIN=${1:?usage: gate_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
. "$(dirname "$0")/tap.sh"

# kernels DIR V1,V2,...: an optim run whose lamb rows have roofline_frac
# V1, V2, ...; and a baseline at 1.5 (drop, margin 25%) in DIR.json
kernels() {
    "$PY" - "$@" <<'PY'
import json, os, sys
d, vals = sys.argv[1], [float(x) for x in sys.argv[2].split(",")]
os.makedirs(d, exist_ok=True)
json.dump({"git_rev": "test"}, open(os.path.join(d, "meta.json"), "w"))
with open(os.path.join(d, "optim.jsonl"), "w") as f:
    for v in vals:
        f.write(json.dumps({"bench": "optim", "optim": "lamb", "elements": 1000,
                            "threads": 1, "roofline_frac": v}) + "\n")
json.dump({"format": "lbscale-baseline", "version": 1, "name": "t",
           "rule": "drop", "margin": 0.25,
           "metrics": [{"file": "optim", "where": {"optim": "lamb"},
                        "field": "roofline_frac", "baseline": 1.5}]},
          open(d + ".json", "w"))
PY
}
kernels "$TOP/steady" 0.99,1.0,1.01
"$BIN" check "$TOP/steady" --baseline "$TOP/steady.json" >"$TOP/out" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "drop <= 25%  *FAIL" "$TOP/out" &&
    ok "check: a 33% drop among steady samples fails" ||
    not_ok "check: a 33% drop among steady samples fails" "exit $rc" "$(cat "$TOP/out")"
kernels "$TOP/noisy" 0.6,1.0,1.4
"$BIN" check "$TOP/noisy" --baseline "$TOP/noisy.json" >"$TOP/out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "drop <= 40% (spread)  *pass" "$TOP/out" &&
    ok "check: the same drop inside the run's 40% spread passes, named" ||
    not_ok "check: the same drop inside the run's 40% spread passes, named" "exit $rc" "$(cat "$TOP/out")"
"$BIN" check "$TOP/noisy" --baseline "$TOP/noisy.json" --json >"$TOP/out" 2>&1
"$PY" -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); assert abs(r["spread"]-0.4)<1e-12, r' "$TOP/out" &&
    ok "check --json: the spread per metric" || not_ok "check --json: the spread per metric" "$(cat "$TOP/out")"
tap_end
