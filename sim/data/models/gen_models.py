#!/usr/bin/python3
"""gen_models.py - writes the model presets of the simulator (lbscale-model v1).

    /usr/bin/python3 sim/data/models/gen_models.py    (from anywhere)

One entry per parameter tensor in the order the optimizer sees them (the
list a trace header carries), so a trace matches a model by layer index;
each file is also a valid `lbscale optim --layers FILE.json` (name + shape).

FLOPs per tensor, forward, at the stated per-GPU batch: a dense layer
d_in x d_out over T tokens costs 2 d_in d_out T; a convolution
2 C_in C_out k^2 H_out W_out per image; attention scores and context add
4 T s d_model per layer (QK^T and AV, s = keys per query: the sequence, or
the window for Swin) and are put on the tensor whose gradient they precede
(BERT: value.bias, GPT-2: c_attn.bias, Swin: attn.qkv.bias).  Biases,
LayerNorm/BatchNorm and embeddings carry no FLOPs: the elementwise work is
in the stated efficiency.  Backward = 2 x forward (the reader's default).
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = HERE          # where write() puts files (sim/data/validation sets its own)


def write(name, meta, layers):
    doc = dict(format="lbscale-model", version=1, name=name)
    doc.update(meta)
    params = sum(_n(l["shape"]) for l in layers)
    fwd = sum(l.get("fwd_gflops", 0) for l in layers)
    doc["notes"] = ("%d tensors, %.4g M parameters, %.4g TFLOP forward per "
                    "GPU per step" % (len(layers), params / 1e6, fwd / 1e3))
    head = json.dumps(doc, indent=2)[:-2]  # drop the closing brace
    rows = []
    for l in layers:
        l = dict(l)
        if "fwd_gflops" in l:
            l["fwd_gflops"] = float("%.6g" % l["fwd_gflops"])
            if l["fwd_gflops"] == 0:
                del l["fwd_gflops"]
        rows.append("    " + json.dumps(l, separators=(", ", ": ")))
    text = head + ',\n  "layers": [\n' + ",\n".join(rows) + "\n  ]\n}\n"
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        f.write(text)
    print("%-10s %4d tensors %8.2f M params %8.3f TFLOP fwd" %
          (name, len(layers), params / 1e6, fwd / 1e3))


def _n(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def lin(T, din, dout):
    return 2.0 * T * din * dout / 1e9


# ---- BERT (Devlin et al.; tensor list as bench/layers.c "bert-large") ----
def bert(name, h, blocks, ffn, batch, seq, preds, eff, desc, sources):
    V, T, Tp = 30522, batch * seq, batch * preds
    L = []

    def add(n, shape, g=0.0):
        L.append(dict(name=n, shape=shape, fwd_gflops=g))

    add("embeddings.word", [V, h])
    add("embeddings.position", [512, h])
    add("embeddings.token_type", [2, h])
    add("embeddings.LayerNorm.weight", [h])
    add("embeddings.LayerNorm.bias", [h])
    for b in range(blocks):
        p = "layer%d." % b
        for j in ("query", "key", "value", "output"):
            add(p + "attention.%s.weight" % j, [h, h], lin(T, h, h))
            # scores QK^T + context AV precede value's gradient
            add(p + "attention.%s.bias" % j, [h],
                4.0 * T * seq * h / 1e9 if j == "value" else 0.0)
        add(p + "attention.LayerNorm.weight", [h])
        add(p + "attention.LayerNorm.bias", [h])
        add(p + "intermediate.weight", [ffn, h], lin(T, h, ffn))
        add(p + "intermediate.bias", [ffn])
        add(p + "output.weight", [h, ffn], lin(T, ffn, h))
        add(p + "output.bias", [h])
        add(p + "output.LayerNorm.weight", [h])
        add(p + "output.LayerNorm.bias", [h])
    add("pooler.weight", [h, h], lin(batch, h, h))
    add("pooler.bias", [h])
    add("cls.transform.weight", [h, h], lin(Tp, h, h))
    add("cls.transform.bias", [h])
    add("cls.transform.LayerNorm.weight", [h])
    add("cls.transform.LayerNorm.bias", [h])
    # MLM decoder, weight tied to embeddings.word: logits over the masked
    # positions only (NVIDIA's BERT), costed on the last tensor
    add("cls.decoder.bias", [V], lin(Tp, h, V))
    write(name, dict(description=desc, sources=sources, batch_per_gpu=batch,
                     seq_len=seq, efficiency=eff, bucket_mb=25), L)


# ---- GPT-2 (Radford et al. 2019; HuggingFace tensor order) ----
def gpt2(name, h, blocks, batch, seq, eff, desc, sources):
    V, T = 50257, batch * seq
    L = []

    def add(n, shape, g=0.0):
        L.append(dict(name=n, shape=shape, fwd_gflops=g))

    add("wte.weight", [V, h])
    add("wpe.weight", [1024, h])
    for b in range(blocks):
        p = "h.%d." % b
        add(p + "ln_1.weight", [h])
        add(p + "ln_1.bias", [h])
        add(p + "attn.c_attn.weight", [h, 3 * h], lin(T, h, 3 * h))
        add(p + "attn.c_attn.bias", [3 * h], 4.0 * T * seq * h / 1e9)
        add(p + "attn.c_proj.weight", [h, h], lin(T, h, h))
        add(p + "attn.c_proj.bias", [h])
        add(p + "ln_2.weight", [h])
        add(p + "ln_2.bias", [h])
        add(p + "mlp.c_fc.weight", [h, 4 * h], lin(T, h, 4 * h))
        add(p + "mlp.c_fc.bias", [4 * h])
        add(p + "mlp.c_proj.weight", [4 * h, h], lin(T, 4 * h, h))
        add(p + "mlp.c_proj.bias", [h])
    add("ln_f.weight", [h])
    # LM head tied to wte: logits for every token, costed on the last tensor
    add("ln_f.bias", [h], lin(T, h, V))
    write(name, dict(description=desc, sources=sources, batch_per_gpu=batch,
                     seq_len=seq, efficiency=eff, bucket_mb=25), L)


# ---- ResNet-50 v1.5 (He et al.; torchvision tensor order) ----
def resnet50(batch, eff):
    resnet("resnet-50", [3, 4, 6, 3], batch, eff, dict(
        description="ResNet-50 v1.5 (torchvision), ImageNet 224x224, per-GPU batch %d" % batch,
        sources=["He et al. 2016; torchvision resnet50 tensor list (161 tensors, 25.6 M parameters)",
                 "efficiency %.2g: assumed, of the order of NVIDIA's published AMP training "
                 "throughput on A100 (~2,700-3,000 img/s, i.e. ~10-12%% of the 312 TFLOP/s peak); "
                 "replace with measured fwd_ms/bwd_ms for a real machine" % eff]))


# ---- ResNet v1.5 bottleneck networks (He et al.; torchvision tensor order) ----
def resnet(name, blocks, batch, eff, meta):
    L = []

    def add(n, shape, g=0.0):
        L.append(dict(name=n, shape=shape, fwd_gflops=g))

    def conv(n, cin, cout, k, hw):
        add(n, [cout, cin, k, k], 2.0 * cin * cout * k * k * hw * hw * batch / 1e9)

    def bn(n, c):
        add(n + ".weight", [c])
        add(n + ".bias", [c])

    conv("conv1.weight", 3, 64, 7, 112)
    bn("bn1", 64)
    cin, hw = 64, 56
    for s, (width, nblk) in enumerate(zip([64, 128, 256, 512], blocks)):
        for b in range(nblk):
            p = "layer%d.%d." % (s + 1, b)
            out_hw = hw // 2 if (b == 0 and s > 0) else hw
            conv(p + "conv1.weight", cin, width, 1, hw)
            bn(p + "bn1", width)
            conv(p + "conv2.weight", width, width, 3, out_hw)   # v1.5: stride here
            bn(p + "bn2", width)
            conv(p + "conv3.weight", width, 4 * width, 1, out_hw)
            bn(p + "bn3", 4 * width)
            if b == 0:
                conv(p + "downsample.0.weight", cin, 4 * width, 1, out_hw)
                bn(p + "downsample.1", 4 * width)
            cin, hw = 4 * width, out_hw
    add("fc.weight", [1000, 2048], lin(batch, 2048, 1000))
    add("fc.bias", [1000])
    meta = dict(meta)
    meta.update(batch_per_gpu=batch, seq_len=1, efficiency=eff, bucket_mb=25)
    write(name, meta, L)


# ---- VGG-16 (Simonyan & Zisserman 2015, configuration D; torchvision order) ----
def vgg16(name, batch, eff, meta):
    L = []

    def add(n, shape, g=0.0):
        L.append(dict(name=n, shape=shape, fwd_gflops=g))

    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
           512, 512, 512, "M"]
    cin, hw, i = 3, 224, 0
    for v in cfg:
        if v == "M":
            hw //= 2
            i += 1
            continue
        add("features.%d.weight" % i, [v, cin, 3, 3],
            2.0 * cin * v * 9 * hw * hw * batch / 1e9)
        add("features.%d.bias" % i, [v])
        cin, i = v, i + 2
    for j, (din, dout) in enumerate([(512 * 7 * 7, 4096), (4096, 4096), (4096, 1000)]):
        add("classifier.%d.weight" % (3 * j), [dout, din], lin(batch, din, dout))
        add("classifier.%d.bias" % (3 * j), [dout])
    meta = dict(meta)
    meta.update(batch_per_gpu=batch, seq_len=1, efficiency=eff, bucket_mb=25)
    write(name, meta, L)


# ---- Swin Transformer (Liu et al. 2021; official tensor order) ----
def swin(name, C, depths, heads, batch, eff):
    L = []
    win = 7

    def add(n, shape, g=0.0):
        L.append(dict(name=n, shape=shape, fwd_gflops=g))

    T0 = 56 * 56 * batch
    add("patch_embed.proj.weight", [C, 3, 4, 4], 2.0 * 48 * C * T0 / 1e9)
    add("patch_embed.proj.bias", [C])
    add("patch_embed.norm.weight", [C])
    add("patch_embed.norm.bias", [C])
    c, side = C, 56
    for i, (d, nh) in enumerate(zip(depths, heads)):
        T = side * side * batch
        for j in range(d):
            p = "layers.%d.blocks.%d." % (i, j)
            add(p + "norm1.weight", [c])
            add(p + "norm1.bias", [c])
            add(p + "attn.relative_position_bias_table", [(2 * win - 1) ** 2, nh])
            add(p + "attn.qkv.weight", [3 * c, c], lin(T, c, 3 * c))
            # window attention: 49 keys per query
            add(p + "attn.qkv.bias", [3 * c], 4.0 * T * win * win * c / 1e9)
            add(p + "attn.proj.weight", [c, c], lin(T, c, c))
            add(p + "attn.proj.bias", [c])
            add(p + "norm2.weight", [c])
            add(p + "norm2.bias", [c])
            add(p + "mlp.fc1.weight", [4 * c, c], lin(T, c, 4 * c))
            add(p + "mlp.fc1.bias", [4 * c])
            add(p + "mlp.fc2.weight", [c, 4 * c], lin(T, 4 * c, c))
            add(p + "mlp.fc2.bias", [c])
        if i < len(depths) - 1:
            p = "layers.%d.downsample." % i
            add(p + "norm.weight", [4 * c])
            add(p + "norm.bias", [4 * c])
            add(p + "reduction.weight", [2 * c, 4 * c], lin(T // 4, 4 * c, 2 * c))
            c, side = 2 * c, side // 2
    add("norm.weight", [c])
    add("norm.bias", [c])
    add("head.weight", [1000, c], lin(batch, c, 1000))
    add("head.bias", [1000])
    write(name, dict(
        description="%s (C=%d, depths %s), ImageNet 224x224, window 7, per-GPU batch %d"
                    % (name, C, depths, batch),
        sources=["Liu et al. 2021, Swin Transformer; microsoft/Swin-Transformer tensor list",
                 "per-GPU batch %d as in the paper (1,024 on 8 GPUs)" % batch,
                 "efficiency %.2g: assumed (window attention and many small kernels keep "
                 "vision transformers far below peak); replace with measured times" % eff],
        batch_per_gpu=batch, seq_len=1, efficiency=eff, bucket_mb=25), L)


if __name__ == "__main__":
    # calibrated: 580 seq/s x 240.6 GFLOP/seq (this file's FLOPs) / 312
    # TFLOP/s = 0.447 (NVIDIA DeepLearningExamples PyTorch BERT README,
    # pre-training table, DGX A100 80GB, 1 GPU, seq 128, batch 256, AMP)
    bert("bert-large", 1024, 24, 4096, 64, 128, 20, 0.447,
         "BERT-Large (24 x 1024, 16 heads, 335 M parameters), pre-training phase 1: "
         "sequence 128, per-GPU batch 64, 20 masked predictions per sequence",
         ["Devlin et al. 2019; tensor list identical to bench/layers.c 'bert-large'",
          "phase-1 setup of NVIDIA's LAMB BERT recipe (sequence 128, 20 predictions/sequence)",
          "efficiency 0.447: calibrated to 580 sequences/s on one A100-80GB, phase 1 "
          "(seq 128, batch 256, AMP), NVIDIA DeepLearningExamples PyTorch/LanguageModeling/"
          "BERT README, pre-training performance table (DGX A100 80GB): 580 x 240.6 "
          "GFLOP per sequence / 312 TFLOP/s; the same fraction is assumed at this "
          "file's batch 64; replace with measured fwd_ms/bwd_ms (sim sweep --compute RUN)"])
    bert("bert-xl", 2560, 36, 10240, 16, 128, 20, 0.447,
         "BERT-XL (36 x 2560, 40 heads, ~2.9 B parameters), pre-training phase 1: "
         "sequence 128, per-GPU batch 16",
         ["SLAMB (Xu et al., ICML 2023) trains a 2.8 B BERT-XL on 1,024 A100s; its exact "
          "shape is not in our sources: assumed the Megatron-LM-style BERT of 36 layers, "
          "hidden 2560, FFN 10240 (2.9 B with embeddings)",
          "per-GPU batch 16 at sequence 128: assumed (memory-bound choice for a 2.9 B "
          "model with fp32 optimizer state on 80 GB)",
          "efficiency 0.447: assumed, as bert-large (calibrated there; no published "
          "single-GPU BERT-XL throughput in our sources)"])
    gpt2("gpt2-xl", 1600, 48, 8, 1024, 0.45,
         "GPT-2 XL (48 x 1600, 25 heads, 1.56 B parameters), context 1024, per-GPU batch 8",
         ["Radford et al. 2019; HuggingFace gpt2-xl tensor list (LM head tied to wte)",
          "per-GPU batch 8 x 1024 tokens: assumed",
          "efficiency 0.45: assumed (Megatron-class GPT training reaches 40-55% of peak)"])
    resnet50(256, 0.12)
    swin("swin-t", 96, [2, 2, 6, 2], [3, 6, 12, 24], 128, 0.1)
    swin("swin-b", 128, [2, 2, 18, 2], [4, 8, 16, 32], 128, 0.1)
