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

args, seam, work, check = seamtest.checker_setup(__doc__, "fold")
rng = np.random.RandomState(5)


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr), name + "_v"))


def window_model(H=10, W=12, C=8, win=7):
    """x [1, C, H, W] -> pad H and W to multiples of win (pads from Shape,
    Mod, Sub), transpose to [1, Hp*Wp, C], x * C^-0.5 (Pow), + an additive
    mask [Hp*Wp, C] built from Range/Expand/Equal/Where/ScatterND/Tile,
    reshaped by a target computed from the shape; then a MatMul."""
    n = [
        helper.make_node("Shape", ["x"], ["s"]),
        const("i2", np.int64(2)), const("i3", np.int64(3)), const("win", np.int64(win)),
        helper.make_node("Gather", ["s", "i2"], ["h"]), helper.make_node("Gather", ["s", "i3"], ["w"]),
        # pad = (win - h % win) % win
        helper.make_node("Mod", ["h", "win"], ["hm"]), helper.make_node("Sub", ["win", "hm"], ["hs"]),
        helper.make_node("Mod", ["hs", "win"], ["ph"]),
        helper.make_node("Mod", ["w", "win"], ["wm"]), helper.make_node("Sub", ["win", "wm"], ["ws"]),
        helper.make_node("Mod", ["ws", "win"], ["pw"]),
        const("z4", np.zeros(6, np.int64)), const("ax", np.array([0], np.int64)),
        helper.make_node("Unsqueeze", ["ph", "ax"], ["ph1"]), helper.make_node("Unsqueeze", ["pw", "ax"], ["pw1"]),
        const("z6", np.zeros(6, np.int64)),
        helper.make_node("Concat", ["z6", "ph1", "pw1"], ["pads"], axis=0),
        helper.make_node("Pad", ["x", "pads"], ["xp"], mode="constant"),
        # Hp * Wp
        helper.make_node("Add", ["h", "ph"], ["hp"]), helper.make_node("Add", ["w", "pw"], ["wp"]),
        helper.make_node("Mul", ["hp", "wp"], ["L"]),
        helper.make_node("Unsqueeze", ["L", "ax"], ["L1"]),
        const("c1", np.array([1], np.int64)), const("cC", np.array([C], np.int64)),
        helper.make_node("Concat", ["c1", "cC", "L1"], ["tgt"], axis=0),
        helper.make_node("Reshape", ["xp", "tgt"], ["xr"]),
        const("perm_dummy", np.int64(0)),
        helper.make_node("Transpose", ["xr"], ["xt"], perm=[0, 2, 1]),
        # scale C^-0.5 by Pow on floats made from the shape
        helper.make_node("Gather", ["s", "c1s"], ["cdim"]), const("c1s", np.int64(1)),
        helper.make_node("Cast", ["cdim"], ["cf"], to=TensorProto.FLOAT),
        const("mhalf", np.float32(-0.5)), helper.make_node("Pow", ["cf", "mhalf"], ["scale"]),
        helper.make_node("Mul", ["xt", "scale"], ["xs"]),
        # mask: r = Range(0, L), region = r % win, eq = Equal(Expand(region) , transposed) -> Where(eq, 0, -100)
        const("zero", np.int64(0)), const("one", np.int64(1)),
        helper.make_node("Range", ["zero", "L", "one"], ["r"]),
        helper.make_node("Mod", ["r", "win"], ["reg"]),
        helper.make_node("Unsqueeze", ["reg", "c1"], ["regc"]),
        helper.make_node("Concat", ["L1", "cC"], ["mshape"], axis=0),
        helper.make_node("Expand", ["regc", "mshape"], ["rege"]),
        const("cmod", np.arange(C, dtype=np.int64) % win),
        helper.make_node("Equal", ["rege", "cmod"], ["eq"]),
        helper.make_node("Not", ["eq"], ["neq"]),
        const("fz", np.float32(0)), const("fm", np.float32(-100)),
        helper.make_node("Where", ["neq", "fm", "fz"], ["m0"]),
        # ScatterND: row 0 of the mask set to 1
        const("idx", np.array([[0]], np.int64)),
        helper.make_node("ConstantOfShape", ["cC"], ["ones"], value=numpy_helper.from_array(np.array([1], np.float32))),
        helper.make_node("Unsqueeze", ["ones", "ax"], ["ones1"]),
        helper.make_node("ScatterND", ["m0", "idx", "ones1"], ["m1"]),
        const("rep", np.array([1, 1], np.int64)),
        helper.make_node("Tile", ["m1", "rep"], ["m2"]),
        helper.make_node("Sqrt", ["fm2"], ["fsq"]), const("fm2", np.float32(4.0)),
        helper.make_node("Mul", ["m2", "fsq"], ["mask"]),
        helper.make_node("Add", ["xs", "mask"], ["xa"]),
        helper.make_node("MatMul", ["xa", "wmat"], ["y"]),
    ]
    # topological order for the Constant nodes that come after their readers above
    consts = [x for x in n if x.op_type == "Constant"]
    others = [x for x in n if x.op_type != "Constant" and x.output[0] != "perm_dummy"]
    wmat = numpy_helper.from_array((rng.randn(C, 16) / np.sqrt(C)).astype(np.float32), "wmat")
    arith = {x.output[0] for x in others if x.op_type not in ("Pad", "Reshape", "Transpose", "Mul", "Add", "MatMul")
             or x.output[0] in ("hp", "wp", "L", "mask")}
    return consts + others, [wmat], arith


def window_reference(x, wmat, win=7):
    _, C, H, W = x.shape
    ph, pw = (win - H % win) % win, (win - W % win) % win
    xp = np.pad(x, ((0, 0), (0, 0), (0, ph), (0, pw)))
    L = (H + ph) * (W + pw)
    xt = xp.reshape(1, C, L).transpose(0, 2, 1) * np.float32(C) ** np.float32(-0.5)
    reg = (np.arange(L) % win)[:, None].repeat(C, 1)
    m = np.where(reg != (np.arange(C) % win), np.float32(-100), np.float32(0))
    m[0] = 1
    return ((xt + m * 2).astype(np.float32) @ wmat)


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
    nodes, inits, arith = window_model()
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
