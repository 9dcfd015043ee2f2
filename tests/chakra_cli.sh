#!/usr/bin/env bash
# chakra_cli.sh BINARY - `lbscale sim export --chakra` read back by an
# independent reader: Google's protobuf Python runtime (Debian's
# python3-protobuf) with a module protoc generates from the same schema
# (sim/chakra/chakra_et.proto), never lbscale's own code.  Checks node
# counts, every collective's type and size against `sim step --timeline`,
# dependencies (each points to an earlier node; the optimizer waits for
# every collective), neighbour send/receive peers per rank, and bad input.
# Skips (77) without protoc, python3-protobuf or a protobuf-c build.
set -u
BIN=${1:?usage: chakra_cli.sh LBSCALE_BINARY}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
PROTO=$HERE/../sim/chakra/chakra_et.proto
. "$HERE/tap.sh"

if ! command -v protoc >/dev/null || ! "$PY" -c 'import google.protobuf' 2>/dev/null; then
    echo "1..0 # SKIP protoc or python3-protobuf missing (apt-get install protobuf-compiler python3-protobuf)"
    exit 77
fi
if "$BIN" sim export --chakra "$TOP/probe" --model bert-large --platform dgx-a100 --optim lamb --gpus 8 2>&1 >/dev/null | grep -q "no protobuf-c"; then
    echo "1..0 # SKIP this build has no protobuf-c (apt-get install protobuf-c-compiler libprotobuf-c-dev)"
    exit 77
fi
rm -rf "$TOP/probe"
protoc --proto_path="$(dirname "$PROTO")" --python_out="$TOP" "$PROTO" ||
    { echo "1..0 # SKIP protoc failed"; exit 77; }

M=(--model bert-large --platform dgx-a100)

check() {  # check DESC DIR TIMELINE.json GPUS [--neighbor]
    local desc=$1
    shift
    if "$PY" - "$TOP" "$@" >"$TOP/check.out" 2>&1 <<'PY'
import json, os, sys
sys.path.insert(0, sys.argv[1])
import chakra_et_pb2 as pb
d, tl, P = sys.argv[2], sys.argv[3], int(sys.argv[4])
neighbor = len(sys.argv) > 5

def messages(path):
    data = open(path, "rb").read()
    i, out = 0, []
    while i < len(data):
        n = shift = 0
        while True:
            b = data[i]; i += 1
            n |= (b & 0x7f) << shift; shift += 7
            if not b & 0x80:
                break
        out.append(data[i:i + n]); i += n
    assert i == len(data), "trailing bytes"
    return out

events = [json.loads(l) for l in open(tl)]
comm = [e for e in events if e["event"] == "comm"]
comm.sort(key=lambda e: e["start_ms"])
files = sorted(f for f in os.listdir(d) if f.endswith(".et"))
assert len(files) == P, (len(files), P)
kind = {"allreduce": pb.ALL_REDUCE, "allgather": pb.ALL_GATHER,
        "allgatherv": pb.ALL_GATHER, "alltoall": pb.ALL_TO_ALL,
        "bcast": pb.BROADCAST, "barrier": pb.BARRIER}
for r in range(P):
    msgs = messages(f"{d}/et.{r}.et")
    meta = pb.GlobalMetadata(); meta.ParseFromString(msgs[0])
    attrs = {a.name: a.string_val for a in meta.attr}
    assert attrs["schema"] == "1.0.2-chakra.1.0.0", attrs
    assert attrs["gpus"] == str(P), attrs
    nodes = []
    for m in msgs[1:]:
        n = pb.Node(); n.ParseFromString(m); nodes.append(n)
    assert [n.id for n in nodes] == list(range(len(nodes)))
    for n in nodes:
        for x in list(n.data_deps) + list(n.ctrl_deps):
            assert x < n.id, (n.id, x)
    comp = [n for n in nodes if n.type == pb.COMP_NODE]
    colls = [n for n in nodes if n.type == pb.COMM_COLL_NODE]
    sends = [n for n in nodes if n.type == pb.COMM_SEND_NODE]
    recvs = [n for n in nodes if n.type == pb.COMM_RECV_NODE]
    assert comp[0].name == "forward" and comp[-1].name == "optimizer"
    assert len(comp) == 2 + int(attrs.get("layers", "396")), len(comp)
    opt = comp[-1]
    comm_ids = {n.id for n in colls + sends + recvs}
    assert comm_ids <= set(opt.data_deps), "optimizer must wait for every collective"
    A = lambda n: {a.name: a for a in n.attr}
    if not neighbor:
        assert len(colls) == len(comm) and not sends, (len(colls), len(comm))
        for n, e in zip(colls, comm):
            a = A(n)
            assert a["comm_type"].int64_val == kind[e["coll"]], (n.name, e)
            assert a["comm_size"].int64_val == round(e["bytes"]), (n.name, e["bytes"])
    else:
        nb = [e for e in comm if e["coll"] == "neighbor"]
        assert len(colls) == len(comm) - len(nb), (len(colls), len(comm), len(nb))
        # the ring: two destinations (+1, -1) per exchange
        assert len(sends) == len(recvs) == 2 * len(nb), (len(sends), len(nb))
        for s in sends:
            a = A(s)
            assert a["comm_src"].int64_val == r
            assert a["comm_dst"].int64_val in ((r + 1) % P, (r - 1) % P), (r, a["comm_dst"].int64_val)
        for s in recvs:
            a = A(s)
            assert a["comm_dst"].int64_val == r
print("ok", len(files), "files")
PY
    then ok "$desc"; else not_ok "$desc" "$(tail -c 800 "$TOP/check.out")"; fi
}

good "export lamb, 16 GPUs" sim export --chakra "$TOP/lamb" "${M[@]}" --optim lamb --gpus 16
"$BIN" sim step "${M[@]}" --optim lamb --gpus 16 --timeline --json --no-save >"$TOP/lamb.tl" 2>/dev/null
check "lamb: every bucket's allreduce, sizes and dependencies as simulated" "$TOP/lamb" "$TOP/lamb.tl" 16
good "export topk (allgathers), 16 GPUs" sim export --chakra "$TOP/topk" "${M[@]}" --optim lamb_topk --gpus 16
"$BIN" sim step "${M[@]}" --optim lamb_topk --gpus 16 --timeline --json --no-save >"$TOP/topk.tl" 2>/dev/null
check "lamb+topk: allgathers as ALL_GATHER with their sizes" "$TOP/topk" "$TOP/topk.tl" 16
good "export dmsgd (ring neighbours), 8 GPUs" sim export --chakra "$TOP/dm" "${M[@]}" --optim dmsgd --gpus 8
"$BIN" sim step "${M[@]}" --optim dmsgd --gpus 8 --timeline --json --no-save >"$TOP/dm.tl" 2>/dev/null
check "dmsgd: send/receive pairs to rank +-1 on every rank" "$TOP/dm" "$TOP/dm.tl" 8 --neighbor
good "export 1-bit LAMB's compressed phase" sim export --chakra "$TOP/ob" "${M[@]}" --optim onebit_lamb --gpus 16 --final --ranks 2
"$PY" - "$TOP" <<'PY' && ok "the compressed phase has an ALL_TO_ALL" || not_ok "the compressed phase has an ALL_TO_ALL"
import sys
sys.path.insert(0, sys.argv[1])
import chakra_et_pb2 as pb
import os
assert sorted(os.listdir(sys.argv[1] + "/ob")) == ["et.0.et", "et.1.et"]
assert pb.ALL_TO_ALL == 6
data = open(sys.argv[1] + "/ob/et.0.et", "rb").read()
# comm_type 6 appears as an int64 attribute: name "comm_type", field 9 = 6
assert b"comm_type" in data and b"\x48\x06" in data
PY
# import: the exported collectives replay as the original plan
good "import lamb's rank 0" sim import --chakra "$TOP/lamb/et.0.et" --model bert-large --out "$TOP/imp.jsonl"
good "sweep the imported plan beside lamb" sim sweep "${M[@]}" --optim lamb,"$TOP/imp.jsonl" --gpus 16,64 --json --no-save
"$PY" - "$OUT" <<'PY' && ok "the imported plan prices as the original (16 and 64 GPUs)" || not_ok "the imported plan prices as the original (16 and 64 GPUs)" "$(head -c 600 "$OUT")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
a = {r["gpus"]: r for r in rows if r["optim"] == "lamb"}
b = {r["gpus"]: r for r in rows if r["optim"] == "chakra"}
for P in (16, 64):
    assert abs(a[P]["iter_ms"] - b[P]["iter_ms"]) <= 1e-9 * a[P]["iter_ms"], (P, a[P]["iter_ms"], b[P]["iter_ms"])
    assert a[P]["bytes_per_gpu"] == b[P]["bytes_per_gpu"]
PY
head -c 100 "$TOP/lamb/et.0.et" > "$TOP/trunc.et"
bad "import a truncated trace" "trunc.et|truncated" sim import --chakra "$TOP/trunc.et" --model bert-large --out "$TOP/t1.jsonl"
bad "import a JSON file" "bert-large.json" sim import --chakra "$HERE/../sim/data/models/bert-large.json" --model bert-large --out "$TOP/t2.jsonl"
bad "import /dev/zero" "/dev/zero" sim import --chakra /dev/zero --model bert-large --out "$TOP/t3.jsonl"
bad "import over an existing file" "--out|exists" sim import --chakra "$TOP/lamb/et.0.et" --model bert-large --out "$TOP/imp.jsonl"
[ ! -e "$TOP/t1.jsonl" ] && [ ! -e "$TOP/t2.jsonl" ] && [ ! -e "$TOP/t3.jsonl" ] &&
    ok "refused imports leave no file" || not_ok "refused imports leave no file"
mkdir -p "$TOP/exists"
bad "export into an existing directory" "exists|does not exist" sim export --chakra "$TOP/exists" "${M[@]}" --optim lamb --gpus 8
bad "export without --chakra" "--chakra" sim export "${M[@]}" --optim lamb --gpus 8
bad "export of two GPU counts" "one GPU count" sim export --chakra "$TOP/two" "${M[@]}" --optim lamb --gpus 8,16
bad "export --ranks beyond the GPUs" "--ranks" sim export --chakra "$TOP/r" "${M[@]}" --optim lamb --gpus 8 --ranks 9
[ ! -e "$TOP/two" ] && [ ! -e "$TOP/r" ] && ok "refused exports leave no directory" ||
    not_ok "refused exports leave no directory"
tap_end
