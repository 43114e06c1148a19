"""The op corpus of bench/op_bench.py: every node of a set of ONNX models as a
"case" (op type, attributes, input shapes and dtypes, which inputs are
constant and, when small, their values), deduplicated to shape classes, and
each case written as a one-node model with .npy inputs.

usage: /usr/bin/python3 bench/op_corpus.py [DIR...] [--out DIR] [--seam build/seam]
           [--ops Conv,PRelu] [--max-cases N]
(bench/op_bench.py calls it; run alone it writes the cases and prints them)

Shapes: a model's symbolic input dims are fixed to its NAME.input*.npy files
(the unseen set's convention: NAME.input.npy for graph input 0,
NAME.input_K.npy for input K; random data when a file is missing), then ONNX
shape inference. Values still without a shape (data-dependent: NonZero,
NonMaxSuppression, TopK with a computed k ...) and small values computed at
run time (shape arithmetic, a Reshape's shape, Resize's sizes) are taken
from one run of the model on seam's CPU kernels with them added as outputs
(`seam run --output-dir`). Nodes whose inputs are all constant or static
(Shape of a known shape, and what follows from those) are folded by every
runtime: counted, not timed. If/Loop/Scan and their bodies are skipped.

A case's one-node model keeps its constant inputs as initializers: the
original values when small (<= 4096 elements: shapes, axes, scales, pads,
thresholds), random ones of the same shape and dtype otherwise; its other
inputs are graph inputs with random .npy data in valid ranges (indices in
bounds, NonMaxSuppression boxes with y1<y2 and x1<x2, RoiAlign rois inside
the image, positive values for Log/Sqrt/Pow/Reciprocal, a divisor away
from 0).
"""
import argparse
import collections
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference, TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
CONTROL = {"If", "Loop", "Scan"}
SMALL = 4096  # constants up to this many elements keep their values
KEY_VALUE = 64  # constants up to this many elements are part of the case's key
NP_OF = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64, TensorProto.INT64: np.int64,
         TensorProto.INT32: np.int32, TensorProto.INT16: np.int16, TensorProto.INT8: np.int8,
         TensorProto.UINT8: np.uint8, TensorProto.BOOL: np.bool_, TensorProto.FLOAT16: np.float16,
         TensorProto.UINT16: np.uint16, TensorProto.UINT32: np.uint32, TensorProto.UINT64: np.uint64}
DT_NAME = {v: TensorProto.DataType.Name(v).lower() for v in NP_OF}
DT_OF_NAME = {v: k for k, v in DT_NAME.items()}


def model_inputs(path, g, inits):
    """{graph input name: np array} from NAME.input*.npy, random when missing."""
    base = os.path.splitext(path)[0]
    out = {}
    real = [i for i in g.input if i.name not in inits]
    for k, vi in enumerate(real):
        f = base + (".input.npy" if k == 0 else f".input_{k}.npy")
        if os.path.exists(f):
            out[vi.name] = np.load(f)
        else:
            t = vi.type.tensor_type
            shape = [d.dim_value if d.HasField("dim_value") else 1 for d in t.shape.dim]
            dt = NP_OF.get(t.elem_type, np.float32)
            out[vi.name] = (np.random.default_rng(0).standard_normal(shape).astype(dt) if dt in (np.float32, np.float64)
                            else np.zeros(shape, dt))
    return out


def fix_inputs(m, feeds):
    for vi in m.graph.input:
        if vi.name in feeds:
            dims = vi.type.tensor_type.shape.dim
            for d, n in zip(dims, feeds[vi.name].shape):
                d.Clear()
                d.dim_value = int(n)


def types_of(m):
    """{value: (elem_type, shape list with None for unknown, or None)}"""
    out = {}
    for v in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        t = v.type.tensor_type
        if not v.type.HasField("tensor_type"):
            continue
        shape = None
        if t.HasField("shape"):
            shape = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        if v.name not in out or (out[v.name][1] is None or None in out[v.name][1]):
            out[v.name] = (t.elem_type, shape)
    return out


def materialize(seam, path, m, names, types, feeds, work):
    """Runs the model on seam's CPU kernels with `names` added as outputs;
    {name: array} of those it could get."""
    if not names:
        return {}
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    have = {o.name for o in m2.graph.output}
    for n in names:
        if n not in have:
            et = types.get(n, (TensorProto.FLOAT, None))[0] or TensorProto.FLOAT
            m2.graph.output.append(helper.make_tensor_value_info(n, et, None))
    mp = os.path.join(work, "mat.onnx")
    onnx.save(m2, mp)
    args = []
    for k, (name, arr) in enumerate(feeds.items()):
        f = os.path.join(work, f"in{k}.npy")
        np.save(f, arr)
        args += ["--input", f"{name}={f}"]
    od = os.path.join(work, "out")
    r = subprocess.run([seam, "run", mp, *args, "--output-dir", od, "--quiet", "--threads", "2"],
                       capture_output=True, text=True)
    if r.returncode:
        print(f"op_corpus: {os.path.basename(path)}: seam could not run it for the unknown shapes "
              f"({(r.stderr.strip().splitlines() or ['?'])[-1][:160]})", file=sys.stderr)
        return {}
    got = {}
    for n in names:
        f = os.path.join(od, "".join(c if c.isalnum() or c in "._-" else "_" for c in n) + ".npy")
        if os.path.exists(f):
            got[n] = np.load(f)
    return got


def attr_value(a):
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, onnx.TensorProto):  # the key's text; write_case copies the attribute itself
        return {"tensor": numpy_helper.to_array(v).tolist(), "dtype": v.data_type, "dims": list(v.dims)}
    if isinstance(v, (list, tuple)):
        return [x.decode() if isinstance(x, bytes) else x for x in v]
    return v


def simple_body(node):
    """The branches of an If with at most 40 nodes and no control flow inside, else None."""
    if node.op_type != "If":
        return None
    gs = [a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]
    if any(len(b.node) > 40 or any(n.op_type in CONTROL for n in b.node) for b in gs):
        return None
    return gs


def outer_names(b):
    made = {o for n in b.node for o in n.output} | {i.name for i in b.initializer} | {i.name for i in b.input}
    return sorted({x for n in b.node for x in n.input if x and x not in made})


def body_model(m, b, outer, consts, got, types, path, k):
    """A branch as a model of its own: outer values it reads become inputs (NAME.input*.npy next to it,
    from the run of the parent) or initializers (the parent's constants)."""
    feeds = [x for x in outer if x not in consts]
    if any(x not in got for x in feeds):
        return None
    inits = [numpy_helper.from_array(np.asarray(consts[x]), x) for x in outer if x in consts]
    ins = [helper.make_tensor_value_info(x, helper.np_dtype_to_tensor_dtype(got[x].dtype)
                                         if hasattr(helper, "np_dtype_to_tensor_dtype") else
                                         onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[got[x].dtype], list(got[x].shape))
           for x in feeds]
    g = helper.make_graph(list(b.node), b.name or "body", ins, list(b.output), list(b.initializer) + inits)
    bm = helper.make_model(g, opset_imports=list(m.opset_import), ir_version=m.ir_version)
    base = path + f"-if{k}"
    onnx.save(bm, base + ".onnx")
    for j, x in enumerate(feeds):
        np.save(base + (".input.npy" if j == 0 else f".input_{j}.npy"), got[x])
    return base + ".onnx"


def collect_model(path, seam, stats, label=None):
    """Yields (key, case) for every timed node of one model (and of its simple If branches)."""
    m = onnx.load(path)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    feeds = model_inputs(path, g, inits)
    fix_inputs(m, feeds)
    try:
        mi = shape_inference.infer_shapes(m)
    except Exception as e:  # noqa: BLE001
        print(f"op_corpus: {path}: ONNX shape inference failed ({e}); using the model's own", file=sys.stderr)
        mi = m
    types = types_of(mi)
    consts = {n: numpy_helper.to_array(t) for n, t in inits.items()}
    for n, t in inits.items():
        types[n] = (t.data_type, list(t.dims))
    static = set(consts)  # values every runtime folds
    for node in g.node:
        if node.op_type == "Constant" and node.attribute:
            a = node.attribute[0]
            if a.name == "value":
                consts[node.output[0]] = numpy_helper.to_array(a.t)
            elif a.name in ("value_float", "value_int", "value_floats", "value_ints"):
                consts[node.output[0]] = np.array(helper.get_attribute_value(a),
                                                  np.float32 if "float" in a.name else np.int64)
            else:
                continue
            types[node.output[0]] = (TensorProto.FLOAT if consts[node.output[0]].dtype == np.float32 else
                                     helper.np_dtype_to_tensor_dtype(consts[node.output[0]].dtype)
                                     if hasattr(helper, "np_dtype_to_tensor_dtype") else
                                     onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[consts[node.output[0]].dtype],
                                     list(consts[node.output[0]].shape))
            static.add(node.output[0])
    timed = []
    bodies = []
    for node in g.node:
        if node.op_type == "Constant":
            continue
        if node.op_type in CONTROL:
            gs = simple_body(node)
            if gs:
                bodies += gs
                stats["If branches timed"] += len(gs)
            else:
                stats["control flow (skipped)"] += 1
            continue
        ins = [x for x in node.input if x]
        if node.op_type in ("Shape", "Size") and ins and types.get(ins[0], (0, None))[1] is not None \
                and None not in types[ins[0]][1]:
            static.update(node.output)
            stats["folded (static)"] += 1
            continue
        if ins and all(x in static for x in ins) and node.op_type not in ("RandomNormal", "RandomUniform"):
            static.update(node.output)
            stats["folded (static)"] += 1
            continue
        timed.append(node)
    # values to take from a run: unknown shapes, small run-time values, static ones without a value
    want = set()
    for node in timed:
        for x in list(node.input) + list(node.output):
            if not x or x in consts:
                continue
            et, shape = types.get(x, (None, None))
            if shape is None or None in shape or x in static or (np.prod(shape) <= 64 and et != TensorProto.FLOAT):
                want.add(x)
    for b in bodies:
        want.update(x for x in outer_names(b) if x not in consts)
    with tempfile.TemporaryDirectory() as work:
        got = materialize(seam, path, m, sorted(want), types, feeds, work)
        mname = label or os.path.basename(path)
        for k, b in enumerate(bodies):
            bp = body_model(m, b, outer_names(b), consts, got, types, os.path.join(work, "body"), k)
            if bp is None:
                stats["If branch without its inputs (skipped)"] += 1
                continue
            yield from collect_model(bp, seam, stats, f"{mname} (If branch)")
    for n, arr in got.items():
        et = helper.np_dtype_to_tensor_dtype(arr.dtype) if hasattr(helper, "np_dtype_to_tensor_dtype") else \
            onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[arr.dtype]
        types[n] = (et, list(arr.shape))
        if n in static or arr.size <= 64 and arr.dtype != np.float32:
            consts.setdefault(n, arr) if n in static else None
    small_runtime = {n: a for n, a in got.items() if a.size <= 64 and a.dtype != np.float32}
    for node in timed:
        inputs = []
        ok = True
        for x in node.input:
            if not x:
                inputs.append(None)
                continue
            et, shape = types.get(x, (None, None))
            if shape is None or None in shape or et not in NP_OF:
                ok = False
                break
            const = x in consts or x in static
            val = consts.get(x, small_runtime.get(x))
            inputs.append({"shape": [int(s) for s in shape], "dtype": DT_NAME[et], "const": bool(const),
                           "value": val if val is not None and val.size <= SMALL else None,
                           "runtime_value": x not in consts and val is not None})
        outs = []
        for y in node.output:
            et, shape = types.get(y, (None, None))
            outs.append({"dtype": DT_NAME.get(et), "shape": shape})
        if not ok:
            stats["unknown input shape (skipped)"] += 1
            continue
        attrs = {a.name: attr_value(a) for a in node.attribute}
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            stats["control flow (skipped)"] += 1
            continue
        c = {"op": node.op_type, "domain": node.domain or "", "attrs": attrs, "inputs": inputs, "outputs": outs,
                    "opset": {o.domain: o.version for o in m.opset_import}, "ir_version": m.ir_version,
                    "node": node.name, "model": mname,
                    "attr_protos": [a.SerializeToString() for a in node.attribute]}
        yield case_key(c), c


def case_key(c):
    key_inputs = []
    for i in c["inputs"]:
        if i is None:
            key_inputs.append(None)
        else:
            v = i["value"]
            key_inputs.append([i["shape"], i["dtype"], i["const"],
                               v.tolist() if v is not None and v.size <= KEY_VALUE and i["const"] else None])
    return json.dumps([c["domain"], c["op"], c["attrs"], key_inputs, len(c["outputs"])], sort_keys=True)


POST = {"NonMaxSuppression", "TopK", "GatherND", "ScatterND", "RoiAlign", "NonZero"}
SYNTH_ROWS = 1000


def synthetic(c):
    """A post-processing case whose data-dependent rows were 0 in the run (random weights detect nothing):
    the same case with every 0 dim of a non-constant input made SYNTH_ROWS."""
    if c["op"] not in POST or not any(i and not i["const"] and 0 in i["shape"] for i in c["inputs"]):
        return None
    s = dict(c)
    s["inputs"] = [None if i is None else dict(i, shape=[SYNTH_ROWS if d == 0 else d for d in i["shape"]])
                   if not i["const"] else i for i in c["inputs"]]
    for i in s["inputs"]:  # run-time values (TopK's k) came from the empty run: drawn again
        if i is not None and i.get("runtime_value"):
            i["value"] = None
    s["outputs"] = [dict(o, shape=None) for o in c["outputs"]]
    s["model"] = c["model"] + f" (0 rows -> {SYNTH_ROWS}, synthetic)"
    return s


def collect(dirs, seam, ops=None):
    """{key: case} over every model of dirs, with count/models, and stats."""
    cases = collections.OrderedDict()
    stats = collections.Counter()
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.onnx"))):
            if os.path.basename(path) == "peak_matmul.onnx":
                continue
            try:
                for key, c0 in collect_model(path, seam, stats):
                    stats["nodes"] += 1
                    syn = synthetic(c0)
                    for k, c in [(key, c0)] + ([(case_key(syn), syn)] if syn else []):
                        if ops and c["op"] not in ops:
                            continue
                        if k in cases:
                            cases[k]["count"] += 1
                            cases[k]["models"].add(c["model"])
                        else:
                            c["count"], c["models"] = 1, {c["model"]}
                            cases[k] = c
            except Exception as e:  # noqa: BLE001
                print(f"op_corpus: {path}: {type(e).__name__}: {e}", file=sys.stderr)
                stats["models failed"] += 1
            stats["models"] += 1
    return cases, stats


# ---- one-node models ---------------------------------------------------------------------------------------------

def shape_class(c):
    """A short text for a case's shapes: '1x64x56x56, w:64x64x3x3 k3 s2 g64'."""
    parts = []
    for i in c["inputs"]:
        if i is None:
            parts.append("-")
            continue
        s = "x".join(map(str, i["shape"])) or "scalar"
        if i["dtype"] != "float":
            s += ":" + {"int64": "i64", "int32": "i32", "bool": "b", "uint8": "u8"}.get(i["dtype"], i["dtype"])
        if i["const"]:
            v = i["value"]
            s = ("c" + (str(v.tolist()).replace(" ", "") if v is not None and v.size <= 8 else s))
        parts.append(s)
    a = c["attrs"]
    extra = []
    for name, short in (("kernel_shape", "k"), ("strides", "s"), ("group", "g"), ("dilations", "d"), ("pads", "p"),
                        ("axis", "ax"), ("axes", "ax"), ("perm", "perm"), ("mode", ""), ("transB", "tB"),
                        ("keepdims", "kd"), ("coordinate_transformation_mode", "ctm"), ("largest", "L"),
                        ("center_point_box", "cpb"), ("output_height", "oh"), ("sampling_ratio", "sr"),
                        ("to", "to"), ("direction", "dir"), ("hidden_size", "h")):
        if name in a:
            v = a[name]
            if isinstance(v, list):
                if name in ("strides", "dilations") and all(x == 1 for x in v):
                    continue
                if name == "pads" and all(x == 0 for x in v):
                    continue
                v = ",".join(map(str, v)) if len(set(v)) > 1 or name in ("perm", "axes") else str(v[0])
            if name == "group" and v == 1:
                continue
            extra.append(f"{short}{v}")
    return ", ".join(parts) + ((" " + " ".join(extra)) if extra else "")


def case_id(key):
    return hashlib.sha1(key.encode()).hexdigest()[:10]


def gen_data(c, k, rng, shape, dtype):
    """Random data for input k of case c, in the range the op needs."""
    op, a = c["op"], c["attrs"]
    npd = NP_OF[DT_OF_NAME[dtype]]
    ins = c["inputs"]

    def dim_of(i, axis):
        s = ins[i]["shape"]
        return s[axis % len(s)] if s else 1

    if op in ("Gather", "GatherElements") and k == 1:
        n = dim_of(0, a.get("axis", 0))
        if op == "GatherElements":
            n = dim_of(0, a.get("axis", 0))
        return rng.integers(0, max(n, 1), size=shape).astype(npd)
    if op == "GatherND" and k == 1:
        b = a.get("batch_dims", 0)
        data = ins[0]["shape"]
        last = shape[-1]
        cols = [rng.integers(0, max(data[b + j], 1), size=shape[:-1]) for j in range(last)]
        return np.stack(cols, -1).astype(npd)
    if op == "ScatterND" and k == 1:
        data = ins[0]["shape"]
        last = shape[-1]
        nidx = int(np.prod(shape[:-1]))
        space = int(np.prod(data[:last]))
        flat = rng.permutation(space)[:nidx] if nidx <= space else rng.integers(0, space, nidx)
        return np.stack(np.unravel_index(flat, data[:last]), -1).reshape(shape).astype(npd)
    if op in ("ScatterElements", "Scatter") and k == 1:
        n = dim_of(0, a.get("axis", 0))
        return rng.integers(0, max(n, 1), size=shape).astype(npd)
    if op == "NonMaxSuppression" and k == 0:  # boxes [B, N, 4]
        yx = rng.uniform(0, 300, size=shape[:-1] + [2])
        hw = rng.uniform(4, 60, size=shape[:-1] + [2])
        if a.get("center_point_box", 0):
            return np.concatenate([yx, hw], -1).astype(npd)
        return np.concatenate([yx, yx + hw], -1).astype(npd)
    if op == "NonMaxSuppression" and k == 1:
        return rng.uniform(0, 1, size=shape).astype(npd)
    if op == "RoiAlign" and k == 1:  # rois [R, 4] x1,y1,x2,y2 in input coordinates
        scale = a.get("spatial_scale", 1.0)
        h, w = dim_of(0, 2) / scale, dim_of(0, 3) / scale
        x1 = rng.uniform(0, w * 0.7, shape[0])
        y1 = rng.uniform(0, h * 0.7, shape[0])
        x2 = x1 + rng.uniform(4, w * 0.3 + 4, shape[0])
        y2 = y1 + rng.uniform(4, h * 0.3 + 4, shape[0])
        return np.stack([x1, y1, np.minimum(x2, w - 1), np.minimum(y2, h - 1)], -1).astype(npd)
    if op == "RoiAlign" and k == 2:
        return rng.integers(0, dim_of(0, 0), size=shape).astype(npd)
    if op == "TopK" and k == 1:  # torchvision's detectors: topk_candidates 1000
        return np.array([min(1000, dim_of(0, a.get("axis", -1)))], npd)
    if npd == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(npd, np.integer):
        lo = 1 if op in ("Div", "Mod") and k == 1 else 0
        return rng.integers(lo, 10, size=shape).astype(npd)
    x = rng.standard_normal(shape)
    if op in ("Log", "Sqrt", "Reciprocal") or (op == "Pow" and k == 0) or (op == "Div" and k == 1):
        x = np.abs(x) + 0.5
    return x.astype(npd)


def write_case(c, key, outdir, rng):
    """Writes outdir/<id>/model.onnx and its inputs; returns (model path, {input name: npy})."""
    cid = case_id(key)
    d = os.path.join(outdir, cid)
    os.makedirs(d, exist_ok=True)
    mp = os.path.join(d, "model.onnx")
    inits, gins, feeds, names = [], [], {}, []
    for k, i in enumerate(c["inputs"]):
        if i is None:
            names.append("")
            continue
        name = f"in{k}"
        names.append(name)
        et = DT_OF_NAME[i["dtype"]]
        if i["const"] or i.get("runtime_value"):
            v = i["value"]
            if v is None:
                v = gen_data(c, k, rng, i["shape"], i["dtype"])
            inits.append(numpy_helper.from_array(np.asarray(v).astype(NP_OF[et]).reshape(i["shape"]), name))
        else:
            v = gen_data(c, k, rng, i["shape"], i["dtype"])
            f = os.path.join(d, name + ".npy")
            np.save(f, v)
            feeds[name] = f
            gins.append(helper.make_tensor_value_info(name, et, i["shape"]))
    outs = [helper.make_tensor_value_info(f"out{j}", DT_OF_NAME.get(o["dtype"] or "float", TensorProto.FLOAT), None)
            for j, o in enumerate(c["outputs"])]
    node = helper.make_node(c["op"], names, [o.name for o in outs], domain=c["domain"] or None, name="node")
    for blob in c["attr_protos"]:
        at = onnx.AttributeProto()
        at.ParseFromString(blob)
        node.attribute.append(at)
    g = helper.make_graph([node], "case", gins, outs, inits)
    opsets = [helper.make_opsetid(dom, ver) for dom, ver in c["opset"].items()]
    m = helper.make_model(g, opset_imports=opsets, ir_version=c["ir_version"], producer_name="op_corpus")
    onnx.save(m, mp)
    return mp, feeds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--out", default="/tmp/op-cases")
    ap.add_argument("--seam", default=os.path.join(HERE, "..", "build", "seam"))
    ap.add_argument("--ops", default="")
    a = ap.parse_args()
    dirs = a.dirs or ["/work/bench-models"] + (["/work/bench-unseen"] if os.path.isdir("/work/bench-unseen") else [])
    cases, stats = collect(dirs, a.seam, set(a.ops.split(",")) - {""} or None)
    print(dict(stats), len(cases), "cases")
    per = collections.Counter(c["op"] for c in cases.values())
    print(sorted(per.items(), key=lambda kv: -kv[1]))


if __name__ == "__main__":
    main()
