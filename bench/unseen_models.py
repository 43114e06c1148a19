"""Exports models of architectures the 24-model benchmark set
(bench/bench_models.py) does not contain, the way users export them
(issue 31 item 5, "the benchmark set grows"): models nobody tuned seam for.
Random weights (no network), batch norms calibrated so outputs are not
degenerate, torch.onnx.export at opset 13 or 14, static input shapes
unless a name says _dyn.

usage: /usr/bin/python3 bench/unseen_models.py [OUTDIR] [--only a,b] [--list]
       (OUTDIR defaults to /work/bench-unseen)

The set (a model that fails to export is skipped with the reason printed):
  - ssdlite320: torchvision ssdlite320_mobilenet_v3_large with its
    post-processing (transform, box decoding, score filter, batched NMS:
    NonMaxSuppression, TopK, Gather, ...), 1x3x320x320, outputs boxes,
    scores, labels of image 0;
  - retinanet: torchvision retinanet_resnet50_fpn at 320x320 (min/max size
    320), post-processing included;
  - convtasnet: a small Conv-TasNet (Conv1d encoder, GroupNorm(1, C) =
    InstanceNormalization between Reshapes, PReLU with one slope, dilated
    depthwise Conv1d, ConvTranspose1d decoder), 1 s of 16 kHz audio;
  - swin_t: torchvision swin_t, 1x3x224x224 (windowed attention, roll, pad,
    the shape arithmetic of the relative position bias);
  - r3d_18, r2plus1d_18: torchvision video nets (3-D convolutions) on a
    1x3x8x112x112 clip;
  - sort_mlp: the seeds' MLP with a sort between its layers, batch 32:
    1024 -> 4096, ReLU, sort (TopK over 32 x 4096), 4096 -> 4096, ReLU,
    4096 -> 1000, LogSoftmax;
  - deeplabv3_mbv3, lraspp_mbv3: torchvision segmentation
    (deeplabv3_mobilenet_v3_large, lraspp_mobilenet_v3_large) at 320x320,
    bilinear Resize to the input's size;
  - unet: a 4-level U-Net (base 32 channels, BN + ReLU, MaxPool,
    ConvTranspose2d 2x2 up-sampling, Concat skips), 1x3x256x256;
  - transformer_decoder: nn.TransformerDecoder (3 layers, d_model 256,
    4 heads, ff 1024) with a causal mask, two inputs: target 1x32x256 and
    memory 1x64x256;
  - gpt2: a GPT-2-like stack (4 blocks, d 256, 4 heads, tanh GELU written
    out, pre-norm) whose causal mask is a buffer sliced by the sequence
    length (masked_fill with -inf), token ids 1x64;
  - gpt2_dyn: the same exported with dynamic batch and sequence, run at
    2x48 (the mask's slice comes from Shape arithmetic);
  - encoder_dyn: nn.TransformerEncoder (4 layers, d 256) with positions
    from arange(sequence), dynamic batch and sequence, run at 4x48;
  - crnn: an OCR recognizer: conv stack -> 2-layer bidirectional LSTM ->
    Linear -> LogSoftmax, 1x1x32x256;
  - efficientnet_v2_s, vgg16, resnext50_32x4d, mobilenet_v3_small:
    torchvision classifiers at 224x224 not in the tuned set;
  - raft_small: torchvision optical flow (two frames); needs grid_sample,
    which torch 1.13 exports only from opset 16: skipped with the reason.
Next to each NAME.onnx: NAME.input.npy for the first input (named
"input"), NAME.input_K.npy for input K; outputs are named output,
output_1, ... A NAME.stamp makes reruns quick; failures write no stamp.
"""
import math
import os
import sys
import time
import traceback
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

VERSION = "1"
warnings.filterwarnings("ignore")
torch.set_num_threads(2)
tvm = torchvision.models


def tv(name, **kw):
    """torchvision's builder NAME (classification, detection, segmentation
    or video), random weights."""
    for mod in (tvm, tvm.detection, tvm.segmentation, tvm.video):
        if hasattr(mod, name):
            return lambda: getattr(mod, name)(weights=None, **kw)
    raise AttributeError(f"torchvision {torchvision.__version__} has no model '{name}'")


class Detector(nn.Module):
    """A torchvision detector taking one NCHW tensor: its images are the
    batch; returns image 0's boxes, scores and labels."""

    def __init__(self, ctor):
        super().__init__()
        self.m = ctor()

    def forward(self, x):
        d = self.m(list(x))[0]
        return d["boxes"], d["scores"], d["labels"]


class Segmenter(nn.Module):
    def __init__(self, ctor):
        super().__init__()
        self.m = ctor()

    def forward(self, x):
        return self.m(x)["out"]


class TasBlock(nn.Module):
    def __init__(self, b, h, dilation):
        super().__init__()
        self.f = nn.Sequential(nn.Conv1d(b, h, 1), nn.PReLU(), nn.GroupNorm(1, h),
                               nn.Conv1d(h, h, 3, padding=dilation, dilation=dilation, groups=h), nn.PReLU(),
                               nn.GroupNorm(1, h))
        self.res, self.skip = nn.Conv1d(h, b, 1), nn.Conv1d(h, b, 1)

    def forward(self, x):
        y = self.f(x)
        return x + self.res(y), self.skip(y)


class ConvTasNet(nn.Module):
    """Encoder N=128 (L=16, stride 8), bottleneck B=64, 2 repeats of 4
    blocks (H=128, dilations 1..8), 2 speakers, ConvTranspose1d decoder."""

    def __init__(self, n=128, b=64, h=128, repeats=2, blocks=4, spk=2):
        super().__init__()
        self.spk, self.n = spk, n
        self.enc = nn.Conv1d(1, n, 16, stride=8, bias=False)
        self.norm = nn.GroupNorm(1, n)
        self.bottleneck = nn.Conv1d(n, b, 1)
        self.blocks = nn.ModuleList([TasBlock(b, h, 2 ** k) for _ in range(repeats) for k in range(blocks)])
        self.mask = nn.Sequential(nn.PReLU(), nn.Conv1d(b, spk * n, 1))
        self.dec = nn.ConvTranspose1d(n, 1, 16, stride=8, bias=False)

    def forward(self, wav):  # [B, 1, T]
        w = F.relu(self.enc(wav))
        y = self.bottleneck(self.norm(w))
        skips = 0
        for blk in self.blocks:
            y, s = blk(y)
            skips = skips + s
        m = torch.sigmoid(self.mask(skips)).view(wav.shape[0], self.spk, self.n, -1)
        src = (m * w.unsqueeze(1)).view(wav.shape[0] * self.spk, self.n, -1)
        return self.dec(src).view(wav.shape[0], self.spk, -1)


class SortMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(1024, 4096), nn.Linear(4096, 4096), nn.Linear(4096, 1000)

    def forward(self, x):
        r, _ = torch.sort(F.relu(self.fc1(x)))
        return torch.log_softmax(self.fc3(F.relu(self.fc2(r))), dim=1)


def double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, cin=3, classes=2, base=32, levels=4):
        super().__init__()
        ch = [base * 2 ** k for k in range(levels + 1)]
        self.down = nn.ModuleList([double_conv(cin, ch[0])] + [double_conv(ch[k], ch[k + 1]) for k in range(levels)])
        self.up = nn.ModuleList([nn.ConvTranspose2d(ch[k + 1], ch[k], 2, stride=2) for k in reversed(range(levels))])
        self.dec = nn.ModuleList([double_conv(2 * ch[k], ch[k]) for k in reversed(range(levels))])
        self.head = nn.Conv2d(ch[0], classes, 1)

    def forward(self, x):
        skips = []
        for k, d in enumerate(self.down):
            x = d(x if k == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        skips.pop()
        for up, dec in zip(self.up, self.dec):
            x = dec(torch.cat([skips.pop(), up(x)], 1))
        return self.head(x)


class Decoder(nn.Module):
    def __init__(self, tgt_len=32):
        super().__init__()
        layer = nn.TransformerDecoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
        self.dec = nn.TransformerDecoder(layer, num_layers=3)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(tgt_len))
        self.out = nn.Linear(256, 256)

    def forward(self, tgt, memory):
        return self.out(self.dec(tgt, memory, tgt_mask=self.causal))


class GPTBlock(nn.Module):
    def __init__(self, d, heads, ctx):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc_out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("bias", torch.tril(torch.ones(ctx, ctx)).view(1, 1, ctx, ctx))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        h = self.fc(self.ln2(x))
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return x + self.fc_out(h)


class GPT(nn.Module):
    def __init__(self, vocab=8000, d=256, heads=4, layers=4, ctx=128):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([GPTBlock(d, heads, ctx) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


class EncoderDyn(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.pos = nn.Embedding(4000, 256), nn.Embedding(512, 256)
        layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=4)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        return self.enc(self.emb(ids) + self.pos(pos))


class CRNN(nn.Module):
    def __init__(self, classes=97):
        super().__init__()

        def cbr(cin, cout):
            return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

        self.cnn = nn.Sequential(*cbr(1, 64), nn.MaxPool2d(2), *cbr(64, 128), nn.MaxPool2d(2), *cbr(128, 256),
                                 *cbr(256, 256), nn.MaxPool2d((2, 1)), *cbr(256, 256), nn.MaxPool2d((4, 1)))
        self.rnn = nn.LSTM(256, 128, num_layers=2, bidirectional=True)
        self.fc = nn.Linear(256, classes)

    def forward(self, x):  # [B, 1, 32, W] -> [W/4, B, classes]
        f = self.cnn(x).squeeze(2).permute(2, 0, 1)
        out, _ = self.rnn(f)
        return torch.log_softmax(self.fc(out), dim=2)


class Flow(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = tvm.optical_flow.raft_small(weights=None)

    def forward(self, a, b):
        return self.m(a, b, num_flow_updates=6)[-1]


IMG = (1, 3, 224, 224)
img = lambda *s: (lambda: torch.randn(*s))  # noqa: E731
ids = lambda v, *s: (lambda: torch.randint(0, v, s))  # noqa: E731
# name: (constructor, input makers (one per model input), opset, dynamic axes per input or None)
MODELS = {
    "ssdlite320": (lambda: Detector(tv("ssdlite320_mobilenet_v3_large", weights_backbone=None)), [lambda: torch.rand(1, 3, 320, 320)], 13,
                   None),
    "retinanet": (lambda: Detector(tv("retinanet_resnet50_fpn", weights_backbone=None, min_size=320, max_size=320)),
                  [lambda: torch.rand(1, 3, 320, 320)], 13, None),
    "convtasnet": (ConvTasNet, [img(1, 1, 16000)], 13, None),
    "swin_t": (tv("swin_t"), [img(*IMG)], 14, None),
    "r3d_18": (tv("r3d_18"), [img(1, 3, 8, 112, 112)], 13, None),
    "r2plus1d_18": (tv("r2plus1d_18"), [img(1, 3, 8, 112, 112)], 13, None),
    "sort_mlp": (SortMLP, [img(32, 1024)], 13, None),
    "deeplabv3_mbv3": (lambda: Segmenter(tv("deeplabv3_mobilenet_v3_large", weights_backbone=None)),
                       [img(1, 3, 320, 320)], 13, None),
    "lraspp_mbv3": (lambda: Segmenter(tv("lraspp_mobilenet_v3_large", weights_backbone=None)), [img(1, 3, 320, 320)],
                    13, None),
    "unet": (UNet, [img(1, 3, 256, 256)], 13, None),
    "transformer_decoder": (Decoder, [img(1, 32, 256), img(1, 64, 256)], 14, None),
    "gpt2": (GPT, [ids(8000, 1, 64)], 14, None),
    "gpt2_dyn": (GPT, [ids(8000, 2, 48)], 14, [{0: "batch", 1: "seq"}]),
    "encoder_dyn": (EncoderDyn, [ids(4000, 4, 48)], 14, [{0: "batch", 1: "seq"}]),
    "crnn": (CRNN, [img(1, 1, 32, 256)], 13, None),
    "efficientnet_v2_s": (tv("efficientnet_v2_s"), [img(*IMG)], 13, None),
    "vgg16": (tv("vgg16"), [img(*IMG)], 13, None),
    "resnext50_32x4d": (tv("resnext50_32x4d"), [img(*IMG)], 13, None),
    "mobilenet_v3_small": (tv("mobilenet_v3_small"), [img(*IMG)], 13, None),
    "raft_small": (Flow, [img(1, 3, 128, 128), img(1, 3, 128, 128)], 14, None),
}


def input_names(n):
    return ["input"] + [f"input_{k}" for k in range(1, n)]


def calibrate(model, xs):
    """As tests/models/gen_models.py's calibrate, but only the batch norms
    train (so detectors, whose training mode wants targets, run their eval
    path) and on a batch of 2 (a norm over 1x1 maps needs 2 values)."""
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)) and not m.weight.detach().any():
            m.reset_parameters()
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
        m.train()
    with torch.no_grad():
        for _ in range(3):
            model(*[torch.cat([x, torch.rand_like(x) if x.min() >= 0 else torch.randn_like(x)])
                    if x.is_floating_point() else torch.cat([x, x]) for x in xs])
    model.eval()


def export(name, out):
    ctor, makers, opset, dyn = MODELS[name]
    torch.manual_seed(0)
    model = ctor().eval()
    torch.manual_seed(1)
    xs = [mk() for mk in makers]
    calibrate(model, xs)
    path = os.path.join(out, name + ".onnx")
    with torch.no_grad():
        y = model(*xs)
    n_out = len(y) if isinstance(y, tuple) else 1
    names = input_names(len(xs))
    axes = {n: a for n, a in zip(names, dyn)} if dyn else None
    # grad stays enabled during export: under no_grad nn.TransformerEncoderLayer
    # takes a fused fast path that torch.onnx cannot export
    torch.onnx.export(model, tuple(xs), path, opset_version=opset, do_constant_folding=True, input_names=names,
                      output_names=["output"] + [f"output_{k}" for k in range(1, n_out)], dynamic_axes=axes)
    for n, x in zip(names, xs):
        np.save(os.path.join(out, f"{name}.{n}.npy"), x.numpy())
    return path


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--list" in sys.argv:
        print("\n".join(MODELS))
        return
    wanted = list(MODELS)
    if "--only" in sys.argv:
        only = sys.argv[sys.argv.index("--only") + 1]
        wanted, args = only.split(","), [a for a in args if a != only]
    out = args[0] if args else "/work/bench-unseen"
    os.makedirs(out, exist_ok=True)
    for name in wanted:
        if name not in MODELS:
            sys.exit(f"unseen_models: unknown model '{name}' (see --list)")
        stamp = os.path.join(out, name + ".stamp")
        if os.path.exists(stamp) and open(stamp).read() == VERSION and os.path.exists(os.path.join(out, name + ".onnx")):
            continue
        t0 = time.time()
        try:
            path = export(name, out)
        except Exception as e:  # noqa: BLE001 -- any export failure: say why, go on
            msg = str(e).strip().splitlines()
            print(f"{name}: not exported: {type(e).__name__}: {msg[0] if msg else ''}"[:300], flush=True)
            if "--verbose" in sys.argv:
                traceback.print_exc()
            p = os.path.join(out, name + ".onnx")
            if os.path.exists(p):
                os.remove(p)
            continue
        with open(stamp, "w") as f:
            f.write(VERSION)
        print(f"{name}: {time.time() - t0:.1f} s, {os.path.getsize(path) / 1e6:.1f} MB", flush=True)


if __name__ == "__main__":
    main()
