"""Runs the exported real models with `seam run` and compares every output
with torch's own (NAME.expected.<k>.npy, written by gen_models.py).

usage: /usr/bin/python3 check_run.py SEAM WORKDIR MODEL.onnx...

Float outputs must agree within 1e-4 relative to the output's scale:
max|seam - torch| <= 1e-4 * max(max|torch|, 1e-6). Integer outputs (TopK
indices) must be equal. A model with symbolic input dims is run with
--shape taken from its input file. Each model runs twice: the outputs of
the two runs must be bitwise equal (determinism), once with --threads 1
and once with the default pool.
"""
import os
import subprocess
import sys

import numpy as np
import onnx

seam, work, models = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(work, exist_ok=True)
RTOL = 1e-4
bad = 0


def safe(name):
    s = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    return s if s not in ("", ".", "..") else "output"


for path in models:
    base, name = path[:-5], os.path.basename(path)[:-5]
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    feeds = [i for i in m.graph.input if i.name not in inits]
    if len(feeds) != 1 or not os.path.exists(base + ".input.npy"):
        print(f"skip {name}: not one input with an input file")
        continue
    x = np.load(base + ".input.npy")
    cmd = [seam, "run", path, "--input", f"{feeds[0].name}={base}.input.npy"]
    if any(not d.HasField("dim_value") for d in feeds[0].type.tensor_type.shape.dim):
        cmd += ["--shape", f"{feeds[0].name}=" + "x".join(str(d) for d in x.shape)]
    results = []
    for run, threads in enumerate(["1", "0"]):
        out = os.path.join(work, f"{name}.{run}")
        os.makedirs(out, exist_ok=True)
        r = subprocess.run(cmd + ["--output-dir", out, "--threads", threads], capture_output=True, text=True)
        if r.returncode != 0:
            results = None
            print(f"FAIL {name}: seam run exit {r.returncode}: {r.stderr.strip()[:400]}")
            break
        results.append([np.load(os.path.join(out, safe(o.name) + ".npy")) for o in m.graph.output])
    if results is None:
        bad += 1
        continue
    problems = []
    worst = 0.0
    for k, o in enumerate(m.graph.output):
        f = f"{base}.expected.{k}.npy"
        if not os.path.exists(f):
            continue
        want, got = np.load(f), results[0][k]
        if got.shape != want.shape:
            problems.append(f"output '{o.name}': shape {got.shape}, torch {want.shape}")
            continue
        if not np.array_equal(results[0][k], results[1][k], equal_nan=True):
            problems.append(f"output '{o.name}': --threads 1 and the default pool differ")
        if np.issubdtype(want.dtype, np.floating):
            scale = max(float(np.abs(want).max()) if want.size else 0.0, 1e-6)
            err = float(np.abs(got.astype(np.float64) - want).max()) / scale if want.size else 0.0
            worst = max(worst, err)
            if not err <= RTOL:
                problems.append(f"output '{o.name}': max error {err:.3g} of the output's scale (limit {RTOL})")
        elif not np.array_equal(got, want):
            problems.append(f"output '{o.name}': {int((got != want).sum())} of {want.size} values differ")
    print(f"{'FAIL' if problems else 'ok  '} {name}: {len(m.graph.output)} outputs, worst relative error {worst:.2e}")
    for p in problems:
        print("     ", p)
    bad += bool(problems)
sys.exit(1 if bad else 0)
