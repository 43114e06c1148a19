"""Models with symbolic dims on the dnnl backend, against torch.

usage: /usr/bin/python3 check_dynamic.py SEAM DRIVER WORKDIR [-k PATTERN]

DRIVER is tests/drivers/dynamic_session.c built: one session on a model,
run at several shapes, printing the session's compile counts after each
run. Exports four models with dynamic_axes from torch (random weights,
batch norms calibrated on random inputs so that outputs are O(1)):

  conv  a conv net, x [N, 3, H, W] (conv, batch norm, relu, max pool, 1x1
        conv, nearest upsampling, sigmoid)
  enc   a transformer encoder (2 layers), x [B, S, 32]
  inner Relu, Mul, Sub and Softmax over the last axis, x [1, 4, W]: only
        the innermost dim changes between runs
  lstm  an LSTM and a linear layer, x [T, 2, 16]

Cases, per model:
  placement  `seam partition --placement capability` places the nodes the
             symbolic model shares with the model fixed by --shape on the
             same targets (support does not depend on sizes)
  session    the symbolic model partitioned for dnnl and saved, run in one
             session at three shapes and the first again, with no --shape:
             every device subgraph is dnnl's and no shape fell back to the
             CPU; outputs within 1e-4 of the output's scale of torch; each
             new shape compiles, the seen one compiles nothing (the
             session's counters)
  cache      the same with a cache of one shape: the least recently used is
             evicted and compiled again, outputs still right
  cli        `seam run MODEL --target dnnl --input x=...` at the three
             shapes (no --shape), against torch
  buckets    saved with two --bucket shapes: the session compiles both when
             it is made, their runs compile nothing, a third shape compiles
             at its run; saved with --no-jit, `seam run` at the bucket is
             right and at another shape refused (exit 1); a --bucket that
             contradicts the model or names no input: exit 1, no file
  pad        (lstm) saved with buckets T=8 and T=16 and --pad x:0: runs at
             T=5 and T=11 are padded up to a bucket (no compile at the run)
             and their outputs sliced back, equal to torch's unpadded run; a
             --pad on an axis that does not exist, a fixed dim or no input:
             exit 1, no file
  refused    an input of another rank is refused naming the input (exit 1)

and fallback: a Resize dnnl takes except at a size of 1, run at a shape
that gives 1: that shape runs on the CPU, the log says so once, outputs
against numpy.
"""
import json
import os
import re
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

warnings.filterwarnings("ignore")
torch.set_num_threads(2)
parser = seamtest.arg_parser(__doc__)
parser.add_argument("seam", metavar="SEAM")
parser.add_argument("driver", metavar="DRIVER")
parser.add_argument("work", metavar="WORKDIR")
args = parser.parse_args()
seam, driver, work = seamtest.Program(args.seam, 600), seamtest.Program(args.driver, 600), args.work
check = seamtest.Checker("dynamic", args.k)
os.makedirs(work, exist_ok=True)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                               nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.Conv2d(32, 8, 1),
                               nn.Upsample(scale_factor=2, mode="nearest"))

    def forward(self, x):
        return torch.sigmoid(self.f(x))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(32, 64)
        layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=2)

    def forward(self, x):
        return self.enc(self.inp(x))


class Inner(nn.Module):
    """Only the innermost dim is symbolic: a cache keyed on anything less
    than every dim of every input returns the first shape's output."""

    def forward(self, x):
        return torch.softmax(torch.relu(x) * 3 - 1, -1)


class LSTMNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm, self.fc = nn.LSTM(16, 32), nn.Linear(32, 8)

    def forward(self, x):
        return self.fc(self.lstm(x)[0])


# name: (module, the shape it is exported at, its symbolic axes, the output's, three run shapes). Some run
# shapes differ from the first in the innermost dim alone (conv's third, every one of inner's): a shape
# signature that drops a position must fail here.
MODELS = {
    "conv": (ConvNet, (1, 3, 32, 32), {0: "N", 2: "H", 3: "W"}, {0: "N", 2: "Ho", 3: "Wo"},
             [(1, 3, 32, 32), (2, 3, 48, 64), (1, 3, 32, 40)]),
    "enc": (Encoder, (2, 10, 32), {0: "B", 1: "S"}, {0: "B", 1: "S"}, [(2, 10, 32), (1, 7, 32), (3, 16, 32)]),
    "inner": (Inner, (1, 4, 5), {2: "W"}, {2: "W"}, [(1, 4, 5), (1, 4, 9), (1, 4, 7)]),
    "lstm": (LSTMNet, (7, 2, 16), {0: "T"}, {0: "T"}, [(7, 2, 16), (3, 2, 16), (20, 2, 16)]),
}


def calibrate(model, shape):
    """Batch norms get the statistics of real activations (see
    tests/models/gen_models.py calibrate): a few training-mode passes."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn((2,) + tuple(shape[1:])))
    model.eval()


def shape_str(shape):
    return "x".join(map(str, shape))


def plan_targets(path, *extra):
    r = seam("partition", path, "--target", "dnnl", "--placement", "capability", "--json", *extra)
    if r.returncode:
        return None, r.stderr.strip()
    p = json.loads(r.stdout)
    return p, {n["name"]: n["target"] for n in p["nodes"] if n["target"] != "constant"}


for name, (ctor, shape0, axes, yaxes, shapes) in MODELS.items():
    if not check.selected(name):
        continue
    torch.manual_seed(0)
    net = ctor().eval()
    calibrate(net, shape0)
    path = os.path.join(work, name + ".onnx")
    torch.onnx.export(net, (torch.randn(*shape0),), path, input_names=["x"], output_names=["y"], opset_version=13,
                      dynamic_axes={"x": axes, "y": yaxes})
    xs, wants = [], []
    for k, sh in enumerate(shapes):
        x = np.random.RandomState(k).randn(*sh).astype(np.float32)
        with torch.no_grad():
            wants.append(net(torch.from_numpy(x)).numpy())
        xs.append(x)
        x.tofile(os.path.join(work, f"{name}.{k}.in.f32"))
        np.save(os.path.join(work, f"{name}.{k}.npy"), x)

    # placement: symbolic against fixed shapes, on the nodes both have
    # (fixing the shapes folds the Shape -> Gather -> Concat chains away)
    if check.selected(f"{name}_placement"):
        p_sym, t_sym = plan_targets(path)
        p_fix, t_fix = plan_targets(path, "--shape", f"x={shape_str(shapes[0])}")
        if p_sym is None or p_fix is None:
            check.fail(f"{name} placement: partition failed: {t_sym if p_sym is None else t_fix}")
        else:
            common = sorted(set(t_sym) & set(t_fix))
            diff = [(n, t_sym[n], t_fix[n]) for n in common if t_sym[n] != t_fix[n]]
            on_dnnl = sum(t == "dnnl" for t in t_sym.values())
            check.expect(not diff and on_dnnl > 0 and len(common) > 0,
                         f"{name} placement: {len(common)} nodes in both, {on_dnnl} on dnnl with symbolic dims, "
                         f"{len(diff)} placed differently", diff[:5])
        # the default placement (by cost) offloads the symbolic model too: a
        # symbolic dim is not an empty tensor to the cost model (inner's four
        # element-wise ops are worth a launch at no size: they stay)
        r = seam("partition", path, "--target", "dnnl", "--json")
        dev = [n for n in json.loads(r.stdout)["nodes"] if n["target"] == "dnnl"] if r.returncode == 0 else []
        convs = [n for n in json.loads(r.stdout)["nodes"] if n["op"] in ("Conv", "LSTM")] if r.returncode == 0 else []
        if name == "lstm" and not seamtest.dnnl_avx512_layouts():
            # (without AVX-512 oneDNN's RNN is its reference cell: the cost
            # model leaves the LSTM to the CPU's step, dnnl.c dnnl_cost)
            check.expect(r.returncode == 0 and convs and all(n["target"] == "cpu" for n in convs),
                         f"{name} placement by cost: the LSTM on the CPU (oneDNN without AVX-512)",
                         f"{convs} {r.stderr.strip()[-300:]}")
        else:
            check.expect((len(dev) > 0 or name == "inner") and all(n["target"] == "dnnl" for n in convs),
                         f"{name} placement by cost: {len(dev)} nodes on dnnl with symbolic dims", r.stderr.strip()[-300:])

    part = os.path.join(work, name + ".part.onnx")
    r = seam("partition", path, "--target", "dnnl", "--placement", "capability", "--json", "-o", part)
    if r.returncode:
        check.fail(f"{name}: partition -o failed: {r.stderr.strip()}")
        continue
    plan = json.loads(r.stdout)
    device = [sg for sg in plan["subgraphs"] if sg["target"] != "cpu"]

    def session(case, runs, cache=None):
        """Runs the driver; returns its per-run counters and outputs, or None."""
        argv = [part] + (["--cache", str(cache)] if cache else [])
        for k in runs:
            argv.append(f"x={shape_str(shapes[k])}:{os.path.join(work, f'{name}.{k}.in.f32')}:"
                        f"{os.path.join(work, f'{name}.{case}.{len(argv)}.out.f32')}")
        r = driver(*argv)
        if r.returncode:
            check.fail(f"{name} {case}: the session failed (exit {r.returncode}): {r.stderr.strip()[-400:]}")
            return None
        rows = re.findall(r"^run (\d+) shape \S+: out (\S+) compiles (\d+) run_compiles (\d+) hits (\d+) "
                          r"evictions (\d+) cpu_shapes (\d+)$", r.stdout, re.M)
        outs = []
        for j, k in enumerate(runs):
            out_shape = tuple(map(int, rows[j][1].split("x")))
            y = np.fromfile(argv[len(argv) - len(runs) + j].rsplit(":", 1)[1], np.float32)
            outs.append(y.reshape(out_shape) if y.size == np.prod(out_shape) else None)
        counts = [dict(zip(("compiles", "run_compiles", "hits", "evictions", "cpu_shapes"), map(int, row[2:])))
                  for row in rows]
        return counts, outs, r.stdout

    def compare(case, runs, outs):
        for k, y in zip(runs, outs):
            err = seamtest.rel_err(y, wants[k]) if y is not None and y.shape == wants[k].shape else None
            check.expect(err is not None and err <= 1e-4,
                         f"{name} {case}: shape {shapes[k]}: output {None if y is None else y.shape} "
                         f"(torch {wants[k].shape}), error {err}")

    if check.selected(f"{name}_session"):
        check.expect(len(device) > 0 and all(sg["target"] == "dnnl" for sg in device),
                     f"{name} session: {len(device)} device subgraphs, all on dnnl")
        res = session("session", [0, 1, 2, 0])
        if res:
            counts, outs, text = res
            compare("session", [0, 1, 2, 0], outs)
            n_dev = len(device)
            check.expect(len(counts) == 4 and all(c["cpu_shapes"] == 0 for c in counts),
                         f"{name} session: no shape fell back to the CPU", text[-600:])
            if len(counts) == 4:
                c = counts
                check.expect(c[0]["run_compiles"] >= 1 and c[1]["run_compiles"] > c[0]["run_compiles"] and
                             c[2]["run_compiles"] > c[1]["run_compiles"],
                             f"{name} session: each new shape compiles ({[x['run_compiles'] for x in c[:3]]} "
                             f"compiles after the runs, {n_dev} device subgraphs)")
                check.expect(c[3]["run_compiles"] == c[2]["run_compiles"] and c[3]["compiles"] == c[2]["compiles"] and
                             c[3]["hits"] - c[2]["hits"] >= n_dev,
                             f"{name} session: the seen shape compiles nothing ({c[2]['run_compiles']} -> "
                             f"{c[3]['run_compiles']} compiles, {c[3]['hits'] - c[2]['hits']} cache hits)")

    if check.selected(f"{name}_cache"):
        res = session("cache", [0, 1, 0], cache=1)
        if res:
            counts, outs, text = res
            compare("cache", [0, 1, 0], outs)
            check.expect(len(counts) == 3 and counts[2]["evictions"] >= 2 * len(device) and
                         counts[2]["run_compiles"] == 3 * len(device),
                         f"{name} cache: a cache of one shape evicts and compiles again "
                         f"({counts[-1] if counts else None})")

    if check.selected(f"{name}_cli"):
        for k, sh in enumerate(shapes):
            for model, extra in ((path, ("--target", "dnnl")), (part, ())):
                out = os.path.join(work, f"out_{name}_{k}_{os.path.basename(model)}")
                r = seam("run", model, *extra, "--input", f"x={os.path.join(work, f'{name}.{k}.npy')}",
                         "--output-dir", out)
                if r.returncode:
                    check.fail(f"{name} cli: {os.path.basename(model)} at {sh}: exit {r.returncode}: {r.stderr.strip()}")
                    continue
                got = np.load(seamtest.output_file(out, "y"))
                err = seamtest.rel_err(got, wants[k]) if got.shape == wants[k].shape else None
                check.expect(err is not None and err <= 1e-4,
                             f"{name} cli: seam run {os.path.basename(model)} {' '.join(extra)} at {sh}: error {err}")

    # buckets: the first two shapes compiled when the session is made
    if check.selected(f"{name}_buckets"):
        bpart = os.path.join(work, name + ".buckets.onnx")
        r = seam("partition", path, "--target", "dnnl", "--placement", "capability", "--bucket",
                 f"x={shape_str(shapes[0])}", "--bucket", f"x={shape_str(shapes[1])}", "-o", bpart)
        if r.returncode:
            check.fail(f"{name} buckets: partition failed: {r.stderr.strip()}")
        else:
            saved_part, part = part, bpart
            res = session("buckets", [0, 1, 2, 1])
            part = saved_part
            if res:
                counts, outs, text = res
                compare("buckets", [0, 1, 2, 1], outs)
                c = counts
                check.expect(len(c) == 4 and c[0]["compiles"] == 2 * len(device) and c[1]["run_compiles"] == 0 and
                             c[2]["run_compiles"] == len(device) and c[3]["run_compiles"] == len(device),
                             f"{name} buckets: both buckets compiled with the session, none at their runs, the third "
                             f"shape at its run ({[(x['compiles'], x['run_compiles']) for x in c]})")
        njpart = os.path.join(work, name + ".nojit.onnx")
        r = seam("partition", path, "--target", "dnnl", "--placement", "capability", "--bucket",
                 f"x={shape_str(shapes[0])}", "--no-jit", "-o", njpart)
        if r.returncode:
            check.fail(f"{name} buckets: partition --no-jit failed: {r.stderr.strip()}")
        else:
            ok = seam("run", njpart, "--input", f"x={os.path.join(work, f'{name}.0.npy')}", "--output-dir",
                      os.path.join(work, f"out_{name}_nojit"))
            got = np.load(seamtest.output_file(os.path.join(work, f"out_{name}_nojit"), "y")) if not ok.returncode else None
            err = seamtest.rel_err(got, wants[0]) if got is not None and got.shape == wants[0].shape else None
            check.expect(err is not None and err <= 1e-4, f"{name} buckets: --no-jit at its bucket: error {err}",
                         ok.stderr.strip())
            r = seam("run", njpart, "--input", f"x={os.path.join(work, f'{name}.1.npy')}")
            check.expect(r.returncode == 1 and "--no-jit" in r.stderr and "bucket" in r.stderr,
                         f"{name} buckets: --no-jit refuses another shape (exit {r.returncode})", r.stderr.strip())
        # a file whose buckets were tampered with is refused, not trusted
        if not r.returncode:
            import onnx
            m = onnx.load(njpart)
            for bad_ints in ([5, 1], [1, 1, 99, 3, 3, 3, 3, -1], [1] + [1, 4] + [-7] * 4 + [-1]):
                for n in m.graph.node:
                    for at in n.attribute:
                        if at.name == "buckets":
                            del at.ints[:]
                            at.ints.extend(bad_ints)
                tampered = os.path.join(work, f"{name}.tampered.onnx")
                onnx.save(m, tampered)
                r = seam("run", tampered, "--input", f"x={os.path.join(work, f'{name}.0.npy')}")
                check.expect(r.returncode == 1 and "bad 'buckets'" in r.stderr,
                             f"{name} buckets: a tampered 'buckets' {bad_ints[:8]} is refused (exit {r.returncode})",
                             r.stderr.strip()[-300:])
        bad_shape = list(shapes[0])
        bad_shape[min(d for d in range(len(bad_shape)) if d not in axes)] += 1  # a fixed dim
        for what, arg in (("a shape that contradicts the model", f"x={shape_str(bad_shape)}"),
                          ("a shape of another rank", f"x={shape_str(shapes[0][:-1])}"),
                          ("a name that is not an input", f"nope={shape_str(shapes[0])}")):
            out = os.path.join(work, f"{name}.bad_bucket.onnx")
            if os.path.exists(out):
                os.remove(out)
            r = seam("partition", path, "--target", "dnnl", "--bucket", arg, "-o", out)
            check.expect(r.returncode == 1 and "--bucket" in r.stderr and not os.path.exists(out),
                         f"{name} buckets: {what} ({arg}): exit {r.returncode}, no file", r.stderr.strip())

    # padding, on the LSTM (forward in time: a step's output depends on the
    # steps before it only, so zero steps after the end change nothing)
    if name == "lstm" and check.selected(f"{name}_pad"):
        ppart = os.path.join(work, name + ".pad.onnx")
        r = seam("partition", path, "--target", "dnnl", "--placement", "capability", "--bucket", "x=8x2x16",
                 "--bucket", "x=16x2x16", "--pad", "x:0", "-o", ppart)
        if r.returncode:
            check.fail(f"{name} pad: partition failed: {r.stderr.strip()}")
        else:
            argv, runs = [ppart], []
            for k, t in enumerate((5, 11, 16)):
                x = np.random.RandomState(10 + k).randn(t, 2, 16).astype(np.float32)
                f = os.path.join(work, f"{name}.pad{k}.in.f32")
                x.tofile(f)
                with torch.no_grad():
                    runs.append((t, net(torch.from_numpy(x)).numpy(), os.path.join(work, f"{name}.pad{k}.out.f32")))
                argv.append(f"x={t}x2x16:{f}:{runs[-1][2]}")
            r = driver(*argv)
            if r.returncode:
                check.fail(f"{name} pad: the session failed: {r.stderr.strip()[-400:]}")
            else:
                rows = re.findall(r"^run \d+ shape \S+: out (\S+) compiles (\d+) run_compiles (\d+)", r.stdout, re.M)
                for (t, want, f), row in zip(runs, rows):
                    shape = tuple(map(int, row[0].split("x")))
                    y = np.fromfile(f, np.float32)
                    err = seamtest.rel_err(y.reshape(shape), want) if shape == want.shape else None
                    check.expect(err is not None and err <= 1e-4 and row[2] == "0",
                                 f"{name} pad: T={t} padded up to a bucket: output {shape} (torch {want.shape}), "
                                 f"error {err}, {row[2]} compiles at the run")
        for what, arg in (("an axis that does not exist", "x:3"), ("a fixed dim", "x:1"), ("no such input", "nope:0")):
            out = os.path.join(work, f"{name}.bad_pad.onnx")
            if os.path.exists(out):
                os.remove(out)
            r = seam("partition", path, "--target", "dnnl", "--bucket", "x=8x2x16", "--pad", arg, "-o", out)
            check.expect(r.returncode == 1 and "--pad" in r.stderr and not os.path.exists(out),
                         f"{name} pad: {what} ({arg}): exit {r.returncode}, no file", r.stderr.strip())

    if check.selected(f"{name}_refused"):
        bad = os.path.join(work, f"{name}.bad.npy")
        np.save(bad, np.zeros(shapes[0][:-1], np.float32))
        r = seam("run", part, "--input", f"x={bad}")
        check.expect(r.returncode == 1 and "'x'" in r.stderr,
                     f"{name} refused: an input of another rank: exit {r.returncode}", r.stderr.strip())

# a shape the backend does not take: Relu -> Resize (linear,
# pytorch_half_pixel, scales 0.5) -> Sigmoid, x [1, 3, H, W]. dnnl takes the
# Resize except to a size of 1 (it does pytorch_half_pixel's special case
# differently), which only the run's shape tells: H = W = 2 runs on the CPU,
# said once in the log; H = W = 8 on dnnl. Reference: numpy (a 2x2 mean for
# 8 -> 4; the first pixel for 2 -> 1, as ONNX defines pytorch_half_pixel).
if check.selected("fallback"):
    from onnx import helper, numpy_helper, TensorProto
    import onnx
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Resize", ["r", "roi", "scales"], ["z"], mode="linear",
                              coordinate_transformation_mode="pytorch_half_pixel"),
             helper.make_node("Sigmoid", ["z"], ["y"])]
    g = helper.make_graph(nodes, "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, "Ho", "Wo"])],
                          [numpy_helper.from_array(np.array([], np.float32), "roi"),
                           numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "scales")])
    rs = os.path.join(work, "resize.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), rs)
    rpart = os.path.join(work, "resize.part.onnx")
    r = seam("partition", rs, "--target", "dnnl", "--placement", "capability", "-o", rpart)
    if r.returncode:
        check.fail(f"fallback: partition failed: {r.stderr.strip()}")
    else:
        argv, refs = [rpart], []
        for k, hw in enumerate((8, 2, 2)):
            x = np.random.RandomState(20 + k).randn(1, 3, hw, hw).astype(np.float32)
            xr = np.maximum(x, 0)
            z = xr.reshape(1, 3, 4, 2, 4, 2).mean(axis=(3, 5)) if hw == 8 else xr[:, :, :1, :1]
            refs.append(1 / (1 + np.exp(-z)))
            f = os.path.join(work, f"resize.{k}.in.f32")
            x.tofile(f)
            argv.append(f"x=1x3x{hw}x{hw}:{f}:{os.path.join(work, f'resize.{k}.out.f32')}")
        r = driver(*argv)
        if r.returncode:
            check.fail(f"fallback: the session failed: {r.stderr.strip()[-400:]}")
        else:
            rows = re.findall(r"cpu_shapes (\d+)$", r.stdout, re.M)
            for k, want in enumerate(refs):
                y = np.fromfile(os.path.join(work, f"resize.{k}.out.f32"), np.float32)
                err = seamtest.rel_err(y.reshape(want.shape), want) if y.size == want.size else None
                check.expect(err is not None and err <= 1e-4, f"fallback: run {k} {want.shape}: error {err}")
            slow = [ln for ln in r.stdout.splitlines() if "): slow: " in ln]
            check.expect(rows == ["0", "1", "1"] and len(slow) == 1 and "not compiled" in slow[0] and
                         "runs on the CPU" in slow[0] and "fix:" in slow[0],
                         f"fallback: the size-1 shape ran on the CPU, said once ({rows})", r.stdout[-500:])

check.finish()
