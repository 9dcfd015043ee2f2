#!/usr/bin/python3
"""cnn_ref.py CNN_DUMP: the CNN's forward and backward recomputed in numpy
(float64, NHWC, weights [Cout][3][3][Cin]) from cnn_dump's parameters and
input; logits, loss and every gradient must agree with the C code."""
import json
import subprocess
import sys

import numpy as np


def conv(x, w, b):
    # x [B,H,W,Ci], w [Co,3,3,Ci] -> [B,H,W,Co], pad 1
    B, H, W, Ci = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((B, H, W, w.shape[0]))
    for ky in range(3):
        for kx in range(3):
            out += np.einsum("bhwc,oc->bhwo", xp[:, ky:ky + H, kx:kx + W, :],
                             w[:, ky, kx, :])
    return out + b


def conv_back(x, w, dout):
    B, H, W, Ci = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    dw = np.zeros_like(w)
    dxp = np.zeros_like(xp)
    for ky in range(3):
        for kx in range(3):
            dw[:, ky, kx, :] = np.einsum("bhwo,bhwc->oc", dout,
                                         xp[:, ky:ky + H, kx:kx + W, :])
            dxp[:, ky:ky + H, kx:kx + W, :] += np.einsum(
                "bhwo,oc->bhwc", dout, w[:, ky, kx, :])
    return dw, dout.sum(axis=(0, 1, 2)), dxp[:, 1:-1, 1:-1, :]


def pool(z):
    B, H, W, C = z.shape
    r = z.reshape(B, H // 2, 2, W // 2, 2, C)
    p = r.max(axis=(2, 4))
    return p


def pool_back(z, dp):
    # route to the first maximum in (dy, dx) scan order, as the C code
    B, H, W, C = z.shape
    dz = np.zeros_like(z)
    for y in range(H // 2):
        for x in range(W // 2):
            win = z[:, 2 * y:2 * y + 2, 2 * x:2 * x + 2, :].reshape(B, 4, C)
            a = win.argmax(axis=1)
            for q in range(4):
                sel = a == q
                dz[:, 2 * y + q // 2, 2 * x + q % 2, :] += np.where(
                    sel, dp[:, y, x, :], 0)
    return dz


def main():
    d = json.loads(subprocess.run([sys.argv[1]], check=True,
                                  capture_output=True, text=True).stdout)
    L = {l["name"]: (np.array(l["w"], float).reshape(l["shape"]),
                     np.array(l["g"], float).reshape(l["shape"]))
         for l in d["layers"]}
    W = {k: v[0] for k, v in L.items()}
    x = np.array(d["x"], float).reshape(4, 28, 28, 1)
    y = np.array(d["y"])
    z1 = conv(x, W["conv1.weight"], W["conv1.bias"])
    a1 = np.maximum(z1, 0)
    p1 = pool(a1)
    z2 = conv(p1, W["conv2.weight"], W["conv2.bias"])
    a2 = np.maximum(z2, 0)
    p2 = pool(a2).reshape(4, -1)
    h = np.maximum(p2 @ W["fc1.weight"].T + W["fc1.bias"], 0)
    lg = h @ W["fc2.weight"].T + W["fc2.bias"]
    mx = lg.max(axis=1, keepdims=True)
    lse = mx[:, 0] + np.log(np.exp(lg - mx).sum(axis=1))
    loss = float(np.mean(lse - lg[np.arange(4), y]))
    pr = np.exp(lg - lse[:, None])
    pr[np.arange(4), y] -= 1
    dlg = pr / 4
    G = {"fc2.weight": dlg.T @ h, "fc2.bias": dlg.sum(0)}
    dh = (dlg @ W["fc2.weight"]) * (h > 0)
    G["fc1.weight"] = dh.T @ p2
    G["fc1.bias"] = dh.sum(0)
    dp2 = (dh @ W["fc1.weight"]).reshape(4, 7, 7, 32)
    dz2 = pool_back(a2, dp2) * (z2 > 0)
    G["conv2.weight"], G["conv2.bias"], dp1 = conv_back(p1, W["conv2.weight"],
                                                        dz2)
    dz1 = pool_back(a1, dp1) * (z1 > 0)
    G["conv1.weight"], G["conv1.bias"], _ = conv_back(x, W["conv1.weight"],
                                                      dz1)
    fails = []
    e = np.abs(lg - np.array(d["logits"]).reshape(4, 10)).max()
    print("logits max abs err %.3g" % e)
    if e > 1e-4:
        fails.append("logits %.3g" % e)
    if abs(loss - d["loss"]) > 1e-5:
        fails.append("loss %.8g vs %.8g" % (d["loss"], loss))
    for k, (w, g) in L.items():
        ref = G[k]
        err = np.abs(g - ref).max() / (np.abs(ref).max() + 1e-12)
        print("%-13s max rel err %.3g" % (k, err))
        if err > 1e-4:
            fails.append("%s %.3g" % (k, err))
    if fails:
        print("FAIL: " + "; ".join(fails))
        return 1
    print("ok: C CNN matches the numpy reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
