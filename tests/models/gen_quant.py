"""Writes quantized ONNX models, at test time, the way ONNX Runtime's
quantization tool writes them (issue 27).

usage: /usr/bin/python3 tests/models/gen_quant.py OUTDIR [--seam SEAM] [--bench] [--only a,b] [--list]

Every model starts as a float model (NAME.float.onnx: torch-exported with
random weights and batch norms calibrated as gen_models.py does, or
written with onnx.helper), with a test input (NAME.input.npy) and a
calibration set (NAME.calib/0.npy ... 3.npy) drawn from the same
distribution with other seeds. The float model is run on the calibration
set with its intermediate values as extra graph outputs, by `seam run`
on the CPU kernels (onnx 1.12 has no onnx.reference; --threads 1, so the
ranges are the same at every run), and quantized from those ranges into
NAME.onnx. NAME.json records what the checker and the benchmark need,
among it `output_scale`: the scale of the last QuantizeLinear before the
final DequantizeLinear, one quantum of the output.

The three forms ONNX Runtime writes, each written here from the ONNX
operator spec and ONNX Runtime's documented conventions (no code of
ONNX Runtime's):

- QDQ (`quantize_static`, QuantFormat.QDQ): weights int8, symmetric
  (zero point 0, range [-127, 127]) and per channel (Conv: axis 0;
  MatMul's [K, N] weights and Gemm without transB: axis 1; Gemm with
  transB: axis 0), stored quantized behind a DequantizeLinear; biases
  int32 with scale x_scale * w_scale[c] and zero point 0; a constant input
  of Add or Mul int8 symmetric per tensor. Activations uint8, asymmetric,
  per tensor, from the min and max over the calibration set (the range
  always includes 0; an empty range gets scale 1). Every activation that
  feeds or leaves a quantized op (Conv, MatMul, Gemm, Add, Mul, MaxPool,
  AveragePool, GlobalAveragePool, Concat, and Flatten/Reshape between
  them) gets one QuantizeLinear + DequantizeLinear pair, which all its
  consumers read; MaxPool, Flatten and Reshape give their output their
  input's parameters. A Relu (or a Clip from 0) whose input is a quantized
  op's only output, read by it alone, is removed and that output quantized
  with the Relu's range (zero point 0: the Q clamps what the Relu would
  have): ONNX Runtime's removable activations. qdq_conv_relu keeps its
  Relus instead (Conv -> Relu -> QuantizeLinear, the Conv's output not
  quantized), the unit form "optionally a Relu" of the C side.
- QOperator: QuantizeLinear -> QLinearConv (per-channel weights, fused
  Relu by a zero point of 0) -> QLinearConv (per-tensor weights) ->
  Flatten of uint8 -> QLinearMatMul -> DequantizeLinear.
- Dynamic (`quantize_dynamic`): every MatMul with a constant 2-D weight
  becomes DynamicQuantizeLinear(A) -> MatMulInteger(A_q, W_q, A_zp, W_zp)
  -> Cast(float) -> Mul(by Mul(A_scale, W_scale)); weights int8, per
  tensor and symmetric on even MatMuls, per column and asymmetric (zero
  points not 0) on odd ones. Gemm stays float, as ONNX Runtime leaves it.
  There is no final QuantizeLinear: output_scale is the step a uint8
  quantization of the float output's calibrated range would have.

Models (--list): qdq_resnet18, qdq_mobilenet_v2 (torchvision), qdq_resblock
(resnet's BasicBlock with a stride-2 downsample, alone, to a 5x5 output), qdq_conv_relu
(Conv -> Relu kept, Concat, AveragePool, Mul, MaxPool), qdq_mlp (Gemm with
and without transB, MatMul + Add, Mul, removed Relus), dyn_transformer (a
2-layer encoder between two Linear layers), qop_convnet. --bench writes the
benchmark's sizes of the same models (resnet18 and mobilenet_v2 at 224).
A NAME.stamp makes reruns quick. The whole test set takes about 20-30 s
on 2 cores.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision
from torchvision.models.resnet import BasicBlock
from onnx import TensorProto as T
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import gen_models  # noqa: E402
import seamtest  # noqa: E402

VERSION = "1"
N_CALIB = 4
warnings.filterwarnings("ignore")
torch.set_num_threads(2)


# ---- the float models ----------------------------------------------------------

class ConvChain(nn.Module):
    """Conv -> Relu (kept) twice into a Concat, AveragePool, a Mul of two
    branches, MaxPool, a last Conv."""

    def __init__(self, c):
        super().__init__()
        self.c1 = nn.Conv2d(3, c, 3, padding=1)
        self.c2a, self.c2b = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 1)
        self.c3, self.c4 = nn.Conv2d(2 * c, 2 * c, 3, padding=1), nn.Conv2d(2 * c, 2 * c, 1)
        self.c5 = nn.Conv2d(2 * c, c, 3, padding=1)
        self.avg, self.pool = nn.AvgPool2d(2, count_include_pad=False), nn.MaxPool2d(2)

    def forward(self, x):
        a = torch.relu(self.c1(x))
        d = self.avg(torch.cat([torch.relu(self.c2a(a)), torch.relu(self.c2b(a))], 1))
        m = torch.relu(self.c3(d)) * self.c4(d)
        return self.c5(self.pool(m))


class MLP(nn.Module):
    """Gemm (transB) -> Relu, MatMul + Add -> Relu, a Mul gate, Gemm without
    transB (addmm), Gemm."""

    def __init__(self, k, h):
        super().__init__()
        self.fc1, self.gate = nn.Linear(k, h), nn.Linear(h, h)
        self.w2, self.b2 = nn.Parameter(torch.randn(h, h) / h ** 0.5), nn.Parameter(torch.randn(h) * 0.1)
        self.w3, self.b3 = nn.Parameter(torch.randn(h, h) / h ** 0.5), nn.Parameter(torch.randn(h) * 0.1)
        self.out = nn.Linear(h, 10)

    def forward(self, x):
        h1 = torch.relu(self.fc1(x))
        h2 = torch.relu(h1 @ self.w2 + self.b2) * self.gate(h1)
        return self.out(torch.relu(torch.addmm(self.b3, h2, self.w3)))


class Encoder(nn.Module):
    """Linear in -> 2 post-norm encoder layers (each with its own weights) ->
    Linear head."""

    def __init__(self, k, d, heads, ff):
        super().__init__()
        self.inp, self.head = nn.Linear(k, d), nn.Linear(d, 16)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        with torch.no_grad():  # the layers are deep copies: make them differ, or the export shares one set of weights
            for p in self.enc.layers[1].parameters():
                p.add_(torch.randn_like(p) * 0.05)

    def forward(self, x):
        return self.head(self.enc(self.inp(x)))


def tv(name):
    return lambda: getattr(torchvision.models, name)(num_classes=100)


def resblock(cin, cout):
    """torchvision's BasicBlock with a stride-2 1x1 downsample: resnet's
    first block of a stage, alone (an odd output size: 5x5, 7x7)."""
    return lambda: nn.Sequential(BasicBlock(cin, cout, 2, nn.Sequential(nn.Conv2d(cin, cout, 1, 2, bias=False),
                                                                        nn.BatchNorm2d(cout))))


# name: (kind, test params, bench params); params: the constructor's
# arguments or the input shape, as each writer reads them
MODELS = {
    "qdq_resnet18": ("qdq", {"ctor": tv("resnet18"), "shape": (1, 3, 64, 64)},
                     {"ctor": tv("resnet18"), "shape": (1, 3, 224, 224)}),
    "qdq_mobilenet_v2": ("qdq", {"ctor": tv("mobilenet_v2"), "shape": (1, 3, 64, 64)},
                         {"ctor": tv("mobilenet_v2"), "shape": (1, 3, 224, 224)}),
    "qdq_resblock": ("qdq", {"ctor": resblock(64, 128), "shape": (1, 64, 10, 10)},
                     {"ctor": resblock(256, 512), "shape": (1, 256, 14, 14)}),
    "qdq_conv_relu": ("qdq", {"ctor": lambda: ConvChain(8), "shape": (1, 3, 32, 32), "keep_relu": True},
                      {"ctor": lambda: ConvChain(32), "shape": (1, 3, 112, 112), "keep_relu": True}),
    "qdq_mlp": ("qdq", {"ctor": lambda: MLP(64, 96), "shape": (4, 64)},
                {"ctor": lambda: MLP(512, 1024), "shape": (64, 512)}),
    "dyn_transformer": ("dynamic", {"ctor": lambda: Encoder(32, 64, 4, 128), "shape": (1, 16, 32)},
                        {"ctor": lambda: Encoder(128, 256, 4, 1024), "shape": (1, 128, 128)}),
    "qop_convnet": ("qoperator", {"c": (3, 8, 16), "hw": 16}, {"c": (16, 64, 128), "hw": 56}),
}


def inputs_for(shape, seed):
    """The test input (seed 1) or a calibration input (seeds 100+)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def export_torch(p, path, x):
    torch.manual_seed(0)
    model = p["ctor"]().eval()
    gen_models.calibrate(model, x)
    # grad stays enabled: under no_grad nn.TransformerEncoderLayer takes a
    # fused fast path that torch.onnx cannot export
    torch.onnx.export(model, (x,), path, opset_version=13, do_constant_folding=True, input_names=["input"],
                      output_names=["output"])


def write_qop_float(p, path):
    """The float model the QOperator model is quantized from: Conv -> Relu
    -> Conv (stride 2) -> Flatten -> MatMul."""
    c0, c1, c2 = p["c"]
    hw = p["hw"]
    rng = np.random.RandomState(5)
    w1 = rng.randn(c1, c0, 3, 3) / np.sqrt(c0 * 9)
    w2 = rng.randn(c2, c1, 3, 3) / np.sqrt(c1 * 9)
    k = c2 * (hw // 2) ** 2
    w3 = rng.randn(k, 10) / np.sqrt(k)
    inits = seamtest.initializers({"w1": w1, "b1": rng.randn(c1) * 0.1, "w2": w2, "b2": rng.randn(c2) * 0.1, "w3": w3})
    nodes = [helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Flatten", ["c2"], ["f"], name="flatten"),
             helper.make_node("MatMul", ["f", "w3"], ["output"], name="matmul")]
    seamtest.save_model(path, nodes, [seamtest.vi("input", [1, c0, hw, hw])], [seamtest.vi("output", [1, 10])], inits)


# ---- the float model, tidied ------------------------------------------------------

def tidy(model):
    """Constant nodes become initializers, an Identity of an initializer an
    alias of it, every node gets a unique name: the graph the quantizer
    reads (ONNX Runtime's quantizer also works on an optimized graph)."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    alias, keep = {}, []
    for n in g.node:
        ins = [alias.get(x, x) for x in n.input]
        del n.input[:]
        n.input.extend(ins)
        if n.op_type == "Constant" and len(n.attribute) == 1 and n.attribute[0].name == "value":
            t = onnx.TensorProto()
            t.CopyFrom(n.attribute[0].t)
            t.name = n.output[0]
            g.initializer.append(t)
            inits[t.name] = t
        elif n.op_type == "Identity" and n.input[0] in inits and n.output[0] not in {o.name for o in g.output}:
            alias[n.output[0]] = n.input[0]
        else:
            keep.append(n)
    del g.node[:]
    g.node.extend(keep)
    seen = set()
    for i, n in enumerate(g.node):
        if not n.name or n.name in seen:
            n.name = f"{n.name or n.op_type}_{i}"
        seen.add(n.name)
    return model


# ---- calibration --------------------------------------------------------------

def run_seam(seam, model_path, input_name, files, names, work):
    """Runs model_path on seam's CPU kernels once per input file with names
    as extra graph outputs; returns [{name: array}] per file."""
    m = onnx.load(model_path)
    have = {o.name for o in m.graph.output}
    for n in names:
        if n not in have:
            m.graph.output.append(helper.make_tensor_value_info(n, T.FLOAT, None))
    path = os.path.join(work, "calib.onnx")
    onnx.save(m, path)
    out = []
    for k, f in enumerate(files):
        d = os.path.join(work, f"out{k}")
        r = subprocess.run([seam, "run", path, "--input", f"{input_name}={f}", "--output-dir", d, "--threads", "1",
                            "--quiet"], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"gen_quant: seam run of the calibration model failed: {r.stderr.strip()[-600:]}")
        out.append({n: np.load(seamtest.output_file(d, n)) for n in set(names) | have})
    return out


def ranges(values):
    """{name: (min, max)} over the calibration runs."""
    r = {}
    for run in values:
        for n, v in run.items():
            lo, hi = float(v.min()), float(v.max())
            r[n] = (min(lo, r[n][0]), max(hi, r[n][1])) if n in r else (lo, hi)
    return r


def uint8_params(lo, hi):
    """uint8 asymmetric parameters of the range [lo, hi] widened to hold 0."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi == lo:
        return np.float32(1.0), np.uint8(0)
    scale = np.float32((hi - lo) / 255.0)
    zp = np.uint8(np.clip(np.round(-lo / float(scale)), 0, 255))
    return scale, zp


def int8_symmetric(w, axis=None):
    """(q int8, scale float32, zero point int8): per tensor, or per channel
    along axis; range [-127, 127]; an all-zero channel gets scale 1."""
    if axis is None:
        amax = np.abs(w).max(keepdims=True).reshape(())
    else:
        amax = np.abs(np.moveaxis(w, axis, 0)).reshape(w.shape[axis], -1).max(1)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    shape = [1] * w.ndim
    if axis is not None:
        shape[axis] = -1
    q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale, np.zeros(scale.shape, np.int8)


def int8_asymmetric_columns(w):
    """Per-column (axis 1 of [K, N]) asymmetric int8: zero points not 0."""
    lo, hi = np.minimum(w.min(0), 0), np.maximum(w.max(0), 0)
    scale = np.where(hi > lo, (hi - lo) / 255.0, 1.0).astype(np.float32)
    zp = np.clip(np.round(-128 - lo / scale), -128, 127).astype(np.int8)
    q = np.clip(np.round(w / scale) + zp, -128, 127).astype(np.int8)
    return q, scale, zp


# ---- QDQ ----------------------------------------------------------------------

QDQ_OPS = {"Conv", "MatMul", "Gemm", "Add", "Mul", "MaxPool", "AveragePool", "GlobalAveragePool", "Concat",
           "Flatten", "Reshape"}
SHARED = {"MaxPool", "Flatten", "Reshape"}  # output quantized with the input's parameters
REMOVABLE = {"Relu", "Clip"}


def float_inputs(n, inits):
    """(index, name) of the inputs of quantized node n that are quantized:
    data inputs, not shapes or Clip bounds."""
    if n.op_type in ("Conv", "Gemm"):
        return [(i, x) for i, x in enumerate(n.input[:3]) if x]
    if n.op_type in ("MaxPool", "AveragePool", "GlobalAveragePool", "Flatten", "Reshape"):
        return [(0, n.input[0])]
    return list(enumerate(n.input))


def clip_from_zero(n, inits):
    if n.op_type == "Relu":
        return True
    lo = n.input[1] if len(n.input) > 1 else ""
    return bool(lo) and lo in inits and float(numpy_helper.to_array(inits[lo])) >= 0


def quantize_qdq(model, calib_ranges_of, keep_relu=False):
    """The float model (tidied) in QDQ form. calib_ranges_of(names) returns
    {name: (min, max)} from the float model. Returns (model, info)."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    outputs = {o.name for o in g.output}
    consumers = {}
    for n in g.node:
        for x in n.input:
            consumers.setdefault(x, []).append(n)
    producer = {o: n for n in g.node for o in n.output}
    quantized = [n for n in g.node if n.op_type in QDQ_OPS]
    qset = {id(n) for n in quantized}
    # removable activations, or (keep_relu) Relus that join their Conv's unit
    removed, kept = set(), set()
    for n in g.node:
        if n.op_type not in REMOVABLE or not clip_from_zero(n, inits):
            continue
        p = producer.get(n.input[0])
        if p is None or id(p) not in qset or p.op_type in SHARED or n.input[0] in outputs \
                or len(consumers.get(n.input[0], [])) != 1:
            continue
        if keep_relu and p.op_type == "Conv" and n.op_type == "Relu":
            kept.add(id(n))
        elif not keep_relu:
            removed.add(id(n))
    nodes = []
    for n in g.node:
        if id(n) in removed:
            producer[n.input[0]].output[0] = n.output[0]
            continue
        nodes.append(n)
    # the activations to quantize, in graph order
    acts, share = [], {}
    inp_names = {i.name for i in g.input} - set(inits)

    def want(t):
        if t and t not in inits and t not in acts:
            acts.append(t)
    for n in nodes:
        if id(n) in kept:
            want(n.output[0])
            continue
        if id(n) not in qset:
            continue
        conv_with_kept = any(id(c) in kept for c in consumers.get(n.output[0], []))
        for i, x in float_inputs(n, inits):
            if not (n.op_type in ("Conv", "Gemm", "MatMul") and i >= 1 and x in inits):
                want(x)
        if not conv_with_kept:
            want(n.output[0])
            if n.op_type in SHARED:
                share[n.output[0]] = n.input[0]
    r = calib_ranges_of([t for t in acts if t not in share])
    def root(t):
        while t in share:
            t = share[t]
        return t
    params = {t: uint8_params(*r[t]) for t in acts if t not in share}
    params.update({t: params[root(t)] for t in acts if t in share})

    new_inits, new_nodes = [], []
    dq_name = {}  # activation -> the name its consumers read

    def qdq(t):
        s, z = params[t]
        new_inits.extend([numpy_helper.from_array(np.array(s, np.float32), t + "_scale"),
                          numpy_helper.from_array(np.array(z, np.uint8), t + "_zero_point")])
        src = t + "_float" if t in outputs else t
        dst = t if t in outputs else t + "_DequantizeLinear_Output"
        new_nodes.append(helper.make_node("QuantizeLinear", [src, t + "_scale", t + "_zero_point"], [t + "_quantized"],
                                          name=t + "_QuantizeLinear"))
        new_nodes.append(helper.make_node("DequantizeLinear", [t + "_quantized", t + "_scale", t + "_zero_point"], [dst],
                                          name=t + "_DequantizeLinear"))
        dq_name[t] = dst

    def weight(name, q, s, z, axis):
        new_inits.extend([numpy_helper.from_array(q, name + "_quantized"), numpy_helper.from_array(s, name + "_scale"),
                          numpy_helper.from_array(z, name + "_zero_point")])
        attrs = {"axis": axis} if axis is not None and s.ndim else {}
        new_nodes.append(helper.make_node("DequantizeLinear", [name + "_quantized", name + "_scale", name + "_zero_point"],
                                          [name + "_DequantizeLinear_Output"], name=name + "_DequantizeLinear", **attrs))
        return name + "_DequantizeLinear_Output"

    used_inits = set()
    for t in acts:
        if t in inp_names:
            qdq(t)
    for n in nodes:
        ins = list(n.input)
        if id(n) in qset:
            wscale = None
            for i, x in float_inputs(n, inits):
                if x in inits and n.op_type in ("Conv", "Gemm", "MatMul") and i == 1:
                    w = numpy_helper.to_array(inits[x]).astype(np.float32)
                    trans_b = any(a.name == "transB" and a.i for a in n.attribute)
                    axis = 0 if n.op_type == "Conv" or (n.op_type == "Gemm" and trans_b) else 1
                    if w.ndim != 2 and n.op_type != "Conv":
                        continue
                    q, s, z = int8_symmetric(w, axis)
                    wscale = s
                    ins[i] = weight(f"{n.name}.w", q, s, z, axis)
                    used_inits.add(x)
                elif x in inits and n.op_type in ("Conv", "Gemm") and i == 2:
                    b = numpy_helper.to_array(inits[x]).astype(np.float64)
                    if b.ndim != 1 or wscale is None:
                        continue
                    s = (np.float32(params[n.input[0]][0]) * wscale).astype(np.float32)
                    q = np.round(b / s.astype(np.float64)).astype(np.int32)
                    ins[i] = weight(f"{n.name}.bias", q, s, np.zeros(s.shape, np.int32), 0)
                    used_inits.add(x)
                elif x in inits and np.issubdtype(numpy_helper.to_array(inits[x]).dtype, np.floating):
                    q, s, z = int8_symmetric(numpy_helper.to_array(inits[x]).astype(np.float32))
                    ins[i] = weight(f"{n.name}.in{i}", q, s, z, None)
                    used_inits.add(x)
        ins = [dq_name.get(x, x) for x in ins]
        out = list(n.output)
        if out and out[0] in outputs and out[0] in params:
            out[0] = out[0] + "_float"
        new_nodes.append(helper.make_node(n.op_type, ins, out, name=n.name, domain=n.domain))
        new_nodes[-1].attribute.extend(n.attribute)
        for t in n.output:
            if t in params and t not in dq_name:
                qdq(t)
    keep_inits = [i for i in g.initializer if i.name not in used_inits]
    still = {x for n in new_nodes for x in n.input}
    keep_inits = [i for i in keep_inits if i.name in still]
    graph = helper.make_graph(new_nodes, g.name, list(g.input), list(g.output), keep_inits + new_inits)
    qm = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    qm.ir_version = model.ir_version
    onnx.checker.check_model(qm)
    # the output's quantum: the last QuantizeLinear before the final DequantizeLinear
    out = g.output[0].name
    info = {"removed_activations": len(removed), "kept_relus": len(kept), "quantized_tensors": len(acts),
            "quantized_ops": sum(1 for n in nodes if id(n) in qset)}
    if out in params:
        info["output_scale"], info["output_zero_point"] = float(params[out][0]), int(params[out][1])
    return qm, info


# ---- dynamic ------------------------------------------------------------------

def quantize_dynamic(model):
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    new_nodes, new_inits, used, k = [], [], set(), 0
    for n in g.node:
        w = numpy_helper.to_array(inits[n.input[1]]) if n.op_type == "MatMul" and n.input[1] in inits else None
        if w is None or w.ndim != 2:
            new_nodes.append(n)
            continue
        a, y, p = n.input[0], n.output[0], n.name
        q, s, z = int8_symmetric(w.astype(np.float32)) if k % 2 == 0 else int8_asymmetric_columns(w.astype(np.float32))
        k += 1
        used.add(n.input[1])
        new_inits += [numpy_helper.from_array(q, p + ".w_quantized"), numpy_helper.from_array(s, p + ".w_scale"),
                      numpy_helper.from_array(z, p + ".w_zero_point")]
        new_nodes += [
            helper.make_node("DynamicQuantizeLinear", [a], [p + ".a_quantized", p + ".a_scale", p + ".a_zero_point"],
                             name=p + "_DynamicQuantizeLinear"),
            helper.make_node("MatMulInteger", [p + ".a_quantized", p + ".w_quantized", p + ".a_zero_point",
                                               p + ".w_zero_point"], [p + ".int32"], name=p + "_MatMulInteger"),
            helper.make_node("Cast", [p + ".int32"], [p + ".float"], name=p + "_Cast", to=T.FLOAT),
            helper.make_node("Mul", [p + ".a_scale", p + ".w_scale"], [p + ".scale"], name=p + "_ScaleMul"),
            helper.make_node("Mul", [p + ".float", p + ".scale"], [y], name=p + "_OutputMul")]
    keep = [i for i in g.initializer if i.name not in used]
    graph = helper.make_graph(new_nodes, g.name, list(g.input), list(g.output), keep + new_inits)
    qm = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    qm.ir_version = model.ir_version
    onnx.checker.check_model(qm)
    return qm, {"matmul_integer": k}


# ---- QOperator ----------------------------------------------------------------

def quantize_qoperator(float_path, r):
    """The QOperator model of write_qop_float's model, from the calibrated
    ranges r of input, r1 (the Relu's output), c2 and output."""
    m = onnx.load(float_path)
    w = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    pr = {t: uint8_params(*r[t]) for t in ("input", "r1", "c2", "output")}
    inits = {}

    def put(name, v):
        inits[name] = v
        return name
    for t, (s, z) in pr.items():
        put(t + "_scale", np.array(s, np.float32))
        put(t + "_zero_point", np.array(z, np.uint8))
    q1, s1, z1 = int8_symmetric(w["w1"], 0)
    q2, s2, z2 = int8_symmetric(w["w2"])  # per tensor
    q3, s3, z3 = int8_symmetric(w["w3"], 1)  # per column
    put("w1_q", q1), put("w1_scale", s1), put("w1_zp", z1)
    put("w2_q", q2), put("w2_scale", s2), put("w2_zp", z2)
    put("w3_q", q3), put("w3_scale", s3), put("w3_zp", z3)
    put("b1_q", np.round(w["b1"] / (pr["input"][0] * s1)).astype(np.int32))
    put("b2_q", np.round(w["b2"] / (pr["r1"][0] * s2)).astype(np.int32))
    nodes = [
        helper.make_node("QuantizeLinear", ["input", "input_scale", "input_zero_point"], ["x_q"], name="quantize_input"),
        helper.make_node("QLinearConv", ["x_q", "input_scale", "input_zero_point", "w1_q", "w1_scale", "w1_zp",
                                         "r1_scale", "r1_zero_point", "b1_q"], ["r1_q"], name="qconv1",
                         pads=[1, 1, 1, 1]),
        helper.make_node("QLinearConv", ["r1_q", "r1_scale", "r1_zero_point", "w2_q", "w2_scale", "w2_zp",
                                         "c2_scale", "c2_zero_point", "b2_q"], ["c2_q"], name="qconv2",
                         pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Flatten", ["c2_q"], ["f_q"], name="flatten_u8"),
        helper.make_node("QLinearMatMul", ["f_q", "c2_scale", "c2_zero_point", "w3_q", "w3_scale", "w3_zp",
                                           "output_scale", "output_zero_point"], ["y_q"], name="qmatmul"),
        helper.make_node("DequantizeLinear", ["y_q", "output_scale", "output_zero_point"], ["output"],
                         name="dequantize_output")]
    g = helper.make_graph(nodes, "qop_convnet", list(m.graph.input), list(m.graph.output),
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    qm = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(qm)
    return qm, {"output_scale": float(pr["output"][0]), "output_zero_point": int(pr["output"][1])}


# ---- one model ----------------------------------------------------------------

def write(name, out, seam, bench):
    kind, test_p, bench_p = MODELS[name]
    p = bench_p if bench else test_p
    fpath, qpath = os.path.join(out, name + ".float.onnx"), os.path.join(out, name + ".onnx")
    if kind == "qoperator":
        write_qop_float(p, fpath)
        shape = (1, p["c"][0], p["hw"], p["hw"])
    else:
        shape = p["shape"]
        torch.manual_seed(1)
        export_torch(p, fpath, inputs_for(shape, 1))
    x = inputs_for(shape, 1).numpy()
    np.save(os.path.join(out, name + ".input.npy"), x)
    cdir = os.path.join(out, name + ".calib")
    shutil.rmtree(cdir, ignore_errors=True)
    os.makedirs(cdir)
    calib = []
    for k in range(N_CALIB):
        calib.append(os.path.join(cdir, f"{k}.npy"))
        np.save(calib[-1], inputs_for(shape, 100 + k).numpy())
    fm = tidy(onnx.load(fpath))
    onnx.save(fm, fpath)
    in_name, out_name = fm.graph.input[0].name, fm.graph.output[0].name
    with tempfile.TemporaryDirectory() as work:
        def cal(names):
            return ranges(run_seam(seam, fpath, in_name, calib, names, work))
        if kind == "qdq":
            qm, info = quantize_qdq(fm, cal, keep_relu=p.get("keep_relu", False))
        elif kind == "dynamic":
            qm, info = quantize_dynamic(fm)
            s, z = uint8_params(*cal([out_name])[out_name])
            info.update(output_scale=float(s), output_zero_point=int(z),
                        output_scale_from="the uint8 step of the float output's calibrated range (no final Q)")
        else:
            qm, info = quantize_qoperator(fpath, cal(["input", "r1", "c2", "output"]))
        onnx.save(qm, qpath)
        # the float output of the test input, quantized with the recorded
        # parameters, must not be degenerate
        y = run_seam(seam, fpath, in_name, [os.path.join(out, name + ".input.npy")], [], work)[0][out_name]
    s, z = info["output_scale"], info.get("output_zero_point", 0)
    q = np.round(y / s) + z
    sat = float(np.mean((q < 0) | (q > 255)))  # clipped by the output's Q
    q = np.clip(q, 0, 255)
    if not (float(y.std()) > 0 and sat < 0.5 and len(np.unique(q)) > 4):
        sys.exit(f"gen_quant: {name}: degenerate output (std {y.std():.3g}, {100 * sat:.0f}% saturated)")
    info.update(name=name, kind=kind, model=name + ".onnx", float_model=name + ".float.onnx",
                input=name + ".input.npy", input_name=in_name, output_name=out_name,
                calibration=[os.path.relpath(c, out) for c in calib], input_shape=list(shape),
                output_scale_from=info.get("output_scale_from", "the last QuantizeLinear before the final DequantizeLinear"),
                ops={o: sum(1 for n in qm.graph.node if n.op_type == o) for o in sorted({n.op_type for n in qm.graph.node})},
                float_output_std=float(y.std()), float_output_saturated=sat)
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(info, f, indent=1)
    return qpath


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", metavar="OUTDIR", nargs="?")
    ap.add_argument("--seam", default=os.path.join(HERE, "..", "..", "build", "seam"))
    ap.add_argument("--bench", action="store_true", help="the benchmark's sizes")
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        print("\n".join(MODELS))
        return
    if not a.out:
        ap.error("OUTDIR is required")
    names = a.only.split(",") if a.only else list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit(f"gen_quant: unknown model '{n}' (see --list)")
    os.makedirs(a.out, exist_ok=True)
    # the ranges come from seam's CPU kernels: a rebuilt seam (another float
    # rounding) writes the models again, or the bit-for-bit checks compare
    # against an older seam's ranges
    st = os.stat(a.seam) if os.path.exists(a.seam) else None
    seam_id = f"{st.st_size}:{st.st_mtime_ns}" if st else "-"
    stamp_text = f"{VERSION} {'bench' if a.bench else 'test'} seam {seam_id}"
    t_all = time.time()
    for name in names:
        stamp = os.path.join(a.out, name + ".stamp")
        done = [os.path.join(a.out, name + s) for s in (".onnx", ".json", ".float.onnx", ".input.npy")]
        if os.path.exists(stamp) and open(stamp).read() == stamp_text and all(map(os.path.exists, done)):
            continue
        t0 = time.time()
        path = write(name, a.out, a.seam, a.bench)
        with open(stamp, "w") as f:
            f.write(stamp_text)
        print(f"{name}: {time.time() - t0:.1f} s, {os.path.getsize(path) / 1e6:.2f} MB", flush=True)
    print(f"gen_quant: done in {time.time() - t_all:.1f} s")


if __name__ == "__main__":
    main()
