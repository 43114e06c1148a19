"""The packed GEMM's newer paths through `seam run` (no target), against
float64 references (numpy) and torch.

usage: /usr/bin/python3 check_cpugemm2.py SEAM WORKDIR [-k PATTERN]

1. 1x1 stride-1 unpadded Conv on the packed GEMM reading its input in
   place (gemm.c, cpu_gemm_direct_b; conv.c, packed_pays): few rows and
   a short depth (the sizes that used to go to OpenBLAS), row panels and
   pixel tiles with tails, depth over one 256-deep block, many rows over
   few pixels (B packed after all), groups, batch 2, no bias, each fused
   activation, a weight fed as a graph input (packed on each run: bitwise
   equal to the initializer's run), and a small one left to OpenBLAS;
   a 3-channel 3x3 stride-2 stem on many pixels (packed, im2col into the
   panels); against torch's conv2d in float64.
2. MatMul with a constant 2-D weight on the packed X W (W packed at session
   creation): X of rank 1, 2 and 3 (batches stacked into rows), 1, 2 and
   8+ rows, edge tiles in rows and columns, K of 1, under, at and over one
   256-deep block, fused Relu, Clip and HardSwish; against numpy in
   float64.
3. Gemm: transA and transB, alpha, beta, C as [N], [1, N], [M, 1], [M, N],
   a scalar, and none; beta 0 with a C; against numpy in float64, and
   torch's Linear (transB = 1) with its bias.
(A fed initializer overriding the packed weight: the CLI feeds no
initializer, so tests/python/test_cpugemm2.py checks that.)
4. Everything of 1-3 again with SEAM_CPU_PACKED_GEMM=0 (the OpenBLAS path
   of CPUs without AVX2): still right; on a CPU with AVX-512, again with
   SEAM_CPU_PACKED_GEMM=avx2 (the kernels of CPUs with AVX2 alone): right,
   and bit for bit the AVX-512 kernels' output.
Every model runs with --threads 1 and 2 and must give the same bits.
Error bound: max |seam - ref| <= 2e-6 * sqrt(K) * max |ref| (float32 sums of
K terms).
"""
import os
import zlib
import sys

import numpy as np
import torch
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import vi  # noqa: E402

args, seam, work, check = seamtest.checker_setup(__doc__, "cpugemm2")
rng = np.random.RandomState(11)
NO_PACKED = dict(os.environ, SEAM_CPU_PACKED_GEMM="0")
AVX2_PACKED = dict(os.environ, SEAM_CPU_PACKED_GEMM="avx2")
AVX512 = {"avx512f", "avx512bw", "avx512vl", "avx2", "fma"} <= seamtest.cpu_flags()

ACTS = {
    None: (None, lambda v: v),
    "relu": (lambda i, o: helper.make_node("Relu", [i], [o]), lambda v: np.maximum(v, 0)),
    "clip": (lambda i, o: helper.make_node("Clip", [i, "clip_lo", "clip_hi"], [o]), lambda v: np.clip(v, -0.5, 0.7)),
    "hardswish": (lambda i, o: helper.make_node("HardSwish", [i], [o]),
                  lambda v: v * np.clip(v / 6 + 0.5, 0, 1)),
    "hardsigmoid": (lambda i, o: helper.make_node("HardSigmoid", [i], [o], alpha=0.2, beta=0.5),
                    lambda v: np.clip(0.2 * v + 0.5, 0, 1)),
}


def run(name, nodes, feeds, inits, act, env=None):
    """Runs a model whose main node writes "t" (then act writes "y") on 1
    and 2 threads; (y, None) or (None, why). feeds: {name: array} passed with
    --input (the first is the graph input "x")."""
    nodes = list(nodes)
    inits = dict(inits)
    if act:
        nodes.append(ACTS[act][0]("t", "y"))
        if act == "clip":
            inits["clip_lo"], inits["clip_hi"] = np.float32(-0.5), np.float32(0.7)
    else:
        nodes[-1].output[0] = "y"
    inputs = [vi(k, list(v.shape)) for k, v in feeds.items() if k not in inits]
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, inputs, [vi("y", None)],
                               seamtest.initializers(inits), name=name, opset=14)
    argv = []
    for k, v in feeds.items():
        f = os.path.join(work, f"{name}.{k}.npy")
        np.save(f, v)
        argv += ["--input", f"{k}={f}"]
    outs = []
    for threads in (1, 2):
        d = os.path.join(work, f"{name}.t{threads}")
        r = seam("run", path, *argv, "--threads", threads, "--output-dir", d, "--quiet", env=env)
        if r.returncode:
            return None, f"seam run --threads {threads} failed: {r.stderr.strip()}"
        outs.append(np.load(os.path.join(d, "y.npy")))
    if outs[0].tobytes() != outs[1].tobytes():
        return None, "--threads 1 and --threads 2 differ"
    return outs[0], None


def compare(name, y, err, ref, k):
    if y is None:
        check.fail(f"{name}: {err}")
        return
    if y.shape != ref.shape:
        check.fail(f"{name}: shape {y.shape}, want {ref.shape}")
        return
    e = seamtest.rel_err(y, ref)
    check.expect(e <= 2e-6 * np.sqrt(max(k, 1)), name, f"relative error {e:.3g}")


def both(name, fn):
    """fn(env) -> (y, err, ref, k): with the packed GEMM and without it;
    on a CPU with AVX-512 also with its AVX2 kernels, which must give the
    AVX-512 kernels' bits (the same FMA chains)."""
    got = {}
    for suffix, env in (("", None), (".openblas", NO_PACKED)) + ((".avx2", AVX2_PACKED),) * AVX512:
        if check.selected(name + suffix):
            rng.seed(zlib.crc32(name.encode()))  # every variant of a case on the same data
            res = fn(name + suffix, env)
            compare(name + suffix, *res)
            got[suffix] = res[0]
    if AVX512 and got.get("") is not None and got.get(".avx2") is not None:
        a, b = got[""], got[".avx2"]
        check.expect(a.shape == b.shape and np.array_equal(a, b), f"{name}.avx2: the AVX-512 kernels' bits",
                     f"{int(np.sum(a != b)) if a.shape == b.shape else 'shape'} elements differ")


# ---- 1. 1x1 convs ----

def conv_case(name, xshape, wshape, group=1, bias=True, act=None, weight="init", strides=(1, 1), pads=(0, 0, 0, 0)):
    def fn(nm, env):
        x = rng.randn(*xshape).astype(np.float32)
        w = (rng.randn(*wshape) / np.sqrt(wshape[1])).astype(np.float32)
        b = rng.randn(wshape[0]).astype(np.float32) if bias else None
        ins = ["x", "w"] + (["b"] if bias else [])
        node = helper.make_node("Conv", ins, ["t"], group=group, strides=list(strides), pads=list(pads))
        inits = {"b": b} if bias else {}
        feeds = {"x": x}
        if weight == "init":
            inits["w"] = w
        else:
            feeds["w"] = w
        y, err = run(nm, [node], feeds, inits, act, env)
        if y is not None and weight == "input":  # bitwise equal to the same conv with w an initializer
            inits["w"] = w
            y2, err2 = run(nm + ".init", [node], {"x": x}, inits, act, env)
            if y2 is None or y2.tobytes() != y.tobytes():
                y, err = None, err2 or "a graph-input weight gives other bits than the initializer"
        ref = torch.nn.functional.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(),
                                         torch.from_numpy(b).double() if bias else None, groups=group,
                                         stride=strides, padding=(pads[0], pads[1])).numpy()
        return y, err, ACTS[act][1](ref), wshape[1]
    both(name, fn)


conv_case("conv1x1_stem16", (1, 16, 56, 56), (16, 16, 1, 1), act="relu")
conv_case("conv1x1_short_depth", (1, 24, 28, 28), (72, 24, 1, 1), act="hardswish")
conv_case("conv1x1_tails", (1, 37, 13, 41), (29, 37, 1, 1), act="clip")
conv_case("conv1x1_rows_tail", (1, 40, 17, 19), (97, 40, 1, 1), act="hardsigmoid")
conv_case("conv1x1_deep", (1, 300, 9, 23), (45, 300, 1, 1))
conv_case("conv1x1_many_rows_few_pixels", (1, 200, 7, 7), (300, 200, 1, 1), act="relu")
conv_case("conv1x1_group2", (2, 80, 14, 14), (240, 40, 1, 1), group=2)
conv_case("conv1x1_no_bias_batch2", (2, 64, 15, 15), (70, 64, 1, 1), bias=False, act="hardswish")
conv_case("conv1x1_weight_input", (1, 48, 20, 30), (40, 48, 1, 1), weight="input", act="relu")
conv_case("conv1x1_left_to_openblas", (1, 128, 7, 7), (32, 128, 1, 1))
# a 3-channel stem on many pixels: im2col into the packed panels (packed_pays)
conv_case("stem3x3_s2", (1, 3, 150, 122), (16, 3, 3, 3), strides=(2, 2), pads=(1, 1, 1, 1), act="hardswish")


# ---- 2. MatMul with a constant weight ----

def matmul_case(name, xshape, K, N, act=None):
    def fn(nm, env):
        x = rng.randn(*xshape).astype(np.float32)
        w = (rng.randn(K, N) / np.sqrt(max(K, 1))).astype(np.float32)
        y, err = run(nm, [helper.make_node("MatMul", ["x", "w"], ["t"])], {"x": x}, {"w": w}, act, env)
        return y, err, ACTS[act][1](x.astype(np.float64) @ w.astype(np.float64)), K
    both(name, fn)


matmul_case("matmul_rows64", (64, 256), 256, 256, act="relu")
matmul_case("matmul_tails", (13, 257), 257, 131, act="clip")
matmul_case("matmul_batch3d", (2, 33, 100), 100, 200, act="hardswish")
matmul_case("matmul_k1", (20, 1), 1, 70)
matmul_case("matmul_depth600", (9, 600), 600, 96)
matmul_case("matmul_vector", (1100,), 1100, 1000)
matmul_case("matmul_rows2_wide", (2, 1024), 1024, 1100, act="relu")
matmul_case("matmul_rows150", (150, 64), 64, 300)
matmul_case("matmul_narrow_left_to_openblas", (64, 256), 256, 10)
# the packed-weight path inside the models: fewer than 8 rows, a weight of
# at least 2^20 elements (xw_pays), with edge tiles and every epilogue
matmul_case("matmul_gemv_tails", (5, 1031), 1031, 1100, act="clip")
matmul_case("matmul_gemv_batch3d", (1, 3, 1100), 1100, 1000, act="hardswish")


# ---- 3. Gemm ----

def gemm_case(name, M, K, N, ta=0, tb=1, alpha=1.0, beta=1.0, cshape="n", act=None):
    def fn(nm, env):
        a = rng.randn(*((K, M) if ta else (M, K))).astype(np.float32)
        b = (rng.randn(*((N, K) if tb else (K, N))) / np.sqrt(max(K, 1))).astype(np.float32)
        c = None if cshape is None else np.asarray(rng.randn(*{"n": (N,), "1n": (1, N), "m1": (M, 1), "mn": (M, N),
                                                               "scalar": (), "1": (1,)}[cshape]), np.float32)
        node = helper.make_node("Gemm", ["x", "w"] + (["c"] if c is not None else []), ["t"], transA=ta, transB=tb,
                                alpha=alpha, beta=beta)
        inits = {"w": b}
        if c is not None:
            inits["c"] = c
        y, err = run(nm, [node], {"x": a}, inits, act, env)
        A = a.astype(np.float64).T if ta else a.astype(np.float64)
        B = b.astype(np.float64).T if tb else b.astype(np.float64)
        ref = alpha * (A @ B) + (beta * c.astype(np.float64) if c is not None else 0)
        return y, err, ACTS[act][1](ref), K
    both(name, fn)


gemm_case("gemm_linear", 64, 1024, 512, act="relu")
gemm_case("gemm_transA", 30, 77, 200, ta=1, tb=0, cshape="1n")
gemm_case("gemm_transAB_alpha", 17, 300, 65, ta=1, tb=1, alpha=0.5, beta=2.0, cshape="mn", act="hardswish")
gemm_case("gemm_c_column", 40, 64, 100, tb=0, cshape="m1", beta=-1.5)
gemm_case("gemm_c_scalar", 8, 256, 64, cshape="scalar", alpha=3.0, act="clip")
gemm_case("gemm_c_one", 8, 255, 129, cshape="1")
gemm_case("gemm_no_c", 12, 513, 96, cshape=None)
gemm_case("gemm_beta0", 12, 64, 96, beta=0.0, cshape="mn")
gemm_case("gemm_classifier", 1, 1280, 1000)
gemm_case("gemm_rows_over_rule", 200, 128, 128)
gemm_case("gemm_gemv_transA", 5, 1031, 1024, ta=1, tb=0, cshape="1n")
gemm_case("gemm_gemv_transAB_alpha", 7, 1100, 965, ta=1, tb=1, alpha=0.5, beta=2.0, cshape="mn", act="hardswish")
gemm_case("gemm_gemv_c_column", 4, 1024, 1030, tb=0, cshape="m1", beta=-1.5)
gemm_case("gemm_gemv_c_scalar", 2, 1024, 1024, cshape="scalar", alpha=3.0, act="clip")
gemm_case("gemm_gemv_c_one", 1, 1025, 1029, cshape="1")
gemm_case("gemm_gemv_no_c", 3, 1280, 1000, cshape=None)

# torch's Linear (Gemm transB = 1 with its bias as C)
if check.selected("gemm_torch_linear"):
    lin = torch.nn.Linear(384, 300)
    x = rng.randn(48, 384).astype(np.float32)
    W, bias = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    y, err = run("gemm_torch_linear", [helper.make_node("Gemm", ["x", "w", "c"], ["t"], transB=1)], {"x": x},
                 {"w": W, "c": bias}, None)
    with torch.no_grad():
        ref = lin.double()(torch.from_numpy(x).double()).numpy()
    compare("gemm_torch_linear", y, err, ref, 384)


check.finish()
