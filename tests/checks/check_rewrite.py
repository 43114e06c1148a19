"""Rewrites that heal partitions (issue 30): seam_model_rewrite through the CLI.

usage: /usr/bin/python3 check_rewrite.py SEAM_BINARY WORKDIR [-k CASE]

Each case is a model where a node a rules target lacks (a reflect or edge
Pad, a Split, a Sum of three, a HardSwish, an Expand read by a Mul, an
InstanceNormalization, a LayerNormalization) sits between nodes the target
takes. For a target that also takes Slice, Concat, Add, HardSigmoid, Mul,
ReduceMean, Sub, Sqrt and Div:
  - `seam partition` gives fewer device subgraphs than with --no-rewrite,
    and the plan's notes say what was rewritten;
  - `seam run --target` (the rewritten model) and the model saved by
    `seam partition -o` and run again give numpy's answer (np.pad, np.split,
    a sum, x * clip(x / 6 + 1/2, 0, 1), broadcasting, the normalizations in
    float64), within 1e-6 of the output's scale.
For a target without Slice and Concat (the rewrite cannot help) and for one
that takes the op itself, nothing is rewritten: the plan equals the one
with --no-rewrite and has no rewrite note.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

args, seam, WORK, check = seamtest.checker_setup(__doc__, "rewrite")
F = TensorProto.FLOAT
rng = np.random.default_rng(30)
X = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)


def target(name, ops):
    path = os.path.join(WORK, name + ".json")
    with open(path, "w") as f:
        json.dump({"name": name, "default": False, "ops": {op: True for op in ops}}, f)
    return path


HEALS = target("heals", ["Relu", "Sigmoid", "Slice", "Concat", "Add", "HardSigmoid", "Mul", "ReduceMean", "Sub",
                        "Sqrt", "Div"])
NARROW = target("narrow", ["Relu", "Sigmoid"])


def relu(a):
    return np.maximum(a, 0)


def sig(a):
    return 1 / (1 + np.exp(-a))


def save(name, nodes, inits, opset, n_out=1):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", F, list(X.shape))],
                          [helper.make_tensor_value_info(f"y{k}", F, None) for k in range(n_out)],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    path = os.path.join(WORK, name + ".onnx")
    onnx.save(m, path)
    return path


def cases():
    """(name, model path, the op rewritten, expected outputs, own-op target)"""
    out = []
    pads = np.array([0, 0, 2, 1, 0, 1, 2, 3], np.int64)
    np_pads = [(0, 0), (0, 1), (2, 2), (1, 3)]
    for mode in ("reflect", "edge"):
        p = save(f"pad_{mode}", [helper.make_node("Relu", ["x"], ["r"], name="r"),
                                 helper.make_node("Pad", ["r", "pads"], ["p"], name="pad", mode=mode),
                                 helper.make_node("Sigmoid", ["p"], ["y0"], name="s")],
                 [numpy_helper.from_array(pads, "pads")], 13)
        out.append((f"pad_{mode}", p, "Pad", [sig(np.pad(relu(X), np_pads, mode=mode))]))
    split = save("split", [helper.make_node("Relu", ["x"], ["r"], name="r"),
                           helper.make_node("Split", ["r", "sizes"], ["a", "b", "c"], name="split", axis=3),
                           helper.make_node("Sigmoid", ["a"], ["y0"], name="s0"),
                           helper.make_node("Sigmoid", ["b"], ["y1"], name="s1"),
                           helper.make_node("Relu", ["c"], ["y2"], name="r2")],
                 [numpy_helper.from_array(np.array([1, 3, 2], np.int64), "sizes")], 13, n_out=3)
    parts = np.split(relu(X), [1, 4], axis=3)
    out.append(("split", split, "Split", [sig(parts[0]), sig(parts[1]), relu(parts[2])]))
    split_eq = save("split_equal", [helper.make_node("Relu", ["x"], ["r"], name="r"),
                                    helper.make_node("Split", ["r"], ["a", "b"], name="split", axis=1 - 2),
                                    helper.make_node("Sigmoid", ["a"], ["y0"], name="s0"),
                                    helper.make_node("Sigmoid", ["b"], ["y1"], name="s1")], [], 13, n_out=2)
    halves = np.split(relu(X), 2, axis=-1)
    out.append(("split_equal", split_eq, "Split", [sig(halves[0]), sig(halves[1])]))
    sum3 = save("sum3", [helper.make_node("Relu", ["x"], ["r"], name="r"),
                         helper.make_node("Sigmoid", ["x"], ["s"], name="s"),
                         helper.make_node("Sum", ["r", "s", "x"], ["t"], name="sum"),
                         helper.make_node("Relu", ["t"], ["y0"], name="r2")], [], 13)
    out.append(("sum3", sum3, "Sum", [relu(relu(X) + sig(X) + X)]))
    hsw = save("hardswish", [helper.make_node("Mul", ["x", "five"], ["r"], name="scale"),
                             helper.make_node("HardSwish", ["r"], ["h"], name="hswish"),
                             helper.make_node("Sigmoid", ["h"], ["y0"], name="s")],
               [numpy_helper.from_array(np.array(5, np.float32), "five")], 14)
    sx = X * np.float32(5)  # (both clipped ends and the ramp between)
    out.append(("hardswish", hsw, "HardSwish", [sig(sx * np.clip(sx / 6 + 0.5, 0, 1))]))
    shape = numpy_helper.from_array(np.array(X.shape, np.int64), "shape")
    exp = save("expand", [helper.make_node("ReduceMean", ["x"], ["mu"], name="mean", axes=[1, 2], keepdims=1),
                          helper.make_node("Expand", ["mu", "shape"], ["e"], name="expand"),
                          helper.make_node("Mul", ["x", "e"], ["t"], name="mul"),
                          helper.make_node("Sigmoid", ["t"], ["y0"], name="s")], [shape], 13)
    out.append(("expand", exp, "Expand", [sig(X * X.mean(axis=(1, 2), keepdims=True))]))
    sc, bi = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    inorm = save("instance_norm", [helper.make_node("Relu", ["x"], ["r"], name="r"),
                                   helper.make_node("InstanceNormalization", ["r", "sc", "bi"], ["n"], name="inorm",
                                                    epsilon=1e-3),
                                   helper.make_node("Sigmoid", ["n"], ["y0"], name="s")],
                 [numpy_helper.from_array(sc, "sc"), numpy_helper.from_array(bi, "bi")], 13)
    rx = relu(X).astype(np.float64)
    mu, var = rx.mean(axis=(2, 3), keepdims=True), rx.var(axis=(2, 3), keepdims=True)
    want = (rx - mu) / np.sqrt(var + 1e-3) * sc[:, None, None] + bi[:, None, None]
    out.append(("instance_norm", inorm, "InstanceNormalization", [sig(want).astype(np.float32)]))
    ls, lb = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    lnorm = save("layer_norm", [helper.make_node("Relu", ["x"], ["r"], name="r"),
                                helper.make_node("LayerNormalization", ["r", "ls", "lb"], ["n"], name="lnorm", axis=-1),
                                helper.make_node("Sigmoid", ["n"], ["y0"], name="s")],
                 [numpy_helper.from_array(ls, "ls"), numpy_helper.from_array(lb, "lb")], 17)
    mu, var = rx.mean(axis=-1, keepdims=True), rx.var(axis=-1, keepdims=True)
    out.append(("layer_norm", lnorm, "LayerNormalization",
                [sig((rx - mu) / np.sqrt(var + 1e-5) * ls + lb).astype(np.float32)]))
    return out


def partition(model, tgt, *extra):
    r = subprocess.run([args.seam, "partition", model, "--target", tgt, "--json", *extra], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[-300:])
    p = json.loads(r.stdout)
    dev = sum(1 for s in p["subgraphs"] if s["target"] != "cpu")
    return p, dev


def outputs(out_dir, n):
    return [np.load(os.path.join(out_dir, f"y{k}.npy")) for k in range(n)]


def close(got, want):
    return all(g.shape == w.shape and np.abs(g - w).max() <= 1e-6 * max(1.0, float(np.abs(w).max()))
               for g, w in zip(got, want))


xp = os.path.join(WORK, "x.npy")
np.save(xp, X)
for name, model, op, want in cases():
    if not check.selected(name):
        continue
    try:
        p, dev = partition(model, HEALS)
        p0, dev0 = partition(model, HEALS, "--no-rewrite")
        notes = [n for n in p["notes"] if n.startswith("rewrite:")]
        ops = {n["op"] for n in p["nodes"]}
        check.expect(dev < dev0 and len(notes) == 1 and op in notes[0] and op not in ops,
                     f"{name}: {op} rewritten for a target with the ops it becomes: {dev0} -> {dev} device subgraphs",
                     f"{dev0} -> {dev}, notes {notes}, ops {sorted(ops)}")
        out = os.path.join(WORK, name + ".out")
        r = subprocess.run([args.seam, "run", model, "--target", HEALS, "--input", f"x={xp}", "--output-dir", out],
                           capture_output=True, text=True, timeout=120)
        check.expect(r.returncode == 0 and close(outputs(out, len(want)), want) and "rewrite:" in r.stderr,
                     f"{name}: seam run --target (rewritten) gives numpy's answer, and says so", r.stderr[-300:])
        saved = os.path.join(WORK, name + ".partitioned.onnx")
        r = subprocess.run([args.seam, "partition", model, "--target", HEALS, "-o", saved], capture_output=True,
                           text=True, timeout=120)
        out2 = os.path.join(WORK, name + ".saved.out")
        r2 = subprocess.run([args.seam, "run", saved, "--input", f"x={xp}", "--output-dir", out2],
                            capture_output=True, text=True, timeout=120) if r.returncode == 0 else r
        check.expect(r2.returncode == 0 and close(outputs(out2, len(want)), want),
                     f"{name}: the saved partitioned model runs and gives numpy's answer", (r.stderr + r2.stderr)[-300:])
        # where the rewrite cannot help, or is not needed: the plan as without it
        for tname, tgt in (("narrow", NARROW), ("own op", target(f"own_{op}", ["Relu", "Sigmoid", op]))):
            p1, dev1 = partition(model, tgt)
            p2, dev2 = partition(model, tgt, "--no-rewrite")
            same = [(n["name"], n["target"]) for n in p1["nodes"]] == [(n["name"], n["target"]) for n in p2["nodes"]]
            check.expect(same and dev1 == dev2 and not any(n.startswith("rewrite:") for n in p1["notes"]),
                         f"{name}: not rewritten for the {tname} target", f"{dev2} -> {dev1}, notes {p1['notes']}")
    except Exception as e:  # noqa: BLE001
        check.fail(f"{name}: {e}")
check.finish()
