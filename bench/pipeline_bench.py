"""Pipeline stages on MPI (issue 34): measured throughput for 1, 2 and 3
stages of one model on this machine.

usage: /usr/bin/python3 bench/pipeline_bench.py [--seam build/seam]
           [--layers 24] [--hidden 1024] [--rows 16] [--stages 1,2,3]
           [--threads 1] [--rounds 3] [--work /tmp/pipeline-bench]

The model: an MLP of LAYERS MatMul + Add (+ Relu) layers of HIDDEN x HIDDEN
float32 weights (24 x 1024: 96 MiB), random weights. For each stage count
N: `seam partition --stages N -o`, then `mpirun --oversubscribe -np N seam
run --micro-batches M --stage-report --threads T` with M micro-batches of
ROWS rows, for M = 8 and M = 64. A job's time includes starting the
processes, loading each stage and compiling on the first micro-batch; the
difference of the two runs' pipeline times (rank 0's "M micro-batches in X
ms") over the 56 extra micro-batches is the steady-state time per
micro-batch, whatever that start costs. Prints, per N, the time per
micro-batch, rows per second, and each rank's computing and waiting
shares in the long run; best of ROUNDS. One process with the whole model
(`seam run --ignore-stages` of the 1-stage file: no MPI) is the baseline.

On a 2-core machine two ranks use both cores and a third shares them:
the figures say what the pipeline costs, not what more hosts would give
(`seam partition --stages N --simulate` estimates that).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
from seamtest import mlp_model  # noqa: E402


REPORT = re.compile(r"rank (\d+) of \d+: .*?(\d+) micro-batches in ([0-9.]+) ms \(computing ([0-9.]+) ms, "
                    r"waiting ([0-9.]+) ms\)")


def staged_run(a, model, n, x, m):
    cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(n), a.seam, "run", model, "--input",
           f"x={x}", "--micro-batches", str(m), "--stage-report", "--threads", str(a.threads)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode:
        sys.exit(f"pipeline_bench: {' '.join(cmd)} failed: {r.stderr[-500:]}")
    ranks = {int(g[0]): (float(g[2]), float(g[3]), float(g[4])) for g in REPORT.findall(r.stderr)}
    if len(ranks) != n:
        sys.exit(f"pipeline_bench: no stage report from every rank: {r.stderr[-500:]}")
    return ranks


def single_run(a, model, x, repeat):
    r = subprocess.run([a.seam, "run", model, "--ignore-stages", "--input", f"x={x}", "--threads", str(a.threads),
                        "--repeat", str(repeat)], capture_output=True, text=True, timeout=600)
    got = re.search(r"median ([0-9.]+) ms", r.stdout + r.stderr)
    if r.returncode or not got:
        sys.exit(f"pipeline_bench: the one-process run failed: {(r.stdout + r.stderr)[-500:]}")
    return float(got.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seam", default="build/seam")
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--stages", default="1,2,3")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default="/tmp/pipeline-bench")
    a = ap.parse_args()
    if not shutil.which("mpirun"):
        sys.exit("pipeline_bench: mpirun not found (scripts/setup.sh installs Open MPI)")
    a.seam = os.path.abspath(a.seam)
    os.makedirs(a.work, exist_ok=True)
    base = os.path.join(a.work, "mlp.onnx")
    mlp_model(base, a.layers, a.hidden)
    rng = np.random.default_rng(1)
    xs = {}
    for m in (8, 64):
        xs[m] = os.path.join(a.work, f"x{m}.npy")
        np.save(xs[m], rng.standard_normal((m * a.rows, a.hidden)).astype(np.float32))
    print(f"model: {a.layers} layers of {a.hidden} x {a.hidden} float32 "
          f"({os.path.getsize(base) / 2**20:.0f} MiB); micro-batches of {a.rows} rows; {a.threads} thread(s) a rank; "
          f"{os.cpu_count()} cores")
    one = None
    for n in [int(s) for s in a.stages.split(",")]:
        staged = os.path.join(a.work, f"mlp.{n}.onnx")
        r = subprocess.run([a.seam, "partition", base, "--stages", str(n), "-o", staged], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"pipeline_bench: partition --stages {n} failed: {r.stderr[-400:]}")
        if one is None:  # the baseline: one process, the whole model, one micro-batch's rows
            xb = os.path.join(a.work, "x1.npy")
            np.save(xb, rng.standard_normal((a.rows, a.hidden)).astype(np.float32))
            one = min(single_run(a, staged, xb, 50) for _ in range(a.rounds))
            print(f"one process, no MPI: {one:.3f} ms per {a.rows} rows ({1e3 * a.rows / one:.0f} rows/s)")
        best = None
        for _ in range(a.rounds):
            short, long_ = staged_run(a, staged, n, xs[8], 8), staged_run(a, staged, n, xs[64], 64)
            per = (long_[0][0] - short[0][0]) / 56
            if best is None or per < best[0]:
                best = (per, long_)
        per, long_ = best
        shares = ", ".join(f"rank {r}: computing {c / t:.0%}, waiting {w / t:.0%}" for r, (t, c, w) in sorted(long_.items()))
        print(f"{n} stage{'s' if n > 1 else ''}: {per:.3f} ms per micro-batch ({1e3 * a.rows / per:.0f} rows/s, "
              f"{one / per:.2f}x one process); 64 micro-batches: {shares}")


if __name__ == "__main__":
    main()
