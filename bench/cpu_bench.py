"""seam's CPU kernels (`seam run` without a target) against ONNX Runtime's
CPU provider on the benchmark set (bench/bench_models.py), the two
alternating per round.

usage: /usr/bin/python3 bench/cpu_bench.py [--seam build/seam] [--models DIR]
           [--baseline OTHER_SEAM] [--rounds 3] [--repeat 10] [--threads 2]
           [--pause 2] [NAME...]

Each round runs `seam run MODEL --repeat N --threads T` then ONNX Runtime
(bench/ort/ort_run.js, same input, same thread count); each side's latency
is the median over the rounds of each run's median (the machine may be
shared: alternating and medians keep a burst of load from landing on one
side only). Prints a markdown table (seam ms, ORT ms, seam / ORT), then the
worst ratio and the geometric mean. --baseline runs a second seam binary
(e.g. main's) in each round too and adds its columns: before and after
measured side by side.
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
    ap.add_argument("--baseline", help="another seam binary to run alongside (its ratio is a second column)")
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
    seams = ([("baseline", a.baseline)] if a.baseline else []) + [("seam", a.seam)]
    if a.baseline:
        print("| model | baseline ms | seam ms | ORT ms | baseline / ORT | seam / ORT |")
        print("|---|---|---|---|---|---|")
    else:
        print("| model | seam ms | ORT ms | seam / ORT |")
        print("|---|---|---|---|")
    ratios = {label: [] for label, _ in seams}

    def seam_ms(binary, model, inp):
        rc, text = run([binary, "run", model, "--input", f"input={inp}", "--repeat", str(a.repeat), "--threads",
                        str(a.threads), "--quiet"])
        return (median_of(text) if rc == 0 else None), text

    for name in names:
        model, inp = os.path.join(a.models, name + ".onnx"), os.path.join(a.models, name + ".input.npy")
        time.sleep(a.pause)
        times = {label: [] for label, _ in seams}
        times["ORT"] = []
        note = ""
        for _ in range(a.rounds):
            for label, binary in seams:
                ms, text = seam_ms(binary, model, inp)
                if ms is None:
                    note = f"{label} fails: " + text.strip().splitlines()[-1][:100]
                    break
                times[label].append(ms)
            if note:
                break
            rc, text = run(["node", os.path.join(ort, "ort_run.js"), model, inp, "--repeat", str(a.repeat), "--threads",
                            str(a.threads)])
            o = median_of(text) if rc == 0 else None
            if o is None:
                note = "ORT fails: " + text.strip().splitlines()[-1][:100]
                break
            times["ORT"].append(o)
        if note:
            print(f"| {name} | {note} |" + " |" * (2 * len(seams)), flush=True)
            continue
        med = {label: statistics.median(v) for label, v in times.items()}
        cells = [f"{med[label]:.2f}" for label, _ in seams] + [f"{med['ORT']:.2f}"]
        for label, _ in seams:
            ratios[label].append((med[label] / med["ORT"], name))
            cells.append(f"{med[label] / med['ORT']:.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print()
    for label, _ in seams:
        if ratios[label]:
            gm, worst = geomean_worst(ratios[label])
            print(f"{label}: {len(ratios[label])} of {len(names)} models ran; {label}/ORT geometric mean {gm:.2f}, "
                  f"worst {worst[0]:.2f} ({worst[1]}), at or below 2.0: {sum(r <= 2.0 for r, _ in ratios[label])}")


if __name__ == "__main__":
    main()
