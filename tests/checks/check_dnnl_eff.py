"""The dnnl backend on efficientnet's and mobilenet_v3's blocks: a
depthwise convolution with SiLU or HardSwish, a squeeze-excite (global
average pool, two 1x1 convolutions, Sigmoid or HardSigmoid, the Mul of the
features by that scale) and the 1x1 projection
(src/backends/dnnl/fuse.c: the squeeze-excite scale folded into the
projection's weights; conv.c: scaled_weights).

usage: /usr/bin/python3 check_dnnl_eff.py SEAM WORKDIR [-k PATTERN]

Each block is a torch module exported by torch.onnx.export (opset 13, as
bench/bench_models.py exports the benchmark set: SiLU as x * Sigmoid(x),
HardSwish as x * HardSigmoid(x)), at 112 x 112 and 7 x 7, batch 1 and 2,
the scale first (torch's `scale * x`) or second. It runs on the CPU
kernels and on dnnl with fusion on and off; every output must match the
torch module run in float64 within 1e-5 of the output's scale, and the CPU
run. No primitive may be one of oneDNN's reference kernels.

The compile log must show where the Mul went. With fusion on, at batch 1,
where x has at least 8 times the projection's weight elements, the Mul
makes no step ("no step of its own: the squeeze-excite scale ...") and the
projection Conv runs a `binary jit:uni` (its weights scaled) then its
convolution; everywhere else (batch 2, the 7 x 7 blocks with wide
weights, fusion off, a Mul whose output is also read elsewhere) the Mul is
a `binary jit:uni` step of its own and the Conv scales nothing.
"""
import os
import re
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import rel_err  # noqa: E402

args, run, work, check = seamtest.checker_setup(__doc__, "dnnl_eff", timeout=300)
torch.manual_seed(11)
TOL = 1e-5
LOG = re.compile(r"\(dnnl\): node (\d+) '(.*?)' \((\w+)\): (.*)$")
FOLDED = "no step of its own: the squeeze-excite scale"


class Block(nn.Module):
    """depthwise 3x3 + act, squeeze-excite (avg pool, 1x1, act, 1x1, gate),
    scale * x, 1x1 projection (and, when `tap`, the scaled features as a
    second output)."""

    def __init__(self, c, cout, act, sq_act, gate, scale_first=True, tap=False, k=1):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c)
        self.act = act()
        sq = max(c // 4, 8)
        self.fc1, self.sq_act, self.fc2, self.gate = nn.Conv2d(c, sq, 1), sq_act(), nn.Conv2d(sq, c, 1), gate()
        self.proj = nn.Conv2d(c, cout, k, padding=k // 2)
        self.scale_first, self.tap = scale_first, tap

    def forward(self, x):
        x = self.act(self.dw(x))
        s = self.gate(self.fc2(self.sq_act(self.fc1(F.adaptive_avg_pool2d(x, 1)))))
        y = s * x if self.scale_first else x * s
        return (self.proj(y), y) if self.tap else self.proj(y)


EFF = (nn.SiLU, nn.SiLU, nn.Sigmoid)           # efficientnet's
MBV3 = (nn.Hardswish, nn.ReLU, nn.Hardsigmoid)  # mobilenet_v3's

# (name, batch, C, H=W, C out, activations, scale first, tap, projection kernel,
#  with fusion on: how the projection's weights are scaled, None when the Mul stays)
BIN = "binary jit:uni"  # a 1x1 kernel's weights, [O/16, I, 16] rows times the scale
REORDER = "reorder"     # other kernels: a reorder with run-time output scales
CASES = [
    ("eff_112_b1", 1, 32, 112, 16, EFF, True, False, 1, BIN),       # x/w 784
    ("eff_112_b2", 2, 32, 112, 16, EFF, True, False, 1, None),      # batch 2: one scale per image
    ("eff_112_b1_x_first", 1, 32, 112, 16, EFF, False, False, 1, BIN),
    ("mbv3_112_b1", 1, 16, 112, 16, MBV3, True, False, 1, BIN),
    ("mbv3_112_b2", 2, 16, 112, 16, MBV3, True, False, 1, None),
    ("eff_7_b1_narrow", 1, 48, 7, 4, EFF, True, False, 1, BIN),     # x/w 12.25
    ("eff_7_b1_wide", 1, 96, 7, 48, EFF, True, False, 1, None),     # x/w 1.02: the Mul stays
    ("mbv3_7_b1_wide", 1, 96, 7, 48, MBV3, True, False, 1, None),
    ("eff_7_b2", 2, 48, 7, 4, EFF, True, False, 1, None),
    ("eff_28_b1_tap", 1, 24, 28, 8, EFF, True, True, 1, None),      # the scaled x is also an output
    ("eff_56_b1_k3", 1, 32, 56, 8, EFF, True, False, 3, REORDER),   # x/w 43.6, a 3x3 projection
]


def export(name, model, x):
    path = os.path.join(work, name + ".onnx")
    torch.onnx.export(model, x, path, opset_version=13, input_names=["x"],
                      output_names=["y", "t"] if model.tap else ["y"])
    return path


def se_nodes(path):
    """The projection Conv (the one writing output y) and the Mul feeding it."""
    g = onnx.load(path).graph
    prod = {o: n for n in g.node for o in n.output}
    conv = prod["y"]
    return conv.name, prod[conv.input[0]].name


def log_of(stderr):
    return [m.groups() for m in map(LOG.search, stderr.splitlines()) if m]


def run_model(path, label, d, *opts):
    r = run("run", path, "--input", f"x={os.path.join(work, 'x.npy')}", "--output-dir", d, *opts)
    if r.returncode:
        check.fail(f"{label}: {r.stderr.strip()[-400:]}")
        return None, r
    return seamtest.load_outputs(path, d), r


for name, batch, c, hw, cout, (act, sq_act, gate), scale_first, tap, k, scaler in CASES:
    if not check.selected(name):
        continue
    model = Block(c, cout, act, sq_act, gate, scale_first, tap, k).eval()
    x = torch.randn(batch, c, hw, hw)
    path = export(name, model, x)
    with torch.no_grad():
        ref = model.double()(x.double())
    refs = [r.numpy() for r in (ref if tap else (ref,))]
    np.save(os.path.join(work, "x.npy"), x.numpy())
    conv_name, mul_name = se_nodes(path)
    cpu, _ = run_model(path, f"{name} (cpu)", os.path.join(work, name + ".cpu"))
    if cpu is None:
        continue
    e = seamtest.worst(rel_err(g, w) for g, w in zip(cpu, refs))
    check.expect(e <= TOL, f"{name} (cpu) against torch: error {e:.2e}", f"beyond {TOL}")
    for fusion in ("on", "off"):
        label = f"{name} (dnnl, fusion={fusion})"
        got, r = run_model(path, label, os.path.join(work, f"{name}.dnnl.{fusion}"), "--target", "dnnl",
                           "--placement", "capability", "--compile-log", "--target-option", f"fusion={fusion}")
        if got is None:
            continue
        e_cpu = seamtest.worst(rel_err(g, w.astype(np.float64)) for g, w in zip(got, cpu))
        e_ref = seamtest.worst(rel_err(g, w) for g, w in zip(got, refs))
        check.expect(e_cpu <= TOL and e_ref <= TOL,
                     f"{label}: error {e_cpu:.2e} against the CPU, {e_ref:.2e} against torch", f"beyond {TOL}")
        log = log_of(r.stderr)
        prims = [(node, op, what.split(";")[0]) for _, node, op, what in log if ";" in what]
        bad = [p for p in prims if p[2].split(" ")[-1].startswith("ref")] + \
              [line for line in r.stderr.splitlines() if "): slow: " in line]
        check.expect(prims and not bad, f"{label}: {len(prims)} primitives, no reference kernel", bad)
        # (the reorders a node makes to and from the plain layout of the graph's
        # inputs and outputs are left out, but the one scaling weights: the
        # first of the Conv's, from its plain weights abcd)
        scaling = [w.split(";")[0] for _, node, _, w in log if node == conv_name and
                   w.startswith("reorder ") and "; src abcd, dst A" in w]
        mul = [p[2] for p in prims if p[0] == mul_name and not p[2].startswith("reorder ")]
        conv = scaling[:1] + [p[2] for p in prims if p[0] == conv_name and not p[2].startswith("reorder ")]
        said = any(node == mul_name and what.startswith(FOLDED) for _, node, _, what in log)
        if not seamtest.dnnl_avx512_layouts():
            # (the fold needs x channels-last or plain, pattern.c se_fold_of:
            # oneDNN's AVX2 convolutions leave it in aBcd8b)
            check.ok(f"{label}: where the Mul went (Mul {mul}, Conv {conv}) not checked: the expectation is "
                     "oneDNN's AVX-512 layouts (seamtest.dnnl_avx512_layouts)")
        elif scaler and fusion == "on":
            check.expect(said and not mul and len(conv) == 2 and conv[0].startswith(scaler) and
                         conv[1].startswith("convolution "),
                         f"{label}: the Mul folded into the projection's weights ({conv})",
                         f"Mul {mul}, the log says so: {said}, the projection Conv {conv}")
        else:
            check.expect(not said and mul == ["binary jit:uni"] and len(conv) == 1 and
                         conv[0].startswith("convolution "),
                         f"{label}: the Mul a step of its own ({mul}), the projection a convolution alone",
                         f"Mul {mul}, the log says folded: {said}, the projection Conv {conv}")

check.finish()
