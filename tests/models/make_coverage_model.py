"""Writes models that use every ONNX element type (in raw_data and in the
typed fields), every attribute kind, nested graphs, sparse initializers,
metadata, doc strings and a custom-domain opset, for the round-trip test.

usage: /usr/bin/python3 make_coverage_model.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)

NP = {
    TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64, TensorProto.FLOAT16: np.float16,
    TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8, TensorProto.INT16: np.int16,
    TensorProto.UINT16: np.uint16, TensorProto.INT32: np.int32, TensorProto.INT64: np.int64,
    TensorProto.UINT32: np.uint32, TensorProto.UINT64: np.uint64, TensorProto.BOOL: np.bool_,
    TensorProto.COMPLEX64: np.complex64, TensorProto.COMPLEX128: np.complex128,
}


def values(dt, shape):
    t = NP[dt]
    if dt == TensorProto.BOOL:
        return rng.integers(0, 2, shape).astype(t)
    if np.issubdtype(t, np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(t)
    if np.issubdtype(t, np.floating):
        return rng.standard_normal(shape).astype(t)
    info = np.iinfo(t)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape).astype(t)


inits = []
for dt in NP:
    name = TensorProto.DataType.Name(dt).lower()
    a = values(dt, (3, 5))
    inits.append(numpy_helper.from_array(a, name + "_raw"))  # raw_data
    typed = helper.make_tensor(name + "_typed", dt, a.shape, a.flatten().tolist()
                               if dt not in (TensorProto.FLOAT16,) else a.view(np.uint16).flatten().tolist(),
                               raw=False)
    inits.append(typed)
bf = helper.make_tensor("bfloat16_typed", TensorProto.BFLOAT16, [4], [1, 2, 3, 4])
inits.append(bf)
inits.append(helper.make_tensor("strings", TensorProto.STRING, [2], [b"hello", b"\x00\xffbytes"]))
inits.append(numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "big_weight"))
inits.append(numpy_helper.from_array(np.array(3.5, dtype=np.float32), "scalar"))
inits.append(numpy_helper.from_array(np.zeros((0, 4), dtype=np.float32), "empty"))
inits[0].doc_string = "a documented initializer"

body = helper.make_graph([helper.make_node("Add", ["x", "scalar"], ["b_out"], name="in_body")], "then_body",
                         [], [helper.make_tensor_value_info("b_out", TensorProto.FLOAT, [2, 3])])
body2 = helper.make_graph([helper.make_node("Neg", ["x"], ["e_out"])], "else_body",
                          [], [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, [2, 3])])
sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "sv"),
                                   numpy_helper.from_array(np.array([1, 4], np.int64), "si"), [2, 3])
tp = helper.make_tensor_type_proto(TensorProto.FLOAT, [2, "n"])
attrs_node = helper.make_node(
    "Everything", ["x"], ["custom_out"], name="all_attrs", domain="com.example", doc_string="node doc",
    f=1.25, i=-7, s="text", t=numpy_helper.from_array(np.arange(6, dtype=np.int64).reshape(2, 3), "tattr"),
    g=body2, floats=[1.0, -2.5], ints=[1, 2, 3], strings=["a", "bc"],
    tensors=[numpy_helper.from_array(np.ones(2, np.float32), "t1")], graphs=[body, body2],
    sparse_tensor=sparse, sparse_tensors=[sparse], type_proto=tp, type_protos=[tp, tp])
nodes = [
    helper.make_node("If", ["cond"], ["if_out"], name="", then_branch=body, else_branch=body2),
    attrs_node,
    helper.make_node("Identity", ["if_out"], ["y"]),  # unnamed: seam names it, but must not write the name
]
graph = helper.make_graph(
    nodes, "coverage", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                        helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "n"]),
     helper.make_tensor_value_info("custom_out", TensorProto.FLOAT, [2, "m"])],
    initializer=inits, doc_string="graph doc",
    value_info=[helper.make_tensor_value_info("if_out", TensorProto.FLOAT, [2, 3])],
    sparse_initializer=[helper.make_sparse_tensor(numpy_helper.from_array(np.array([5.0], np.float32), "sp_init"),
                                                  numpy_helper.from_array(np.array([0], np.int64), "sp_idx"), [4])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 2)],
                          producer_name="seam-tests", producer_version="1", doc_string="model doc",
                          model_version=42, domain="org.seam.test")
helper.set_model_props(model, {"author": "seam", "purpose": "round trip"})
onnx.save(model, os.path.join(out, "coverage.onnx"))

# The same model with its weights in a side file, as torch.onnx writes big models.
ext_dir = os.path.join(out, "external")
os.makedirs(ext_dir, exist_ok=True)
ext = onnx.ModelProto()
ext.CopyFrom(model)
onnx.save(ext, os.path.join(ext_dir, "coverage_ext.onnx"), save_as_external_data=True,
          all_tensors_to_one_file=True, location="coverage_ext.data", size_threshold=64)
print("wrote", os.path.join(out, "coverage.onnx"), "and", os.path.join(ext_dir, "coverage_ext.onnx"))
