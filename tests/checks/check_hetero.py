"""Partitioned execution and the one-file partitioned model, end to end.

usage: /usr/bin/python3 check_hetero.py SEAM MODELS_DIR TARGETS_DIR WORKDIR [-k PATTERN]

For every exported model (MODELS_DIR/*.onnx with NAME.input.npy) and every
rules target (the neuron-like and conv/gemm/relu/maxpool files, and a
random half of the ops):
  - `seam run MODEL --target T` gives outputs bitwise equal to the plain
    `seam run MODEL` (every target runs on the CPU kernels);
  - folding is on (the default), so this also checks that folding leaves
    outputs unchanged;
  - `seam partition MODEL --target T -o P.onnx` writes a file that
    onnx.checker accepts, whose device subgraphs are ai.seam Subgraph
    nodes (as many as the plan's device subgraphs), and `seam run P.onnx`
    gives the same outputs again.
`seam run P.onnx --report` must report, for each device subgraph, the bytes
that onnx.shape_inference's shapes say cross its boundary.
A model with a symbolic input dim (transformer_encoder_dyn, [1, seq]) runs
on dnnl when `seam run` gets the shape from its --input file (within 1e-4
of torch; at another length within 1e-4 of the CPU); without shapes, the
plan's note and `seam run` say once why its nodes stay on the CPU and how
to fix it, and --quiet silences that.
Then malformed partitioned files (no target, an unknown target without
rules, broken rules, no body, a body that does not match the node) must
each fail with exit 1 and a message naming the Subgraph node.

The cases: MODEL x TARGET (resnet18 x neuron; the targets are neuron, ccrm,
dense and half), folding, symbolic_inputs, malformed_subgraph, weights_file and
replace_weights. The last three read what seed_mlp x neuron, resnet18 x
neuron and resnet18's plain run leave in WORKDIR, so selecting one runs
those too. Without -k, at least one device subgraph's reported bytes must
have been checked.
"""
import glob
import json
import os
import random
import sys

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

parser = seamtest.arg_parser(__doc__)
parser.add_argument("seam", metavar="SEAM")
parser.add_argument("models", metavar="MODELS_DIR")
parser.add_argument("targets", metavar="TARGETS_DIR")
parser.add_argument("work", metavar="WORKDIR")
args = parser.parse_args()
run, models_dir, targets_dir, work = seamtest.Program(args.seam), args.models, args.targets, args.work
check = seamtest.Checker("hetero", args.k)
os.makedirs(work, exist_ok=True)
outputs = seamtest.load_outputs


models = [p for p in sorted(glob.glob(os.path.join(models_dir, "*.onnx"))) if os.path.exists(p[:-5] + ".input.npy")]
all_ops = sorted({n.op_type for p in models for n in onnx.load(p, load_external_data=False).graph.node})
half = os.path.join(work, "half.json")
rng = random.Random(99)
with open(half, "w") as f:
    json.dump({"name": "half", "default": False, "ops": {op: rng.random() < 0.5 for op in all_ops}}, f)
targets = [os.path.join(targets_dir, "neuron_like.json"), os.path.join(targets_dir, "conv_gemm_relu_maxpool.json"),
           os.path.join(targets_dir, "dense_npu.json"), half]
target_name = {t: json.load(open(t))["name"] for t in targets}
# the later cases that read a pair's partitioned file, or a model's plain run
pair_needed_by = {("seed_mlp", "neuron"): ["malformed_subgraph"], ("resnet18", "neuron"): ["replace_weights"]}
ref_needed_by = {"resnet18": ["weights_file", "replace_weights"]}

checked = bytes_checked = 0
for model in models:
    name = os.path.basename(model)[:-5]
    chosen = [t for t in targets if check.selected(f"{name} x {target_name[t]}",
                                                   needed_by=pair_needed_by.get((name, target_name[t]), ()))]
    if not chosen and not any(check.matches(c) for c in ref_needed_by.get(name, ())):
        continue
    m = onnx.load(model, load_external_data=False)
    feed = seamtest.feeds(m)[0]
    x = np.load(model[:-5] + ".input.npy")
    common = ["--input", f"{feed.name}={model[:-5]}.input.npy",
              "--shape", f"{feed.name}=" + seamtest.shape_arg(x.shape)]
    ref_dir = os.path.join(work, name + ".ref")
    r = run("run", model, *common, "--output-dir", ref_dir)
    if r.returncode:
        check.fail(f"{name}: plain run failed: {r.stderr.strip()}")
        continue
    ref = outputs(model, ref_dir)
    for t in chosen:
        tname = target_name[t]
        tag = f"{name} x {tname}"
        n0 = len(check.failures)
        d = os.path.join(work, f"{name}.{tname}.fly")
        r = run("run", model, "--target", t, *common, "--output-dir", d)
        if r.returncode:
            check.fail(f"{tag}: seam run --target failed: {r.stderr.strip()}")
            continue
        if not all(np.array_equal(a, b, equal_nan=True) for a, b in zip(ref, outputs(model, d))):
            check.fail(f"{tag}: partitioned run differs from the plain run")
        p = os.path.join(work, f"{name}.{tname}.onnx")
        r = run("partition", model, "--target", t, "--shape", common[3], "--json", "-o", p)
        if r.returncode:
            check.fail(f"{tag}: seam partition -o failed: {r.stderr.strip()}")
            continue
        plan = json.loads(r.stdout)
        n_dev = sum(1 for s in plan["subgraphs"] if s["target"] != "cpu")
        saved = onnx.load(p)
        try:
            onnx.checker.check_model(saved)
        except Exception as e:  # noqa: BLE001
            check.fail(f"{tag}: onnx.checker refuses the partitioned file: {e}")
        subs = [n for n in saved.graph.node if n.domain == "ai.seam" and n.op_type == "Subgraph"]
        if len(subs) != n_dev:
            check.fail(f"{tag}: {len(subs)} ai.seam Subgraph nodes, the plan has {n_dev} device subgraphs")
        d2 = os.path.join(work, f"{name}.{tname}.saved")
        r = run("run", p, *common, "--output-dir", d2)
        if r.returncode:
            check.fail(f"{tag}: seam run of the saved file failed: {r.stderr.strip()}")
            continue
        if not all(np.array_equal(a, b, equal_nan=True) for a, b in zip(ref, outputs(model, d2))):
            check.fail(f"{tag}: the saved partitioned model's outputs differ")
        # --report's bytes against a count from onnx's own shape inference
        if not seamtest.has_symbolic_dims(feed):
            r = run("run", p, *common, "--report")
            got = {}
            for line in r.stdout.splitlines():
                f = line.split()
                if len(f) == 6 and f[0].startswith("seam_subgraph_"):
                    got[f[0]] = (int(f[4]), int(f[5]))
            sizes = {}
            inf = onnx.shape_inference.infer_shapes(m)
            for vi in list(inf.graph.value_info) + list(inf.graph.input) + list(inf.graph.output):
                tt = vi.type.tensor_type
                if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
                    sizes[vi.name] = int(np.prod([d.dim_value for d in tt.shape.dim])) * \
                        np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tt.elem_type]).itemsize
            for n in subs:
                if not all(v in sizes for v in list(n.input) + list(n.output)):
                    continue
                want = (sum(sizes[v] for v in n.input), sum(sizes[v] for v in n.output))
                bytes_checked += 1
                if got.get(n.name) != want:
                    check.fail(f"{tag}: --report says {n.name} moved {got.get(n.name)} bytes, onnx's shapes say {want}")
        checked += 1
        if len(check.failures) == n0:
            check.ok(f"{tag}: {n_dev} device subgraphs; run, saved and reloaded, outputs equal the plain run's")
            # each partitioned file holds a copy of the weights (2.1 GB over the
            # models and targets, once CI's disk ran short): kept only for a
            # failure, or for the later cases that read it
            if (name, tname) not in pair_needed_by:
                os.remove(p)

# folding: shape arithmetic on static shapes no longer splits device work
vit = os.path.join(models_dir, "vit_small.onnx")
if check.selected("folding") and os.path.exists(vit):
    counts = []
    for extra in (["--no-fold"], []):
        r = run("partition", vit, "--target", os.path.join(targets_dir, "dense_npu.json"), "--json", *extra)
        counts.append(sum(1 for s in json.loads(r.stdout)["subgraphs"] if s["target"] != "cpu") if r.returncode == 0 else -1)
        if r.returncode == 0 and not extra:
            consts = [n for n in json.loads(r.stdout)["nodes"] if n["target"] == "constant"]
            if not consts:
                check.fail("vit_small: folding marked no node constant")
    if not (0 < counts[1] < counts[0]):
        check.fail(f"vit_small x dense: device subgraphs {counts[0]} without folding, {counts[1]} with; "
                   "folding should need fewer")
    else:
        check.ok(f"folding: vit_small x dense needs {counts[1]} device subgraphs, {counts[0]} without folding")

# malformed partitioned files, from the MLP partitioned for the neuron-like target
dyn = os.path.join(models_dir, "transformer_encoder_dyn.onnx")
if check.selected("symbolic_inputs") and os.path.exists(dyn):
    # The model's input is [1, seq]. seam run takes the shape from the
    # --input file, so dnnl gets the model (it compiles for static shapes);
    # without one, placement says why the nodes stay on the CPU, once.
    x = np.load(dyn[:-5] + ".input.npy")
    want = np.load(dyn[:-5] + ".expected.0.npy")
    d = os.path.join(work, "dyn_dnnl")
    r = run("run", dyn, "--target", "dnnl", "--input", f"input={dyn[:-5]}.input.npy", "--output-dir", d, "--report")
    dev = [ln.split() for ln in r.stdout.splitlines() if ln.strip().startswith("seam_subgraph_") and " dnnl " in ln]
    if r.returncode:
        check.fail(f"symbolic_inputs: run failed: {r.stderr.strip()}")
    else:
        err = seamtest.rel_err(np.load(os.path.join(d, "output.npy")), want)
        check.expect(dev and int(dev[0][2]) > 100 and err <= 1e-4,
                     f"symbolic_inputs: the --input file's shape puts {dev[0][2] if dev else 0} nodes on dnnl, "
                     f"error {err:.1e} against torch", r.stdout.strip()[-300:])
        check.expect("symbolic dims" not in r.stderr, "symbolic_inputs: no note when the shapes are known", r.stderr)
    # another sequence length: against the plain CPU run
    ids = os.path.join(work, "dyn_ids7.npy")
    np.save(ids, np.random.default_rng(7).integers(0, 1000, (1, 7)).astype(np.int64))
    outs = {}
    for label, extra in (("cpu", []), ("dnnl", ["--target", "dnnl"])):
        od = os.path.join(work, f"dyn7_{label}")
        r = run("run", dyn, *extra, "--input", f"input={ids}", "--output-dir", od)
        if r.returncode:
            check.fail(f"symbolic_inputs: seq 7 on {label} failed: {r.stderr.strip()}")
        else:
            outs[label] = np.load(os.path.join(od, "output.npy"))
    if len(outs) == 2:
        err = seamtest.rel_err(outs["dnnl"], outs["cpu"].astype(np.float64))
        check.expect(outs["dnnl"].shape == (1, 7, 128) and err <= 1e-4,
                     f"symbolic_inputs: sequence 7 on dnnl, shape {outs['dnnl'].shape}, error {err:.1e} against the CPU")
    # without shapes, the shape arithmetic becomes DimExpr nodes (computed
    # from the input's shape alone): nothing strands dnnl's nodes on the CPU
    r = run("partition", dyn, "--target", "dnnl")
    check.expect(r.returncode == 0 and "1 on devices" in r.stdout and "DimExpr" in r.stdout
                 and "between device subgraphs" not in r.stdout,
                 "symbolic_inputs: partition without shapes: one dnnl subgraph, the shape arithmetic as DimExpr nodes",
                 r.stdout.strip()[-400:])
    r = run("run", dyn, "--target", "dnnl")
    lines = [ln for ln in r.stderr.splitlines() if "DimExpr" in ln]
    check.expect(len(lines) == 1 and lines[0].startswith("seam: ") and r.returncode != 0
                 and "symbolic dimension 'seq'" in r.stderr,
                 "symbolic_inputs: seam run without shapes says so once on stderr, and asks for the dim",
                 r.stderr.strip())
    r = run("run", dyn, "--target", "dnnl", "--quiet")
    check.expect("DimExpr" not in r.stderr, "symbolic_inputs: --quiet silences it", r.stderr.strip())


if check.selected("malformed_subgraph"):
    base = os.path.join(work, "seed_mlp.neuron.onnx")
    n0 = len(check.failures)
    if os.path.exists(base):
        good = onnx.load(base)
        sub_index = next(i for i, n in enumerate(good.graph.node) if n.domain == "ai.seam")
        sub_name = good.graph.node[sub_index].name

        def mutate(label, fn):
            bad = onnx.load(base)
            fn(bad.graph.node[sub_index])
            path = os.path.join(work, f"bad_{label}.onnx")
            onnx.save(bad, path)
            r = run("run", path)
            if r.returncode != 1 or sub_name not in r.stderr:
                check.fail(f"malformed ({label}): exit {r.returncode}, message {r.stderr.strip()!r}; "
                           f"wanted exit 1 naming '{sub_name}'")

        def drop(attr):
            def fn(n):
                keep = [a for a in n.attribute if a.name != attr]
                del n.attribute[:]
                n.attribute.extend(keep)
            return fn

        def set_attr(attr, value):
            def fn(n):
                drop(attr)(n)
                n.attribute.append(helper.make_attribute(attr, value))
            return fn

        def both(*fns):
            def fn(n):
                for f in fns:
                    f(n)
            return fn

        mutate("no_target", drop("target"))
        mutate("unknown_target", both(set_attr("target", "xpu"), drop("rules")))
        mutate("bad_rules", set_attr("rules", "{not json"))
        mutate("target_not_string", set_attr("target", 3))
        mutate("no_body", drop("body"))
        mutate("extra_input", lambda n: n.input.append(n.input[0]))
    else:
        check.fail("seed_mlp x neuron was not produced; the malformed-file checks did not run")
    if len(check.failures) == n0:
        check.ok("malformed_subgraph: each broken Subgraph node is refused, naming it")

# --weights-file: the weights beside the partitioned model, not inside it
src18 = os.path.join(models_dir, "resnet18.onnx")
if check.selected("weights_file") and os.path.exists(src18):
    wdir = os.path.join(work, "wf")
    os.makedirs(wdir, exist_ok=True)
    p = os.path.join(wdir, "r18.onnx")
    r = run("partition", src18, "--target", os.path.join(targets_dir, "conv_gemm_relu_maxpool.json"), "-o", p,
            "--weights-file", "r18.weights")
    wf = os.path.join(wdir, "r18.weights")
    if r.returncode or not os.path.exists(wf):
        check.fail(f"--weights-file: exit {r.returncode}, {r.stderr.strip()}")
    elif os.path.getsize(p) > 1 << 20 or os.path.getsize(wf) < 40 << 20:
        check.fail(f"--weights-file: model {os.path.getsize(p)} bytes, weights {os.path.getsize(wf)} bytes")
    else:
        onnx.checker.check_model(p)
        d = os.path.join(work, "wf.out")
        r = run("run", p, "--input", f"input={src18[:-5]}.input.npy", "--output-dir", d)
        if r.returncode or not np.array_equal(np.load(os.path.join(d, "output.npy")),
                                              np.load(os.path.join(work, "resnet18.ref", "output.npy"))):
            check.fail(f"--weights-file: the model with external weights runs differently: {r.stderr.strip()}")
        else:
            check.ok("weights_file: resnet18 with its weights in r18.weights runs like the plain model")

# replace-weights: a partitioned resnet18 takes other weights without being
# partitioned again, and runs exactly like the plain model with those weights
base = os.path.join(work, "resnet18.neuron.onnx")
src = os.path.join(models_dir, "resnet18.onnx")
if check.selected("replace_weights"):
    n0 = len(check.failures)
    if os.path.exists(base):
        m = onnx.load(src)
        for t in m.graph.initializer:
            if t.data_type == onnx.TensorProto.FLOAT:
                a = onnx.numpy_helper.to_array(t) * np.float32(0.5)
                t.CopyFrom(onnx.numpy_helper.from_array(a, t.name))
        new = os.path.join(work, "resnet18_new_weights.onnx")
        onnx.save(m, new)
        out = os.path.join(work, "resnet18.neuron.reweighted.onnx")
        r = run("replace-weights", base, "--weights", new, "-o", out)
        inp = ["--input", f"input={src[:-5]}.input.npy"]
        if r.returncode:
            check.fail(f"replace-weights failed: {r.stderr.strip()}")
        else:
            d1, d2 = os.path.join(work, "rw.partitioned"), os.path.join(work, "rw.plain")
            r1 = run("run", out, *inp, "--output-dir", d1)
            r2 = run("run", new, *inp, "--output-dir", d2)
            if r1.returncode or r2.returncode:
                check.fail(f"replace-weights: runs failed: {r1.stderr.strip()} {r2.stderr.strip()}")
            elif not np.array_equal(np.load(os.path.join(d1, "output.npy")), np.load(os.path.join(d2, "output.npy"))):
                check.fail("replace-weights: the reweighted partitioned model differs from the plain model with those weights")
            if np.array_equal(np.load(os.path.join(d1, "output.npy")), np.load(os.path.join(work, "resnet18.ref", "output.npy"))):
                check.fail("replace-weights: the outputs did not change with the weights")
        # a weight of another shape: refused, naming it, and -o left as it was
        bad = onnx.load(new)
        t = next(t for t in bad.graph.initializer if len(t.dims) == 4)
        t.CopyFrom(onnx.numpy_helper.from_array(np.zeros((1, 1, 1, 1), np.float32), t.name))
        badp = os.path.join(work, "resnet18_bad_weights.onnx")
        onnx.save(bad, badp)
        before = open(out, "rb").read() if os.path.exists(out) else b""
        r = run("replace-weights", base, "--weights", badp, "-o", out)
        if r.returncode != 1 or t.name not in r.stderr:
            check.fail(f"replace-weights with a wrong shape: exit {r.returncode}, {r.stderr.strip()!r}")
        if os.path.exists(out) and open(out, "rb").read() != before:
            check.fail("replace-weights with a wrong shape changed the output file")
    else:
        check.fail("resnet18 x neuron was not produced; replace-weights was not checked")
    if len(check.failures) == n0:
        check.ok("replace_weights: the reweighted partitioned resnet18 runs like the plain one; a wrong shape is refused")

if check.everything and bytes_checked == 0:
    check.fail("no reported byte count was checked")
check.finish(f"{checked} model x target pairs run partitioned, saved and reloaded; "
             f"{bytes_checked} device subgraphs' reported bytes checked")
