#!/usr/bin/env python3
"""seam.Pipeline over an mpi4py communicator, run by check_mpi.py (h) as

    mpirun -np 4 python3 mpi_pipeline_py.py STAGED.onnx PLAIN.onnx MODEL.onnx

STAGED.onnx is MODEL.onnx (an MLP, input x [N, hidden]) cut into 3 stages,
PLAIN.onnx the same plan unstaged. seam is imported before mpi4py (the
order that must work too); world ranks 1-3 split off a communicator of
their own (world rank 0 stays out), in reverse order. Checked on the
pipeline's rank 0: outputs equal seam.Session's run of PLAIN.onnx byte for
byte and numpy's float64 evaluation of MODEL.onnx within 1e-4 of their
scale, a torch tensor is taken as an input, 2 micro-batches equal the two
halves run alone; on every rank: run() gives None off rank 0, an unknown
input on rank 0 raises ValueError naming it on every rank and the next run
works, a feed Python cannot convert on rank 0 raises there and fails the
others' run, stats() says this rank's stage; world rank 0 receives nothing.
Prints a line per check; exits 1 on a failure."""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

import seam  # before mpi4py, on purpose
from mpi4py import MPI

STAGED, PLAIN, MODEL = sys.argv[1:4]
world = MPI.COMM_WORLD
failures = 0


def check(ok, what, detail=""):
    global failures
    print(f"{'ok  ' if ok else 'FAIL'} world rank {world.rank}: {what}{'' if ok or not detail else ': ' + str(detail)}",
          flush=True)
    failures += not ok


def numpy_mlp(x):
    m = onnx.load(MODEL)
    w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
    h = x.astype(np.float64)
    for n in m.graph.node:
        if n.op_type == "MatMul":
            h = h @ w[n.input[1]]
        elif n.op_type == "Add":
            h = h + w[n.input[1]]
        elif n.op_type == "Relu":
            h = np.maximum(h, 0)
    return h


comm = world.Split(0 if world.rank > 0 else MPI.UNDEFINED, 3 - world.rank)
if comm != MPI.COMM_NULL:
    p = seam.Pipeline(STAGED, comm, threads=1, stage_timeout=20)
    check(p.rank == comm.rank and p.stages == 3 and p.inputs == ["x"] and len(p.outputs) == 1,
          f"Pipeline over the split communicator: rank {p.rank} of {p.stages}")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    out = p.run({"x": x} if p.rank == 0 else None)
    if p.rank == 0:
        y = out[p.outputs[0]]
        ref = seam.Session(PLAIN, threads=1).run({"x": x})[p.outputs[0]]
        check(y.dtype == np.float32 and y.shape == ref.shape and y.tobytes() == ref.tobytes(),
              "outputs == seam.Session on the unstaged plan, bitwise")
        want = numpy_mlp(x)
        err = float(np.abs(y - want).max() / np.abs(want).max())
        check(err < 1e-4 and np.abs(want).max() > 0.1, f"outputs == numpy's float64 MLP (max error {err:.1e} of scale)")
        import torch
        yt = p.run({"x": torch.from_numpy(x)})[p.outputs[0]]
        check(yt.tobytes() == y.tobytes(), "a torch tensor as the input: the same outputs")
    else:
        check(out is None, "run() off rank 0 gives None")
        check(p.run() is None, "a second run (the torch input on rank 0)")
    # an unknown input on rank 0: every rank raises, naming it, and runs again
    try:
        p.run({"y": x} if p.rank == 0 else None)
        check(False, "an unknown input raises on every rank")
    except ValueError as e:
        check("rank 0" in str(e) and "'y'" in str(e), "an unknown input raises ValueError on every rank", e)
    out = p.run({"x": x} if p.rank == 0 else None)
    check(p.rank != 0 or out[p.outputs[0]].tobytes() == y.tobytes(), "then a run works again")
    # a feed Python cannot convert: rank 0 raises its error, the others the run's
    try:
        p.run({"x": object()} if p.rank == 0 else None)
        check(False, "an input that is no array raises on every rank")
    except (TypeError, ValueError) as e:
        check(p.rank != 0 or "x" in str(e) or "object" in str(e), "an input that is no array raises on every rank", e)
    st = p.stats()
    check(st["rank"] == p.rank and st["stages"] == 3 and st["nodes"] > 0 and st["weight_bytes"] > 0, f"stats {st}")
    p.close()
    with seam.Pipeline(STAGED, comm, threads=1, micro_batches=2) as p2:
        out = p2.run({"x": x} if p2.rank == 0 else None)
        if p2.rank == 0:
            s = seam.Session(PLAIN, threads=1)
            halves = np.concatenate([s.run({"x": x[:4]})[p2.outputs[0]], s.run({"x": x[4:]})[p2.outputs[0]]])
            check(out[p2.outputs[0]].tobytes() == halves.tobytes(), "2 micro-batches == the two halves, bitwise")
    comm.Free()
world.Barrier()
if world.rank == 0:
    check(not world.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG), "nothing of seam's reaches the rank outside")
total = world.allreduce(failures)
if world.rank == 0:
    print("mpi_pipeline_py: " + ("FAILED" if total else "all passed"), flush=True)
sys.exit(1 if total else 0)
