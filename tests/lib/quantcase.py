"""Small one-node quantized cases for the checkers (check_quant.py,
check_quant_ops.py): write a model with its inputs, run it on one path,
compare paths bit for bit. A Cases holds the checker's seam program,
work folder and Checker."""
import os
import time

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

NP2T = {np.float32: T.FLOAT, np.uint8: T.UINT8, np.int8: T.INT8, np.int32: T.INT32}


def f32(*v):
    return np.array(v, np.float32)


def last(stderr):
    """The last line of stderr (seam's error; the notes come before it)."""
    lines = stderr.strip().splitlines()
    return lines[-1][:300] if lines else "(no message)"


class Cases:
    def __init__(self, run, work, check):
        self.run, self.work, self.check = run, work, check

    last = staticmethod(last)

    def seam_run(self, model, feeds, out_dir, extra=()):
        """seam run of model with feeds {input: file} into out_dir: (the
        run, its wall time in seconds)."""
        a = []
        for k, f in feeds.items():
            a += ["--input", f"{k}={f}"]
        t0 = time.time()
        r = self.run("run", model, *a, "--output-dir", out_dir, *extra)
        return r, time.time() - t0

    def write_case(self, name, nodes, feeds, inits, outs):
        """WORK/NAME.onnx (opset 13) with graph inputs `feeds` {name: array},
        initializers `inits` and outputs [(name, type)], and each feed saved
        as WORK/NAME.INPUT.npy; returns (the model's path, {input: file})."""
        path = os.path.join(self.work, f"{name}.onnx")
        g = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info(k, NP2T[v.dtype.type], v.shape) for k, v in feeds.items()],
                              [helper.make_tensor_value_info(k, t, None) for k, t in outs],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
        files = {}
        for k, v in feeds.items():
            files[k] = os.path.join(self.work, f"{name}.{k}.npy")
            np.save(files[k], v)
        return path, files

    def run_case(self, name, label, path, files, extra, out_names):
        """seam run of a write_case model on one path (label, with the extra
        options) into WORK/NAME.LABEL: (the run, [the outputs out_names as
        arrays]), or (the run, None) after a failure is recorded."""
        od = os.path.join(self.work, f"{name}.{label.replace(' ', '_')}")
        r, _ = self.seam_run(path, files, od, extra)
        if not self.check.expect(r.returncode == 0, f"{name} ({label}): runs", last(r.stderr)):
            return r, None
        return r, [np.load(os.path.join(od, f"{o}.npy")) for o in out_names]

    def expect_cpu_bits(self, name, outs, what):
        """outs {label: array}: the dnnl paths' outputs bit for bit the CPU's."""
        for label in ("dnnl", "dnnl fusion=off"):
            if "cpu" in outs and label in outs:
                a, b = outs[label], outs["cpu"]
                self.check.expect(a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b),
                                  f"{name} ({label}): bit for bit {what}",
                                  f"{a.dtype}{a.shape} vs {b.dtype}{b.shape}, "
                                  f"{int(np.sum(a != b)) if a.shape == b.shape else '-'} differ")
