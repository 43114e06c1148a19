"""The runtime's shape self-check (SEAM_SELF_CHECK=1, on for every test).

usage: /usr/bin/python3 check_self_check.py SEAM WORKDIR [--expect-env] [-k PATTERN]

With SEAM_SELF_CHECK set, the executor compares every output a kernel or a
device subgraph makes with the dtype and shape inference gave it (or the
file declared), and fails the run naming the node when they disagree. A
wrong inferred shape cannot be planted from a file, so the disagreements
here are declarations that contradict what runs; the mutation smoke
(bench/mutation_smoke.py, conv_pads) plants one in inference itself.

Cases:
  env       with --expect-env (as ctest runs it): SEAM_SELF_CHECK is 1 in
            the test's environment, so every test runs with the self-check
  cpu       Relu -> Sigmoid with the Relu's output declared [2,4] where it
            is [2,3]: exit 1 naming node 0 'r' (Relu), its output and both
            shapes; with SEAM_SELF_CHECK=0 the run goes on and its output
            matches numpy (the self-check, not the kernel, refused it)
  device    Conv -> Relu on dnnl and Softmax on the CPU, partitioned and
            saved, then the Subgraph's output declared one column wider in
            the saved file: exit 1 naming the Subgraph node; the file as
            saved runs and matches torch on every path (CPU, --target dnnl,
            the saved file) with the self-check on
  dtype     a Cast whose output is declared int32 where it makes float32:
            exit 1 naming the Cast and both dtypes
"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

p = seamtest.arg_parser(__doc__)
p.add_argument("seam", metavar="SEAM")
p.add_argument("work", metavar="WORKDIR")
p.add_argument("--expect-env", action="store_true", help="fail unless SEAM_SELF_CHECK=1 is in the environment")
args = p.parse_args()
os.makedirs(args.work, exist_ok=True)
seam, work = seamtest.Program(args.seam, 120), args.work
check = seamtest.Checker("self_check", args.k)
ON = dict(os.environ, SEAM_SELF_CHECK="1")
OFF = dict(os.environ, SEAM_SELF_CHECK="0")
rng = np.random.RandomState(0)


def run(model, x, env, *extra, out="out"):
    """seam run MODEL --input x=X; (CompletedProcess, output y or None)."""
    xf = os.path.join(work, "x.npy")
    np.save(xf, x)
    od = os.path.join(work, out)
    r = seam("run", model, "--input", f"x={xf}", "--output-dir", od, *extra, env=env)
    return r, (np.load(seamtest.output_file(od, "y")) if r.returncode == 0 else None)


def ok_against(what, r, y, want):
    err = seamtest.rel_err(y, want) if y is not None and y.shape == want.shape else float("inf")
    check.expect(r.returncode == 0 and err <= 1e-4, f"{what}: exit {r.returncode}, error {err:.2e}",
                 r.stderr.strip()[-300:])


if check.selected("env") and args.expect_env:
    check.expect(os.environ.get("SEAM_SELF_CHECK") == "1",
                 f"env: SEAM_SELF_CHECK={os.environ.get('SEAM_SELF_CHECK')!r} in the test's environment")

if check.selected("cpu"):
    path = seamtest.save_model(os.path.join(work, "cpu.onnx"),
                               [helper.make_node("Relu", ["x"], ["h"], name="r"),
                                helper.make_node("Sigmoid", ["h"], ["y"], name="s")],
                               [seamtest.vi("x", [2, 3])], [seamtest.vi("y", [2, 3])],
                               value_info=[seamtest.vi("h", [2, 4])])
    x = rng.randn(2, 3).astype(np.float32)
    r, _ = run(path, x, ON)
    check.expect(r.returncode == 1 and "node 0 'r' (Relu)" in r.stderr and "'h'" in r.stderr and
                 "[2,3]" in r.stderr and "[2,4]" in r.stderr and "SEAM_SELF_CHECK" in r.stderr,
                 f"cpu: a declared shape that contradicts the kernel fails the run (exit {r.returncode})",
                 r.stderr.strip())
    r, y = run(path, x, OFF)
    ok_against("cpu: with SEAM_SELF_CHECK=0 the same file runs", r, y, 1 / (1 + np.exp(-np.maximum(x, 0))))

if check.selected("device"):
    w = (rng.randn(4, 3, 3, 3) / 3).astype(np.float32)
    path = seamtest.save_model(os.path.join(work, "dev.onnx"),
                               [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                                helper.make_node("Relu", ["c"], ["h"], name="relu"),
                                helper.make_node("Softmax", ["h"], ["y"], name="sm", axis=-1)],
                               [seamtest.vi("x", [1, 3, 8, 8])], [seamtest.vi("y", [1, 4, 8, 8])],
                               seamtest.initializers({"w": w}))
    x = rng.randn(1, 3, 8, 8).astype(np.float32)
    with torch.no_grad():
        want = torch.softmax(torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                                                   padding=1)), -1).numpy()
    part = os.path.join(work, "dev.part.onnx")
    flags = ("--target", "dnnl", "--placement", "capability", "--cpu-ops", "Softmax")
    r = seam("partition", path, *flags, "-o", part, env=ON)
    check.expect(r.returncode == 0 and "dnnl" in r.stdout, "device: partitioned, a dnnl subgraph", r.stderr.strip())
    for what, model, extra in (("the CPU", path, ()), ("--target dnnl", path, flags), ("the saved file", part, ())):
        r, y = run(model, x, ON, *extra)
        ok_against(f"device: {what} with the self-check on", r, y, want)
    m = onnx.load(part)
    sub = [n for n in m.graph.node if n.op_type == "Subgraph"]
    if not sub or sub[0].output[0] != "h":
        check.fail(f"device: the saved file's first node is not a Subgraph making 'h': {[n.op_type for n in m.graph.node]}")
    else:
        m.graph.value_info.append(helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 4, 8, 9]))
        bad = os.path.join(work, "dev.part.bad.onnx")
        onnx.save(m, bad)
        r, _ = run(bad, x, ON)
        check.expect(r.returncode == 1 and f"'{sub[0].name}' (ai.seam.Subgraph)" in r.stderr and
                     "[1,4,8,8]" in r.stderr and "[1,4,8,9]" in r.stderr,
                     f"device: a device subgraph's output that contradicts its type fails the run (exit {r.returncode})",
                     r.stderr.strip())
        r, y = run(bad, x, OFF)
        ok_against("device: with SEAM_SELF_CHECK=0 it runs (the self-check refused it)", r, y, want)

if check.selected("dtype"):
    path = seamtest.save_model(os.path.join(work, "dtype.onnx"),
                               [helper.make_node("Cast", ["x"], ["h"], name="cast", to=TensorProto.FLOAT),
                                helper.make_node("Neg", ["h"], ["y"], name="neg")],
                               [seamtest.vi("x", [3], TensorProto.INT32)], [seamtest.vi("y", [3])],
                               value_info=[seamtest.vi("h", [3], TensorProto.INT32)])
    r, _ = run(path, np.array([1, -2, 3], np.int32), ON)
    check.expect(r.returncode == 1 and "'cast' (Cast)" in r.stderr and "float32" in r.stderr and "int32" in r.stderr,
                 f"dtype: a declared dtype that contradicts the kernel fails the run (exit {r.returncode})",
                 r.stderr.strip())

check.finish()
