#!/usr/bin/env bash
# trace_rule_cli.sh BINARY - trace-v1's bytes_rule end to end, as TAP:
# `lbscale optim --comm record:P --trace F --trace-rule Q` writes the rule,
# the rule reproduces recordings at other rank counts call by call, and
# `lbscale sim sweep` prices the ruled trace at P' exactly as it prices the
# recording made at P'.  Optimizers whose bytes do not depend on P get no
# per-call field.  Bad uses exit 2 with one line and write nothing.
set -u

BIN=${1:?usage: trace_rule_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

. "$(dirname "$0")/tap.sh"

# Five tensors, 63,491 parameters: 1-bit LAMB's fused buffer is padded
# differently at every P.  The file is both an --layers list and a model.
MODEL=$TOP/tiny.json
cat >"$MODEL" <<'EOF'
{"format": "lbscale-model", "version": 1, "name": "tiny", "efficiency": 0.5,
 "bucket_mb": 0.05, "layers": [
  {"name": "emb", "shape": [1000, 37], "fwd_ms": 0.01},
  {"name": "w1", "shape": [333, 77], "fwd_ms": 0.02},
  {"name": "b1", "shape": [77], "fwd_ms": 0.001},
  {"name": "w2", "shape": [77, 10], "fwd_ms": 0.01},
  {"name": "b2", "shape": [3], "fwd_ms": 0.001}]}
EOF
OB=onebit_lamb:freeze_step=3

rec() {  # rec OUT P [ARGS...]: record 7 steps of $SPEC over P ranks
    local out=$1 p=$2
    shift 2
    "$BIN" optim --optim "$SPEC" --comm "record:$p" --layers "$MODEL" \
        --steps 7 --trace "$TOP/$out" --no-save "$@" >"$TOP/$out.out" \
        2>"$TOP/$out.err"
}

# ---- bad uses ----
bad "--trace-rule without --trace" "--trace-rule|--trace" optim --optim "$OB" --comm record:32 --layers "$MODEL" --trace-rule 8
bad "--trace-rule at the recorded P" "--trace-rule|32" optim --optim "$OB" --comm record:32 --layers "$MODEL" --trace t.jsonl --trace-rule 32
bad "--trace-rule 1"               "--trace-rule" optim --optim "$OB" --comm record:32 --layers "$MODEL" --trace t.jsonl --trace-rule 1
bad "--trace-rule not a number"    "--trace-rule" optim --optim "$OB" --comm record:32 --layers "$MODEL" --trace t.jsonl --trace-rule x
bad "--trace-rule without record"  "--trace-rule" optim --optim lamb --comm self --trace t.jsonl --trace-rule 8
# one rank never compresses: the calls differ, so no rule (and no trace)
bad "calls that differ beyond their sizes" "--trace-rule 8|calls on 1 ranks" optim --optim "$OB" --comm record:1 --layers "$MODEL" --steps 5 --trace t.jsonl --trace-rule 8

# ---- 1-bit LAMB at 8, 32, 128, 1024; the rule from 32 and 8 ----
SPEC=$OB
ok_all=1
for p in 8 32 128 1024; do rec "r$p.jsonl" "$p" || ok_all=0; done
rec rule.jsonl 32 --trace-rule 8 || ok_all=0
rec rule-json.jsonl 32 --trace-rule 8 --json || ok_all=0
[ $ok_all = 1 ] && ok "record 1-bit LAMB at 8/32/128/1024 and with --trace-rule 8" ||
    not_ok "record 1-bit LAMB at 8/32/128/1024 and with --trace-rule 8" "$(cat "$TOP"/*.err)"
grep -q 'bytes rule from 32 and 8 ranks: 8 calls depend on P' "$TOP/rule.jsonl.out" &&
    ok "the table says how many calls carry the rule" ||
    not_ok "the table says how many calls carry the rule" "$(cat "$TOP/rule.jsonl.out")"

if "$PY" - "$TOP" <<'PY'
import json, sys
top = sys.argv[1]
def load(name):
    lines = [json.loads(l) for l in open(f"{top}/{name}")]
    return lines[0], lines[1:]
def cdiv(x, d):
    return -(-x // d)
def at(call, R, P):
    """trace-v1: unit(P) = a + ceil(b/P), a = unit(R) - ceil(b/R)."""
    b = call.get("bytes_split", 0)
    a2a = call["coll"] == "alltoall"
    unit = call["bytes"] // R if a2a else call["bytes"]
    if b:
        unit = unit - cdiv(b, R) + cdiv(b, P)
    return unit * P if a2a else unit
h, calls = load("rule.jsonl")
assert h["ranks"] == 32
assert h["bytes_rule"] == {"form": "a+ceil(b/P)", "from_ranks": [8, 32]}, h
keys = list(h)
assert keys.index("bytes_rule") < keys.index("layers"), keys
ruled = [c for c in calls if "bytes_split" in c]
assert len(ruled) == 8, len(ruled)          # 4 compressed steps x 2
assert all(c["bytes_split"] > 0 for c in ruled)
# without bytes_split the lines are the plain recording at 32
_, r32 = load("r32.jsonl")
assert [{k: v for k, v in c.items() if k != "bytes_split"} for c in calls] == r32
# the rule reproduces the recordings at 8, 128 and 1024 call by call
for P in (8, 32, 128, 1024):
    _, rp = load(f"r{P}.jsonl")
    assert len(rp) == len(calls)
    for i, (c, d) in enumerate(zip(calls, rp)):
        assert (c["step"], c["layer"], c["coll"]) == (d["step"], d["layer"], d["coll"])
        assert at(c, 32, P) == d["bytes"], (P, i, c, at(c, 32, P), d["bytes"])
    if P != 32:     # and the recordings really differ: the rule matters
        assert any(c["bytes"] != d["bytes"] for c, d in zip(calls, rp)), P
# --json reports the same
row = json.loads(open(f"{top}/rule-json.jsonl.out").read())
assert row["rule_ranks"] == 8 and row["rule_calls"] == 8, row
PY
then ok "the rule from 32 and 8 reproduces the recordings at 8, 128 and 1024 exactly"
else not_ok "the rule from 32 and 8 reproduces the recordings at 8, 128 and 1024 exactly"; fi

# ---- the simulator prices the ruled trace at P' as the recording at P' ----
sweep() {  # sweep TRACE GPUS OUT
    "$BIN" sim sweep --model "$MODEL" --platform dgx-a100 --optim "$TOP/$1" \
        --gpus "$2" --json --no-save >"$TOP/$3" 2>"$TOP/$3.err"
}
ok_all=1
sweep rule.jsonl 8,128,1024 s-rule.json || ok_all=0
sweep r8.jsonl 8 s8.json || ok_all=0
sweep r128.jsonl 128 s128.json || ok_all=0
sweep r1024.jsonl 1024 s1024.json || ok_all=0
sweep r32.jsonl 128 s32at128.json || ok_all=0
[ $ok_all = 1 ] && ok "sweeps run" || not_ok "sweeps run" "$(cat "$TOP"/*.json.err)"
if "$PY" - "$TOP" <<'PY'
import json, sys
top = sys.argv[1]
rows = [json.loads(l) for l in open(f"{top}/s-rule.json")]
skip = {"plan", "trace_ranks", "scaling_efficiency"}
for r in rows:
    want = json.loads(open(f"{top}/s{r['gpus']}.json").readline())
    for k, v in want.items():
        if k not in skip:
            assert r[k] == v, (r["gpus"], k, r[k], v)
# the 32-rank bytes priced at 128 differ: without the rule it was wrong
old = json.loads(open(f"{top}/s32at128.json").readline())
new = [r for r in rows if r["gpus"] == 128][0]
assert old["bytes_per_gpu"] != new["bytes_per_gpu"]
assert old["wire_bytes_per_gpu"] != new["wire_bytes_per_gpu"]
PY
then ok "sim sweep: ruled trace at 8/128/1024 == the recordings there, field by field"
else not_ok "sim sweep: ruled trace at 8/128/1024 == the recordings there, field by field"; fi

# ---- bytes that do not depend on P: no per-call field ----
for SPEC in slamb lamb; do
    if rec "$SPEC-rule.jsonl" 64 --trace-rule 8 && rec "$SPEC.jsonl" 64 &&
        "$PY" - "$TOP/$SPEC-rule.jsonl" "$TOP/$SPEC.jsonl" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert a[0]["bytes_rule"]["from_ranks"] == [8, 64]
assert "bytes_rule" not in b[0]
assert len(a) > 1 and a[1:] == b[1:]        # call lines unchanged
assert not any("bytes_split" in c for c in a[1:])
PY
    then ok "$SPEC: rule stated, no call carries bytes_split, call lines unchanged"
    else not_ok "$SPEC: rule stated, no call carries bytes_split, call lines unchanged"; fi
done

tap_end
