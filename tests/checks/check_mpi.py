#!/usr/bin/env python3
"""Pipeline stages on MPI (docs/scale-out.md): seam partition --stages N -o
records the stages, mpirun -np N seam run runs them.

An MLP made here (24 layers of 1024 x 1024 float32: 96 MiB of weights) is
cut into 3 stages of at most 40 MiB each (the weights exceed twice a
stage's budget) and run under mpirun --oversubscribe -np 3:

  (a) its outputs equal, byte for byte, the single-process run of the same
      file (--ignore-stages) and of the same plan saved without stages;
  (a') with dnnl device subgraphs (when built), a cut inside one moves to
      its boundary, said, and the run is again bitwise the one-process run;
  (b) each rank's peak resident memory (--stage-report, getrusage) stays
      under the stage budget plus the overhead: the peak of a rank running
      a trivial staged model (Open MPI and seam's own baseline) plus 8 MiB;
      and under the whole model's weights (no rank holds them all);
  (c) --micro-batches 4 on batch 8 equals, byte for byte, the single-process
      runs of the four slices joined, and the unbatched run within float
      rounding (the CPU's GEMM sums a 2-row batch as it sums each slice,
      not always as the 8-row one);
  (d) a rank that exits, is killed, or hangs at micro-batch 2 of 4 (the
      SEAM_STAGE_FAULT test hook) ends the job with an error naming rank 1,
      killed or exited within 10 s, hung within the 10 s deadline plus the
      start;
  (e) the staged file without mpirun, with -np 2, and a plain file under
      -np 3: exit 2 with what it needs;
  (f) --micro-batches 0, 3 parts of a batch of 8, and micro-batches on a
      plain file: exit 2.

  (g) the library's pipeline over a communicator the caller split off
      (tests/drivers/mpi_pipeline.c, mpirun -np 4): repeated runs and new
      shapes bitwise against one session, micro-batches, refused inputs
      agreed by every rank, nothing on the caller's communicator, a rank
      that skips a run named within the timeout, as a status;
  (h) the same from Python (seam.Pipeline over an mpi4py communicator).

usage: check_mpi.py SEAM WORKDIR [MPI_PIPELINE]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from seamtest import mlp_model as mlp  # noqa: E402

SEAM, WORK = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
DRIVER = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else None
MPIRUN = shutil.which("mpirun")
# A container's ranks on one host: shared memory only (no network
# interface), no CMA single copy (needs ptrace rights), no core binding
# (3 ranks on 2 cores).
MPI = [MPIRUN, "--oversubscribe", "--allow-run-as-root", "--bind-to", "none", "--mca", "btl", "self,vader",
       "--mca", "btl_vader_single_copy_mechanism", "none"]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_WAIT_POLICY="PASSIVE")
# A build with AddressSanitizer (the test command runs every test under it
# too): Open MPI's libraries and plugins keep allocations past MPI_Finalize,
# which LeakSanitizer reports from frames it cannot name, so the ranks run
# without leak detection (memory errors are still caught; seam's own code
# is leak-checked by the single-process runs); and a rank's resident
# memory holds the sanitizer's shadow and quarantine, so (b)'s bounds are
# checked on the plain build only.
ASAN = "libasan" in subprocess.run(["ldd", SEAM], capture_output=True, text=True).stdout
MiB = 1 << 20
BUDGET = 40 * MiB
failures = []


def check(ok, what, detail=""):
    """Prints the check's line, and on a failure what the command said."""
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
        if detail:
            print(detail, flush=True)


def run(args, timeout=120, env=None, seam_leaks=False):
    """seam_leaks: under ASan, leaks are reported (not failing the run) and
    failed here when a leak's stack holds a frame of seam's own (Open MPI's
    are left out, see above)."""
    t0 = time.monotonic()
    env = env or ENV
    if ASAN and seam_leaks:
        env = dict(env, ASAN_OPTIONS=(env.get("ASAN_OPTIONS", "") + ":detect_leaks=1").lstrip(":"),
                   LSAN_OPTIONS="exitcode=0")
    elif ASAN and args and args[0] == MPIRUN:
        env = dict(env, ASAN_OPTIONS=(env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":"))
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
        return p.returncode, p.stdout + p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
        return None, out, time.monotonic() - t0


def staged(path):
    m = onnx.load(path, load_external_data=False)
    return json.loads({p.key: p.value for p in m.metadata_props}["seam.stages"])


def rss_kib(text):
    """Per rank, its peak resident memory from --stage-report."""
    return {int(r): int(k) for r, k in re.findall(r"rank (\d+) of \d+: .*peak resident memory (\d+) KiB", text)}


def main():
    if os.path.isdir(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    os.chdir(WORK)
    if not MPIRUN:
        print("mpirun not found (openmpi-bin)")
        return 1
    big_out, weight_bytes = mlp("mlp.onnx", 24, 1024)
    tiny_out, _ = mlp("tiny.onnx", 6, 64)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 1024)).astype(np.float32)
    np.save("x.npy", x)
    np.save("xt.npy", rng.standard_normal((8, 64)).astype(np.float32))
    for i in range(4):
        np.save(f"x{i}.npy", x[2 * i:2 * i + 2])
    check(weight_bytes > 2 * BUDGET, f"the model's weights ({weight_bytes / MiB:.0f} MiB) exceed twice a stage's budget")

    # the staged file, and the same plan without stages
    rc, out, _ = run([SEAM, "partition", "mlp.onnx", "--stages", "3", "--stage-memory", str(BUDGET), "-o", "staged.onnx",
                      "--weights-file", "staged.weights"])
    check(rc == 0, f"partition --stages 3 --stage-memory 40M -o (rc {rc})", out)
    rc, out, _ = run([SEAM, "partition", "mlp.onnx", "-o", "plain.onnx"])
    check(rc == 0, f"partition -o, no stages (rc {rc})")
    rc, out, _ = run([SEAM, "partition", "mlp.onnx", "--stages", "2", "--stage-memory", str(BUDGET)])
    check(rc != 0 and "stages" in out, f"2 stages of 40 MiB do not hold 96 MiB: refused (rc {rc})")
    st = staged("staged.onnx")
    check(st["stages"] == 3 and [s["rank"] for s in st["stage"]] == [0, 1, 2], "3 stages recorded, ranks 0 1 2")
    check(all(0 < s["weight_bytes"] <= BUDGET for s in st["stage"]),
          "each stage's weights within 40 MiB: " + ", ".join(str(s["weight_bytes"]) for s in st["stage"]))
    owners = {}
    for s in st["stage"]:
        for w in s["weights"]:
            owners.setdefault(w, []).append(s["rank"])
    check(len(owners) == 48 and all(len(r) == 1 for r in owners.values()), "every weight in exactly one stage")
    run([SEAM, "partition", "tiny.onnx", "--stages", "3", "-o", "tiny_staged.onnx", "--weights-file", "tiny.weights"])

    # (a) bitwise equal to the single-process runs of the same plan
    rc, out, _ = run(MPI + ["-np", "3", SEAM, "run", "staged.onnx", "--input", "x=x.npy", "--output-dir", "mpi",
                            "--threads", "1", "--stage-report"])
    check(rc == 0, f"(a) mpirun -np 3 seam run staged.onnx (rc {rc})", out[-3000:])
    ranks_rss = rss_kib(out)
    rc1, out1, _ = run([SEAM, "run", "staged.onnx", "--ignore-stages", "--input", "x=x.npy", "--output-dir", "one",
                        "--threads", "1"])
    rc2, out2, _ = run([SEAM, "run", "plain.onnx", "--input", "x=x.npy", "--output-dir", "plain", "--threads", "1"])
    check(rc1 == 0 and rc2 == 0, f"single-process runs (rc {rc1}, {rc2})", out1[-2000:] + out2[-2000:])
    name = big_out + ".npy"
    same = lambda a, b: os.path.exists(a) and os.path.exists(b) and open(a, "rb").read() == open(b, "rb").read()
    check(same(f"mpi/{name}", f"one/{name}"), "(a) 3 ranks == --ignore-stages, bitwise")
    check(same(f"mpi/{name}", f"plain/{name}"), "(a) 3 ranks == the same plan saved without stages, bitwise")

    # (a') device subgraphs (dnnl, when built): a cut inside one moves to its
    # boundary, said; the staged run equals the single-process one bitwise
    rc, out, _ = run([SEAM, "partition", "tiny.onnx", "--target", "dnnl", "--placement", "capability", "--cpu-ops",
                      "Relu", "--stages", "3", "-o", "dnnl_staged.onnx"])
    if rc != 0 and "without oneDNN" in out:
        print("skip (a') dnnl subgraphs: this seam was built without oneDNN")
    else:
        check(rc == 0 and "the cut moved to its boundary" in out, f"(a') dnnl: a cut inside a subgraph moves (rc {rc})", out)
        d = staged("dnnl_staged.onnx") if rc == 0 else {"stage": []}
        subs = [n for s in d["stage"] for n in s["names"] if n.startswith("seam_subgraph_")]
        check(len(subs) == len(set(subs)) > 0, "(a') every device subgraph in exactly one stage")
        rc, out, _ = run(MPI + ["-np", "3", SEAM, "run", "dnnl_staged.onnx", "--input", "x=xt.npy", "--output-dir",
                                "dnnl_mpi", "--threads", "1"])
        rc1, out1, _ = run([SEAM, "run", "dnnl_staged.onnx", "--ignore-stages", "--input", "x=xt.npy", "--output-dir",
                            "dnnl_one", "--threads", "1"])
        check(rc == 0 and rc1 == 0 and same(f"dnnl_mpi/{tiny_out}.npy", f"dnnl_one/{tiny_out}.npy"),
              f"(a') dnnl stages: 3 ranks == one process, bitwise (rc {rc}, {rc1})", out[-2000:] + out1[-2000:])

    # (b) peak resident memory per rank
    rc, out, _ = run(MPI + ["-np", "3", SEAM, "run", "tiny_staged.onnx", "--input", "x=xt.npy", "--threads", "1",
                            "--stage-report"])
    base = rss_kib(out)
    check(rc == 0 and len(base) == 3, f"(b) a trivial staged model's baseline (rc {rc}): {base}", out[-2000:])
    overhead = (max(base.values()) if base else 0) + 8 * 1024
    check(len(ranks_rss) == 3, f"(b) each rank reports its peak resident memory: {ranks_rss}")
    if ASAN:
        print("skip (b) the bounds on resident memory: AddressSanitizer's shadow memory is in it", flush=True)
    for r, kib in sorted(ranks_rss.items()) if not ASAN else ():
        check(kib <= BUDGET // 1024 + overhead,
              f"(b) rank {r}: {kib} KiB <= budget {BUDGET // 1024} KiB + overhead {overhead} KiB "
              f"(its weights {st['stage'][r]['weight_bytes'] // 1024} KiB)")
        check(kib < weight_bytes // 1024, f"(b) rank {r}: {kib} KiB < the whole model's weights")

    # (c) micro-batches
    rc, out, _ = run(MPI + ["-np", "3", SEAM, "run", "staged.onnx", "--input", "x=x.npy", "--output-dir", "mb",
                            "--threads", "1", "--micro-batches", "4"])
    check(rc == 0, f"(c) --micro-batches 4 (rc {rc})", out[-3000:])
    parts = []
    for i in range(4):
        rc, out, _ = run([SEAM, "run", "staged.onnx", "--ignore-stages", "--input", f"x=x{i}.npy", "--output-dir",
                          f"slice{i}", "--threads", "1"])
        parts.append(np.load(f"slice{i}/{name}") if rc == 0 else None)
    if os.path.exists(f"mb/{name}") and all(p is not None for p in parts):
        got, whole = np.load(f"mb/{name}"), np.load(f"one/{name}")
        joined = np.concatenate(parts)
        check(got.shape == (8, 16) and got.tobytes() == joined.tobytes(),
              "(c) 4 micro-batches == the four slices run alone, joined, bitwise")
        err = float(np.abs(got - whole).max())
        check(err <= 1e-5 * float(np.abs(whole).max()), f"(c) 4 micro-batches == unbatched within rounding ({err:.2e})")
    else:
        check(False, "(c) micro-batched outputs")

    # (d) a rank that exits, is killed or hangs mid-run
    # (a hang at micro-batch 0 of 1: rank 2 waits for rank 1's first value,
    # which never left; at 2 of 4, a transfer rank 1 began stalls)
    for mode, mb, m, limit in (("exit", 2, 4, 10), ("kill", 2, 4, 10), ("hang", 2, 4, 10 + 8), ("hang", 0, 1, 10 + 8)):
        env = dict(ENV, SEAM_STAGE_FAULT=f"1:{mb}:{mode}")
        rc, out, t = run(MPI + ["-x", "SEAM_STAGE_FAULT", "-np", "3", SEAM, "run", "staged.onnx", "--input", "x=x.npy",
                                "--threads", "1", "--micro-batches", str(m)], timeout=90, env=env)
        said = "\n".join(l for l in out.splitlines() if "SEAM_STAGE_FAULT" not in l)  # what others said
        named = (re.search(r"rank 1\b", said) or re.search(r"\[\[\d+,\d+\],1\]", said)) is not None
        faulted = "rank 1: SEAM_STAGE_FAULT" in out
        check(rc is not None and rc != 0 and faulted and named and t < limit,
              f"(d) rank 1 {mode}s at micro-batch {mb} of {m}: rc {rc}, rank 1 named, ended in {t:.1f} s (< {limit})", out[-3000:])
        if mode == "hang":
            check("nothing from rank 1" in out, "(d) a hung rank: the rank waiting for it names it", out[-3000:])

    # (e) the wrong launch
    rc, out, _ = run([SEAM, "run", "staged.onnx", "--input", "x=x.npy"])
    check(rc == 2 and "staged for 3 ranks" in out and "mpirun -np 3" in out, f"(e) without mpirun: exit 2 ({rc})", out)
    rc, out, _ = run(MPI + ["-np", "2", SEAM, "run", "staged.onnx", "--input", "x=x.npy"])
    check(rc == 2 and "staged for 3 ranks, and mpirun started 2" in out, f"(e) -np 2: exit 2 ({rc})", out[-2000:])
    # one stage under mpirun -np 1, micro-batched: the pipeline of one rank
    # (it once said "run it with mpirun -np 1" under mpirun -np 1)
    run([SEAM, "partition", "tiny.onnx", "--stages", "1", "-o", "tiny_one.onnx"])
    rc, out, _ = run(MPI + ["-np", "1", SEAM, "run", "tiny_one.onnx", "--input", "x=xt.npy", "--micro-batches", "4",
                            "--output-dir", "one_mb"])
    rc1, out1, _ = run([SEAM, "run", "tiny_one.onnx", "--ignore-stages", "--input", "x=xt.npy", "--output-dir", "one_ig"])
    tiny_y = lambda d: np.load(f"{d}/{tiny_out}.npy") if os.path.exists(f"{d}/{tiny_out}.npy") else None
    ya, yb = tiny_y("one_mb"), tiny_y("one_ig")
    check(rc == 0 and rc1 == 0 and ya is not None and yb is not None and ya.shape == yb.shape and
          float(np.abs(ya - yb).max()) <= 1e-5 * float(np.abs(yb).max()),
          f"(e) one stage, mpirun -np 1 --micro-batches 4: runs, as one process within rounding (rc {rc}, {rc1})",
          out[-2000:] + out1[-1000:])
    rc, out, _ = run(MPI + ["-np", "3", SEAM, "run", "plain.onnx", "--input", "x=x.npy"])
    check(rc == 2 and "is not staged, and mpirun started 3" in out, f"(e) a plain file under -np 3: exit 2 ({rc})", out[-2000:])

    # (f) bad usage
    rc, out, _ = run([SEAM, "run", "staged.onnx", "--input", "x=x.npy", "--micro-batches", "0"])
    check(rc == 2 and "--micro-batches" in out, f"(f) --micro-batches 0: exit 2 ({rc})", out)
    rc, out, _ = run(MPI + ["-np", "3", SEAM, "run", "staged.onnx", "--input", "x=x.npy", "--micro-batches", "3"])
    check(rc == 2 and "do not divide" in out, f"(f) 3 micro-batches of a batch of 8: exit 2 ({rc})", out[-2000:])
    rc, out, _ = run([SEAM, "run", "plain.onnx", "--input", "x=x.npy", "--micro-batches", "2"])
    check(rc == 2 and "staged model" in out, f"(f) --micro-batches on a plain file: exit 2 ({rc})", out)

    # (g) the library over the caller's communicator
    rc, out, _ = run([SEAM, "partition", "tiny.onnx", "-o", "tiny_plain.onnx"])
    check(rc == 0, f"(g) the tiny model's plan without stages (rc {rc})", out)
    if DRIVER:
        rc, out, _ = run(MPI + ["-np", "4", DRIVER, "tiny_staged.onnx", "tiny_plain.onnx", "64"], timeout=180,
                         seam_leaks=True)
        if ASAN:
            reports = out.split("Direct leak of")[1:] + out.split("Indirect leak of")[1:]
            ours = [r.split("\n\n")[0] for r in reports if re.search(r"libseam|/src/mpi/|/src/runtime/|mpi_pipeline\.c", r)]
            check(not ours, f"(g) no leak from seam's frames under LeakSanitizer ({len(reports)} reports, all Open "
                  f"MPI's)", "\n".join(ours)[:3000])
        lines = [ln for ln in out.splitlines() if ln.startswith(("ok ", "FAIL"))]
        check(rc == 0 and "mpi_pipeline: all passed" in out and len(lines) >= 30 and not any(
            ln.startswith("FAIL") for ln in lines), f"(g) mpi_pipeline over a split communicator: rc {rc}, "
              f"{len(lines)} checks", out[-4000:])

    # (h) the same from Python: seam.Pipeline over an mpi4py communicator
    pyenv = dict(ENV, PYTHONPATH=os.path.join(os.path.dirname(SEAM), "python"))
    if ASAN:  # a plain interpreter cannot load an extension built with the sanitizers
        print("(h) not here: the sanitizer build's Python extension (the plain build runs it)")
    else:
        python_pipeline(pyenv)

    print(f"{len(failures)} failure(s)" if failures else "all passed")
    return 1 if failures else 0


def python_pipeline(pyenv):
    rc, out, _ = run(MPI + ["-np", "4", sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                      "mpi_pipeline_py.py"),
                            "tiny_staged.onnx", "tiny_plain.onnx", "tiny.onnx"], timeout=240, env=pyenv)
    lines = [ln for ln in out.splitlines() if ln.startswith(("ok ", "FAIL"))]
    check(rc == 0 and "mpi_pipeline_py: all passed" in out and len(lines) >= 20 and not any(
        ln.startswith("FAIL") for ln in lines), f"(h) seam.Pipeline over mpi4py: rc {rc}, {len(lines)} checks",
          out[-4000:])


if __name__ == "__main__":
    sys.exit(main())
