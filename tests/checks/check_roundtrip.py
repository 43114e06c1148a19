"""Round trip every model through seam and check the result independently.

usage: /usr/bin/python3 check_roundtrip.py ROUNDTRIP_BINARY WORKDIR MODEL_DIR... [--external] [-k PATTERN]

With --external, seam saves the weights to a side file next to each copy.

The roundtrip binary loads each model, saves it, loads the copy and
compares the two IRs (import -> export -> import). This script then reads
each copy with ONNX's own library: onnx.checker.check_model must accept it,
and it must hold the same graph as the original (nodes, attributes,
initializer values, inputs, outputs, opsets, metadata).

A case is a model: a test folder's name (test_abs) for DIR/*/model.onnx,
else the file's name (resnet18.onnx).
"""
import glob
import os
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

parser = seamtest.arg_parser(__doc__)
parser.add_argument("binary", metavar="ROUNDTRIP_BINARY")
parser.add_argument("work", metavar="WORKDIR")
parser.add_argument("dirs", metavar="MODEL_DIR", nargs="+")
parser.add_argument("--external", action="store_true", help="seam saves the weights to a side file")
args = parser.parse_args()
work, dirs = args.work, args.dirs
extra = ["--external"] if args.external else []
check = seamtest.Checker("roundtrip", args.k)
os.makedirs(work, exist_ok=True)


def case_name(path):
    return os.path.basename(os.path.dirname(path)) if os.path.basename(path) == "model.onnx" else os.path.basename(path)


models = sorted(p for d in dirs for p in glob.glob(os.path.join(d, "*", "model.onnx")))
models += sorted(p for d in dirs for p in glob.glob(os.path.join(d, "*.onnx")))
found = len(models)  # in the folders; the sample below may keep none of them
models = [p for p in models if check.selected(case_name(p))]
if models:
    r = seamtest.Program(args.binary)("--out", work, *extra, *models)
    failures = [line for line in r.stdout.splitlines() if line.startswith("FAIL")]
    if r.returncode not in (0, 1) or (r.returncode == 1 and not failures):
        failures.append(f"FAIL the roundtrip binary died (exit {r.returncode}): {r.stderr[-2000:]}")
    pairs = [line.split(" ", 1) for line in r.stdout.splitlines() if not line.startswith("FAIL")]
else:
    failures, pairs = [], []

T = onnx.TensorProto
INT32_FIELD = {T.INT8: np.int8, T.UINT8: np.uint8, T.INT16: np.int16, T.UINT16: np.uint16, T.INT32: np.int32,
               T.BOOL: np.uint8, T.FLOAT16: np.uint16, T.BFLOAT16: np.uint16}


def tensor_bytes(t):
    """The tensor's elements as packed little-endian bytes, whichever field
    holds them (onnx 1.12's numpy_helper cannot read typed complex data)."""
    if t.data_type == T.STRING:
        return tuple(t.string_data)
    if t.HasField("raw_data"):
        return t.raw_data
    if t.data_type in (T.FLOAT, T.COMPLEX64):
        return np.array(t.float_data, np.float32).tobytes()
    if t.data_type in (T.DOUBLE, T.COMPLEX128):
        return np.array(t.double_data, np.float64).tobytes()
    if t.data_type == T.INT64:
        return np.array(t.int64_data, np.int64).tobytes()
    if t.data_type in (T.UINT32, T.UINT64):
        return np.array(t.uint64_data, np.uint64).astype(np.uint32 if t.data_type == T.UINT32 else np.uint64).tobytes()
    return np.array(t.int32_data, np.int64).astype(INT32_FIELD[t.data_type]).tobytes()


def attr_value(a):
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, onnx.TensorProto):
        return ("tensor", v.name, tuple(v.dims), v.data_type, tensor_bytes(v))
    if isinstance(v, onnx.GraphProto):
        return ("graph", graph_key(v))
    if isinstance(v, list) and v and isinstance(v[0], onnx.GraphProto):
        return ("graphs", [graph_key(g) for g in v])
    if isinstance(v, list) and v and isinstance(v[0], onnx.TensorProto):
        return ("tensors", [(t.name, tuple(t.dims), t.data_type, tensor_bytes(t)) for t in v])
    if isinstance(v, float):
        return np.float32(v).tobytes()
    if isinstance(v, list) and v and isinstance(v[0], float):
        return np.array(v, dtype=np.float32).tobytes()
    if hasattr(v, "SerializeToString"):
        return v.SerializeToString()
    return v


def init_value(t):
    return (t.name, tuple(t.dims), t.data_type, tensor_bytes(t))


def type_key(vi):
    return (vi.name, vi.type.SerializeToString())


def graph_key(g):
    nodes = [(n.op_type, n.domain, n.name, tuple(n.input), tuple(n.output),
              tuple((a.name, attr_value(a)) for a in n.attribute)) for n in g.node]
    sparse = [(init_value(s.values), init_value(s.indices), tuple(s.dims)) for s in g.sparse_initializer]
    return (g.name, nodes, [init_value(t) for t in g.initializer], sparse,
            [type_key(v) for v in g.input], [type_key(v) for v in g.output], [type_key(v) for v in g.value_info])


checked = 0
for out_name, src in pairs:
    try:
        orig = onnx.load(src)
        copy = onnx.load(os.path.join(work, out_name))
        onnx.checker.check_model(copy)
        if graph_key(orig.graph) != graph_key(copy.graph):
            failures.append(f"FAIL {src}: graph differs after the seam round trip")
        elif sorted((o.domain, o.version) for o in orig.opset_import) != sorted((o.domain, o.version) for o in copy.opset_import):
            failures.append(f"FAIL {src}: opsets differ")
        elif [(p.key, p.value) for p in orig.metadata_props] != [(p.key, p.value) for p in copy.metadata_props]:
            failures.append(f"FAIL {src}: metadata differs")
        elif (orig.producer_name, orig.producer_version, orig.domain, orig.model_version, orig.doc_string,
              orig.graph.doc_string) != (copy.producer_name, copy.producer_version, copy.domain,
                                         copy.model_version, copy.doc_string, copy.graph.doc_string):
            failures.append(f"FAIL {src}: model fields or doc strings differ")
        else:  # equal: the copy goes (0.5 GB over the real models; kept when it differs)
            os.remove(os.path.join(work, out_name))
        checked += 1
    except Exception as e:  # the checker's complaint is the message
        failures.append(f"FAIL {src}: {type(e).__name__}: {str(e)[:300]}")

for f in failures:
    check.fail(f.removeprefix("FAIL "))
if not found:
    check.fail(f"no model found in {' '.join(dirs)}")
if checked + len(failures) < len(models):
    check.fail(f"only {checked} of {len(models)} models were checked")
check.finish(f"{len(models)} models, {checked} checked by onnx.checker and compared, {len(failures)} failed")
