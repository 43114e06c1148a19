"""Checks seam's type and shape inference on exported models against two
independent references.

usage: /usr/bin/python3 check_inference.py [--strict] SEAM MODEL.onnx... [-k PATTERN]

 (a) onnx.shape_inference.infer_shapes: for every value where ONNX infers a
     tensor dtype and a fully static shape, seam must report the same; a
     value seam leaves unknown where ONNX knows it is counted, and with
     --strict it is a failure;
 (b) torch's outputs (NAME.expected.<k>.npy next to the model): the graph
     outputs' shapes must equal them. A model with symbolic input dims is
     checked twice: as is (a symbolic output dim then matches any size, the
     rank must agree), and with --shape set from NAME.input.npy, where every
     output dim must be known and equal torch's.

A case is a model, named by its file name without .onnx.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import shape_inference

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

parser = seamtest.arg_parser(__doc__)
parser.add_argument("--strict", action="store_true", help="a value seam leaves unknown where ONNX knows it fails")
parser.add_argument("seam", metavar="SEAM")
parser.add_argument("models", metavar="MODEL.onnx", nargs="+")
args = parser.parse_args()
strict, seam, models = args.strict, seamtest.Program(args.seam), args.models
check = seamtest.Checker("inference", args.k)
DT = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string", 9: "bool",
      10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16"}
for path in models:
    if not check.selected(os.path.basename(path)[:-5]):
        continue
    r = seam("inspect", path, "--json", "--values")
    if r.returncode != 0:
        check.fail(f"{path}: seam cannot load it: {r.stderr.strip()}")
        continue
    seen = {v["name"]: v for v in json.loads(r.stdout)["values"]}
    ref = shape_inference.infer_shapes(onnx.load(path), strict_mode=False)
    infos = list(ref.graph.value_info) + list(ref.graph.output)
    checked = agree = unknown = 0
    problems = []
    for vi in infos:
        t = vi.type.tensor_type
        if not vi.type.HasField("tensor_type") or not t.elem_type or not t.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        if any(d is None for d in dims):
            continue
        checked += 1
        s = seen.get(vi.name)
        if s is None or s["dtype"] is None or s["shape"] is None or any(not isinstance(d, int) for d in s["shape"]):
            unknown += 1
            if strict:
                problems.append(f"'{vi.name}': seam does not know it; onnx says {DT.get(t.elem_type)} {dims}")
            continue
        if s["dtype"] != DT.get(t.elem_type) or s["shape"] != dims:
            problems.append(f"'{vi.name}': seam {s['dtype']} {s['shape']}, onnx {DT.get(t.elem_type)} {dims}")
        else:
            agree += 1
    # torch's own outputs
    base = path[:-5]
    m = onnx.load(path, load_external_data=False)
    feeds = seamtest.feeds(m)
    symbolic = any(seamtest.has_symbolic_dims(i) for i in feeds)
    fixed = None
    if symbolic and len(feeds) == 1 and os.path.exists(f"{base}.input.npy"):
        shape = seamtest.shape_arg(np.load(f"{base}.input.npy").shape)
        r2 = seam("inspect", path, "--json", "--values", "--shape", f"{feeds[0].name}={shape}")
        if r2.returncode != 0:
            problems.append(f"--shape {feeds[0].name}={shape} refused: {r2.stderr.strip()}")
        else:
            fixed = {v["name"]: v for v in json.loads(r2.stdout)["values"]}
    for k, o in enumerate(m.graph.output):
        f = f"{base}.expected.{k}.npy"
        if os.path.exists(f):
            want = list(np.load(f).shape)
            got = seen.get(o.name, {}).get("shape")
            if got is None or len(got) != len(want) or any(isinstance(g, int) and g != w for g, w in zip(got, want)):
                problems.append(f"output '{o.name}': seam {got}, torch {want}")
            if fixed is not None and fixed.get(o.name, {}).get("shape") != want:
                problems.append(f"output '{o.name}' with --shape: seam {fixed.get(o.name, {}).get('shape')}, torch {want}")
    unknown_all = sum(1 for v in seen.values() if v["dtype"] is None or v["shape"] is None
                      or any(not isinstance(d, int) for d in v["shape"]))
    summary = (f"{os.path.basename(path)}: {checked} values checked against onnx, "
               f"{agree} agree, {unknown} unknown in seam, {len(problems)} problems; "
               f"{unknown_all} of {len(seen)} values not fully static in seam")
    if check.expect(not problems, summary):
        continue
    for p in problems[:10]:
        print("     ", p)
check.finish()
