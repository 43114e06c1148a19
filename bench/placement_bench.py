"""Placement by cost against the two single-backend plans, measured: for each
model, `seam run --target dnnl` (placement by cost, the default), the same
with `--placement capability` (everything dnnl supports on dnnl) and
`seam run` without a target (all on the CPU), alternating, best median over
the rounds. Reports cost / min(cpu, capability) per model, the worst and
the geometric mean (issue 12's bar: at most 1.05 on every model).

usage: /usr/bin/python3 bench/placement_bench.py [--seam build/seam]
           [--models build/models] [--rounds 3] [--repeat 20] [--threads 2] [NAME...]
"""
import argparse
import glob
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dnnl_bench import geomean_worst, median_of, run  # noqa: E402


def median_ms(cmd):
    rc, text = run(cmd)
    return median_of(text) if rc == 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seam", default="build/seam")
    ap.add_argument("--models", default="build/models")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    paths = sorted(glob.glob(os.path.join(a.models, "*.onnx")))
    if a.names:
        paths = [p for p in paths if os.path.basename(p)[:-5] in a.names]
    modes = {"cost": ["--target", "dnnl"], "capability": ["--target", "dnnl", "--placement", "capability"], "cpu": []}
    print("| model | cpu ms | dnnl capability ms | dnnl cost ms | cost / best single |")
    print("|---|---|---|---|---|")
    ratios = []
    for path in paths:
        name = os.path.basename(path)[:-5]
        inp = path[:-5] + ".input.npy"
        if not os.path.exists(inp):
            continue
        best = {k: math.inf for k in modes}
        for _ in range(a.rounds):
            for mode, extra in modes.items():
                t = median_ms([a.seam, "run", path, "--input", f"input={inp}", "--repeat", str(a.repeat), "--threads",
                               str(a.threads), "--quiet", *extra])
                if t is not None:
                    best[mode] = min(best[mode], t)
        single = min(best["cpu"], best["capability"])
        r = best["cost"] / single
        ratios.append((r, name))
        print(f"| {name} | {best['cpu']:.3f} | {best['capability']:.3f} | {best['cost']:.3f} | {r:.2f} |", flush=True)
    if ratios:
        gm, w = geomean_worst(ratios)
        print(f"\n{len(ratios)} models: cost / best single backend: geometric mean {gm:.3f}, worst {w[0]:.3f} ({w[1]}), "
              f"at most 1.05: {sum(r <= 1.05 for r, _ in ratios)}")


if __name__ == "__main__":
    main()
