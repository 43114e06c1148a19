"""A backend from a shared library (tests/plugin/toy_backend.c), end to end.

usage: /usr/bin/python3 check_backend_lib.py SEAM TOY_SO WORKDIR

A small model (Relu, Add, Mul by a constant, Abs which toy lacks, then more
toy ops) is partitioned for toy with --backend-lib: toy compiles and runs
its subgraphs in its own memory. Checked:
  - the plan puts Relu/Add/Mul on toy and Abs on the CPU;
  - `seam run --target toy` gives outputs bitwise equal to the plain run
    and to numpy's;
  - the saved file runs with --backend-lib, and with SEAM_BACKEND_PATH;
    without the library it fails naming the Subgraph node;
  - --report counts the bytes toy's memory received and returned;
  - a Sigmoid (which toy claims but cannot compile) fails at session
    creation with the subgraph and the node named;
  - --target-option values reach toy's compile (fail=1 makes it refuse);
  - a library without the registration function is refused, naming it.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

seam, so, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
failures = []


def run(*args, env=None):
    return subprocess.run([seam, *args], capture_output=True, text=True, env=env)


def model(path, with_sigmoid=False):
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Add", ["r", "x"], ["a"], name="add"),
             helper.make_node("Mul", ["a", "two"], ["m"], name="mul"),
             helper.make_node("Abs", ["m"], ["b"], name="abs"),
             helper.make_node("Relu", ["b"], ["r2"], name="relu2"),
             helper.make_node("Add", ["r2", "m"], ["y"], name="add2")]
    if with_sigmoid:
        nodes.append(helper.make_node("Sigmoid", ["y"], ["z"], name="sig"))
    g = helper.make_graph(nodes, "toy_test", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("z" if with_sigmoid else "y", TensorProto.FLOAT, [2, 3])],
                          [numpy_helper.from_array(np.array([2.0], np.float32), "two")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, path)


src = os.path.join(work, "toy_model.onnx")
model(src)
x = np.array([[-1.5, 0.5, 2.0], [3.0, -0.25, 0.0]], np.float32)
xin = os.path.join(work, "x.npy")
np.save(xin, x)
a = np.maximum(x, 0) + x
mm = a * np.float32(2)
want = np.maximum(np.abs(mm), 0) + mm

r = run("partition", src, "--backend-lib", so, "--target", "toy", "--json")
if r.returncode:
    failures.append(f"partition failed: {r.stderr.strip()}")
else:
    plan = json.loads(r.stdout)
    where = {n["name"]: n["target"] for n in plan["nodes"]}
    if where.get("abs") != "cpu" or any(where.get(k) != "toy" for k in ("relu", "add", "mul", "relu2", "add2")):
        failures.append(f"unexpected placement: {where}")

outs = {}
for label, args in (("plain", []), ("toy", ["--backend-lib", so, "--target", "toy"])):
    d = os.path.join(work, label)
    r = run("run", src, *args, "--input", f"x={xin}", "--output-dir", d)
    if r.returncode:
        failures.append(f"run ({label}) failed: {r.stderr.strip()}")
    else:
        outs[label] = np.load(os.path.join(d, "y.npy"))
if len(outs) == 2:
    if not np.array_equal(outs["plain"], outs["toy"]):
        failures.append("toy's outputs differ from the CPU's")
    if not np.array_equal(outs["toy"], want):
        failures.append(f"toy's outputs differ from numpy's: {outs['toy']} vs {want}")

part = os.path.join(work, "toy_part.onnx")
r = run("partition", src, "--backend-lib", so, "--target", "toy", "-o", part)
if r.returncode:
    failures.append(f"partition -o failed: {r.stderr.strip()}")
else:
    onnx.checker.check_model(onnx.load(part))
    d = os.path.join(work, "saved")
    r = run("run", part, "--backend-lib", so, "--input", f"x={xin}", "--output-dir", d, "--report")
    if r.returncode:
        failures.append(f"run of the saved file failed: {r.stderr.strip()}")
    else:
        if not np.array_equal(np.load(os.path.join(d, "y.npy")), want):
            failures.append("the saved file's outputs differ")
        moved = [ln.split() for ln in r.stdout.splitlines() if ln.strip().startswith("seam_subgraph_")]
        # subgraph 0 takes x (24 bytes) and gives m (24); subgraph 2 takes b and m, gives y
        got = sorted((int(f[4]), int(f[5])) for f in moved)
        if got != [(24, 24), (48, 24)]:
            failures.append(f"--report bytes {got}, expected [(24, 24), (48, 24)]")
    env = dict(os.environ, SEAM_BACKEND_PATH=os.path.dirname(so))
    r = run("run", src, "--target", "toy", "--input", f"x={xin}", env=env)
    if r.returncode:
        failures.append(f"--target toy through SEAM_BACKEND_PATH failed: {r.stderr.strip()}")
    r = run("run", part, "--input", f"x={xin}")
    if r.returncode != 1 or "seam_subgraph_0_toy" not in r.stderr or "--backend-lib" not in r.stderr:
        failures.append(f"the saved file without its backend: exit {r.returncode}, {r.stderr.strip()!r}")

sig = os.path.join(work, "toy_sigmoid.onnx")
model(sig, with_sigmoid=True)
r = run("run", sig, "--backend-lib", so, "--target", "toy", "--input", f"x={xin}")
if r.returncode != 1 or "seam_subgraph" not in r.stderr or "'sig'" not in r.stderr:
    failures.append(f"Sigmoid compile failure: exit {r.returncode}, {r.stderr.strip()!r}")

r = run("run", src, "--backend-lib", so, "--target", "toy", "--target-option", "fail=1", "--input", f"x={xin}")
if r.returncode != 1 or "fail=1" not in r.stderr:
    failures.append(f"target options did not reach toy's compile: exit {r.returncode}, {r.stderr.strip()!r}")

bad = os.path.join(work, "not_a_backend.so")
with open(bad, "wb") as f:
    f.write(b"not an elf file")
r = run("run", src, "--backend-lib", bad, "--target", "toy")
if r.returncode != 1 or "not_a_backend.so" not in r.stderr:
    failures.append(f"a bad library: exit {r.returncode}, {r.stderr.strip()!r}")

for f in failures:
    print("FAIL", f)
print(f"backend library: {len(failures)} failures")
sys.exit(1 if failures else 0)
