"""Folding finishes the job (issue 31): with static inputs, all shape
arithmetic becomes constants, whatever its ops, and cuts no subgraph.

usage: /usr/bin/python3 check_fold.py SEAM WORKDIR [-k PATTERN]

1. window_attention: the arithmetic a windowed-attention transformer
   exports (torchvision's swin_t): Shape -> Gather -> Mod / Sub for the
   padding, Pow for the scale, Range -> Expand -> Equal / Where ->
   ScatterND -> Tile for the attention mask, ConstantOfShape, Not, float
   Casts, Sqrt; its results are a Pad's pads, a Reshape's target and an
   additive mask. `seam partition --target dnnl --placement capability
   --json`: every node of the
   arithmetic is "constant" (inference computes some, the CPU kernels the
   rest, seam_model_fold), the rest is one dnnl subgraph; `seam inspect
   --values` after folding (the same command with --fold): no unknown dim;
   `seam run` on cpu and dnnl equals numpy's reading of the graph (the
   reference below). With --no-fold the arithmetic stays (the check can
   fail).
2. too_big: a Range whose result would be above folding's limit (4 MiB) is
   not folded: it runs, and the model still gives the right answer.
3. refused: a Range with delta 0 in the arithmetic is not folded (the CPU
   kernel refuses it): `seam run` fails at run time with exit 1 naming the
   node, as it did before folding computed anything; no crash.
4. random: RandomUniform feeding arithmetic is never folded.
"""
import json
import os
import re
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import seamtest  # noqa: E402
from seamtest import vi  # noqa: E402
from shape_models import const, window_model, window_reference  # noqa: E402

args, seam, work, check = seamtest.checker_setup(__doc__, "fold")
rng = np.random.RandomState(5)


def plan_json(path, *extra):
    r = seam("partition", path, "--target", "dnnl", "--placement", "capability", "--json", *extra)
    if r.returncode:
        return None, r.stderr.strip()[-300:]
    return json.loads(r.stdout), None


def run_out(path, x, name, *extra):
    xf = os.path.join(work, name + ".x.npy")
    np.save(xf, x)
    d = os.path.join(work, name + ".out" + "".join(extra).replace(" ", "").replace("-", "_"))
    r = seam("run", path, "--input", f"x={xf}", "--output-dir", d, *extra)
    if r.returncode:
        return None, r
    return np.load(seamtest.output_file(d, "y")), r


def case_window(name):
    if not check.selected(name):
        return
    nodes, inits, arith = window_model(rng)
    x = rng.randn(1, 8, 10, 12).astype(np.float32)
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, [vi("x", [1, 8, 10, 12])],
                               [vi("y", None)], inits, name=name, opset=13)
    p, why = plan_json(path)
    if why:
        return check.fail(f"{name}: seam partition: {why}")
    targets = {n["name"]: n["target"] for n in p["nodes"]}
    # (the plan lists the nodes in the file's order)
    left = sorted(n["op"] + " " + n["name"] for n in p["nodes"]
                  if n["target"] != "constant" and nodes[n["index"]].output[0] in arith)
    check.expect(not left, f"{name}: all {len(arith)} nodes of the shape arithmetic are constants", detail=f"left: {left}")
    check.expect(len(p["subgraphs"]) == 1 and all(t in ("constant", "dnnl") for t in targets.values()),
                 f"{name}: one dnnl subgraph, nothing on the CPU",
                 detail=f"{len(p['subgraphs'])} subgraphs; cpu: {[k for k, t in targets.items() if t == 'cpu']}")
    r = seam("inspect", path, "--values", "--fold")
    unknown = [ln.strip() for ln in r.stdout.splitlines() if "?" in ln]
    check.expect(r.returncode == 0 and not unknown, f"{name}: seam inspect --values --fold: no unknown dims",
                 detail=r.stderr.strip()[-300:] if r.returncode else f"{len(unknown)}: {unknown[:3]}")
    p2, why = plan_json(path, "--no-fold")
    check.expect(not why and any(n["target"] == "cpu" for n in p2["nodes"]),
                 f"{name}: with --no-fold the arithmetic runs (on the CPU)", detail=why)
    want = window_reference(x, numpy_helper.to_array(inits[0]))
    for extra in ((), ("--target", "dnnl"), ("--no-fold",)):
        y, r = run_out(path, x, name, *extra)
        if y is None:
            check.fail(f"{name}: seam run {' '.join(extra)}: {r.stderr.strip()[-300:]}")
            continue
        e = seamtest.rel_err(y, want)
        check.expect(y.shape == want.shape and e <= 1e-5, f"{name}: seam run {' '.join(extra)} against numpy: {e:.1e}",
                     detail=f"shape {y.shape}, want {want.shape}")


def case_too_big(name):
    """Range(0, Shape(x)[3] * 2^21) as float: 8 MiB for W = 1, more than
    folding keeps; ReduceSum of it is n(n-1)/2 (the run's answer)."""
    if not check.selected(name):
        return
    nodes = [helper.make_node("Shape", ["x"], ["s"]), const("i3", np.int64(3)),
             helper.make_node("Gather", ["s", "i3"], ["w"]), const("big", np.int64(1 << 21)),
             helper.make_node("Mul", ["w", "big"], ["n"]), const("z", np.float32(0)), const("o", np.float32(1)),
             helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
             helper.make_node("Range", ["z", "nf", "o"], ["r"]),
             helper.make_node("ReduceMax", ["r"], ["rm"], keepdims=0),
             helper.make_node("Add", ["x", "rm"], ["y"])]
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, [vi("x", [1, 1, 1, 1])], [vi("y", None)],
                               name=name, opset=13)
    p, why = plan_json(path)
    if why:
        return check.fail(f"{name}: {why}")
    t = {n["op"]: n["target"] for n in p["nodes"]}
    check.expect(t.get("Range") != "constant", f"{name}: a Range of 2^21 floats (8 MiB) is not folded",
                 detail=f"targets {t}")
    y, r = run_out(path, np.zeros((1, 1, 1, 1), np.float32), name)
    check.expect(y is not None and float(y.reshape(-1)[0]) == float((1 << 21) - 1),
                 f"{name}: the run gives max(Range) = 2^21 - 1", detail=None if y is not None else r.stderr[-300:])


def case_refused(name):
    """Range(0, W, W - 1) with W = 1: a delta of 0, which the CPU kernel
    refuses; not folded, left to the run, which names the node."""
    if not check.selected(name):
        return
    nodes = [helper.make_node("Shape", ["x"], ["s"]), const("i3", np.int64(3)), const("one", np.int64(1)),
             const("zero", np.int64(0)),
             helper.make_node("Gather", ["s", "i3"], ["w"]), helper.make_node("Sub", ["w", "one"], ["d"]),
             helper.make_node("Range", ["zero", "w", "d"], ["r"], name="the_range"),
             helper.make_node("ReduceSum", ["r"], ["q"], keepdims=0),
             helper.make_node("Cast", ["q"], ["qf"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "qf"], ["y"])]
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, [vi("x", [1, 1, 1, 1])], [vi("y", None)],
                               name=name, opset=13)
    y, r = run_out(path, np.zeros((1, 1, 1, 1), np.float32), name)
    check.expect(y is None and r.returncode == 1 and "the_range" in r.stderr and "delta is 0" in r.stderr,
                 f"{name}: a Range with delta 0 fails the run with exit 1, naming the node",
                 detail=f"exit {r.returncode}: {r.stderr.strip()[-300:]}")


def case_random(name):
    if not check.selected(name):
        return
    nodes = [helper.make_node("RandomUniform", [], ["u"], shape=[1, 4], seed=1.0),
             const("k", np.float32(2)), helper.make_node("Mul", ["u", "k"], ["u2"]),
             helper.make_node("Add", ["x", "u2"], ["y"])]
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, [vi("x", [1, 4])], [vi("y", None)],
                               name=name, opset=13)
    p, why = plan_json(path)
    if why:
        return check.fail(f"{name}: {why}")
    t = {n["op"]: n["target"] for n in p["nodes"]}
    check.expect(t.get("RandomUniform") != "constant" and t.get("Mul") != "constant",
                 f"{name}: RandomUniform and what it feeds are not folded", detail=f"targets {t}")


case_window("window_attention")
case_too_big("too_big")
case_refused("refused")
case_random("random")
check.finish()
