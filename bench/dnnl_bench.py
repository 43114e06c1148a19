"""seam --target dnnl against ONNX Runtime's CPU provider on the benchmark set
(bench/bench_models.py), one run, the two alternating per round.

usage: /usr/bin/python3 bench/dnnl_bench.py [--seam build/seam] [--models DIR]
           [--rounds 3] [--repeat 20] [--threads 2] [--pause 5] [--check]
           [--seam-args "..."] [NAME...]

Each round runs `seam run MODEL --target dnnl --repeat N --threads T` then
ONNX Runtime (bench/ort/ort_run.js, same input, same thread count); each
side keeps its best median over the rounds (the machine is shared and
noisy). Prints a markdown table: latencies, seam/ORT, the model's GFLOP
(Conv, ConvTranspose, MatMul, Gemm; 2 flops per multiply-add, from ONNX's
shape inference) and the GFLOP/s seam reached, against the machine's peak
measured the same way on peak_matmul (one 2048^3 MatMul through seam
dnnl). Then the worst ratio and the geometric mean.

--check also compares outputs: seam dnnl with fusion on and off against
seam's CPU kernels, within 1e-4 of the output's scale (max |ref|), and
prints a column per mode.
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import shape_inference

HERE = os.path.dirname(os.path.abspath(__file__))


def flops(path):
    """Multiply-adds x 2 of the model's Conv/ConvTranspose/MatMul/Gemm."""
    m = shape_inference.infer_shapes(onnx.load(path))
    g = m.graph
    shapes = {}
    for v in list(g.value_info) + list(g.input) + list(g.output):
        t = v.type.tensor_type
        if t.HasField("shape"):
            shapes[v.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    for i in g.initializer:
        shapes[i.name] = list(i.dims)
    total = 0
    for n in g.node:
        ins = [shapes.get(x) for x in n.input]
        out = shapes.get(n.output[0]) if n.output else None
        try:
            if n.op_type in ("Conv", "ConvTranspose") and ins[1] and out and None not in out:
                w = ins[1]
                if n.op_type == "Conv":  # out [N,Cout,...] x Cin/g x kernel
                    total += 2 * math.prod(out) * math.prod(w[1:])
                else:  # input [N,Cin,...] x Cout/g x kernel
                    total += 2 * math.prod(ins[0]) * math.prod(w[1:])
            elif n.op_type in ("MatMul", "Gemm") and ins[0] and out and None not in out and None not in ins[0]:
                a = ins[0]
                k = a[-1] if n.op_type == "MatMul" or not any(at.name == "transA" and at.i for at in n.attribute) else a[0]
                total += 2 * math.prod(out) * k
        except TypeError:
            pass
    return total / 1e9


def median_of(text):
    m = re.search(r"median ([0-9.]+) ms", text)
    return float(m.group(1)) if m else None


def geomean_worst(ratios):
    """(geometric mean, (worst ratio, its name)) of [(ratio, name)]."""
    return math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios)), max(ratios)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def check_outputs(seam, model, inp, seam_args):
    """Max error of dnnl (fusion on, off) against seam's CPU, over the output's scale."""
    with tempfile.TemporaryDirectory() as d:
        outs = {}
        for mode, extra in (("cpu", []), ("on", ["--target", "dnnl"]), ("off", ["--target", "dnnl", "--target-option", "fusion=off"])):
            od = os.path.join(d, mode)
            rc, text = run([seam, "run", model, "--input", f"input={inp}", "--output-dir", od, "--quiet", *extra, *seam_args])
            if rc:
                outs[mode] = "fails: " + text.strip().splitlines()[-1][:80]
                continue
            outs[mode] = np.load(os.path.join(od, "output.npy")).astype(np.float64)
        res = {}
        for mode in ("on", "off"):
            ref, got = outs["cpu"], outs[mode]
            if isinstance(ref, str) or isinstance(got, str):
                res[mode] = got if isinstance(got, str) else ref
            else:
                res[mode] = f"{np.abs(ref - got).max() / max(np.abs(ref).max(), 1e-30):.1e}"
        return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seam", default="build/seam")
    ap.add_argument("--models", default="build/bench-models")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pause", type=float, default=5)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--seam-args", default="")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    sys.path.insert(0, HERE)
    import bench_models
    names = a.names or list(bench_models.MODELS)
    subprocess.run(["/usr/bin/python3", os.path.join(HERE, "bench_models.py"), a.models, "--only",
                    ",".join(names + ["peak_matmul"])], check=True)
    ort = os.path.join(HERE, "ort")
    if not os.path.isdir(os.path.join(ort, "node_modules", "onnxruntime-node")):
        subprocess.run(["npm", "install", "--ignore-scripts"], cwd=ort, check=True, capture_output=True)
    seam_args = a.seam_args.split()

    def seam_ms(model, inp):
        rc, text = run([a.seam, "run", model, "--input", f"input={inp}", "--target", "dnnl", "--repeat", str(a.repeat),
                        "--threads", str(a.threads), "--quiet", *seam_args])
        return median_of(text) if rc == 0 else None, text

    peak_model = os.path.join(a.models, "peak_matmul")
    peak_ms = min(filter(None, [seam_ms(peak_model + ".onnx", peak_model + ".input.npy")[0] for _ in range(3)]))
    peak = flops(peak_model + ".onnx") / (peak_ms / 1e3)
    print(f"peak: one 2048^3 MatMul on seam dnnl, {a.threads} threads: {peak_ms:.2f} ms = {peak:.1f} GFLOP/s\n")
    head = "| model | seam dnnl ms | ORT ms | seam / ORT | GFLOP | seam GFLOP/s | % of peak |"
    if a.check:
        head += " err fusion on | err fusion off |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    ratios = []
    for name in names:
        model, inp = os.path.join(a.models, name + ".onnx"), os.path.join(a.models, name + ".input.npy")
        time.sleep(a.pause)
        best_s = best_o = math.inf
        note = ""
        for _ in range(a.rounds):
            s, text = seam_ms(model, inp)
            if s is None:
                note = "seam fails: " + text.strip().splitlines()[-1][:100]
                break
            rc, otext = run(["node", os.path.join(ort, "ort_run.js"), model, inp, "--repeat", str(a.repeat),
                             "--threads", str(a.threads)])
            o = median_of(otext) if rc == 0 else None
            if o is None:
                note = "ORT fails: " + otext.strip().splitlines()[-1][:100]
                break
            best_s, best_o = min(best_s, s), min(best_o, o)
        gf = flops(model)
        if note:
            print(f"| {name} | {note} | | | {gf:.2f} | | |")
            continue
        ratio = best_s / best_o
        ratios.append((ratio, name))
        gfs = gf / (best_s / 1e3)
        line = f"| {name} | {best_s:.3f} | {best_o:.3f} | {ratio:.2f} | {gf:.2f} | {gfs:.1f} | {100 * gfs / peak:.0f}% |"
        if a.check:
            c = check_outputs(a.seam, model, inp, seam_args)
            line += f" {c['on']} | {c['off']} |"
        print(line, flush=True)
    if ratios:
        gm, worst = geomean_worst(ratios)
        print(f"\n{len(ratios)} of {len(names)} models ran; seam/ORT geometric mean {gm:.2f}, worst {worst[0]:.2f} "
              f"({worst[1]}), at or below 1.0: {sum(r <= 1.0 for r, _ in ratios)}")


if __name__ == "__main__":
    main()
