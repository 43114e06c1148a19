"""Exports the dnnl benchmark set (issue 11): the models a user would pick,
not the ones seam was tuned on. Random weights (no network), batch norms
calibrated as the test models are (tests/models/gen_models.py), opset 13
unless a model needs 14.

usage: /usr/bin/python3 bench/bench_models.py OUTDIR [--only a,b] [--list]

The set:
  - every torchvision classifier family that exports cleanly: resnet18/50,
    densenet121, inception_v3, googlenet, mobilenet_v2, mobilenet_v3_large,
    efficientnet_b0, regnet_y_400mf, shufflenet_v2_x1_0, squeezenet1_0,
    mnasnet1_0, convnext_tiny, vit_b_16;
  - a 4-layer transformer encoder (d_model 256, 4 heads, ff 1024, token
    ids in) at batch x sequence 1x128, 2x32, 8x64 and 16x16;
  - a 2-layer LSTM and a 2-layer GRU (hidden 256, batch 1, sequence 64);
  - a large MLP (batch 64, 1024-4096-4096-1024);
  - an OCR-style text detector (DB-like: a mobilenet_v3-small backbone with
    depthwise convs, HardSwish and squeeze-excite, an FPN with nearest and
    bilinear Resize upsampling and Concat, a conv head with Sigmoid),
    exported with dynamic H/W and run at 320x320 and 640x640;
  - resnet18 exported with dynamic H/W, run at 256x320.
Next to each NAME.onnx: NAME.input.npy. A NAME.stamp makes reruns quick.
Also writes peak_matmul.onnx (one 2048x2048x2048 MatMul), the machine's
peak for the GFLOP/s column.
"""
import inspect
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
import gen_models  # noqa: E402

VERSION = "2"  # 2: no zero-initialized layers (vit_b_16's head made its output 0)
warnings.filterwarnings("ignore")
torch.set_num_threads(2)


class Encoder(nn.Module):
    """Token ids [B, S] -> embedding + positions + 4 post-norm encoder layers."""

    def __init__(self, seq):
        super().__init__()
        self.emb = nn.Embedding(4000, 256)
        self.pos = nn.Parameter(torch.randn(1, seq, 256) * 0.02)
        layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=4)

    def forward(self, ids):
        return self.enc(self.emb(ids) + self.pos)


class Recurrent(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(128, 256, num_layers=2, batch_first=True)
        self.fc = nn.Linear(256, 10)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[:, -1])


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 1024))

    def forward(self, x):
        return self.f(x)


class TextDetector(nn.Module):
    """DB-style detector: backbone features at strides 4, 8, 16, 32 -> 1x1
    lateral convs -> top-down FPN (nearest 2x Resize + Add) -> 3x3 convs,
    each level upsampled to stride 4 (nearest) and concatenated -> head:
    3x3 conv, BN, ReLU, bilinear Resize to the input's size, 1x1 conv,
    Sigmoid (a probability map)."""

    def __init__(self):
        super().__init__()
        import torchvision
        f = torchvision.models.mobilenet_v3_small(weights=None).features
        # strides 4, 8, 16, 32 end after blocks 1, 3, 8, 12
        self.stages = nn.ModuleList([f[:2], f[2:4], f[4:9], f[9:]])
        chans, inner = [16, 24, 48, 576], 64
        self.lateral = nn.ModuleList([nn.Conv2d(c, inner, 1, bias=False) for c in chans])
        self.smooth = nn.ModuleList([nn.Conv2d(inner, inner // 4, 3, padding=1, bias=False) for _ in chans])
        self.head = nn.Sequential(nn.Conv2d(inner, inner // 4, 3, padding=1, bias=False), nn.BatchNorm2d(inner // 4),
                                  nn.ReLU())
        self.out = nn.Conv2d(inner // 4, 1, 1)

    def forward(self, x):
        feats = []
        y = x
        for s in self.stages:
            y = s(y)
            feats.append(y)
        lat = [conv(f) for conv, f in zip(self.lateral, feats)]
        for i in range(3, 0, -1):
            lat[i - 1] = lat[i - 1] + nn.functional.interpolate(lat[i], scale_factor=2.0, mode="nearest")
        ups = [nn.functional.interpolate(conv(f), scale_factor=float(2 ** i), mode="nearest") if i else conv(f)
               for i, (conv, f) in enumerate(zip(self.smooth, lat))]
        h = self.head(torch.cat(ups, 1))
        h = nn.functional.interpolate(h, size=x.shape[2:], mode="bilinear", align_corners=False)
        return torch.sigmoid(self.out(h))


class PeakMatMul(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(2048, 2048) * 0.02)

    def forward(self, x):
        return x @ self.w


tv = gen_models.tv
IMG = (1, 3, 224, 224)
MODELS = {
    "resnet18": (tv("resnet18"), lambda: torch.randn(IMG), 13),
    "resnet50": (tv("resnet50"), lambda: torch.randn(IMG), 13),
    "densenet121": (tv("densenet121"), lambda: torch.randn(IMG), 13),
    "inception_v3": (tv("inception_v3", aux_logits=False, init_weights=True), lambda: torch.randn(1, 3, 299, 299), 13),
    "googlenet": (tv("googlenet", aux_logits=False, init_weights=True), lambda: torch.randn(IMG), 13),
    "mobilenet_v2": (tv("mobilenet_v2"), lambda: torch.randn(IMG), 13),
    "mobilenet_v3_large": (tv("mobilenet_v3_large"), lambda: torch.randn(IMG), 13),
    "efficientnet_b0": (tv("efficientnet_b0"), lambda: torch.randn(IMG), 13),
    "regnet_y_400mf": (tv("regnet_y_400mf"), lambda: torch.randn(IMG), 13),
    "shufflenet_v2_x1_0": (tv("shufflenet_v2_x1_0"), lambda: torch.randn(IMG), 13),
    "squeezenet1_0": (tv("squeezenet1_0"), lambda: torch.randn(IMG), 13),
    "mnasnet1_0": (tv("mnasnet1_0"), lambda: torch.randn(IMG), 13),
    "convnext_tiny": (tv("convnext_tiny"), lambda: torch.randn(IMG), 13),
    "vit_b_16": (tv("vit_b_16"), lambda: torch.randn(IMG), 14),
    # opset 14: torch exports the encoder's attention with ops of 14
    "encoder_1x128": (lambda: Encoder(128), lambda: torch.randint(0, 4000, (1, 128)), 14),
    "encoder_2x32": (lambda: Encoder(32), lambda: torch.randint(0, 4000, (2, 32)), 14),
    "encoder_8x64": (lambda: Encoder(64), lambda: torch.randint(0, 4000, (8, 64)), 14),
    "encoder_16x16": (lambda: Encoder(16), lambda: torch.randint(0, 4000, (16, 16)), 14),
    "lstm": (lambda: Recurrent(nn.LSTM), lambda: torch.randn(1, 64, 128), 13),
    "gru": (lambda: Recurrent(nn.GRU), lambda: torch.randn(1, 64, 128), 13),
    "mlp_large": (MLP, lambda: torch.randn(64, 1024), 13),
    # dynamic H/W: exported with symbolic height and width, run at one size
    "text_det_320": (TextDetector, lambda: torch.randn(1, 3, 320, 320), 13, "hw"),
    "text_det_640": (TextDetector, lambda: torch.randn(1, 3, 640, 640), 13, "hw"),
    "resnet18_dyn": (tv("resnet18"), lambda: torch.randn(1, 3, 256, 320), 13, "hw"),
}
EXTRA = {"peak_matmul": (PeakMatMul, lambda: torch.randn(2048, 2048), 13)}


def export(name, out):
    ctor, make_input, opset, *dyn = {**MODELS, **EXTRA}[name]
    torch.manual_seed(0)
    model = ctor().eval()
    torch.manual_seed(1)
    x = make_input()
    gen_models.calibrate(model, x)
    path = os.path.join(out, name + ".onnx")
    # grad stays enabled: under no_grad nn.TransformerEncoderLayer takes a
    # fused fast path that torch.onnx cannot export
    axes = {"input": {2: "height", 3: "width"}} if dyn else None
    # the TorchScript exporter, as Debian's torch has it: torch 2.9 and
    # newer default to the dynamo exporter, whose graphs differ
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, (x,), path, opset_version=opset, do_constant_folding=True, input_names=["input"],
                      output_names=["output"], dynamic_axes=axes, **legacy)
    np.save(os.path.join(out, name + ".input.npy"), x.numpy())
    return path


def main():
    gen_models.run("bench_models", list(MODELS) + list(EXTRA), export, VERSION, listed=list(MODELS))


if __name__ == "__main__":
    main()
