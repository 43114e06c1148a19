"""The CPU backend's int8 convolutions (QLinearConv, ConvInteger) on every
path, against numpy written from the ONNX spec (issue 27, item 3).

usage: /usr/bin/python3 check_qconv.py SEAM WORKDIR [-k PATTERN]

MatMulInteger and QLinearMatMul by a 2-D B (constant or given at run
time) take the same GEMM, A's rows as 1x1 images; their plain path is
OpenBLAS's exact float sums (SEAM_CPU_ICONV=0), and numpy the reference.

Paths (src/backends/cpu/iconv.c, quant.c): the int16 GEMM of AVX-512BW
(vpdpwssd with VNNI) or AVX2 (forced with SEAM_CPU_ICONV=avx2 on a CPU
that has both; each case runs it too), its depthwise 2-D paths (one
input and one output channel per group: blocks of 16 channels through the
float depthwise kernel (its rows for larger planes, its 16-channel lanes
for small ones), or the int32 planes (SEAM_CPU_IDW=planes); the float sums
are exact), its im2col for pointwise convs (AVX2 vectors; the scalar gather
with SEAM_CPU_ICONV_IM2COL=plain), its rows path (at
most 8 rows of A, 1x1 images or output positions of a conv without
groups, each position a row of its window's values: each weight panel
read once for all of them, int32 sums moved into int64 in time, so any
K), and the plain loop
(SEAM_CPU_ICONV=0, and any other K above 32768, where an int32 sum could
overflow).

Each case is a one-node model written with onnx.helper: 1-D, 2-D and 3-D;
strides, dilations, asymmetric pads, auto_pad SAME_UPPER; groups, depthwise
with and without a channel multiplier; output positions and channels that
are not multiples of the kernel's blocks (32 and 8), an odd K; batches
whose blocks of positions span images (a Gemm unit's rows as 1x1 images); uint8 and
int8 inputs and weights; zero points other than 0, per output channel for
the weight; a bias; a batch of 2; the weight given at run time as well as
constant. The reference is numpy: x - x_zp and w - w_zp padded with 0
(the input's zero point), the sums in int64; ConvInteger must equal it,
QLinearConv must equal saturate(round_half_even(sum * x_scale * w_scale /
y_scale) + y_zp) computed in float64, and the plain loop's output bit for
bit. Random data seeded per case.
"""
import os
import subprocess
import sys
import zlib

import numpy as np
from onnx import TensorProto as T
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import seamtest  # noqa: E402

args, run, work, check = seamtest.checker_setup(__doc__, "qconv")

NP = {T.UINT8: np.uint8, T.INT8: np.int8}


def conv_ref(x, w, xz, wz, strides, pads, dil, group):
    """int64 sums of a convolution of x - xz (padded with 0) by w - wz."""
    n_sp = x.ndim - 2
    xi = x.astype(np.int64) - int(xz)
    wz = np.asarray(wz, np.int64).reshape(-1, *([1] * (w.ndim - 1)))
    wi = w.astype(np.int64) - wz
    xp = np.pad(xi, [(0, 0), (0, 0)] + [(pads[d], pads[d + n_sp]) for d in range(n_sp)])
    N, C = x.shape[:2]
    M, Cg = w.shape[:2]
    ks = w.shape[2:]
    out = [(xp.shape[2 + d] - dil[d] * (ks[d] - 1) - 1) // strides[d] + 1 for d in range(n_sp)]
    y = np.zeros((N, M, *out), np.int64)
    Mg = M // group
    for kidx in np.ndindex(*ks):
        sl = tuple(slice(kidx[d] * dil[d], kidx[d] * dil[d] + (out[d] - 1) * strides[d] + 1, strides[d])
                   for d in range(n_sp))
        patch = xp[(slice(None), slice(None)) + sl]  # [N, C, out...]
        for g in range(group):
            xs = patch[:, g * Cg:(g + 1) * Cg]
            ws = wi[(slice(g * Mg, (g + 1) * Mg), slice(None)) + tuple(kidx)]  # [Mg, Cg]
            y[:, g * Mg:(g + 1) * Mg] += np.einsum("nc...,mc->nm...", xs, ws)
    return y


def same_upper_pads(in_sp, ks, strides, dil):
    pads_lo, pads_hi = [], []
    for i, k, s, d in zip(in_sp, ks, strides, dil):
        out = -(-i // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - i, 0)
        pads_lo.append(total // 2)
        pads_hi.append(total - total // 2)
    return pads_lo + pads_hi


# name: (x shape, M, kernel, strides, pads (None: SAME_UPPER), dilations, group, x type, w type,
#        per-channel w zp, bias)
CASES = {
    "2d_3x3_pad": ((1, 16, 14, 14), 24, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, T.UINT8, T.INT8, False, True),
    "2d_3x3_stride2_odd": ((2, 17, 15, 13), 19, (3, 3), (2, 2), (1, 0, 0, 1), (1, 1), 1, T.UINT8, T.INT8, True, True),
    "2d_1x1": ((1, 64, 9, 9), 40, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, T.UINT8, T.INT8, False, True),
    # pointwise, int8 x, an odd channel count, blocks in one image and blocks across two
    "2d_1x1_int8_odd_c": ((2, 33, 10, 7), 20, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, T.INT8, T.INT8, True, True),
    # int8 x, channels in fours, 63 positions (iconv8.c's pointwise im2col: 3 vectors of 16 and a tail of 15)
    "2d_1x1_int8_x": ((1, 32, 7, 9), 24, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, T.INT8, T.INT8, True, True),
    # stride 2 along rows of 16 channels and more (iconv8.c's every-other-byte gather): a 3x3 with int8 x
    # and a 1x1 downsampling, wide enough that 16 positions fall in one row
    "2d_3x3_s2_wide": ((1, 16, 9, 80), 24, (3, 3), (2, 2), (1, 1, 0, 1), (1, 1), 1, T.INT8, T.INT8, True, True),
    "2d_1x1_s2_wide": ((2, 32, 6, 70), 16, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1, T.UINT8, T.INT8, True, True),
    "2d_1x1_grouped": ((1, 12, 12, 12), 18, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 3, T.UINT8, T.INT8, False, True),
    # depthwise planes over 256 output pixels (the float kernel's phase planes), 19 channels: a block of 16 and one of 3
    "2d_depthwise_large_s2": ((1, 19, 41, 38), 19, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 19, T.UINT8, T.INT8, True, True),
    "2d_7x7_s2_int8x": ((1, 3, 33, 33), 16, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 1, T.INT8, T.INT8, False, True),
    "2d_uint8_w": ((1, 8, 10, 10), 12, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, T.UINT8, T.UINT8, True, False),
    "2d_dilated": ((1, 12, 16, 16), 10, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1, T.UINT8, T.INT8, False, True),
    "2d_same_upper": ((1, 8, 11, 9), 8, (4, 3), (2, 2), None, (1, 1), 1, T.UINT8, T.INT8, False, True),
    "2d_grouped": ((1, 32, 12, 12), 48, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4, T.UINT8, T.INT8, True, True),
    # wide rows (the float depthwise kernel's row path): stride 1 and 2, asymmetric pads, dilation; int8
    # x, uint8 weights
    "2d_depthwise_wide": ((1, 5, 9, 70), 5, (3, 3), (1, 1), (2, 0, 1, 3), (1, 1), 5, T.INT8, T.INT8, True, True),
    "2d_depthwise_wide_s2_dil": ((2, 6, 11, 75), 6, (3, 5), (2, 2), (1, 2, 2, 1), (1, 2), 6, T.UINT8, T.UINT8, True,
                                 True),
    "2d_depthwise": ((2, 24, 19, 17), 24, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 24, T.UINT8, T.INT8, True, True),
    "2d_depthwise_s2": ((1, 32, 16, 15), 32, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 32, T.UINT8, T.INT8, False, True),
    "2d_depthwise_5x5_dil": ((1, 8, 20, 20), 8, (5, 5), (1, 2), (4, 3, 2, 4), (2, 1), 8, T.INT8, T.INT8, True, False),
    # small planes (the float kernel's lanes), channels not a multiple of 16
    "2d_depthwise_small": ((2, 20, 5, 6), 20, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 20, T.UINT8, T.INT8, True, True),
    "2d_depthwise_small_7x7_s2_dil": ((1, 13, 9, 10), 13, (3, 5), (2, 1), (2, 3, 1, 2), (2, 1), 13, T.INT8, T.INT8, False, False),
    "2d_channel_multiplier": ((1, 8, 10, 10), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 8, T.UINT8, T.INT8, False, True),
    "1d": ((2, 12, 50), 20, (5,), (2,), (2, 1), (1,), 1, T.UINT8, T.INT8, True, True),
    "3d": ((1, 6, 5, 8, 8), 10, (3, 3, 3), (1, 2, 2), (1, 1, 1, 1, 1, 1), (1, 1, 1), 2, T.UINT8, T.INT8, False, True),
    "batch_1x1_spanning": ((5, 16, 3, 3), 20, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, T.UINT8, T.INT8, True, True),
    "gemm_like_batch70": ((70, 48, 1, 1), 24, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, T.UINT8, T.INT8, True, True),
    "batch_3x3_small": ((3, 8, 5, 5), 12, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, T.INT8, T.INT8, False, True),
    "batch_grouped": ((3, 8, 9, 7), 12, (3, 3), (2, 1), (1, 1, 0, 0), (1, 1), 2, T.UINT8, T.INT8, True, True),
    "k_over_32768": ((1, 4100, 3, 3), 3, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1, T.UINT8, T.INT8, False, True),
    # outputs far past int8's range both ways (int16 would wrap if not clamped first)
    "2d_3x3_saturating_int8_y": ((1, 16, 12, 12), 24, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, T.UINT8, T.INT8, True, True,
                                 "saturate_int8"),
    # a Gemm unit's 1x1 images (each position's channels stored together), int8 y clamped both ways, a partial panel
    "gemm_like_int8_y": ((40, 20, 1, 1), 13, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, T.UINT8, T.INT8, True, True,
                         "saturate_int8"),
    # at most 8 output positions in all (ResNet's last layers at a small input): each position a row of its
    # window's values, the rows path; padding, stride 2 with dilation and a batch of 2 (8 rows), 1-D, 3-D
    "rows_2x2_pad": ((1, 40, 2, 2), 24, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, T.UINT8, T.INT8, True, True),
    "rows_batch2_s2_dil": ((2, 19, 5, 4), 13, (3, 3), (2, 2), (1, 0, 1, 1), (2, 1), 1, T.INT8, T.INT8, False, True),
    "rows_1d_k5": ((1, 33, 7), 17, (5,), (1,), (1, 0), (1,), 1, T.UINT8, T.INT8, True, False),
    "rows_3d": ((1, 6, 3, 3, 3), 10, (3, 3, 3), (2, 2, 2), (1, 1, 1, 1, 1, 1), (1, 1, 1), 1, T.UINT8, T.INT8, False,
                True),
    "rows_saturating_int8_y": ((1, 64, 3, 3), 20, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, T.UINT8, T.INT8, True,
                               True, "saturate_int8"),
    # a Gemm unit of batch 3 with K over 32768: 1x1 images, the rows path
    "gemm_like_rows_k_over_32768": ((3, 33001, 1, 1), 11, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, T.UINT8, T.INT8, True,
                                    True),
}


def weights(rng, shape, wt, pc, fit8):
    """w and its zero point (one per output channel, the leading axis, where
    pc). fit8: every w - w_zp within int8, as a quantizer writes them:
    int8 weights symmetric (zero point 0, the whole range; iconv8.c skips
    its column sums when every zero point is 0) or about a zero point
    within 5 of 0, uint8 weights about 128 or near it; otherwise over their
    whole range, zero points up to 5 from 0 or from 125."""
    M = shape[0]
    if not fit8:
        w = rng.randint(np.iinfo(NP[wt]).min, np.iinfo(NP[wt]).max + 1, size=shape).astype(NP[wt])
        wz = (rng.randint(-5, 6, size=M) if wt == T.INT8 else rng.randint(100, 150, size=M)).astype(NP[wt])
        return w, wz
    if wt == T.INT8:
        wz = rng.randint(-5, 6, size=M) if pc else np.zeros(M, np.int64)
    else:
        wz = rng.randint(120, 136, size=M) if pc else np.full(M, 128)
    span = 128 - int(np.max(np.abs(wz - (0 if wt == T.INT8 else 128)))) if pc else 128
    d = rng.randint(-span, span, size=shape)
    return (d + wz.reshape(-1, *([1] * (len(shape) - 1)))).astype(NP[wt]), wz.astype(NP[wt])


def write_case(name, spec, op, runtime_w, fit8=False):
    xs, M, ks, strides, pads, dil, group, xt, wt, pc, has_b = spec[:11]
    saturate = spec[11:] == ("saturate_int8",)  # int8 y, zero point 9, y_scale 1/1000 of the usual: most outputs clamp
    rng = np.random.RandomState(zlib.crc32((name + (" fit8" if fit8 else "")).encode()))
    C = xs[1]
    x = rng.randint(np.iinfo(NP[xt]).min, np.iinfo(NP[xt]).max + 1, size=xs).astype(NP[xt])
    w, wz = weights(rng, (M, C // group, *ks), wt, pc, fit8)
    xz = np.array(rng.randint(0, 40) if xt == T.UINT8 else rng.randint(-20, 20), NP[xt])
    if not pc:
        wz = wz[:1].reshape(())
    attrs = {"kernel_shape": list(ks), "strides": list(strides), "dilations": list(dil), "group": group}
    if pads is None:
        attrs["auto_pad"] = "SAME_UPPER"
        pads = same_upper_pads(xs[2:], ks, strides, dil)
    else:
        attrs["pads"] = list(pads)
    sums = conv_ref(x, w, xz, wz, strides, pads, dil, group)
    inits = {"x_zero_point": xz, "w_zero_point": wz}
    ins = [seamtest.vi("x", list(xs), xt)]
    if runtime_w:
        ins.append(seamtest.vi("w", list(w.shape), wt))
    else:
        inits["w"] = w
    if op == "ConvInteger":
        node = helper.make_node("ConvInteger", ["x", "w", "x_zero_point", "w_zero_point"], ["y"], **attrs)
        want = sums.astype(np.int32)
        out_t = T.INT32
    else:
        xsc = np.array(0.02, np.float32)
        wsc = (rng.uniform(0.002, 0.01, size=M) if pc else np.array(0.005)).astype(np.float32)
        b = rng.randint(-3000, 3000, size=M).astype(np.int32) if has_b else None
        acc = sums + (b.astype(np.int64).reshape(1, M, *([1] * len(ks))) if has_b else 0)
        # y_scale: the sums' spread maps onto ~200 steps, so outputs are not all saturated
        s = np.float64(xsc) * np.asarray(wsc, np.float64).reshape(1, -1, *([1] * len(ks)))
        ysc = np.array(max(float(np.std(acc * s)) * 6 / 200 / (1000 if saturate else 1), 1e-9), np.float32)
        yz = np.array(9, np.int8) if saturate else np.array(128, np.uint8)
        real = acc * (s / np.float64(ysc))
        lo, hi = (-128, 127) if saturate else (0, 255)
        want = np.clip(np.round(real) + int(yz), lo, hi).astype(yz.dtype)  # np.round: half to even
        inits.update({"x_scale": xsc, "w_scale": wsc, "y_scale": ysc, "y_zero_point": yz})
        names = ["x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point"]
        if has_b:
            inits["B"] = b
            names.append("B")
        node = helper.make_node("QLinearConv", names, ["y"], **attrs)
        out_t = T.INT8 if saturate else T.UINT8
    name += ".fit8" if fit8 else ""
    path = os.path.join(work, f"{name}.{op}{'.rw' if runtime_w else ''}.onnx")
    seamtest.save_model(path, [node], ins, [seamtest.vi("y", list(want.shape), out_t)],
                        seamtest.initializers(inits), opset=13)
    feeds = {"x": x}
    if runtime_w:
        feeds["w"] = w
    files = {}
    for k, v in feeds.items():
        files[k] = os.path.join(work, f"{name}.{k}.npy")
        np.save(files[k], v)
    return path, files, want


# MatMulInteger / QLinearMatMul by a 2-D B on the same GEMM (A's rows as
# 1x1 images): name: (A shape, N, a type, b type, per-column b zp)
MATMULS = {
    "mm_2d": ((100, 257), 40, T.UINT8, T.INT8, True),
    "mm_3d_batch": ((2, 37, 64), 19, T.UINT8, T.INT8, False),
    "mm_int8_a_uint8_b": ((70, 129), 33, T.INT8, T.UINT8, True),
    # a few rows (iconv.c's rows path: up to 8 rows, any K): one, three, eight (a 3-D A)
    "mm_1_row_k_over_32768": ((1, 40001), 10, T.UINT8, T.INT8, True),
    "mm_3_rows": ((3, 1031), 21, T.INT8, T.INT8, False),
    "mm_8_rows_3d": ((2, 4, 777), 17, T.UINT8, T.UINT8, True),
    # every product -255 * 255: an int32 lane overflows unless moved to int64 in time (33 columns:
    # 5 panels, enough for 2 threads without slicing K)
    # (MatMulInteger's int32 output wraps, as numpy's astype does)
    "mm_2_rows_extreme": ((2, 40000), 33, T.UINT8, T.UINT8, False, "extreme"),
}


def write_matmul(name, spec, op, runtime_b, fit8=False):
    ashape, N, at, bt, pc = spec[:5]
    extreme = spec[5:] == ("extreme",)
    rng = np.random.RandomState(zlib.crc32((name + (" fit8" if fit8 else "")).encode()))
    K = ashape[-1]
    a = rng.randint(np.iinfo(NP[at]).min, np.iinfo(NP[at]).max + 1, size=ashape).astype(NP[at])
    bt_, bz = weights(rng, (N, K), bt, pc, fit8)
    b = np.ascontiguousarray(bt_.T)
    az = np.array(rng.randint(0, 30) if at == T.UINT8 else rng.randint(-10, 10), NP[at])
    if extreme:  # (uint8 a and b) a - 0 = 255, b - 255 = -255
        a[:], b[:], az, bz = 255, 0, np.array(0, np.uint8), np.full(N, 255, np.uint8)
    if not pc:
        bz = bz[:1].reshape(())
    sums = (a.astype(np.int64) - int(az)) @ (b.astype(np.int64) - bz.astype(np.int64))
    inits = {"a_zero_point": az, "b_zero_point": bz}
    ins = [seamtest.vi("a", list(ashape), at)]
    if runtime_b:
        ins.append(seamtest.vi("b", [K, N], bt))
    else:
        inits["b"] = b
    if op == "MatMulInteger":
        node = helper.make_node("MatMulInteger", ["a", "b", "a_zero_point", "b_zero_point"], ["y"])
        want, out_t = sums.astype(np.int32), T.INT32
    else:
        asc = np.array(0.02, np.float32)
        bsc = (rng.uniform(0.002, 0.01, size=N) if pc else np.array(0.005)).astype(np.float32)
        s = np.float64(asc) * np.asarray(bsc, np.float64)
        ysc = np.array(max(float(np.std(sums * s)) * 6 / 200, 1e-6), np.float32)
        want = np.clip(np.round(sums * (s / np.float64(ysc))) + 128, 0, 255).astype(np.uint8)
        inits.update({"a_scale": asc, "b_scale": bsc, "y_scale": ysc, "y_zero_point": np.array(128, np.uint8)})
        node = helper.make_node("QLinearMatMul", ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point",
                                                  "y_scale", "y_zero_point"], ["y"])
        out_t = T.UINT8
    name += ".fit8" if fit8 else ""
    path = os.path.join(work, f"{name}.{op}{'.rb' if runtime_b else ''}.onnx")
    seamtest.save_model(path, [node], ins, [seamtest.vi("y", list(want.shape), out_t)], seamtest.initializers(inits),
                        opset=13)
    files = {"a": os.path.join(work, f"{name}.a.npy")}
    np.save(files["a"], a)
    if runtime_b:
        files["b"] = os.path.join(work, f"{name}.b.npy")
        np.save(files["b"], b)
    return path, files, want


HAS_AVX2 = "avx2" in seamtest.cpu_flags()
# iconv8.c's u8 x s8 GEMM (zero points applied after the products): AMX
# tiles by default where the CPU has them, VNNI's vpdpbusd with
# SEAM_CPU_ICONV8=vnni; SEAM_CPU_ICONV8=0 keeps to the int16 GEMM
HAS_VNNI = {"avx512f", "avx512bw", "avx512vl", "avx512_vnni"} <= set(seamtest.cpu_flags())
HAS_AMX = HAS_VNNI and "amx_int8" in seamtest.cpu_flags()


def run_seam(path, files, tag, env=None):
    d = os.path.join(work, tag)
    a = [x for k, f in files.items() for x in ("--input", f"{k}={f}")]
    r = subprocess.run([args.seam, "run", path, *a, "--output-dir", d, "--threads", "2"], capture_output=True,
                       text=True, env=dict(os.environ, **(env or {})), timeout=300)
    if r.returncode:
        return None, r.stderr.strip().splitlines()[-1][:300] if r.stderr.strip() else "(no message)"
    return np.load(seamtest.output_file(d, "y")), None


def compare(case, op, path, files, want):
    tag = case.replace(" ", "_")
    fast, err = run_seam(path, files, tag + ".fast")
    plain, err2 = run_seam(path, files, tag + ".plain", {"SEAM_CPU_ICONV": "0"})
    avx2, err3 = run_seam(path, files, tag + ".avx2", {"SEAM_CPU_ICONV": "avx2"}) if HAS_AVX2 else (None, None)
    other, err4 = run_seam(path, files, tag + ".other", {"SEAM_CPU_IDW": "planes", "SEAM_CPU_ICONV_IM2COL": "plain"})
    i16, err5 = run_seam(path, files, tag + ".i16", {"SEAM_CPU_ICONV8": "0"}) if HAS_VNNI else (None, None)
    vnni, err6 = run_seam(path, files, tag + ".vnni", {"SEAM_CPU_ICONV8": "vnni"}) if HAS_AMX else (None, None)
    if err or err2 or err3 or err4 or err5 or err6:
        return check.fail(f"{case}: seam run failed: {err or err2 or err3 or err4 or err5 or err6}")
    check.expect(np.array_equal(other, plain), f"{case}: the fast path with its other im2col and depthwise paths "
                 "(SEAM_CPU_ICONV_IM2COL=plain, SEAM_CPU_IDW=planes) equals the plain loop bit for bit",
                 seamtest.steps(other, plain))
    if op in ("ConvInteger", "MatMulInteger"):
        check.expect(fast.shape == want.shape and np.array_equal(fast, want), f"{case}: equals numpy's int64 sums",
                     seamtest.steps(fast, want))
    else:
        n, d = seamtest.steps(fast, want)
        check.expect(d <= 1 and n <= max(2, want.size // 1000),
                     f"{case}: within 1 step of numpy (float64 requantization; {n} of {want.size} differ)",
                     f"{n} differ, largest {d}")
    check.expect(np.array_equal(fast, plain), f"{case}: the fast path equals the plain loop bit for bit",
                 seamtest.steps(fast, plain))
    if HAS_AVX2:
        check.expect(np.array_equal(avx2, plain), f"{case}: the AVX2 kernel (SEAM_CPU_ICONV=avx2) equals the plain loop "
                     "bit for bit", seamtest.steps(avx2, plain))
    if HAS_VNNI:
        check.expect(np.array_equal(i16, plain), f"{case}: the int16 GEMM (SEAM_CPU_ICONV8=0) equals the plain loop "
                     "bit for bit", seamtest.steps(i16, plain))
    if HAS_AMX:
        check.expect(np.array_equal(vnni, plain), f"{case}: the u8 x s8 GEMM on VNNI (SEAM_CPU_ICONV8=vnni) equals "
                     "the plain loop bit for bit", seamtest.steps(vnni, plain))


def main():
    for name, spec in MATMULS.items():
        for op in ("QLinearMatMul", "MatMulInteger"):
            for runtime_b, fit8 in ((False, False), (True, False), (False, True), (True, True)):
                case = f"{name} {op}{' runtime weight' if runtime_b else ''}{' int8 weights' if fit8 else ''}"
                if check.selected(case):
                    compare(case, op, *write_matmul(name, spec, op, runtime_b, fit8))
    for name, spec in CASES.items():
        for op in ("QLinearConv", "ConvInteger"):
            for runtime_w, fit8 in ((False, False), (True, False), (False, True), (True, True)):
                if name == "k_over_32768" and runtime_w:
                    continue
                case = f"{name} {op}{' runtime weight' if runtime_w else ''}{' int8 weights' if fit8 else ''}"
                if not check.selected(case):
                    continue
                compare(case, op, *write_case(name, spec, op, runtime_w, fit8))
    check.finish()


if __name__ == "__main__":
    main()
