"""Exports the test models from torch with random weights, at test time.

usage: /usr/bin/python3 tests/models/gen_models.py OUTDIR [--only a,b] [--list]

Use Debian's /usr/bin/python3 (python3-torch, python3-torchvision,
python3-onnx); there is no network, so every model is built with random
weights (torch.manual_seed(0)). Next to each NAME.onnx it writes
NAME.input.npy (or NAME.input.<k>.npy for several inputs), the input it used
(fixed seed), and NAME.expected.<k>.npy, torch's own output for it: the
independent reference later tests compare seam against. A NAME.stamp file
records the generator version; a model whose stamp matches is not exported
again, so repeated runs are quick.
"""
import os
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torchvision

VERSION = "3"
warnings.filterwarnings("ignore")
torch.set_num_threads(2)


class TransformerEncoder(nn.Module):
    """Token ids [1, 32] -> embedding + learned positions + 4 encoder layers."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(1000, 128)
        self.pos = nn.Parameter(torch.randn(1, 32, 128) * 0.02)
        layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=4)

    def forward(self, ids):
        x = self.emb(ids) + self.pos[:, : ids.shape[1]]
        return self.enc(x)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.qkv, self.proj = heads, nn.Linear(dim, dim * 3), nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = torch.softmax(q @ k.transpose(-2, -1) * (c // self.heads) ** -0.5, dim=-1)
        return self.proj((a @ v).transpose(1, 2).reshape(b, n, c))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.n1, self.attn, self.n2 = nn.LayerNorm(dim), Attention(dim, heads), nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        return x + self.mlp(self.n2(x))


class ViT(nn.Module):
    """A small ViT: 8x8 patches of a 32x32 image, 2 blocks, 10 classes."""

    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 64, 8, 8)
        self.cls = nn.Parameter(torch.randn(1, 1, 64) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 17, 64) * 0.02)
        self.blocks = nn.Sequential(Block(64, 4), Block(64, 4))
        self.norm, self.head = nn.LayerNorm(64), nn.Linear(64, 10)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.blocks(x))[:, 0])


class LSTMClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.lstm, self.fc = nn.Embedding(500, 64), nn.LSTM(64, 64, batch_first=True), nn.Linear(64, 5)

    def forward(self, ids):
        out, (h, c) = self.lstm(self.emb(ids))
        return self.fc(h[-1])


class TopKCumSum(nn.Module):
    """A small conv net ending in TopK and CumSum."""

    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3), nn.ReLU(),
                               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 32))

    def forward(self, x):
        v, i = torch.topk(self.f(x), k=5)
        return torch.cumsum(v, dim=1), i


class SeedMLP(nn.Module):
    """The torch-neuronx partitioner guide's MLP (smaller): fc-relu-fc-relu-fc-
    log_softmax-sort, or with the sort between the first relu and fc2."""

    def __init__(self, sort_mid):
        super().__init__()
        self.sort_mid = sort_mid
        self.fc1, self.fc2, self.fc3, self.relu = nn.Linear(16, 32), nn.Linear(32, 32), nn.Linear(32, 10), nn.ReLU()

    def forward(self, x):
        r1 = self.relu(self.fc1(x))
        if self.sort_mid:
            r1, _ = torch.sort(r1)
        out = torch.log_softmax(self.fc3(self.relu(self.fc2(r1))), dim=1)
        if not self.sort_mid:
            out, _ = torch.sort(out)
        return out


def tv(name, **kw):
    return lambda: getattr(torchvision.models, name)(weights=None, **kw)


IMG = (1, 3, 224, 224)
MODELS = {
    # name: (constructor, input maker, opset)
    "resnet18": (tv("resnet18"), lambda: torch.randn(IMG), 13),
    "resnet50": (tv("resnet50"), lambda: torch.randn(IMG), 13),
    "mobilenet_v2": (tv("mobilenet_v2"), lambda: torch.randn(IMG), 13),
    "squeezenet1_0": (tv("squeezenet1_0"), lambda: torch.randn(IMG), 13),
    "shufflenet_v2_x1_0": (tv("shufflenet_v2_x1_0"), lambda: torch.randn(IMG), 13),
    "efficientnet_b0": (tv("efficientnet_b0"), lambda: torch.randn(IMG), 13),
    "densenet121": (tv("densenet121"), lambda: torch.randn(IMG), 13),
    "googlenet": (tv("googlenet", aux_logits=False, init_weights=True), lambda: torch.randn(IMG), 13),
    "inception_v3": (tv("inception_v3", aux_logits=False, init_weights=True), lambda: torch.randn(1, 3, 299, 299), 13),
    "mnasnet1_0": (tv("mnasnet1_0"), lambda: torch.randn(IMG), 13),
    "regnet_y_400mf": (tv("regnet_y_400mf"), lambda: torch.randn(IMG), 13),
    "convnext_tiny": (tv("convnext_tiny"), lambda: torch.randn(IMG), 13),
    # opset 14: torch 1.13 exports the encoder's fused attention path with ops of 14
    "transformer_encoder": (TransformerEncoder, lambda: torch.randint(0, 1000, (1, 32)), 14),
    "vit_small": (ViT, lambda: torch.randn(1, 3, 32, 32), 14),
    "lstm_classifier": (LSTMClassifier, lambda: torch.randint(0, 500, (1, 20)), 13),
    "topk_cumsum": (TopKCumSum, lambda: torch.randn(1, 3, 32, 32), 13),
    "seed_mlp": (lambda: SeedMLP(False), lambda: torch.rand(4, 16), 13),
    "seed_mlp_sort_mid": (lambda: SeedMLP(True), lambda: torch.rand(4, 16), 13),
}
DYNAMIC = {"transformer_encoder_dyn": "transformer_encoder"}


def calibrate(model, x):
    """Gives batch norms the statistics of real activations. With the
    default running stats (mean 0, var 1) a randomly initialized deep net
    in eval mode often shrinks its signal to ~1e-14 by the last layer, and
    a comparison against such an output tests nothing; after a few
    training-mode passes on random inputs every layer carries O(1) values.
    A layer whose weights are all zeros (torchvision's ViT head, zeroed on
    purpose for fine-tuning) makes the output constant: it gets PyTorch's
    default initialization instead."""
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)) and not m.weight.detach().any():
            m.reset_parameters()
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average over the passes
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn((2,) + tuple(x.shape[1:])) if x.is_floating_point() else x)
    model.eval()


def export(name, out):
    base = DYNAMIC.get(name, name)
    ctor, make_input, opset = MODELS[base]
    torch.manual_seed(0)
    model = ctor().eval()
    torch.manual_seed(1)
    x = make_input()
    calibrate(model, x)
    path = os.path.join(out, name + ".onnx")
    # Grad stays enabled: under no_grad nn.TransformerEncoderLayer takes a
    # fused fast path that torch.onnx cannot export.
    if True:
        y = model(x)
        y = tuple(t.detach() for t in y) if isinstance(y, tuple) else y.detach()
        kw = {}
        if name in DYNAMIC:  # sequence length dynamic: Shape->Gather->Concat->Reshape chains appear
            kw["dynamic_axes"] = {"input": {1: "seq"}, "output": {1: "seq"}}
        ys = y if isinstance(y, tuple) else (y,)
        names = ["output"] + [f"output_{k}" for k in range(1, len(ys))]
        torch.onnx.export(model, (x,), path, opset_version=opset, do_constant_folding=True,
                          input_names=["input"], output_names=names, **kw)
    np.save(os.path.join(out, name + ".input.npy"), x.numpy())
    for k, t in enumerate(ys):
        np.save(os.path.join(out, f"{name}.expected.{k}.npy"), t.numpy())
    return path


def run(tool, names, export_one, version, listed=None):
    """The command line both model writers share: OUTDIR [--only a,b]
    [--list]; exports each model whose NAME.stamp does not hold version.
    names: every model it can write; listed: those --list shows."""
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--list" in sys.argv:
        print("\n".join(listed if listed is not None else names))
        return
    wanted = names
    if "--only" in sys.argv:
        only = sys.argv[sys.argv.index("--only") + 1]
        wanted, args = only.split(","), [a for a in args if a != only]
    out = args[0]
    os.makedirs(out, exist_ok=True)
    t_all = time.time()
    for name in wanted:
        if name not in names:
            sys.exit(f"{tool}: unknown model '{name}' (see --list)")
        stamp = os.path.join(out, name + ".stamp")
        if os.path.exists(stamp) and open(stamp).read() == version and os.path.exists(os.path.join(out, name + ".onnx")):
            continue
        t0 = time.time()
        path = export_one(name, out)
        with open(stamp, "w") as f:
            f.write(version)
        print(f"{name}: {time.time() - t0:.1f} s, {os.path.getsize(path) / 1e6:.1f} MB", flush=True)
    print(f"{tool}: done in {time.time() - t_all:.1f} s")


def main():
    run("gen_models", list(MODELS) + list(DYNAMIC), export, VERSION)


if __name__ == "__main__":
    main()
