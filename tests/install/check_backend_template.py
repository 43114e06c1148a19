"""The backend template (examples/backend-template), built out of tree
against an installed seam, through that installed seam
(run_backend_template_test.sh builds it and calls this).

usage: python3 check_backend_template.py SEAM TEMPLATE_SO WORKDIR [-k PATTERN]

  check    seam backend-check on every ONNX node test (Debian's
           libonnx-testdata): exit 0, and test_relu, test_add and
           test_matmul_2d claimed and correct; the forms the template
           refuses (a broadcasting Add, a uint8 Add, a 3-D MatMul) not
           claimed; every claimed test correct;
  run      seam run --target template (placement by capability) on a tiny
           model (Relu, Add, MatMul with a constant weight): the three nodes
           in one template subgraph (--report), the output within 1e-5 of
           numpy's;
  by_name  the same run with --target template found on $SEAM_BACKEND_PATH
           (libseam_template.so), no --backend-lib;
  oom      --target-option memory_mb=0: the compile runs out of the
           template's memory, seam says so once and runs the subgraph on
           its CPU kernels, the output still right;
  options  a bad target option: exit 1, the message names it.
"""
import json
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

p = seamtest.arg_parser(__doc__)
p.add_argument("seam")
p.add_argument("so")
p.add_argument("work")
args = p.parse_args()
os.makedirs(args.work, exist_ok=True)
run = seamtest.Program(args.seam, timeout=300)
check = seamtest.Checker("backend-template", args.k)
lib = ["--backend-lib", args.so, "--target", "template"]
NODE = "/usr/share/libonnx-testdata/data/node"

if check.selected("check"):
    if not os.path.isdir(NODE):
        print(f"check: skipped, no ONNX node tests at {NODE} (Debian's libonnx-testdata)")
    else:
        js = os.path.join(args.work, "check.json")
        r = run("backend-check", *lib, "--repeat", "0", "--json", js)
        failed = r.stdout.split("claimed and failed:")[-1] if "claimed and failed:" in r.stdout else r.stdout[-800:]
        check.expect(r.returncode == 0, f"check: backend-check exit {r.returncode}", failed[-1500:] + r.stderr[-500:])
        tests = {t["test"]: t for t in json.load(open(js))["tests"]} if os.path.exists(js) else {}
        for name in ("test_relu", "test_add", "test_matmul_2d"):
            t = tests.get(name, {})
            check.expect(t.get("verdict") == "correct" and t.get("claimed_nodes") == 1,
                         f"check: {name} claimed and correct", t)
        for name in ("test_add_bcast", "test_add_uint8", "test_matmul_3d"):
            t = tests.get(name, {})
            check.expect(t.get("claimed_nodes") == 0, f"check: {name} refused by supports()", t)
        bad = [t for t in tests.values() if t["claimed_nodes"] and t["verdict"] not in ("correct", "skipped")]
        check.expect(tests and not bad, f"check: all {sum(1 for t in tests.values() if t['claimed_nodes'])} claimed "
                     "tests correct", bad[:5])

# the model: y = MatMul(Relu(x) + x, w), x [4,8], w [8,3] a constant
rng = np.random.default_rng(7)
x = rng.standard_normal((4, 8)).astype(np.float32)
w = rng.standard_normal((8, 3)).astype(np.float32)
want = (np.maximum(x, 0) + x) @ w
model = os.path.join(args.work, "tiny.onnx")
seamtest.save_model(model, [helper.make_node("Relu", ["x"], ["r"], name="relu"),
                            helper.make_node("Add", ["r", "x"], ["s"], name="add"),
                            helper.make_node("MatMul", ["s", "w"], ["y"], name="mm")],
                    [seamtest.vi("x", [4, 8])], [seamtest.vi("y", [4, 3])], [numpy_helper.from_array(w, "w")],
                    opset=17)
xin = os.path.join(args.work, "x.npy")
np.save(xin, x)


def run_tiny(case, *extra, env=None):
    out = os.path.join(args.work, case)
    r = run("run", model, "--placement", "capability", "--input", f"x={xin}", "--output-dir", out, *extra, env=env)
    y = os.path.join(out, "y.npy")
    err = seamtest.rel_err(np.load(y), want) if r.returncode == 0 and os.path.exists(y) else float("inf")
    return r, err


if check.selected("run"):
    r, err = run_tiny("run", *lib, "--report")
    check.expect(r.returncode == 0 and err <= 1e-5, f"run: output within 1e-5 of numpy ({err:.2g})",
                 r.stdout[-600:] + r.stderr[-600:])
    rows = [ln.split() for ln in r.stdout.splitlines() if "template" in ln]
    check.expect(len(rows) == 1 and rows[0][1] == "template" and rows[0][2] == "3",
                 "run: the three nodes ran in one template subgraph", r.stdout[-600:])

if check.selected("by_name"):
    env = dict(os.environ, SEAM_BACKEND_PATH=os.path.dirname(args.so))
    r, err = run_tiny("by_name", "--target", "template", "--report", env=env)
    check.expect(r.returncode == 0 and err <= 1e-5 and "template       3" in r.stdout,
                 f"by_name: --target template found on SEAM_BACKEND_PATH, right ({err:.2g})",
                 r.stdout[-600:] + r.stderr[-600:])

if check.selected("oom"):
    r, err = run_tiny("oom", *lib, "--target-option", "memory_mb=0")
    check.expect(r.returncode == 0 and err <= 1e-5 and r.stderr.count("out of device memory") == 1,
                 f"oom: out of the template's memory, said once, run on the CPU, right ({err:.2g})", r.stderr[-600:])

if check.selected("options"):
    r, _ = run_tiny("options", *lib, "--target-option", "memory_mb=lots")
    check.expect(r.returncode == 1 and "unknown or bad target option 'memory_mb=lots'" in r.stderr,
                 f"options: a bad option refused, exit {r.returncode}", r.stderr[-400:])

check.finish()
