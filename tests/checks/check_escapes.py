"""Tests that catch the escapes of issue 35: NaN in the checkers'
comparisons, asymmetric pads, large-logit Softmax.

usage: /usr/bin/python3 check_escapes.py SEAM WORKDIR [-k PATTERN]

1. Case nan_planted: a real pair (seam's output of a small Conv and
   torch's float64 reference) passes every comparison function the
   checkers use (seamtest: rel_err, abs_err, worst, max_rel_err, out_err,
   ulp_err, same_bits, quanta, steps); then a NaN planted in seam's
   output, an infinity, a NaN in the reference alone, and another shape
   (one row fewer, and a broadcastable [1, ...]) must each be a failure
   (an infinite error, not ok), while a NaN at the same place in both is
   equal. Python's max() skipping a NaN is shown not to reach worst().
2. Case pads NAME: Conv (1-D, 2-D, 3-D), ConvTranspose (2-D, with
   output_padding too), MaxPool and AveragePool (count_include_pad 0 and
   1, with and without ceil_mode) with begin pads other than end pads, and
   Conv, MaxPool and AveragePool with auto_pad SAME_UPPER / SAME_LOWER on
   odd pad totals. Each model (onnx.helper, random weights, unit-scale
   inputs; the reference must not be degenerate):
   - `seam inspect --values --json` gives every value the shape
     onnx.shape_inference.infer_shapes gives (and no value it lacks);
   - `seam run` on the CPU, on `--target dnnl` (placement capability), and
     `seam partition --target dnnl -o` then `seam run` of the saved file
     match torch within 1e-4 of the output's scale (seamtest.rel_err: the
     shape of the .npy seam writes must be the reference's). torch computes
     in float64 on the input padded by F.pad with the ONNX pads (-inf for
     MaxPool; for AveragePool without count_include_pad, the sum over the
     window divided by the count of input elements in it), then the op
     with padding 0 (ceil_mode as torch has it; the cases keep the last
     window starting inside the input, where torch, ONNX and ONNX Runtime
     agree); ConvTranspose by torch's conv_transpose2d without padding,
     output_padding added as zeros at the end, then the pads cropped as
     ONNX defines. torch's output shape must be ONNX's inferred one. The
     ok line says which ops the saved file put on dnnl; a case marked so
     must have its op there (dnnl's paths are what it checks). Three cases
     dnnl must refuse instead, with the reason, so that the node runs on
     the CPU: ConvTranspose whose output_padding reaches past its end pad
     (supports() once said yes and the compile failed), and AveragePool
     count_include_pad=1 whose ceil_mode window passes the end pad (oneDNN
     divided it by the whole kernel: wrong outputs).
3. Case softmax NAME: Softmax and LogSoftmax with logits of magnitude
   1e3..1e4 (a large offset per batch item plus a spread of a few units, so
   that a kernel without the max subtraction overflows to inf or NaN while
   the result is not one-hot), on axis -1 and on a middle axis, at opset 11
   (2-D coercion) and 13, float32, against numpy in float64 with the max
   subtracted; on the CPU, on dnnl, on dnnl with `--target-option
   fusion=off`, and partitioned, saved and reloaded. Case softmax matmul:
   MatMul (integer-valued operands, so float32 is exact) then Softmax
   (axis -1) and LogSoftmax (axis 1), the same paths. Opset 13 Softmax
   must be on dnnl in the saved file (opset 11 stays on the CPU: dnnl
   refuses the 2-D coercion).

Seam bugs these cases found are listed in KNOWN, by case and path: such a
path is printed as `known` (and counted in the summary) while it fails,
and fails the run once it passes, so that its entry is taken out.

The cases: nan_planted, "pads conv1d", ... (`-k pads`, `-k softmax`).
"""
import concurrent.futures
import json
import os
import shutil
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import helper, shape_inference

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import vi  # noqa: E402

args, seam, work, check = seamtest.checker_setup(__doc__, "escapes", timeout=120)
rng = np.random.RandomState(35)
TOL = 1e-4
INF = float("inf")
DNNL = ["--target", "dnnl", "--placement", "capability"]
PATHS = {"cpu": [], "dnnl": DNNL, "dnnl fusion=off": DNNL + ["--target-option", "fusion=off"], "saved": None}

# Seam bugs these cases found, (case, path): what is wrong. Such a path is
# reported as `known`, not failed, while it fails; once it passes, the
# entry must go (a failure says so). Delete an entry to see its failure.
KNOWN = {
    # (case, path): why. Fixed: ConvTranspose output_padding past the end
    # pad (dnnl's supports() now refuses it), AveragePool
    # count_include_pad=1 with a ceil_mode window past the end pad (dnnl
    # refuses it: oneDNN divided that window by the whole kernel). Those
    # cases now check that the node goes to the CPU with that reason.
}
KNOWN.update({(c, "saved"): why for (c, p), why in list(KNOWN.items())})
known_seen = []
POOL = concurrent.futures.ThreadPoolExecutor(max_workers=2)


def expect_path(name, label, ok, what, detail=None):
    """check.expect, except for a (case, path) in KNOWN."""
    why = KNOWN.get((name, label))
    if why is None:
        return check.expect(ok, what, detail)
    if ok:
        check.fail(f"{what}: KNOWN lists it as a seam bug, but it passes now: take it out of KNOWN ({why[:80]}...)")
    else:
        known_seen.append(f"{name} ({label})")
        print(f"known {what}: {detail}\n      seam bug: {why}", flush=True)
    return ok


# ---- running a model on every path ----------------------------------------------

def write(name, nodes, inputs, outputs, inits, opset=13):
    """The model NAME (inputs {name: array}, outputs names) and its --input
    arguments."""
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, [vi(n, a.shape) for n, a in inputs.items()],
                               [vi(o, None) for o in outputs], seamtest.initializers(inits), name=name, opset=opset)
    feeds = []
    for n, a in inputs.items():
        f = os.path.join(work, f"{name}.{n}.npy")
        np.save(f, a)
        feeds += ["--input", f"{n}={f}"]
    return path, feeds


def device_ops(saved):
    """[(op, target)] of the nodes inside the saved file's ai.seam Subgraph nodes."""
    out = []
    for n in onnx.load(saved).graph.node:
        if n.domain == "ai.seam" and n.op_type == "Subgraph":
            attrs = {a.name: a for a in n.attribute}
            target = attrs["target"].s.decode() if "target" in attrs else "?"
            out += [(b.op_type, target) for b in attrs["body"].g.node] if "body" in attrs else []
    return out


def run_path(name, path, feeds, outputs, label):
    """(outputs or None, what failed, [(op, target)] of a saved file's
    device subgraphs) of one path."""
    d = os.path.join(work, f"{name}.{label}".replace(" ", "_").replace("=", "_"))
    shutil.rmtree(d, ignore_errors=True)
    ops = []
    if PATHS[label] is None:
        saved = os.path.join(work, f"{name}.saved.onnx".replace(" ", "_"))
        r = seam("partition", path, *DNNL, "-o", saved)
        if r.returncode:
            return None, f"seam partition -o: {r.stderr.strip()[-300:]}", ops
        ops = device_ops(saved)
        r = seam("run", saved, *feeds, "--output-dir", d)
    else:
        r = seam("run", path, *feeds, *PATHS[label], "--output-dir", d)
    if r.returncode:
        return None, f"seam run exit {r.returncode}: {r.stderr.strip()[-300:]}", ops
    return [np.load(seamtest.output_file(d, o)) for o in outputs], None, ops


def run_paths(name, path, feeds, outputs, labels):
    """({label: [arrays]} for the paths that ran, [(op, target)] of the
    saved file's device subgraphs); a path that fails is a failure. The
    paths run two at a time (the machine's two cores)."""
    res, ops = {}, []
    jobs = [POOL.submit(run_path, name, path, feeds, outputs, label) for label in labels]
    for label, job in zip(labels, jobs):
        got, why, o = job.result()
        ops += o
        if why:
            expect_path(name, label, False, f"{name} ({label}): runs", why)
        else:
            res[label] = got
    return res, ops


def compare(name, res, wants, outputs):
    """Every path's outputs against the references, within TOL of their
    scale; another shape is named."""
    for label, got in res.items():
        errs = [seamtest.rel_err(g, w) for g, w in zip(got, wants)]
        shapes = [f"{o} {list(g.shape)} (want {list(w.shape)})" for o, g, w in zip(outputs, got, wants)
                  if g.shape != w.shape]
        e = seamtest.worst(errs)
        expect_path(name, label, e <= TOL, f"{name} ({label}): error {e:.1e} of the output's scale",
                     "; ".join(shapes) if shapes else f"over {TOL:.0e}: " +
                     ", ".join(f"{o} {x:.2e}" for o, x in zip(outputs, errs)))


def onnx_shapes(path):
    """{value: shape} from onnx.shape_inference (None for an unknown dim
    or shape), initializers included."""
    m = shape_inference.infer_shapes(onnx.load(path), strict_mode=True)
    out = {}
    for v in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        t = v.type.tensor_type
        out[v.name] = ([d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
                       if t.HasField("shape") else None)
    for i in m.graph.initializer:
        out[i.name] = list(i.dims)
    return out


def check_shapes(name, path):
    want = onnx_shapes(path)
    r = seam("inspect", path, "--values", "--json")
    if r.returncode:
        return check.fail(f"{name}: seam inspect --values --json: {r.stderr.strip()[-300:]}")
    got = {v["name"]: v["shape"] for v in json.loads(r.stdout).get("values", [])}
    bad = [f"{v}: seam {got.get(v, 'missing')}, onnx {s}" for v, s in want.items()
           if s is None or None in s or got.get(v) != s]
    bad += [f"{v}: seam {s}, not an onnx value" for v, s in got.items() if v not in want]
    check.expect(not bad, f"{name}: seam inspect's shapes of {len(want)} values are onnx.shape_inference's",
                 "; ".join(bad))


# ---- 1. planted NaN ----------------------------------------------------------------

def nan_planted():
    x = rng.randn(1, 3, 8, 8).astype(np.float32)
    w = (rng.randn(4, 3, 3, 3) / np.sqrt(27)).astype(np.float32)
    path, feeds = write("nan_planted", [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
                        {"x": x}, ["y"], {"w": w})
    res, _ = run_paths("nan_planted", path, feeds, ["y"], ["cpu"])
    if "cpu" not in res:
        return
    got = res["cpu"][0]
    want = F.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(), padding=1).numpy()
    scale = float(np.abs(want).max())
    q = 0.05  # a quantum, for quanta() and steps()
    # each comparison with the pair it is made for: seam against a float64
    # reference; seam against itself bitwise (same_bits: two runs, or a
    # path against the CPU's); quantized values (steps, out_err of ints)
    floats = {
        "rel_err": lambda g, w: seamtest.rel_err(g, w) <= TOL,
        "abs_err": lambda g, w: seamtest.abs_err(g, w) <= TOL * scale,
        "worst": lambda g, w: seamtest.worst([0.0, seamtest.rel_err(g, w)]) <= TOL,
        "max_rel_err": lambda g, w: seamtest.max_rel_err([got, g], [want, w]) <= TOL,
        "out_err": lambda g, w: seamtest.out_err(g, w) <= TOL,
        "ulp_err": lambda g, w: seamtest.ulp_err(g, w, TOL * scale)[0] == 0,
        "quanta": lambda g, w: seamtest.quanta(g, w, q)[2],
    }
    pairs = {"float": ((got, want), floats), "bits": ((got, got.copy()), {"same_bits": seamtest.same_bits})}
    ints = {"steps": lambda g, w: seamtest.steps(g, w)[1] <= 1, "out_err": lambda g, w: seamtest.out_err(g, w) == 0}
    pairs["int"] = ((np.round(got / q).astype(np.int32), np.round(want / q).astype(np.int32)), ints)
    ok = [f"{kind} {fn}" for kind, ((g, w), fns) in pairs.items() for fn, f in fns.items() if not f(g, w)]
    check.expect(not ok, f"nan_planted: the real pair (seam's Conv, torch in float64) passes every comparison "
                 f"({sum(len(f) for _, f in pairs.values())})", f"refused by {ok}")
    i = (0, 2, 3, 5)

    def at(a, v):
        a = a.copy()
        a[i] = v
        return a

    plants = {  # name: (kinds it applies to, (got, want) -> (got', want'))
        "a NaN in seam's output": (("float", "bits"), lambda g, w: (at(g, np.nan), w)),
        "an inf in seam's output": (("float", "bits"), lambda g, w: (at(g, np.inf), w)),
        "a NaN in the reference alone": (("float", "bits"), lambda g, w: (g, at(w, np.nan))),
        "the reference's inf of the other sign": (("float",), lambda g, w: (at(g, -np.inf), at(w, np.inf))),
        "one row fewer": (("float", "bits", "int"), lambda g, w: (g[:, :, :-1], w)),
        "[1, 1, 8, 8] against [1, 4, 8, 8] equal channels (broadcastable)":
            (("float", "bits", "int"), lambda g, w: (g[:, :1], np.repeat(g[:, :1].astype(w.dtype), 4, axis=1))),
    }
    for what, (kinds, plant) in plants.items():
        accepted = [f"{kind} {fn}" for kind in kinds for fn, f in pairs[kind][1].items()
                    if f(*plant(*pairs[kind][0]))]
        n = sum(len(pairs[k][1]) for k in kinds)
        check.expect(not accepted, f"nan_planted: {what}: all {n} comparisons fail", f"accepted by {accepted}")
    e = seamtest.rel_err(at(got, np.nan), want)
    check.expect(e == INF, f"nan_planted: rel_err of the planted NaN is inf ({e})")
    check.expect(max([0.0, float("nan")]) == 0.0 and seamtest.worst([0.0, float("nan")]) == INF,
                 "nan_planted: Python's max() skips a NaN after the first value, worst() gives inf")
    # a NaN in both at the same place is equal (references of NaN propagation)
    e0 = seamtest.rel_err(got, want)
    same = [at(got, np.nan), at(want, np.nan)]
    e = seamtest.rel_err(*same)
    check.expect(e == e0 and seamtest.ulp_err(*same, TOL * scale)[0] == 0 and
                 seamtest.same_bits(same[0], same[0].copy()) and seamtest.quanta(*same, q)[2],
                 f"nan_planted: a NaN in both at one place is equal (error {e:.1e}, without it {e0:.1e})")
    check.expect(seamtest.rel_err(at(got, -np.inf), at(want, -np.inf)) == e0,
                 "nan_planted: the same infinity in both is equal")


# ---- 2. asymmetric pads --------------------------------------------------------------

def torch_pad(x, pads, value=0.0):
    """x (float64 tensor) padded by ONNX pads [b1, b2, ..., e1, e2, ...]."""
    nd = len(pads) // 2
    arg = []
    for d in reversed(range(nd)):
        arg += [pads[d], pads[d + nd]]
    return F.pad(x, arg, value=value)


def same_pads(ins, ks, strides, dil, upper):
    """ONNX auto_pad SAME_UPPER / SAME_LOWER: the total pad of each axis,
    its odd half at the end (UPPER) or at the beginning (LOWER)."""
    b, e = [], []
    for n, k, s, d in zip(ins, ks, strides, dil):
        total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
        lo = total // 2 if upper else total - total // 2
        b.append(lo)
        e.append(total - lo)
    return b + e


def conv_ref(x, w, b, pads, strides, dil, group):
    nd = x.ndim - 2
    t = torch_pad(torch.from_numpy(x).double(), pads)
    conv = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return conv(t, torch.from_numpy(w).double(), torch.from_numpy(b).double(), strides, 0, dil, group).numpy()


def conv_transpose_ref(x, w, b, pads, strides, dil, group, out_pad):
    """ONNX: the full transposed convolution, output_padding more at the
    end of each axis, pads[i] cropped at the beginning and pads[i + nd] at
    the end; then the bias."""
    full = F.conv_transpose2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(), None, strides, 0, 0,
                              group, dil)
    full = torch_pad(full, [0, 0] + list(out_pad))
    h, wd = full.shape[2:]
    y = full[:, :, pads[0]:h - pads[2], pads[1]:wd - pads[3]]
    return (y + torch.from_numpy(b).double().reshape(1, -1, 1, 1)).numpy()


def pool_ref(op, x, ks, pads, strides, ceil, cip=0, dil=None):
    nd = x.ndim - 2
    t = torch.from_numpy(x).double()
    if op == "MaxPool":
        mp = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1]
        return mp(torch_pad(t, pads, -np.inf), ks, strides, 0, dil or 1, ceil_mode=bool(ceil)).numpy()
    ap = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[nd - 1]
    s = ap(torch_pad(t, pads), ks, strides, 0, bool(ceil), True)
    if cip:
        return s.numpy()
    # the mean over the input's elements only: the same divisor on both
    n = ap(torch_pad(torch.ones_like(t), pads), ks, strides, 0, bool(ceil), True)
    return (s / n).numpy()


def dnnl_reason(path, op):
    """(target, reason) seam's capability plan for dnnl gives the node of op."""
    r = seam("partition", path, "--target", "dnnl", "--placement", "capability", "--json")
    if r.returncode:
        return None, r.stderr.strip()
    n = [n for n in json.loads(r.stdout)["nodes"] if n["op"] == op]
    return (n[0]["target"], n[0]["reason"]) if n else (None, "no such node")


def pads_case(name, node, x, inits, ref, dnnl_op=None, refused=None):
    name = f"pads {name}"
    if not check.selected(name):
        return
    path, feeds = write(name.replace(" ", "_"), [node], {"x": x}, ["y"], inits)
    check_shapes(name, path)
    inferred = onnx_shapes(path)["y"]
    check.expect(list(ref.shape) == inferred and ref.std() > 0.1,
                 f"{name}: torch's reference has the inferred shape {inferred} and is not degenerate",
                 f"torch {list(ref.shape)}, std {ref.std():.3g}")
    res, ops = run_paths(name, path, feeds, ["y"], ["cpu", "dnnl", "saved"])
    compare(name, res, [ref], ["y"])
    on = sorted({f"{op}:{t}" for op, t in ops})
    if refused:
        target, reason = dnnl_reason(path, node.op_type)
        check.expect(target == "cpu" and refused in reason,
                     f"{name}: dnnl refuses the {node.op_type} (a seam bug once: it ran wrong or failed to compile), "
                     f"it runs on the CPU", f"{target}: {reason}")
    elif dnnl_op:
        check.expect((dnnl_op, "dnnl") in ops, f"{name}: the saved file has the {dnnl_op} on dnnl", f"device ops {on}")
    else:
        check.ok(f"{name}: device ops in the saved file: {on or 'none'}")


def conv_cases():
    def conv(name, xs, ws, pads=None, strides=None, dil=None, group=1, auto_pad=None):
        nd = len(xs) - 2
        strides, dil = strides or [1] * nd, dil or [1] * nd
        x = rng.randn(*xs).astype(np.float32)
        w = (rng.randn(*ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
        b = (rng.randn(ws[0]) * 0.1).astype(np.float32)
        kw = {"strides": strides, "dilations": dil, "group": group}
        if auto_pad:
            kw["auto_pad"] = auto_pad
            pads = same_pads(xs[2:], ws[2:], strides, dil, auto_pad == "SAME_UPPER")
            assert any((pads[i] + pads[i + nd]) % 2 for i in range(nd)), (name, pads)  # an odd total
        else:
            kw["pads"] = pads
        node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **kw)
        pads_case(name, node, x, {"w": w, "b": b}, conv_ref(x, w, b, pads, strides, dil, group), dnnl_op="Conv")

    conv("conv1d", [2, 3, 11], [4, 3, 3], pads=[2, 0], strides=[2])
    conv("conv1d_dilated", [1, 4, 12], [5, 4, 3], pads=[0, 3], dil=[2])
    conv("conv2d", [1, 4, 9, 10], [6, 2, 3, 3], pads=[0, 1, 2, 0], strides=[2, 1], dil=[1, 2], group=2)
    conv("conv2d_end_only", [1, 3, 7, 7], [4, 3, 3, 3], pads=[0, 0, 2, 2])
    conv("conv3d", [1, 2, 5, 6, 7], [3, 2, 3, 2, 3], pads=[1, 0, 2, 0, 1, 1], strides=[1, 2, 1])
    conv("conv2d_same_upper", [1, 3, 7, 8], [4, 3, 4, 3], strides=[1, 2], auto_pad="SAME_UPPER")
    conv("conv2d_same_lower", [1, 3, 7, 8], [4, 3, 4, 3], strides=[1, 2], auto_pad="SAME_LOWER")
    conv("conv1d_same_lower", [1, 2, 9], [3, 2, 4], auto_pad="SAME_LOWER")


def conv_transpose_cases():
    def convt(name, xs, ws, pads, strides, out_pad=None, dil=None, group=1, refused=None):
        x = rng.randn(*xs).astype(np.float32)
        w = (rng.randn(*ws) / np.sqrt(ws[0] * ws[2] * ws[3] / np.prod(strides))).astype(np.float32)
        b = (rng.randn(ws[1] * group) * 0.1).astype(np.float32)
        kw = {"pads": pads, "strides": strides, "group": group, "dilations": dil or [1, 1]}
        if out_pad:
            kw["output_padding"] = out_pad
        node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **kw)
        pads_case(name, node, x, {"w": w, "b": b},
                  conv_transpose_ref(x, w, b, pads, strides, dil or [1, 1], group, out_pad or [0, 0]),
                  dnnl_op="ConvTranspose", refused=refused)

    convt("convtranspose2d", [1, 3, 5, 6], [3, 4, 3, 3], pads=[0, 1, 2, 0], strides=[2, 2])
    convt("convtranspose2d_output_padding", [1, 4, 4, 5], [4, 3, 3, 4], pads=[1, 0, 0, 2], strides=[2, 3],
          out_pad=[1, 2], refused="reaches past its end pad")
    convt("convtranspose2d_group_dilated", [1, 4, 5, 5], [4, 2, 3, 2], pads=[2, 0, 0, 1], strides=[1, 2],
          out_pad=[0, 1], dil=[2, 1], group=2)


def pool_cases():
    def pool(name, op, xs, ks, pads=None, strides=None, ceil=0, cip=None, auto_pad=None, dil=None, refused=None):
        nd = len(xs) - 2
        strides = strides or [1] * nd
        x = rng.randn(*xs).astype(np.float32)
        kw = {"kernel_shape": ks, "strides": strides}
        if ceil:
            kw["ceil_mode"] = 1
        if cip is not None:
            kw["count_include_pad"] = cip
        if dil:
            kw["dilations"] = dil
        if auto_pad:
            kw["auto_pad"] = auto_pad
            pads = same_pads(xs[2:], ks, strides, dil or [1] * nd, auto_pad == "SAME_UPPER")
            assert any((pads[i] + pads[i + nd]) % 2 for i in range(nd)), (name, pads)  # an odd total
        else:
            kw["pads"] = pads
        node = helper.make_node(op, ["x"], ["y"], **kw)
        ref = pool_ref(op, x, ks, pads, strides, ceil, cip or 0, dil)
        pads_case(name, node, x, {}, ref, dnnl_op=op, refused=refused)

    # (with ceil_mode, the last window starts inside the input: 6 + 1 - 2
    # is 5, a window every 2 from 0 gives 4 windows where floor gives 3)
    for ceil in (0, 1):
        sfx = "_ceil" if ceil else ""
        pool("maxpool2d" + sfx, "MaxPool", [1, 3, 6, 7], [2, 3], pads=[1, 0, 0, 2], strides=[2, 2], ceil=ceil)
        for cip in (0, 1):
            pool(f"avgpool2d_cip{cip}{sfx}", "AveragePool", [1, 3, 6, 7], [2, 3], pads=[1, 0, 0, 2], strides=[2, 2],
                 ceil=ceil, cip=cip, refused="passes the end pad" if cip and ceil else None)
    # (symmetric pads: the same overhang past the end pad, as torch's
    # AvgPool2d(3, 2, 1, ceil_mode=True) exports)
    pool("avgpool2d_cip1_ceil_symmetric", "AveragePool", [1, 3, 6, 6], [3, 3], pads=[1, 1, 1, 1], strides=[2, 2],
         ceil=1, cip=1, refused="passes the end pad")
    pool("maxpool1d_ceil", "MaxPool", [2, 3, 10], [3], pads=[0, 2], strides=[3], ceil=1)
    pool("avgpool1d_cip0_ceil", "AveragePool", [2, 3, 10], [3], pads=[2, 0], strides=[3], ceil=1, cip=0)
    pool("maxpool2d_same_upper", "MaxPool", [1, 2, 7, 8], [4, 3], strides=[1, 2], auto_pad="SAME_UPPER")
    pool("maxpool2d_same_lower", "MaxPool", [1, 2, 7, 8], [4, 3], strides=[1, 2], auto_pad="SAME_LOWER")
    pool("avgpool2d_same_upper_cip0", "AveragePool", [1, 2, 7, 8], [4, 3], strides=[1, 2], auto_pad="SAME_UPPER",
         cip=0)
    pool("avgpool2d_same_lower_cip1", "AveragePool", [1, 2, 7, 8], [4, 3], strides=[1, 2], auto_pad="SAME_LOWER",
         cip=1)


# ---- 3. large-logit Softmax ------------------------------------------------------------

def softmax_ref(x, axis, opset, log):
    """numpy in float64, the max subtracted; before opset 13 on the 2-D
    view [prod(dims[:axis]), prod(dims[axis:])]."""
    x = x.astype(np.float64)
    if opset < 13:
        a = axis % x.ndim
        return softmax_ref(x.reshape(int(np.prod(x.shape[:a])), -1), 1, 13, log).reshape(x.shape)
    z = x - x.max(axis=axis, keepdims=True)
    ls = np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return z - ls if log else np.exp(z - ls)


OFFSETS = np.array([8000.0, -5000.0, 1200.0, -9500.0])  # per batch item: 1e3..1e4 either way


def softmax_case(opset):
    name = f"softmax opset{opset}"
    if not check.selected(name):
        return
    x = (OFFSETS.reshape(-1, 1, 1) + rng.randn(4, 5, 8) * 3).astype(np.float32)
    nodes, outputs, wants = [], [], []
    for op in ("Softmax", "LogSoftmax"):
        for axis in (-1, 1):
            o = f"{op.lower()}_axis{axis}".replace("-", "m")
            nodes.append(helper.make_node(op, ["x"], [o], axis=axis, name=o))
            outputs.append(o)
            wants.append(softmax_ref(x, axis, opset, op == "LogSoftmax"))
    path, feeds = write(name.replace(" ", "_"), nodes, {"x": x}, outputs, {}, opset=opset)
    with np.errstate(over="ignore", invalid="ignore"):  # what a kernel without the max subtraction gives
        naive = np.exp(x.astype(np.float32)) / np.exp(x.astype(np.float32)).sum(-1, keepdims=True)
    check.expect(not np.isfinite(naive).all() and all(w.std() > 0.05 for w in wants),
                 f"{name}: without the max subtracted float32 overflows; the references are not one-hot")
    res, ops = run_paths(name, path, feeds, outputs, list(PATHS))
    compare(name, res, wants, outputs)
    on = sorted({f"{op}:{t}" for op, t in ops})
    if opset >= 13:
        check.expect(("Softmax", "dnnl") in ops and ("LogSoftmax", "dnnl") in ops,
                     f"{name}: the saved file has Softmax and LogSoftmax on dnnl", f"device ops {on}")
    else:
        check.ok(f"{name}: device ops in the saved file: {on or 'none'} (dnnl refuses opset 11's 2-D coercion)")


def softmax_matmul_case():
    name = "softmax matmul"
    if not check.selected(name):
        return
    # x[..., 0] the offset, w[0] all ones: logits offset + a spread of small
    # integers, exact in float32 in any summation order
    x = rng.randint(-2, 3, (2, 6, 16)).astype(np.float32)
    x[..., 0] = OFFSETS[:2].reshape(-1, 1)
    w = rng.randint(-2, 3, (16, 32)).astype(np.float32)
    w[0] = 1
    nodes = [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Softmax", ["t"], ["s"], axis=-1),
             helper.make_node("LogSoftmax", ["t"], ["ls"], axis=1)]
    t = x.astype(np.float64) @ w.astype(np.float64)
    wants = [softmax_ref(t, -1, 13, False), softmax_ref(t, 1, 13, True)]
    path, feeds = write("softmax_matmul", nodes, {"x": x}, ["s", "ls"], {"w": w})
    check_shapes(name, path)
    check.expect(np.abs(t).max() > 1e3 and wants[0].std() > 0.05, f"{name}: logits up to {np.abs(t).max():.0f}; "
                 f"the Softmax is not one-hot (std {wants[0].std():.2f})")
    res, ops = run_paths(name, path, feeds, ["s", "ls"], list(PATHS))
    compare(name, res, wants, ["s", "ls"])
    check.expect(("Softmax", "dnnl") in ops and ("MatMul", "dnnl") in ops,
                 f"{name}: the saved file has the MatMul and the Softmax on dnnl",
                 f"device ops {sorted({f'{op}:{t}' for op, t in ops})}")


if check.selected("nan_planted"):
    nan_planted()
conv_cases()
conv_transpose_cases()
pool_cases()
for opset in (11, 13):
    softmax_case(opset)
softmax_matmul_case()
check.finish(f"{len(known_seen)} paths fail as KNOWN says (seam bugs): {', '.join(known_seen)}" if known_seen else None)
