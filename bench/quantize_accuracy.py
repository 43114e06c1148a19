"""seam quantize's accuracy against the float model on its calibration set
(issue 27), and what --max-error keeps in fp32.

usage: /usr/bin/python3 bench/quantize_accuracy.py [--seam build/seam] [--models build/quant-bench-models]
           [--max-error 0.05] [NAME...]

The models are tests/models/gen_quant.py's float models at the benchmark's
sizes (--bench: resnet18 and mobilenet_v2 at 224, the resnet block, the
conv chain, the MLP, the transformer encoder), with random weights (batch
norms calibrated) and 4 calibration inputs each. For each one, seam
quantize writes the static QDQ form with minmax and with percentile
(99.99) ranges, and the dynamic form; seam runs each on the CPU on every
calibration input and on the held-out test input, next to the float model.
Prints a markdown table: SQNR (dB, 10 log10 of the output's power over the
error's) and the relative error max |y - y_fp32| / max |y_fp32|, on the
calibration inputs (worst) and on the test input. Then, for resnet18 and
mobilenet_v2 on the int8 NPU rules target (tests/targets/int8_npu.json),
what `seam partition --precision int8 --max-error E` printed: subgraphs in
int8 and in fp32, and the error it measured.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import seamtest  # noqa: E402

STATIC = ["qdq_resnet18", "qdq_mobilenet_v2", "qdq_resblock", "qdq_conv_relu", "qdq_mlp"]
DYNAMIC = ["dyn_transformer", "qdq_mlp"]


def run(seam, model, inp, x, d):
    r = subprocess.run([seam, "run", model, "--input", f"{inp}={x}", "--output-dir", d, "--quiet"], capture_output=True,
                       text=True)
    if r.returncode:
        sys.exit(f"seam run {model}: {r.stderr.strip()[-300:]}")
    return seamtest.load_outputs(model, d)[0].astype(np.float64)


def measure(seam, models, name, qmodel, work):
    fm = os.path.join(models, name + ".float.onnx")
    inp = onnx.load(fm, load_external_data=False).graph.input[0].name
    res = []
    for x in sorted(glob.glob(os.path.join(models, name + ".calib", "*.npy"))) + [os.path.join(models, name + ".input.npy")]:
        f = run(seam, fm, inp, x, os.path.join(work, "f"))
        q = run(seam, qmodel, inp, x, os.path.join(work, "q"))
        sq = 10 * np.log10((f ** 2).mean() / max(((f - q) ** 2).mean(), 1e-30))
        res.append((sq, np.abs(f - q).max() / max(np.abs(f).max(), 1e-30)))
    cal, test = res[:-1], res[-1]
    return min(s for s, _ in cal), max(e for _, e in cal), test[0], test[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seam", default=os.path.join(ROOT, "build", "seam"))
    ap.add_argument("--models", default=os.path.join(ROOT, "build", "quant-bench-models"))
    ap.add_argument("--max-error", default="0.05")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    names = a.names or sorted(set(STATIC + DYNAMIC))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "models", "gen_quant.py"), a.models, "--bench",
                        "--seam", a.seam, "--only", ",".join(names)], capture_output=True, text=True)
    if r.returncode:
        sys.exit(r.stderr[-500:])
    print("| model | form | SQNR calib (worst) | rel. error calib (worst) | SQNR test | rel. error test |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as work:
        for name in names:
            forms = []
            if name in STATIC:
                forms += [("QDQ minmax", ["--calibration", os.path.join(a.models, name + ".calib")]),
                          ("QDQ percentile 99.99", ["--calibration", os.path.join(a.models, name + ".calib"),
                                                    "--percentile", "99.99"])]
            if name in DYNAMIC:
                forms.append(("dynamic", ["--dynamic"]))
            for form, extra in forms:
                q = os.path.join(work, "q.onnx")
                r = subprocess.run([a.seam, "quantize", os.path.join(a.models, name + ".float.onnx"), "-o", q, "--quiet",
                                    *extra], capture_output=True, text=True)
                if r.returncode:
                    sys.exit(f"seam quantize {name}: {r.stderr.strip()[-300:]}")
                sc, ec, st, et = measure(a.seam, a.models, name, q, work)
                print(f"| {name} | {form} | {sc:.1f} dB | {100 * ec:.2f}% | {st:.1f} dB | {100 * et:.2f}% |", flush=True)
        npu = os.path.join(ROOT, "tests", "targets", "int8_npu.json")
        for name in ("qdq_resnet18", "qdq_mobilenet_v2"):
            if name not in names:
                continue
            r = subprocess.run([a.seam, "partition", os.path.join(a.models, name + ".float.onnx"), "--target", npu,
                                "--precision", "int8", "--calibration", os.path.join(a.models, name + ".calib"),
                                "--max-error", a.max_error, "-o", os.path.join(work, "p.onnx")],
                               capture_output=True, text=True)
            lines = r.stderr.splitlines()
            kept = sum("kept in fp32;" in l for l in lines)
            int8 = sum("): int8;" in l for l in lines)
            final = [l.split("--max-error")[1].strip() for l in lines if "the model is off by" in l]
            print(f"\n{name} on int8_npu.json, --max-error {a.max_error}: {int8} subgraphs int8, {kept} fp32; "
                  f"{final[0] if final else r.stderr.strip()[-200:]}")


if __name__ == "__main__":
    main()
