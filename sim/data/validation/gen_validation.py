#!/usr/bin/python3
"""gen_validation.py - the model files of the validation rows (docs/validation.md, "e").

    /usr/bin/python3 sim/data/validation/gen_validation.py    (from anywhere)

Each model is built with sim/data/models/gen_models.py's generators (the same
FLOP counting as the presets) at the batch and sequence its source states;
its efficiency (fraction of the GPU's peak) is a stated assumption or comes
from a published single-GPU throughput of the same framework and GPU (never
from the figure the row is checked against).  The platform files beside this
script are written by hand, each field's source in its "sources" and notes.
"""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import gen_models as g  # noqa: E402


def bert_at(name, batch, seq, preds, eff_from, desc, sources):
    """BERT-Large at (batch, seq, preds); eff_from(gflop_per_seq) gives the
    efficiency from a published throughput in sequences/s per GPU."""
    with tempfile.TemporaryDirectory() as tmp:
        g.OUT = tmp
        g.bert(name, 1024, 24, 4096, batch, seq, preds, 1.0, desc, sources)
        m = json.load(open(os.path.join(tmp, name + ".json")))
    gf = 3 * sum(l.get("fwd_gflops", 0) for l in m["layers"]) / batch
    eff, why = eff_from(gf)
    g.OUT = HERE
    g.bert(name, 1024, 24, 4096, batch, seq, preds, round(eff, 4), desc,
           sources + ["efficiency %.4g: %s (%.1f GFLOP per sequence, forward "
                      "+ backward, by this file's count)" % (eff, why, gf)])


def main():
    g.OUT = HERE
    p100 = ("efficiency 0.5 of the FP32 peak: assumed (cuDNN convolutions in "
            "fp32 run at roughly half of a P100's peak); no single-GPU "
            "throughput of the source's run is published")
    g.resnet("v-resnet101-p100", [3, 4, 23, 3], 64, 0.5, dict(
        description="ResNet-101 v1.5, ImageNet 224x224, per-GPU batch 64, fp32 "
                    "(validation row V1)",
        sources=["He et al. 2016; torchvision resnet101 tensor list",
                 "batch 64: the command in horovod/horovod docs/benchmarks.rst",
                 p100]))
    g.vgg16("v-vgg16-p100", 64, 0.5, dict(
        description="VGG-16, ImageNet 224x224, per-GPU batch 64, fp32 (V2)",
        sources=["Simonyan & Zisserman 2015, configuration D; torchvision vgg16 "
                 "tensor list", "batch 64 as V1", p100]))
    g.resnet("v-resnet50-p100", [3, 4, 6, 3], 32, 0.5, dict(
        description="ResNet-50 v1.5, ImageNet 224x224, per-GPU batch 32, fp32 "
                    "(V12)",
        sources=["He et al. 2016; Goyal et al. 2017: minibatch 8192 on 256 "
                 "GPUs = 32 per GPU", p100]))
    # DeepSpeed's own single-V100 BERT-Large throughput (blog 2020-05-28,
    # microsoft/DeepSpeed docs/_posts/2020-05-28-fastest-bert-training.md):
    # "272 and 52 samples/second for sequence lengths 128 and 512"
    ds = "DeepSpeed's single V100 BERT-Large throughput, %d samples/s at " \
         "sequence %d (blog 2020-05-28), times the GFLOP per sequence, over " \
         "125 TFLOP/s"
    bert_at("v-bert-large-v100-128", 16, 128, 20,
            lambda gf: (272 * gf / 125e3, ds % (272, 128)),
            "BERT-Large pre-training, sequence 128, per-GPU batch 16 (V3-V6)",
            ["DeepSpeed 1-bit Adam blog 2020-09-09: batch 16 per GPU, sequence "
             "128 (companion scripts), fp16"])
    bert_at("v-bert-large-v100-384", 3, 384, 0,
            lambda gf: (52 * gf * 512 / 384 / 125e3,
                        ds % (52, 512) + ", the GFLOP per sequence taken as "
                        "linear in the sequence (512/384 of this file's): the "
                        "sequence-512 efficiency assumed at 384, for which no "
                        "figure is published"),
            "BERT-Large SQuAD fine-tuning, sequence 384, per-GPU batch 3 "
            "(V7-V8); the pre-training tensor list stands in for the QA head",
            ["DeepSpeed tutorial onebit-adam.md: batch 96 on 32 GPUs, "
             "sequence 384, fp16"])
    paddle = "NVIDIA's PaddlePaddle BERT README, 1 DGX A100 row: %.1f " \
             "sequences/s per GPU (%s), times the GFLOP per sequence, over " \
             "312 TFLOP/s: the compute of the same run's one-node point, not " \
             "the 32-node figure checked"
    bert_at("v-bert-large-a100-128", 256, 128, 20,
            lambda gf: (5541 / 8 * gf / 312e3, paddle % (5541 / 8,
                        "5541 / 8, AMP, sequence 128")),
            "BERT-Large pre-training phase 1, sequence 128, micro-batch 256 "
            "per GPU, AMP (V9)", ["NVIDIA DeepLearningExamples PaddlePaddle "
                                  "BERT README, multi-node table"])
    bert_at("v-bert-large-a100-512", 32, 512, 80,
            lambda gf: (60206 / 28.55 / 8 * gf / 312e3, paddle % (
                60206 / 28.55 / 8, "60206 / 28.55 / 8, AMP, sequence 512")),
            "BERT-Large pre-training phase 2, sequence 512, micro-batch 32 "
            "per GPU, 80 masked predictions, AMP (V10)",
            ["NVIDIA DeepLearningExamples PaddlePaddle BERT README, multi-node "
             "table; 80 predictions per sequence as NVIDIA's phase 2"])


if __name__ == "__main__":
    main()
