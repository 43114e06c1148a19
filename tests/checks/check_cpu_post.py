"""The CPU kernels of detectors' and rankers' post-processing and of the
1-D audio nets, on their fast paths and next to the general ones:
TopK, PRelu and NonMaxSuppression (issue 31's cliffs).

usage: /usr/bin/python3 check_cpu_post.py SEAM WORKDIR [-k PATTERN]

1. TopK (index.c): float32 rows sort 64-bit keys (the value's bits in
   order, then the index); other types go through the comparator. Against
   numpy's lexsort written from the spec: largest or smallest, NaN ranked
   as the largest value, -0 equal to +0, ties to the lower index; the whole
   row (k = the axis), a small k (the heap), an inner axis, NaN, +-0,
   +-inf and ties, k = 0; and the same data as float64 (the comparator
   path), which must give the same indices.
2. PRelu (activation.c): float32 with a slope that is one value, one per
   channel ([C,1,1], and the [C] of old exporters), one per element of the
   last axis, or X's whole shape runs as one vectorized loop; other slopes
   (a 1 between two runs, a slope that widens X) and float64 go the general
   way. Against numpy.where(x < 0, x * slope, x), bitwise, with NaN, +-0
   and +-inf in X. On dnnl, one constant slope is a relu with alpha (read
   from the compile log: an eltwise, or a convolution's post-op when a Conv
   comes before it), a per-channel slope oneDNN's prelu.
3. NonMaxSuppression (index.c): classes in parallel, kept boxes in columns
   checked in branch-free blocks, or in a grid of cells when the boxes are
   spread out (torchvision's batched_nms moves each class's boxes apart:
   the offsets cases). Against a brute-force numpy
   implementation of the spec and against ONNX Runtime (bench/ort's
   onnxruntime-node, when installed): the same rows in the same order;
   corner and center boxes, flipped corners, boxes without area, NaN
   scores with a score threshold, max_output_boxes_per_class above N, float64.
4. Conv with 1 or 3 spatial axes (audio, video) on the packed GEMM and the
   blocked im2col (conv.c, gemm.c: the 2-D paths' im2col rows over the
   last axis): padded, strided, dilated, asymmetric, grouped, 1x1, a fused
   Relu, a weight given at run time, against torch.
5. Broadcast Add/Sub/Mul/Div that oneDNN has only its reference kernel
   for, on dnnl: seam's host loop (the compile log names it), against
   numpy exactly. Reductions over axes of size 1 only on dnnl (nothing to reduce, which
   oneDNN refuses: a copy), against numpy.
6. Detections that may be none (Greater -> NonZero -> Gather, then Div
   Clip, MatMul and a broadcast Sub on dnnl at shapes known at run time,
   which oneDNN's MatMul and binary die on when empty): no box, one, many;
   against numpy on the CPU and on dnnl (an empty shape runs on the CPU);
   and an input declared empty, which dnnl refuses.
7. Comparisons (elementwise.c): float32 rows into bool bytes, each
   broadcast form, and float64 the general way, with ties, NaN, +-0 and
   +-inf, against numpy exactly.
Every model runs with --threads 1 and 2: the outputs must be bitwise equal.
"""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import seamtest  # noqa: E402
from seamtest import vi  # noqa: E402

args, seam, work, check = seamtest.checker_setup(__doc__, "cpu_post")
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
ORT_DIR = os.environ.get("SEAM_ORT_DIR") or os.path.join(ROOT, "bench", "ort")
rng = np.random.RandomState(31)
TT = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64}


def write(name, nodes, feeds, outputs, inits=(), opset=14):
    ins = [vi(n, a.shape, TT[a.dtype.type]) for n, a in feeds.items()]
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, ins,
                               [vi(n, None, dt) for n, dt in outputs], inits, name=name, opset=opset)
    files = {}
    for n, a in feeds.items():
        files[n] = os.path.join(work, f"{name}.{n}.npy")
        np.save(files[n], a)
    return path, files


def in_args(files):
    out = []
    for n, f in files.items():
        out += ["--input", f"{n}={f}"]
    return out


def run_model(name, nodes, feeds, outputs, inits=(), extra=(), opset=14):
    """Runs on 1 and 2 threads: (list of arrays, None) or (None, why)."""
    path, files = write(name, nodes, feeds, outputs, inits, opset=opset)
    got = []
    for threads in (1, 2):
        d = os.path.join(work, f"{name}.t{threads}")
        shutil.rmtree(d, ignore_errors=True)
        r = seam("run", path, *in_args(files), "--threads", threads, "--output-dir", d, "--quiet", *extra)
        if r.returncode:
            return None, f"seam run --threads {threads} {' '.join(extra)} failed: {r.stderr.strip()[-300:]}"
        got.append([np.load(seamtest.output_file(d, n)) for n, _ in outputs])
    if any(a.tobytes() != b.tobytes() for a, b in zip(*got)):
        return None, "--threads 1 and --threads 2 differ"
    return got[0], None


same_bits = seamtest.same_bits  # shape, dtype, values, NaN positions and signs


# ---- TopK ----

def topk_reference(x, k, axis, largest):
    """Values and indices as the spec orders them, from numpy's lexsort."""
    xm = np.moveaxis(x, axis, -1)
    rows = xm.reshape(-1, xm.shape[-1]).astype(np.float64)
    idx = np.arange(rows.shape[1])
    order = np.empty((rows.shape[0], k), np.int64)
    for r, v in enumerate(rows):
        nan = np.isnan(v)
        val = np.where(nan, 0.0, v)
        if largest:  # NaN first, then larger values; ties by index
            o = np.lexsort((idx, -val, ~nan))
        else:        # smaller values, NaN last
            o = np.lexsort((idx, val, nan))
        order[r] = o[:k]
    ind = order.reshape(xm.shape[:-1] + (k,))
    val = np.take_along_axis(xm, ind, axis=-1)
    return np.moveaxis(val, -1, axis), np.moveaxis(ind, -1, axis)


def topk_case(name, x, k, axis=-1, largest=1):
    if not check.selected(name):
        return
    nodes = [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)]
    inits = [numpy_helper.from_array(np.array([k], np.int64), "k")]
    want_v, want_i = topk_reference(x, k, axis, largest)
    got, why = run_model(name, nodes, {"x": x}, [("v", TT[x.dtype.type]), ("i", TensorProto.INT64)], inits)
    if why:
        return check.fail(f"{name}: {why}")
    ok = same_bits(got[0], want_v) and np.array_equal(got[1], want_i)
    check.expect(ok, f"{name}: {x.dtype}{list(x.shape)} k={k} axis={axis} largest={largest}: "
                     "values and indices equal to the spec's order", detail=None if ok else
                 f"first index difference at {np.argwhere(got[1] != want_i)[:3].tolist() if got[1].shape == want_i.shape else got[1].shape}")
    if x.dtype == np.float32:  # the comparator path on the same numbers
        got64, why = run_model(name + "_f64", nodes, {"x": x.astype(np.float64)},
                               [("v", TensorProto.DOUBLE), ("i", TensorProto.INT64)], inits)
        check.expect(not why and np.array_equal(got64[1], got[1]),
                     f"{name}: float64 (the comparator path) gives the same indices", detail=why)


def special_values(shape):
    """Ties, NaN, +-0 and +-inf among small integers."""
    x = rng.randint(-4, 5, size=shape).astype(np.float32)
    flat = x.reshape(-1)
    for v, frac in ((np.nan, 0.05), (-0.0, 0.1), (np.inf, 0.02), (-np.inf, 0.02)):
        at = rng.rand(flat.size) < frac
        flat[at] = v
    return x


topk_case("topk_mlp_row_sort", rng.randn(32, 4096).astype(np.float32), 4096)
topk_case("topk_small_k_largest", rng.randn(16, 5000).astype(np.float32), 7)
topk_case("topk_small_k_smallest", rng.randn(16, 5000).astype(np.float32), 7, largest=0)
topk_case("topk_inner_axis", rng.randn(300, 5, 3).astype(np.float32), 20, axis=0)
topk_case("topk_special_all", special_values((8, 257)), 257)
topk_case("topk_special_all_smallest", special_values((8, 257)), 257, largest=0)
topk_case("topk_special_heap", special_values((6, 900)), 13)
topk_case("topk_special_heap_smallest", special_values((6, 900)), 13, largest=0)
topk_case("topk_k0", rng.randn(4, 50).astype(np.float32), 0)


# ---- PRelu ----

def prelu_x(shape):
    x = rng.randn(*shape).astype(np.float32)
    flat = x.reshape(-1)
    for v in (np.nan, -0.0, 0.0, np.inf, -np.inf):
        flat[rng.randint(flat.size)] = v
    return x


def prelu_case(name, x, slope, dnnl=None):
    """dnnl: None (CPU only), 'eltwise' or 'prelu': also on dnnl, and the
    primitive its compile log must name."""
    if not check.selected(name):
        return
    # (the [C] slope of old exporters is per channel: numpy's view is [C, 1, ...])
    per_channel = slope.ndim == 1 and x.ndim > 2 and slope.shape[0] == x.shape[1] and slope.shape[0] != x.shape[-1]
    ref = slope.reshape((-1,) + (1,) * (x.ndim - 2)) if per_channel else slope
    want = np.where(x < 0, x * ref, x).astype(x.dtype)
    nodes = [helper.make_node("PRelu", ["x", "s"], ["y"])]
    inits = [numpy_helper.from_array(slope, "s")]
    got, why = run_model(name, nodes, {"x": x}, [("y", TT[x.dtype.type])], inits)
    if why:
        return check.fail(f"{name}: {why}")
    check.expect(same_bits(got[0], want), f"{name}: X {x.dtype}{list(x.shape)}, slope {list(slope.shape)}: "
                 "equal to numpy.where(x < 0, x * slope, x), bitwise")
    if dnnl:
        path, files = write(name, nodes, {"x": x}, [("y", TT[x.dtype.type])], inits)
        d = os.path.join(work, name + ".dnnl")
        shutil.rmtree(d, ignore_errors=True)
        r = seam("run", path, *in_args(files), "--target", "dnnl", "--placement", "capability", "--compile-log",
                 "--output-dir", d)
        if r.returncode:
            return check.fail(f"{name}: dnnl: {r.stderr.strip()[-300:]}")
        y = np.load(seamtest.output_file(d, "y"))
        e = seamtest.abs_err(y, want)  # inf for a NaN or infinity not where numpy has it
        check.expect(e <= 1e-6, f"{name}: dnnl within 1e-6 ({e:.1e})")
        prims = re.findall(r"\(PRelu\): (\w+) ", r.stderr)
        check.expect(prims == [dnnl], f"{name}: dnnl runs it as oneDNN's {dnnl}", detail=f"compile log: {prims}")


prelu_case("prelu_one_slope", prelu_x((2, 64, 3000)), np.array([0.25], np.float32), dnnl="eltwise")
prelu_case("prelu_one_slope_rank0", prelu_x((3, 1000)), np.array(-0.5, np.float32))
prelu_case("prelu_per_channel", prelu_x((2, 48, 20, 33)), rng.rand(48, 1, 1).astype(np.float32), dnnl="prelu")
prelu_case("prelu_per_channel_old_exporter", prelu_x((2, 16, 9, 9)), rng.rand(16).astype(np.float32))
prelu_case("prelu_per_channel_1d", prelu_x((1, 64, 4000)), rng.rand(1, 64, 1).astype(np.float32))
prelu_case("prelu_last_axis", prelu_x((7, 5, 300)), rng.randn(300).astype(np.float32))
prelu_case("prelu_full_shape", prelu_x((4, 50)), rng.randn(4, 50).astype(np.float32))
prelu_case("prelu_two_runs_general", prelu_x((2, 8, 3, 40)), rng.randn(8, 1, 40).astype(np.float32))
prelu_case("prelu_float64_general", prelu_x((2, 16, 30)).astype(np.float64), rng.rand(16, 1).astype(np.float64))


def prelu_conv_case(name):
    """Conv1d then one-slope PRelu: on dnnl, the PRelu is the convolution's
    post-op (relu with alpha); against torch."""
    if not check.selected(name):
        return
    x = rng.randn(1, 32, 500).astype(np.float32)
    w = (rng.randn(32, 32, 3) / np.sqrt(96)).astype(np.float32)
    slope = np.array([0.2], np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1]), helper.make_node("PRelu", ["c", "s"], ["y"])]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(slope, "s")]
    with torch.no_grad():
        want = torch.nn.functional.prelu(torch.nn.functional.conv1d(torch.from_numpy(x), torch.from_numpy(w), padding=1),
                                         torch.from_numpy(slope)).numpy()
    path, files = write(name, nodes, {"x": x}, [("y", TensorProto.FLOAT)], inits)
    d = os.path.join(work, name + ".dnnl")
    shutil.rmtree(d, ignore_errors=True)
    r = seam("run", path, *in_args(files), "--target", "dnnl", "--placement", "capability", "--compile-log",
             "--output-dir", d)
    if r.returncode:
        return check.fail(f"{name}: {r.stderr.strip()[-300:]}")
    e = seamtest.rel_err(np.load(seamtest.output_file(d, "y")), want)
    check.expect(e <= 1e-5, f"{name}: dnnl against torch: {e:.1e}")
    check.expect(re.search(r"post-ops eltwise_relu; fuses '[^']*' \(PRelu\)", r.stderr) is not None,
                 f"{name}: the PRelu is the convolution's relu post-op", detail=r.stderr[-500:])


prelu_conv_case("prelu_after_conv_dnnl")


# ---- NonMaxSuppression ----

def nms_reference(boxes, scores, max_out, iou_t, score_t, center):
    """The spec's NonMaxSuppression, brute force: rows (b, c, i)."""
    B, C, N = scores.shape
    rows = []
    for b in range(B):
        bx = boxes[b].astype(np.float64)
        if center:
            xc, yc, w, h = bx[:, 0], bx[:, 1], bx[:, 2], bx[:, 3]
            y1, x1, y2, x2 = yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2
        else:
            y1, x1, y2, x2 = bx[:, 0], bx[:, 1], bx[:, 2], bx[:, 3]
        ya, yb = np.fmin(y1, y2), np.fmax(y1, y2)
        xa, xb = np.fmin(x1, x2), np.fmax(x1, x2)
        area = (yb - ya) * (xb - xa)
        for c in range(C):
            s = scores[b, c].astype(np.float64)
            cand = [i for i in range(N) if not np.isnan(s[i]) and (score_t is None or s[i] > score_t)]
            cand.sort(key=lambda i: (-s[i], i))
            kept = []
            for i in cand:
                if len(kept) >= max_out:
                    break
                if kept:
                    k = np.array(kept)
                    ih = np.fmin(yb[i], yb[k]) - np.fmax(ya[i], ya[k])
                    iw = np.fmin(xb[i], xb[k]) - np.fmax(xa[i], xa[k])
                    inter = ih * iw
                    with np.errstate(invalid="ignore", divide="ignore"):
                        iou = inter / (area[i] + area[k] - inter)
                    hit = (ih > 0) & (iw > 0) & (area[i] > 0) & (area[k] > 0) & (iou > iou_t)
                    if hit.any():
                        continue
                kept.append(i)
                rows.append((b, c, i))
    return np.array(rows, np.int64).reshape(-1, 3)


def ort_outputs(path, files, out_dir):
    if not shutil.which("node") or not os.path.isdir(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node")):
        return None, "ONNX Runtime is not installed (scripts/setup.sh installs it in bench/ort)"
    cmd = ["node", os.path.join(HERE, "ort_outputs.js"), ORT_DIR, path, out_dir, "--threads", "2"]
    for n, f in files.items():
        cmd += ["--input", f"{n}={f}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode:
        return None, f"ONNX Runtime failed: {r.stderr.strip()[-300:]}"
    return np.load(os.path.join(out_dir, "sel.npy")), None


def nms_boxes(B, N, center, dtype):
    """Boxes in clusters (so that many overlap), some flipped, some without area."""
    ctr = rng.rand(B, N // 20 + 1, 2) * 100
    pick = rng.randint(ctr.shape[1], size=(B, N))
    c = np.take_along_axis(ctr, pick[..., None].repeat(2, -1), axis=1) + rng.randn(B, N, 2) * 3
    wh = rng.rand(B, N, 2) * 20 + 1
    wh[rng.rand(B, N) < 0.03] = 0  # no area
    if center:
        bx = np.concatenate([c[..., ::-1], wh[..., ::-1]], axis=-1)  # [xc, yc, w, h]
    else:
        bx = np.concatenate([c - wh / 2, c + wh / 2], axis=-1)  # [y1, x1, y2, x2]
        flip = rng.rand(B, N) < 0.2
        bx[flip] = bx[flip][:, [2, 3, 0, 1]]
    return bx.astype(dtype)


def nms_case(name, B, C, N, max_out, iou_t=0.5, score_t=0.05, center=0, dtype=np.float32, offsets=0):
    """offsets: boxes in that many groups moved 1000 apart, as
    torchvision's batched_nms moves each class's boxes (the grid path)."""
    if not check.selected(name):
        return
    boxes = nms_boxes(B, N, center, dtype)
    if offsets:
        boxes = (boxes + (rng.randint(offsets, size=(B, N, 1)) * 1000).astype(dtype)).astype(dtype)
    scores = rng.rand(B, C, N).astype(dtype)
    if score_t is not None:  # (without a threshold ONNX Runtime keeps NaN scores, which the spec leaves open)
        scores[rng.rand(B, C, N) < 0.01] = np.nan
    scores[rng.rand(B, C, N) < 0.2] = 0.5  # ties
    inits = [numpy_helper.from_array(np.array([max_out], np.int64), "max"),
             numpy_helper.from_array(np.array([iou_t], np.float32), "iou")]
    ins = ["boxes", "scores", "max", "iou"]
    if score_t is not None:
        inits.append(numpy_helper.from_array(np.array([score_t], np.float32), "st"))
        ins.append("st")
    nodes = [helper.make_node("NonMaxSuppression", ins, ["sel"], center_point_box=center)]
    want = nms_reference(boxes, scores, min(max_out, N), iou_t, score_t, center)
    got, why = run_model(name, nodes, {"boxes": boxes, "scores": scores}, [("sel", TensorProto.INT64)], inits)
    if why:
        return check.fail(f"{name}: {why}")
    check.expect(np.array_equal(got[0], want), f"{name}: B={B} C={C} N={N}: {len(want)} rows equal to the "
                 "spec's brute force, in order", detail=f"got {got[0].shape}, want {want.shape}")
    if dtype == np.float32:
        path, files = write(name, nodes, {"boxes": boxes, "scores": scores}, [("sel", TensorProto.INT64)], inits)
        ort, why = ort_outputs(path, files, os.path.join(work, name + ".ort"))
        if why:
            print(f"  note: {name}: not compared with ONNX Runtime: {why}")
        else:
            check.expect(np.array_equal(got[0], ort), f"{name}: equal to ONNX Runtime's rows",
                         detail=f"ORT {ort.shape}")


nms_case("nms_corners_classes", 2, 3, 2000, 10000)
nms_case("nms_center", 1, 2, 1500, 300, center=1)
nms_case("nms_one_class_many", 1, 1, 6000, 2 ** 62, iou_t=0.45, score_t=None)
nms_case("nms_float64", 2, 2, 700, 50, dtype=np.float64)
nms_case("nms_batched_offsets", 1, 2, 8000, 2 ** 40, iou_t=0.5, score_t=0.01, offsets=40)
nms_case("nms_batched_offsets_center", 1, 1, 3000, 2000, iou_t=0.3, score_t=None, offsets=25, center=1)



def empty_detections_case(name):
    """Boxes whose score passes a threshold (Greater -> NonZero -> Gather),
    scaled and clipped (Div, Clip: dnnl takes them, at shapes known only at
    run time): with none passing, the values are empty; a dynamic dnnl
    subgraph then runs that shape on the CPU (oneDNN's kernels divide by
    zero on empty tensors: SIGFPE). Against numpy, on the CPU and on dnnl,
    with no box, one and many passing."""
    if not check.selected(name):
        return
    nodes = [helper.make_node("Greater", ["scores", "thr"], ["keep"]),
             helper.make_node("NonZero", ["keep"], ["nz"]),
             helper.make_node("Squeeze", ["nz", "ax0"], ["idx"]),
             helper.make_node("Gather", ["boxes", "idx"], ["sel"], axis=0),
             helper.make_node("Div", ["sel", "size"], ["scaled"]),
             helper.make_node("Clip", ["scaled", "lo", "hi"], ["clipped"]),
             helper.make_node("Mul", ["clipped", "size"], ["y"]),
             helper.make_node("MatMul", ["sel", "w"], ["y2"]),
             helper.make_node("Slice", ["sel", "c0", "c1", "c1"], ["col0"]),
             helper.make_node("Sub", ["sel", "col0"], ["y3"])]
    w = (rng.randn(4, 8) / 2).astype(np.float32)
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "thr"),
             numpy_helper.from_array(np.array([0], np.int64), "ax0"),
             numpy_helper.from_array(np.array([320, 320, 320, 320], np.float32), "size"),
             numpy_helper.from_array(np.array(0, np.float32), "lo"),
             numpy_helper.from_array(np.array(1, np.float32), "hi"), numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(np.array([0], np.int64), "c0"), numpy_helper.from_array(np.array([1], np.int64), "c1")]
    N = 500
    boxes = (rng.rand(N, 4) * 400 - 40).astype(np.float32)
    for label, scores in (("none", np.zeros(N, np.float32)), ("one", np.eye(1, N, 7, dtype=np.float32).reshape(-1)),
                          ("many", rng.rand(N).astype(np.float32))):
        sel = boxes[scores > 0.5]
        want = [(np.clip(sel / 320, 0, 1) * 320).astype(np.float32), sel @ w, sel - sel[:, :1]]
        for extra in ((), ("--target", "dnnl", "--placement", "capability")):
            got, why = run_model(f"{name}_{label}", nodes, {"boxes": boxes, "scores": scores},
                                 [(y, TensorProto.FLOAT) for y in ("y", "y2", "y3")], inits, extra=extra)
            where = "dnnl" if extra else "cpu"
            if why:
                check.fail(f"{name}: {label} passing, {where}: {why}")
                continue
            ok = all(g.shape == r.shape and np.allclose(g, r, rtol=1e-5, atol=1e-4) for g, r in zip(got, want))
            check.expect(ok, f"{name}: {label} passing ({len(sel)} boxes), {where}: Div, Clip, MatMul and a "
                         "broadcast Sub equal to numpy", detail=f"shapes {[g.shape for g in got]}")


def empty_static_case(name):
    """An input declared [0, 4]: dnnl refuses the empty MatMul and Sub
    (placement keeps them on the CPU) instead of compiling them."""
    if not check.selected(name):
        return
    w = rng.randn(4, 8).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Sub", ["x", "c"], ["y2"])]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.ones((1, 4), np.float32), "c")]
    got, why = run_model(name, nodes, {"x": np.zeros((0, 4), np.float32)},
                         [("y", TensorProto.FLOAT), ("y2", TensorProto.FLOAT)], inits,
                         extra=("--target", "dnnl", "--placement", "capability"))
    check.expect(not why and got[0].shape == (0, 8) and got[1].shape == (0, 4),
                 f"{name}: an empty MatMul and Sub with --target dnnl give [0, 8] and [0, 4]", detail=why)


# ---- 1-D and 3-D convolutions (conv.c, gemm.c) ----

def conv_nd_case(name, x_shape, w_shape, stride=None, pads=None, dil=None, group=1, relu=False, w_input=False):
    """A Conv of 1 or 3 spatial axes on the packed GEMM (a constant weight)
    or the blocked im2col (a weight given at run time), against torch."""
    if not check.selected(name):
        return
    n = len(x_shape) - 2
    x = rng.randn(*x_shape).astype(np.float32)
    w = (rng.randn(*w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(np.float32)
    b = rng.randn(w_shape[0]).astype(np.float32) * 0.1
    stride, dil = stride or [1] * n, dil or [1] * n
    pads = pads or [0] * (2 * n)
    attrs = dict(strides=stride, dilations=dil, pads=pads, group=group)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if relu else "y"], **attrs)]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    feeds, inits = {"x": x}, [numpy_helper.from_array(b, "b")]
    if w_input:
        feeds["w"] = w
    else:
        inits.append(numpy_helper.from_array(w, "w"))
    got, why = run_model(name, nodes, feeds, [("y", TensorProto.FLOAT)], inits)
    if why:
        return check.fail(f"{name}: {why}")
    tx = torch.from_numpy(x)
    lo, hi = pads[:n], pads[n:]
    pad_arg = []
    for d in reversed(range(n)):
        pad_arg += [lo[d], hi[d]]
    tx = torch.nn.functional.pad(tx, pad_arg)
    f = {1: torch.nn.functional.conv1d, 3: torch.nn.functional.conv3d}[n]
    with torch.no_grad():
        want = f(tx, torch.from_numpy(w), torch.from_numpy(b), stride=stride, dilation=dil, groups=group)
        if relu:
            want = torch.relu(want)
    e = seamtest.rel_err(got[0], want.numpy())
    check.expect(got[0].shape == tuple(want.shape) and e <= 1e-5,
                 f"{name}: X {list(x_shape)} W {list(w_shape)} against torch: {e:.1e}",
                 detail=f"shape {got[0].shape}, want {tuple(want.shape)}")


conv_nd_case("conv3d_video_block", (1, 64, 8, 28, 28), (64, 64, 3, 3, 3), pads=[1, 1, 1, 1, 1, 1], relu=True)
conv_nd_case("conv3d_stem_strided", (1, 3, 8, 56, 56), (32, 3, 3, 7, 7), stride=[1, 2, 2], pads=[1, 3, 3, 1, 3, 3])
conv_nd_case("conv3d_asym_dilated", (2, 16, 6, 17, 19), (24, 16, 3, 2, 3), dil=[1, 2, 1], pads=[0, 1, 2, 2, 0, 1])
conv_nd_case("conv3d_grouped", (1, 32, 4, 20, 20), (48, 8, 1, 3, 3), group=4, pads=[0, 1, 1, 0, 1, 1])
conv_nd_case("conv3d_temporal_1x1", (1, 64, 8, 14, 14), (128, 64, 3, 1, 1), stride=[2, 1, 1], pads=[1, 0, 0, 1, 0, 0])
conv_nd_case("conv3d_runtime_weight", (1, 16, 6, 24, 24), (32, 16, 3, 3, 3), pads=[1, 1, 1, 1, 1, 1], w_input=True)
conv_nd_case("conv1d_audio", (1, 128, 4000), (128, 128, 3), dil=[4], pads=[4, 4], relu=True)
conv_nd_case("conv1d_encoder_strided", (2, 1, 16000), (256, 1, 16), stride=[8], pads=[0, 0])
conv_nd_case("conv1d_pointwise", (1, 256, 3000), (512, 256, 1))
conv_nd_case("conv1d_runtime_weight", (1, 64, 2500), (96, 64, 5), pads=[2, 3], w_input=True)

def reduce_nothing_case(name):
    """ReduceMax/Min/Sum/Mean over axes of size 1 only (a detector's max
    over one score, keepdims=0 to a scalar): oneDNN refuses a reduction
    that reduces nothing, so dnnl copies the input; against numpy."""
    if not check.selected(name):
        return
    for op, f in (("ReduceMax", np.max), ("ReduceMin", np.min), ("ReduceSum", np.sum), ("ReduceMean", np.mean)):
        for shape, axes, keep in (((1,), None, 0), ((3, 1, 4), [1], 1), ((3, 1, 4), [1], 0)):
            x = rng.randn(*shape).astype(np.float32)
            kw = {"keepdims": keep}
            if axes:
                kw["axes"] = axes
            want = f(x, axis=tuple(axes) if axes else None, keepdims=bool(keep)).astype(np.float32)
            got, why = run_model(f"{name}_{op}_{len(shape)}_{keep}", [helper.make_node(op, ["x"], ["y"], **kw)],
                                 {"x": x}, [("y", TensorProto.FLOAT)], opset=11,
                                 extra=("--target", "dnnl", "--placement", "capability"))
            check.expect(not why and got[0].shape == want.shape and np.allclose(got[0], want, rtol=1e-6),
                         f"{name}: {op} of {list(shape)} axes {axes} keepdims {keep} on dnnl equals numpy",
                         detail=why or f"shape {got[0].shape}, want {want.shape}")


def bcast_binary_case(name):
    """Add, Sub, Mul, Div whose second operand broadcasts where oneDNN has
    only its reference kernel (a per-row value over the last axis, a
    per-channel constant without a batch axis, a mask over some heads of a
    5-D tensor, two axes at once): dnnl runs seam's host loop (the compile
    log says `host bcast_binary`); against numpy, exactly."""
    if not check.selected(name):
        return
    for label, op, f, a, bshape in (("last_axis", "Sub", np.subtract, (1, 56, 56, 96), (1, 56, 56, 1)),
                                    ("per_channel", "Div", np.divide, (3, 320, 320), (3, 1, 1)),
                                    ("mask_5d", "Add", np.add, (1, 16, 3, 49, 49), (1, 16, 1, 49, 49)),
                                    ("two_axes", "Mul", np.multiply, (2, 5, 7, 9), (2, 1, 7, 1))):
        x = rng.randn(*a).astype(np.float32)
        y = (rng.rand(*bshape) + 0.5).astype(np.float32)
        want = f(x, y).astype(np.float32)
        nodes = [helper.make_node(op, ["x", "y"], ["z"])]
        path, files = write(f"{name}_{label}", nodes, {"x": x, "y": y}, [("z", TensorProto.FLOAT)])
        d = os.path.join(work, f"{name}_{label}.dnnl")
        shutil.rmtree(d, ignore_errors=True)
        r = seam("run", path, *in_args(files), "--target", "dnnl", "--placement", "capability", "--compile-log",
                 "--output-dir", d)
        if r.returncode:
            check.fail(f"{name}: {label}: {r.stderr.strip()[-300:]}")
            continue
        z = np.load(seamtest.output_file(d, "z"))
        check.expect(z.shape == want.shape and np.array_equal(z, want),
                     f"{name}: {label}: {op} {list(a)} by {list(bshape)} on dnnl equals numpy, exactly")
        check.expect("host bcast_binary" in r.stderr and "ref:any" not in r.stderr,
                     f"{name}: {label}: seam's loop, not oneDNN's reference kernel", detail=r.stderr[-400:])


# ---- comparisons ----

def compare_case(name):
    """Equal, Less, Greater, LessOrEqual, GreaterOrEqual on float32 (the
    elementwise.c fast rows into bool bytes: both operands full, one a
    scalar, one a row, one broadcast over the rows) and float64 (the
    general path), with ties, NaN, +-0 and +-inf, against numpy exactly,
    on 1 and 2 threads."""
    if not check.selected(name):
        return
    ops = (("Equal", np.equal), ("Less", np.less), ("Greater", np.greater), ("LessOrEqual", np.less_equal),
           ("GreaterOrEqual", np.greater_equal))
    for label, a_shape, b_shape in (("full", (7, 300), (7, 300)), ("scalar", (3, 1000), ()),
                                    ("scalar_first", (), (5, 333)), ("row", (6, 257), (257,)),
                                    ("column", (6, 257), (6, 1))):
        for dt in (np.float32, np.float64):
            a = special_values(a_shape or (1,)).reshape(a_shape).astype(dt)
            b = special_values(b_shape or (1,)).reshape(b_shape).astype(dt)
            if label == "scalar":
                b = np.array(1.0, dt)  # ties with a's 1s
            nodes = [helper.make_node(op, ["a", "b"], [f"y_{op}"]) for op, _ in ops]
            got, why = run_model(f"{name}_{label}_{np.dtype(dt).name}", nodes, {"a": a, "b": b},
                                 [(f"y_{op}", TensorProto.BOOL) for op, _ in ops])
            if why:
                check.fail(f"{name}: {label} {np.dtype(dt).name}: {why}")
                continue
            bad = [op for (op, f), y in zip(ops, got) if not same_bits(y, f(a, b))]
            check.expect(not bad, f"{name}: {label} {list(a_shape)} vs {list(b_shape)} {np.dtype(dt).name}: "
                         f"the five comparisons equal numpy's", f"differ: {bad}")


compare_case("compare")
bcast_binary_case("bcast_binary_dnnl")
reduce_nothing_case("reduce_nothing_dnnl")
empty_detections_case("empty_detections")
empty_static_case("empty_static")

check.finish()
