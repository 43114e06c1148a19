"""ONNX Runtime's com.microsoft quantized contrib ops (QLinearAdd, QLinearMul,
QLinearGlobalAveragePool, QLinearAveragePool, QLinearLeakyRelu,
QLinearSigmoid, QLinearConcat, QGemm, MatMulIntegerToFloat,
DynamicQuantizeMatMul) on every path, against ONNX Runtime (issue 27).

usage: /usr/bin/python3 check_quant_ms.py SEAM WORKDIR [-k PATTERN]

ONNX Runtime is bench/ort's onnxruntime-node (`npm install --ignore-scripts`
there; scripts/setup.sh does it), or the folder $SEAM_ORT_DIR names;
without it every model case fails saying so.

1. tests/models/gen_qop_ms.py writes the models into WORKDIR/models (small
   QOperator models, each a few contrib nodes between QuantizeLinear,
   QLinearConv and DequantizeLinear, and a resnet-like net), each with
   NAME.json (output_scale: one quantum of its output; output_kind),
   NAME.input.npy and NAME.ref.npy, the generator's numpy reference.
2. Case NAME: ONNX Runtime runs the model (CPU provider, all graph
   optimizations, 2 threads; the copy NAME.ort.onnx where ONNX Runtime
   cannot load a "" zero point); its output must not be degenerate and
   must agree with the numpy reference (within one quantum; a float output
   within 1e-5 of its largest magnitude), which checks that the generator
   wrote the ops as ONNX Runtime reads them. Then seam on the CPU
   (`seam run M --input input=F.npy --output-dir D`), on `--target dnnl`,
   on dnnl with `--target-option fusion=off`, and saved and reloaded
   (`seam partition M --target dnnl -o P.onnx`, then `seam run P.onnx`):
   a quantized output (the DequantizeLinear of an 8-bit tensor) must be
   within one quantum of ONNX Runtime's (seamtest.quanta); a float output
   (QGemm without y_scale, MatMulIntegerToFloat) within 1e-5 of the
   largest magnitude of ONNX Runtime's, DynamicQuantizeMatMul within 1e-2
   (below). Then `seam partition M --target dnnl --json` must hold no node
   of the com.microsoft domain (each contrib node read as standard nodes),
   and every contrib node's name must still be in the plan (the standard
   op it became keeps it, so that pins and plans can name it).
3. Case "bad NAME_bad_KIND": for QLinearAdd, QGemm and
   QLinearGlobalAveragePool, a scale input of the node set to 0, negative,
   NaN, or two values where a scalar is required: `seam run` on the CPU
   and on `--target dnnl` must exit 1, with a message naming the node (its
   name and op type) and saying what is wrong (it mentions "scale").

On a CPU without VNNI, ONNX Runtime's u8 x s8 products (QLinearConv,
QGemm, MatMulIntegerToFloat, DynamicQuantizeMatMul) add pairs of 8-bit
products in 16 bits and saturate (up to 76 quanta off at these models'
outputs on an AVX2 EPYC), so there it runs a copy whose int8 weights are uint8 with 128
added to them and to their zero points: the same function, computed by its
exact u8 x u8 kernels. seamtest.ort_run's copy cannot be used: it also
converts the weights of a QLinearConv with int8 activations, for which
ONNX Runtime has no kernel (qms_add_int8).

The cases: the model names (qms_add, ...) and "bad NAME_bad_KIND".
"""
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import seamtest  # noqa: E402

args, run, work, check = seamtest.checker_setup(__doc__, "quant_ms", timeout=600)
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
GEN = os.path.join(ROOT, "tests", "models", "gen_qop_ms.py")
MODELS = os.path.join(work, "models")
MS = "com.microsoft"
PATHS = ["cpu", "dnnl", "dnnl fusion=off", "saved"]
MS_OPS = {"QLinearAdd", "QLinearMul", "QLinearGlobalAveragePool", "QLinearAveragePool", "QLinearLeakyRelu",
          "QLinearSigmoid", "QLinearConcat", "QGemm", "MatMulIntegerToFloat", "DynamicQuantizeMatMul"}
FLOAT_TOL = 1e-5
# DynamicQuantizeMatMul quantizes A from its own range at run time: where
# seam's scale, or its division by it, differs from ONNX Runtime's in the
# last bit, an element of A near a rounding boundary lands one step away,
# and the outputs of its row move by a_scale * |B| (about 0.4% of the
# largest output here). 1% of the largest magnitude allows a few such steps
# and still fails a wrong zero point, scale or bias by far.
DYNAMIC_TOL = 1e-2
summary = {}  # model -> {path: (error, unit, seconds)}

def last(stderr):
    """The last line of stderr (seam's error; notes come before it)."""
    return (stderr.strip().splitlines() or ["(no message)"])[-1][:300]


# ---- ONNX Runtime ---------------------------------------------------------------------------

def ort_outputs(name, info):
    """ONNX Runtime's output of model NAME on its input file: (array, None)
    or (None, why not)."""
    model = os.path.join(MODELS, info.get("ort_model", info["model"]))
    if not seamtest.cpu_has_vnni():
        # (its u8 x s8 kernels saturate there: the same products as u8 x u8)
        model = seamtest.u8_weights_copy(model, os.path.join(work, f"{name}.ort_u8.onnx")) or model
    out_dir = os.path.join(work, f"{name}.ort")
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = ["node", os.path.join(HERE, "ort_outputs.js"), seamtest.ORT_DIR, model, out_dir, "--opt", "all",
           "--threads", "2", "--input", f"{info['input_name']}={os.path.join(MODELS, info['input'])}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode:
        return None, f"ONNX Runtime fails on {os.path.basename(model)}: {last(r.stderr)}"
    return np.load(seamtest.output_file(out_dir, info["output_name"])), None


# ---- one model ------------------------------------------------------------------------------

def float_tol(info):
    return DYNAMIC_TOL if "DynamicQuantizeMatMul" in info["ms_ops"] else FLOAT_TOL


def compare(info, got, want):
    """(ok, error, unit, detail) of seam's output against ONNX Runtime's."""
    if info["output_kind"] == "quantized":
        qd, n_off, ok = seamtest.quanta(got, want, info["output_scale"])
        return ok, qd, "quanta", f"max diff {qd:.2f} quanta, {n_off} of {want.size} elements off by >= 0.5 quantum"
    tol = float_tol(info)
    e = seamtest.rel_err(got, want)
    return e <= tol, e, "rel", f"max diff {e:.2e} of the largest magnitude (tolerance {tol:g})"


def seam_run(model, info, out_dir, extra=()):
    shutil.rmtree(out_dir, ignore_errors=True)  # no output of an earlier run taken for this one's
    t0 = time.time()
    r = run("run", model, "--input", f"{info['input_name']}={os.path.join(MODELS, info['input'])}",
            "--output-dir", out_dir, *extra)
    return r, time.time() - t0


def model_case(name, info):
    model = os.path.join(MODELS, info["model"])
    why = seamtest.ort_problem()
    if why:
        check.fail(f"{name}: {why}")
        return
    ref, why = ort_outputs(name, info)
    if why:
        check.fail(f"{name}: {why}")
        return
    res = summary.setdefault(name, {})
    mine = np.load(os.path.join(MODELS, info["ref"]))
    scale = info["output_scale"]
    if info["output_kind"] == "quantized":
        q = np.round(ref.astype(np.float64) / scale) + info["output_zero_point"]
        lo, hi = (0, 255) if info.get("output_type", "uint8") == "uint8" else (-128, 127)
        sat = float(np.mean((q <= lo) | (q >= hi)))
        check.expect(float(ref.std()) > 0 and sat < 0.5 and len(np.unique(q)) > 4,
                     f"{name}: ONNX Runtime's output is not degenerate (std {ref.std() / scale:.0f} quanta, "
                     f"{len(np.unique(q))} values, {100 * sat:.0f}% at an end of the range)")
        qd, _, ok = seamtest.quanta(ref, mine, scale)
        check.expect(ok, f"{name}: ONNX Runtime agrees with the generator's numpy reference ({qd:.2f} quanta)",
                     "the model is not what gen_qop_ms.py meant, or ONNX Runtime reads an op otherwise")
    else:
        e = seamtest.rel_err(ref, mine)
        check.expect(float(ref.std()) > 0, f"{name}: ONNX Runtime's output is not constant (std {ref.std():.3g})")
        check.expect(e <= float_tol(info), f"{name}: ONNX Runtime agrees with the generator's numpy reference "
                     f"({e:.1e} of the largest magnitude)", "the model is not what gen_qop_ms.py meant")
    saved = os.path.join(work, f"{name}.saved.onnx")
    for label in PATHS:
        d = os.path.join(work, f"{name}.{label.replace(' ', '_').replace('=', '_')}")
        if label == "saved":
            p = run("partition", model, "--target", "dnnl", "-o", saved)
            if p.returncode:
                check.fail(f"{name} ({label}): seam partition -o failed: {last(p.stderr)}")
                continue
            r, t = seam_run(saved, info, d)
        else:
            extra = [] if label == "cpu" else ["--target", "dnnl"] + (
                ["--target-option", "fusion=off"] if "fusion=off" in label else [])
            r, t = seam_run(model, info, d, extra)
        if r.returncode:
            check.fail(f"{name} ({label}): seam run failed: {last(r.stderr)}")
            continue
        out = seamtest.output_file(d, info["output_name"])
        if not os.path.exists(out):
            check.fail(f"{name} ({label}): seam run exits 0 without writing {out}")
            continue
        got = np.load(out)
        ok, err, unit, detail = compare(info, got, ref)
        check.expect(ok, f"{name} ({label}): within tolerance of ONNX Runtime ({detail}, {t:.2f} s)",
                     "over the tolerance" if got.shape == ref.shape else
                     f"output {got.dtype}{got.shape}, ONNX Runtime's {ref.dtype}{ref.shape}")
        res[label] = (err, unit, t)
    plan_case(name, model)


def plan_case(name, model):
    """No node of the plan in the com.microsoft domain; every contrib
    node's name still in the plan."""
    r = run("partition", model, "--target", "dnnl", "--json")
    if not check.expect(r.returncode == 0, f"{name} plan: seam partition --json runs", last(r.stderr)):
        return
    plan = json.loads(r.stdout)
    ms = [f"{n['name']} ({n['op']})" for n in plan["nodes"]
          if n.get("domain") == MS or n["op"] in MS_OPS or n["op"].startswith(MS + ".")]
    check.expect(plan["nodes"] and not ms, f"{name} plan: no node of the com.microsoft domain "
                 f"({len(plan['nodes'])} nodes)", f"still there: {', '.join(ms)}")
    contrib = [n.name for n in onnx.load(model).graph.node if n.domain == MS]
    names = {n["name"] for n in plan["nodes"]}
    missing = [c for c in contrib if c not in names]
    check.expect(not missing, f"{name} plan: every contrib node's name ({', '.join(contrib)}) still in the plan",
                 f"missing: {missing}")


# ---- bad parameters ---------------------------------------------------------------------------

def bad_case(info, bad):
    """seam run of a file whose node has a bad scale: exit 1 naming the node
    and its op, saying it is the scale."""
    stem = bad["file"][:-len(".onnx")]
    for label, extra in (("cpu", []), ("dnnl", ["--target", "dnnl", "--placement", "capability"])):
        r, _ = seam_run(os.path.join(MODELS, bad["file"]), info, os.path.join(work, f"{stem}.{label}"), extra)
        err = r.stderr
        ok = (r.returncode == 1 and f"'{bad['node']}'" in err and bad["op"] in err and "scale" in err.lower()
              and "internal" not in err.lower())
        got = "exit 0 (accepted)" if r.returncode == 0 else f"exit {r.returncode}: {last(err)}"
        check.expect(ok, f"bad {stem} ({label}): {bad['input']} {bad['kind']}: exit 1 naming '{bad['node']}' "
                     f"({bad['op']}) and its scale", got)


def malformed():
    """Contrib nodes wrong in their structure, not their scales: an absent
    X, too few inputs, a missing attribute, a channels-last input of rank
    2. Each exits 1 naming the node, on the CPU and on dnnl (no crash: the
    sanitizer build runs this too)."""
    if not check.selected("malformed"):
        return
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper
    one = [numpy_helper.from_array(np.float32(0.1), "s"), numpy_helper.from_array(np.uint8(10), "z")]
    cases = {
        "gap_no_x": (helper.make_node("QLinearGlobalAveragePool", ["", "s", "z", "s", "z"], ["y"], name="bad_node",
                                      domain=MS), "X is missing"),
        "sigmoid_no_x": (helper.make_node("QLinearSigmoid", ["", "s", "z", "s", "z"], ["y"], name="bad_node",
                                          domain=MS), "X is missing"),
        "add_six_inputs": (helper.make_node("QLinearAdd", ["x", "s", "z", "x", "s", "z"], ["y"], name="bad_node",
                                            domain=MS), "at least 7 inputs"),
        "softmax_no_opset": (helper.make_node("QLinearSoftmax", ["x", "s", "z", "s", "z"], ["y"], name="bad_node",
                                              domain=MS), "opset"),
        "gap_nhwc_rank2": (helper.make_node("QLinearGlobalAveragePool", ["x2", "s", "z", "s", "z"], ["y"],
                                            name="bad_node", domain=MS, channels_last=1), "rank 3 to 8"),
    }
    x = os.path.join(work, "malformed.x.npy")
    x2 = os.path.join(work, "malformed.x2.npy")
    np.save(x, np.arange(36, dtype=np.uint8).reshape(1, 4, 3, 3))
    np.save(x2, np.arange(8, dtype=np.uint8).reshape(2, 4))
    for name, (node, want) in cases.items():
        g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", T.UINT8, [1, 4, 3, 3]),
                                             helper.make_tensor_value_info("x2", T.UINT8, [2, 4])],
                              [helper.make_tensor_value_info("y", T.UINT8, None)], one)
        path = os.path.join(work, f"malformed_{name}.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)]), path)
        for label, extra in (("cpu", []), ("dnnl", ["--target", "dnnl"])):
            r = run("run", path, "--input", f"x={x}", "--input", f"x2={x2}", "--output-dir",
                    os.path.join(work, f"malformed_{name}.{label}"), *extra)
            err = r.stderr or ""
            check.expect(r.returncode == 1 and "'bad_node'" in err and want in err and "internal" not in err.lower(),
                         f"malformed {name} ({label}): exit 1 naming the node: {want}",
                         f"exit {r.returncode}: {last(err)}")


def main():
    # every model (about a second): which have bad variants is in their json
    t0 = time.time()
    r = subprocess.run([sys.executable, GEN, MODELS], capture_output=True, text=True)
    if r.returncode:
        check.fail(f"gen_qop_ms.py failed: {(r.stderr or r.stdout).strip()[-600:]}")
        check.finish()
    print(f"models written in {time.time() - t0:.1f} s", flush=True)
    names = subprocess.run([sys.executable, GEN, "--list"], capture_output=True, text=True, check=True).stdout.split()
    for name in names:
        with open(os.path.join(MODELS, name + ".json")) as f:
            info = json.load(f)
        if check.selected(name):
            model_case(name, info)
        for bad in info["bad"]:
            if check.selected(f"bad {bad['file'][:-len('.onnx')]}"):
                bad_case(info, bad)
    malformed()
    if summary:
        print("\nmax difference from ONNX Runtime's output (quanta, or relative for float outputs), seam's wall time")
        print(f"{'model':22} | " + " | ".join(f"{p:>17}" for p in PATHS))
        for name, res in summary.items():
            cells = []
            for p in PATHS:
                err, unit, t = res.get(p, (None, None, None))
                cells.append(f"{'-':>17}" if err is None else
                             f"{(f'{err:.2f}q' if unit == 'quanta' else f'{err:.1e}'):>9} {t:6.2f}s")
            print(f"{name:22} | " + " | ".join(cells))
    check.finish()


main()
