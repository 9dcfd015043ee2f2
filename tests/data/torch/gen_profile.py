#!/usr/bin/python3
"""Regenerate the PyTorch-profile fixtures of tests/torch_import_cli.sh.

Profiles four training steps of lbscale's MLP (784-512-256-10, ReLU, batch
128, SGD) on this CPU with Debian's python3-torch and writes, into the
folder given (default: this script's):

  mlp-profile.json   the Chrome trace torch exports (Debian's torch 1.13 is
                     built without Kineto: its legacy profiler writes a bare
                     event list, names and times only, no tensor shapes)
  mlp-params.json    the parameters in model.parameters() order, name and
                     shape, for `sim model import --params` (what the legacy
                     trace lacks)
  mlp-kineto.json    the same events in the layout a Kineto build of
                     torch.profiler writes ({"traceEvents": [...]}, "cat",
                     pid/tid, float microseconds, "args": {"Input Dims"} on
                     each AccumulateGrad, "ProfilerStep#N" spans).  Kineto
                     is not in Debian, so this file is WRITTEN BY THIS
                     SCRIPT from the legacy trace and the parameter shapes,
                     to the published layout; it is not a Kineto recording.

Run:  /usr/bin/python3 tests/data/torch/gen_profile.py [DIR]
(apt-get install python3-torch; the committed files are what the test reads.)
"""
import json
import os
import sys

import torch
import torch.nn as nn

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(1)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256),
                      nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
lossf = nn.CrossEntropyLoss()
x = torch.randn(128, 784)
y = torch.randint(0, 10, (128,))

with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                            record_shapes=True) as prof:
    for _ in range(4):
        opt.zero_grad()
        lossf(model(x), y).backward()
        opt.step()
legacy = os.path.join(out, "mlp-profile.json")
prof.export_chrome_trace(legacy)

params = [{"name": n, "shape": list(p.shape)} for n, p in model.named_parameters()]
with open(os.path.join(out, "mlp-params.json"), "w") as f:
    json.dump({"torch": torch.__version__, "model": "mlp:784-512-256-10",
               "batch": 128, "params": params}, f, indent=1)
    f.write("\n")

# The Kineto layout, from the legacy events: AccumulateGrad runs once per
# parameter per backward in reverse parameter order (checked below against
# the step's count), so its k-th call gets the k-th shape from the end.
with open(legacy) as f:
    events = json.load(f)
events.sort(key=lambda e: e["ts"])
acc = [e for e in events if e["name"] == "torch::autograd::AccumulateGrad"]
assert len(acc) == 4 * len(params), (len(acc), len(params))
shapes = [p["shape"] for p in reversed(params)]
kin = []
steps = [e for e in events if e["name"].startswith("Optimizer.step#")]
start = events[0]["ts"]
for i, s in enumerate(steps):
    end = s["ts"] + s["dur"]
    kin.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % i,
                "pid": 4242, "tid": 4242, "ts": start + 0.25, "dur": end - start,
                "args": {}})
    start = end
for e in events:
    k = {"ph": "X", "cat": "cpu_op", "name": e["name"], "pid": 4242,
         "tid": 4242, "ts": e["ts"] + 0.25, "dur": e["dur"] + 0.0,
         "args": {}}
    if e["name"] == "torch::autograd::AccumulateGrad":
        k["args"]["Input Dims"] = [shapes[acc.index(e) % len(params)]]
        k["args"]["Input type"] = ["float"]
    kin.append(k)
with open(os.path.join(out, "mlp-kineto.json"), "w") as f:
    json.dump({"schemaVersion": 1, "deviceProperties": [],
               "traceEvents": kin,
               "traceName": "written by gen_profile.py to the Kineto layout"}, f)
print("wrote", legacy, "and its params and Kineto-layout copies")
