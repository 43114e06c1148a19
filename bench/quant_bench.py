"""seam's int8 on dnnl against ONNX Runtime's CPU provider on the same
quantized files, and against seam's own fp32 run of the float models
(issue 27).

usage: /usr/bin/python3 bench/quant_bench.py [--seam build/seam] [--models build/quant-bench-models]
           [--target dnnl|cpu] [--rounds 3] [--repeat 20] [--threads 2] [--pause 2] [--check] [NAME...]

The models are tests/models/gen_quant.py's at the benchmark's sizes
(--bench): QDQ resnet18 and mobilenet_v2 at 1x3x224x224, the QDQ conv
chain (Relus kept) at 1x3x112x112, the QDQ MLP (batch 64, 512-1024-1024-10),
the QOperator conv net at 56x56 and the dynamically quantized transformer
encoder (d_model 256, ff 1024, 1x128 tokens); each next to its float model.

Each round runs, on the same input, `seam run QUANT --target dnnl --repeat
N --threads T`, then ONNX Runtime (bench/ort/ort_run.js: one warm-up, N
timed runs, T intra-op threads) on the quantized file, then seam and ONNX
Runtime on the float file (seam with --target dnnl, its fastest fp32
path); each keeps its best median over the rounds (the machine is shared
and noisy), as bench/dnnl_bench.py does. Prints a markdown table: the four
latencies, seam int8 / ORT int8 (below 1.0 seam is faster), seam's fp32 /
int8 speed-up and ONNX Runtime's; then the geometric means and the worst
cases, and what the CPU has (avx512_vnni, avx_vnni, amx_int8, avx512_bf16:
int8 speed-ups need VNNI or AMX).

--check also compares seam's int8 output with ONNX Runtime's, in quanta of
the output (gen_quant.py's output_scale), and prints a column; on a CPU
without VNNI, where ONNX Runtime's u8 x s8 kernels saturate, with its run
of the same model whose int8 weights are stored as uint8 + 128.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
import seamtest  # noqa: E402
ROOT = os.path.dirname(HERE)
ORT = os.path.join(HERE, "ort")
GEN = os.path.join(ROOT, "tests", "models", "gen_quant.py")


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def median_of(text):
    m = re.search(r"median ([0-9.]+) ms", text)
    return float(m.group(1)) if m else None


def cpu_features():
    """'model name; N cores; flags that matter for int8' from /proc/cpuinfo."""
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return "unknown (no /proc/cpuinfo)"
    name = re.search(r"model name\s*:\s*(.*)", text)
    m = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
    flags = set(m.group(1).split()) if m else set()
    cores = len(re.findall(r"^processor\s*:", text, re.M))
    want = ["avx2", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16"]
    have = [f"{f} {'yes' if f in flags else 'no'}" for f in want]
    return f"{name.group(1).strip() if name else 'unknown CPU'}; {cores} logical cores; " + ", ".join(have)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seam", default=os.path.join(ROOT, "build", "seam"))
    ap.add_argument("--models", default=os.path.join(ROOT, "build", "quant-bench-models"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pause", type=float, default=2)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--target", default="dnnl", help="seam's target: dnnl (default) or cpu (the CPU kernels, no --target)")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    names = a.names or subprocess.run([sys.executable, GEN, "--list"], capture_output=True, text=True,
                                      check=True).stdout.split()
    subprocess.run([sys.executable, GEN, a.models, "--bench", "--seam", a.seam, "--only", ",".join(names)], check=True)
    if not os.path.isdir(os.path.join(ORT, "node_modules", "onnxruntime-node")):
        subprocess.run(["npm", "install", "--ignore-scripts"], cwd=ORT, check=True, capture_output=True)
    print(f"CPU: {cpu_features()}")
    print(f"seam {a.seam} (target {a.target}); ONNX Runtime {ORT} (CPU provider); {a.threads} threads, best of {a.rounds} rounds "
          f"of the median of {a.repeat} runs\n")

    def seam_ms(model, inp, input_name):
        tgt = [] if a.target == "cpu" else ["--target", a.target]
        rc, text = run([a.seam, "run", model, "--input", f"{input_name}={inp}", *tgt,
                        "--repeat", str(a.repeat), "--threads", str(a.threads), "--quiet"])
        return (median_of(text) if rc == 0 else None), text

    def ort_ms(model, inp):
        rc, text = run(["node", os.path.join(ORT, "ort_run.js"), model, inp, "--repeat", str(a.repeat),
                        "--threads", str(a.threads)])
        return (median_of(text) if rc == 0 else None), text

    head = ("| model | seam int8 ms | ORT int8 ms | seam / ORT | seam fp32 ms | ORT fp32 ms | "
            "seam fp32 / int8 | ORT fp32 / int8 |")
    if a.check:
        head += " int8 vs ORT (quanta) |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    ratios, speedups = [], []
    for name in names:
        info = json.load(open(os.path.join(a.models, name + ".json")))
        q, f = os.path.join(a.models, info["model"]), os.path.join(a.models, info["float_model"])
        inp, iname = os.path.join(a.models, info["input"]), info["input_name"]
        time.sleep(a.pause)
        best = {"s8": math.inf, "o8": math.inf, "s32": math.inf, "o32": math.inf}
        note = ""
        for _ in range(a.rounds):
            for key, fn in (("s8", lambda: seam_ms(q, inp, iname)), ("o8", lambda: ort_ms(q, inp)),
                            ("s32", lambda: seam_ms(f, inp, iname)), ("o32", lambda: ort_ms(f, inp))):
                ms, text = fn()
                if ms is None:
                    note = f"{key} fails: " + (text.strip().splitlines() or [""])[-1][:100]
                    break
                best[key] = min(best[key], ms)
            if note:
                break
        if note:
            print(f"| {name} | {note} | | | | | | |")
            continue
        ratio, sp, osp = best["s8"] / best["o8"], best["s32"] / best["s8"], best["o32"] / best["o8"]
        ratios.append((ratio, name))
        speedups.append((sp, name))
        line = (f"| {name} | {best['s8']:.3f} | {best['o8']:.3f} | {ratio:.2f} | {best['s32']:.3f} | "
                f"{best['o32']:.3f} | {sp:.2f}x | {osp:.2f}x |")
        if a.check:
            with tempfile.TemporaryDirectory() as d:
                rc, text = run([a.seam, "run", q, "--input", f"{iname}={inp}",
                                *([] if a.target == "cpu" else ["--target", a.target]), "--output-dir",
                                os.path.join(d, "s"), "--quiet"])
                # (without VNNI ONNX Runtime's u8 x s8 kernels saturate: the
                # reference is then its exact run of the same model with the
                # int8 weights as uint8 + 128, tests/lib/seamtest.py)
                ref_model = q
                if not seamtest.cpu_has_vnni():
                    ref_model = seamtest.u8_weights_copy(q, os.path.join(d, "u8.onnx")) or q
                rc2, text2 = run(["node", os.path.join(ORT, "ort_run.js"), ref_model, inp, "--repeat", "1", "--threads",
                                  str(a.threads), "--out", os.path.join(d, "o.bin")])
                if rc or rc2:
                    line += " fails |"
                else:
                    got = np.load(os.path.join(d, "s", os.listdir(os.path.join(d, "s"))[0]))
                    ref = np.fromfile(os.path.join(d, "o.bin"), np.float32).reshape(got.shape)
                    line += f" {np.abs(got.astype(np.float64) - ref).max() / info['output_scale']:.2f} |"
        print(line, flush=True)
    if ratios:
        worst, wsp = max(ratios), min(speedups)
        print(f"\n{len(ratios)} of {len(names)} models ran. seam int8 / ORT int8: geometric mean "
              f"{geomean([r for r, _ in ratios]):.2f}, worst {worst[0]:.2f} ({worst[1]}), at or below 1.0: "
              f"{sum(r <= 1.0 for r, _ in ratios)}. seam fp32 / seam int8: geometric mean "
              f"{geomean([s for s, _ in speedups]):.2f}x, worst {wsp[0]:.2f}x ({wsp[1]}).")


if __name__ == "__main__":
    main()
