"""--precision bf16 on dnnl against float32 on dnnl and ONNX Runtime's CPU
provider (float32), side by side in one run (issue 27).

usage: /usr/bin/python3 bench/bf16_bench.py [--seam build/seam] [--models DIR]
           [--rounds 2] [--repeat 10] [--threads 2] [--pause 1] [NAME...]

The models are the dnnl benchmark set (bench/bench_models.py, exported
into --models when missing). Each round runs, per model and on the same
input, `seam run MODEL --target dnnl` (float32), the same with
`--precision bf16`, then ONNX Runtime (bench/ort/ort_run.js, float32);
each side keeps its best median over the rounds (the machine is shared).
The error column is bf16's largest deviation from seam's float32 output
over the output's scale (the bf16 result is bf16-rounded operands summed
in float32; check_bf16.py holds it to that per op). Prints a markdown
table and the geometric means and worst cases. On a CPU without
AVX512_BF16 or AMX seam refuses bf16 (said once, then the table has no
bf16 column).
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from dnnl_bench import geomean_worst, median_of, run  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seam", default="build/seam")
    ap.add_argument("--models", default="build/bench-models")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pause", type=float, default=1)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    import bench_models
    names = a.names or list(bench_models.MODELS)
    subprocess.run(["/usr/bin/python3", os.path.join(HERE, "bench_models.py"), a.models, "--only", ",".join(names)],
                   check=True, capture_output=True)
    ort = os.path.join(HERE, "ort")
    if not os.path.isdir(os.path.join(ort, "node_modules", "onnxruntime-node")):
        subprocess.run(["npm", "install", "--ignore-scripts"], cwd=ort, check=True, capture_output=True)
    best = {n: {} for n in names}
    errs = {}
    for rnd in range(a.rounds):
        for n in names:
            model, inp = os.path.join(a.models, n + ".onnx"), os.path.join(a.models, n + ".input.npy")
            for side, extra in (("fp32", []), ("bf16", ["--precision", "bf16"])):
                rc, text = run([a.seam, "run", model, "--input", f"input={inp}", "--target", "dnnl", "--repeat",
                                str(a.repeat), "--threads", str(a.threads), "--quiet", *extra])
                ms = median_of(text) if rc == 0 else None
                if rc and rnd == 0:
                    print(f"{n} {side}: {text.strip().splitlines()[-1][:200] if text.strip() else rc}", file=sys.stderr)
                if ms is not None:
                    best[n][side] = min(best[n].get(side, ms), ms)
            rc, text = run(["node", os.path.join(ort, "ort_run.js"), model, inp, "--repeat", str(a.repeat), "--threads",
                            str(a.threads)])
            ms = median_of(text) if rc == 0 else None
            if ms is not None:
                best[n]["ort"] = min(best[n].get("ort", ms), ms)
            if rnd == 0:
                with tempfile.TemporaryDirectory() as d:
                    outs = {}
                    for side, extra in (("fp32", []), ("bf16", ["--precision", "bf16"])):
                        od = os.path.join(d, side)
                        rc, _ = run([a.seam, "run", model, "--input", f"input={inp}", "--target", "dnnl",
                                     "--output-dir", od, "--quiet", *extra])
                        if rc == 0:
                            outs[side] = np.load(os.path.join(od, "output.npy")).astype(np.float64)
                    if len(outs) == 2:
                        errs[n] = np.abs(outs["bf16"] - outs["fp32"]).max() / max(np.abs(outs["fp32"]).max(), 1e-30)
            time.sleep(a.pause)
    print("| model | seam fp32 ms | seam bf16 ms | ORT fp32 ms | bf16 / fp32 | bf16 / ORT | fp32 / ORT | bf16 error |")
    print("|---|---|---|---|---|---|---|---|")
    r_bf, r_bo, r_fo = [], [], []
    for n in names:
        b = best[n]
        f, h, o = b.get("fp32"), b.get("bf16"), b.get("ort")
        cell = lambda x: f"{x:.2f}" if x else "fails"  # noqa: E731
        ratio = lambda x, y: f"{x / y:.2f}" if x and y else "-"  # noqa: E731
        print(f"| {n} | {cell(f)} | {cell(h)} | {cell(o)} | {ratio(h, f)} | {ratio(h, o)} | {ratio(f, o)} | "
              f"{errs[n]:.1e} |" if n in errs else
              f"| {n} | {cell(f)} | {cell(h)} | {cell(o)} | {ratio(h, f)} | {ratio(h, o)} | {ratio(f, o)} | - |")
        if f and h:
            r_bf.append((h / f, n))
        if h and o:
            r_bo.append((h / o, n))
        if f and o:
            r_fo.append((f / o, n))
    for label, rs in (("bf16 / fp32", r_bf), ("bf16 / ORT", r_bo), ("fp32 / ORT", r_fo)):
        if rs:
            g, (w, wn) = geomean_worst(rs)
            print(f"\n{label}: geometric mean {g:.2f}, worst {w:.2f} ({wn}), {len(rs)} models")
    if errs:
        print(f"\nbf16 error: largest {max(errs.values()):.1e} ({max(errs, key=errs.get)}), "
              f"geometric mean {math.exp(sum(math.log(max(e, 1e-12)) for e in errs.values()) / len(errs)):.1e}")


if __name__ == "__main__":
    main()
