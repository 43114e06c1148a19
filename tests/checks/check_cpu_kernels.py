"""The CPU kernels' fast paths against torch and against the ONNX spec, on
sizes that take them (the ONNX conformance data is too small for most).

usage: /usr/bin/python3 check_cpu_kernels.py SEAM WORKDIR [-k PATTERN]

1. Resize (opset 13), float32 over the last two axes (pool.c binds it,
   spatial.c runs it): nearest with every nearest_mode and linear, under
   every coordinate_transformation_mode but tf_crop_and_resize; scales up
   and down, integer and not, sizes instead of scales, odd sizes, batch 2,
   one plane (cut in row blocks), rows wider than a tile (1024), rank 3.
   The reference is the spec's formulas in float64 (numpy, below), and
   torch where torch has the mode (nearest, nearest-exact, bilinear with
   and without align_corners). Forms the fast path leaves to the general
   kernel (cubic, tf_crop_and_resize, float64, a resized channel axis)
   must still be right.
2. Sigmoid, Tanh, Erf, Gelu, HardSigmoid (alpha, beta) and HardSwish over
   [-100, 100] with 0, +-inf and NaN, against torch in float64, NaN in NaN
   out: Sigmoid, Tanh and Erf within 4 ulp of the value (or 1e-37 absolute below
   float's normal range), the others within 4 ulp or 1e-6 absolute (their
   float32 arithmetic cancels or rounds once more than the reference).
2b. Softmax and LogSoftmax rows of 1 to 1000 logits (masked with -inf,
   offset by 1e4, holding NaN, all -inf, with +inf) within 4 ulp of the
   formula in float64, masked positions exactly 0.
3. Conv (2-D, float32) large enough for the blocked im2col: 3x3, 7x7
   stride 2, grouped, dilated with asymmetric pads, a non-square kernel
   with unequal strides, 1x1 stride 2, blocks that end mid-row, with bias
   and a fused Relu; depthwise 5x5 (strides, dilations, asymmetric pads,
   a channel multiplier of 2), against torch.
3c. Depthwise Conv on its own paths: phase planes for strides (even and
   odd sizes, asymmetric pads, dilation, strides 2, 3 and (2, 1), 3x3, 5x5
   and 7x7, channel multipliers, batch 2), 8 channels at once on planes of
   at most 256 output pixels (channel tails, column blocks of 8, 4 and 1,
   1x1, a run-time weight), each fused activation, against torch.
3b. Conv on the packed GEMM (a float32 constant weight on an AVX-512 CPU):
   row panels and column tiles with tails, depth above and below one
   256-deep block, 1x1 with stride, groups, batch 2, the threads splitting
   columns and row panels, no bias, each fused activation kind (Relu,
   LeakyRelu, Clip, HardSigmoid, HardSwish, SiLU), a Constant node's
   weight, a graph-input weight (packed on each run: bitwise equal to the
   same conv with the weight an initializer), and the sizes it leaves to
   OpenBLAS, against torch.
3d. One weight at several sizes inference does not know (a detector's
   FPN levels: symbolic H and W): check prepares the weight for the path
   a 56 x 56 input would take, and each run's size picks its own (Winograd
   on many tiles, the packed GEMM on few, OpenBLAS on a 3 x 3 output);
   the path check did not prepare is prepared at the first run and kept
   (conv_keep). Three runs in a session (--repeat), 3x3 and 1x1 weights,
   against torch.
3h. Convs of at most 64 output positions in all (a detector's head convs
   at 3 x 3, stride 2 with asymmetric pads and dilation, batch 2, 9 output
   channels, a weight given at run time), and convs whose one window
   covers each image (squeeze-and-excitation's 1x1 convs on [C, 1, 1], a
   classifier as a 7x7 conv), fewer than 8 images: the packed X W GEMM,
   the windows as its rows, against torch, and against OpenBLAS
   (SEAM_CPU_PACKED_GEMM=0) within 1e-5, and at a depth of 512 or more
   not in bits (the path ran).
3g. Dilated convs whose taps read the input for part of the output
   (tapconv.c, each tap over its rectangle of outputs): ASPP's dilation
   12 at 20 x 20, stride 2 with asymmetric pads and dilations, 5x5, the
   taps conv_trim leaves, stride (1, 2), batch 2, fused activations, a
   weight given at run time; against torch, and against SEAM_CPU_TAPCONV=0
   (im2col) within 1e-5 but not in bits (the tap path ran).
3f. Grouped convs of few channels a group (gconv.c's direct loop, its
   AVX2 kernel bit for bit the AVX-512 one's, SEAM_CPU_GCONV=0's im2col
   within 1e-5):
   ResNeXt's 32 groups of 4, 8, 16 and 32 channels, stride 2, output
   channels a group that leave blocks of 8, 4, 2 and 1 (15), strides 3 and
   (2, 1), dilation, asymmetric pads, 5x5 and 1x1 kernels, batch 2, every
   fused activation, no bias, outputs of 1 x 1 and of one row, a weight
   given at run time (bitwise equal to the initializer's), against torch.
3e. Dilated convs whose kernel has taps that read padding only, for every
   output (conv_trim runs the conv of the other taps): ASPP's centre-only
   3x3 (a 1x1 conv), taps cut on one side only, on both sides with stride
   2 and batch 2, groups, a Relu, against torch.
4. MaxPool and AveragePool (2-D, float32) with strides, pads, dilations,
   ceil_mode and count_include_pad, on rows wide enough to have windows
   all inside, against torch.
5. Add, Sub, Mul and Div (float32) with broadcasting whose axes merge into
   longer rows (per-channel, channel bias, last axis, scalar, outer
   products, size-1 axes), against numpy.
Every model also runs with --threads 1 and 2: the outputs must be bitwise
equal. A case is one model, named as printed.
"""
import os
import sys
import zlib

import numpy as np
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import vi  # noqa: E402

args, seam, work, check = seamtest.checker_setup(__doc__, "cpu_kernels")
rng = np.random.RandomState(7)


def run_model(name, nodes, x, inits=(), opset=13, dtype=TensorProto.FLOAT, out_dtype=None):
    """Runs the one-input model on 1 and 2 threads; (y, None) or (None, why)."""
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, [vi("x", x.shape, dtype)],
                               [vi("y", None, dtype if out_dtype is None else out_dtype)], inits, name=name, opset=opset)
    f = os.path.join(work, name + ".x.npy")
    np.save(f, x)
    outs = []
    for threads in (1, 2):
        d = os.path.join(work, f"{name}.t{threads}")
        r = seam("run", path, "--input", f"x={f}", "--threads", threads, "--output-dir", d, "--quiet")
        if r.returncode:
            return None, f"seam run --threads {threads} failed: {r.stderr.strip()}"
        outs.append(np.load(os.path.join(d, "y.npy")))
    if outs[0].tobytes() != outs[1].tobytes():
        return None, "--threads 1 and --threads 2 differ"
    return outs[0], None


# ---- Resize: the spec's formulas, one axis at a time ----

def to_input(cm, xo, scale, n_in, n_out):
    """ONNX Resize: an output coordinate (array) in the input's."""
    if cm == "half_pixel":
        return (xo + 0.5) / scale - 0.5
    if cm == "pytorch_half_pixel":
        return (xo + 0.5) / scale - 0.5 if n_out > 1 else np.zeros_like(xo)
    if cm == "align_corners":
        out = n_in * scale
        return np.zeros_like(xo) if out == 1 else xo * (n_in - 1) / (out - 1)
    if cm == "asymmetric":
        return xo / scale
    if cm == "tf_half_pixel_for_nn":
        return (xo + 0.5) / scale
    if cm == "half_pixel_symmetric":
        adj = n_out / (n_in * scale)
        return n_in / 2 * (1 - adj) + (xo + 0.5) / scale - 0.5
    raise ValueError(cm)


def resize_axis(a, axis, n_out, scale, mode, cm, nearest):
    n_in = a.shape[axis]
    xi = to_input(cm, np.arange(n_out, dtype=np.float64), scale, n_in, n_out)
    if n_out == n_in and scale == 1:
        xi = np.arange(n_out, dtype=np.float64)
    if mode == "nearest":
        f = np.floor(xi)
        half = xi - f == 0.5
        idx = {"floor": f, "ceil": np.ceil(xi),
               "round_prefer_floor": np.where(half, f, np.floor(xi + 0.5)),
               "round_prefer_ceil": np.where(half, f + 1, np.floor(xi + 0.5))}[nearest]
        idx = np.clip(idx, 0, n_in - 1).astype(np.int64)
        return np.take(a, idx, axis=axis)
    c = np.clip(xi, 0, n_in - 1)
    lo = np.floor(c).astype(np.int64)
    hi = np.minimum(lo + 1, n_in - 1)
    t = c - lo
    shape = [1] * a.ndim
    shape[axis] = n_out
    t = t.reshape(shape)
    return np.take(a, lo, axis=axis) * (1 - t) + np.take(a, hi, axis=axis) * t


def resize_ref(x, out, scales, mode, cm, nearest):
    y = x.astype(np.float64)
    for axis in range(x.ndim):
        if out[axis] != x.shape[axis] or scales[axis] != 1:
            y = resize_axis(y, axis, out[axis], scales[axis], mode, cm, nearest)
    return y


def resize_case(name, shape, mode, cm, nearest="round_prefer_floor", scales=None, sizes=None, dtype=np.float32,
                torch_ref=None, tol=None):
    if not check.selected(name):
        return
    x = rng.randn(*shape).astype(dtype)
    inits = []
    if scales is not None:
        inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [len(scales)], scales))
        out = [int(np.floor(n * s)) for n, s in zip(shape, scales)]
        sc = list(scales)
        ins = ["x", "", "scales"]
    else:
        inits.append(helper.make_tensor("sizes", TensorProto.INT64, [len(sizes)], sizes))
        out = list(sizes)
        sc = [o / n for o, n in zip(sizes, shape)]
        ins = ["x", "", "", "sizes"]
    # the spec's scales are float32 in the model
    sc = [float(np.float32(s)) if scales is not None else s for s in sc]
    node = helper.make_node("Resize", ins, ["y"], mode=mode, coordinate_transformation_mode=cm, nearest_mode=nearest)
    y, err = run_model(name, [node], x, inits, dtype=TensorProto.DOUBLE if dtype == np.float64 else TensorProto.FLOAT)
    if err:
        check.fail(f"{name}: {err}")
        return
    ref = resize_ref(x, out, sc, mode, cm, nearest)
    if y.shape != ref.shape:
        check.fail(f"{name}: shape {y.shape}, want {ref.shape}")
        return
    tol = tol or (1e-6 if dtype == np.float32 else 1e-12)
    e = seamtest.rel_err(y, ref)
    msgs = [f"spec {e:.1e}"]
    bad = not e <= tol
    # torch reads a scale from the sizes: the same as the spec's only when
    # the scales give whole sizes
    exact = all(float(n * s) == o for n, s, o in zip(shape, sc, out))
    if torch_ref is not None and exact:
        et = seamtest.rel_err(y, torch_ref(torch.from_numpy(x.astype(np.float64)), out).numpy())
        msgs.append(f"torch {et:.1e}")
        bad |= not et <= tol
    if bad:
        check.fail(f"{name}: error {', '.join(msgs)} (tolerance {tol:.0e})")
    else:
        check.ok(f"{name}: error {', '.join(msgs)}")


def torch_nearest(x, out):
    return F.interpolate(x, size=out[2:], mode="nearest")


def torch_nearest_exact(x, out):
    return F.interpolate(x, size=out[2:], mode="nearest-exact")


def torch_bilinear(x, out):
    return F.interpolate(x, size=out[2:], mode="bilinear", align_corners=False)


def torch_bilinear_ac(x, out):
    return F.interpolate(x, size=out[2:], mode="bilinear", align_corners=True)


CMS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
       "half_pixel_symmetric"]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
SHAPES = {  # name: (input shape, scales or None, sizes or None)
    "up2": ((2, 3, 7, 9), [1, 1, 2, 2], None),
    "down2": ((1, 4, 17, 12), [1, 1, 0.5, 0.5], None),
    "odd": ((2, 2, 5, 4), None, [2, 2, 7, 13]),
    "frac": ((1, 3, 9, 11), [1, 1, 1.7, 0.6], None),
    "plane": ((1, 1, 37, 50), [1, 1, 3, 3], None),  # one plane: row blocks
    "wide": ((1, 2, 3, 700), None, [1, 2, 5, 2100]),  # rows wider than a tile
}
for sname, (shape, scales, sizes) in SHAPES.items():
    for cm in CMS:
        for nearest in NEAREST:
            tr = None
            if cm == "asymmetric" and nearest == "floor" and sizes is not None:
                tr = torch_nearest  # torch computes from the sizes' ratio
            if cm == "half_pixel" and nearest == "round_prefer_ceil":
                tr = torch_nearest_exact
            resize_case(f"resize_nearest_{nearest}_{cm}_{sname}", shape, "nearest", cm, nearest, scales, sizes,
                        torch_ref=tr)
        tr = {"half_pixel": torch_bilinear, "align_corners": torch_bilinear_ac}.get(cm)
        if cm == "pytorch_half_pixel":
            tr = torch_bilinear
        resize_case(f"resize_linear_{cm}_{sname}", shape, "linear", cm, scales=scales, sizes=sizes, torch_ref=tr,
                    tol=1e-5 if tr else None)
resize_case("resize_linear_rank3", (2, 5, 6), "linear", "half_pixel", sizes=[2, 5, 11])
resize_case("resize_nearest_rank3", (2, 5, 6), "nearest", "asymmetric", "floor", scales=[1, 1, 2.5])
resize_case("resize_linear_1x1", (1, 2, 1, 1), "linear", "half_pixel", sizes=[1, 2, 4, 3])
resize_case("resize_linear_to_1", (1, 2, 6, 5), "linear", "pytorch_half_pixel", sizes=[1, 2, 1, 1])
# the general kernel's forms
resize_case("resize_general_f64", (1, 2, 5, 6), "linear", "half_pixel", scales=[1, 1, 2, 1.5], dtype=np.float64)
resize_case("resize_general_channels", (1, 3, 4, 4), "nearest", "asymmetric", "floor", scales=[1, 2, 2, 2])
if check.selected("resize_general_cubic"):
    x = rng.randn(1, 2, 6, 7).astype(np.float32)
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="cubic", cubic_coeff_a=-0.75,
                            coordinate_transformation_mode="align_corners")
    y, err = run_model("resize_general_cubic", [node], x,
                       [helper.make_tensor("sizes", TensorProto.INT64, [4], [1, 2, 11, 13])])
    if err:
        check.fail(f"resize_general_cubic: {err}")
    else:
        ref = F.interpolate(torch.from_numpy(x.astype(np.float64)), size=(11, 13), mode="bicubic",
                            align_corners=True).numpy()
        e = seamtest.rel_err(y, ref)
        check.expect(e <= 1e-5, f"resize_general_cubic: error {e:.1e} against torch")


# ---- activations ----

def act_case(name, node, ref_fn, opset=13, abs_tol=1e-37):
    if not check.selected(name):
        return
    x = np.concatenate([np.linspace(-100, 100, 20001), rng.randn(5000) * 4,
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 86.9, -87.1, -88.0, -3.0, 3.0]])
    x = x.astype(np.float32)
    y, err = run_model(name, [node], x, opset=opset)
    if err:
        check.fail(f"{name}: {err}")
        return
    with np.errstate(all="ignore"):
        ref = ref_fn(torch.from_numpy(x.astype(np.float64))).numpy()
    # NaN only where the reference has NaN, infinities equal, else 4 ulp
    n_bad, worst, i = seamtest.ulp_err(y, ref, abs_tol)
    if n_bad:
        at = "" if i is None else f", e.g. x={x.ravel()[i]!r}: {y.ravel()[i]!r}, want {ref.ravel()[i]!r}"
        check.fail(f"{name}: {n_bad} values off by more than 4 ulp or NaN/inf where the reference differs{at}"
                   + ("" if i is not None else f" (shape {y.shape}, want {ref.shape})"))
    else:
        check.ok(f"{name}: within {worst:.1f} ulp where the error is above {abs_tol:.0e}")


act_case("sigmoid", helper.make_node("Sigmoid", ["x"], ["y"]), torch.sigmoid)
act_case("hard_sigmoid", helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.45),
         lambda v: torch.where(torch.isnan(v), v, (0.3 * v + 0.45).clamp(0, 1)), abs_tol=1e-6)
act_case("erf", helper.make_node("Erf", ["x"], ["y"]), torch.erf)
act_case("tanh", helper.make_node("Tanh", ["x"], ["y"]), torch.tanh)
# 0.5 x (1 + erf(x / sqrt 2)) cancels for x << 0 in any float32 order: absolute
act_case("gelu", helper.make_node("Gelu", ["x"], ["y"]), F.gelu, opset=20, abs_tol=1e-6)
act_case("hard_swish", helper.make_node("HardSwish", ["x"], ["y"]),
         lambda v: torch.where(torch.isnan(v), v, v * (v / 6 + 0.5).clamp(0, 1)), opset=14, abs_tol=1e-6)


# ---- Softmax and LogSoftmax rows (activation.c soft_row_f32) ----

def softmax_rows_case(name, op):
    """Rows of 1 to 1000 logits along the last axis: plain, masked with
    -inf (those weigh exactly 0), logits of 1e4, a row holding NaN, a row
    of -inf only, a row with +inf (the last three the spec's way: NaN
    where numpy's formula gives NaN); within 4 ulp (or 1e-37 absolute) of
    that formula in float64 from x - max in float32, bitwise equal on 1 and
    2 threads."""
    if not check.selected(name):
        return
    for n in (1, 7, 8, 9, 1000):
        x = (rng.randn(9, n) * 3).astype(np.float32)
        x[1, ::3] = -np.inf
        x[2] += 1e4
        x[3, n // 2] = np.nan
        x[4] = -np.inf
        x[5, n // 2] = np.inf
        x[6] = -90.0 * np.arange(n)  # below e^-87 past the first: exactly 0 on every path
        y, err = run_model(f"{name}_{n}", [helper.make_node(op, ["x"], ["y"], axis=-1)], x)
        if err:
            check.fail(f"{name} n={n}: {err}")
            continue
        with np.errstate(all="ignore"):
            # x - max rounded to float32 as any float32 kernel has it (at
            # |x - max| = 8 that rounding alone moves e^(x - max) 8 ulp)
            v = (x - x.max(axis=-1, keepdims=True)).astype(np.float64)
            s = np.exp(v).sum(axis=-1, keepdims=True)
            ref = np.exp(v) / s if op == "Softmax" else v - np.log(s)
        n_bad, worst, i = seamtest.ulp_err(y, ref, 1e-37)
        masked = op != "Softmax" or n < 3 or bool(np.all(y[1, ::3] == 0))
        check.expect(not n_bad and masked, f"{name} n={n}: within {worst:.1f} ulp of the float64 formula, "
                     f"masked logits exactly 0", None if i is None else
                     f"row {i // n}: {y.ravel()[i]!r}, want {ref.ravel()[i]!r}")


softmax_rows_case("softmax_rows", "Softmax")
softmax_rows_case("log_softmax_rows", "LogSoftmax")


# ---- Conv: blocked im2col (outputs of more than one ~512 KB column block) ----

def conv_case(name, xshape, wshape, group=1, strides=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1), bias=True, relu=False):
    if not check.selected(name):
        return
    x = rng.randn(*xshape).astype(np.float32)
    w = (rng.randn(*wshape) / np.sqrt(np.prod(wshape[1:]))).astype(np.float32)
    b = rng.randn(wshape[0]).astype(np.float32)
    inits = [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel())]
    ins = ["x", "w"]
    if bias:
        inits.append(helper.make_tensor("b", TensorProto.FLOAT, b.shape, b))
        ins.append("b")
    nodes = [helper.make_node("Conv", ins, ["c" if relu else "y"], group=group, strides=list(strides), pads=list(pads),
                              dilations=list(dil))]
    if relu:  # fused into the Conv: applied to each block
        nodes += [helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Identity", ["r"], ["y"])]
    y, err = run_model(name, nodes, x, inits)
    if err:
        check.fail(f"{name}: {err}")
        return
    t = torch.from_numpy(x.astype(np.float64))
    tp = F.pad(t, (pads[1], pads[3], pads[0], pads[2]))
    ref = F.conv2d(tp, torch.from_numpy(w.astype(np.float64)), torch.from_numpy(b.astype(np.float64)) if bias else None,
                   strides, 0, dil, group)
    if relu:
        ref = F.relu(ref)
    ref = ref.numpy()
    if y.shape != ref.shape:
        check.fail(f"{name}: shape {y.shape}, want {ref.shape}")
        return
    e = seamtest.rel_err(y, ref)
    check.expect(e <= 1e-5, f"{name}: error {e:.1e} against torch")


conv_case("conv3x3_blocks", (2, 16, 56, 56), (24, 16, 3, 3), pads=(1, 1, 1, 1), relu=True)
conv_case("conv7x7_s2", (1, 3, 224, 224), (16, 3, 7, 7), strides=(2, 2), pads=(3, 3, 3, 3))
conv_case("conv3x3_group2", (1, 32, 40, 40), (32, 16, 3, 3), group=2, pads=(1, 1, 1, 1), bias=False)
conv_case("conv3x3_d2_s2_asym", (1, 8, 201, 161), (12, 8, 3, 3), strides=(2, 2), pads=(1, 2, 2, 1), dil=(2, 2))
conv_case("conv5x3_s21", (1, 6, 120, 130), (10, 6, 5, 3), strides=(2, 1), pads=(2, 0, 1, 1))
conv_case("conv1x1_s2", (1, 256, 128, 127), (32, 256, 1, 1), strides=(2, 2), relu=True)
conv_case("conv3x3_odd_tail", (1, 5, 97, 131), (7, 5, 3, 3), pads=(0, 1, 2, 1))  # blocks end mid-row
# depthwise: its own loop (a kernel row per pass for 5-wide kernels)
conv_case("dw5x5", (2, 24, 29, 31), (24, 1, 5, 5), group=24, pads=(2, 2, 2, 2), relu=True)
conv_case("dw5x5_s2", (1, 16, 56, 57), (16, 1, 5, 5), group=16, strides=(2, 2), pads=(2, 2, 2, 2))
conv_case("dw5x5_d2_asym", (1, 8, 30, 27), (8, 1, 5, 5), group=8, pads=(4, 3, 2, 4), dil=(2, 2))
conv_case("dw5x3_s12", (1, 8, 30, 27), (8, 1, 5, 3), group=8, strides=(1, 2), pads=(2, 1, 2, 1))
conv_case("dw_mult2_5x5", (1, 6, 20, 22), (12, 1, 5, 5), group=6, pads=(2, 2, 2, 2))

# 1-D depthwise (an audio separator's dilated Conv1d): the 2-D depthwise
# kernel on one row
def conv1d_case(name, xshape, wshape, group, stride=1, pads=(0, 0), dil=1):
    if not check.selected(name):
        return
    x = rng.randn(*xshape).astype(np.float32)
    w = (rng.randn(*wshape) / np.sqrt(np.prod(wshape[1:]))).astype(np.float32)
    b = rng.randn(wshape[0]).astype(np.float32)
    inits = [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel()), helper.make_tensor("b", TensorProto.FLOAT, b.shape, b)]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], group=group, strides=[stride], pads=list(pads), dilations=[dil])]
    y, err = run_model(name, nodes, x, inits)
    if err:
        check.fail(f"{name}: {err}")
        return
    tp = F.pad(torch.from_numpy(x.astype(np.float64)), (pads[0], pads[1]))
    ref = F.conv1d(tp, torch.from_numpy(w.astype(np.float64)), torch.from_numpy(b.astype(np.float64)), stride, 0, dil,
                   group).numpy()
    if y.shape != ref.shape:
        check.fail(f"{name}: shape {y.shape}, want {ref.shape}")
        return
    e = seamtest.rel_err(y, ref)
    check.expect(e <= 1e-5, f"{name}: error {e:.1e} against torch")


conv1d_case("dw1d_tasnet_d4", (1, 128, 1999), (128, 1, 3), group=128, pads=(4, 4), dil=4)
conv1d_case("dw1d_s2_asym", (2, 24, 301), (24, 1, 5), group=24, stride=2, pads=(1, 3))
conv1d_case("dw1d_mult2_d3", (1, 10, 77), (20, 1, 3), group=10, pads=(3, 3), dil=3)


# InstanceNormalization (norm.c): float32 by eight running sums, float64 by the general loop
def instnorm_case(name, shape, dtype=np.float32):
    if not check.selected(name):
        return
    x = (rng.randn(*shape) * 3 + 1.5).astype(dtype)
    C = shape[1]
    sc, bb = rng.randn(C).astype(dtype), rng.randn(C).astype(dtype)
    tt = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    inits = [helper.make_tensor("s", tt, [C], sc), helper.make_tensor("b", tt, [C], bb)]
    y, err = run_model(name, [helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5)], x, inits,
                       dtype=tt)
    if err:
        check.fail(f"{name}: {err}")
        return
    ref = F.instance_norm(torch.from_numpy(x.astype(np.float64)), weight=torch.from_numpy(sc.astype(np.float64)),
                          bias=torch.from_numpy(bb.astype(np.float64)), eps=1e-5).numpy()
    e = seamtest.rel_err(y, ref)
    check.expect(y.shape == ref.shape and e <= (1e-6 if dtype == np.float32 else 1e-12),
                 f"{name}: error {e:.1e} against torch in float64")


instnorm_case("instnorm_tasnet", (1, 128, 1999))
instnorm_case("instnorm_4d_odd", (2, 3, 5, 7))
instnorm_case("instnorm_f64", (2, 4, 33), np.float64)

# ---- Conv on the packed GEMM (AVX-512 CPUs): weight packed at session creation ----

# The fused activations (runtime/fuse.c moves them into the Conv), as the
# nodes after the Conv and their float64 torch reference.
PACKED_ACTS = {
    "relu": (lambda: [helper.make_node("Relu", ["c"], ["y"])], F.relu),
    "leaky": (lambda: [helper.make_node("LeakyRelu", ["c"], ["y"], alpha=0.07)], lambda t: F.leaky_relu(t, 0.07)),
    "clip": (lambda: [helper.make_node("Clip", ["c", "lo", "hi"], ["y"])], lambda t: t.clamp(-0.4, 0.6)),
    "hardsigmoid": (lambda: [helper.make_node("HardSigmoid", ["c"], ["y"], alpha=0.3, beta=0.45)],
                    lambda t: (0.3 * t + 0.45).clamp(0, 1)),
    "hardswish": (lambda: [helper.make_node("HardSwish", ["c"], ["y"])], lambda t: t * (t / 6 + 0.5).clamp(0, 1)),
    "silu": (lambda: [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])],
             lambda t: t * torch.sigmoid(t)),
}


def packed_run(name, x, w, b, group, strides, pads, act, weight, dil=(1, 1)):
    """Builds and runs one packed_case model on 1 and 2 threads; (y, None)
    or (None, why)."""
    inits, nodes = [], []
    if weight == "constant":
        nodes.append(helper.make_node("Constant", [], ["w"],
                                      value=helper.make_tensor("wv", TensorProto.FLOAT, w.shape, w.ravel())))
    elif weight == "init":
        inits.append(helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel()))
    ins = ["x", "w"]
    if b is not None:
        inits.append(helper.make_tensor("b", TensorProto.FLOAT, b.shape, b))
        ins.append("b")
    if act == "clip":
        inits += [helper.make_tensor("lo", TensorProto.FLOAT, [], [-0.4]),
                  helper.make_tensor("hi", TensorProto.FLOAT, [], [0.6])]
    nodes.append(helper.make_node("Conv", ins, ["c" if act else "y"], group=group, strides=list(strides),
                                  pads=list(pads), dilations=list(dil)))
    if act:
        nodes += PACKED_ACTS[act][0]()
    inputs = [vi("x", x.shape)] + ([vi("w", w.shape)] if weight == "input" else [])
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, inputs, [vi("y", None)], inits, name=name,
                               opset=14)
    args_in = []
    for nm, v in [("x", x)] + ([("w", w)] if weight == "input" else []):
        f = os.path.join(work, f"{name}.{nm}.npy")
        np.save(f, v)
        args_in += ["--input", f"{nm}={f}"]
    outs = []
    for threads in (1, 2):
        d = os.path.join(work, f"{name}.t{threads}")
        r = seam("run", path, *args_in, "--threads", threads, "--output-dir", d, "--quiet")
        if r.returncode:
            return None, f"seam run --threads {threads} failed: {r.stderr.strip()}"
        outs.append(np.load(os.path.join(d, "y.npy")))
    if outs[0].tobytes() != outs[1].tobytes():
        return None, "--threads 1 and --threads 2 differ"
    if name.startswith("gconv_"):
        # gconv.c's AVX2 kernel (the one a CPU without AVX-512 runs) sums in the
        # AVX-512 kernel's order: the same bits; and the im2col path it replaces
        # (SEAM_CPU_GCONV=0) agrees within rounding
        for label, val in (("avx2", None), ("0", 1e-5)):
            d = os.path.join(work, f"{name}.gconv_{label}")
            r = seam("run", path, *args_in, "--threads", 2, "--output-dir", d, "--quiet",
                     env=dict(os.environ, SEAM_CPU_GCONV=label))
            if r.returncode:
                return None, f"seam run with SEAM_CPU_GCONV={label} failed: {r.stderr.strip()}"
            got = np.load(os.path.join(d, "y.npy"))
            if val is None and got.tobytes() != outs[0].tobytes():
                return None, "SEAM_CPU_GCONV=avx2 (the AVX2 kernel) differs in bits from the default run"
            if val is not None and not seamtest.rel_err(got, outs[0]) <= val:
                return None, f"SEAM_CPU_GCONV=0 (im2col) is {seamtest.rel_err(got, outs[0]):.2e} from the direct loop"
    # another path of the same conv (an environment switch turns this one
    # off): the same values within rounding, other bits where the sums
    # run in another order (so this path ran)
    other = {"xw_": ("SEAM_CPU_PACKED_GEMM", "OpenBLAS", "as X W",
                     # (over a short depth OpenBLAS's dot products can sum in the same order)
                     np.prod(w.shape[1:]) >= 512),
             "taps_": ("SEAM_CPU_TAPCONV", "im2col", "tap by tap", True)}
    for prefix, (var, label, what, differs) in other.items():
        if not name.startswith(prefix):
            continue
        d = os.path.join(work, f"{name}.{var}_off")
        r = seam("run", path, *args_in, "--threads", 2, "--output-dir", d, "--quiet", env=dict(os.environ, **{var: "0"}))
        if r.returncode:
            return None, f"seam run with {var}=0 failed: {r.stderr.strip()}"
        got = np.load(os.path.join(d, "y.npy"))
        if differs and got.tobytes() == outs[0].tobytes():
            return None, f"the same bits with {var}=0: the conv did not run {what}"
        if not seamtest.rel_err(got, outs[0]) <= 1e-5:
            return None, f"{var}=0 ({label}) is {seamtest.rel_err(got, outs[0]):.2e} from the run {what}"
    return outs[0], None


def packed_case(name, xshape, wshape, group=1, strides=(1, 1), pads=(0, 0, 0, 0), bias=True, act=None,
                weight="init", dil=(1, 1)):
    """weight: "init" (an initializer: packed at session creation),
    "constant" (a Constant node's value: the same), or "input" (a graph
    input: packed on each run, and bitwise equal to the initializer's
    result, as a plan's subgraph, whose weights are inputs, must be)."""
    if not check.selected(name):
        return
    x = rng.randn(*xshape).astype(np.float32)
    w = (rng.randn(*wshape) / np.sqrt(np.prod(wshape[1:]))).astype(np.float32)
    b = rng.randn(wshape[0]).astype(np.float32) if bias else None
    y, err = packed_run(name, x, w, b, group, strides, pads, act, weight, dil)
    if not err and weight == "input":
        y2, err = packed_run(name + ".init", x, w, b, group, strides, pads, act, "init", dil)
        if not err and y2.tobytes() != y.tobytes():
            err = "differs from the same conv with the weight an initializer"
    if err:
        check.fail(f"{name}: {err}")
        return
    t = F.pad(torch.from_numpy(x.astype(np.float64)), (pads[1], pads[3], pads[0], pads[2]))
    ref = F.conv2d(t, torch.from_numpy(w.astype(np.float64)), torch.from_numpy(b.astype(np.float64)) if bias else None,
                   strides, 0, dil, group)
    if act:
        ref = PACKED_ACTS[act][1](ref)
    ref = ref.numpy()
    if y.shape != ref.shape:
        check.fail(f"{name}: shape {y.shape}, want {ref.shape}")
        return
    e = seamtest.rel_err(y, ref)
    check.expect(e <= 1e-5, f"{name}: error {e:.1e} against torch")


# Row panels of at most 14 (29 rows: 10, 10, 9), 32-column tiles with a tail of 21
# and of 9 (one zmm), depth < 256 (one depth block)
packed_case("packed_edges_tail21", (1, 7, 23, 19), (64, 7, 3, 3), pads=(1, 1, 1, 1))
packed_case("packed_edges_tail9", (1, 20, 17, 25), (29, 20, 3, 3), pads=(1, 1, 1, 1))
# depth 576 > 256: three depth blocks (the last 64 deep); an odd row count
packed_case("packed_depth3", (1, 64, 15, 15), (70, 64, 3, 3), pads=(1, 1, 1, 1), act="relu")
# 1x1 stride 2 with a depth of 300 (im2col into the panels), and 1x1 stride 1
# (the input is B itself), batch 2
packed_case("packed_1x1_s2", (1, 300, 33, 35), (45, 300, 1, 1), strides=(2, 2))
packed_case("packed_1x1_batch2", (2, 96, 14, 14), (80, 96, 1, 1), act="hardswish")
# groups: one packed matrix per group; batch 2; asymmetric pads, stride 2
packed_case("packed_group3", (2, 24, 33, 35), (150, 8, 3, 3), group=3, pads=(1, 0, 2, 1), strides=(2, 2))
# few columns, many rows: the threads split the row panels (7 x 7, 160 rows)
packed_case("packed_by_rows", (1, 96, 7, 7), (160, 96, 3, 3), pads=(1, 1, 1, 1), act="leaky")
# wide output, one depth block: the threads split the columns over NC blocks
packed_case("packed_wide", (1, 24, 60, 61), (64, 24, 3, 3), pads=(1, 1, 1, 1), act="clip")
packed_case("packed_no_bias_hsig", (1, 40, 20, 20), (96, 40, 3, 3), bias=False, act="hardsigmoid")
packed_case("packed_silu", (1, 32, 21, 22), (72, 32, 3, 3), act="silu")
packed_case("packed_constant_node", (1, 32, 16, 16), (64, 32, 3, 3), pads=(1, 1, 1, 1), weight="constant")
# the weight a graph input: packed on each run, with groups and batch 2
packed_case("packed_weight_input", (2, 32, 16, 16), (128, 16, 3, 3), group=2, pads=(1, 1, 1, 1), weight="input",
            act="relu")
# sizes the packed GEMM leaves to OpenBLAS (packed_pays): 1 x 1 outputs,
# 32 rows of 7 x 7, a 16-row short stem
packed_case("packed_skip_se", (2, 240, 1, 1), (960, 240, 1, 1), act="hardsigmoid")
packed_case("packed_skip_small", (1, 128, 7, 7), (32, 128, 3, 3), pads=(1, 1, 1, 1))
# a large weight on 9 output pixels (a detector's smallest FPN level): packed
packed_case("packed_small_out", (1, 256, 3, 3), (256, 256, 3, 3), pads=(1, 1, 1, 1), act="relu")
packed_case("packed_small_out_2x4", (1, 128, 2, 4), (96, 128, 3, 3), pads=(1, 1, 1, 1))
packed_case("packed_skip_stem", (1, 3, 64, 64), (16, 3, 3, 3), strides=(2, 2), pads=(1, 1, 1, 1), act="hardswish")
# grouped convs of few channels a group (gconv.c)
packed_case("gconv_resnext_g4", (1, 128, 28, 28), (128, 4, 3, 3), group=32, pads=(1, 1, 1, 1), act="relu")
packed_case("gconv_resnext_g8_s2", (1, 256, 29, 28), (256, 8, 3, 3), group=32, strides=(2, 2), pads=(1, 1, 1, 1))
packed_case("gconv_resnext_g16", (1, 512, 14, 14), (512, 16, 3, 3), group=32, pads=(1, 1, 1, 1), act="clip")
packed_case("gconv_resnext_g32_7", (1, 1024, 7, 7), (1024, 32, 3, 3), group=32, pads=(1, 1, 1, 1), act="silu")
packed_case("gconv_tails_15", (2, 12, 13, 11), (45, 4, 3, 3), group=3, pads=(0, 2, 1, 0), act="hardswish")
packed_case("gconv_s3_d2", (1, 24, 23, 26), (36, 6, 3, 3), group=4, strides=(3, 3), pads=(2, 2, 2, 2), dil=(2, 2),
            act="leaky")
packed_case("gconv_s21_5x5", (1, 16, 17, 19), (20, 8, 5, 5), group=2, strides=(2, 1), pads=(2, 1, 0, 2), bias=False,
            act="hardsigmoid")
packed_case("gconv_1x1", (1, 64, 9, 9), (32, 8, 1, 1), group=8)
packed_case("gconv_out_1x1", (1, 32, 3, 3), (64, 4, 3, 3), group=8)
packed_case("gconv_one_row", (2, 16, 1, 40), (16, 2, 1, 3), group=8, pads=(0, 1, 0, 1))
packed_case("gconv_weight_input", (1, 64, 12, 12), (64, 8, 3, 3), group=8, pads=(1, 1, 1, 1), weight="input",
            act="relu")
# taps that read padding only (conv_trim): ASPP's dilation past the input
# (the centre tap alone: a 1x1 conv on the input as it is), the top row of
# taps cut (pads 6 above, 0 below), 5x5 with stride 2 cut to 3x3 on both
# sides (pads 7 left), groups, batch 2
packed_case("trim_aspp_centre", (1, 64, 10, 10), (32, 64, 3, 3), pads=(12, 12, 12, 12), dil=(12, 12), act="relu")
packed_case("trim_one_side", (1, 16, 9, 9), (24, 16, 3, 3), pads=(6, 1, 0, 1), dil=(6, 1))
packed_case("trim_both_s2", (2, 8, 11, 13), (16, 8, 5, 5), strides=(2, 2), pads=(14, 14, 14, 14), dil=(7, 7))
packed_case("trim_groups", (1, 32, 6, 6), (48, 8, 3, 3), group=4, pads=(8, 8, 8, 8), dil=(8, 8), bias=False)
# one window covering each image, fewer than 8 images (conv.c's CONV_XW: X W^T
# on the packed GEMM): squeeze-and-excitation's 1x1 convs on [C, 1, 1], a
# classifier written as a 7x7 conv of a 7x7 map (batch 2), stride 2 on a
# window the size of the input, no bias, a weight given at run time
packed_case("xw_se_1x1", (1, 144, 1, 1), (576, 144, 1, 1), act="hardsigmoid")
packed_case("xw_se_1x1_deep", (1, 576, 1, 1), (144, 576, 1, 1), act="relu")
packed_case("xw_whole_7x7_b2", (2, 64, 7, 7), (100, 64, 7, 7), act="relu")
packed_case("xw_stride2_no_bias", (3, 40, 3, 5), (72, 40, 3, 5), strides=(2, 2), bias=False)
packed_case("xw_weight_input", (1, 96, 1, 1), (256, 96, 1, 1), weight="input", act="clip")
# few output positions in all (at most 64): the windows as rows, im2col with padding
packed_case("xw_head_3x3", (1, 256, 3, 3), (256, 256, 3, 3), pads=(1, 1, 1, 1), act="relu")
packed_case("xw_5x5_s2_b2_asym", (2, 64, 5, 6), (72, 64, 3, 3), strides=(2, 2), pads=(1, 0, 2, 1), dil=(1, 2))
packed_case("xw_few_channels", (1, 256, 5, 5), (9, 256, 3, 3), pads=(1, 1, 1, 1), bias=False, act="hardswish")
packed_case("xw_8x8_weight_input", (1, 64, 8, 8), (64, 64, 3, 3), pads=(1, 1, 1, 1), weight="input", act="leaky")
# taps that read the input for part of the output (tapconv.c: each tap over
# its rectangle): ASPP's dilation 12 at 20 x 20 (36% of the pairs), stride
# 2 with asymmetric pads and dilations, 5x5, the taps left after conv_trim,
# stride (1, 2), batch 2, no bias, fused activations, a weight given at run
# time (bitwise the initializer's)
packed_case("taps_aspp_d12", (1, 96, 20, 20), (64, 96, 3, 3), pads=(12, 12, 12, 12), dil=(12, 12), act="relu")
packed_case("taps_s2_asym_b2", (2, 48, 23, 19), (40, 48, 3, 3), strides=(2, 2), pads=(7, 5, 6, 8), dil=(6, 5),
            bias=False, act="leaky")
packed_case("taps_5x5", (1, 32, 16, 16), (48, 32, 5, 5), pads=(12, 12, 12, 12), dil=(6, 6), act="clip")
packed_case("taps_after_trim", (1, 40, 12, 12), (36, 40, 5, 5), pads=(16, 16, 16, 16), dil=(8, 8), act="silu")
packed_case("taps_s12", (1, 33, 14, 30), (70, 33, 3, 3), strides=(1, 2), pads=(9, 10, 9, 10), dil=(9, 10))
packed_case("taps_weight_input", (2, 64, 20, 20), (32, 64, 3, 3), pads=(12, 12, 12, 12), dil=(12, 12), weight="input",
            act="hardswish")

# ---- one weight at sizes inference does not know (conv_keep) ----

def levels_case(name, C, M, sizes, k=3, act=None):
    """x [1, C, H, W]; level i is x[:, :, :s_i, :s_i] (Slice with ends from
    input e_i: sizes inference cannot know, as a detector's resize makes
    them), each convolved with the same weight (k x k, pad k // 2): output
    y_i. Its own random data (the same whether -k selects it alone), and
    Winograd's tolerance: F(4, 3) over 256 channels is 1.2e-5 of the
    output's scale from torch on one draw, main's Winograd (on sgemm) too."""
    if not check.selected(name):
        return
    r = np.random.RandomState(zlib.crc32(name.encode()))
    x = r.randn(1, C, sizes[0], sizes[0]).astype(np.float32)
    w = (r.randn(M, C, k, k) / np.sqrt(C * k * k)).astype(np.float32)
    b = r.randn(M).astype(np.float32)
    inits = [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel()),
             helper.make_tensor("b", TensorProto.FLOAT, b.shape, b),
             helper.make_tensor("ax", TensorProto.INT64, [2], [2, 3]),
             helper.make_tensor("z", TensorProto.INT64, [2], [0, 0])]
    nodes, outs = [], []
    for i, sz in enumerate(sizes):
        nodes += [helper.make_node("Slice", ["x", "z", f"e{i}", "ax"], [f"x{i}"]),
                  helper.make_node("Conv", [f"x{i}", "w", "b"], [f"c{i}" if act else f"y{i}"], pads=[k // 2] * 4)]
        if act:
            nodes.append(helper.make_node("Relu", [f"c{i}"], [f"y{i}"]))
        outs.append(f"y{i}")
    ins = [vi("x", x.shape)] + [vi(f"e{i}", [2], TensorProto.INT64) for i in range(len(sizes))]
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, ins, [vi(o, None) for o in outs], inits,
                               name=name, opset=13)
    args_in = []
    for nm, v in [("x", x)] + [(f"e{i}", np.array([sz, sz], np.int64)) for i, sz in enumerate(sizes)]:
        f = os.path.join(work, f"{name}.{nm}.npy")
        np.save(f, v)
        args_in += ["--input", f"{nm}={f}"]
    got = []
    for threads in (1, 2):
        d = os.path.join(work, f"{name}.t{threads}")
        r = seam("run", path, *args_in, "--threads", threads, "--repeat", 3, "--output-dir", d, "--quiet")
        if r.returncode:
            check.fail(f"{name}: seam run --threads {threads} failed: {r.stderr.strip()}")
            return
        got.append([np.load(os.path.join(d, o + ".npy")) for o in outs])
    if any(a.tobytes() != c.tobytes() for a, c in zip(*got)):
        check.fail(f"{name}: --threads 1 and --threads 2 differ")
        return
    errs = []
    for i, sz in enumerate(sizes):
        ref = F.conv2d(torch.from_numpy(x[:, :, :sz, :sz].astype(np.float64)), torch.from_numpy(w.astype(np.float64)),
                       torch.from_numpy(b.astype(np.float64)), 1, k // 2)
        ref = (F.relu(ref) if act else ref).numpy()
        errs.append(seamtest.rel_err(got[0][i], ref) if got[0][i].shape == ref.shape else float("inf"))
    check.expect(max(errs) <= 5e-5, f"{name}: error {max(errs):.1e} against torch at sizes {sizes}",
                 f"per level {['%.1e' % e for e in errs]}")


# 64 -> 64 channels: Winograd at 40 x 40, 28 x 28 and 20 x 20 (prepared in
# check), the packed GEMM at 10 x 10 and 5 x 5 (packed at the first run),
# OpenBLAS at 3 x 3; 256 -> 96 with a Relu (Winograd at 24 x 24, packed at
# 12 x 12 and 6 x 6); a 1x1 weight (packed in check)
levels_case("levels_3x3_64", 64, 64, [40, 28, 20, 10, 5, 3])
levels_case("levels_3x3_256_relu", 256, 96, [24, 12, 6], act="relu")
levels_case("levels_1x1", 128, 80, [30, 9, 2], k=1)

# ---- depthwise Conv (group = C, linalg.c's dw_one and dw_lanes) ----

# Planes over 256 output pixels: phase planes (a stride s splits the padded
# input into s x s planes of every s-th row and column), one flat loop per
# plane. Even and odd sizes with stride 2, asymmetric pads 0..2, dilation
# 2 with stride 2 (taps in one row phase only), strides 3 and (2, 1), a
# channel multiplier of 3, 3x3, 5x5 and 7x7 kernels, batch 2, each fused
# activation.
packed_case("dw3x3_s2_even", (1, 24, 56, 56), (24, 1, 3, 3), group=24, strides=(2, 2), pads=(0, 0, 1, 1), act="relu")
packed_case("dw3x3_s2_odd", (1, 20, 57, 45), (20, 1, 3, 3), group=20, strides=(2, 2), pads=(1, 1, 1, 1),
            act="hardswish")
packed_case("dw5x5_s2_asym_b2", (2, 12, 41, 38), (12, 1, 5, 5), group=12, strides=(2, 2), pads=(2, 1, 0, 2), act="clip")
packed_case("dw3x3_d2_s2", (1, 8, 40, 37), (8, 1, 3, 3), group=8, strides=(2, 2), pads=(2, 0, 1, 2), dil=(2, 2))
packed_case("dw3x3_s3", (1, 8, 52, 50), (8, 1, 3, 3), group=8, strides=(3, 3), pads=(1, 2, 1, 0), act="leaky")
packed_case("dw5x3_s21", (1, 8, 45, 36), (8, 1, 5, 3), group=8, strides=(2, 1), pads=(2, 1, 2, 1), bias=False)
packed_case("dw_mult3_s2", (1, 8, 38, 36), (24, 1, 3, 3), group=8, strides=(2, 2), pads=(1, 1, 1, 1), act="silu")
packed_case("dw7x7", (1, 8, 30, 31), (8, 1, 7, 7), group=8, pads=(3, 3, 3, 3), act="hardsigmoid")
packed_case("dw3x3_s1_28", (1, 16, 28, 28), (16, 1, 3, 3), group=16, pads=(1, 1, 1, 1), act="hardswish")
# Planes of at most 256 output pixels: 8 channels at once (the last block
# shorter: 42 channels over a batch of 2, 19 and 9 channels), columns in
# blocks of 8, 4 (5 and 7 wide) and 1 (2 wide), odd plane sizes, strides
# 2 and 3, dilation 2, a channel multiplier of 2, 1x1, no bias, each fused
# activation, and a weight given at run time (bitwise equal to the
# initializer's result).
packed_case("dw_vec7_5x5", (1, 40, 7, 7), (40, 1, 5, 5), group=40, pads=(2, 2, 2, 2), act="hardswish")
packed_case("dw_vec14_3x3_b2", (2, 21, 14, 14), (21, 1, 3, 3), group=21, pads=(1, 1, 1, 1), act="relu")
packed_case("dw_vec14_5x5_s2", (1, 19, 14, 14), (19, 1, 5, 5), group=19, strides=(2, 2), pads=(2, 2, 2, 2),
            act="clip")
packed_case("dw_vec_odd_asym", (1, 16, 13, 11), (16, 1, 3, 3), group=16, pads=(0, 2, 1, 0), bias=False)
packed_case("dw_vec_5wide", (1, 9, 3, 5), (9, 1, 3, 3), group=9, pads=(1, 1, 1, 1), act="leaky")
packed_case("dw_vec_2x2", (1, 16, 2, 2), (16, 1, 3, 3), group=16, pads=(1, 1, 1, 1), act="hardsigmoid")
packed_case("dw_vec_d2", (1, 16, 12, 12), (16, 1, 3, 3), group=16, pads=(2, 2, 2, 2), dil=(2, 2), act="silu")
packed_case("dw_vec_mult2_s2", (1, 6, 10, 10), (12, 1, 5, 5), group=6, strides=(2, 2), pads=(2, 2, 2, 2))
packed_case("dw_vec_s3", (1, 8, 15, 17), (8, 1, 3, 3), group=8, strides=(3, 3), pads=(1, 0, 0, 1))
packed_case("dw_vec_1x1", (1, 16, 9, 9), (16, 1, 1, 1), group=16, act="relu")
packed_case("dw_vec_weight_input", (2, 16, 7, 7), (16, 1, 5, 5), group=16, pads=(2, 2, 2, 2), weight="input",
            act="hardswish")

# ---- 2-D pools: whole rows of windows inside the input at a time ----

def pool_case(name, op, shape, k, s=1, p=0, d=1, ceil=False, count_pad=False):
    if not check.selected(name):
        return
    x = rng.randn(*shape).astype(np.float32)
    attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=[p, p, p, p], ceil_mode=int(ceil))
    if d != 1:
        attrs["dilations"] = [d, d]
    if op == "AveragePool":
        attrs["count_include_pad"] = int(count_pad)
    y, err = run_model(name, [helper.make_node(op, ["x"], ["y"], **attrs)], x, opset=19 if d != 1 else 13)
    if err:
        check.fail(f"{name}: {err}")
        return
    t = torch.from_numpy(x.astype(np.float64))
    if op == "MaxPool":
        ref = F.max_pool2d(t, k, s, p, dilation=d, ceil_mode=ceil)
    else:
        ref = F.avg_pool2d(t, k, s, p, ceil_mode=ceil, count_include_pad=count_pad)
    ref = ref.numpy()
    if y.shape != ref.shape:
        check.fail(f"{name}: shape {y.shape}, want {ref.shape}")
        return
    e = seamtest.rel_err(y, ref)
    check.expect(e <= 1e-6, f"{name}: error {e:.1e} against torch")


pool_case("maxpool_3s2_ceil", "MaxPool", (2, 3, 27, 31), 3, 2, ceil=True)  # squeezenet's
pool_case("maxpool_3s2p1", "MaxPool", (1, 4, 56, 45), 3, 2, 1)  # resnet's
pool_case("maxpool_2s2", "MaxPool", (1, 2, 17, 16), 2, 2)
pool_case("maxpool_5s1p2", "MaxPool", (1, 2, 13, 40), 5, 1, 2)
pool_case("maxpool_3d2p1", "MaxPool", (1, 2, 20, 23), 3, 1, 1, d=2)
pool_case("maxpool_narrow", "MaxPool", (1, 2, 9, 3), 3, 1, 1)  # no window inside a row
pool_case("avgpool_3s1p1_pad", "AveragePool", (2, 3, 14, 19), 3, 1, 1, count_pad=True)
pool_case("avgpool_3s1p1", "AveragePool", (2, 3, 14, 19), 3, 1, 1)
pool_case("avgpool_3s2_ceil", "AveragePool", (1, 3, 15, 22), 3, 2, 0, ceil=True)
pool_case("avgpool_2s2", "AveragePool", (1, 5, 28, 28), 2, 2)

# ---- whole-plane pools: GlobalMax/AveragePool and windows the size of the plane ----

def whole_pool_case(name, node, shape, ref_fn):
    if not check.selected(name):
        return
    x = rng.randn(*shape).astype(np.float32) + 3  # an offset, so a lost or doubled term shows in the mean
    y, err = run_model(name, [node], x)
    if err:
        check.fail(f"{name}: {err}")
        return
    ref = ref_fn(torch.from_numpy(x.astype(np.float64))).numpy()
    e = seamtest.rel_err(y, ref)
    check.expect(y.shape == ref.shape and e <= 1e-6, f"{name}: error {e:.1e} against torch", f"shape {y.shape}")


for shape in ((2, 5, 7, 7), (1, 3, 13, 11), (1, 4, 1, 1), (3, 2, 1, 9), (1, 2, 64, 64)):
    tag = "x".join(map(str, shape[2:]))
    whole_pool_case(f"global_avg_{tag}", helper.make_node("GlobalAveragePool", ["x"], ["y"]), shape,
                    lambda t: t.mean(dim=(2, 3), keepdim=True))
    whole_pool_case(f"global_max_{tag}", helper.make_node("GlobalMaxPool", ["x"], ["y"]), shape,
                    lambda t: t.amax(dim=(2, 3), keepdim=True))
    whole_pool_case(f"avgpool_whole_{tag}", helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=list(shape[2:])),
                    shape, lambda t: t.mean(dim=(2, 3), keepdim=True))

# ---- binary ops: broadcast axes merged into long rows ----

def binary_case(name, op, sa, sb, fn):
    if not check.selected(name):
        return
    a = rng.randn(*sa).astype(np.float32)
    if op in ("Max", "Min"):  # NaN wins (numpy's maximum and minimum have it so too)
        a.flat[::7] = np.nan
    b = np.asarray(rng.rand(*sb) + 0.5, np.float32)
    node = helper.make_node(op, ["x", "b"], ["y"])
    y, err = run_model(name, [node], a, [helper.make_tensor("b", TensorProto.FLOAT, sb, b.ravel())])
    if err:
        check.fail(f"{name}: {err}")
        return
    ref = fn(a.astype(np.float64), b.astype(np.float64))
    if y.shape != ref.shape:
        check.fail(f"{name}: shape {y.shape}, want {ref.shape}")
        return
    e = seamtest.rel_err(y, ref)
    check.expect(e <= 1e-6, f"{name}: error {e:.1e} against numpy")


BINARY = {  # name: (shape of x, shape of b)
    "same": ((2, 3, 4, 5), (2, 3, 4, 5)),
    "per_channel": ((2, 3, 4, 5), (2, 3, 1, 1)),  # squeeze-excite's scale
    "channel_bias": ((2, 3, 4, 5), (1, 3, 1, 1)),
    "last_axis": ((2, 3, 4, 5), (5,)),
    "scalar": ((2, 3, 4, 5), ()),
    "outer": ((2, 1, 4, 1), (1, 3, 1, 5)),
    "middle": ((2, 3, 4, 5), (3, 4, 1)),
    "ones": ((1, 3, 1, 5), (1, 1, 1, 1)),
    "size1_inner": ((3, 4, 1), (3, 1, 1)),
}
for bname, (sa, sb) in BINARY.items():
    for op, fn in (("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply), ("Div", np.divide),
                   ("Max", np.maximum), ("Min", np.minimum)):
        binary_case(f"{op.lower()}_{bname}", op, sa, sb, fn)

# ---- ConvTranspose 2-D: the product, then col2im row by row ----

def conv_transpose_case(name, xshape, M, k, strides=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1), opad=(0, 0), group=1):
    """ConvTranspose against torch's conv_transpose2d (float64), cropped by
    ONNX's pads: 2x2 stride 2 (U-Net's), overlapping windows, output
    padding, dilation, asymmetric pads, groups, batch 2."""
    if not check.selected(name):
        return
    x = rng.randn(*xshape).astype(np.float32)
    w = (rng.randn(xshape[1], M // group, *k) * 0.3).astype(np.float32)
    b = rng.randn(M).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=list(k), strides=list(strides),
                            pads=list(pads), dilations=list(dil), output_padding=list(opad), group=group)
    y, err = run_model(name, [node], x, [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel()),
                                         helper.make_tensor("b", TensorProto.FLOAT, b.shape, b)])
    if err:
        check.fail(f"{name}: {err}")
        return
    ref = F.conv_transpose2d(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(w.astype(np.float64)),
                             torch.from_numpy(b.astype(np.float64)), stride=strides, output_padding=opad,
                             groups=group, dilation=dil).numpy()
    ref = ref[:, :, pads[0]:ref.shape[2] - pads[2], pads[1]:ref.shape[3] - pads[3]]
    if y.shape != ref.shape:
        check.fail(f"{name}: shape {y.shape}, want {ref.shape}")
        return
    e = seamtest.rel_err(y, ref)
    check.expect(e <= 1e-5, f"{name}: error {e:.1e} against torch")


conv_transpose_case("convt_2x2_s2", (1, 64, 20, 20), 32, (2, 2), strides=(2, 2))
conv_transpose_case("convt_3x3_s2_opad_b2", (2, 8, 7, 9), 6, (3, 3), strides=(2, 2), pads=(1, 0, 1, 2), opad=(1, 1))
conv_transpose_case("convt_dil_s13", (1, 4, 5, 6), 10, (3, 2), strides=(1, 3), pads=(2, 1, 0, 1), dil=(2, 1))
conv_transpose_case("convt_groups", (1, 6, 5, 5), 4, (3, 3), strides=(2, 2), group=2)
conv_transpose_case("convt_4x4_s2_pad", (1, 5, 9, 8), 7, (4, 4), strides=(2, 2), pads=(1, 1, 1, 1))

# ---- Transpose: blocks of 16 x 16 where the output's last axis reads with a stride ----

def transpose_case(name, shape, perm, dtype=np.float32):
    """Transpose against numpy, bit for bit: tensor.c's blocked copy (4-byte
    elements whose output's last axis is strided in the input), and the
    element-by-element copy (other sizes, a last axis read in place)."""
    if not check.selected(name):
        return
    x = (rng.randn(*shape) * 100).astype(dtype)
    onnx_dt = {np.float32: TensorProto.FLOAT, np.int32: TensorProto.INT32, np.int64: TensorProto.INT64,
               np.float16: TensorProto.FLOAT16}[dtype]
    y, err = run_model(name, [helper.make_node("Transpose", ["x"], ["y"], perm=list(perm))], x, dtype=onnx_dt)
    if err:
        check.fail(f"{name}: {err}")
        return
    want = x.transpose(perm)
    check.expect(y.shape == want.shape and y.tobytes() == np.ascontiguousarray(want).tobytes(),
                 f"{name}: numpy's transpose bit for bit")


transpose_case("transpose_heads_120", (48, 16, 64), (1, 2, 0))  # swin_t's
transpose_case("transpose_021_odd", (2, 33, 65), (0, 2, 1))
transpose_case("transpose_201_tail", (5, 7, 300), (2, 0, 1))
transpose_case("transpose_nchw_nhwc", (2, 24, 17, 19), (0, 2, 3, 1))
transpose_case("transpose_nhwc_nchw", (1, 17, 19, 24), (0, 3, 1, 2))
transpose_case("transpose_int32_5d", (3, 4, 5, 6, 7), (4, 2, 0, 3, 1), np.int32)
transpose_case("transpose_last_in_place", (4, 30, 5, 40), (0, 2, 1, 3))
transpose_case("transpose_int64", (30, 50, 7), (2, 1, 0), np.int64)
transpose_case("transpose_size1_axes", (1, 64, 1, 100), (3, 2, 0, 1))

# ---- Pow by one exponent: 2, 3, 1 and 0.5 as products and a square root ----

def pow_case(name, e):
    """x^e for a scalar constant e (elementwise.c's row of products or
    sqrtf) against numpy in float64: within 1e-6 of the largest magnitude,
    and the special values as powf has them (-0 and -inf to the 0.5: +0
    and +inf; a negative base to 0.5: NaN; NaN stays NaN)."""
    if not check.selected(name):
        return
    x = rng.randn(6, 37).astype(np.float32) * 3
    x.flat[:6] = [-0.0, np.inf, -np.inf, np.nan, 0.0, -2.0]
    y, err = run_model(name, [helper.make_node("Pow", ["x", "e"], ["y"])], x,
                       [helper.make_tensor("e", TensorProto.FLOAT, [], [e])])
    if err:
        check.fail(f"{name}: {err}")
        return
    with np.errstate(invalid="ignore", divide="ignore"):
        ref = np.power(x.astype(np.float64), np.float64(e)).astype(np.float32)
    fin = np.isfinite(ref)
    same_special = np.array_equal(np.isnan(y), np.isnan(ref)) and np.array_equal(y[~fin & ~np.isnan(ref)],
                                                                                 ref[~fin & ~np.isnan(ref)])
    zeros = ref == 0
    same_sign = np.array_equal(np.signbit(y[zeros]), np.signbit(ref[zeros]))
    e_fin = seamtest.rel_err(y[fin], ref[fin]) if fin.any() else 0.0
    check.expect(same_special and same_sign and e_fin <= 1e-6,
                 f"{name}: error {e_fin:.1e} against numpy; NaN, infinities and signed zeros as powf",
                 f"specials {same_special}, zero signs {same_sign}")


for e in (2.0, 3.0, 1.0, 0.5, 1.7):
    pow_case(f"pow_scalar_{e:g}", e)

# ---- NonZero: row by row, typed, against numpy ----

def nonzero_case(name, x, dtype):
    """np.nonzero's indices, as int64 [rank, count]: NaN counts (it is not
    0), -0.0 does not; rows that end in zeros after the last element that
    is not (the scan stops when the count is full), all zeros, all set."""
    if not check.selected(name):
        return
    y, err = run_model(name, [helper.make_node("NonZero", ["x"], ["y"])], x, dtype=dtype, out_dtype=TensorProto.INT64)
    if err:
        check.fail(f"{name}: {err}")
        return
    ref = np.array(np.nonzero(x), dtype=np.int64).reshape(max(x.ndim, 1), -1)
    ok = y is not None and y.dtype == np.int64 and y.shape == ref.shape and np.array_equal(y, ref)
    check.expect(ok, f"{name}: {ref.shape[1]} indices as numpy's",
                 f"got {None if y is None else (y.dtype, y.shape)}, want {ref.shape}")


_nz = rng.randn(3, 7, 33).astype(np.float32) * (rng.rand(3, 7, 33) > 0.6)
_nz[0, 0, :5] = [np.nan, -0.0, np.inf, 0.0, -np.inf]
_nz[2, 6, :] = 0  # the last row: zeros after the last element set
nonzero_case("nonzero_f32_rank3", _nz, TensorProto.FLOAT)
nonzero_case("nonzero_bool_rank1", rng.rand(20475) > 0.7, TensorProto.BOOL)
_nzb = rng.rand(20, 30) > 0.5
_nzb[-1, -1] = True  # the very last element set: the count fills exactly there
nonzero_case("nonzero_bool_last_set", _nzb, TensorProto.BOOL)
nonzero_case("nonzero_i64_all_zero", np.zeros((4, 5), np.int64), TensorProto.INT64)
nonzero_case("nonzero_i32_all_set", rng.randint(1, 9, (2, 3, 4, 5)).astype(np.int32), TensorProto.INT32)
nonzero_case("nonzero_u8_rank2", (rng.rand(64, 49) > 0.9).astype(np.uint8) * 7, TensorProto.UINT8)
nonzero_case("nonzero_f64_scattered", rng.randn(5, 9) * (rng.rand(5, 9) > 0.8), TensorProto.DOUBLE)

# ---- LSTM and GRU with the default activations: whole gates vectorized ----

# torch's gate order -> ONNX's: LSTM i, f, g, o -> i, o, f, c; GRU r, z, n -> z, r, h
RNN = {"LSTM": (torch.nn.LSTM, 4, (0, 3, 1, 2), {}),
       "GRU": (torch.nn.GRU, 3, (1, 0, 2), {"linear_before_reset": 1})}  # what torch exports


def rnn_case(name, op, seq, batch, inp, hidden, scale, bidirectional=False):
    """torch.nn.LSTM/GRU's weights reordered into ONNX's gates; scale spreads
    the gates' pre-activations from tiny to saturated, so every branch of
    the vectorized sigmoid and tanh runs."""
    if not check.selected(name):
        return
    ctor, n_gates, order, attrs = RNN[op]
    torch.manual_seed(len(name))
    net = ctor(inp, hidden, bidirectional=bidirectional)
    with torch.no_grad():
        for prm in net.parameters():
            prm.mul_(scale)
    x = (rng.randn(seq, batch, inp) * np.logspace(-4, 1, inp)).astype(np.float32)
    D = 2 if bidirectional else 1

    def onnx_order(t):
        g = t.detach().numpy().reshape(n_gates, hidden, -1)
        return np.concatenate([g[k] for k in order]).reshape(n_gates * hidden, -1)
    sfx = ["", "_reverse"][:D]
    W = np.stack([onnx_order(getattr(net, "weight_ih_l0" + s)) for s in sfx]).astype(np.float32)
    R = np.stack([onnx_order(getattr(net, "weight_hh_l0" + s)) for s in sfx]).astype(np.float32)
    B = np.stack([np.concatenate([onnx_order(getattr(net, "bias_ih_l0" + s)).ravel(),
                                  onnx_order(getattr(net, "bias_hh_l0" + s)).ravel()]) for s in sfx]).astype(np.float32)
    inits = [helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.ravel()) for n, a in (("W", W), ("R", R), ("B", B))]
    node = helper.make_node(op, ["x", "W", "R", "B"], ["y"], hidden_size=hidden,
                            direction="bidirectional" if bidirectional else "forward", **attrs)
    y, err = run_model(name, [node], x, inits)
    if err:
        check.fail(f"{name}: {err}")
        return
    with torch.no_grad():
        ref = net(torch.from_numpy(x))[0].numpy().reshape(seq, batch, D, hidden).transpose(0, 2, 1, 3)
    e = seamtest.rel_err(y, ref)
    check.expect(y.shape == ref.shape and e <= 1e-5, f"{name}: error {e:.1e} against torch.nn.{op}",
                 f"shape {y.shape}, want {ref.shape}")


for op in ("LSTM", "GRU"):
    low = op.lower()
    rnn_case(f"{low}_batch1", op, 9, 1, 24, 40, 1.0)  # the per-step product is a matrix-vector product
    rnn_case(f"{low}_batch3_saturated", op, 7, 3, 16, 33, 3.0)  # odd hidden size
    rnn_case(f"{low}_small_gates", op, 5, 2, 8, 17, 0.01)  # pre-activations near 0: tanh's series
    rnn_case(f"{low}_bidirectional", op, 6, 1, 12, 20, 1.0, bidirectional=True)

check.finish()
