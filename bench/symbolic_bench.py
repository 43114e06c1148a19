"""Models with symbolic input dims, partitioned without their shapes, against
the same models with the shapes fixed and against ONNX Runtime (issue 31
item 3: shape arithmetic computed from the input shapes, never cutting a
device subgraph).

usage: /usr/bin/python3 bench/symbolic_bench.py [--seam build/seam] [--baseline OLD_SEAM]
           [--models DIR]... [--target dnnl] [--rounds 3] [--repeat 10] [--threads 2] [--pause 1] [NAME...]

For every model of the folders whose inputs have a named symbolic dim (and
an input file NAME.INPUT.npy, as bench/unseen_models.py writes them), at
the input file's shape and at a second shape with each symbolic axis
halved (the file's data sliced):

  symbolic   `seam partition M --target T -o P` (no shapes), then `seam run P
             --input ...`: the saved plan, specialized per run
  baseline   the same with --baseline (another build), when given
  fixed      `seam run M --target T --input ...`: the shapes fixed from the
             input files before partitioning (everything folds)
  ort        ONNX Runtime (bench/ort/ort_run.js, all graph optimizations)

Each round runs every side once (`--repeat N` runs, the median), sides
alternating; each keeps its best median. Prints the device subgraph counts
of the symbolic plans and of the fixed one, the times, and symbolic / ORT,
symbolic / fixed (and baseline / ORT); then geometric means and worst.
Outputs of the symbolic run are compared with ONNX Runtime's.
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
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ORT = os.path.join(HERE, "ort")


def run(cmd, timeout=900):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, "timeout"
    return r.returncode, r.stdout + r.stderr


def median_of(text):
    m = re.search(r"median ([0-9.]+) ms", text)
    return float(m.group(1)) if m else None


def symbolic_inputs(path):
    g = onnx.load(path, load_external_data=False).graph
    inits = {i.name for i in g.initializer}
    out = []
    for i in g.input:
        if i.name in inits:
            continue
        axes = [k for k, d in enumerate(i.type.tensor_type.shape.dim) if d.dim_param]
        out.append((i.name, axes))
    return out if any(a for _, a in out) else None


def device_subgraphs(seam, path, target, *extra):
    rc, text = run([seam, "partition", path, "--target", target, "--json", *extra])
    if rc:
        return None
    p = json.loads(text[:text.rindex("}") + 1])
    return sum(1 for s in p["subgraphs"] if s["target"] != "cpu")


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seam", default="build/seam")
    ap.add_argument("--baseline")
    ap.add_argument("--models", action="append")
    ap.add_argument("--target", default="dnnl")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pause", type=float, default=1)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    dirs = a.models or ["/work/bench-unseen"]
    if not os.path.isdir(os.path.join(ORT, "node_modules", "onnxruntime-node")):
        subprocess.run(["npm", "install", "--ignore-scripts"], cwd=ORT, check=True, capture_output=True)
    timing = ["--repeat", str(a.repeat), "--threads", str(a.threads)]
    rows = []
    work = tempfile.mkdtemp(prefix="symbench.")
    for d in dirs:
        for f in sorted(os.listdir(d)):
            name = f[:-5]
            if not f.endswith(".onnx") or (a.names and name not in a.names):
                continue
            path = os.path.join(d, f)
            ins = symbolic_inputs(path)
            if not ins or not all(os.path.exists(os.path.join(d, f"{name}.{n}.npy")) for n, _ in ins):
                continue
            seams = {"symbolic": a.seam, **({"baseline": a.baseline} if a.baseline else {})}
            parts, counts = {}, {}
            for side, exe in seams.items():
                parts[side] = os.path.join(work, f"{name}.{side}.onnx")
                rc, text = run([exe, "partition", path, "--target", a.target, "-o", parts[side]])
                if rc:
                    print(f"{name}: {side}: partition failed: {text.strip()[-200:]}")
                    parts.pop(side)
                counts[side] = device_subgraphs(exe, path, a.target)
            for half in (False, True):
                feeds, shape = {}, None
                for n, axes in ins:
                    x = np.load(os.path.join(d, f"{name}.{n}.npy"))
                    if half:
                        x = x[tuple(slice(0, max(1, x.shape[k] // 2)) if k in axes else slice(None)
                                    for k in range(x.ndim))]
                    feeds[n] = os.path.join(work, f"{name}.{n}.{int(half)}.npy")
                    np.save(feeds[n], np.ascontiguousarray(x))
                    shape = shape or "x".join(map(str, x.shape))
                shapes = [s for n, f in feeds.items()
                          for s in ("--shape", f"{n}={'x'.join(map(str, np.load(f, mmap_mode='r').shape))}")]
                counts["fixed"] = device_subgraphs(a.seam, path, a.target, *shapes)
                inputs = [s for n, f in feeds.items() for s in ("--input", f"{n}={f}")]
                first = list(feeds.values())[0]
                rest = [s for n, f in list(feeds.items())[1:] for s in ("--input", f"{n}={f}")]
                sides = {s: [seams[s], "run", parts[s], *inputs, "--quiet", *timing] for s in parts}
                sides["fixed"] = [a.seam, "run", path, "--target", a.target, *inputs, "--quiet", *timing]
                sides["ort"] = ["node", os.path.join(ORT, "ort_run.js"), path, first, *rest, *timing]
                best = {s: math.inf for s in sides}
                for _ in range(a.rounds):
                    for s, cmd in sides.items():
                        time.sleep(a.pause / 4)
                        rc, text = run(cmd)
                        ms = median_of(text) if rc == 0 else None
                        if ms is None:
                            print(f"{name} {s}: failed ({rc}): {text.strip()[-200:]}")
                        else:
                            best[s] = min(best[s], ms)
                # outputs: the symbolic run against ONNX Runtime's
                od, oo = os.path.join(work, f"{name}.{int(half)}.seam"), os.path.join(work, f"{name}.{int(half)}.ort")
                run([a.seam, "run", parts.get("symbolic", path), *inputs, "--quiet", "--output-dir", od])
                run(["node", os.path.join(ORT, "ort_run.js"), path, first, *rest, "--repeat", "1", "--out-dir", oo])
                err = 0.0
                for g in (sorted(os.listdir(oo)) if os.path.isdir(oo) else []):
                    r, y = np.load(os.path.join(oo, g)), np.load(os.path.join(od, g)) if os.path.exists(
                        os.path.join(od, g)) else None
                    err = max(err, float("inf") if y is None or y.shape != r.shape else
                              float(np.abs(y.astype(np.float64) - r).max() / max(np.abs(r).max(), 1e-30)))
                row = dict(name=name, shape=shape, counts=dict(counts), best=best, err=err)
                rows.append(row)
                b = {k: best.get(k, math.inf) for k in ("baseline", "symbolic", "fixed", "ort")}
                print(f"| {name} | {shape} | {counts.get('baseline', '')} / {counts.get('symbolic')} / {counts.get('fixed')} "
                      f"| {b['baseline']:.3f} | {b['symbolic']:.3f} | {b['fixed']:.3f} | {b['ort']:.3f} "
                      f"| {b['symbolic'] / b['ort']:.2f} | {b['symbolic'] / b['fixed']:.2f} "
                      f"| {b['baseline'] / b['ort']:.2f} | {err:.1e} |", flush=True)
            time.sleep(a.pause)
    print("\ncolumns: model | shape | device subgraphs baseline / symbolic / fixed | ms baseline | ms symbolic | "
          "ms fixed | ms ORT | symbolic / ORT | symbolic / fixed | baseline / ORT | max error against ORT")
    for key, label in (("symbolic", "symbolic / ORT"), ("baseline", "baseline / ORT")):
        rs = [(r["best"][key] / r["best"]["ort"], r["name"] + " " + r["shape"]) for r in rows
              if key in r["best"] and math.isfinite(r["best"][key]) and math.isfinite(r["best"]["ort"])]
        if rs:
            rs.sort(reverse=True)
            print(f"{label}: geometric mean {geomean([x for x, _ in rs]):.2f}, worst {rs[0][1]} {rs[0][0]:.2f}")
    rs = [r["best"]["symbolic"] / r["best"]["fixed"] for r in rows
          if math.isfinite(r["best"].get("symbolic", math.inf)) and math.isfinite(r["best"]["fixed"])]
    if rs:
        print(f"symbolic / fixed: geometric mean {geomean(rs):.2f}, worst {max(rs):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
