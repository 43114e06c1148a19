"""seam quantize and seam.quantize (issue 27) against an independent
quantizer and ONNX Runtime.

usage: /usr/bin/python3 check_quantize.py SEAM WORKDIR [-k PATTERN]

tests/models/gen_quant.py writes the float models (torch exports with
random weights, calibrated) with their calibration sets (NAME.calib/*.npy)
and a test input drawn from the same distribution with another seed, and
its own QDQ quantization of them: a quantizer written in numpy from the
ONNX spec and ONNX Runtime's documented conventions, which check_quant.py
checks against ONNX Runtime's int8 kernels. ONNX Runtime is bench/ort's
onnxruntime-node.

Cases:
- ref NAME: `seam quantize --calibration NAME.calib --threads 1` writes
  the same graph as gen_quant.py's quantizer from the same float model and
  calibration set: the same nodes (op, inputs, outputs, attributes) and
  every initializer equal bit for bit (scales, zero points, int8 weights,
  int32 biases).
- ort NAME: the file passes onnx.checker; ONNX Runtime runs it; seam runs
  it on the CPU, on dnnl, and saved by `seam partition --target dnnl -o`
  then run: each within one quantum (the last QuantizeLinear's scale) of
  ONNX Runtime. Against the float model on a calibration input, the
  signal to quantization noise ratio must be at least MIN_SQNR's.
- percentile, per-tensor, exclude: `--method percentile` gives every
  activation a scale no larger than minmax's (and some smaller);
  `--per-tensor` gives every weight one scale; `--reduce-range` gives 7-bit
  weights (each within [-64, 64]) that dnnl takes without VNNI, within one
  quantum of ONNX Runtime; `--exclude NODE` leaves that
  node a float Conv with float weights (its input may still be the
  DequantizeLinear of a quantized producer, as in ONNX Runtime), and the
  note says so; each runs within one quantum of ONNX Runtime.
- dynamic NAME: `--dynamic` on the transformer (MatMuls) and the MLP
  (Gemms): MatMulInteger per quantized MatMul/Gemm, and seam (cpu, dnnl)
  within one step of the float output's uint8 range of ONNX Runtime, and
  MIN_SQNR against the float model.
- precision: `seam run FLOAT --precision int8 --calibration DIR --target
  dnnl` gives the output of seam quantize's file; --max-error 0.9 keeps it
  all int8, 1e-9 all fp32 (the float model's output bit for bit); on the
  int8 NPU rules target (several subgraphs) --max-error 0.2 and 0.05: the
  error the command claims is the one measured here on the saved model
  over the calibration sets, and within the bound.
- python: seam.quantize writes the same graph as the CLI (static from
  numpy sets, dynamic), and quantizes a torch module from torch tensors.
- bad: usage errors exit 2, bad models and calibration data exit 1 with a
  message naming the problem, and no output file is left behind.
"""
import glob
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import seamtest  # noqa: E402

args, run, work, check = seamtest.checker_setup(__doc__, "quantize_cli", timeout=600)
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
GEN = os.path.join(ROOT, "tests", "models", "gen_quant.py")
MODELS = os.path.join(work, "models")
REF = ["qdq_resblock", "qdq_mlp", "qdq_resnet18", "qdq_mobilenet_v2"]
STATIC = REF + ["qdq_conv_relu"]
DYNAMIC = ["dyn_transformer", "qdq_mlp"]
# the quantized model against the float one on a calibration input: its
# signal to quantization noise ratio at least this (dB). Measured at the
# test sizes (4 calibration inputs, random weights; ONNX Runtime's run of the
# same files is the same): resblock 35, MLP 39, resnet18 21, mobilenet_v2 9
# (depthwise convs with per-tensor activations), conv chain 47; dynamic:
# transformer 37, MLP 39.
MIN_SQNR = {"qdq_resblock": 30, "qdq_mlp": 33, "qdq_resnet18": 16, "qdq_mobilenet_v2": 5, "qdq_conv_relu": 40,
            "dyn_transformer": 32, "dyn qdq_mlp": 33}


def path(name, suffix):
    return os.path.join(MODELS, name + suffix)


def quantize(name, out, *extra):
    return run("quantize", path(name, ".float.onnx"), "-o", out, *extra)


def last(stderr):
    lines = stderr.strip().splitlines()
    return lines[-1][:300] if lines else "(no message)"


def graph_signature(m):
    """Nodes as comparable tuples and initializers as arrays."""
    nodes = sorted((n.op_type, tuple(n.input), tuple(n.output),
                    tuple(sorted((a.name, helper.get_attribute_value(a)) for a in n.attribute
                                 if a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.FLOAT))))
                   for n in m.graph.node)
    return nodes, {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}


def same_graph(a, b):
    """None when a and b (ModelProtos) hold the same nodes and bit-equal
    initializers, else what differs."""
    na, ia = graph_signature(a)
    nb, ib = graph_signature(b)
    if na != nb:
        only = sorted(set(na) ^ set(nb))[:2]
        return f"{len(set(na) ^ set(nb))} nodes differ, e.g. {only}"
    if set(ia) != set(ib):
        return f"initializers differ by name: {sorted(set(ia) ^ set(ib))[:4]}"
    for k in ia:
        x, y = ia[k], ib[k]
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            return f"initializer {k}: {x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}, not bit-equal"
    return None


def output_quantum(m):
    """The scale of the DequantizeLinear writing the (first) graph output."""
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    out = m.graph.output[0].name
    for n in m.graph.node:
        if n.output[0] == out and n.op_type == "DequantizeLinear":
            return float(inits[n.input[1]])
    return None


def run_paths(model, feeds, tag):
    """{path: outputs dir} of seam on cpu, dnnl and saved (partitioned for
    dnnl, then run); a failed path is reported and left out."""
    res = {}
    for label, cmd in (("cpu", ()), ("dnnl", ("--target", "dnnl"))):
        d = os.path.join(work, f"{tag}.{label}")
        a = [x for k, f in feeds.items() for x in ("--input", f"{k}={f}")]
        r = run("run", model, *a, "--output-dir", d, "--threads", "2", *cmd)
        if r.returncode:
            check.fail(f"{tag}: seam run ({label}) failed: {last(r.stderr)}")
        else:
            res[label] = d
    saved = os.path.join(work, f"{tag}.saved.onnx")
    r = run("partition", model, "--target", "dnnl", "-o", saved)
    if r.returncode:
        check.fail(f"{tag}: seam partition --target dnnl -o failed: {last(r.stderr)}")
        return res
    d = os.path.join(work, f"{tag}.saved")
    a = [x for k, f in feeds.items() for x in ("--input", f"{k}={f}")]
    r = run("run", saved, *a, "--output-dir", d, "--threads", "2")
    if r.returncode:
        check.fail(f"{tag}: seam run of the saved model failed: {last(r.stderr)}")
    else:
        res["saved"] = d
    return res


def against_ort(tag, model, feeds, scale, paths=None):
    """Every seam path within one quantum (scale) of ONNX Runtime."""
    od = os.path.join(work, f"{tag}.ort")
    r, _ = seamtest.ort_run(model, feeds, od)
    if r.returncode:
        check.fail(f"{tag}: ONNX Runtime refuses the file: {last(r.stderr)}")
        return None
    want = seamtest.load_outputs(model, od)[0]
    got = run_paths(model, feeds, tag)
    for label, d in got.items():
        if paths and label not in paths:
            continue
        q, n, ok = seamtest.quanta(seamtest.load_outputs(model, d)[0], want, scale)
        check.expect(ok, f"{tag} ({label}): within one quantum of ONNX Runtime ({q:.2f} quanta, {n} elements "
                     f"off by half a quantum)", "over one quantum")
    return want


def float_output(name):
    d = os.path.join(work, f"{name}.float.out")
    r = run("run", path(name, ".float.onnx"), "--input", f"{input_name(name)}={path(name, '.input.npy')}",
            "--output-dir", d, "--threads", "2")
    return seamtest.load_outputs(path(name, ".float.onnx"), d)[0] if not r.returncode else None


def input_name(name):
    return onnx.load(path(name, ".float.onnx"), load_external_data=False).graph.input[0].name


def calib(name):
    return path(name, ".calib")


# ---- cases ------------------------------------------------------------------------

def case_ref(name):
    out = os.path.join(work, f"{name}.ref.onnx")
    r = quantize(name, out, "--calibration", calib(name), "--threads", "1")
    if r.returncode:
        return check.fail(f"ref {name}: seam quantize failed: {last(r.stderr)}")
    why = same_graph(onnx.load(out), onnx.load(path(name, ".onnx")))
    check.expect(why is None, f"ref {name}: the same graph as gen_quant.py's quantizer, initializers bit for bit",
                 why)


def case_ort(name):
    out = os.path.join(work, f"{name}.q.onnx")
    r = quantize(name, out, "--calibration", calib(name))
    if r.returncode:
        return check.fail(f"ort {name}: seam quantize failed: {last(r.stderr)}")
    m = onnx.load(out)
    try:
        onnx.checker.check_model(m)
        check.ok(f"ort {name}: onnx.checker accepts the file")
    except onnx.checker.ValidationError as e:
        check.fail(f"ort {name}: onnx.checker: {str(e)[:200]}")
    scale = output_quantum(m)
    if not check.expect(scale, f"ort {name}: the output is written by a DequantizeLinear", "no final DQ"):
        return
    feeds = {input_name(name): path(name, ".input.npy")}
    against_ort(f"ort {name}", out, feeds, scale)
    accuracy(f"ort {name}", name, out, MIN_SQNR[name])


def sqnr(ref, got):
    """Signal to quantization noise, in dB."""
    ref, got = ref.astype(np.float64), got.astype(np.float64)
    return 10 * np.log10(float((ref ** 2).mean()) / max(float(((ref - got) ** 2).mean()), 1e-30))


def accuracy(tag, name, qmodel, floor):
    """The quantized model (seam on the CPU) against the float one on the
    first calibration set: its SQNR at least floor dB."""
    x = sorted(glob.glob(os.path.join(calib(name), "*.npy")))[0]
    outs = []
    for k, m in enumerate((path(name, ".float.onnx"), qmodel)):
        d = os.path.join(work, f"{tag.replace(' ', '_')}.acc{k}")
        r = run("run", m, "--input", f"{input_name(name)}={x}", "--output-dir", d, "--threads", "2")
        if r.returncode:
            return check.fail(f"{tag}: seam run for the accuracy failed: {last(r.stderr)}")
        outs.append(seamtest.load_outputs(m, d)[0])
    s = sqnr(*outs)
    check.expect(s >= floor, f"{tag}: against the float model on a calibration input: SQNR {s:.1f} dB "
                 f"(at least {floor})", "below")


def act_scales(m):
    """{activation: scale} of every QuantizeLinear of an activation."""
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    return {n.input[0]: float(inits[n.input[1]]) for n in m.graph.node if n.op_type == "QuantizeLinear"}


def case_options(name):
    base = os.path.join(work, f"{name}.q.onnx")
    if not os.path.exists(base):
        quantize(name, base, "--calibration", calib(name))
    feeds = {input_name(name): path(name, ".input.npy")}
    # percentile
    out = os.path.join(work, f"{name}.pct.onnx")
    r = quantize(name, out, "--calibration", calib(name), "--percentile", "99.9")
    if r.returncode:
        check.fail(f"percentile {name}: seam quantize failed: {last(r.stderr)}")
    else:
        p, mm = act_scales(onnx.load(out)), act_scales(onnx.load(base))
        narrower = sum(1 for k in p if p[k] < mm.get(k, 0) * (1 - 1e-6))
        check.expect(set(p) == set(mm) and all(p[k] <= mm[k] * (1 + 1e-6) for k in p) and narrower,
                     f"percentile {name}: 99.9% ranges within minmax's, {narrower} of {len(p)} narrower",
                     {k: (p.get(k), mm.get(k)) for k in list(p)[:3]})
        against_ort(f"percentile {name}", out, feeds, output_quantum(onnx.load(out)), paths=("cpu", "dnnl"))
    # per tensor
    out = os.path.join(work, f"{name}.pt.onnx")
    r = quantize(name, out, "--calibration", calib(name), "--per-tensor")
    if r.returncode:
        check.fail(f"per-tensor {name}: seam quantize failed: {last(r.stderr)}")
    else:
        m = onnx.load(out)
        inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
        ws = [inits[n.input[1]] for n in m.graph.node if n.op_type == "DequantizeLinear" and n.input[0] in inits]
        check.expect(ws and all(w.ndim == 0 for w in ws), f"per-tensor {name}: all {len(ws)} weight scales scalar",
                     [w.shape for w in ws if w.ndim][:3])
        against_ort(f"per-tensor {name}", out, feeds, output_quantum(m), paths=("cpu", "dnnl"))
    # 7-bit weights (--reduce-range): every int8 weight within [-64, 64],
    # the largest of each at the bound; ONNX Runtime agrees, and dnnl takes
    # the products even without VNNI (no saturation: backends/dnnl/quant.c)
    out = os.path.join(work, f"{name}.rr.onnx")
    r = quantize(name, out, "--calibration", calib(name), "--reduce-range")
    if r.returncode:
        check.fail(f"reduce-range {name}: seam quantize failed: {last(r.stderr)}")
    else:
        m = onnx.load(out)
        inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
        ws = [inits[n.input[0]] for n in m.graph.node if n.op_type == "DequantizeLinear" and n.input[0] in inits
              and inits[n.input[0]].dtype == np.int8]
        check.expect(ws and all(int(np.abs(w.astype(np.int32)).max()) == 64 for w in ws),
                     f"reduce-range {name}: all {len(ws)} int8 weights within [-64, 64], each reaching 64",
                     [int(np.abs(w.astype(np.int32)).max()) for w in ws][:6])
        against_ort(f"reduce-range {name}", out, feeds, output_quantum(m), paths=("cpu", "dnnl"))
        r = run("partition", out, "--target", "dnnl", "--placement", "capability", "--json",
                env=dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2"))
        convs = [n["target"] for n in json.loads(r.stdout)["nodes"] if n["op"] == "QLinearConv"] if not r.returncode else []
        check.expect(convs and all(t == "dnnl" for t in convs),
                     f"reduce-range {name}: dnnl takes all {len(convs)} QLinearConvs without VNNI", convs)
    # exclude the first Conv
    fm = onnx.load(path(name, ".float.onnx"))
    first = next(n.name for n in fm.graph.node if n.op_type == "Conv")
    out = os.path.join(work, f"{name}.ex.onnx")
    r = quantize(name, out, "--calibration", calib(name), "--exclude", first)
    if r.returncode:
        return check.fail(f"exclude {name}: seam quantize failed: {last(r.stderr)}")
    m = onnx.load(out)
    node = next((n for n in m.graph.node if n.name == first), None)
    inits = {i.name: i for i in m.graph.initializer}
    check.expect(node is not None and node.op_type == "Conv" and all(
        x in inits and inits[x].data_type == T.FLOAT for x in node.input[1:]),
        f"exclude {name}: '{first}' stays a Conv with its float weights", node and list(node.input))
    check.expect("left in float: excluded by the caller" in r.stderr, f"exclude {name}: the note says so",
                 r.stderr.strip()[-200:])
    against_ort(f"exclude {name}", out, feeds, output_quantum(m), paths=("cpu", "dnnl"))


def case_dynamic(name):
    out = os.path.join(work, f"{name}.dyn.onnx")
    r = quantize(name, out, "--dynamic")
    if r.returncode:
        return check.fail(f"dynamic {name}: seam quantize failed: {last(r.stderr)}")
    m, fm = onnx.load(out), onnx.load(path(name, ".float.onnx"))
    onnx.checker.check_model(m)
    inits = {i.name for i in fm.graph.initializer}
    want = sum(1 for n in fm.graph.node if n.op_type in ("MatMul", "Gemm") and n.input[1] in inits)
    have = sum(1 for n in m.graph.node if n.op_type == "MatMulInteger")
    check.expect(have == want and want > 0, f"dynamic {name}: {have} MatMulInteger for {want} MatMul/Gemm with "
                 "constant weights", f"{have} != {want}")
    ref = float_output(name)
    if ref is None:
        return check.fail(f"dynamic {name}: the float model does not run")
    step = (max(float(ref.max()), 0) - min(float(ref.min()), 0)) / 255
    feeds = {input_name(name): path(name, ".input.npy")}
    against_ort(f"dynamic {name}", out, feeds, step, paths=("cpu", "dnnl"))
    accuracy(f"dynamic {name}", name, out, MIN_SQNR[name if name.startswith("dyn") else "dyn " + name])


def rel_error(model, name, extra=()):
    """max over the calibration sets of max |y - y_float| / max |y_float|
    (seam run of model, and of the float model, on the CPU)."""
    worst = 0.0
    for k, x in enumerate(sorted(glob.glob(os.path.join(calib(name), "*.npy")))):
        ys = []
        for j, m in enumerate((path(name, ".float.onnx"), model)):
            d = os.path.join(work, f"relerr.{os.path.basename(model)}.{k}.{j}")
            r = run("run", m, "--input", f"{input_name(name)}={x}", "--output-dir", d, *(extra if j else ()))
            if r.returncode:
                return None
            ys.append(seamtest.load_outputs(m, d)[0].astype(np.float64))
        worst = max(worst, float(np.abs(ys[1] - ys[0]).max() / max(np.abs(ys[0]).max(), 1e-30)))
    return worst


def case_precision():
    """--precision int8 runs what seam quantize writes; --max-error keeps
    subgraphs in fp32 and the error it claims is the one measured here."""
    name = "qdq_resblock"
    q = os.path.join(work, f"{name}.q.onnx")
    if not os.path.exists(q):
        quantize(name, q, "--calibration", calib(name))
    x = f"{input_name(name)}={path(name, '.input.npy')}"
    outs = {}
    for tag, model, extra in (("quantize", q, ()), ("precision", path(name, ".float.onnx"),
                                                    ("--precision", "int8", "--calibration", calib(name))),
                              ("loose", path(name, ".float.onnx"), ("--precision", "int8", "--calibration", calib(name),
                                                                     "--max-error", "0.9")),
                              ("tight", path(name, ".float.onnx"), ("--precision", "int8", "--calibration", calib(name),
                                                                     "--max-error", "1e-9")),
                              ("float", path(name, ".float.onnx"), ())):
        d = os.path.join(work, f"precision.{tag}")
        r = run("run", model, "--input", x, "--target", "dnnl", "--output-dir", d, *extra)
        if r.returncode:
            return check.fail(f"precision ({tag}): seam run failed: {last(r.stderr)}")
        outs[tag] = (seamtest.load_outputs(model, d)[0], r.stderr)
    check.expect(np.array_equal(outs["precision"][0], outs["quantize"][0]),
                 "precision: run --precision int8 --target dnnl equals the run of seam quantize's file", "differs")
    check.expect(np.array_equal(outs["loose"][0], outs["quantize"][0]) and "all of it in int8" in outs["loose"][1],
                 "precision: --max-error 0.9 keeps all of it in int8", outs["loose"][1].strip()[-200:])
    check.expect(np.array_equal(outs["tight"][0], outs["float"][0]) and "kept in fp32" in outs["tight"][1],
                 "precision: --max-error 1e-9 keeps every subgraph in fp32: the float model's output bit for bit",
                 outs["tight"][1].strip()[-200:])
    # per subgraph, on an int8-only NPU target (several subgraphs), and the
    # claimed error against one measured here on the saved model
    name = "qdq_mobilenet_v2"
    npu = os.path.join(ROOT, "tests", "targets", "int8_npu.json")
    for e in ("0.2", "0.05"):
        out = os.path.join(work, f"precision.npu.{e}.onnx")
        r = run("partition", path(name, ".float.onnx"), "--target", npu, "--precision", "int8", "--calibration",
                calib(name), "--max-error", e, "-o", out)
        if r.returncode:
            check.fail(f"precision npu {e}: seam partition failed: {last(r.stderr)}")
            continue
        kept = r.stderr.count("kept in fp32;")
        int8 = r.stderr.count("): int8;")
        claim = [float(l.split("off by ")[1].split("%")[0]) / 100 for l in r.stderr.splitlines()
                 if "the model is off by" in l]
        got = rel_error(out, name, ("--target", npu))
        check.expect(claim and got is not None and got <= float(e) and abs(got - claim[0]) <= 6e-3 * max(got, 1e-9) + 1e-6,
                     f"precision npu --max-error {e}: {int8} subgraphs int8, {kept} kept in fp32; off by "
                     f"{100 * (got or 0):.3g}% measured here, {100 * claim[0] if claim else -1:.3g}% claimed",
                     r.stderr.strip()[-300:])
        # the plan's JSON says each subgraph's precision, as its nodes' ops do
        r = run("partition", path(name, ".float.onnx"), "--target", npu, "--precision", "int8", "--calibration",
                calib(name), "--max-error", e, "--json")
        if r.returncode:
            check.fail(f"precision npu {e} --json: seam partition failed: {last(r.stderr)}")
            continue
        plan = json.loads(r.stdout)
        ops = {n["index"]: n["op"] for n in plan["nodes"]}
        quant = lambda op: op.startswith("QLinear") or op in ("ConvInteger", "MatMulInteger")
        heavy = lambda op: op in ("Conv", "ConvTranspose", "MatMul", "Gemm")
        want = []
        for sg in plan["subgraphs"]:
            q, f = any(quant(ops[i]) for i in sg["nodes"]), any(heavy(ops[i]) for i in sg["nodes"])
            want.append("mixed" if q and f else "int8" if q else "fp32")
        got_p = [sg.get("precision") for sg in plan["subgraphs"]]
        on_npu = [sg["precision"] for sg in plan["subgraphs"] if sg["target"] == "int8npu"]
        check.expect(got_p == want and on_npu and set(on_npu) == {"int8"} and "fp32" in got_p,
                     f"precision npu --max-error {e} --json: {got_p.count('int8')} subgraphs int8, "
                     f"{got_p.count('fp32')} fp32, as their ops say; every int8npu subgraph int8",
                     f"json {got_p} want {want}")


PY = r"""
import glob, sys, numpy as np, onnx, torch, seam
models, work = sys.argv[1], sys.argv[2]
p = lambda n, s: f"{models}/{n}{s}"
sets = [np.load(f) for f in sorted(glob.glob(p("qdq_resblock", ".calib/*.npy")))]
st = seam.quantize(p("qdq_resblock", ".float.onnx"), f"{work}/py_static.onnx", sets)
assert st["calibration_runs"] == len(sets) and st["quantized_ops"] > 0, st
st = seam.quantize(p("dyn_transformer", ".float.onnx"), f"{work}/py_dyn.onnx", dynamic=True)
assert st["dynamic_matmuls"] > 0 and any("two activations" in n for n in st["notes"]), st
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 14 * 14, 4))
calib = [torch.randn(2, 3, 16, 16) for _ in range(3)]
st = seam.quantize(net, f"{work}/py_torch.onnx", calib)
assert st["quantized_ops"] >= 3 and st["removed_activations"] == 1, st
m = onnx.load(f"{work}/py_torch.onnx")
onnx.checker.check_model(m)
ops = [n.op_type for n in m.graph.node]
assert "QuantizeLinear" in ops and "Relu" not in ops, ops
for bad, why in ((lambda: seam.quantize(p("qdq_resblock", ".float.onnx"), f"{work}/never.onnx", []), "at least one"),
                 (lambda: seam.quantize(p("qdq_resblock", ".float.onnx"), f"{work}/never.onnx", sets, method="mean"), "method"),
                 (lambda: seam.quantize(p("qdq_resblock", ".float.onnx"), f"{work}/never.onnx", [np.zeros((1, 2), np.float32)]), "input")):
    try:
        bad()
        raise SystemExit(f"no error for the case about {why}")
    except ValueError as e:
        assert why in str(e), (why, str(e))
import os, json
assert not os.path.exists(f"{work}/never.onnx")
# max_error on the int8 NPU target: the library's --max-error, the same report
mset = [np.load(f) for f in sorted(glob.glob(p("qdq_mobilenet_v2", ".calib/*.npy")))]
st = seam.quantize(p("qdq_mobilenet_v2", ".float.onnx"), f"{work}/py_maxerr.onnx", mset, max_error=0.05,
                   targets=[sys.argv[3]])
assert 0 <= st["error"] <= 0.05 and any("kept in fp32" in l for l in st["max_error_report"]), st
json.dump({"error": st["error"], "report": st["max_error_report"]}, open(f"{work}/py_maxerr.json", "w"))
for bad, why in ((lambda: seam.quantize(p("qdq_resblock", ".float.onnx"), f"{work}/never.onnx", sets, max_error=-1), "max_error"),
                 (lambda: seam.quantize(p("dyn_transformer", ".float.onnx"), f"{work}/never.onnx", dynamic=True, max_error=0.1), "max_error")):
    try:
        bad()
        raise SystemExit(f"no error for the case about {why}")
    except ValueError as e:
        assert why in str(e), (why, str(e))
assert not os.path.exists(f"{work}/never.onnx")
print("python ok")
"""


def case_python():
    build = os.path.dirname(os.path.abspath(args.seam))
    pkg = os.path.join(build, "python")
    cache = os.path.join(build, "CMakeCache.txt")
    text = open(cache).read() if os.path.exists(cache) else ""
    if not os.path.isdir(os.path.join(pkg, "seam")) or "SEAM_SANITIZE:BOOL=ON" in text or "SEAM_TSAN:BOOL=ON" in text:
        return check.ok("python: skipped, this build has no Python package (the sanitizer builds)")
    env = dict(os.environ, PYTHONPATH=pkg)
    npu = os.path.join(ROOT, "tests", "targets", "int8_npu.json")
    r = subprocess.run(["/usr/bin/python3", "-c", PY, MODELS, work, npu], capture_output=True, text=True, env=env,
                       timeout=600)
    if not check.expect(r.returncode == 0, "python: seam.quantize (static from numpy, dynamic, a torch module, "
                        "max_error; five bad calls raise ValueError)", (r.stderr or r.stdout).strip()[-400:]):
        return
    # max_error: the error it claims is the one the CLI measures on the file
    # it wrote, and its report is the CLI's --max-error report
    got = json.load(open(os.path.join(work, "py_maxerr.json")))
    measured = rel_error(os.path.join(work, "py_maxerr.onnx"), "qdq_mobilenet_v2")
    cli = run("partition", path("qdq_mobilenet_v2", ".float.onnx"), "--target", npu, "--precision", "int8",
              "--calibration", calib("qdq_mobilenet_v2"), "--max-error", "0.05")
    cli_lines = [l.split(": ", 1)[1] for l in cli.stderr.splitlines() if "--max-error 0.05:" in l]
    check.expect(measured is not None and abs(measured - got["error"]) <= 1e-6 + 1e-3 * measured and
                 got["report"] == cli_lines,
                 f"python: seam.quantize(max_error=0.05) on the int8 NPU target: off by {100 * got['error']:.3g}% "
                 f"claimed, {100 * (measured or 0):.3g}% measured on its file; the CLI's report, line for line",
                 f"measured {measured}, report {got['report'][-2:]} against {cli_lines[-2:]}")
    for a, b, what in ((os.path.join(work, "py_static.onnx"), os.path.join(work, "qdq_resblock.q.onnx"), "static"),
                       (os.path.join(work, "py_dyn.onnx"), os.path.join(work, "dyn_transformer.dyn.onnx"), "dynamic")):
        if not os.path.exists(b):
            continue  # (its CLI case did not run: -k)
        why = same_graph(onnx.load(a), onnx.load(b))
        check.expect(why is None, f"python: seam.quantize writes the CLI's graph ({what})", why)


def case_bad():
    name = "qdq_resblock"
    fm = path(name, ".float.onnx")
    never = os.path.join(work, "never.onnx")
    qfile = path(name, ".onnx")
    bad_dir = os.path.join(work, "bad_calib")
    os.makedirs(os.path.join(bad_dir, "nan"), exist_ok=True)
    x = np.load(path(name, ".input.npy"))
    nanx = x.copy()
    nanx.flat[3] = np.nan
    np.save(os.path.join(bad_dir, "nan", f"{input_name(name)}.npy"), nanx)
    wrong = os.path.join(work, "bad_wrong")
    os.makedirs(wrong, exist_ok=True)
    np.save(os.path.join(wrong, "0.npy"), x[:, :3])
    stray = os.path.join(work, "bad_stray", "s0")
    os.makedirs(stray, exist_ok=True)
    np.save(os.path.join(stray, "not_an_input.npy"), x)
    old = os.path.join(work, "opset9.onnx")
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [seamtest.vi("x", [1, 4])],
                          [seamtest.vi("y", [1, 4])])
    om = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
    om.ir_version = 7
    onnx.save(om, old)
    cases = [
        (2, "no calibration", [fm, "-o", never], "needs --calibration"),
        (2, "no -o", [fm, "--calibration", calib(name)], "-o OUT.onnx is required"),
        (2, "bad --method", [fm, "-o", never, "--calibration", calib(name), "--method", "mean"], "--method"),
        (2, "bad --percentile", [fm, "-o", never, "--calibration", calib(name), "--percentile", "30"], "--percentile"),
        (2, "--dynamic with --calibration", [fm, "-o", never, "--dynamic", "--calibration", calib(name)], "--dynamic"),
        (2, "-o is the model", [fm, "-o", fm, "--calibration", calib(name)], "overwrite"),
        (2, "--exclude of no node", [fm, "-o", never, "--calibration", calib(name), "--exclude", "nope"], "'nope'"),
        (2, "unknown option", [fm, "-o", never, "--calib", calib(name)], "unknown option"),
        (1, "missing model", [os.path.join(work, "none.onnx"), "-o", never, "--calibration", calib(name)], "none.onnx"),
        (1, "calibration not a folder", [fm, "-o", never, "--calibration", path(name, ".input.npy")], "not a folder"),
        (1, "calibration with NaN", [fm, "-o", never, "--calibration", bad_dir], "NaN"),
        (1, "calibration of the wrong shape", [fm, "-o", never, "--calibration", wrong], input_name(name)),
        (1, "calibration file naming no input", [fm, "-o", never, "--calibration", os.path.dirname(stray)],
         "not_an_input.npy"),
        (1, "quantized already", [qfile, "-o", never, "--dynamic"], "quantized already"),
        (1, "opset 9", [old, "-o", never, "--dynamic"], "opset"),
    ]
    for code, what, argv, needle in (
            (2, "--max-error without --precision", ["--max-error", "0.1", "--calibration", calib(name)], "--precision"),
            (2, "--precision int8 without --calibration", ["--precision", "int8"], "--calibration"),
            (2, "--precision bf16", ["--precision", "bf16"], "bf16"),
            (2, "--max-error -1", ["--precision", "int8", "--calibration", calib(name), "--max-error", "-1"],
             "--max-error"),
            (1, "--precision int8 with NaN calibration", ["--precision", "int8", "--calibration", bad_dir], "NaN")):
        r = run("run", fm, "--input", f"{input_name(name)}={path(name, '.input.npy')}", *argv)
        check.expect(r.returncode == code and needle in r.stderr, f"bad: run {what}: exit {code}, said",
                     f"exit {r.returncode}: {r.stderr.strip()[-300:]}")
    for code, what, argv, needle in cases:
        r = run("quantize", *argv)
        check.expect(r.returncode == code and needle in r.stderr and not os.path.exists(never),
                     f"bad: {what}: exit {code}, the message names it, no output",
                     f"exit {r.returncode}: {r.stderr.strip()[-300:]}")


def main():
    t0 = time.time()
    want = sorted(set(STATIC + DYNAMIC))
    r = subprocess.run([sys.executable, GEN, MODELS, "--seam", args.seam, "--only", ",".join(want)],
                       capture_output=True, text=True)
    if r.returncode:
        check.fail(f"gen_quant.py failed: {(r.stderr or r.stdout).strip()[-400:]}")
        check.finish()
    print(f"models written in {time.time() - t0:.1f} s", flush=True)
    problem = seamtest.ort_problem()
    for name in REF:
        if check.selected(f"ref {name}"):
            case_ref(name)
    for name in STATIC:
        if check.selected(f"ort {name}", needed_by=("python",)):
            if problem:
                check.fail(f"ort {name}: {problem}")
            else:
                case_ort(name)
    if check.selected("options qdq_resblock"):
        case_options("qdq_resblock") if not problem else check.fail(f"options: {problem}")
    for name in DYNAMIC:
        if check.selected(f"dynamic {name}", needed_by=("python",)):
            case_dynamic(name) if not problem else check.fail(f"dynamic {name}: {problem}")
    if check.selected("precision"):
        case_precision() if not problem else check.fail(f"precision: {problem}")
    if check.selected("python"):
        case_python()
    if check.selected("bad"):
        case_bad()
    check.finish(f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
