"""Symbolic dims as expressions (issue 31): shape arithmetic on a model's
named input dims is computed from the inputs' shapes alone (DimExpr
nodes), never cuts a device subgraph, and computes what the nodes it
replaces compute, at any shape.

usage: /usr/bin/python3 check_symdim.py SEAM WORKDIR [-k PATTERN]

Cases:
  window    the arithmetic a windowed-attention transformer exports
            (tests/lib/shape_models.py: Mod and Sub for the padding, Range,
            Expand, Equal, Where, ScatterND for the mask, a Reshape target)
            with H and W symbolic: the dnnl plan has as many device
            subgraphs as the plan with the shape fixed (one), its CPU nodes
            read no dnnl output; `seam inspect --values --fold` gives every
            value's dims (no "?"); saved cpu and dnnl partitions run at six
            shapes (odd ones, ones below the window) equal numpy's reading
  exprs     a conv net's arithmetic by hand, x [N, 4, H, W]: a stride-2 conv
            ((H-1)//2+1), a Reshape to a product of dims and one with -1,
            a Slice to min(H,3), a Range of H*W, a Pad by W%2 and a Reshape
            by Div (ceil(W/2)), an Expand to x's shape, ConstantOfShape,
            slices of a shape made a Reshape target, a 32-wide table sliced
            to min(W,32) and broadcast with x (W); the
            dims `seam inspect --values` prints; saved cpu and dnnl
            partitions at five shapes against ONNX Runtime's outputs
  encoder   a torch transformer encoder exported with dynamic batch and
            sequence: the symbolic dnnl plan has the fixed-shape plan's
            device subgraphs (one), its saved cpu and dnnl partitions at
            three shapes equal torch within 1e-4 of the output's scale
  malformed DimExpr nodes written by hand that do not parse, name a symbol
            past their inputs, divide by 0, overflow, read an axis the
            input lacks, or whose attributes disagree: `seam run` exits 1
            naming the node, never a crash
  named_twice two inputs naming a dim alike: the run refuses sizes that
            disagree (a DimExpr reads each name from one input), naming both
  no_fold   --no-fold keeps the shape arithmetic as the file has it
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import seamtest  # noqa: E402
from seamtest import vi  # noqa: E402
from shape_models import const, window_model, window_reference  # noqa: E402

args, seam, work, check = seamtest.checker_setup(__doc__, "symdim")
rng = np.random.RandomState(11)


def plan_json(path, *extra):
    r = seam("partition", path, "--target", "dnnl", "--placement", "capability", "--json", *extra)
    if r.returncode:
        return None, r.stderr.strip()[-300:]
    return json.loads(r.stdout), None


def device_subgraphs(p):
    return [s for s in p["subgraphs"] if s["target"] != "cpu"]


def save_partitions(path, name):
    """The symbolic model partitioned for cpu and dnnl and saved: {label: file}."""
    out = {}
    for label, extra in (("cpu", ()), ("dnnl", ("--target", "dnnl"))):
        f = os.path.join(work, f"{name}.{label}.onnx")
        r = seam("partition", path, *extra, "-o", f)
        if r.returncode:
            check.fail(f"{name}: seam partition {' '.join(extra)} -o: {r.stderr.strip()[-300:]}")
        else:
            out[label] = f
    return out


def run_saved(f, feeds, tag):
    d = os.path.join(work, tag + ".out")
    cmd = ["run", f, "--output-dir", d]
    for k, v in feeds.items():
        cmd += ["--input", f"{k}={v}"]
    r = seam(*cmd)
    return d, r


def inspect_dims(path):
    """{value name: dims text} from `seam inspect --values --fold`."""
    r = seam("inspect", path, "--values", "--fold")
    dims = {}
    for ln in r.stdout.splitlines():
        parts = ln.split()
        if len(parts) >= 4 and parts[0] in ("value", "output") and parts[-1].startswith("["):
            dims[parts[1]] = parts[-1]
    return r, dims


def case_window(name):
    if not check.selected(name):
        return
    nodes, inits, arith = window_model(rng)
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, [vi("x", [1, 8, "H", "W"])],
                               [vi("y", None)], inits, name=name, opset=13)
    p, why = plan_json(path)
    pf, why2 = plan_json(path, "--shape", "x=1x8x10x12")
    if why or why2:
        return check.fail(f"{name}: seam partition: {why or why2}")
    dev, devf = device_subgraphs(p), device_subgraphs(pf)
    check.expect(len(dev) == len(devf) == 1, f"{name}: symbolic H, W: {len(dev)} dnnl subgraph(s), as with the "
                 f"shape fixed ({len(devf)})", detail=str([(s["target"], len(s["nodes"])) for s in p["subgraphs"]])[:400])
    # the nodes whose outputs are shape values: the pads, the padded sizes, the targets
    shape_vals = {"s", "h", "w", "hm", "hs", "ph", "pw", "pads", "hp", "wp", "L", "L1", "tgt", "mshape"}
    made = {n.output[0]: i for i, n in enumerate(nodes)}  # (the file's order: the plan's indices)
    plain = {n["index"] for n in p["nodes"] if "dimexpr" in n or n["target"] == "constant"}
    left = sorted(v for v in shape_vals if v in made and made[v] not in plain)
    check.expect(not left, f"{name}: every node computing a shape value is a DimExpr node (the plan's 'dimexpr') "
                 f"or a constant", detail=str(left[:6]))
    check.expect(any("DimExpr" in s for s in p.get("notes", [])), f"{name}: the plan's notes say what became DimExpr",
                 detail=str(p.get("notes"))[:300])
    r, dims = inspect_dims(path)
    unknown = [k for k, v in dims.items() if "?" in v]
    check.expect(r.returncode == 0 and dims and not unknown, f"{name}: seam inspect --values --fold: no unknown dim "
                 f"({len(dims)} values)", detail=r.stderr.strip()[-300:] or str(unknown[:5]))
    saved = save_partitions(path, name)
    wmat = numpy_helper.to_array(inits[0])
    for H, W in ((10, 12), (7, 7), (15, 9), (1, 20), (14, 3), (6, 1)):
        x = rng.randn(1, 8, H, W).astype(np.float32)
        xf = os.path.join(work, f"{name}.x{H}x{W}.npy")
        np.save(xf, x)
        want = window_reference(x, wmat)
        for label, f in saved.items():
            d, r = run_saved(f, {"x": xf}, f"{name}.{label}.{H}x{W}")
            if r.returncode:
                check.fail(f"{name}: saved {label} partition at H={H} W={W}: {r.stderr.strip()[-300:]}")
                continue
            y = np.load(seamtest.output_file(d, "y"))
            e = seamtest.rel_err(y, want)
            check.expect(y.shape == want.shape and e <= 1e-5, f"{name}: saved {label} partition at H={H} W={W} "
                         f"against numpy: {e:.1e}", detail=f"shape {y.shape}, want {want.shape}")


def exprs_model():
    w = (rng.randn(8, 4, 3, 3) / 6).astype(np.float32)
    bias = rng.randn(1, 1, 1, 1).astype(np.float32)
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    n = [
        helper.make_node("Conv", ["x", "w"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Shape", ["c"], ["s"]), const("g0", np.int64(0)), const("g2", np.int64(2)),
        const("g3", np.int64(3)), const("ax", i64(0)),
        helper.make_node("Gather", ["s", "g0"], ["n"]), helper.make_node("Gather", ["s", "g2"], ["h2"]),
        helper.make_node("Gather", ["s", "g3"], ["w2"]), helper.make_node("Mul", ["h2", "w2"], ["hw2"]),
        helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]), helper.make_node("Unsqueeze", ["hw2", "ax"], ["hw1"]),
        const("c8", i64(8)), helper.make_node("Concat", ["n1", "c8", "hw1"], ["tgt"], axis=0),
        helper.make_node("Reshape", ["c", "tgt"], ["y_flat"]),
        const("keep", i64(0, -1)), helper.make_node("Reshape", ["c", "keep"], ["y_keep"]),
        # x[:, :, :3]
        const("s0", i64(0)), const("e3", i64(3)), const("a2", i64(2)),
        helper.make_node("Slice", ["x", "s0", "e3", "a2"], ["y_slice"]),
        # Range(0, H*W) as floats in x's shape, added to x
        helper.make_node("Shape", ["x"], ["sx"]), helper.make_node("Gather", ["sx", "g2"], ["h"]),
        helper.make_node("Gather", ["sx", "g3"], ["wd"]), helper.make_node("Mul", ["h", "wd"], ["hw"]),
        const("z", np.int64(0)), const("one", np.int64(1)),
        helper.make_node("Range", ["z", "hw", "one"], ["r"]),
        helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["h", "ax"], ["h1"]), helper.make_node("Unsqueeze", ["wd", "ax"], ["w1"]),
        const("c11", i64(1, 1)), helper.make_node("Concat", ["c11", "h1", "w1"], ["hwshape"], axis=0),
        helper.make_node("Reshape", ["rf", "hwshape"], ["rr"]),
        helper.make_node("Add", ["x", "rr"], ["y_range"]),
        # pad W to even by W % 2, then fold pairs: [N, 4, H, (W + W%2)/2, 2] summed
        const("two", np.int64(2)), helper.make_node("Mod", ["wd", "two"], ["rem"]),
        helper.make_node("Unsqueeze", ["rem", "ax"], ["rem1"]), const("z7", np.zeros(7, np.int64)),
        helper.make_node("Concat", ["z7", "rem1"], ["pads"], axis=0),
        helper.make_node("Pad", ["x", "pads"], ["xp"]),
        helper.make_node("Add", ["wd", "rem"], ["wp"]), helper.make_node("Div", ["wp", "two"], ["half"]),
        helper.make_node("Gather", ["sx", "g0"], ["nx"]), helper.make_node("Unsqueeze", ["nx", "ax"], ["nx1"]),
        helper.make_node("Unsqueeze", ["half", "ax"], ["half1"]), const("c4", i64(4)), const("c2", i64(2)),
        helper.make_node("Concat", ["nx1", "c4", "h1", "half1", "c2"], ["pshape"], axis=0),
        helper.make_node("Reshape", ["xp", "pshape"], ["xr"]),
        helper.make_node("ReduceSum", ["xr", "mone"], ["y_pairs"], keepdims=0), const("mone", i64(-1)),
        # Expand a [1,1,1,1] bias to x's shape; ConstantOfShape [N, 4] of 0.5
        helper.make_node("Expand", ["bias", "sx"], ["be"]), helper.make_node("Mul", ["be", "x"], ["y_expand"]),
        helper.make_node("Concat", ["nx1", "c4"], ["nc"], axis=0),
        helper.make_node("ConstantOfShape", ["nc"], ["y_cos"], value=numpy_helper.from_array(np.array([0.5], np.float32))),
        # x.shape[:2] + x.shape[2:] as a Reshape target (slices of a shape)
        const("e2", i64(2)), const("e4", i64(4)),
        helper.make_node("Slice", ["sx", "s0", "e2"], ["lead"]), helper.make_node("Slice", ["sx", "e2", "e4"], ["hw_s"]),
        helper.make_node("Concat", ["lead", "hw_s"], ["same"], axis=0),
        helper.make_node("Reshape", ["x", "same"], ["y_same"]),
        # a row of a 32-wide table sliced to W and broadcast with x: min(W,32) meets W
        helper.make_node("Unsqueeze", ["wd", "ax"], ["wd1"]), const("a3", i64(3)),
        helper.make_node("Slice", ["table", "s0", "wd1", "a3"], ["trow"]),
        helper.make_node("Add", ["x", "trow"], ["y_table"]),
    ]
    consts = [x for x in n if x.op_type == "Constant"]
    others = [x for x in n if x.op_type != "Constant"]
    table = rng.randn(1, 1, 1, 32).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias"), numpy_helper.from_array(table, "table")]
    outs = ["y_flat", "y_keep", "y_slice", "y_range", "y_pairs", "y_expand", "y_cos", "y_same", "y_table"]
    return consts + others, inits, outs


def case_exprs(name):
    if not check.selected(name):
        return
    nodes, inits, outs = exprs_model()
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, [vi("x", ["N", 4, "H", "W"])],
                               [vi(o, None) for o in outs], inits, name=name, opset=13)
    r, dims = inspect_dims(path)
    want = {"c": "[N,8,(H-1)//2+1,(W-1)//2+1]", "y_slice": "[N,4,min(H,3),W]", "r": "[H*W]",
            "y_range": "[N,4,H,W]", "trow": "[1,1,1,min(W,32)]", "y_table": "[N,4,H,W]", "y_same": "[N,4,H,W]", "xp": "[N,4,H,W+W%2]", "y_expand": "[N,4,H,W]", "y_cos": "[N,4]",
            "y_keep": "[N,8*((H-1)//2)*((W-1)//2)+8*((H-1)//2)+8*((W-1)//2)+8]"}
    for v, d in want.items():
        check.expect(dims.get(v) == d, f"{name}: seam inspect --values: {v} {d}", detail=f"got {dims.get(v)}")
    p, why = plan_json(path)
    if why:
        return check.fail(f"{name}: seam partition: {why}")
    check.expect(len(device_subgraphs(p)) == 1, f"{name}: one dnnl subgraph",
                 detail=str([(s["target"], len(s["nodes"])) for s in p["subgraphs"]])[:400])
    saved = save_partitions(path, name)
    for N, H, W in ((2, 9, 10), (1, 3, 3), (3, 16, 7), (1, 1, 5), (2, 2, 1)):
        x = rng.randn(N, 4, H, W).astype(np.float32)
        xf = os.path.join(work, f"{name}.x{N}x{H}x{W}.npy")
        np.save(xf, x)
        od = os.path.join(work, f"{name}.ort.{N}x{H}x{W}")
        ro, _ = seamtest.ort_run(path, {"x": xf}, od)
        if ro.returncode:
            check.fail(f"{name}: ONNX Runtime at {N}x{H}x{W}: {ro.stderr.strip()[-300:]}")
            continue
        for label, f in saved.items():
            d, r = run_saved(f, {"x": xf}, f"{name}.{label}.{N}x{H}x{W}")
            if r.returncode:
                check.fail(f"{name}: saved {label} partition at {N}x{H}x{W}: {r.stderr.strip()[-300:]}")
                continue
            errs = {o: seamtest.rel_err(np.load(seamtest.output_file(d, o)), np.load(seamtest.output_file(od, o)))
                    for o in outs}
            bad = {o: e for o, e in errs.items() if not e <= 1e-5}
            check.expect(not bad, f"{name}: saved {label} partition at N={N} H={H} W={W}: {len(outs)} outputs "
                         f"equal ONNX Runtime's", detail=str(bad))


def case_encoder(name):
    if not check.selected(name):
        return
    import torch
    import torch.nn as nn
    torch.manual_seed(3)
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0)
    net = nn.TransformerEncoder(layer, num_layers=2).eval()
    path = os.path.join(work, name + ".onnx")
    with torch.no_grad():
        torch.onnx.export(net, torch.randn(5, 2, 32), path, input_names=["x"], output_names=["y"], opset_version=14,
                          dynamic_axes={"x": {0: "seq", 1: "batch"}, "y": {0: "seq", 1: "batch"}})
    p, why = plan_json(path)
    pf, why2 = plan_json(path, "--shape", "x=5x2x32")
    if why or why2:
        return check.fail(f"{name}: seam partition: {why or why2}")
    dev, devf = device_subgraphs(p), device_subgraphs(pf)
    check.expect(len(dev) == len(devf), f"{name}: symbolic seq and batch: {len(dev)} dnnl subgraph(s), as with the "
                 f"shape fixed ({len(devf)})")
    saved = save_partitions(path, name)
    for S, B in ((5, 2), (13, 1), (1, 3)):
        x = rng.randn(S, B, 32).astype(np.float32)
        xf = os.path.join(work, f"{name}.x{S}x{B}.npy")
        np.save(xf, x)
        with torch.no_grad():
            want = net(torch.from_numpy(x)).numpy()
        for label, f in saved.items():
            d, r = run_saved(f, {"x": xf}, f"{name}.{label}.{S}x{B}")
            if r.returncode:
                check.fail(f"{name}: saved {label} partition at seq={S} batch={B}: {r.stderr.strip()[-300:]}")
                continue
            e = seamtest.rel_err(np.load(seamtest.output_file(d, "y")), want)
            check.expect(e <= 1e-4, f"{name}: saved {label} partition at seq={S} batch={B} against torch: {e:.1e}")


def dimexpr_model(path, exprs, sym_axis=(1,), shape=None, to=TensorProto.INT64):
    """x [2, 3] -> DimExpr(x) named "the_expr" -> ConstantOfShape -> y."""
    de = helper.make_node("DimExpr", ["x"], ["d"], name="the_expr", domain="ai.seam", exprs=list(exprs),
                          symbols=["a"] * len(sym_axis), sym_input=[0] * len(sym_axis), sym_axis=list(sym_axis),
                          shape=[len(exprs)] if shape is None else shape, to=to)
    cos = helper.make_node("ConstantOfShape", ["d"], ["y"], value=numpy_helper.from_array(np.array([1], np.float32)))
    g = helper.make_graph([de, cos], "g", [vi("x", [2, 3])], [vi("y", None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.seam", 1)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def case_malformed(name):
    if not check.selected(name):
        return
    xf = os.path.join(work, name + ".x.npy")
    np.save(xf, np.zeros((2, 3), np.float32))
    good = dimexpr_model(os.path.join(work, name + ".good.onnx"), ["$0*2", "(($0-1)/2)", "min($0,2)"])
    d, r = run_saved(good, {"x": xf}, name + ".good")
    y = np.load(seamtest.output_file(d, "y")) if r.returncode == 0 else None
    check.expect(y is not None and y.shape == (6, 1, 2), f"{name}: a well-formed DimExpr gives [3*2, (3-1)/2, "
                 f"min(3,2)] = [6, 1, 2]", detail=r.stderr.strip()[-300:] if y is None else str(y.shape))
    bad = [("parse", dict(exprs=["$0+"])), ("garbage", dict(exprs=["$0 ? 1"])), ("symbol", dict(exprs=["$3"])),
           ("div0", dict(exprs=["$0/0"])), ("mod0", dict(exprs=["$0%0"])),
           ("overflow", dict(exprs=["9223372036854775807*$0"])), ("axis", dict(exprs=["$0"], sym_axis=(5,))),
           ("shape", dict(exprs=["$0", "1"], shape=[3])), ("dtype", dict(exprs=["$0"], to=TensorProto.FLOAT)),
           ("deep", dict(exprs=["(" * 200 + "$0" + ")" * 200])),
           ("int32", dict(exprs=["$0*4294967296"], to=TensorProto.INT32))]
    for label, kw in bad:
        f = dimexpr_model(os.path.join(work, f"{name}.{label}.onnx"), **kw)
        _, r = run_saved(f, {"x": xf}, f"{name}.{label}")
        check.expect(r.returncode == 1 and "the_expr" in r.stderr, f"{name}: {label}: seam run exits 1 naming the node",
                     detail=f"exit {r.returncode}: {r.stderr.strip()[-300:]}")


def case_named_twice(name):
    """Two inputs name their dims alike (a [N, S], b [N, S]); y = Reshape(a,
    Shape(b)): its DimExpr reads N and S from a, so b of another S must be
    refused, as the file's own nodes would have refused it."""
    if not check.selected(name):
        return
    nodes = [helper.make_node("Shape", ["b"], ["s"]), helper.make_node("Reshape", ["a", "s"], ["r"]),
             helper.make_node("Add", ["r", "b"], ["y"])]
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, [vi("a", ["N", "S"]), vi("b", ["N", "S"])],
                               [vi("y", None)], name=name, opset=13)
    saved = save_partitions(path, name)
    feeds = {}
    for label, shape in (("a", (2, 3)), ("b", (2, 3)), ("b4", (2, 4))):
        feeds[label] = os.path.join(work, f"{name}.{label}.npy")
        np.save(feeds[label], np.full(shape, 1.5, np.float32))
    for label, f in saved.items():
        d, r = run_saved(f, {"a": feeds["a"], "b": feeds["b"]}, f"{name}.{label}.ok")
        check.expect(r.returncode == 0 and np.array_equal(np.load(seamtest.output_file(d, "y")), np.full((2, 3), 3.0)),
                     f"{name}: {label}: inputs that agree on S run", r.stderr.strip()[-300:])
        _, r = run_saved(f, {"a": feeds["a"], "b": feeds["b4"]}, f"{name}.{label}.bad")
        check.expect(r.returncode == 1 and "both have the dim 'S'" in r.stderr,
                     f"{name}: {label}: b with another S is refused, naming both inputs and the dim",
                     f"exit {r.returncode}: {r.stderr.strip()[-300:]}")


def case_no_fold(name):
    if not check.selected(name):
        return
    nodes, inits, outs = exprs_model()
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, [vi("x", ["N", 4, "H", "W"])],
                               [vi(o, None) for o in outs], inits, name=name, opset=13)
    p, why = plan_json(path, "--no-fold")
    if why:
        return check.fail(f"{name}: {why}")
    ops = {n["op"] for n in p["nodes"]}
    check.expect("Shape" in ops and "DimExpr" not in ops, f"{name}: --no-fold keeps the Shape nodes, makes no DimExpr",
                 detail=str(sorted(ops)))


case_window("window")
case_exprs("exprs")
case_encoder("encoder")
case_malformed("malformed")
case_named_twice("named_twice")
case_no_fold("no_fold")
check.finish()
