#!/usr/bin/env python3
"""seeds.py ROOT OUT - seed corpora for the fuzz harnesses, one directory
per harness under OUT, from the repository's own files: platform, model
and trace presets and the validation runs' inputs (fuzz_sim_json), every
optimizer/compressor name and the specs the suites, tests and README use
(fuzz_spec), the suites (fuzz_suite), small generated IDX files, plain and
gzip (fuzz_idx), and the results JSONL of tests/data and
results/validation (fuzz_jsonl).  The first byte of a seed selects what
the harness does with it (see each harness's header)."""
import glob, gzip, json, os, re, struct, sys

ROOT, OUT = sys.argv[1], sys.argv[2]
CAP = 16000   # largest seed (bytes): big models keep their first layers


def put(h, name, data):
    d = os.path.join(OUT, h)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, re.sub(r"[^A-Za-z0-9_.-]", "_", name)),
              "wb") as f:
        f.write(data)


def rd(p, cap=CAP):
    with open(p, "rb") as f:
        return f.read(cap)


def lines_upto(p, cap=CAP):
    """Whole lines of a JSONL file, at most cap bytes."""
    out = b""
    with open(p, "rb") as f:
        for line in f:
            if len(out) + len(line) > cap:
                break
            out += line
    return out


def rel(p):
    return os.path.relpath(p, ROOT)


# ---- fuzz_sim_json: P platform, M model, C model NUL platform, T trace
# the validation platforms (sim/data/validation/v-*.json whose format is a
# platform) carry the fields issue 29 added: tiers, radix, rails, nic_path,
# job, measured NIC rates
vplats = [p for p in glob.glob(f"{ROOT}/sim/data/validation/v-*.json")
          if json.load(open(p)).get("format") == "lbscale-platform"]
vmodels = [p for p in glob.glob(f"{ROOT}/sim/data/validation/v-*.json")
           if json.load(open(p)).get("format") == "lbscale-model"]
plats = sorted(glob.glob(f"{ROOT}/sim/data/platforms/*.json") + vplats +
               glob.glob(f"{ROOT}/sim/xcheck/platforms/*.json") +
               glob.glob(f"{ROOT}/results/validation/**/platform.json",
                         recursive=True))
models = sorted(glob.glob(f"{ROOT}/sim/data/models/*.json") + vmodels +
                glob.glob(f"{ROOT}/results/validation/**/run-model.json",
                          recursive=True))
for p in plats:
    put("fuzz_sim_json", "P-" + rel(p), b"P" + rd(p))
def model_seed(p):
    """A model file, or for one above CAP a valid model of its first 40
    layers (short inputs run faster; the reader's paths are the same)."""
    if os.path.getsize(p) <= CAP:
        return rd(p)
    m = json.load(open(p))
    m["layers"] = m["layers"][:40]
    m["bucket_mb"] = 1
    return json.dumps(m).encode()[:CAP]


for m in models:
    put("fuzz_sim_json", "M-" + rel(m), b"M" + model_seed(m))
for m in [m for m in models if "/sim/data/" in m]:
    for p in plats[:6]:
        put("fuzz_sim_json", f"C-{rel(m)}-{os.path.basename(p)}",
            b"C" + model_seed(m) + b"\0" + rd(p))
for t in sorted(glob.glob(f"{ROOT}/sim/data/traces/*.jsonl") +
                glob.glob(f"{ROOT}/results/validation/**/run-plan.jsonl",
                          recursive=True)):
    put("fuzz_sim_json", "T-" + rel(t), b"T" + lines_upto(t))
    # the header and the last calls: 1-bit LAMB's bytes_split calls come
    # after its warm-up, past what lines_upto keeps
    with open(t, "rb") as f:
        lines = f.readlines()
    tail = b""
    for line in reversed(lines[1:]):
        if len(lines[0]) + len(tail) + len(line) > CAP:
            break
        tail = line + tail
    if b"bytes_split" in tail:
        put("fuzz_sim_json", "U-" + rel(t), b"T" + lines[0] + tail)

# ---- fuzz_spec: registered names and the specs the repository uses
names = set()
for src in glob.glob(f"{ROOT}/core/optim/*.c") + \
        glob.glob(f"{ROOT}/core/compress/*.c"):
    names |= set(re.findall(r'\.name\s*=\s*"([a-z0-9_]+)"', open(src).read()))
texts = [open(p, errors="replace").read() for p in
         glob.glob(f"{ROOT}/bench/suites/*.json") +
         glob.glob(f"{ROOT}/tests/*.sh") + glob.glob(f"{ROOT}/tests/*.c") +
         [f"{ROOT}/README.md", f"{ROOT}/sim/README.md"]]
specs = set(names)
for t in texts:
    for n in names:
        specs |= set(re.findall(r"\b%s:[A-Za-z0-9_.=,+-]+" % n, t))
for i, s in enumerate(sorted(specs)):
    put("fuzz_spec", f"spec-{i:04d}", s.encode())

# ---- fuzz_suite: the suites
for p in sorted(glob.glob(f"{ROOT}/bench/suites/*.json")):
    put("fuzz_suite", rel(p), rd(p))

# ---- fuzz_torch: the PyTorch profile fixtures (tests/data/torch/), the
# legacy list and the Kineto layout, cut down to the events the reader
# uses (optimizer, autograd engine, AccumulateGrad, the linear layers) so a
# seed is a few KB, and cut short
KEEP = ("Optimizer.", "autograd::engine", "torch::autograd::AccumulateGrad",
        "aten::linear", "ProfilerStep#")
for t in sorted(glob.glob(f"{ROOT}/tests/data/torch/mlp-*.json")):
    if "params" in t:
        continue
    doc = json.loads(rd(t, 1 << 24))
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    ev[:] = [e for e in ev if e["name"].startswith(KEEP)]
    small = json.dumps(doc, separators=(",", ":")).encode()
    put("fuzz_torch", rel(t), small)
    put("fuzz_torch", rel(t) + "-short", small[:len(small) // 2])

# ---- fuzz_chakra: Chakra execution traces `sim export --chakra` wrote
# (tests/data/chakra/), whole and cut short
for t in sorted(glob.glob(f"{ROOT}/tests/data/chakra/*.et")):
    put("fuzz_chakra", rel(t), rd(t))
    put("fuzz_chakra", rel(t) + "-short", rd(t)[:4096])


# ---- fuzz_idx: first byte 0 = labels (1-D), 1 = images (3-D)
def idx(dims, payload):
    magic = 0x800 | len(dims)
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d)
                                               for d in dims) + payload
for name, sel, dims in (("labels", 0, [6]), ("images", 1, [2, 3, 4])):
    n = 1
    for d in dims:
        n *= d
    data = idx(dims, bytes(i % 10 for i in range(n)))
    put("fuzz_idx", name, bytes([sel]) + data)
    put("fuzz_idx", name + ".gz", bytes([sel]) + gzip.compress(data, 9))
    put("fuzz_idx", name + "-short", bytes([sel]) + data[:-3])

# ---- fuzz_jsonl: first byte = index of the file (fuzz_jsonl.c: files[])
FILES = ["suite.jsonl", "stream.jsonl", "optim.jsonl", "compress.jsonl",
         "coll.jsonl", "train.jsonl", "sim.jsonl", "meta.json"]
cands = glob.glob(f"{ROOT}/tests/data/plot-run/*") + \
    glob.glob(f"{ROOT}/results/validation/**/*.jsonl", recursive=True) + \
    glob.glob(f"{ROOT}/results/validation/**/meta.json", recursive=True)
seen = set()
for p in sorted(cands):
    b = os.path.basename(p)
    if b not in FILES:
        continue
    data = lines_upto(p, 4096)   # whole lines; max_len is 4 KB here
    if data in seen:
        continue
    seen.add(data)
    put("fuzz_jsonl", rel(p), bytes([FILES.index(b)]) + data)

# ---- fuzz_calib: first byte = options (fuzz_calib.c: bits 0-2 --ranks - 1,
# bit 3 --coll allgather, bits 4-5 --ranks-per-node), then the file: the
# nccl-tests and OSU fixtures and lbscale coll rows of tests/data
for p in sorted(glob.glob(f"{ROOT}/tests/data/calib/*.txt") +
                glob.glob(f"{ROOT}/tests/data/calib/*.json")):
    data = rd(p, 8000)
    put("fuzz_calib", rel(p), bytes([0x0f]) + data)
    put("fuzz_calib", rel(p) + "-plain", bytes([0]) + data)
for p in sorted(glob.glob(f"{ROOT}/tests/data/plot-run/coll.jsonl") +
                glob.glob(f"{ROOT}/results/validation/calib-*/**/coll.jsonl",
                          recursive=True))[:8]:
    put("fuzz_calib", rel(p), bytes([0]) + lines_upto(p, 8000))
