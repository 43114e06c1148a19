"""Writes small models in ONNX Runtime's QOperator form with its
com.microsoft quantized contrib ops, at test time (issue 27), for
tests/checks/check_quant_ms.py.

usage: /usr/bin/python3 tests/models/gen_qop_ms.py OUTDIR [--only a,b] [--list]

ONNX Runtime's quantizer (QuantFormat.QOperator) and its graph optimizer
write ops of its own domain into models: QLinearAdd, QLinearMul,
QLinearGlobalAveragePool, QLinearAveragePool, QLinearLeakyRelu,
QLinearSigmoid, QLinearConcat, QGemm, MatMulIntegerToFloat and
DynamicQuantizeMatMul. Each model here holds a few of them between the
standard QuantizeLinear, QLinearConv and DequantizeLinear, written with
onnx.helper from the ops' definitions in ONNX Runtime's ContribOperators
docs (no code of ONNX Runtime's): default opset 13, com.microsoft 1.

Calibration: every model is built stage by stage in numpy from its float
test input (NAME.input.npy, a seed per model). Each quantized tensor's
scale and zero point come from the float range of what its stage computes
from its dequantized inputs (uint8: the range widened to hold 0, scale
(max - min) / 255, zero point round(-min / scale); int8 likewise over
[-128, 127]), so every tensor, the output among them, spans its 8-bit
range by construction. Weights are int8 symmetric ([-127, 127], per output
channel for QLinearConv), biases int32 at x_scale * w_scale. A Relu is
folded into a QLinearConv or QLinearAdd by its output's zero point 0 (the
range starts at 0), as ONNX Runtime's quantizer does. The stages'
quantized values are a numpy reference of the model (NAME.ref.npy): ONNX
Runtime rounds some ops its own way (fixed scales folded together, lookup
tables), so it agrees with ONNX Runtime within a quantum, not bit for bit.

qms_add_int8's convolution has 7-bit weights ([-63, 63]): ONNX Runtime's
int8 x int8 convolution on a CPU without VNNI adds pairs of 8-bit products
in 16 bits, which saturates past 32767 (with u8 weights the checker's
workaround, seamtest.u8_weights_copy, has no kernel to run on).

NAME.json: model, input, input_name, input_shape, output_name,
output_kind ("quantized": the DequantizeLinear of a final 8-bit tensor;
"float": QGemm without y_scale, MatMulIntegerToFloat,
DynamicQuantizeMatMul), output_scale (that final tensor's scale, one
quantum; for a float output the step of a uint8 quantization of its
range), output_zero_point, ops (the op types in graph order, contrib ones
as com.microsoft.OP), ms_ops, ref, and bad: for QLinearAdd (qms_add),
QGemm (qms_qgemm) and QLinearGlobalAveragePool (qms_gap), one scale input
of that node (an initializer only it reads) set to 0, negative, NaN, or
two values where a scalar is required, each written as
NAME_bad_KIND.onnx, listed with the node's name, its op and the input.

Models (--list): qms_add, qms_add_bcast (B [1,C,1,1]), qms_add_int8,
qms_add_ties (half the outputs exactly between two steps: ONNX Runtime's
QLinearAdd rounds them one step from the op's formula), qms_add_nozp (the
optional zero points given as "", and NAME.ort.onnx with them explicit,
which ONNX Runtime needs), qms_add_nozp_trailing (C_zero_point left out,
A's and B's explicit), qms_mul,
qms_mul_bcast, qms_gap, qms_gap_nhwc (channels_last 1 after a Transpose),
qms_avgpool_cip0, qms_avgpool_cip1 (kernel 3, stride 2, pads 1),
qms_leakyrelu (alpha 0.1), qms_sigmoid, qms_concat (3 inputs, axis 1, the
middle one with the output's scale and zero point), qms_qgemm (per-tensor
B), qms_qgemm_col_transb, qms_qgemm_alpha (alpha 0.5), qms_qgemm_float,
qms_qgemm_float_alpha (no y_scale: float output), qms_mmitf
(MatMulIntegerToFloat, 3-D A, per-column B with zero points), qms_dqmm
(DynamicQuantizeMatMul), qms_resnet (a QOperator resnet-like net on
[1,3,32,32]). The whole set takes well under a second.
"""
import argparse
import collections
import json
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

MS = "com.microsoft"
BAD_KINDS = ("zero", "negative", "nan", "two")

# a quantized tensor: its value name, the quantized array, scale, zero
# point, and the names of its scale and zero point initializers
Q = collections.namedtuple("Q", "name q s z sn zn")


def f32(v):
    return np.array(v, np.float32)


def qrange(dt):
    return (0, 255) if np.dtype(dt) == np.uint8 else (-128, 127)


def params(v, dt=np.uint8):
    """(scale, zero point) of the float values v in 8-bit type dt, the range widened to hold 0."""
    lo, hi = min(float(np.min(v)), 0.0), max(float(np.max(v)), 0.0)
    qmin, qmax = qrange(dt)
    if hi == lo:
        return f32(1.0), np.array(0, dt)
    s = np.float32((hi - lo) / 255.0)
    return s, np.array(np.clip(np.round(qmin - lo / float(s)), qmin, qmax), dt)


def quant(v, s, z):
    """QuantizeLinear: v / s in float32, rounded half to even, plus z, saturated."""
    qmin, qmax = qrange(z.dtype)
    return np.clip(np.round(np.asarray(v, np.float32) / np.float32(s)) + int(z), qmin, qmax).astype(z.dtype)


def fl(t):
    """DequantizeLinear of a Q, in float32."""
    return ((t.q.astype(np.int32) - int(t.z)) * t.s).astype(np.float32)


def windows(x, k, stride, pad, fill=0.0):
    """[N, C, OH, OW, k, k] windows of x [N, C, H, W] padded by pad."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    return np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]


class Model:
    def __init__(self, name, seed):
        self.name, self.rng = name, np.random.RandomState(seed)
        self.nodes, self.inits, self.bad = [], {}, None

    def const(self, name, v):
        self.inits[name] = np.asarray(v)
        return name

    def node(self, op, ins, out, name, ms=False, **attrs):
        self.nodes.append(helper.make_node(op, ins, [out], name=name, domain=MS if ms else "", **attrs))

    def tensor(self, name, v, dt=np.uint8, s=None, z=None):
        """The quantized tensor `name` of float values v, its parameters
        from v's range unless given, as initializers NAME_scale and
        NAME_zero_point."""
        if s is None:
            s, z = params(v, dt)
        return Q(name, quant(v, s, z), s, z, self.const(name + "_scale", s), self.const(name + "_zero_point", z))

    def own(self, node, ins, roles, bad=None):
        """ins where each ins[i], i: ROLE in roles, is replaced by a copy
        that only node reads, named NODE.ROLE; bad: the role whose copy
        the bad variants change."""
        ins = list(ins)
        for i, role in roles.items():
            ins[i] = self.const(f"{node}.{role}", self.inits[ins[i]])
        if bad:
            i = next(i for i, r in roles.items() if r == bad)
            self.bad = {"node": node, "input": bad, "initializer": ins[i]}
        return ins


# ---- the stages: each computes its float value from its dequantized inputs, quantizes it, adds its node -------

def quantize_input(m, x, dt=np.uint8, zp=True):
    """QuantizeLinear of the graph input; x, its float test values, is what the input file holds."""
    m.x = x
    t = m.x_q = m.tensor("x_q", x, dt)
    m.node("QuantizeLinear", ["input", t.sn] + ([t.zn] if zp else []), t.name, "quantize_input")
    return t


def qconv(m, t, name, cout, k=3, stride=1, relu=False, bits=8, gain=1.0, sz=(None, None)):
    """QLinearConv (pads k // 2, int8 weights per output channel, int32
    bias), output like t's type, with parameters sz when given."""
    cin, lim = t.q.shape[1], 127 if bits == 8 else 63
    w = m.rng.randn(cout, cin, k, k) * np.sqrt(2.0 / (cin * k * k)) * gain
    ws = (np.abs(w).reshape(cout, -1).max(1) / lim).astype(np.float32)
    wq = np.clip(np.round(w / ws.reshape(-1, 1, 1, 1)), -lim, lim).astype(np.int8)
    bias_s = (t.s * ws).astype(np.float32)
    bq = np.round(m.rng.randn(cout) * 0.2 / bias_s).astype(np.int32)
    xw = windows(t.q.astype(np.float64) - int(t.z), k, stride, k // 2)
    acc = np.einsum("nchwij,mcij->nmhw", xw, wq.astype(np.float64)) + bq.reshape(1, -1, 1, 1)
    yf = (acc * bias_s.reshape(1, -1, 1, 1)).astype(np.float32)
    out = m.tensor(name + "_q", np.maximum(yf, 0) if relu else yf, t.z.dtype, *sz)
    ins = [t.name, t.sn, t.zn, m.const(name + ".w", wq), m.const(name + ".w_scale", ws),
           m.const(name + ".w_zero_point", np.zeros(cout, np.int8)), out.sn, out.zn, m.const(name + ".bias", bq)]
    m.node("QLinearConv", ins, out.name, name, pads=[k // 2] * 4, strides=[stride] * 2)
    return out


def qbinary(m, op, a, b, name, relu=False, zps=True, bad=None, sz=(None, None)):
    """QLinearAdd or QLinearMul of a and b (numpy broadcasting), output parameters sz when given."""
    yf = fl(a) + fl(b) if op == "QLinearAdd" else fl(a) * fl(b)
    out = m.tensor(name + "_q", np.maximum(yf, 0) if relu else yf, a.z.dtype, *sz)
    ins = [a.name, a.sn, a.zn, b.name, b.sn, b.zn, out.sn, out.zn]
    if zps == "omit_c":  # the last input left out
        ins = ins[:7]
    elif not zps:  # the optional zero points given as ""
        ins[2] = ins[5] = ins[7] = ""
    if bad:
        ins = m.own(name, ins, {1: "A_scale", 4: "B_scale", 6: "C_scale"}, bad)
    m.node(op, ins, out.name, name, ms=True)
    return out


def qgap(m, t, name, channels_last=0, bad=None):
    yf = fl(t).astype(np.float64).mean(axis=(1, 2) if channels_last else (2, 3), keepdims=True)
    out = m.tensor(name + "_q", yf, t.z.dtype)
    ins = [t.name, t.sn, t.zn, out.sn, out.zn]
    if bad:
        ins = m.own(name, ins, {1: "x_scale", 3: "y_scale"}, bad)
    m.node("QLinearGlobalAveragePool", ins, out.name, name, ms=True, channels_last=channels_last)
    return out


def qavgpool(m, t, name, k, stride, pad, cip):
    f = fl(t).astype(np.float64)
    cnt = k * k if cip else windows(np.ones_like(f), k, stride, pad).sum((-1, -2))
    out = m.tensor(name + "_q", windows(f, k, stride, pad).sum((-1, -2)) / cnt, t.z.dtype)
    m.node("QLinearAveragePool", [t.name, t.sn, t.zn, out.sn, out.zn], out.name, name, ms=True, kernel_shape=[k, k],
           strides=[stride] * 2, pads=[pad] * 4, count_include_pad=cip, channels_last=0)
    return out


def qunary(m, op, t, name, **attrs):
    f = fl(t).astype(np.float64)
    yf = np.where(f >= 0, f, attrs["alpha"] * f) if op == "QLinearLeakyRelu" else 1 / (1 + np.exp(-f))
    out = m.tensor(name + "_q", yf, t.z.dtype)
    m.node(op, [t.name, t.sn, t.zn, out.sn, out.zn], out.name, name, ms=True, **attrs)
    return out


def shared(m, op, t, name, q, **attrs):
    """A standard op on the 8-bit values (MaxPool, Flatten, Transpose): its
    output keeps t's parameters."""
    m.node(op, [t.name], name + "_q", name, **attrs)
    return Q(name + "_q", q, t.s, t.z, t.sn, t.zn)


def qgemm(m, a, name, n, trans_b=False, per_col=True, alpha=1.0, quantized=True, bad=None):
    """QGemm: A [M, K] uint8, B int8 per tensor or per column, int32 C [N]
    at alpha * a_scale * b_scale, uint8 output or (no y_scale) float."""
    k = a.q.shape[1]
    w = m.rng.randn(k, n) / np.sqrt(k)
    bs = ((np.abs(w).max(0) if per_col else np.abs(w).max()) / 127).astype(np.float32)
    bq = np.clip(np.round(w / bs), -127, 127).astype(np.int8)
    cs = (np.float32(alpha) * a.s * bs).astype(np.float32)
    cq = np.round(m.rng.randn(n) * 0.3 / cs).astype(np.int32)
    acc = (a.q.astype(np.int64) - int(a.z)) @ bq.astype(np.int64) + cq
    yf = (acc * cs).astype(np.float32)
    ins = [a.name, a.sn, a.zn, m.const(name + ".B", np.ascontiguousarray(bq.T) if trans_b else bq),
           m.const(name + ".b_scale", bs), m.const(name + ".b_zero_point", np.zeros(bs.shape, np.int8)),
           m.const(name + ".C", cq)]
    out = m.tensor(name + "_q", yf) if quantized else None
    if out:
        ins += [out.sn, out.zn]
    if bad:
        ins = m.own(name, ins, {1: "a_scale"}, bad)
    m.node("QGemm", ins, out.name if out else "output", name, ms=True, alpha=float(alpha), transA=0,
           transB=int(trans_b))
    return out if out else yf


def int8_columns(m, k, n):
    """B [K, N] int8 asymmetric per column (zero points not 0), its scales and zero points."""
    w = m.rng.randn(k, n) / np.sqrt(k)
    lo, hi = np.minimum(w.min(0), 0), np.maximum(w.max(0), 0)
    s = ((hi - lo) / 255.0).astype(np.float32)
    z = np.clip(np.round(-128 - lo / s), -128, 127).astype(np.int8)
    return np.clip(np.round(w / s) + z, -128, 127).astype(np.int8), s, z


# ---- the models -------------------------------------------------------------------------------

def conv_then(op):
    """QuantizeLinear -> QLinearConv -> op (a function of the model and the conv's output)."""
    def build(m, x):
        return op(m, qconv(m, quantize_input(m, x), "conv1", x.shape[1]))
    return build


def const_bcast(m, c):
    """A uint8 constant [1, C, 1, 1] with parameters of its own."""
    v = m.rng.randn(1, c, 1, 1).astype(np.float32)
    t = m.tensor("bcast", v)
    return t._replace(name=m.const("bcast", t.q))


def add_int8(m, x):
    xq = quantize_input(m, x, np.int8)
    return qbinary(m, "QLinearAdd", qconv(m, xq, "conv1", x.shape[1], bits=7), xq, "add1")


def add_nozp(zps):
    """Zero points 0 left to their default: QuantizeLinear without one, a
    QLinearAdd with zps False ("" for all three) or "omit_c"."""
    def build(m, x):
        xq = quantize_input(m, np.abs(x), zp=False)
        return qbinary(m, "QLinearAdd", qconv(m, xq, "conv1", x.shape[1], relu=True), xq, "add1", zps=zps)
    return build


def add_ties(m, x):
    """QLinearAdd(conv, x) with the conv at x's scale and zero point, C_scale
    twice that and an odd C_zero_point: about half the outputs lie exactly
    halfway between two steps. ONNX Runtime's kernel adds the zero point
    before it rounds half to even, the op's formula after, so with an odd
    zero point those ties land one step apart."""
    xq = quantize_input(m, x)
    c = qconv(m, xq, "conv1", x.shape[1], sz=(xq.s, xq.z))
    s = np.float32(2 * xq.s)
    z = params(fl(c) + fl(xq))[1]
    return qbinary(m, "QLinearAdd", c, xq, "add1", sz=(s, np.array(int(z) | 1, np.uint8)))


def gap_nhwc(m, x):
    c = qconv(m, quantize_input(m, x), "conv1", x.shape[1])
    t = shared(m, "Transpose", c, "to_nhwc", c.q.transpose(0, 2, 3, 1), perm=[0, 2, 3, 1])
    return qgap(m, t, "gap1", channels_last=1)


def concat3(m, x):
    xq = quantize_input(m, x)
    a = qconv(m, xq, "conv_a", 4, gain=0.5)
    b = qconv(m, xq, "conv_b", 6, gain=2.0)
    c = qconv(m, xq, "conv_c", 8, gain=0.8)
    out = m.tensor("cat_q", np.concatenate([fl(a), fl(b), fl(c)], 1), s=b.s, z=b.z)
    ins = [out.sn, out.zn] + [n for t in (a, b, c) for n in (t.name, t.sn, t.zn)]
    m.node("QLinearConcat", ins, out.name, "concat1", ms=True, axis=1)
    return out


def gemm(**kw):
    return lambda m, x: qgemm(m, quantize_input(m, x), "gemm1", 24, **kw)


def mmitf(m, x):
    a = quantize_input(m, x)
    bq, bs, bz = int8_columns(m, x.shape[-1], 16)
    bias = (m.rng.randn(16) * 0.3).astype(np.float32)
    acc = (a.q.astype(np.int64) - int(a.z)) @ (bq.astype(np.int64) - bz)
    ins = [a.name, m.const("mm.B", bq), a.sn, m.const("mm.b_scale", bs), a.zn, m.const("mm.b_zero_point", bz),
           m.const("mm.bias", bias)]
    m.node("MatMulIntegerToFloat", ins, "output", "mm1", ms=True)
    return (acc.astype(np.float32) * (a.s * bs) + bias).astype(np.float32)


def dqmm(m, x):
    w = m.rng.randn(x.shape[-1], 16) / np.sqrt(x.shape[-1])
    bs = f32(np.abs(w).max() / 120)
    bz = np.array(3, np.int8)
    bq = np.clip(np.round(w / bs) + 3, -128, 127).astype(np.int8)
    bias = (m.rng.randn(16) * 0.3).astype(np.float32)
    # A quantized as DynamicQuantizeLinear does: uint8 over its range widened to hold 0
    a_s, a_z = params(x)
    acc = (quant(x, a_s, a_z).astype(np.int64) - int(a_z)) @ (bq.astype(np.int64) - int(bz))
    ins = ["input", m.const("mm.B", bq), m.const("mm.b_scale", bs), m.const("mm.b_zero_point", bz),
           m.const("mm.bias", bias)]
    m.node("DynamicQuantizeMatMul", ins, "output", "mm1", ms=True)
    return (acc.astype(np.float32) * (a_s * bs) + bias).astype(np.float32)


def resnet(m, x):
    """QuantizeLinear -> QLinearConv (Relu folded) -> MaxPool (uint8) -> two
    residual blocks (the second strided, with a 1x1 downsample) ->
    QLinearGlobalAveragePool -> Flatten -> QGemm (per-column B) -> DQ."""
    c1 = qconv(m, quantize_input(m, x), "conv1", 16, relu=True)
    p = shared(m, "MaxPool", c1, "pool1", windows(c1.q.astype(np.float64), 3, 2, 1, -np.inf).max((-1, -2))
               .astype(np.uint8), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    a = qconv(m, qconv(m, p, "b1_conv1", 16, relu=True), "b1_conv2", 16)
    r1 = qbinary(m, "QLinearAdd", a, p, "b1_add", relu=True)
    a = qconv(m, qconv(m, r1, "b2_conv1", 32, stride=2, relu=True), "b2_conv2", 32)
    r2 = qbinary(m, "QLinearAdd", a, qconv(m, r1, "b2_down", 32, k=1, stride=2), "b2_add", relu=True)
    g = qgap(m, r2, "gap")
    f = shared(m, "Flatten", g, "flatten", g.q.reshape(g.q.shape[0], -1), axis=1)
    return qgemm(m, f, "fc", 10, trans_b=True, per_col=True)


def residual(op, bcast=False, bad=None):
    """QuantizeLinear -> QLinearConv -> op(conv, the QuantizeLinear's output or a [1, C, 1, 1] constant)."""
    return conv_then(lambda m, c: qbinary(m, op, c, const_bcast(m, c.q.shape[1]) if bcast else m.x_q,
                                          op.lower()[7:] + "1", bad=bad))


# name: (input shape, builder(model, x) -> the output Q or float array, seed)
MODELS = {
    "qms_add": ((1, 8, 6, 6), residual("QLinearAdd", bad="B_scale")),
    "qms_add_bcast": ((2, 16, 10, 10), residual("QLinearAdd", bcast=True)),
    "qms_add_int8": ((1, 8, 6, 6), add_int8),
    "qms_add_ties": ((1, 8, 6, 6), add_ties),
    "qms_add_nozp": ((1, 8, 6, 6), add_nozp(False)),
    "qms_add_nozp_trailing": ((1, 8, 6, 6), add_nozp("omit_c")),
    "qms_mul": ((1, 8, 6, 6), residual("QLinearMul")),
    "qms_mul_bcast": ((2, 16, 10, 10), residual("QLinearMul", bcast=True)),
    "qms_gap": ((2, 16, 10, 10), conv_then(lambda m, c: qgap(m, c, "gap1", bad="y_scale"))),
    "qms_gap_nhwc": ((1, 16, 8, 8), gap_nhwc),
    "qms_avgpool_cip0": ((1, 8, 10, 10), conv_then(lambda m, c: qavgpool(m, c, "pool1", 3, 2, 1, 0))),
    "qms_avgpool_cip1": ((1, 8, 10, 10), conv_then(lambda m, c: qavgpool(m, c, "pool1", 3, 2, 1, 1))),
    "qms_leakyrelu": ((1, 8, 6, 6), conv_then(lambda m, c: qunary(m, "QLinearLeakyRelu", c, "leaky1", alpha=0.1))),
    "qms_sigmoid": ((1, 8, 6, 6), conv_then(lambda m, c: qunary(m, "QLinearSigmoid", c, "sigmoid1"))),
    "qms_concat": ((1, 8, 6, 6), concat3),
    "qms_qgemm": ((6, 48), gemm(per_col=False, bad="a_scale")),
    "qms_qgemm_col_transb": ((6, 48), gemm(trans_b=True)),
    "qms_qgemm_alpha": ((6, 48), gemm(alpha=0.5)),
    "qms_qgemm_float": ((6, 48), gemm(trans_b=True, quantized=False)),
    "qms_qgemm_float_alpha": ((6, 48), gemm(per_col=False, alpha=0.5, quantized=False)),
    "qms_mmitf": ((2, 4, 32), mmitf),
    "qms_dqmm": ((4, 32), dqmm),
    "qms_resnet": ((1, 3, 32, 32), resnet),
}


def bad_value(kind, v):
    return {"zero": f32(0.0), "negative": f32(-abs(float(v))), "nan": f32(np.nan),
            "two": np.array([v, v], np.float32).reshape(2)}[kind]


def save(path, m, x, out_shape, replace=None, explicit_zero=False):
    """The model; explicit_zero: every "" input of a contrib node (only
    zero points are left out here) a uint8 zero initializer instead."""
    inits, nodes = dict(m.inits, **(replace or {})), m.nodes
    if explicit_zero:
        nodes = [helper.make_node(n.op_type, [i if i or n.domain != MS else "zero_u8" for i in n.input], n.output,
                                  name=n.name, domain=n.domain) for n in m.nodes]
        for a, b in zip(nodes, m.nodes):
            a.attribute.extend(b.attribute)
        inits["zero_u8"] = np.array(0, np.uint8)
    g = helper.make_graph(nodes, m.name, [helper.make_tensor_value_info("input", T.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("output", T.FLOAT, list(out_shape))],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def write(name, out_dir):
    shape, build = MODELS[name]
    seed = zlib.crc32(name.encode()) % 100000  # the same data for a model whatever others the list holds
    m = Model(name, seed)
    m.x = np.random.RandomState(1000 + seed).randn(*shape).astype(np.float32)
    y = build(m, m.x)
    x = m.x
    np.save(os.path.join(out_dir, name + ".input.npy"), x)
    info = {"name": name, "model": name + ".onnx", "input": name + ".input.npy", "input_name": "input",
            "input_shape": list(shape), "output_name": "output", "ref": name + ".ref.npy"}
    if isinstance(y, Q):
        m.node("DequantizeLinear", [y.name, y.sn, y.zn], "output", "dequantize_output")
        ref = fl(y)
        info.update(output_kind="quantized", output_scale=float(y.s), output_zero_point=int(y.z),
                    output_type=str(y.z.dtype))
        span = int(y.q.max()) - int(y.q.min())
        if not (float(ref.std()) > 0 and span >= 100 and len(np.unique(y.q)) > 4):
            sys.exit(f"gen_qop_ms: {name}: degenerate output ({span} steps, {len(np.unique(y.q))} values)")
    else:
        ref = y
        s, z = params(y)
        info.update(output_kind="float", output_scale=float(s), output_zero_point=int(z),
                    output_scale_from="the uint8 step of the float output's range (no final quantized tensor)")
        if not float(y.std()) > 0:
            sys.exit(f"gen_qop_ms: {name}: constant output")
    np.save(os.path.join(out_dir, name + ".ref.npy"), ref)
    save(os.path.join(out_dir, name + ".onnx"), m, x, ref.shape)
    if any(not i for n in m.nodes if n.domain == MS for i in n.input):
        # ONNX Runtime 1.30 refuses a contrib node whose optional zero point
        # is "" ("[TypeInferenceError] Input data type does not match the
        # expected data type"; left out at the end, it runs): it runs this
        # copy with the zero points explicit, the same function
        save(os.path.join(out_dir, name + ".ort.onnx"), m, x, ref.shape, explicit_zero=True)
        info["ort_model"] = name + ".ort.onnx"
    info["ops"] = [(MS + "." if n.domain == MS else "") + n.op_type for n in m.nodes]
    info["ms_ops"] = sorted({n.op_type for n in m.nodes if n.domain == MS})
    info["bad"] = []
    if m.bad:
        op = next(n.op_type for n in m.nodes if n.name == m.bad["node"])
        for kind in BAD_KINDS:
            f = f"{name}_bad_{kind}.onnx"
            save(os.path.join(out_dir, f), m, x, ref.shape,
                 {m.bad["initializer"]: bad_value(kind, m.inits[m.bad["initializer"]])})
            info["bad"].append(dict(m.bad, file=f, kind=kind, op=op))
    with open(os.path.join(out_dir, name + ".json"), "w") as fh:
        json.dump(info, fh, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", metavar="OUTDIR", nargs="?")
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
            sys.exit(f"gen_qop_ms: unknown model '{n}' (see --list)")
    os.makedirs(a.out, exist_ok=True)
    for n in names:
        write(n, a.out)
    print(f"gen_qop_ms: {len(names)} models in {a.out}")


if __name__ == "__main__":
    main()
