"""Round trip every model through seam and check the result independently.

usage: /usr/bin/python3 check_roundtrip.py ROUNDTRIP_BINARY WORKDIR MODEL_DIR...

The roundtrip binary loads each model, saves it, loads the copy and
compares the two IRs (import -> export -> import). This script then reads
each copy with ONNX's own library: onnx.checker.check_model must accept it,
and it must hold the same graph as the original (nodes, attributes,
initializer values, inputs, outputs, opsets, metadata).
"""
import glob
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

binary, work, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(work, exist_ok=True)
models = sorted(p for d in dirs for p in glob.glob(os.path.join(d, "*", "model.onnx")))
models += sorted(p for d in dirs for p in glob.glob(os.path.join(d, "*.onnx")))
r = subprocess.run([binary, "--out", work, *models], capture_output=True, text=True)
failures = [line for line in r.stdout.splitlines() if line.startswith("FAIL")]
if r.returncode not in (0, 1) or (r.returncode == 1 and not failures):
    failures.append(f"FAIL the roundtrip binary died (exit {r.returncode}): {r.stderr[-2000:]}")
pairs = [line.split(" ", 1) for line in r.stdout.splitlines() if not line.startswith("FAIL")]


def attr_value(a):
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, onnx.TensorProto):
        return ("tensor", numpy_helper.to_array(v).tobytes() if v.data_type != onnx.TensorProto.STRING else list(v.string_data))
    if isinstance(v, onnx.GraphProto):
        return ("graph", graph_key(v))
    if isinstance(v, list) and v and isinstance(v[0], onnx.GraphProto):
        return ("graphs", [graph_key(g) for g in v])
    if isinstance(v, list) and v and isinstance(v[0], onnx.TensorProto):
        return ("tensors", [numpy_helper.to_array(t).tobytes() for t in v])
    if isinstance(v, float):
        return np.float32(v).tobytes()
    if isinstance(v, list) and v and isinstance(v[0], float):
        return np.array(v, dtype=np.float32).tobytes()
    if hasattr(v, "SerializeToString"):
        return v.SerializeToString()
    return v


def init_value(t):
    if t.data_type == onnx.TensorProto.STRING:
        return (t.name, tuple(t.dims), tuple(t.string_data))
    return (t.name, tuple(t.dims), t.data_type, numpy_helper.to_array(t).tobytes())


def type_key(vi):
    return (vi.name, vi.type.SerializeToString())


def graph_key(g):
    nodes = [(n.op_type, n.domain, n.name, tuple(n.input), tuple(n.output),
              tuple((a.name, attr_value(a)) for a in n.attribute)) for n in g.node]
    return (g.name, nodes, [init_value(t) for t in g.initializer],
            [type_key(v) for v in g.input], [type_key(v) for v in g.output])


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
        checked += 1
    except Exception as e:  # the checker's complaint is the message
        failures.append(f"FAIL {src}: {type(e).__name__}: {str(e)[:300]}")

for f in failures:
    print(f)
print(f"roundtrip: {len(models)} models, {checked} checked by onnx.checker and compared, {len(failures)} failed")
sys.exit(1 if failures or not models or checked + len(failures) < len(models) else 0)
