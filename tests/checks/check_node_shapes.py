"""Checks seam's type and shape inference against ONNX's conformance data.

usage: /usr/bin/python3 check_node_shapes.py [-v] SEAM_BINARY WORKDIR TESTDATA_DIR... [-k PATTERN]

Each model's declared types of its outputs and value_info are removed first
(written to WORKDIR), so what seam reports is its own inference.

For every test directory (model.onnx plus test_data_set_0/output_*.pb),
the shapes and dtypes of the expected outputs are ground truth. Wherever
seam's inferred output type is fully known it must equal them; where seam
leaves it unknown, that is counted (and listed with -v) but not a failure,
since inference may stay dynamic. Also fails if seam cannot load a model.
A case is a test directory, named as it is (test_abs).
"""
import glob
import json
import os
import sys

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

parser = seamtest.arg_parser(__doc__)
parser.add_argument("-v", dest="verbose", action="store_true", help="list the outputs seam leaves unknown")
parser.add_argument("seam", metavar="SEAM_BINARY")
parser.add_argument("work", metavar="WORKDIR")
parser.add_argument("dirs", metavar="TESTDATA_DIR", nargs="+")
args = parser.parse_args()
verbose, seam, work, dirs = args.verbose, seamtest.Program(args.seam), args.work, args.dirs
check = seamtest.Checker("node shapes", args.k)
os.makedirs(work, exist_ok=True)
DT = {getattr(onnx.TensorProto, n): n.lower() for n in
      ("FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE",
       "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16")}
DT[onnx.TensorProto.FLOAT] = "float32"
DT[onnx.TensorProto.DOUBLE] = "float64"

tests = sorted(d for base in dirs for d in glob.glob(os.path.join(base, "*")) if os.path.exists(os.path.join(d, "model.onnx")))
tests = [d for d in tests if check.selected(os.path.basename(d))]
stats = dict(outputs=0, agree=0, unknown=0, partial=0, mismatch=0, load_fail=0)
problems, unknown = [], []
for d in tests:
    name = os.path.basename(d)
    model = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
    stripped = onnx.ModelProto()
    stripped.CopyFrom(model)
    del stripped.graph.value_info[:]
    for o in stripped.graph.output:
        if o.type.HasField("tensor_type"):
            o.type.tensor_type.elem_type = 0
            o.type.tensor_type.ClearField("shape")
    path = os.path.join(work, name + ".onnx")
    with open(path, "wb") as f:
        f.write(stripped.SerializeToString())
    r = seam("inspect", path, "--json")
    if r.returncode != 0:
        stats["load_fail"] += 1
        problems.append(f"{name}: seam cannot load it: {r.stderr.strip()}")
        continue
    info = json.loads(r.stdout)
    for k, out in enumerate(info["outputs"]):
        pb = os.path.join(d, "test_data_set_0", f"output_{k}.pb")
        if not os.path.exists(pb) or not model.graph.output[k].type.HasField("tensor_type"):
            continue
        t = onnx.TensorProto()
        with open(pb, "rb") as f:
            t.ParseFromString(f.read())
        want_shape, want_dtype = list(t.dims), DT.get(t.data_type)
        if model.graph.output[k].type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16:
            want_dtype = "bfloat16"  # onnx 1.12's test data stores bfloat16 outputs as uint16
        stats["outputs"] += 1
        shape, dtype = out["shape"], out["dtype"]
        if dtype is not None and dtype != want_dtype:
            stats["mismatch"] += 1
            problems.append(f"{name}: output '{out['name']}' dtype {dtype}, expected {want_dtype}")
            continue
        if shape is None or dtype is None:
            stats["unknown"] += 1
            unknown.append(f"{name}:{out['name']}")
            continue
        if len(shape) != len(want_shape):
            stats["mismatch"] += 1
            problems.append(f"{name}: output '{out['name']}' rank {len(shape)} {shape}, expected {want_shape}")
            continue
        bad = [i for i, (a, b) in enumerate(zip(shape, want_shape)) if isinstance(a, int) and a != b]
        if bad:
            stats["mismatch"] += 1
            problems.append(f"{name}: output '{out['name']}' shape {shape}, expected {want_shape}")
        elif all(isinstance(a, int) for a in shape):
            stats["agree"] += 1
        else:
            stats["partial"] += 1
            unknown.append(f"{name}:{out['name']} (partial {shape})")

for p in problems:
    check.fail(p)
if verbose:
    for u in unknown:
        print("unknown", u)
check.finish(f"{len(tests)} models, {stats['outputs']} outputs: {stats['agree']} agree fully, "
             f"{stats['partial']} partly known, {stats['unknown']} unknown, {stats['mismatch']} mismatch, "
             f"{stats['load_fail']} failed to load")
