"""The dnnl backend's channel shuffle (src/backends/dnnl/shuf_shuffle.c) and
the view ops in the convolutions' channels-last layout.

usage: /usr/bin/python3 check_dnnl_shuffle.py SEAM WORKDIR [-k PATTERN]

torch exports channel_shuffle(x, g) as Reshape [N, g, C/g, H, W] ->
Transpose (0, 2, 1, 3, 4) -> Reshape [N, C, H, W], ShuffleNet's after a
Concat of two branches and before a Slice of each half. Small models built
with onnx.helper: groups 2, 3 and 4; channels that are not a multiple of
16; a batch of 2; 1-D convolutions; the shuffle after a Concat of
convolutions, of a graph input, or of one convolution; followed by Slices,
a Split, a Conv, a second shuffle or the graph's output; and the shapes the
pattern must leave to the ops as written: Transpose perms that are not a
shuffle, a last Reshape to another shape, Concat inputs that are not whole
groups, parts of the output whose size is not a multiple of the groups, a
shuffled value read by a Slice and by another op. One model has a symbolic
batch and runs at batch 3. And convnext's block, whose permutes to and from
channels-last around its Linear layers must be views of the convolutions'
layout (src/backends/dnnl/builder.h, layout.c), not copies.

Each runs on the CPU kernels and on dnnl with fusion on and off; every
output must match torch (float64, from the ONNX nodes alone) within 1e-5
of the output's scale, and the CPU run. The compile log must say the
shuffle was compiled as one (or that it was not, for the shapes above), and
the reorders oneDNN runs per run (counted with ONEDNN_VERBOSE: a run with
--repeat 2 minus one with --repeat 1) must be at most the number the case
gives (each case says how many the node-by-node path ran, in the plain
layout: a reorder out of the convolutions' channels-last layout, one for
the Transpose, one back for each reader): more means they are back.
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import rel_err, vi  # noqa: E402

args, run, work, check = seamtest.checker_setup(__doc__, "dnnl_shuffle", timeout=300)
rng = np.random.RandomState(5)
TOL = 1e-5
SHUFFLED = "channel shuffle ("


class G:
    """A graph under construction, with its torch reference (float64)."""

    def __init__(self, shape, sym_batch=False):
        self.nodes, self.inits, self.k = [], {}, 0
        self.x = rng.randn(*shape).astype(np.float32)
        self.inputs = [vi("x", ["N"] + list(shape[1:]) if sym_batch else list(shape))]
        self.ref = {"x": torch.from_numpy(self.x).double()}
        self.extra = {}

    def name(self, p):
        self.k += 1
        return f"{p}{self.k}"

    def input(self, name, shape):
        a = rng.randn(*shape).astype(np.float32)
        self.extra[name] = a
        self.inputs.append(vi(name, list(shape)))
        self.ref[name] = torch.from_numpy(a).double()
        return name

    def conv(self, x, cout, relu=True, k=1, group=1):
        cin, nsp = self.ref[x].shape[1], self.ref[x].dim() - 2
        w = (rng.randn(cout, cin // group, *([k] * nsp)) / np.sqrt(cin // group * k ** nsp)).astype(np.float32)
        b = (0.1 * rng.randn(cout)).astype(np.float32)
        wn, bn, y = self.name("w"), self.name("b"), self.name("c")
        self.inits[wn], self.inits[bn] = w, b
        pads = [k // 2] * (2 * nsp)
        self.nodes.append(helper.make_node("Conv", [x, wn, bn], [y], kernel_shape=[k] * nsp, pads=pads, group=group))
        conv = F.conv2d if nsp == 2 else F.conv1d
        r = conv(self.ref[x], torch.from_numpy(w).double(), torch.from_numpy(b).double(), padding=k // 2,
                 groups=group)
        if relu:
            z = self.name("r")
            self.nodes.append(helper.make_node("Relu", [y], [z]))
            r, y = torch.relu(r), z
        self.ref[y] = r
        return y

    def op(self, op, ins, ref, n_out=1, **attrs):
        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, ins, outs, **attrs))
        for o, r in zip(outs, ref if n_out > 1 else [ref]):
            self.ref[o] = r
        return outs if n_out > 1 else outs[0]

    def ints(self, v):
        n = self.name("i")
        self.inits[n] = np.array(v, np.int64)
        return n

    def concat(self, xs):
        return self.op("Concat", xs, torch.cat([self.ref[x] for x in xs], 1), axis=1)

    def reshape(self, x, shape, ref_shape=None):
        return self.op("Reshape", [x, self.ints(shape)], self.ref[x].reshape(ref_shape or shape))

    def transpose(self, x, perm):
        return self.op("Transpose", [x], self.ref[x].permute(*perm), perm=perm)

    def shuffle(self, x, g, batch=None):
        """channel_shuffle as torch exports it (batch: the Reshapes' first
        entry, -1 for a symbolic batch)."""
        s = list(self.ref[x].shape)
        n = s[0] if batch is None else batch
        t = self.reshape(x, [n, g, s[1] // g] + s[2:], [s[0], g, s[1] // g] + s[2:])
        t = self.transpose(t, [0, 2, 1] + list(range(3, len(s) + 1)))
        return self.reshape(t, [n] + s[1:], s)

    def slice(self, x, lo, hi, axis=1):
        idx = [slice(None)] * self.ref[x].dim()
        idx[axis] = slice(lo, hi)
        return self.op("Slice", [x, self.ints([lo]), self.ints([hi]), self.ints([axis])], self.ref[x][tuple(idx)])

    def split(self, x, sizes):
        return self.op("Split", [x, self.ints(sizes)], list(torch.split(self.ref[x], sizes, 1)), n_out=len(sizes),
                       axis=1)

    def add(self, a, b):
        return self.op("Add", [a, b], self.ref[a] + self.ref[b])

    def save(self, name, outs):
        path = seamtest.save_model(os.path.join(work, name + ".onnx"), self.nodes, self.inputs,
                                   [vi(o, list(self.ref[o].shape) if self.inputs[0].type.tensor_type.shape.dim[0]
                                       .dim_value else ["N"] + list(self.ref[o].shape[1:])) for o in outs],
                                   seamtest.initializers(self.inits), name=name)
        return path, {o: self.ref[o].numpy() for o in outs}


def unit(g, x, c, batch=None):
    """A ShuffleNet v2 unit: the halves by Slices, the right one through
    conv, dw conv, conv, then Concat and shuffle."""
    left, right = g.slice(x, 0, c // 2), g.slice(x, c // 2, c)
    r = g.conv(g.conv(g.conv(right, c // 2), c // 2, relu=False, k=3, group=c // 2), c // 2)
    return g.shuffle(g.concat([left, r]), 2, batch)


def case_shufflenet_units():
    """Two ShuffleNet units after a downsampling one: the shuffle's
    Slices read in place, the last shuffle leaves the subgraph."""
    g = G((1, 24, 10, 10))
    a, b = g.conv(g.conv("x", 24, relu=False, k=3, group=24), 24), g.conv("x", 24)
    y = g.shuffle(g.concat([a, b]), 2)
    y = unit(g, unit(g, y, 48), 48)
    # (1 in, 2 per shuffle, 1 out)
    return g, [y], 3, 8  # (10 reorders node by node)


def case_g3_concat_conv():
    """Groups of 3 over 3 convolutions (60 channels, not a multiple of
    16), batch 2, a Conv after."""
    g = G((2, 16, 7, 9))
    y = g.shuffle(g.concat([g.conv("x", 20), g.conv("x", 20), g.conv("x", 20)]), 3)
    return g, [g.conv(y, 8)], 1, 5  # (5 reorders node by node)


def case_g4_single_split():
    """Groups of 4 of one convolution's output (48 channels), a Split
    into halves, a Conv on each."""
    g = G((1, 12, 6, 6))
    y = g.shuffle(g.conv("x", 48), 4)
    h0, h1 = g.split(y, [24, 24])
    return g, [g.add(g.conv(h0, 16), g.conv(h1, 16))], 1, 4  # (7 reorders node by node)


def case_g4_odd_parts():
    """Groups of 4 (5 channels each), halves of 10 channels: a half is not
    whole groups of each source: the output is one channels-last value,
    the Split as written."""
    g = G((1, 8, 5, 5))
    y = g.shuffle(g.conv("x", 20), 4)
    h0, h1 = g.split(y, [10, 10])
    return g, [g.add(g.conv(h0, 8), g.conv(h1, 8))], 1, 6  # (7 reorders node by node)


def case_plain_input():
    """The shuffle of the graph's input (plain) and a Concat of it with a
    convolution's output, to the graph's output."""
    g = G((2, 6, 4, 5))
    y = g.shuffle("x", 3)
    return g, [g.shuffle(g.concat([y, g.conv("x", 6)]), 2)], 2, 4  # (5 reorders node by node)


def case_conv1d():
    """A 1-D shuffle (rank 3), groups of 2, Slices after."""
    g = G((2, 10, 17))
    y = g.shuffle(g.concat([g.conv("x", 10), g.conv("x", 10)]), 2)
    y = g.add(g.conv(g.slice(y, 0, 10), 6), g.conv(g.slice(y, 10, 20), 6))
    return g, [y], 1, 5  # (9 reorders node by node)


def case_dynamic_batch():
    """A symbolic batch (the Reshapes take -1), run at batch 3."""
    g = G((3, 16, 6, 6), sym_batch=True)
    a, b = g.conv("x", 16), g.conv("x", 16)
    y = g.shuffle(g.concat([a, b]), 2, batch=-1)
    return g, [unit(g, y, 32, batch=-1)], 2, 6  # (9 reorders node by node)


def case_not_shuffle_perm():
    """Transpose (0, 1, 2, 4, 3): not a shuffle, compiled as written."""
    g = G((1, 8, 4, 6))
    c = g.conv("x", 8)
    t = g.transpose(g.reshape(c, [1, 2, 4, 4, 6]), [0, 1, 2, 4, 3])
    return g, [g.conv(g.reshape(t, [1, 8, 6, 4]), 4)], 0, 4  # (5 reorders node by node)


def case_other_last_reshape():
    """The shuffle's Transpose, then a Reshape to another shape."""
    g = G((1, 8, 4, 4))
    c = g.conv("x", 8)
    t = g.transpose(g.reshape(c, [1, 2, 4, 4, 4]), [0, 2, 1, 3, 4])
    return g, [g.conv(g.reshape(t, [1, 4, 8, 4]), 4)], 0, 4  # (5 reorders node by node)


def case_concat_not_groups():
    """A Concat of 12 and 20 channels shuffled in 2 groups of 16: its
    inputs are not whole groups: the Concat as written, then the shuffle
    of its output (one source)."""
    g = G((1, 8, 5, 5))
    y = g.shuffle(g.concat([g.conv("x", 12), g.conv("x", 20)]), 2)
    return g, [g.conv(y, 8)], 1, 3  # (5 reorders node by node)


def case_read_twice():
    """The shuffled value read by a Slice and by a Conv: not laid out by
    parts, one channels-last value."""
    g = G((1, 8, 5, 5))
    y = g.shuffle(g.concat([g.conv("x", 16), g.conv("x", 16)]), 2)
    return g, [g.conv(g.slice(y, 16, 32), 4), g.conv(y, 4)], 1, 6  # (7 reorders node by node)


def case_convnext_block():
    """Not a shuffle: convnext's block, a depthwise convolution, a permute
    to channels-last for the Linear layers, the permute back, the layer
    scale [C, 1, 1] and the residual Add: the permutes are views of the
    convolutions' channels-last layout, no copy."""
    g = G((2, 16, 6, 6))
    x = g.conv("x", 16, relu=False)
    t = g.transpose(g.conv(x, 16, relu=False, k=3, group=16), [0, 2, 3, 1])
    w, bias = (rng.randn(16, 16) / 4).astype(np.float32), (0.1 * rng.randn(16)).astype(np.float32)
    g.inits["lw"], g.inits["lb"] = w, bias
    m = g.op("MatMul", [t, "lw"], g.ref[t] @ torch.from_numpy(w).double())
    m = g.op("Add", [m, "lb"], g.ref[m] + torch.from_numpy(bias).double())
    u = g.transpose(m, [0, 3, 1, 2])
    scale = (0.5 + rng.rand(16, 1, 1)).astype(np.float32)
    g.inits["ls"] = scale
    y = g.add(g.op("Mul", [u, "ls"], g.ref[u] * torch.from_numpy(scale).double()), x)
    return g, [g.conv(y, 8)], 0, 2  # (6 reorders node by node)


CASES = [case_shufflenet_units, case_g3_concat_conv, case_g4_single_split, case_g4_odd_parts, case_plain_input,
         case_conv1d, case_dynamic_batch, case_not_shuffle_perm, case_other_last_reshape, case_concat_not_groups,
         case_read_twice, case_convnext_block]


def run_model(path, feed_args, out_dir, *extra, env=None):
    r = run("run", path, *feed_args, "--output-dir", out_dir, *extra, env=env)
    return r, (seamtest.load_outputs(path, out_dir) if r.returncode == 0 else None)


def reorders_per_run(path, feed_args):
    """Reorders oneDNN executes in one run: ONEDNN_VERBOSE's exec lines of
    a run with --repeat 2 (three runs) minus one with --repeat 1 (two);
    the weights' reorders at compile time cancel out."""
    counts = []
    for rep in ("2", "1"):
        env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
        r = run("run", path, *feed_args, "--target", "dnnl", "--placement", "capability", "--repeat", rep,
                "--threads", "1", env=env)
        if r.returncode:
            return None, r.stderr.strip()[-300:]
        execs = [ln for ln in r.stdout.splitlines() if ln.startswith(("onednn_verbose,exec,", "dnnl_verbose,exec,"))]
        counts.append(sum(",reorder," in ln for ln in execs))
    return counts[0] - counts[1], None


for case in CASES:
    name = case.__name__[5:]
    g, outs, n_shuffles, max_reorders = case()
    path, ref = g.save(name, outs)
    if not check.selected(name):
        continue
    feed_args = []
    for k, a in [("x", g.x)] + list(g.extra.items()):
        f = os.path.join(work, f"{name}.{k}.npy")
        np.save(f, a)
        feed_args += ["--input", f"{k}={f}"]
    r, cpu = run_model(path, feed_args, os.path.join(work, name + ".cpu"))
    if cpu is None:
        check.fail(f"{name} (cpu): {r.stderr.strip()[-400:]}")
        continue
    e = seamtest.worst(rel_err(c, ref[o]) for c, o in zip(cpu, outs))
    check.expect(e <= TOL, f"{name} (cpu) against torch: error {e:.2e}",
                 f"the CPU kernels differ from torch by {e:.3g}")
    for fusion in ("on", "off"):
        label = f"{name} (dnnl, fusion={fusion})"
        r, got = run_model(path, feed_args, os.path.join(work, f"{name}.dnnl_{fusion}"), "--target", "dnnl",
                           "--placement", "capability", "--compile-log", "--target-option", f"fusion={fusion}")
        if got is None:
            check.fail(f"{label}: {r.stderr.strip()[-400:]}")
            continue
        e_ref = seamtest.worst(rel_err(x, ref[o]) for x, o in zip(got, outs))
        e_cpu = seamtest.worst(rel_err(x, c.astype(np.float64)) for x, c in zip(got, cpu))
        check.expect(e_ref <= TOL and e_cpu <= TOL,
                     f"{label}: error {e_ref:.2e} against torch, {e_cpu:.2e} against the CPU",
                     f"dnnl differs from torch by {e_ref:.3g}, from the CPU by {e_cpu:.3g}")
        shuffles = sum(SHUFFLED in ln for ln in r.stderr.splitlines())
        check.expect(shuffles == n_shuffles, f"{label}: {n_shuffles} shuffle(s) compiled as one",
                     f"{shuffles} in the compile log:\n" + r.stderr.strip()[-1500:])
        check.expect("slow:" not in r.stderr, f"{label}: no slow: line", r.stderr.strip()[-600:])
    if max_reorders is not None and not seamtest.dnnl_avx512_layouts():
        check.ok(f"{name}: reorders per run not counted: the bound ({max_reorders}) is for oneDNN's AVX-512 layouts "
                 "(seamtest.dnnl_avx512_layouts)")
    elif max_reorders is not None:
        cnt, err = reorders_per_run(path, feed_args)
        if cnt is None:
            check.fail(f"{name}: counting reorders: {err}")
        else:
            check.expect(cnt <= max_reorders, f"{name}: {cnt} reorders per run (at most {max_reorders})",
                         f"{cnt} reorders per run, more than {max_reorders}: the shuffle's plain round trips are back")

check.finish()
