#!/usr/bin/env python3
"""--precision bf16 on dnnl (issue 27): Conv, MatMul and Gemm with constant
weights read their input and weights in bfloat16 and write float32.

Where this CPU runs bfloat16 natively (AVX512_BF16 or AMX, as oneDNN sees
it):
  (a) per op and shape (1x1, 3x3, strided, padded, dilated, grouped,
      depthwise, 1-D and 3-D Conv; 2-D, batched and flat MatMul; Gemm with
      transB and bias), the output equals torch's float64 evaluation of the
      same op on the input and weights rounded to bfloat16 (round to
      nearest even, as oneDNN converts) within 2e-5 of the output's scale,
      and differs from the float32 output by more (so the bf16 path did
      run): an independent reference of what bf16 means;
  (b) the compile log says precision bf16, and every Conv/MatMul/Gemm's
      oneDNN implementation is a bf16 one (its name says bf16), none ref;
  (c) resnet18, vit_small and efficientnet_b0 (squeeze-excite blocks,
      whose scale dnnl otherwise folds into the next convolution's float32
      weights: with bf16 weights it must run as a Mul) on `--target dnnl
      --precision bf16`: outputs within 5e-2 of the float32 run's scale;
      the saved plan reloaded gives the same bytes; fusion=off agrees
      within 2e-5 of scale;
  (d) with oneDNN limited below bfloat16 (ONEDNN_MAX_CPU_ISA=AVX512_CORE),
      --precision bf16 and a saved bf16 plan are refused, exit 1, with the
      reason;
  (e) --max-error E --calibration DIR on resnet18 cut into 3 dnnl
      subgraphs: with E half the all-bf16 error, subgraphs go back to fp32
      until the model is within E, the saved plan's precision options say
      which, and its outputs on the calibration sets, measured here against
      the float32 plan's, are within E; with a loose E every subgraph stays
      bf16; --max-error without --calibration, and --calibration alone,
      are usage errors;
everywhere: --precision bf16 without --target dnnl is a usage error (exit 2),
and on a CPU without bfloat16 the refusal of (d).

usage: check_bf16.py SEAM MODELS_DIR WORKDIR
"""
import glob
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

parser = seamtest.arg_parser(__doc__)
parser.add_argument("seam", metavar="SEAM")
parser.add_argument("models", metavar="MODELS_DIR")
parser.add_argument("work", metavar="WORKDIR")
args = parser.parse_args()
run, MODELS, WORK = seamtest.Program(args.seam, timeout=600), args.models, args.work
check = seamtest.Checker("bf16", args.k)
expect = check.expect
os.makedirs(WORK, exist_ok=True)
LIMITED = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE")


def bf16(a):
    """a rounded to bfloat16 (nearest, ties to even), as float32."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def save(name, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(WORK, name + ".onnx")
    onnx.save(m, path)
    return path


def seam_run(path, x, *extra, env=None):
    """The model's one output on dnnl, or (None, stderr)."""
    np.save(os.path.join(WORK, "x.npy"), x)
    out = os.path.join(WORK, "out")
    for f in glob.glob(os.path.join(out, "*.npy")):
        os.remove(f)
    r = run("run", path, "--target", "dnnl", "--placement", "capability", "--input", "x=" + os.path.join(WORK, "x.npy"),
            "--output-dir", out, "--compile-log", *extra, env=env)
    if r.returncode:
        return None, r.stderr
    return np.load(glob.glob(os.path.join(out, "*.npy"))[0]), r.stderr


def conv_case(name, x_shape, w_shape, **attrs):
    rng = np.random.default_rng(abs(hash(name)) % (1 << 32))
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = (rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(np.float32)
    b = (rng.standard_normal(w_shape[0]) * 0.1).astype(np.float32)
    nd = len(x_shape) - 2
    tx, tw = torch.from_numpy(bf16(x)).double(), torch.from_numpy(bf16(w)).double()
    conv = {1: torch.nn.functional.conv1d, 2: torch.nn.functional.conv2d, 3: torch.nn.functional.conv3d}[nd]
    pads = attrs.get("pads", [0] * 2 * nd)
    tx = torch.nn.functional.pad(tx, [p for d in reversed(range(nd)) for p in (pads[d], pads[d + nd])])
    want = conv(tx, tw, torch.from_numpy(b).double(), stride=attrs.get("strides", [1] * nd),
                dilation=attrs.get("dilations", [1] * nd), groups=attrs.get("group", 1)).numpy()
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)
    path = save(name, [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(want.shape))],
                [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return path, x, want


def matmul_case(name, a_shape, b_shape, gemm=False):
    rng = np.random.default_rng(abs(hash(name)) % (1 << 32))
    a = rng.standard_normal(a_shape).astype(np.float32)
    w = (rng.standard_normal(b_shape) / np.sqrt(b_shape[-2 if not gemm else -1])).astype(np.float32)
    if gemm:  # transB: w is [N, K]
        c = (rng.standard_normal(b_shape[0]) * 0.1).astype(np.float32)
        want = bf16(a).astype(np.float64) @ bf16(w).astype(np.float64).T + c
        node = helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1)
        inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(c, "c")]
    else:
        want = np.matmul(bf16(a).astype(np.float64), bf16(w).astype(np.float64))
        node = helper.make_node("MatMul", ["x", "w"], ["y"])
        inits = [numpy_helper.from_array(w, "w")]
    path = save(name, [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(a_shape))],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(want.shape))], inits)
    return path, a, want


def impl_names(log):
    """The oneDNN implementations the compile log names for Conv/MatMul/Gemm nodes."""
    names = []
    for line in log.splitlines():
        for op in ("Conv", "MatMul", "Gemm"):
            for kind in ("convolution ", "matmul "):
                at = line.find(f"({op}): {kind}")
                if at >= 0:
                    names.append(line[at + len(op) + 4 + len(kind):].split(";")[0].strip())
    return names


r = run("run", os.path.join(MODELS, "resnet18.onnx"), "--precision", "bf16",
        "--input", "input=" + os.path.join(MODELS, "resnet18.input.npy"))
expect(r.returncode == 2 and "--target dnnl" in r.stderr, f"without --target dnnl: exit 2 ({r.returncode})", r.stderr[-300:])

probe = run("run", os.path.join(MODELS, "resnet18.onnx"), "--target", "dnnl", "--precision", "bf16",
            "--input", "input=" + os.path.join(MODELS, "resnet18.input.npy"), "--quiet")
NATIVE = probe.returncode == 0
print(f"bfloat16 on this CPU: {'yes' if NATIVE else 'no (the refusal is checked)'}", flush=True)
if not NATIVE:
    expect(probe.returncode == 1 and "neither AVX512_BF16 nor AMX" in probe.stderr,
           "a CPU without bfloat16: --precision bf16 refused with the reason, exit 1", probe.stderr[-400:])

CASES = [
    lambda: conv_case("conv1x1", (1, 64, 14, 14), (128, 64, 1, 1)),
    lambda: conv_case("conv3x3_pad", (2, 32, 17, 19), (48, 32, 3, 3), pads=[1, 1, 1, 1]),
    lambda: conv_case("conv3x3_s2", (1, 24, 30, 30), (40, 24, 3, 3), strides=[2, 2], pads=[1, 0, 1, 0]),
    lambda: conv_case("conv_dilated", (1, 16, 20, 20), (16, 16, 3, 3), dilations=[2, 2], pads=[2, 2, 2, 2]),
    lambda: conv_case("conv_grouped", (1, 32, 12, 12), (64, 8, 3, 3), group=4, pads=[1, 1, 1, 1]),
    lambda: conv_case("conv_depthwise", (1, 96, 14, 14), (96, 1, 3, 3), group=96, pads=[1, 1, 1, 1]),
    lambda: conv_case("conv1d", (2, 24, 50), (32, 24, 5), pads=[2, 2]),
    lambda: conv_case("conv3d", (1, 8, 6, 10, 10), (16, 8, 3, 3, 3), pads=[1, 1, 1, 1, 1, 1]),
    lambda: conv_case("conv7x7_s2", (1, 3, 64, 64), (32, 3, 7, 7), strides=[2, 2], pads=[3, 3, 3, 3]),
    lambda: matmul_case("matmul_2d", (64, 256), (256, 384)),
    lambda: matmul_case("matmul_batched", (2, 33, 128), (128, 96)),
    lambda: matmul_case("matmul_3d_weights", (4, 16, 64), (4, 64, 48)),
    lambda: matmul_case("gemm_transb", (16, 300), (200, 300), gemm=True),
]
for make in CASES if NATIVE else []:
    path, x, want = make()
    name = os.path.basename(path)[:-5]
    if not check.selected("op " + name):
        continue
    got, log = seam_run(path, x, "--precision", "bf16")
    f32, _ = seam_run(path, x)
    if got is None or f32 is None:
        check.fail(f"op {name}: seam run failed", log[-600:])
        continue
    scale = float(np.abs(want).max())
    err, err32 = seamtest.abs_err(got, want) / scale, seamtest.abs_err(f32, want) / scale
    expect(err <= 2e-5 and err32 > 4 * max(err, 1e-7),
           f"op {name}: == torch float64 on bf16-rounded input and weights within {err:.1e} of scale "
           f"(float32 output: {err32:.1e})")
    names = impl_names(log)
    expect("precision: bf16" in log and names and all("bf16" in n for n in names) and not any("ref" in n for n in names),
           f"op {name}: oneDNN's implementations are bf16 ones: {sorted(set(names))}", log[-600:])

for model, inp in (("resnet18", "input"), ("vit_small", None), ("efficientnet_b0", None)):
    if not NATIVE or not check.selected("model " + model):
        continue
    path = os.path.join(MODELS, model + ".onnx")
    m = onnx.load(path, load_external_data=False)
    iname = inp or m.graph.input[0].name
    feed = f"{iname}={os.path.join(MODELS, model + '.input.npy')}"
    outs = {}
    for label, extra in (("fp32", ()), ("bf16", ("--precision", "bf16")),
                         ("bf16 fusion=off", ("--precision", "bf16", "--target-option", "fusion=off"))):
        d = os.path.join(WORK, f"{model}_{label.replace(' ', '_')}")
        r = run("run", path, "--target", "dnnl", "--input", feed, "--output-dir", d, "--quiet", *extra)
        expect(r.returncode == 0, f"model {model} {label}: runs (rc {r.returncode})", r.stderr[-400:])
        outs[label] = np.load(sorted(glob.glob(os.path.join(d, "*.npy")))[0]) if r.returncode == 0 else None
    saved = os.path.join(WORK, model + "_bf16.onnx")
    r = run("partition", path, "--target", "dnnl", "--precision", "bf16", "-o", saved)
    d = os.path.join(WORK, model + "_reloaded")
    r2 = run("run", saved, "--input", feed, "--output-dir", d, "--quiet")
    outs["reloaded"] = np.load(sorted(glob.glob(os.path.join(d, "*.npy")))[0]) if r.returncode == 0 and r2.returncode == 0 else None
    if any(v is None for v in outs.values()):
        check.fail(f"model {model}: a run failed", r.stderr[-300:] + r2.stderr[-300:])
        continue
    scale = float(np.abs(outs["fp32"]).max())
    e = seamtest.abs_err(outs["bf16"], outs["fp32"]) / scale
    expect(0 < e <= 5e-2, f"model {model}: bf16 within {e:.1e} of the float32 run's scale")
    expect(outs["reloaded"].tobytes() == outs["bf16"].tobytes(), f"model {model}: the saved bf16 plan reloaded: same bytes")
    ef = seamtest.abs_err(outs["bf16 fusion=off"], outs["bf16"]) / scale
    expect(ef <= 2e-5, f"model {model}: fusion=off agrees within {ef:.1e} of scale")
    if model == "resnet18":
        r = run("run", path, "--target", "dnnl", "--precision", "bf16", "--input", feed, env=LIMITED)
        expect(r.returncode == 1 and "neither AVX512_BF16 nor AMX" in r.stderr,
               f"oneDNN limited below bf16: --precision bf16 refused, exit 1 ({r.returncode})", r.stderr[-300:])
        r = run("run", saved, "--input", feed, env=LIMITED)
        expect(r.returncode == 1 and "precision=bf16" in r.stderr and "AVX512_BF16" in r.stderr,
               f"oneDNN limited below bf16: the saved bf16 plan refused, naming the option, exit 1 ({r.returncode})",
               r.stderr[-300:])

# The estimates know bf16 (dnnl's node_cost_with under precision=bf16):
# resnet18's products are deep (0.27 of float32's time on an AMX machine),
# efficientnet_b0's are depthwise or short (0.96): the estimates follow,
# and a target made with another option only keeps float32's.
if NATIVE and check.selected("estimate"):
    import re

    def estimate(model, *extra):
        r = run("analyze", os.path.join(MODELS, model + ".onnx"), "--target", "dnnl", *extra)
        m = re.search(r"this plan ([0-9.]+) us", r.stdout)
        return float(m.group(1)) if r.returncode == 0 and m else None

    for model, lo, hi in (("resnet18", 0.15, 0.45), ("efficientnet_b0", 0.78, 1.0)):
        a, b = estimate(model), estimate(model, "--precision", "bf16")
        ok = a is not None and b is not None and lo <= b / a <= hi
        expect(ok, f"estimate {model}: bf16's estimate over float32's in [{lo}, {hi}]",
               f"{a} and {b} us" if a and b else "analyze failed")
    a, b = estimate("resnet18"), estimate("resnet18", "--target-threads", "dnnl=2")
    expect(a is not None and a == b, "estimate resnet18: an instance with threads=2 only: float32's estimate",
           f"{a} and {b} us")

if NATIVE and check.selected("max-error"):
    import re
    r18 = os.path.join(MODELS, "resnet18.onnx")
    cal = os.path.join(WORK, "calib")
    os.makedirs(cal, exist_ok=True)
    rng = np.random.default_rng(3)
    sets = [rng.standard_normal((1, 3, 224, 224)).astype(np.float32) for _ in range(3)]
    for i, x in enumerate(sets):
        np.save(os.path.join(cal, f"set{i}.npy"), x)
    cut = ("--target", "dnnl", "--cpu-ops", "MaxPool,GlobalAveragePool")

    def within(e, tag):
        out = os.path.join(WORK, f"me_{tag}.onnx")
        r = run("partition", r18, *cut, "--precision", "bf16", "--calibration", cal, "--max-error", str(e), "-o", out)
        opts = []
        if r.returncode == 0:
            for n in onnx.load(out).graph.node:
                if n.op_type == "Subgraph":
                    opts += [o.decode() for a in n.attribute if a.name == "target_options" for o in a.strings
                             if o.startswith(b"precision=")]
        return r, out, opts

    r, _, opts = within(1.0, "loose")
    m = re.search(r"every subgraph in bf16 \((\d+)\): off by ([0-9.e+-]+)", r.stderr)
    expect(r.returncode == 0 and m and int(m.group(1)) == 3 and opts == ["precision=bf16"] * 3 and "back to fp32" not in r.stderr,
           f"max-error: a loose E keeps all 3 subgraphs in bf16 ({opts})", r.stderr[-600:])
    full = float(m.group(2)) if m else 0.0
    E = full / 2
    r, out, opts = within(E, "tight")
    fp32_plan = os.path.join(WORK, "me_fp32.onnx")
    r2 = run("partition", r18, *cut, "-o", fp32_plan)
    worst = 0.0
    for i in range(len(sets)):
        got, ref = [], []
        for path, dst in ((out, got), (fp32_plan, ref)):
            d = os.path.join(WORK, f"me_out_{i}")
            rr = run("run", path, "--input", f"input={os.path.join(cal, f'set{i}.npy')}", "--output-dir", d, "--quiet")
            dst.append(np.load(glob.glob(os.path.join(d, "*.npy"))[0]) if rr.returncode == 0 else None)
        if got[0] is None or ref[0] is None:
            worst = float("inf")
            break
        worst = max(worst, seamtest.abs_err(got[0], ref[0]) / float(np.abs(ref[0]).max()))
    n_bf16 = opts.count("precision=bf16")
    said = re.search(r"(\d+) of 3 subgraphs in bf16", r.stderr)
    expect(r.returncode == 0 and r2.returncode == 0 and 0 < full and n_bf16 < 3 and opts.count("precision=fp32") == 3 - n_bf16
           and said and int(said.group(1)) == n_bf16 and worst <= E * 1.0001,
           f"max-error: E = {E:.2e} (half the all-bf16 {full:.2e}): {n_bf16} of 3 subgraphs kept in bf16, the saved plan "
           f"off by {worst:.2e} on the calibration sets", r.stderr[-800:])
    for bad in (("--precision", "bf16", "--max-error", "0.01"), ("--precision", "bf16", "--calibration", cal)):
        rb = run("partition", r18, "--target", "dnnl", *bad)
        expect(rb.returncode == 2, f"max-error: {' '.join(bad[2:3])} alone with bf16: exit 2 ({rb.returncode})",
               rb.stderr[-300:])
check.finish()
