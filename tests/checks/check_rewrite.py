"""Rewrites that heal partitions (issue 30): seam_model_rewrite through the CLI.

usage: /usr/bin/python3 check_rewrite.py SEAM_BINARY WORKDIR [-k CASE]

Each case is a model where a node a rules target lacks (a reflect or edge
Pad, a Split, a Sum of three, a HardSwish, an Expand read by a Mul, an
InstanceNormalization, a LayerNormalization, a GroupNormalization of
opset 18 (scale per group) and 21 (per channel, also with spatial dims not
known), a Gelu with Erf and with Tanh, a Mish, a HardSigmoid at opset 13
and 10) sits between nodes the target takes. For a target that also takes
the ops its rewrite writes (Slice, Concat, Add, HardSigmoid, Mul,
ReduceMean, Sub, Sqrt, Div, Reshape, Shape, Erf, Tanh, Softplus; Clip
instead of HardSigmoid for the HardSigmoid cases):
  - `seam partition` gives fewer device subgraphs than with --no-rewrite,
    and the plan's notes say what was rewritten;
  - `seam run --target` (the rewritten model) and the model saved by
    `seam partition -o` and run again give the reference's answer (numpy:
    np.pad, np.split, a sum, x * clip(x / 6 + 1/2, 0, 1), broadcasting, the
    normalizations in float64, clip(alpha x + beta, 0, 1); torch in
    float64: group_norm, gelu, mish), and `seam run --target --no-rewrite`
    the same, all within 1e-6 of the output's scale.
For a target without Slice and Concat (the rewrite cannot help), for one
that lacks one op of the new kinds' forms (Reshape, Erf, Tanh, Softplus,
Clip: the rewrite would leave as many device subgraphs or more) and for one
that takes the op itself, nothing is rewritten: the plan equals the one
with --no-rewrite and has no rewrite note.

relu6: a Clip to [0, 6] between two Convs (opset 13, bounds as inputs;
opset 10, as attributes) is the Relu6 of a rules target that lists
"Relu6" and not Clip: one device subgraph, and `seam run --target` gives
numpy's conv-clip-conv; a Clip to [0, 5] stays on the CPU (three
subgraphs); a target listing neither keeps both Clips on the CPU.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
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


HEAL_OPS = ["Relu", "Sigmoid", "Slice", "Concat", "Add", "HardSigmoid", "Mul", "ReduceMean", "Sub", "Sqrt", "Div",
            "Reshape", "Shape", "Erf", "Tanh", "Softplus"]
HEALS = target("heals", HEAL_OPS)
NARROW = target("narrow", ["Relu", "Sigmoid"])
# the HardSigmoid cases: a target with Clip but not HardSigmoid
CLIP_OPS = [op for op in HEAL_OPS if op != "HardSigmoid"] + ["Clip"]


def relu(a):
    return np.maximum(a, 0)


def sig(a):
    return 1 / (1 + np.exp(-a))


def save(name, nodes, inits, opset, n_out=1, shape=None):
    shape = list(X.shape) if shape is None else shape
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", F, shape)],
                          [helper.make_tensor_value_info(f"y{k}", F, None) for k in range(n_out)],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    path = os.path.join(WORK, name + ".onnx")
    onnx.save(m, path)
    return path


def case(name, model, op, want, x=X, ops=None, lacks=None):
    """name, model path, the op rewritten, the expected outputs, the input,
    the ops of the target it heals for, and one of those its form needs
    (a target without it gains nothing from the rewrite)."""
    return (name, model, op, want, x, HEAL_OPS if ops is None else ops, lacks)


def t64(a):
    return torch.from_numpy(np.asarray(a, np.float64))


def np32(t):
    return t.numpy().astype(np.float32)


def new_cases():
    """GroupNormalization, Gelu, Mish and HardSigmoid: pre -> op -> Sigmoid,
    the op's own output a second output (y1), so that it is compared
    unsquashed."""
    out = []
    xg = rng.standard_normal((2, 6, 5, 4)).astype(np.float32)
    offs = (rng.standard_normal((6, 1, 1)) * 3).astype(np.float32)  # (group means far from 0)
    for opset, shape, groups, eps in ((18, [2, 6, 5, 4], 3, 1e-2), (21, [2, 6, 5, 4], 2, 1e-5),
                                      (21, [2, 6, "h", "w"], 3, 1e-3), (21, [2, 6, 20], 3, 1e-5)):
        x = xg if len(shape) == 4 else xg.reshape(2, 6, 20)
        off = offs if len(shape) == 4 else offs[:, :, 0]
        entries = groups if opset < 21 else 6  # (-18: per group; -21: per channel)
        sc = rng.standard_normal(entries).astype(np.float32)
        bi = rng.standard_normal(entries).astype(np.float32)
        name = f"group_norm{opset}" + ("_dyn" if "h" in shape else "_rank3" if len(shape) == 3 else "")
        m = save(name, [helper.make_node("Add", ["x", "off"], ["a"], name="pre"),
                        helper.make_node("GroupNormalization", ["a", "sc", "bi"], ["y1"], name="gnorm",
                                         num_groups=groups, epsilon=eps),
                        helper.make_node("Sigmoid", ["y1"], ["y0"], name="s")],
                 [numpy_helper.from_array(off, "off"), numpy_helper.from_array(sc, "sc"),
                  numpy_helper.from_array(bi, "bi")], opset, n_out=2, shape=shape)
        rep = 6 // entries
        ref = torch.nn.functional.group_norm(t64(x + off), groups, t64(np.repeat(sc, rep)),
                                             t64(np.repeat(bi, rep)), eps)
        out.append(case(name, m, "GroupNormalization", [np32(torch.sigmoid(ref)), np32(ref)], x=x,
                        lacks="Reshape"))
    sx = X * np.float32(3)  # (both tails and the middle)
    for approx, lacks in (("none", "Erf"), ("tanh", "Tanh")):
        name = f"gelu_{approx}"
        m = save(name, [helper.make_node("Mul", ["x", "three"], ["a"], name="pre"),
                        helper.make_node("Gelu", ["a"], ["y1"], name="gelu", approximate=approx),
                        helper.make_node("Sigmoid", ["y1"], ["y0"], name="s")],
                 [numpy_helper.from_array(np.array(3, np.float32), "three")], 20, n_out=2)
        ref = torch.nn.functional.gelu(t64(sx), approximate=approx)
        out.append(case(name, m, "Gelu", [np32(torch.sigmoid(ref)), np32(ref)], lacks=lacks))
    fx = X * np.float32(8)  # (Softplus's both ends)
    m = save("mish", [helper.make_node("Mul", ["x", "eight"], ["a"], name="pre"),
                      helper.make_node("Mish", ["a"], ["y1"], name="mish"),
                      helper.make_node("Sigmoid", ["y1"], ["y0"], name="s")],
             [numpy_helper.from_array(np.array(8, np.float32), "eight")], 18, n_out=2)
    ref = torch.nn.functional.mish(t64(fx))
    out.append(case("mish", m, "Mish", [np32(torch.sigmoid(ref)), np32(ref)], lacks="Softplus"))
    for opset in (13, 10):
        name = f"hardsigmoid{opset}"
        m = save(name, [helper.make_node("Mul", ["x", "three"], ["a"], name="pre"),
                        helper.make_node("HardSigmoid", ["a"], ["y1"], name="hsig", alpha=0.3, beta=0.4),
                        helper.make_node("Sigmoid", ["y1"], ["y0"], name="s")],
                 [numpy_helper.from_array(np.array(3, np.float32), "three")], opset, n_out=2)
        h = np.clip(sx.astype(np.float64) * np.float32(0.3) + np.float32(0.4), 0, 1)
        out.append(case(name, m, "HardSigmoid", [sig(h).astype(np.float32), h.astype(np.float32)],
                        ops=CLIP_OPS, lacks="Clip"))
    return out


def cases():
    out = []
    pads = np.array([0, 0, 2, 1, 0, 1, 2, 3], np.int64)
    np_pads = [(0, 0), (0, 1), (2, 2), (1, 3)]
    for mode in ("reflect", "edge"):
        p = save(f"pad_{mode}", [helper.make_node("Relu", ["x"], ["r"], name="r"),
                                 helper.make_node("Pad", ["r", "pads"], ["p"], name="pad", mode=mode),
                                 helper.make_node("Sigmoid", ["p"], ["y0"], name="s")],
                 [numpy_helper.from_array(pads, "pads")], 13)
        out.append(case(f"pad_{mode}", p, "Pad", [sig(np.pad(relu(X), np_pads, mode=mode))]))
    split = save("split", [helper.make_node("Relu", ["x"], ["r"], name="r"),
                           helper.make_node("Split", ["r", "sizes"], ["a", "b", "c"], name="split", axis=3),
                           helper.make_node("Sigmoid", ["a"], ["y0"], name="s0"),
                           helper.make_node("Sigmoid", ["b"], ["y1"], name="s1"),
                           helper.make_node("Relu", ["c"], ["y2"], name="r2")],
                 [numpy_helper.from_array(np.array([1, 3, 2], np.int64), "sizes")], 13, n_out=3)
    parts = np.split(relu(X), [1, 4], axis=3)
    out.append(case("split", split, "Split", [sig(parts[0]), sig(parts[1]), relu(parts[2])]))
    split_eq = save("split_equal", [helper.make_node("Relu", ["x"], ["r"], name="r"),
                                    helper.make_node("Split", ["r"], ["a", "b"], name="split", axis=1 - 2),
                                    helper.make_node("Sigmoid", ["a"], ["y0"], name="s0"),
                                    helper.make_node("Sigmoid", ["b"], ["y1"], name="s1")], [], 13, n_out=2)
    halves = np.split(relu(X), 2, axis=-1)
    out.append(case("split_equal", split_eq, "Split", [sig(halves[0]), sig(halves[1])]))
    sum3 = save("sum3", [helper.make_node("Relu", ["x"], ["r"], name="r"),
                         helper.make_node("Sigmoid", ["x"], ["s"], name="s"),
                         helper.make_node("Sum", ["r", "s", "x"], ["t"], name="sum"),
                         helper.make_node("Relu", ["t"], ["y0"], name="r2")], [], 13)
    out.append(case("sum3", sum3, "Sum", [relu(relu(X) + sig(X) + X)]))
    hsw = save("hardswish", [helper.make_node("Mul", ["x", "five"], ["r"], name="scale"),
                             helper.make_node("HardSwish", ["r"], ["h"], name="hswish"),
                             helper.make_node("Sigmoid", ["h"], ["y0"], name="s")],
               [numpy_helper.from_array(np.array(5, np.float32), "five")], 14)
    sx = X * np.float32(5)  # (both clipped ends and the ramp between)
    out.append(case("hardswish", hsw, "HardSwish", [sig(sx * np.clip(sx / 6 + 0.5, 0, 1))]))
    shape = numpy_helper.from_array(np.array(X.shape, np.int64), "shape")
    exp = save("expand", [helper.make_node("ReduceMean", ["x"], ["mu"], name="mean", axes=[1, 2], keepdims=1),
                          helper.make_node("Expand", ["mu", "shape"], ["e"], name="expand"),
                          helper.make_node("Mul", ["x", "e"], ["t"], name="mul"),
                          helper.make_node("Sigmoid", ["t"], ["y0"], name="s")], [shape], 13)
    out.append(case("expand", exp, "Expand", [sig(X * X.mean(axis=(1, 2), keepdims=True))]))
    sc, bi = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    inorm = save("instance_norm", [helper.make_node("Relu", ["x"], ["r"], name="r"),
                                   helper.make_node("InstanceNormalization", ["r", "sc", "bi"], ["n"], name="inorm",
                                                    epsilon=1e-3),
                                   helper.make_node("Sigmoid", ["n"], ["y0"], name="s")],
                 [numpy_helper.from_array(sc, "sc"), numpy_helper.from_array(bi, "bi")], 13)
    rx = relu(X).astype(np.float64)
    mu, var = rx.mean(axis=(2, 3), keepdims=True), rx.var(axis=(2, 3), keepdims=True)
    want = (rx - mu) / np.sqrt(var + 1e-3) * sc[:, None, None] + bi[:, None, None]
    out.append(case("instance_norm", inorm, "InstanceNormalization", [sig(want).astype(np.float32)]))
    ls, lb = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    lnorm = save("layer_norm", [helper.make_node("Relu", ["x"], ["r"], name="r"),
                                helper.make_node("LayerNormalization", ["r", "ls", "lb"], ["n"], name="lnorm", axis=-1),
                                helper.make_node("Sigmoid", ["n"], ["y0"], name="s")],
                 [numpy_helper.from_array(ls, "ls"), numpy_helper.from_array(lb, "lb")], 17)
    mu, var = rx.mean(axis=-1, keepdims=True), rx.var(axis=-1, keepdims=True)
    out.append(case("layer_norm", lnorm, "LayerNormalization",
                [sig((rx - mu) / np.sqrt(var + 1e-5) * ls + lb).astype(np.float32)]))
    return out + new_cases()


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
    return len(got) == len(want) and all(
        g.shape == w.shape and np.abs(g - w).max() <= 1e-6 * max(1.0, float(np.abs(w).max()))
        for g, w in zip(got, want))


def worst(got, want):
    """The largest error against the output's scale, for the failures' words."""
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
        return "no outputs or other shapes"
    return "error %.3g of the scale" % max(float(np.abs(g - w).max()) / max(1.0, float(np.abs(w).max()))
                                           for g, w in zip(got, want))


def run(model, xp, out, *extra):
    r = subprocess.run([args.seam, "run", model, "--input", f"x={xp}", "--output-dir", out, *extra],
                       capture_output=True, text=True, timeout=120)
    return r


for name, model, op, want, x, heal_ops, lacks in cases():
    if not check.selected(name):
        continue
    try:
        xp = os.path.join(WORK, name + ".x.npy")
        np.save(xp, x)
        heals = target(f"heals_{name}", heal_ops)
        p, dev = partition(model, heals)
        p0, dev0 = partition(model, heals, "--no-rewrite")
        notes = [n for n in p["notes"] if n.startswith("rewrite:")]
        ops = {n["op"] for n in p["nodes"]}
        check.expect(dev < dev0 and len(notes) == 1 and op in notes[0] and op not in ops,
                     f"{name}: {op} rewritten for a target with the ops it becomes: {dev0} -> {dev} device subgraphs",
                     f"{dev0} -> {dev}, notes {notes}, ops {sorted(ops)}")
        out = os.path.join(WORK, name + ".out")
        r = run(model, xp, out, "--target", heals)
        got = outputs(out, len(want)) if r.returncode == 0 else []
        check.expect(r.returncode == 0 and close(got, want) and "rewrite:" in r.stderr,
                     f"{name}: seam run --target (rewritten) gives the reference's answer, and says so",
                     f"{worst(got, want)}; {r.stderr[-300:]}")
        out0 = os.path.join(WORK, name + ".norewrite.out")
        r0 = run(model, xp, out0, "--target", heals, "--no-rewrite")
        got0 = outputs(out0, len(want)) if r0.returncode == 0 else []
        check.expect(r0.returncode == 0 and got and close(got0, want) and close(got, got0) and
                     "rewrite:" not in r0.stderr,
                     f"{name}: seam run --target --no-rewrite gives the same answer, without the rewrite",
                     f"against the reference {worst(got0, want)}, against the rewritten {worst(got, got0)}; "
                     f"{r0.stderr[-300:]}")
        saved = os.path.join(WORK, name + ".partitioned.onnx")
        r = subprocess.run([args.seam, "partition", model, "--target", heals, "-o", saved], capture_output=True,
                           text=True, timeout=120)
        out2 = os.path.join(WORK, name + ".saved.out")
        r2 = run(saved, xp, out2) if r.returncode == 0 else r
        got2 = outputs(out2, len(want)) if r2.returncode == 0 else []
        check.expect(r2.returncode == 0 and close(got2, want),
                     f"{name}: the saved partitioned model runs and gives the reference's answer",
                     f"{worst(got2, want)}; {(r.stderr + r2.stderr)[-300:]}")
        # where the rewrite cannot help, or is not needed: the plan as without it
        others = [("narrow", NARROW), ("own op", target(f"own_{name}", heal_ops + [op]))]
        if lacks:
            others.append((f"no {lacks}", target(f"no_{lacks}_{name}", [o for o in heal_ops if o != lacks])))
        for tname, tgt in others:
            p1, dev1 = partition(model, tgt)
            p2, dev2 = partition(model, tgt, "--no-rewrite")
            same = [(n["name"], n["target"]) for n in p1["nodes"]] == [(n["name"], n["target"]) for n in p2["nodes"]]
            check.expect(same and dev1 == dev2 and not any(n.startswith("rewrite:") for n in p1["notes"]),
                         f"{name}: not rewritten for the {tname} target", f"{dev2} -> {dev1}, notes {p1['notes']}")
    except Exception as e:  # noqa: BLE001
        check.fail(f"{name}: {e}")
if check.selected("relu6"):
    try:
        wa = (rng.standard_normal((4, 3, 3, 3)) * 0.5).astype(np.float32)
        wb = (rng.standard_normal((2, 4, 3, 3)) * 0.5).astype(np.float32)
        x6 = (rng.standard_normal((1, 3, 6, 5)) * 3).astype(np.float32)

        def conv(a, w):  # stride 1, pads 1, by its taps
            p = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
            return sum(np.einsum("nchw,oc->nohw", p[:, :, i:i + a.shape[2], j:j + a.shape[3]], w[:, :, i, j])
                       for i in range(3) for j in range(3))

        def clip_model(name, lo, hi, opset):
            clip = (helper.make_node("Clip", ["c", "lo", "hi"], ["r"]) if opset >= 11
                    else helper.make_node("Clip", ["c"], ["r"], min=lo, max=hi))
            inits = [numpy_helper.from_array(wa, "wa"), numpy_helper.from_array(wb, "wb")]
            if opset >= 11:
                inits += [numpy_helper.from_array(np.array(lo, np.float32), "lo"),
                          numpy_helper.from_array(np.array(hi, np.float32), "hi")]
            nodes = [helper.make_node("Conv", ["x", "wa"], ["c"], pads=[1, 1, 1, 1]), clip,
                     helper.make_node("Conv", ["r", "wb"], ["y0"], pads=[1, 1, 1, 1])]
            return save(name, nodes, inits, opset, shape=list(x6.shape))
        npu6 = target("npu6", ["Conv", "Relu6"])
        xp = os.path.join(WORK, "relu6.x.npy")
        np.save(xp, x6)
        for name, lo, hi, opset, want_dev in (("relu6", 0.0, 6.0, 13, 1), ("relu6_op10", 0.0, 6.0, 10, 1),
                                              ("clip05", 0.0, 5.0, 13, 2)):
            model = clip_model(name, lo, hi, opset)
            p, dev = partition(model, npu6)
            clip_on = [n["target"] for n in p["nodes"] if n["op"] == "Clip"]
            check.expect(dev == want_dev and clip_on == (["npu6"] if want_dev == 1 else ["cpu"]),
                         f"relu6: {name}: Clip [{lo:g}, {hi:g}] at opset {opset} on {clip_on}, {dev} device subgraphs",
                         json.dumps(p["nodes"])[-400:])
            out = os.path.join(WORK, name + ".out")
            r = run(model, xp, out, "--target", npu6)
            got = outputs(out, 1) if r.returncode == 0 else []
            want = [conv(np.clip(conv(x6, wa), lo, hi), wb).astype(np.float32)]
            check.expect(r.returncode == 0 and close(got, want), f"relu6: {name}: seam run --target gives numpy's answer",
                         f"{worst(got, want)}; {r.stderr[-300:]}")
        p, dev = partition(clip_model("relu6_plain", 0.0, 6.0, 13), target("conv_only", ["Conv"]))
        check.expect(dev == 2, f"relu6: a target without Relu6 or Clip keeps the Clip on the CPU ({dev} device subgraphs)")
    except Exception as e:  # noqa: BLE001
        check.fail(f"relu6: {e}")
check.finish()
