"""MatMul and Gemm with a constant weight pack it at session creation
(src/backends/cpu/gemm.c, cpu_gemm_wpack); an initializer that is also a
graph input may be fed, and the run must use what was fed, not the packed
copy. Checked against numpy in float64."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import seam

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402  (rel_err: a NaN or a shape mismatch is an infinite error)


def _model(tmp_path, name, node, x, w):
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
           helper.make_tensor_value_info("w", TensorProto.FLOAT, list(w.shape))]
    g = helper.make_graph([node], name, ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w, "w")])
    path = str(tmp_path / (name + ".onnx"))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), path)
    return path


def test_fed_weight_overrides_packed_matmul_gemm(tmp_path):
    rng = np.random.RandomState(3)
    for op, wshape, attrs in (("MatMul", (128, 256), {}), ("Gemm", (256, 128), {"transB": 1}),
                              ("Gemm", (128, 256), {"alpha": 0.5})):
        x = rng.randn(32, 128).astype(np.float32)
        w, w2 = rng.randn(*wshape).astype(np.float32), rng.randn(*wshape).astype(np.float32)
        path = _model(tmp_path, op, helper.make_node(op, ["x", "w"], ["y"], **attrs), x, w)
        m = seam.load(path, targets=[])
        scale = attrs.get("alpha", 1.0)
        for fed in (None, w2):  # the initializer (its packed copy), then fed
            got = m.run({"x": x, "w": fed} if fed is not None else {"x": x})["y"]
            used = (w2 if fed is not None else w).astype(np.float64)
            ref = scale * (x.astype(np.float64) @ (used.T if attrs.get("transB") else used))
            assert seamtest.rel_err(got, ref) <= 1e-5, (op, attrs, fed is not None)
