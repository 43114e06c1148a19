"""A backend from a shared library (tests/plugin/toy_backend.c), end to end.

usage: /usr/bin/python3 check_backend_lib.py SEAM TOY_SO WORKDIR [-k PATTERN]

A small model (Relu, Add, Mul by a constant, Abs which toy lacks, then more
toy ops) is partitioned for toy with --backend-lib: toy compiles and runs
its subgraphs in its own memory. Checked:
  - the plan puts Relu/Add/Mul on toy and Abs on the CPU;
  - `seam run --target toy` gives outputs bitwise equal to the plain run
    and to numpy's;
  - the saved file runs with --backend-lib, and with SEAM_BACKEND_PATH
    alone (the plug-in found by the target its Subgraph nodes name);
    without the library it fails naming the Subgraph node;
  - --report counts the bytes toy's memory received and returned;
  - a Sigmoid (which toy claims but cannot compile) fails at session
    creation with the subgraph and the node named;
  - --target-option values reach toy's compile (fail=1 makes it refuse);
  - a compile that reports SEAM_COMPILE_OUT_OF_MEMORY (toy's fail=oom):
    each such subgraph runs on the CPU, said once, the outputs the CPU's;
  - toy's compile log: its "slow:" line is printed once per subgraph on
    stderr, --quiet silences it, --compile-log prints all of it;
  - a library without the registration function is refused, naming it.
The cases, in that order: plan, run, saved, compile_failure, target_option,
compile_oom, compile_log, bad_library.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import vi  # noqa: E402

parser = seamtest.arg_parser(__doc__)
parser.add_argument("seam", metavar="SEAM")
parser.add_argument("so", metavar="TOY_SO")
parser.add_argument("work", metavar="WORKDIR")
args = parser.parse_args()
run, so, work = seamtest.Program(args.seam), args.so, args.work
check = seamtest.Checker("backend library", args.k)
os.makedirs(work, exist_ok=True)


def model(path, with_sigmoid=False):
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Add", ["r", "x"], ["a"], name="add"),
             helper.make_node("Mul", ["a", "two"], ["m"], name="mul"),
             helper.make_node("Abs", ["m"], ["b"], name="abs"),
             helper.make_node("Relu", ["b"], ["r2"], name="relu2"),
             helper.make_node("Add", ["r2", "m"], ["y"], name="add2")]
    if with_sigmoid:
        nodes.append(helper.make_node("Sigmoid", ["y"], ["z"], name="sig"))
    seamtest.save_model(path, nodes, [vi("x", [2, 3])], [vi("z" if with_sigmoid else "y", [2, 3])],
                        seamtest.initializers({"two": np.array([2.0], np.float32)}), name="toy_test")


src = os.path.join(work, "toy_model.onnx")
model(src)
x = np.array([[-1.5, 0.5, 2.0], [3.0, -0.25, 0.0]], np.float32)
xin = os.path.join(work, "x.npy")
np.save(xin, x)
a = np.maximum(x, 0) + x
mm = a * np.float32(2)
want = np.maximum(np.abs(mm), 0) + mm

if check.selected("plan"):
    r = run("partition", src, "--backend-lib", so, "--target", "toy", "--json")
    if r.returncode:
        check.fail(f"partition failed: {r.stderr.strip()}")
    else:
        plan = json.loads(r.stdout)
        where = {n["name"]: n["target"] for n in plan["nodes"]}
        check.expect(where.get("abs") == "cpu" and all(where.get(k) == "toy" for k in ("relu", "add", "mul", "relu2", "add2")),
                     f"plan: Abs on the CPU, the rest on toy: {where}")

if check.selected("run"):
    outs = {}
    for label, extra in (("plain", []), ("toy", ["--backend-lib", so, "--target", "toy"])):
        d = os.path.join(work, label)
        r = run("run", src, *extra, "--input", f"x={xin}", "--output-dir", d)
        if r.returncode:
            check.fail(f"run ({label}) failed: {r.stderr.strip()}")
        else:
            outs[label] = np.load(os.path.join(d, "y.npy"))
    if len(outs) == 2:
        check.expect(np.array_equal(outs["plain"], outs["toy"]), "run: toy's outputs equal the CPU's")
        check.expect(np.array_equal(outs["toy"], want), "run: toy's outputs equal numpy's",
                     f"{outs['toy'].tolist()} vs {want.tolist()}")

if check.selected("saved"):
    part = os.path.join(work, "toy_part.onnx")
    r = run("partition", src, "--backend-lib", so, "--target", "toy", "-o", part)
    if r.returncode:
        check.fail(f"partition -o failed: {r.stderr.strip()}")
    else:
        onnx.checker.check_model(onnx.load(part))
        d = os.path.join(work, "saved")
        r = run("run", part, "--backend-lib", so, "--input", f"x={xin}", "--output-dir", d, "--report")
        if r.returncode:
            check.fail(f"run of the saved file failed: {r.stderr.strip()}")
        else:
            check.expect(np.array_equal(np.load(os.path.join(d, "y.npy")), want), "saved: the saved file's outputs equal numpy's")
            moved = [ln.split() for ln in r.stdout.splitlines() if ln.strip().startswith("seam_subgraph_")]
            # subgraph 0 takes x (24 bytes) and gives m (24); subgraph 2 takes b and m, gives y
            got = sorted((int(f[4]), int(f[5])) for f in moved)
            check.expect(got == [(24, 24), (48, 24)], f"saved: --report bytes {got}, expected [(24, 24), (48, 24)]")
        env = dict(os.environ, SEAM_BACKEND_PATH=os.path.dirname(so))
        r = run("run", src, "--target", "toy", "--input", f"x={xin}", env=env)
        check.expect(not r.returncode, "saved: --target toy through SEAM_BACKEND_PATH", r.stderr.strip())
        d2 = os.path.join(work, "saved_by_name")
        r = run("run", part, "--input", f"x={xin}", "--output-dir", d2, env=env)
        check.expect(not r.returncode and np.array_equal(np.load(os.path.join(d2, "y.npy")), want),
                     "saved: the saved file finds toy by the name in its Subgraph nodes on SEAM_BACKEND_PATH",
                     r.stderr.strip())
        r = run("run", part, "--input", f"x={xin}")
        check.expect(r.returncode == 1 and "seam_subgraph_0_toy" in r.stderr and "--backend-lib" in r.stderr,
                     f"saved: the saved file without its backend: exit {r.returncode}, {r.stderr.strip()!r}")

if check.selected("compile_failure"):
    sig = os.path.join(work, "toy_sigmoid.onnx")
    model(sig, with_sigmoid=True)
    r = run("run", sig, "--backend-lib", so, "--target", "toy", "--input", f"x={xin}")
    check.expect(r.returncode == 1 and "seam_subgraph" in r.stderr and "'sig'" in r.stderr,
                 f"compile_failure: a Sigmoid toy cannot compile: exit {r.returncode}, {r.stderr.strip()!r}")

if check.selected("target_option"):
    r = run("run", src, "--backend-lib", so, "--target", "toy", "--target-option", "fail=1", "--input", f"x={xin}")
    check.expect(r.returncode == 1 and "fail=1" in r.stderr,
                 f"target_option: fail=1 reaches toy's compile: exit {r.returncode}, {r.stderr.strip()!r}")

if check.selected("compile_oom"):  # a compile short of device memory: that subgraph on the CPU, said once
    d0, d1 = os.path.join(work, "oom.plain"), os.path.join(work, "oom.toy")
    r0 = run("run", src, "--input", f"x={xin}", "--output-dir", d0)
    r = run("run", src, "--backend-lib", so, "--target", "toy", "--target-option", "fail=oom", "--input", f"x={xin}",
            "--output-dir", d1, "--report")
    notes = [ln for ln in r.stderr.splitlines() if "slow: not compiled, out of device memory: " in ln]
    check.expect(r.returncode == 0 and len(notes) == 2 and all("toy was told so by fail=oom" in x for x in notes),
                 f"compile_oom: each subgraph's out-of-memory compile said once, the run goes on: exit {r.returncode}",
                 r.stderr.strip())
    if r.returncode == 0 and r0.returncode == 0:
        same = all(np.array_equal(a, b) for a, b in zip(seamtest.load_outputs(src, d0), seamtest.load_outputs(src, d1)))
        check.expect(same, "compile_oom: its outputs equal the CPU run's")

if check.selected("compile_log"):
    base = ["run", src, "--backend-lib", so, "--target", "toy", "--input", f"x={xin}"]
    r = run(*base)
    slow = [ln for ln in r.stderr.splitlines() if ": slow: " in ln]
    # two toy subgraphs (Abs cuts the model), one slow line each, named
    want_lines = [f"seam: subgraph 'seam_subgraph_{i}_toy' (toy): slow: toy runs each step apart (fix: none, toy fuses nothing)"
                  for i in (0, 2)]
    check.expect(not r.returncode and slow == want_lines, "compile_log: one slow line per subgraph on stderr",
                 r.stderr.strip())
    check.expect("steps," not in r.stderr, "compile_log: only the slow lines without --compile-log", r.stderr.strip())
    r = run(*base, "--quiet")
    check.expect(not r.returncode and "slow:" not in r.stderr, "compile_log: --quiet silences it", r.stderr.strip())
    r = run(*base, "--compile-log")
    check.expect(not r.returncode and "seam: subgraph 'seam_subgraph_0_toy' (toy): 3 steps, 4 buffers" in r.stderr
                 and r.stderr.count("slow:") == 2, "compile_log: --compile-log prints the whole log", r.stderr.strip())

if check.selected("bad_library"):
    bad = os.path.join(work, "not_a_backend.so")
    with open(bad, "wb") as f:
        f.write(b"not an elf file")
    r = run("run", src, "--backend-lib", bad, "--target", "toy")
    check.expect(r.returncode == 1 and "not_a_backend.so" in r.stderr,
                 f"bad_library: exit {r.returncode}, {r.stderr.strip()!r}")

check.finish()
