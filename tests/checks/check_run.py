"""Runs the exported real models with `seam run` and compares every output
with torch's own (NAME.expected.<k>.npy, written by gen_models.py).

usage: /usr/bin/python3 check_run.py SEAM WORKDIR MODEL.onnx... [-k PATTERN]

Float outputs must agree within 1e-4 relative to the output's scale:
max|seam - torch| <= 1e-4 * max(max|torch|, 1e-6), where a NaN or an
infinity that torch does not have at that place is an infinite error
(seamtest.rel_err). Integer outputs (TopK indices) must be equal. A model with symbolic input dims is run with
--shape taken from its input file. Each model runs twice: the outputs of
the two runs must be bitwise equal (determinism), once with --threads 1
and once with the default pool. A case is a model, named by its file name
without .onnx.
"""
import os
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

parser = seamtest.arg_parser(__doc__)
parser.add_argument("seam", metavar="SEAM")
parser.add_argument("work", metavar="WORKDIR")
parser.add_argument("models", metavar="MODEL.onnx", nargs="+")
args = parser.parse_args()
seam, work, models = seamtest.Program(args.seam), args.work, args.models
check = seamtest.Checker("run", args.k)
os.makedirs(work, exist_ok=True)
RTOL = 1e-4

for path in models:
    base, name = path[:-5], os.path.basename(path)[:-5]
    if not check.selected(name):
        continue
    m = onnx.load(path, load_external_data=False)
    feeds = seamtest.feeds(m)
    if len(feeds) != 1 or not os.path.exists(base + ".input.npy"):
        print(f"skip {name}: not one input with an input file")
        continue
    x = np.load(base + ".input.npy")
    cmd = ["run", path, "--input", f"{feeds[0].name}={base}.input.npy"]
    if seamtest.has_symbolic_dims(feeds[0]):
        cmd += ["--shape", f"{feeds[0].name}=" + seamtest.shape_arg(x.shape)]
    results = []
    for run, threads in enumerate(["1", "0"]):
        out = os.path.join(work, f"{name}.{run}")
        os.makedirs(out, exist_ok=True)
        r = seam(*cmd, "--output-dir", out, "--threads", threads)
        if r.returncode != 0:
            results = None
            check.fail(f"{name}: seam run exit {r.returncode}: {r.stderr.strip()[:400]}")
            break
        results.append(seamtest.load_outputs(m, out))
    if results is None:
        continue
    problems = []
    errs = []
    for k, o in enumerate(m.graph.output):
        f = f"{base}.expected.{k}.npy"
        if not os.path.exists(f):
            continue
        want, got = np.load(f), results[0][k]
        if got.shape != want.shape:
            problems.append(f"output '{o.name}': shape {got.shape}, torch {want.shape}")
            errs.append(float("inf"))
            continue
        if not np.array_equal(results[0][k], results[1][k], equal_nan=True):
            problems.append(f"output '{o.name}': --threads 1 and the default pool differ")
        # (a NaN or an infinity where torch has none is an infinite error)
        err = seamtest.out_err(got, want)
        errs.append(err)
        if not err <= RTOL:
            problems.append(f"output '{o.name}': max error {err:.3g} of the output's scale (limit {RTOL})"
                            if np.issubdtype(want.dtype, np.floating) else
                            f"output '{o.name}': {int((got != want).sum())} of {want.size} values differ")
    worst = seamtest.worst(errs)
    if check.expect(not problems, f"{name}: {len(m.graph.output)} outputs, worst relative error {worst:.2e}"):
        continue
    for p in problems:
        print("     ", p)
check.finish()
