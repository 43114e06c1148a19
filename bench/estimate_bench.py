"""The cost model's estimates against measured times (issue 31, item 4).

usage: /usr/bin/python3 bench/estimate_bench.py [--seam build/seam]
           [--calibrate M1.onnx,M2.onnx,...] [--models DIR] [--names a,b,...]
           [--repeat N] [--threads T] [--timeout S] [--cache DIR]

First `seam calibrate --target dnnl` on the calibration models (their
inputs random; the CPU's rates, and dnnl's measured scale),
into a cache folder of the benchmark's own (SEAM_CACHE_DIR=--cache), so
that nothing the user keeps is touched. Then for each model of DIR (a
bench/unseen_models.py or bench/bench_models.py folder: NAME.onnx with
NAME.INPUT.npy), none of them a calibration model: `seam partition M
--target dnnl --json` with the built-in guesses (SEAM_COST_RATES=off) and
with the calibrated rates, and `seam run M --repeat N` on the CPU and on
--target dnnl. Prints, per model, the estimates over the measured medians
(the plan on dnnl, and all on the CPU), before and after calibration; then
the geometric mean of |log ratio| as a factor, the worst, and how many are
within 2x.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import onnx


def run(cmd, env=None, timeout=600):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    return r.returncode, r.stdout + r.stderr


def inputs_of(models, name):
    path = os.path.join(models, name + ".onnx")
    g = onnx.load(path, load_external_data=False).graph
    inits = {i.name for i in g.initializer}
    feeds, shapes = [], []
    for i in g.input:
        if i.name in inits:
            continue
        f = os.path.join(models, f"{name}.{i.name}.npy")
        if not os.path.exists(f):
            f = os.path.join(models, f"{name}.input.npy")
        feeds += ["--input", f"{i.name}={f}"]
        shapes += ["--shape", f"{i.name}=" + "x".join(str(d) for d in np.load(f, mmap_mode="r").shape)]
    return path, feeds, shapes


def median_ms(text):
    m = re.search(r"median ([0-9.]+) ms", text or "")
    return float(m.group(1)) if m else None


def fmt(x):
    return "-" if x is None else f"{x:.2f}"


def summary(ratios):
    rs = [r for r in ratios if r]
    if not rs:
        return "none"
    f = math.exp(sum(abs(math.log(r)) for r in rs) / len(rs))
    worst = max(rs, key=lambda r: abs(math.log(r)))
    within = sum(1 for r in rs if 0.5 <= r <= 2)
    return f"typical factor {f:.2f}, worst {worst:.2f}, within 2x {within} of {len(rs)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seam", default="build/seam")
    ap.add_argument("--calibrate", default="build/models/resnet18.onnx,build/models/mobilenet_v2.onnx,"
                    "build/models/transformer_encoder.onnx,build/models/lstm_classifier.onnx")
    ap.add_argument("--models", default="/work/bench-unseen")
    ap.add_argument("--names", default="")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--cache", default="/tmp/seam-estimate-bench-cache")
    a = ap.parse_args()
    os.makedirs(a.cache, exist_ok=True)
    env = dict(os.environ, SEAM_CACHE_DIR=a.cache)
    env_off = dict(env, SEAM_COST_RATES="off")
    thr = ["--threads", str(a.threads)] if a.threads else []
    rc, text = run([a.seam, "calibrate", *a.calibrate.split(","), "--repeat", "10", "--target", "dnnl", *thr], env,
                   a.timeout)
    print(text.strip())
    if rc != 0:
        sys.exit("calibration failed")
    calib = {os.path.splitext(os.path.basename(p))[0] for p in a.calibrate.split(",")}
    names = a.names.split(",") if a.names else sorted(f[:-5] for f in os.listdir(a.models) if f.endswith(".onnx"))
    rows = []
    for name in names:
        if name in calib:
            continue
        path, feeds, shapes = inputs_of(a.models, name)
        est = {}
        for label, e in (("before", env_off), ("after", env)):
            rc, t = run([a.seam, "partition", path, "--target", "dnnl", "--json", *shapes], e, a.timeout)
            if rc == 0:
                p = json.loads(t[t.index("{"):])
                est[label] = (p["estimate"]["plan_us"] / 1e3, p["estimate"]["all_cpu_us"] / 1e3)
        meas = {}
        for label, extra in (("cpu", []), ("dnnl", ["--target", "dnnl"])):
            rc, t = run([a.seam, "run", path, *feeds, "--repeat", str(a.repeat), *thr, *extra], env, a.timeout)
            meas[label] = median_ms(t) if rc == 0 else None
        row = {"name": name, "cpu_ms": meas["cpu"], "dnnl_ms": meas["dnnl"]}
        for label in ("before", "after"):
            if label in est and meas["dnnl"]:
                row[f"dnnl_{label}"] = est[label][0] / meas["dnnl"]
            if label in est and meas["cpu"]:
                row[f"cpu_{label}"] = est[label][1] / meas["cpu"]
        rows.append(row)
        print(f"{name:22s} cpu {fmt(meas['cpu']):>9} ms  est/meas before {fmt(row.get('cpu_before')):>6} "
              f"after {fmt(row.get('cpu_after')):>6} | dnnl {fmt(meas['dnnl']):>9} ms  est/meas before "
              f"{fmt(row.get('dnnl_before')):>6} after {fmt(row.get('dnnl_after')):>6}", flush=True)
    for col in ("cpu_before", "cpu_after", "dnnl_before", "dnnl_after"):
        print(f"{col:12s}: {summary([r.get(col) for r in rows])}")


if __name__ == "__main__":
    main()
