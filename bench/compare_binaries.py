#!/usr/bin/env python3
"""Latency of two seam binaries side by side, on every exported test model,
on the CPU kernels and with --target dnnl: did a change make anything slower?

    /usr/bin/python3 bench/compare_binaries.py OLD_SEAM NEW_SEAM MODELS_DIR [ROUNDS]

For each model and mode the two binaries alternate, ROUNDS times each
(default 3), `seam run --repeat 10 --threads 2`; each keeps its best median
(the machine is shared and noisy). Prints a table of new/old ratios, then
the worst ratio and the geometric mean per mode.
"""
import glob, math, os, re, subprocess, sys


def median_ms(seam, model, extra):
    r = subprocess.run([seam, "run", model, "--input", f"input={model[:-5]}.input.npy", "--repeat", "10",
                        "--threads", "2", *extra], capture_output=True, text=True, timeout=900)
    m = re.search(r"median ([0-9.]+) ms", r.stdout + r.stderr)
    if r.returncode or not m:
        sys.exit(f"{seam} on {model}: exit {r.returncode}: {r.stderr.strip()[:300]}")
    return float(m.group(1))


def main():
    old, new, models_dir = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    modes = {"cpu": [], "dnnl": ["--target", "dnnl"]}
    ratios = {m: [] for m in modes}
    print("| model | mode | old ms | new ms | new / old |")
    print("|---|---|---|---|---|")
    for model in sorted(glob.glob(os.path.join(models_dir, "*.onnx"))):
        if not os.path.exists(model[:-5] + ".input.npy"):
            continue
        for mode, extra in modes.items():
            best = {old: math.inf, new: math.inf}
            for _ in range(rounds):
                for b in (old, new):
                    best[b] = min(best[b], median_ms(b, model, extra))
            r = best[new] / best[old]
            ratios[mode].append((r, os.path.basename(model)[:-5]))
            print(f"| {os.path.basename(model)[:-5]} | {mode} | {best[old]:.3f} | {best[new]:.3f} | {r:.2f} |", flush=True)
    for mode, rs in ratios.items():
        worst = max(rs)
        gm = math.exp(sum(math.log(r) for r, _ in rs) / len(rs))
        print(f"{mode}: {len(rs)} models, geometric mean new/old {gm:.3f}, worst {worst[0]:.2f} ({worst[1]})")


if __name__ == "__main__":
    main()
