"""The dnnl backend's Concat without oneDNN's concat primitive
(src/backends/dnnl/concat.c): sources written in place into the output, or
reordered into their sub-memories.

usage: /usr/bin/python3 check_dnnl_concat.py SEAM WORKDIR [-k PATTERN]

Small models built with onnx.helper: inception-like blocks (1x1, 5x5 and
3x3 branches of 64, 48, 96 and 32 channels, one branch a pool) at batch 1
and 2; plain producers (eltwise ops on the graph input), channels-last
producers (convolutions oneDNN runs in acdb), channel counts that are not
a multiple of the block; a source read by the Concat and by a later node,
a source used twice, a graph input as a source, a Concat that is the
graph's output (plain sources written straight into the caller's buffer),
a source that is also a residual Add's operand, a densenet-like chain of
Concats of growing lists, Concats on axis 0 and axis 2; dense layers
whose channels-last Concat is read by a BatchNormalization and Relu alone
(one pass of seam's, host.c, with fusion on; "norm"), rerun with
SEAM_DNNL_HOST_SIMD=0 for the rows without AVX-512; GlobalAveragePool of
channels-last values at batch 1 and 2 (host.c, "host"), and of a blocked
one (oneDNN's pooling, "pool").

Each runs on the CPU kernels and on dnnl with fusion on and off; every
output must match torch (float64, from the ONNX nodes alone) within 1e-5 of
the output's scale, and the CPU run. The compile log must say what each
Concat became, as the case expects: "place" (no step: every source written
in place), "reorders N/K" (N reorders into the output, K sources in place)
or "concat" (oneDNN's concat primitive). The layouts are those oneDNN 2.6
picks on an AVX-512 machine (aBcd16b after a Winograd convolution, acdb
for small 1x1 convolutions); on a CPU without AVX-512 (aBcd8b) what the
Concats became is printed, not checked (seamtest.dnnl_avx512_layouts).
"""
import os
import re
import sys

import numpy as np
import torch
import torch.nn.functional as F
from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import rel_err, vi  # noqa: E402

args, run, work, check = seamtest.checker_setup(__doc__, "dnnl_concat", timeout=300)
rng = np.random.RandomState(11)
TOL = 1e-5
LOG_RE = re.compile(r"node \d+ '([^']*)' \((?:Concat|GlobalAveragePool)\): (.*)$")


class G:
    """A graph under construction, with its torch reference (float64)."""

    def __init__(self, shape):
        self.nodes, self.inits, self.k = [], {}, 0
        self.x = rng.randn(*shape).astype(np.float32)
        self.inputs = [vi("x", list(shape))]
        self.ref = {"x": torch.from_numpy(self.x).double()}
        self.concats = []  # Concat node names, in order

    def name(self, p):
        self.k += 1
        return f"{p}{self.k}"

    def op(self, op, ins, ref, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        self.ref[out] = ref
        return out

    def conv(self, x, cout, k=1, relu=True):
        cin = self.ref[x].shape[1]
        w = (rng.randn(cout, cin, k, k) / np.sqrt(cin * k * k)).astype(np.float32)
        b = (0.1 * rng.randn(cout)).astype(np.float32)
        wn, bn = self.name("w"), self.name("b")
        self.inits[wn], self.inits[bn] = w, b
        y = self.op("Conv", [x, wn, bn], F.conv2d(self.ref[x], torch.from_numpy(w).double(),
                                                  torch.from_numpy(b).double(), padding=k // 2),
                    kernel_shape=[k, k], pads=[k // 2] * 4)
        return self.op("Relu", [y], torch.relu(self.ref[y])) if relu else y

    def stem(self):
        """A 3x3 convolution of 64 to 64 channels: Winograd, aBcd16b."""
        return self.conv("x", 64, k=3)

    def maxpool(self, x):
        return self.op("MaxPool", [x], F.max_pool2d(self.ref[x], 3, 1, 1), kernel_shape=[3, 3], pads=[1] * 4)

    def unary(self, op, x):
        f = {"Relu": torch.relu, "Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "Abs": torch.abs}[op]
        return self.op(op, [x], f(self.ref[x]))

    def bn(self, x, relu=True, eps=1e-3):
        """BatchNormalization in inference mode (random statistics, some
        scales negative), then Relu."""
        c = self.ref[x].shape[1]
        par = [rng.randn(c), 0.3 * rng.randn(c), 0.2 * rng.randn(c), 0.5 + rng.rand(c)]
        names = [self.name(p) for p in ("gamma", "beta", "mean", "var")]
        for nm, v in zip(names, par):
            self.inits[nm] = v.astype(np.float32)
        t = [torch.from_numpy(self.inits[nm]).double() for nm in names]
        y = self.op("BatchNormalization", [x] + names,
                    F.batch_norm(self.ref[x], t[2], t[3], t[0], t[1], False, 0.0, eps), epsilon=eps)
        return self.op("Relu", [y], torch.relu(self.ref[y])) if relu else y

    def gap(self, x):
        """GlobalAveragePool, watched as the Concats are."""
        y = self.op("GlobalAveragePool", [x], self.ref[x].mean((2, 3), keepdim=True))
        self.concats.append(y)
        return y

    def add(self, a, b):
        return self.op("Add", [a, b], self.ref[a] + self.ref[b])

    def concat(self, xs, axis=1):
        y = self.op("Concat", xs, torch.cat([self.ref[x] for x in xs], axis), axis=axis)
        self.concats.append(y)
        return y

    def inception(self, x, pool=True):
        """Branches of 64, 48 -> 64 (5x5), 96 (3x3) and a pool -> 32 (or 32
        from a 1x1) channels."""
        a = self.conv(x, 64)
        b = self.conv(self.conv(x, 48), 64, k=5)
        c = self.conv(self.conv(x, 64), 96, k=3)
        d = self.conv(self.maxpool(x), 32) if pool else self.conv(x, 32)
        return self.concat([a, b, c, d])

    def save(self, name, outs):
        path = seamtest.save_model(os.path.join(work, name + ".onnx"), self.nodes, self.inputs,
                                   [vi(o, list(self.ref[o].shape)) for o in outs], seamtest.initializers(self.inits),
                                   name=name)
        return path, {o: self.ref[o].numpy() for o in outs}


def case_inception_b1():
    """Two inception blocks at batch 1 after a Winograd convolution (which
    writes aBcd16b; the direct ones after it keep that layout): every
    source in place, no step."""
    g = G((1, 64, 9, 9))
    y = g.inception(g.inception(g.stem()))
    return g, [g.conv(y, 16)], ["place", "place"]


def case_inception_b2():
    """The same at batch 2: no source is a contiguous range of a blocked
    output (the batch is outside the channels), and oneDNN has no jit
    reorder into a blocked sub-memory: the concat primitive."""
    g = G((2, 64, 7, 7))
    y = g.inception(g.stem())
    return g, [g.conv(y, 16)], ["concat"]


def case_odd_channels():
    """Blocked sources of 24, 40 and 20 channels (not multiples of 16) at
    batch 1: their places do not start on a block: jit reorders into
    their sub-memories."""
    g = G((1, 64, 6, 6))
    s = g.stem()
    y = g.concat([g.conv(s, 24), g.conv(s, 40), g.conv(s, 20)])
    return g, [g.conv(y, 8)], ["reorders 3/0"]


def case_last_partial():
    """Blocked sources of 32, 16 and 20 channels: only the last ends in a
    partial block, which is the output's own: every source in place."""
    g = G((1, 64, 6, 6))
    s = g.stem()
    y = g.concat([g.conv(s, 32), g.conv(s, 16), g.conv(s, 20)])
    return g, [g.conv(y, 8)], ["place"]


def case_plain_sources():
    """Plain producers (eltwise ops on the graph input) at batch 1: in
    place in a plain output, which a Conv then reads."""
    g = G((1, 5, 6, 7))
    y = g.concat([g.unary("Relu", "x"), g.unary("Sigmoid", "x"), g.unary("Tanh", "x")])
    return g, [g.conv(y, 8)], ["place"]


def case_output_plain():
    """A Concat of plain sources that is the graph's output: the producers
    write into the caller's buffer, which changes from run to run."""
    g = G((1, 3, 5, 4))
    y = g.concat([g.unary("Tanh", "x"), g.unary("Abs", "x")])
    return g, [y], ["place"]


def case_output_blocked():
    """A Concat of blocked sources that is the graph's output: in place
    into a blocked value, one reorder to the caller's plain buffer."""
    g = G((1, 64, 5, 5))
    s = g.stem()
    y = g.concat([g.conv(s, 32), g.conv(s, 16)])
    return g, [y], ["place"]


def case_read_twice():
    """A source also read by a later Conv (in place: its bytes are the
    output's), and a source that is a residual Add's operand after the
    Concat, also in place: the convolution reading the Concat must not
    write its sum over that operand's bytes, which it reads (fuse.c
    may_overwrite: a new buffer, the operand copied there first)."""
    g = G((1, 64, 6, 6))
    s = g.stem()
    a, b = g.conv(s, 32), g.conv(s, 32)
    y = g.concat([a, b])
    z = g.add(g.conv(y, 32, relu=False), a)
    return g, [g.conv(z, 8), g.conv(b, 8)], ["place"]


def case_used_twice():
    """A source used twice in one Concat: reordered twice; the other in
    place."""
    g = G((1, 64, 6, 6))
    s = g.stem()
    a, b = g.conv(s, 16), g.conv(s, 32)
    y = g.concat([a, b, a])
    return g, [g.conv(y, 8)], ["reorders 2/1"]


def case_graph_input():
    """The graph's input as a source (the caller's bytes): reordered; the
    convolution after it in place."""
    g = G((1, 16, 6, 6))
    y = g.concat([g.unary("Relu", "x"), "x", g.unary("Tanh", "x")])
    return g, [g.conv(y, 8)], ["reorders 1/2"]


def case_channels_last():
    """Convolutions oneDNN runs channels-last (acdb: few channels, a 1x1
    kernel) concatenated on channels: no source is a contiguous range, and
    the spatial dims are outside the channels: oneDNN's concat, which
    splits its copy over them (faster there than a reorder per source,
    bench/results/dnnl_concat.md)."""
    g = G((1, 3, 8, 8))
    y = g.concat([g.conv("x", 3), g.conv("x", 5)])
    return g, [g.conv(y, 4)], ["concat"]


def case_densenet_chain():
    """A densenet-like chain: each layer concatenates every feature so
    far, read by the next layer's 1x1 conv; channels-last: oneDNN's concat
    (a source read by several Concats is copied by each)."""
    g = G((1, 16, 7, 7))
    feats = [g.conv("x", 32)]
    for _ in range(4):
        y = g.concat(feats)
        feats.append(g.conv(g.conv(y, 32), 16, k=3))
    return g, [g.concat(feats)], ["concat"] * 5


def case_densenet_norm():
    """A densenet's dense layers: each Concat of every feature so far is
    read by a BatchNormalization and its Relu alone, channels-last: one
    pass of seam's (host.c) with fusion on, normalizing each source
    into its channels; oneDNN's concat and batch norm with fusion off.
    Features of 20 channels: rows that end in a partial vector."""
    g = G((1, 16, 7, 7))
    feats = [g.conv("x", 32)]
    for _ in range(4):
        y = g.concat(feats)
        feats.append(g.conv(g.conv(g.bn(y), 32), 20, k=3))
    y = g.bn(g.concat(feats))
    return g, [g.conv(y, 8)], {"on": ["norm"] * 5, "off": ["concat"] * 5}


def case_norm_variants():
    """A single-source Concat read by a batch norm without a Relu; a Concat
    whose batch norm's Relu is the graph's output (written channels-last,
    then one reorder to the caller's plain buffer); a Concat also read by a
    convolution (not fused: its bytes are needed)."""
    g = G((1, 24, 6, 6))
    a, b = g.conv("x", 40), g.conv("x", 24)
    y1 = g.conv(g.bn(g.concat([a]), relu=False), 16)
    y2 = g.bn(g.concat([a, b]))
    c3 = g.concat([b, a])
    y3 = g.add(g.conv(g.bn(c3), 16), g.conv(c3, 16))
    return g, [y1, y2, y3], {"on": ["norm", "norm", "concat"], "off": ["concat"] * 3}


def case_global_pool():
    """GlobalAveragePool of channels-last values (host.c, fusion on and
    off): 32 channels over 40 x 40 pixels (two threads' rows), 80 (a block
    of 64 and one of 16) and 20 (a partial vector) over 12 x 12, 24 over 5 x 5
    (one thread), and a pool that is the graph's output; the squeeze-excite
    block after the first."""
    g = G((1, 8, 40, 40))
    a = g.conv("x", 32, k=3)
    s = g.unary("Sigmoid", g.conv(g.conv(g.gap(a), 8), 32))
    m = g.op("Mul", [a, s], g.ref[a] * g.ref[s])
    p = g.op("MaxPool", [m], F.max_pool2d(g.ref[m], 4, 4), kernel_shape=[4, 4], strides=[4, 4])
    b, c = g.conv(p, 80), g.conv(p, 20)
    small = g.conv(g.op("MaxPool", [c], F.max_pool2d(g.ref[c], 2, 2), kernel_shape=[2, 2], strides=[2, 2]), 24)
    outs = [g.conv(g.gap(b), 4), g.gap(c), g.conv(g.gap(small), 4)]
    return g, outs, ["host"] * 4


def case_global_pool_batch2():
    """The same at batch 2: each image's rows summed on their own."""
    g = G((2, 8, 24, 24))
    a = g.conv("x", 48, k=3)
    return g, [g.gap(a)], ["host"]


def case_global_pool_blocked():
    """A GlobalAveragePool of a blocked value (after a Winograd
    convolution): oneDNN's pooling."""
    g = G((1, 64, 6, 6))
    return g, [g.conv(g.gap(g.stem()), 8)], ["pool"]


def case_densenet_blocked():
    """The densenet-like chain in aBcd16b at batch 1: each new feature is
    written in place into the first Concat that reads it; the earlier
    ones, views of earlier Concats by then, are copied as one run each."""
    g = G((1, 64, 6, 6))
    feats = [g.conv(g.stem(), 32)]
    for _ in range(3):
        y = g.concat(feats)
        feats.append(g.conv(g.conv(y, 64), 32, k=3))
    return g, [g.conv(g.concat(feats), 16)], ["place", "reorders 1/1", "reorders 2/1", "reorders 3/1"]


def case_axis0():
    """Concat on axis 0 of blocked and plain sources: the batch is the
    outermost dim: in place."""
    g = G((1, 64, 5, 5))
    s = g.stem()
    y = g.concat([g.conv(s, 16), g.conv(s, 16), g.conv(s, 16)], axis=0)
    z = g.concat([g.unary("Relu", "x"), g.unary("Tanh", "x")], axis=0)
    return g, [g.conv(y, 8), g.conv(z, 8)], ["place", "place"]


def case_axis2():
    """Concat on axis 2 (height) of plain sources: no contiguous range (the
    channels are outside): reorders; on a 1-channel value, in place."""
    g = G((1, 4, 5, 6))
    y = g.concat([g.unary("Relu", "x"), g.unary("Sigmoid", "x")], axis=2)
    g2 = g.op("ReduceMean", ["x"], g.ref["x"].mean(1, keepdim=True), axes=[1])
    z = g.concat([g.unary("Tanh", g2), g.unary("Abs", g2)], axis=2)
    return g, [g.conv(y, 8), z], ["reorders 2/0", "place"]


CASES = [case_inception_b1, case_inception_b2, case_odd_channels, case_last_partial, case_plain_sources,
         case_output_plain, case_output_blocked, case_read_twice, case_used_twice, case_graph_input,
         case_channels_last, case_densenet_chain, case_densenet_norm, case_norm_variants, case_global_pool,
         case_global_pool_batch2, case_global_pool_blocked, case_densenet_blocked, case_axis0, case_axis2]


AVX512 = seamtest.dnnl_avx512_layouts()


def what_became(stderr, names):
    """Per Concat (in names' order): place, reorders N/K, concat, or ? (no
    line)."""
    seen = {}
    for ln in stderr.splitlines():
        m = LOG_RE.search(ln)
        if not m or m.group(1) in seen:
            continue
        text = m.group(2)
        r = re.match(r"(\d+) reorders into the output \((\d+) sources written in place\)", text)
        if text.startswith("no step: sources written in place"):
            seen[m.group(1)] = "place"
        elif r:
            seen[m.group(1)] = f"reorders {r.group(1)}/{r.group(2)}"
        elif text.startswith("concat "):
            seen[m.group(1)] = "concat"
        elif text.startswith("host concat_norm;"):
            seen[m.group(1)] = "norm"
        elif text.startswith("host global_pool;"):
            seen[m.group(1)] = "host"
        elif text.startswith("pooling"):
            seen[m.group(1)] = "pool"
    return [seen.get(n, "?") for n in names]


def run_model(path, feed, out_dir, *extra, env=None):
    r = run("run", path, "--input", f"x={feed}", "--output-dir", out_dir, *extra, env=env)
    return r, (seamtest.load_outputs(path, out_dir) if r.returncode == 0 else None)


SCALAR = dict(os.environ, SEAM_DNNL_HOST_SIMD="0")

for case in CASES:
    name = case.__name__[5:]
    g, outs, expect = case()
    path, ref = g.save(name, outs)
    if not check.selected(name):
        continue
    feed = os.path.join(work, f"{name}.x.npy")
    np.save(feed, g.x)
    r, cpu = run_model(path, feed, os.path.join(work, name + ".cpu"))
    if cpu is None:
        check.fail(f"{name} (cpu): {r.stderr.strip()[-400:]}")
        continue
    e = seamtest.worst(rel_err(c, ref[o]) for c, o in zip(cpu, outs))
    check.expect(e <= TOL, f"{name} (cpu) against torch: error {e:.2e}", f"the CPU kernels differ from torch by {e:.3g}")
    for fusion in ("on", "off"):
        label = f"{name} (dnnl, fusion={fusion})"
        r, got = run_model(path, feed, os.path.join(work, f"{name}.dnnl_{fusion}"), "--target", "dnnl", "--placement",
                           "capability", "--compile-log", "--target-option", f"fusion={fusion}", "--repeat", "2")
        if got is None:
            check.fail(f"{label}: {r.stderr.strip()[-400:]}")
            continue
        e_ref = seamtest.worst(rel_err(x, ref[o]) for x, o in zip(got, outs))
        e_cpu = seamtest.worst(rel_err(x, c.astype(np.float64)) for x, c in zip(got, cpu))
        check.expect(e_ref <= TOL and e_cpu <= TOL, f"{label}: error {e_ref:.2e} against torch, {e_cpu:.2e} against the CPU",
                     f"dnnl differs from torch by {e_ref:.3g}, from the CPU by {e_cpu:.3g}")
        became = what_became(r.stderr, g.concats)
        want = expect[fusion] if isinstance(expect, dict) else expect
        if not AVX512:
            check.ok(f"{label}: what the Concats became ({became}) not checked: the expectations are oneDNN's AVX-512 layouts")
        else:
            check.expect(became == want, f"{label}: the Concats became {became}",
                         f"expected {want}; the log:\n" + r.stderr.strip()[-2000:])
        check.expect("slow:" not in r.stderr, f"{label}: no slow: line", r.stderr.strip()[-600:])
    if "norm" in str(expect) or "host" in str(expect):
        # the host steps' rows without AVX-512, as on a CPU that lacks it
        label = f"{name} (dnnl, SEAM_DNNL_HOST_SIMD=0)"
        r, got = run_model(path, feed, os.path.join(work, f"{name}.dnnl_scalar"), "--target", "dnnl", "--placement",
                           "capability", env=SCALAR)
        if got is None:
            check.fail(f"{label}: {r.stderr.strip()[-400:]}")
            continue
        e_ref = seamtest.worst(rel_err(x, ref[o]) for x, o in zip(got, outs))
        check.expect(e_ref <= TOL, f"{label}: error {e_ref:.2e} against torch", f"dnnl differs from torch by {e_ref:.3g}")

check.finish()
