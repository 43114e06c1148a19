"""The dnnl backend's matrix products that read a Transpose: a Linear layer
(MatMul by constant 2-D weights) whose rows come through a Transpose that
keeps the last axis, as nn.MultiheadAttention's in-projection does without
batch_first ([B, S, E] -> [S, B, E]).

usage: /usr/bin/python3 check_dnnl_conv2.py SEAM WORKDIR [MODELS_DIR] [-k PATTERN]

matmul.c copies such rows dense (one reorder) and runs the product
flat, [rows, K] x [K, N], on oneDNN's kernel for 2-D products with the
weights packed once, instead of a batched product reading a strided view
(oneDNN's gemm-based kernel, weights unpacked: 1.6x slower on the
benchmark's encoders). Small models built with onnx.helper cover: the bias
Add as torch writes it (bias first) and after, a Relu, a residual Add, a
Transpose read by another node and by a graph output too, rank 4, a
permutation that moves the last axis (the copy transposes), weights that
are a graph input (not constant: must stay batched), an Add of an operand
that is not a row (must stay batched, no copy), a product with N = 1.

Each runs on the CPU kernels and on dnnl with fusion on and off; every
output must match the CPU run and torch (float64, from the ONNX file
alone) within 1e-4 of the output's scale. With fusion on the compile log
must show the product flat (`src ab`) exactly where the rule applies, and
batched elsewhere; never a reference kernel or a `slow:` line.

With MODELS_DIR (the test models), transformer_encoder.onnx too: dnnl with
fusion on and off against the CPU kernels within 1e-4, its in-projections
flat, no reference kernel.

The cases: each model by its name, and transformer_encoder.
"""
import os
import re
import sys

import numpy as np
import torch
from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import rel_err, vi  # noqa: E402

args, run, work, check = seamtest.checker_setup(__doc__, "dnnl_conv2", timeout=300, models=True)
rng = np.random.RandomState(12)
TOL = 1e-4
LOG_LINE = re.compile(r"\): node (\d+) '(.*?)' \((\w+)\): (\w+) (\S+); src ([^,;]+)")

# (name, x shape, perm, K x N weights, chain, weights constant, flat expected)
# chain: "bias_first" (Add(bias, y), as torch exports Linear), "bias_after"
# (Add(y, bias)), "bias_relu", "residual" (bias, then Add of a second input
# of the output's shape), "shared" (the Transpose is also read by a ReduceMax
# and is a graph output), "slab" (Add of a constant [S, 1, N]: not a row, so
# the product cannot run flat and the rows are not copied), None.
CASES = [
    ("t_bias_first", (2, 5, 16), (1, 0, 2), (16, 48), "bias_first", True, True),
    ("t_bias_after", (3, 4, 24), (1, 0, 2), (24, 40), "bias_after", True, True),
    ("t_bias_relu", (2, 7, 32), (1, 0, 2), (32, 64), "bias_relu", True, True),
    ("t_residual", (2, 6, 16), (1, 0, 2), (16, 16), "residual", True, True),
    ("t_shared", (2, 5, 16), (1, 0, 2), (16, 24), "shared", True, True),
    ("t_rank4", (2, 3, 4, 16), (0, 2, 1, 3), (16, 20), "bias_first", True, True),
    ("t_n1", (2, 5, 16), (1, 0, 2), (16, 1), None, True, True),
    ("t_last_axis_moved", (2, 16, 5), (0, 2, 1), (16, 12), "bias_first", True, True),
    ("t_weights_input", (2, 5, 16), (1, 0, 2), (16, 24), "bias_first", False, False),
    ("t_slab_operand", (2, 5, 16), (1, 0, 2), (16, 24), "slab", True, False),
]


def build(name, shape, perm, kn, chain, const_w):
    """The model, its feeds and the torch float64 references of its outputs."""
    x = rng.randn(*shape).astype(np.float32)
    w = (rng.randn(*kn) / np.sqrt(kn[0])).astype(np.float32)
    b = (0.1 * rng.randn(kn[1])).astype(np.float32)
    xt = torch.from_numpy(x).double().permute(*perm)
    y = xt @ torch.from_numpy(w).double()
    feeds, inputs, inits = {"x": x}, [vi("x", list(x.shape))], {"b": b}
    if const_w:
        inits["w"] = w
    else:
        feeds["w"] = w
        inputs.append(vi("w", list(w.shape)))
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=list(perm)), helper.make_node("MatMul", ["xt", "w"], ["m"])]
    outs, refs, last = [], [], "m"
    if chain in ("bias_first", "bias_relu", "residual", "shared"):
        nodes.append(helper.make_node("Add", ["b", "m"], ["a"]))
        y, last = y + torch.from_numpy(b).double(), "a"
    elif chain == "bias_after":
        nodes.append(helper.make_node("Add", ["m", "b"], ["a"]))
        y, last = y + torch.from_numpy(b).double(), "a"
    if chain == "slab":
        slab = rng.randn(y.shape[0], 1, y.shape[2]).astype(np.float32)
        inits["slab"] = slab
        nodes.append(helper.make_node("Add", ["m", "slab"], ["a"]))
        y, last = y + torch.from_numpy(slab).double(), "a"
    if chain == "bias_relu":
        nodes.append(helper.make_node("Relu", [last], ["r"]))
        y, last = torch.relu(y), "r"
    if chain == "residual":
        res = rng.randn(*y.shape).astype(np.float32)
        feeds["res"] = res
        inputs.append(vi("res", list(res.shape)))
        nodes.append(helper.make_node("Add", [last, "res"], ["s"]))
        y, last = y + torch.from_numpy(res).double(), "s"
    nodes.append(helper.make_node("Identity", [last], ["y"]))
    outs.append(vi("y", list(y.shape)))
    refs.append(y.numpy())
    if chain == "shared":
        nodes.append(helper.make_node("ReduceMax", ["xt"], ["rs"], axes=[2], keepdims=0))
        outs += [vi("rs", list(xt.shape[:2])), vi("xt", list(xt.shape))]
        refs += [xt.amax(2).numpy(), xt.numpy()]
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, inputs, outs, seamtest.initializers(inits),
                               name=name)
    return path, feeds, refs


def log_lines(stderr):
    return [m for m in map(LOG_LINE.search, stderr.splitlines()) if m]


def unexpected_refs(stderr):
    bad = [line.split("): slow: ", 1)[1][:200] for line in stderr.splitlines() if "): slow: " in line]
    for m in log_lines(stderr):
        if m.group(5).startswith("ref") and m.group(4) not in ("concat", "sum"):
            bad.append(f"node {m.group(1)} '{m.group(2)}': {m.group(4)} {m.group(5)}")
    return bad


def run_model(name, path, feed_args, d, *opts):
    r = run("run", path, *feed_args, "--output-dir", d, *opts)
    if r.returncode:
        check.fail(f"{name} ({' '.join(opts) or 'cpu'}): {r.stderr.strip()[-400:]}")
        return None, r
    return seamtest.load_outputs(path, d), r


for name, shape, perm, kn, chain, const_w, flat in CASES:
    path, feeds, refs = build(name, shape, perm, kn, chain, const_w)
    if not check.selected(name):
        continue
    feed_args = []
    for k, a in feeds.items():
        f = os.path.join(work, f"{name}.{k}.npy")
        np.save(f, a)
        feed_args += ["--input", f"{k}={f}"]
    cpu, _ = run_model(name, path, feed_args, os.path.join(work, name + ".cpu"))
    if cpu is None:
        continue
    e = seamtest.worst(rel_err(g, w) for g, w in zip(cpu, refs))
    check.expect(e <= TOL, f"{name} (cpu) against torch: error {e:.2e}", f"the CPU kernels differ from torch by {e:.3g}")
    for fusion in ("on", "off"):
        label = f"dnnl, fusion={fusion}"
        got, r = run_model(name, path, feed_args, os.path.join(work, f"{name}.dnnl.{fusion}"), "--target", "dnnl",
                           "--placement", "capability", "--compile-log", "--target-option", f"fusion={fusion}")
        if got is None:
            continue
        e_cpu = seamtest.worst(rel_err(g, c.astype(np.float64)) for g, c in zip(got, cpu))
        e_ref = seamtest.worst(rel_err(g, w) for g, w in zip(got, refs))
        check.expect(e_cpu <= TOL and e_ref <= TOL, f"{name} ({label}): error {e_cpu:.2e} against the CPU, "
                     f"{e_ref:.2e} against torch", f"beyond {TOL}")
        bad = unexpected_refs(r.stderr)
        check.expect(not bad, f"{name} ({label}): no reference kernel, no slow: line", "; ".join(bad))
        mm = [m for m in log_lines(r.stderr) if m.group(3) == "MatMul" and m.group(4) == "matmul"]
        if fusion == "on":
            srcs = [m.group(6).strip() for m in mm]
            check.expect(len(mm) == 1 and (srcs[0] == "ab") == flat,
                         f"{name} ({label}): the product runs {'flat' if flat else 'batched'} (src {srcs})",
                         f"the compile log's matmul lines: {[m.group(0) for m in mm]}")
            # the rows' copy: a reorder from a permuted layout (the sum's copy of
            # a residual is plain to plain; a Transpose that is also a graph
            # output is dense already and needs none)
            plain = "abcdef"[:len(shape)]
            copies = [m for m in log_lines(r.stderr) if m.group(3) == "MatMul" and m.group(4) == "reorder" and
                      m.group(6).strip() != plain]
            check.expect(len(copies) <= (1 if flat else 0), f"{name} ({label}): the rows copied "
                         f"{'at most once' if flat else 'never'}", f"{len(copies)} copies for the MatMul")

if args.models and check.selected("transformer_encoder"):
    path = os.path.join(args.models, "transformer_encoder.onnx")
    inp = os.path.join(args.models, "transformer_encoder.input.npy")
    if not os.path.exists(path):
        check.fail(f"transformer_encoder: {path} is missing (the models fixture makes it)")
    else:
        import onnx
        m = onnx.load(path, load_external_data=False)
        feed = ["--input", f"{seamtest.feeds(m)[0].name}={inp}"] if os.path.exists(inp) else []
        cpu, _ = run_model("transformer_encoder", path, feed, os.path.join(work, "enc.cpu"))
        # the in-projections: MatMuls by constant 2-D weights reading a Transpose
        producers = {o: n for n in m.graph.node for o in n.output}
        inits = {i.name: len(i.dims) for i in m.graph.initializer}
        want = {n.name for n in m.graph.node if n.op_type == "MatMul" and inits.get(n.input[1]) == 2 and
                producers.get(n.input[0]) is not None and producers[n.input[0]].op_type == "Transpose"}
        for fusion in ("on", "off"):
            label = f"dnnl, fusion={fusion}"
            got, r = run_model("transformer_encoder", path, feed, os.path.join(work, f"enc.dnnl.{fusion}"), "--target",
                               "dnnl", "--compile-log", "--target-option", f"fusion={fusion}")
            if got is None or cpu is None:
                continue
            e = seamtest.worst(rel_err(g, c.astype(np.float64)) for g, c in zip(got, cpu))
            check.expect(e <= TOL, f"transformer_encoder ({label}): error {e:.2e} against the CPU", f"beyond {TOL}")
            bad = unexpected_refs(r.stderr)
            check.expect(not bad, f"transformer_encoder ({label}): no reference kernel, no slow: line", "; ".join(bad))
            if fusion == "on":
                flat = {mt.group(2) for mt in log_lines(r.stderr) if mt.group(4) == "matmul" and
                        mt.group(6).strip() == "ab"}
                check.expect(want and want <= flat, f"transformer_encoder ({label}): its {len(want)} in-projections "
                             "run flat", f"not flat: {sorted(want - flat)}")

check.finish()
