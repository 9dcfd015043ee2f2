#!/usr/bin/env bash
# nccl_tuner_cli.sh BINARY - `lbscale sim coll --nccl-tuner-csv` through
# the real binary, printed as TAP (issue 31, item 5).
#
# The CSV (NCCL's example tuner plugin: collective_type, min_bytes,
# max_bytes, algorithm, protocol, channels, nNodes, nRanks, numPipeOps,
# regBuff) must say, for every (collective, GPU count, size) of the table
# `sim coll --json` prints, the same algorithm, protocol and channels,
# with nNodes and nRanks of that GPU count; its ranges per (collective,
# nRanks) are contiguous, disjoint and cover the simulated span in NCCL's
# nBytes (allgather: bytes per rank x nRanks); at both ends of every
# allreduce and broadcast range the simulator, asked at exactly that size,
# makes that row's choice (the switches are found to the byte).  Bad
# input (a platform without an NCCL model, a collective NCCL's tuner does
# not take) exits 2 and writes nothing.
set -u

BIN=${1:?usage: nccl_tuner_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

. "$(dirname "$0")/tap.sh"
XP=$(cd "$(dirname "$0")/../sim/xcheck/platforms" && pwd)

G=(--gpus 8,16,64,1024 --bytes 1K..1G)
# every platform preset (`sim list`), so a new one is covered with no edit
PLATS=$("$BIN" sim list --json | "$PY" -c 'import json, sys
print(" ".join(json.load(sys.stdin)["platforms"]))')
[ -n "$PLATS" ] && ok "sim list names platform presets" || not_ok "sim list names platform presets"
for plat in $PLATS; do
    good "$plat: sim coll --nccl-tuner-csv" sim coll --platform "$plat" "${G[@]}" --nccl-tuner-csv "$TOP/$plat.csv" --no-save
    for c in allreduce allgather bcast; do
        run sim coll --platform "$plat" --coll "$c" "${G[@]}" --json --no-save
        cp "$OUT" "$TOP/$plat-$c.jsonl"
    done
    "$PY" - "$BIN" "$plat" "$TOP/$plat.csv" "$TOP/$plat"-*.jsonl <<'PY' && ok "$plat: the CSV says what sim coll prints, switches to the byte" || not_ok "$plat: the CSV says what sim coll prints, switches to the byte"
import json, subprocess, sys
binary, plat, csv = sys.argv[1], sys.argv[2], sys.argv[3]
rows = []
for line in open(csv):
    if line.startswith("#") or not line.strip():
        continue
    f = line.rstrip("\n").split(",")
    assert len(f) == 10, line
    rows.append(dict(coll=f[0], lo=int(f[1]), hi=int(f[2]), algo=f[3],
                     proto=f[4], ch=int(f[5]), nodes=int(f[6]),
                     ranks=int(f[7]), pipe=f[8], reg=f[9]))
assert rows
name = {"allreduce": "allreduce", "allgather": "allgather", "bcast": "broadcast"}
# NCCL's algorithm numbers as sim coll --json gives them (nccl_algo)
algo = {0: "tree", 1: "ring", 4: "nvls", 5: "nvls_tree"}
# every printed row: exactly one CSV row holds it, with the same choice
tables = []
for path in sys.argv[4:]:
    tables += [json.loads(l) for l in open(path) if l.strip()]
assert len(tables) == 3 * 4 * 10, len(tables)
for t in tables:
    nb = t["bytes"] * (t["gpus"] if t["coll"] == "allgather" else 1)
    hit = [r for r in rows if r["coll"] == name[t["coll"]] and
           r["ranks"] == t["gpus"] and r["lo"] <= nb <= r["hi"]]
    assert len(hit) == 1, (t, hit)
    r = hit[0]
    want = (algo[t["nccl_algo"]], t["proto"].lower(), t["channels"])
    assert (r["algo"], r["proto"], r["ch"]) == want, (t, r)
    assert r["pipe"] == "-1" and r["reg"] == "-1", r
# ranges: contiguous and disjoint per (collective, nRanks), covering the span
for c in set(r["coll"] for r in rows):
    for P in set(r["ranks"] for r in rows):
        rs = sorted((r for r in rows if r["coll"] == c and r["ranks"] == P),
                    key=lambda r: r["lo"])
        assert rs, (c, P)
        f = P if c == "allgather" else 1
        assert rs[0]["lo"] == 1000 * f and rs[-1]["hi"] == 262144000 * f, (c, P, rs)
        for a, b in zip(rs, rs[1:]):
            assert a["hi"] + 1 == b["lo"] and a["lo"] <= a["hi"], (a, b)
        assert len({r["nodes"] for r in rs}) == 1
# both ends of every allreduce/broadcast range, asked at exactly that size
back = {"allreduce": "allreduce", "broadcast": "bcast"}
for c in back:
    for P in sorted(set(r["ranks"] for r in rows)):
        rs = [r for r in rows if r["coll"] == c and r["ranks"] == P]
        sizes = sorted({r["lo"] for r in rs} | {r["hi"] for r in rs})
        out = subprocess.run([binary, "sim", "coll", "--platform", plat,
                              "--coll", back[c], "--gpus", str(P), "--bytes",
                              ",".join(map(str, sizes)), "--json",
                              "--no-save"], capture_output=True, text=True,
                             check=True).stdout
        got = {int(j["bytes"]): j for j in map(json.loads, out.splitlines())}
        for r in rs:
            for s in (r["lo"], r["hi"]):
                j = got[s]
                assert (algo[j["nccl_algo"]], j["proto"].lower(),
                        j["channels"]) == (r["algo"], r["proto"], r["ch"]), \
                    (c, P, s, r, j)
PY
done

bad "a platform without an NCCL model" "--nccl-tuner-csv|nccl" sim coll --platform "$XP/xcheck-plain.json" --gpus 8 --nccl-tuner-csv "$TOP/never.csv"
bad "alltoall: not NCCL's tuner's" "--nccl-tuner-csv|alltoall" sim coll --platform dgx-h100 --coll alltoall --gpus 16 --nccl-tuner-csv "$TOP/never.csv"
bad "bad --bytes with a CSV" "--bytes" sim coll --platform dgx-h100 --bytes 0..1 --nccl-tuner-csv "$TOP/never.csv"
[ -e "$TOP/never.csv" ] && not_ok "no CSV written for refused input" || ok "no CSV written for refused input"

tap_end
