"""seam's CPU kernels (`seam run` without a target) against ONNX Runtime's
CPU provider on the benchmark set (bench/bench_models.py), the two
alternating per round.

usage: /usr/bin/python3 bench/cpu_bench.py [--seam build/seam] [--models DIR]
           [--rounds 3] [--repeat 10] [--threads 2] [--pause 2] [NAME...]

Each round runs `seam run MODEL --repeat N --threads T` then ONNX Runtime
(bench/ort/ort_run.js, same input, same thread count); each side's latency
is the median over the rounds of each run's median (the machine may be
shared: alternating and medians keep a burst of load from landing on one
side only). Prints a markdown table (seam ms, ORT ms, seam / ORT), then the
worst ratio and the geometric mean.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from dnnl_bench import geomean_worst, median_of, run  # noqa: E402
import bench_models  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seam", default="build/seam")
    ap.add_argument("--models", default="build/bench-models")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pause", type=float, default=2)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    names = a.names or list(bench_models.MODELS)
    subprocess.run(["/usr/bin/python3", os.path.join(HERE, "bench_models.py"), a.models, "--only", ",".join(names)],
                   check=True)
    ort = os.path.join(HERE, "ort")
    if not os.path.isdir(os.path.join(ort, "node_modules", "onnxruntime-node")):
        subprocess.run(["npm", "install", "--ignore-scripts"], cwd=ort, check=True, capture_output=True)
    print(f"seam CPU (no --target) vs ONNX Runtime CPU, {a.threads} threads, median of {a.rounds} alternating rounds "
          f"of {a.repeat} runs each\n")
    print("| model | seam ms | ORT ms | seam / ORT |")
    print("|---|---|---|---|")
    ratios = []
    for name in names:
        model, inp = os.path.join(a.models, name + ".onnx"), os.path.join(a.models, name + ".input.npy")
        time.sleep(a.pause)
        ss, os_, note = [], [], ""
        for _ in range(a.rounds):
            rc, text = run([a.seam, "run", model, "--input", f"input={inp}", "--repeat", str(a.repeat), "--threads",
                            str(a.threads), "--quiet"])
            s = median_of(text) if rc == 0 else None
            if s is None:
                note = "seam fails: " + text.strip().splitlines()[-1][:100]
                break
            rc, text = run(["node", os.path.join(ort, "ort_run.js"), model, inp, "--repeat", str(a.repeat), "--threads",
                            str(a.threads)])
            o = median_of(text) if rc == 0 else None
            if o is None:
                note = "ORT fails: " + text.strip().splitlines()[-1][:100]
                break
            ss.append(s)
            os_.append(o)
        if note:
            print(f"| {name} | {note} | | |", flush=True)
            continue
        s, o = statistics.median(ss), statistics.median(os_)
        ratios.append((s / o, name))
        print(f"| {name} | {s:.2f} | {o:.2f} | {s / o:.2f} |", flush=True)
    if ratios:
        gm, worst = geomean_worst(ratios)
        print(f"\n{len(ratios)} of {len(names)} models ran; seam/ORT geometric mean {gm:.2f}, worst {worst[0]:.2f} "
              f"({worst[1]}), at or below 2.0: {sum(r <= 2.0 for r, _ in ratios)}")


if __name__ == "__main__":
    main()
