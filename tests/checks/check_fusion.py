"""The CPU executor's fusions and aliases against torch.

usage: /usr/bin/python3 check_fusion.py SEAM WORKDIR [-k PATTERN]

At session creation the executor binds Constant nodes to their tensors,
makes Identity outputs aliases, and moves an activation (Relu, Clip,
LeakyRelu, HardSigmoid, HardSwish) into the Conv, Gemm or MatMul before it
when that output has no other reader (see src/runtime/fuse.c). Each case here is a
small model whose output must match torch within 1e-5 of its scale (the
activation feeds an Identity: a graph output is never an alias, so an
activation that is one does not fuse):

1. Conv + each activation (Clip with bounds from initializers, from
   Constant nodes, as opset-6 attributes, and with one bound absent), over
   plain, strided, padded, grouped, 1x1 and depthwise convolutions (3x3
   stride 1 and 2, dilated, 5x5, asymmetric pads, inputs narrower than the
   kernel), with and without bias.
   Gemm (transB, alpha, bias; split over the pool) and MatMul (batches
   stacked into one product, and batch by batch) + an activation.
2. Cases that must not fuse: the Conv output read twice, or a graph
   output; a Clip whose bound is a graph input; Identity chains and a
   Constant that is a graph output.
3. Every model runs twice in one process (--repeat) and with --threads 1
   and 2: the outputs must be bitwise equal.
A case is one model, named as printed (conv3x3_relu, dw_s2, ...).
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import vi  # noqa: E402

parser = seamtest.arg_parser(__doc__)
parser.add_argument("seam", metavar="SEAM")
parser.add_argument("work", metavar="WORKDIR")
args = parser.parse_args()
seam, work = seamtest.Program(args.seam), args.work
check = seamtest.Checker("fusion", args.k)
os.makedirs(work, exist_ok=True)
rng = np.random.RandomState(11)
TOL = 1e-5


def run_seam(path, feeds, threads, out_dir, repeat=None):
    cmd = ["run", path, "--threads", str(threads), "--output-dir", out_dir]
    for n, f in feeds:
        cmd += ["--input", f"{n}={f}"]
    if repeat:
        cmd += ["--repeat", str(repeat)]
    r = seam(*cmd)
    if r.returncode:
        return None, r.stderr.strip()
    return np.load(os.path.join(out_dir, "y.npy")), None


def case(name, nodes, inputs, inits, ref, opset=14):
    """inputs: {name: array}; inits: {name: array}; ref: expected y."""
    if not check.selected(name):
        return
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes,
                               [vi(n, a.shape) for n, a in inputs.items()], [vi("y", None)],
                               seamtest.initializers(inits), name=name, opset=opset)
    feeds = []
    for n, a in inputs.items():
        f = os.path.join(work, f"{name}.{n}.npy")
        np.save(f, a)
        feeds.append((n, f))
    outs = []
    for threads in (1, 2):
        d = os.path.join(work, f"{name}.t{threads}")
        os.makedirs(d, exist_ok=True)
        y, err = run_seam(path, feeds, threads, d, repeat=3 if threads == 2 else None)
        if err:
            check.fail(f"{name}: seam run --threads {threads} failed: {err}")
            return
        outs.append(y)
    ref = np.asarray(ref, np.float64)
    if outs[0].shape != ref.shape:
        check.fail(f"{name}: shape {outs[0].shape}, want {ref.shape}")
        return
    err = seamtest.rel_err(outs[0], ref)
    if not err <= TOL:
        check.fail(f"{name}: error {err:.2e} against torch")
    elif not np.array_equal(outs[0], outs[1]):
        check.fail(f"{name}: --threads 1 and --threads 2 differ")
    else:
        check.ok(f"{name}: error {err:.2e}")


def t(a):
    return torch.from_numpy(np.asarray(a, np.float64))


ACTS = {
    "relu": lambda v: F.relu(v),
    "relu6": lambda v: v.clamp(0, 6),
    "leaky": lambda v: F.leaky_relu(v, 0.1),
    "hsigmoid": lambda v: (0.25 * v + 0.4).clamp(0, 1),
    "hswish": lambda v: v * (v / 6 + 0.5).clamp(0, 1),
    "clip_lo": lambda v: v.clamp(min=-0.5),
}


def act_nodes(kind, x, y, inits):
    """The activation node(s) reading x and writing y (adds Clip bounds to inits)."""
    if kind == "relu":
        return [helper.make_node("Relu", [x], [y])]
    if kind == "relu6":  # bounds from Constant nodes, as torch exports them
        return [helper.make_node("Constant", [], ["lo"], value=numpy_helper.from_array(np.array(0, np.float32))),
                helper.make_node("Constant", [], ["hi"], value=numpy_helper.from_array(np.array(6, np.float32))),
                helper.make_node("Clip", [x, "lo", "hi"], [y])]
    if kind == "leaky":
        return [helper.make_node("LeakyRelu", [x], [y], alpha=0.1)]
    if kind == "hsigmoid":
        return [helper.make_node("HardSigmoid", [x], [y], alpha=0.25, beta=0.4)]
    if kind == "hswish":
        return [helper.make_node("HardSwish", [x], [y])]
    if kind == "clip_lo":  # min from an initializer, max absent
        inits["clip_min"] = np.array(-0.5, np.float32)
        return [helper.make_node("Clip", [x, "clip_min"], [y])]
    raise ValueError(kind)


def conv_case(name, cin, cout, hw, k, stride=1, pad=(0, 0, 0, 0), dil=1, group=1, bias=True, act="relu"):
    x = rng.randn(1, cin, *hw).astype(np.float32)
    w = rng.randn(cout, cin // group, *k).astype(np.float32) * 0.3
    b = rng.randn(cout).astype(np.float32)
    inits = {"w": w}
    ins = ["x", "w"]
    if bias:
        inits["b"] = b
        ins.append("b")
    nodes = [helper.make_node("Conv", ins, ["c"], kernel_shape=list(k), strides=[stride, stride],
                              pads=list(pad), dilations=[dil, dil], group=group)]
    # (the activation's output is not the graph's: a graph output is never an alias)
    nodes += act_nodes(act, "c", "a", inits) + [helper.make_node("Identity", ["a"], ["y"])]
    xp = F.pad(t(x), (pad[1], pad[3], pad[0], pad[2]))
    ref = F.conv2d(xp, t(w), t(b) if bias else None, stride=stride, dilation=dil, groups=group)
    case(name, nodes, {"x": x}, inits, ACTS[act](ref).numpy())


# 1. fused convolutions
for act in ACTS:
    conv_case(f"conv3x3_{act}", 4, 8, (9, 11), (3, 3), pad=(1, 1, 1, 1), act=act)
    conv_case(f"dw3x3_{act}", 6, 6, (10, 9), (3, 3), pad=(1, 1, 1, 1), group=6, act=act)
conv_case("conv1x1", 16, 24, (7, 7), (1, 1))
conv_case("conv1x1_nobias", 16, 24, (7, 7), (1, 1), bias=False, act="relu6")
conv_case("conv_s2_asym", 3, 8, (13, 12), (3, 3), stride=2, pad=(0, 1, 1, 0))
conv_case("conv_grouped", 8, 12, (8, 8), (3, 3), pad=(1, 1, 1, 1), group=2, act="leaky")
conv_case("conv_wide_out", 8, 40, (16, 16), (3, 3), pad=(1, 1, 1, 1))  # split by columns
conv_case("conv_tall_out", 96, 200, (4, 4), (1, 1), act="hswish")     # split by rows
conv_case("dw_s2", 8, 8, (15, 14), (3, 3), stride=2, pad=(1, 1, 1, 1), group=8, act="relu6")
conv_case("dw_s2_nopad", 8, 8, (15, 14), (3, 3), stride=2, group=8)
conv_case("dw_dilated", 4, 4, (12, 12), (3, 3), pad=(2, 2, 2, 2), dil=2, group=4)
conv_case("dw_5x5", 4, 4, (11, 10), (5, 5), pad=(2, 2, 2, 2), group=4, act="hsigmoid")
conv_case("dw_5x5_s2", 4, 4, (11, 10), (5, 5), stride=2, pad=(2, 1, 2, 1), group=4)
conv_case("dw_asym_pad", 4, 4, (7, 9), (3, 3), pad=(0, 2, 1, 0), group=4)
conv_case("dw_narrow", 4, 4, (2, 2), (3, 3), pad=(1, 1, 1, 1), group=4)  # no interior columns
conv_case("dw_1x3", 4, 4, (6, 7), (1, 3), pad=(0, 1, 0, 1), group=4)
conv_case("dw_multiplier", 4, 8, (6, 6), (3, 3), pad=(1, 1, 1, 1), group=4, bias=False)

# opset 6 Clip: bounds as attributes
x = rng.randn(1, 3, 6, 6).astype(np.float32)
w = rng.randn(5, 3, 3, 3).astype(np.float32)
case("clip_attrs_opset6", [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3]),
                           helper.make_node("Clip", ["c"], ["a"], min=-1.0, max=2.0),
                           helper.make_node("Identity", ["a"], ["y"])],
     {"x": x}, {"w": w}, F.conv2d(t(x), t(w)).clamp(-1, 2).numpy(), opset=6)

# ONNX's default domain written out as "ai.onnx": the same ops, the same
# attributes (fused, and standalone in their own kernels)
case("clip_attrs_aionnx", [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], domain="ai.onnx"),
                           helper.make_node("Clip", ["c"], ["a"], min=-1.0, max=2.0, domain="ai.onnx"),
                           helper.make_node("Identity", ["a"], ["y"])],
     {"x": x}, {"w": w}, F.conv2d(t(x), t(w)).clamp(-1, 2).numpy(), opset=6)
case("clip_alone_aionnx", [helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.25, domain="ai.onnx")],
     {"x": x}, {}, t(x).clamp(-0.5, 0.25).numpy(), opset=10)
case("leaky_alone_aionnx", [helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.3, domain="ai.onnx")],
     {"x": x}, {}, F.leaky_relu(t(x), 0.3).numpy())
case("hsigmoid_alone_aionnx", [helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4, domain="ai.onnx")],
     {"x": x}, {}, (t(x) * 0.3 + 0.4).clamp(0, 1).numpy())

# the activation after a residual Add (ResNet) or a Mul, fused into the
# binary kernel, with broadcasting
xr = rng.randn(1, 4, 9, 9).astype(np.float32)
wr = (rng.randn(4, 4, 3, 3) * 0.3).astype(np.float32)
case("residual_add_relu", [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                           helper.make_node("Add", ["c", "x"], ["s"]), helper.make_node("Relu", ["s"], ["r"]),
                           helper.make_node("Identity", ["r"], ["y"])],
     {"x": xr}, {"w": wr}, F.relu(F.conv2d(t(xr), t(wr), padding=1) + t(xr)).numpy())
sc = rng.randn(4, 1, 1).astype(np.float32)
case("mul_bcast_relu6", [helper.make_node("Mul", ["x", "sc"], ["m"])] + act_nodes("relu6", "m", "r", {}) +
     [helper.make_node("Identity", ["r"], ["y"])], {"x": xr}, {"sc": sc}, (t(xr) * t(sc)).clamp(0, 6).numpy())
case("sub_leaky", [helper.make_node("Sub", ["sc", "x"], ["m"]), helper.make_node("LeakyRelu", ["m"], ["r"], alpha=0.2),
                   helper.make_node("Identity", ["r"], ["y"])], {"x": xr}, {"sc": sc},
     F.leaky_relu(t(sc) - t(xr), 0.2).numpy())

# a gate and the Mul by its input: SiLU and HardSwish as torch exports them at opset 13
sig = torch.sigmoid(ref_c0 := F.conv2d(t(xr), t(wr), padding=1))
conv_p1 = helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
hsig = helper.make_node("HardSigmoid", ["c"], ["s"], alpha=1.0 / 6, beta=0.5)
case("conv_sigmoid_mul", [conv_p1, helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["m"]),
                          helper.make_node("Identity", ["m"], ["y"])], {"x": xr}, {"w": wr}, (ref_c0 * sig).numpy())
case("conv_sigmoid_mul_swapped", [conv_p1, helper.make_node("Sigmoid", ["c"], ["s"]),
                                  helper.make_node("Mul", ["s", "c"], ["m"]), helper.make_node("Identity", ["m"], ["y"])],
     {"x": xr}, {"w": wr}, (ref_c0 * sig).numpy())
case("conv_hardsigmoid_mul", [conv_p1, hsig, helper.make_node("Mul", ["c", "s"], ["m"]),
                              helper.make_node("Identity", ["m"], ["y"])], {"x": xr}, {"w": wr}, F.hardswish(ref_c0).numpy())
# ... and the ones that must not fuse: another HardSigmoid, the gate read twice, the conv output read thrice
case("conv_hardsigmoid_other_mul", [conv_p1, helper.make_node("HardSigmoid", ["c"], ["s"], alpha=0.2, beta=0.5),
                                    helper.make_node("Mul", ["c", "s"], ["m"]), helper.make_node("Identity", ["m"], ["y"])],
     {"x": xr}, {"w": wr}, (ref_c0 * (0.2 * ref_c0 + 0.5).clamp(0, 1)).numpy())
case("conv_sigmoid_read_twice", [conv_p1, helper.make_node("Sigmoid", ["c"], ["s"]),
                                 helper.make_node("Mul", ["c", "s"], ["m"]), helper.make_node("Add", ["m", "s"], ["y"])],
     {"x": xr}, {"w": wr}, (ref_c0 * sig + sig).numpy())
case("conv_sigmoid_mul_third_reader", [conv_p1, helper.make_node("Sigmoid", ["c"], ["s"]),
                                       helper.make_node("Mul", ["c", "s"], ["m"]), helper.make_node("Sub", ["m", "c"], ["y"])],
     {"x": xr}, {"w": wr}, (ref_c0 * sig - ref_c0).numpy())

# 2. cases that must not fuse (or only alias)
ref_c = F.conv2d(t(x), t(w))
case("conv_two_readers", [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3]),
                          helper.make_node("Relu", ["c"], ["r"]),
                          helper.make_node("Add", ["r", "c"], ["y"])],
     {"x": x}, {"w": w}, (F.relu(ref_c) + ref_c).numpy())
if check.selected("conv_output_too"):
    g_nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3]), helper.make_node("Relu", ["c"], ["y"])]
    path = seamtest.save_model(os.path.join(work, "conv_output_too.onnx"), g_nodes, [vi("x", x.shape)],
                               [vi("y", None), vi("c", None)], [numpy_helper.from_array(w, "w")], name="conv_output_too")
    np.save(os.path.join(work, "conv_output_too.x.npy"), x)
    d = os.path.join(work, "conv_output_too.out")
    os.makedirs(d, exist_ok=True)
    y, err = run_seam(path, [("x", os.path.join(work, "conv_output_too.x.npy"))], 2, d)
    if err:
        check.fail(f"conv_output_too: {err}")
    else:
        c = np.load(os.path.join(d, "c.npy"))
        scale = np.abs(ref_c.numpy()).max()
        check.expect(seamtest.abs_err(c, ref_c.numpy()) <= TOL * scale and
                     seamtest.abs_err(y, F.relu(ref_c).numpy()) <= TOL * scale,
                     "conv_output_too: the conv output (a graph output) and its Relu match torch")
hi = np.array(0.5, np.float32)
case("clip_bound_is_input", [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3]),
                             helper.make_node("Clip", ["c", "", "hi"], ["a"]),
                             helper.make_node("Identity", ["a"], ["y"])],
     {"x": x, "hi": hi}, {"w": w}, ref_c.clamp(max=0.5).numpy())
a = rng.randn(5, 7).astype(np.float32)
bm = rng.randn(7, 3).astype(np.float32)
case("matmul_relu", [helper.make_node("MatMul", ["a", "bm"], ["m"]), helper.make_node("Relu", ["m"], ["r"]),
                     helper.make_node("Identity", ["r"], ["y"])],
     {"a": a}, {"bm": bm}, F.relu(t(a) @ t(bm)).numpy())
ga = rng.randn(6, 9).astype(np.float32)
gb = rng.randn(40, 9).astype(np.float32)
gc = rng.randn(40).astype(np.float32)
case("gemm_transb_leaky", [helper.make_node("Gemm", ["ga", "gb", "gc"], ["m"], transB=1, alpha=0.5),
                           helper.make_node("LeakyRelu", ["m"], ["r"], alpha=0.1),
                           helper.make_node("Identity", ["r"], ["y"])],
     {"ga": ga}, {"gb": gb, "gc": gc}, F.leaky_relu(0.5 * t(ga) @ t(gb).T + t(gc), 0.1).numpy())
wa = rng.randn(40, 130).astype(np.float32)  # large enough to be split over the pool
wb = rng.randn(130, 300).astype(np.float32)
case("gemm_split_relu", [helper.make_node("Gemm", ["wa", "wb"], ["m"]), helper.make_node("Relu", ["m"], ["r"]),
                         helper.make_node("Identity", ["r"], ["y"])],
     {"wa": wa}, {"wb": wb}, F.relu(t(wa) @ t(wb)).numpy())
sa = rng.randn(3, 32, 64).astype(np.float32)  # batches stacked into one product
sw = rng.randn(64, 96).astype(np.float32)
act = act_nodes("relu6", "m", "r", {})
case("matmul_stacked_relu6", [helper.make_node("MatMul", ["sa", "sw"], ["m"])] + act +
     [helper.make_node("Identity", ["r"], ["y"])], {"sa": sa}, {"sw": sw}, (t(sa) @ t(sw)).clamp(0, 6).numpy())
ba_ = rng.randn(4, 8, 16).astype(np.float32)  # batch by batch
bb_ = rng.randn(4, 16, 8).astype(np.float32)
case("matmul_batched_hswish", [helper.make_node("MatMul", ["ba", "bb"], ["m"]),
                               helper.make_node("HardSwish", ["m"], ["r"]),
                               helper.make_node("Identity", ["r"], ["y"])],
     {"ba": ba_, "bb": bb_}, {}, ACTS["hswish"](t(ba_) @ t(bb_)).numpy())
case("identity_chain", [helper.make_node("Identity", ["a"], ["i1"]), helper.make_node("Identity", ["i1"], ["i2"]),
                        helper.make_node("Relu", ["i2"], ["r"]), helper.make_node("Identity", ["r"], ["i3"]),
                        helper.make_node("Add", ["i3", "i1"], ["y"])],
     {"a": a}, {}, (F.relu(t(a)) + t(a)).numpy())
case("conv_relu_identity", [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3]),
                            helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Identity", ["r"], ["i"]),
                            helper.make_node("Identity", ["i"], ["y"])],
     {"x": x}, {"w": w}, F.relu(ref_c).numpy())
cv = rng.randn(2, 3).astype(np.float32)
case("constant_output", [helper.make_node("Constant", [], ["y"], value=numpy_helper.from_array(cv))],
     {"a": a}, {}, cv)
case("constant_identity_add", [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(cv)),
                               helper.make_node("Identity", ["k"], ["k2"]),
                               helper.make_node("Add", ["k2", "k"], ["y"])],
     {"a": a}, {}, 2 * cv)

check.finish("all cases match torch; --threads 1 and 2 agree bitwise" if not check.failures else None)
