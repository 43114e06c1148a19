"""The CPU's folded quantized add (runtime/fuse.c, cpu/quant.c run_qadd):
DequantizeLinear(a), DequantizeLinear(b) -> Add -> QuantizeLinear, the QDQ
form of a quantized residual add, run by the QuantizeLinear's kernel from a
and b in one pass (issue 27: int8 on the CPU backend without float round
trips).

usage: /usr/bin/python3 check_qadd.py SEAM WORKDIR [-k PATTERN]

Each case is a model written with onnx.helper, a and b graph inputs. The
reference is numpy in float32, as the three nodes are specified: (x - zp)
as float32 times the float32 scale per side, the float32 sum, divided by
y_scale in float32, rounded half to even, plus y's zero point, saturated.
seam's output must equal it bit for bit, with the fold (default) and
without it (SEAM_CPU_QADD=0). The fold must happen where it may (the
profile shows the DequantizeLinears and the Add did not run: 0 us) and
not where it may not: a broadcasting Add, an Add read by a second node
(or a graph output), a per-channel scale, a scale given at
run time; a DequantizeLinear read by a second node folds (seam's QDQ pass
gives each reader a copy). Sizes below
one chunk and of several (16384 elements, over the pool), uint8 and int8
on each side and out, no zero points on the inputs, outputs that
saturate, and sums that land halfway between two steps.
"""
import json
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import seamtest  # noqa: E402

args, run, work, check = seamtest.checker_setup(__doc__, "qadd")

NP = {T.UINT8: np.uint8, T.INT8: np.int8}

# name: (a shape, b shape, a type, b type, y type, (sa, za), (sb, zb), (sy, zy), form)
# zero point None: the DQ has no zero point input. form: "fold" (must fold), or why it must not.
CASES = {
    "u8_u8_u8_chunks": ((1, 64, 28, 28), (1, 64, 28, 28), T.UINT8, T.UINT8, T.UINT8,
                        (0.02, 128), (0.031, 100), (0.045, 120), "fold"),
    "s8_s8_s8_small": ((2, 17, 5), (2, 17, 5), T.INT8, T.INT8, T.INT8, (0.05, -3), (0.02, 7), (0.06, 2), "fold"),
    "u8_s8_u8_saturating": ((3, 1000), (3, 1000), T.UINT8, T.INT8, T.UINT8, (0.1, 30), (0.2, 0), (0.01, 128), "fold"),
    "no_input_zero_points": ((40000,), (40000,), T.INT8, T.UINT8, T.INT8, (0.01, None), (0.02, None), (0.03, 0), "fold"),
    # every product a multiple of 1/2 at y_scale 1: halfway cases, rounded to even
    "halfway": ((4, 257), (4, 257), T.UINT8, T.UINT8, T.UINT8, (0.5, 3), (0.5, 0), (1.0, 0), "fold"),
    "scalar_tensors": ((), (), T.UINT8, T.UINT8, T.UINT8, (0.3, 1), (0.7, 2), (0.25, 5), "fold"),
    "broadcast": ((1, 8, 6, 6), (1, 8, 1, 1), T.UINT8, T.UINT8, T.UINT8, (0.02, 128), (0.03, 128), (0.05, 128),
                  "a broadcasting Add"),
    # (seam's QDQ pass gives each reader of a shared DequantizeLinear a copy of its own: the Add's folds)
    "dq_read_twice": ((5, 33), (5, 33), T.UINT8, T.UINT8, T.UINT8, (0.02, 10), (0.03, 20), (0.05, 30), "fold"),
    "sum_read_twice": ((5, 33), (5, 33), T.UINT8, T.UINT8, T.UINT8, (0.02, 10), (0.03, 20), (0.05, 30),
                       "an Add read by a second node"),
    "per_channel_y": ((2, 3, 11), (2, 3, 11), T.UINT8, T.UINT8, T.UINT8, (0.02, 10), (0.03, 20), (0.05, 30),
                      "a per-channel y scale"),
    "runtime_scale": ((2, 50), (2, 50), T.INT8, T.INT8, T.INT8, (0.02, 1), (0.03, 2), (0.05, 3),
                      "a scale given at run time"),
}


def f32(v):
    return np.float32(v)


def reference(a, b, sa, za, sb, zb, sy, zy, yt):
    fa = (a.astype(np.int32) - (za or 0)).astype(np.float32) * f32(sa)
    fb = (b.astype(np.int32) - (zb or 0)).astype(np.float32) * f32(sb)
    s = fa + fb
    sy = np.asarray(sy, np.float32)
    zy = np.asarray(zy, np.int32)
    if s.ndim >= 2 and sy.size > 1:  # per channel along axis 1
        sy = sy.reshape(1, -1, *([1] * (s.ndim - 2)))
        zy = zy.reshape(1, -1, *([1] * (s.ndim - 2)))
    q = np.rint(s / sy).astype(np.float64) + zy
    info = np.iinfo(NP[yt])
    return np.clip(q, info.min, info.max).astype(NP[yt])


def write_case(name, spec):
    ash, bsh, at, bt, yt, (sa, za), (sb, zb), (sy, zy), form = spec
    rng = np.random.RandomState(sum(map(ord, name)))
    a = rng.randint(np.iinfo(NP[at]).min, np.iinfo(NP[at]).max + 1, size=ash).astype(NP[at])
    b = rng.randint(np.iinfo(NP[bt]).min, np.iinfo(NP[bt]).max + 1, size=bsh).astype(NP[bt])
    inits = {"sa": np.float32(sa), "sb": np.float32(sb)}
    feeds = {"a": a, "b": b}
    ins = [seamtest.vi("a", list(ash), at), seamtest.vi("b", list(bsh), bt)]
    if za is not None:
        inits["za"] = np.array(za, NP[at])
    if zb is not None:
        inits["zb"] = np.array(zb, NP[bt])
    if form == "a per-channel y scale":
        sy = [sy, sy * 1.5, sy * 0.7]
        zy = [zy, zy + 3, zy - 5]
        inits["sy"], inits["zy"] = np.array(sy, np.float32), np.array(zy, NP[yt])
    else:
        inits["zy"] = np.array(zy, NP[yt])
        if form == "a scale given at run time":
            ins.append(seamtest.vi("sy", [], T.FLOAT))
            feeds["sy"] = np.array(sy, np.float32)
        else:
            inits["sy"] = np.float32(sy)
    qattrs = {"axis": 1} if form == "a per-channel y scale" else {}
    nodes = [
        helper.make_node("DequantizeLinear", ["a", "sa"] + (["za"] if za is not None else []), ["fa"], name="dq_a"),
        helper.make_node("DequantizeLinear", ["b", "sb"] + (["zb"] if zb is not None else []), ["fb"], name="dq_b"),
        helper.make_node("Add", ["fa", "fb"], ["s"], name="add"),
        helper.make_node("QuantizeLinear", ["s", "sy", "zy"], ["y"], name="q", **qattrs),
    ]
    yshape = list(np.broadcast_shapes(ash, bsh))
    outs = [seamtest.vi("y", yshape, yt)]
    if name == "dq_read_twice":
        nodes.append(helper.make_node("Relu", ["fa"], ["ra"], name="relu_a"))
        outs.append(seamtest.vi("ra", list(ash), T.FLOAT))
    if form == "an Add read by a second node":
        outs.append(seamtest.vi("s", yshape, T.FLOAT))
    path = seamtest.save_model(os.path.join(work, f"{name}.onnx"), nodes, ins, outs, seamtest.initializers(inits),
                               opset=13)
    files = {}
    for k, v in feeds.items():
        files[k] = os.path.join(work, f"{name}.{k}.npy")
        np.save(files[k], v)
    want = reference(a, b, sa, za, sb, zb, sy, zy, yt)
    return path, files, want, form


def run_seam(name, path, files, env):
    d = os.path.join(work, name)
    trace = d + ".trace.json"
    a = [x for k, f in files.items() for x in ("--input", f"{k}={f}")]
    r = subprocess.run([args.seam, "run", path, *a, "--output-dir", d, "--threads", "2", "--profile", trace],
                       capture_output=True, text=True, env=dict(os.environ, **env), timeout=300)
    if r.returncode:
        return None, None, (r.stderr.strip().splitlines() or ["(no message)"])[-1][:300]
    with open(trace) as f:
        t = json.load(f)
    ev = t["traceEvents"] if isinstance(t, dict) else t
    dur = {e["name"]: e["dur"] for e in ev if e.get("ph") == "X" and e.get("cat") == "node"}
    return np.load(seamtest.output_file(d, "y")), dur, None


def main():
    for name, spec in CASES.items():
        if not check.selected(name):
            continue
        path, files, want, form = write_case(name, spec)
        got, dur, err = run_seam(name, path, files, {})
        plain, pdur, err2 = run_seam(name + ".unfolded", path, files, {"SEAM_CPU_QADD": "0"})
        if err or err2:
            check.fail(f"{name}: seam run failed: {err or err2}")
            continue
        check.expect(got.shape == want.shape and np.array_equal(got, want),
                     f"{name}: equals numpy's float32 DQ, Add, Q bit for bit", seamtest.steps(got, want))
        check.expect(np.array_equal(plain, want), f"{name}: the unfolded nodes (SEAM_CPU_QADD=0) equal it too",
                     seamtest.steps(plain, want))
        skipped = [k for k, v in dur.items() if k.startswith("dq_") and v == 0]
        if form == "fold":
            check.expect(len(skipped) == 2 and dur.get("add") == 0, f"{name}: the DequantizeLinears and the Add "
                         "were folded into the QuantizeLinear (0 us each in the profile)", f"run: {dur}")
        else:
            check.expect(dur.get("add", 0) > 0, f"{name}: not folded ({form}): the Add ran", f"run: {dur}")
        check.expect(pdur.get("add", 0) > 0, f"{name}: SEAM_CPU_QADD=0 runs the Add", f"run: {pdur}")
    # a scale the DQ refuses is not folded: the DQ fails, named, exit 1
    if check.selected("zero scale"):
        spec = ((2, 9), (2, 9), T.UINT8, T.UINT8, T.UINT8, (0.0, 3), (0.5, 0), (1.0, 0), "fold")
        path, files, _, _ = write_case("zero_scale", spec)
        a = [x for k, f in files.items() for x in ("--input", f"{k}={f}")]
        r = subprocess.run([args.seam, "run", path, *a], capture_output=True, text=True, timeout=120)
        check.expect(r.returncode == 1 and "dq_a" in r.stderr and "x_scale" in r.stderr,
                     "zero scale: a DequantizeLinear's scale of 0 fails it, named, exit 1",
                     f"exit {r.returncode}: {r.stderr.strip()[-300:]}")
    check.finish()


if __name__ == "__main__":
    main()
