"""Two dnnl fusions (src/backends/dnnl/pool_norm.c, reduce.c): a
BatchNormalization whose
only reader is a Relu runs as one batch_normalization primitive with
oneDNN's fuse_norm_relu, and a ReduceMean / ReduceMax over exactly the
spatial axes of a rank-4 or rank-5 value runs as a global pooling that
reads the convolution's layout as it is.

usage: /usr/bin/python3 check_dnnl_ops2.py SEAM WORKDIR [-k PATTERN]

Small torch modules exported with torch.onnx.export (opset 13, and 18 where
the axes of a Reduce are an input): a densenet-like block (BN -> Relu ->
Conv, a Concat, BN -> Relu again), a BN read by a Relu and by a Conv (no
fusion: the Relu is its own pass), the classifier head (Conv -> Relu ->
mean over H, W -> Linear, keepdims 0) and a squeeze-excitation gate (mean
over H, W keepdims 1 -> Conv -> Sigmoid -> Mul), a 3-D head (rank 5), the
spatial max (keepdims 0 and 1), both of the graph's input (plain), and means over axis 1 or axis 3 only,
which are not a global pooling and stay reductions.

Each runs on the CPU kernels and on dnnl with fusion on and off; every
output must match torch in float64 (the same module, eval mode) within
1e-5 of the output's scale, and the CPU run. The compile log (--compile-log)
must name the primitive each node became: a pooling for the spatial
reductions, and no reorder of its input, reduction for the others; with fusion on each BN read by a
Relu alone is one batch_normalization that fuses it, and no eltwise runs
for it; with fusion off, and for the BN with two readers, the Relu is an
eltwise of its own. The primitives oneDNN executes (DNNL_VERBOSE) must be
no reference kernel, and the log must have no slow: line.
"""
import os
import re
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import rel_err  # noqa: E402

args, run, work, check = seamtest.checker_setup(__doc__, "dnnl_ops2", timeout=300)
torch.manual_seed(7)
TOL = 1e-5


def bn(c):
    """A BatchNorm2d with statistics that are not the identity."""
    m = nn.BatchNorm2d(c)
    with torch.no_grad():
        m.running_mean.uniform_(-0.5, 0.5)
        m.running_var.uniform_(0.5, 2.0)
        m.weight.uniform_(0.5, 1.5)
        m.bias.uniform_(-0.5, 0.5)
    return m


class DenseBlock(nn.Module):
    """Two densenet layers: BN -> Relu -> Conv 1x1 -> BN -> Relu -> Conv
    3x3, their output concatenated to the features."""

    def __init__(self, c=16, growth=8):
        super().__init__()
        self.layers = nn.ModuleList()
        for k in range(2):
            cin = c + k * growth
            self.layers.append(nn.Sequential(bn(cin), nn.ReLU(), nn.Conv2d(cin, 32, 1, bias=False), bn(32), nn.ReLU(),
                                             nn.Conv2d(32, growth, 3, padding=1, bias=False)))
        self.final = nn.Sequential(bn(c + 2 * growth), nn.ReLU())

    def forward(self, x):
        for layer in self.layers:
            x = torch.cat([x, layer(x)], 1)
        return self.final(x)


class BnTwoReaders(nn.Module):
    """A BN read by a Relu and by a Conv: the Relu cannot be fused."""

    def __init__(self):
        super().__init__()
        self.bn, self.conv = bn(16), nn.Conv2d(16, 8, 1)

    def forward(self, x):
        y = self.bn(x)
        return torch.relu(y), self.conv(y)


class Head(nn.Module):
    """Conv -> Relu -> reduce over the spatial axes (or others) -> more."""

    def __init__(self, reduce, dims=(2, 3), keep=False, linear=True, cin=8, c=32):
        super().__init__()
        self.reduce, self.dims, self.keep = reduce, dims, keep
        conv = nn.Conv3d if len(dims) == 3 else nn.Conv2d
        self.conv = conv(cin, c, 3, padding=1)
        self.fc = nn.Linear(c, 10) if linear else None

    def forward(self, x):
        y = torch.relu(self.conv(x))
        if self.reduce == "mean":
            y = y.mean(self.dims, keepdim=self.keep)
        else:
            y = y.amax(self.dims, keepdim=self.keep)
        return self.fc(y) if self.fc is not None else y


class SqueezeExcite(nn.Module):
    """mnasnet's / efficientnet's gate: mean over H, W kept -> Conv ->
    Relu -> Conv -> Sigmoid -> Mul."""

    def __init__(self, c=32):
        super().__init__()
        self.conv = nn.Conv2d(8, c, 3, padding=1)
        self.fc1, self.fc2 = nn.Conv2d(c, 8, 1), nn.Conv2d(8, c, 1)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        s = torch.sigmoid(self.fc2(torch.relu(self.fc1(y.mean((2, 3), keepdim=True)))))
        return y * s


class MeanOfInput(nn.Module):
    """The spatial mean of the graph's input (plain layout), and its max."""

    def forward(self, x):
        return x.mean((2, 3)), x.amax((-1, -2), keepdim=True)


# name, module, input shape, opset, what each reduction must become ("pooling"
# or "reduction", in node order), BNs fused with their Relu when fusion is on
# (the exporter folds a BN that follows a Conv into it: the densenet block
# keeps 3 of its 5)
CASES = [
    ("dense_block", DenseBlock(), (2, 16, 9, 9), 13, [], 3),
    ("bn_two_readers", BnTwoReaders(), (1, 16, 7, 7), 13, [], 0),
    ("head_mean", Head("mean"), (2, 8, 7, 7), 13, ["pooling"], 0),
    ("head_mean_opset18", Head("mean"), (2, 8, 7, 7), 18, ["pooling"], 0),
    ("se_mean_keepdims", SqueezeExcite(), (1, 8, 10, 10), 13, ["pooling"], 0),
    ("head_mean_3d", Head("mean", dims=(2, 3, 4), cin=4, c=16), (1, 4, 5, 6, 7), 13, ["pooling"], 0),
    ("max_spatial", Head("max"), (2, 8, 7, 7), 13, ["pooling"], 0),
    ("max_spatial_keepdims", Head("max", keep=True, linear=False), (1, 8, 6, 5), 13, ["pooling"], 0),
    ("mean_of_input", MeanOfInput(), (2, 24, 5, 9), 13, ["pooling", "pooling"], 0),
    ("mean_channels", Head("mean", dims=(1,), keep=True, linear=False), (1, 8, 6, 6), 13, ["reduction"], 0),
    ("mean_width", Head("mean", dims=(3,), linear=False), (2, 8, 6, 5), 13, ["reduction"], 0),
]

def to_opset18(path):
    """The model at opset 18, where a Reduce's axes are a constant input
    (this torch exports at most opset 17; the other ops are unchanged
    from 13 to 18; this onnx package's checker stops at opset 17)."""
    m = onnx.load(path)
    for k, n in enumerate(m.graph.node):
        axes = [a for a in n.attribute if a.name == "axes"]
        if n.op_type.startswith("Reduce") and axes:
            name = f"axes_{k}"
            m.graph.initializer.append(onnx.numpy_helper.from_array(np.array(axes[0].ints, np.int64), name))
            n.input.append(name)
            n.attribute.remove(axes[0])
    m.opset_import[0].version = 18
    onnx.save(m, path)


LOG_LINE = re.compile(r"node \d+ '[^']*' \((\w+)\): (\S+) (\S+);(.*)$")


def compiled(log):
    """The compile log's primitive lines: (op, primitive kind, impl, rest)."""
    out = []
    for ln in log.splitlines():
        m = LOG_LINE.search(ln)
        if m:
            out.append(m.groups())
    return out


for name, module, shape, opset, reductions, n_fused in CASES:
    if not check.selected(name):
        continue
    module.eval()
    x = torch.randn(*shape)
    path = os.path.join(work, name + ".onnx")
    with torch.no_grad():
        torch.onnx.export(module, (x,), path, opset_version=min(opset, 13), do_constant_folding=True)
        if opset == 18:
            to_opset18(path)
        ref = module.double()(x.double())
    refs = [r.numpy() for r in (ref if isinstance(ref, tuple) else (ref,))]
    xf = os.path.join(work, name + ".x.npy")
    np.save(xf, x.numpy())
    feed = ["--input", f"{seamtest.feeds(onnx.load(path))[0].name}={xf}"]

    def run_model(tag, *extra, env=None):
        out_dir = os.path.join(work, f"{name}.{tag}")
        r = run("run", path, *feed, "--output-dir", out_dir, *extra, env=env)
        return r, (seamtest.load_outputs(path, out_dir) if r.returncode == 0 else None)

    r, cpu = run_model("cpu", "--target", "cpu")
    if cpu is None:
        check.fail(f"{name} (cpu): {r.stderr.strip()[-400:]}")
        continue
    e = seamtest.worst(rel_err(c, w) for c, w in zip(cpu, refs))
    check.expect(e <= TOL, f"{name} (cpu) against torch: error {e:.2e}", f"the CPU kernels differ by {e:.3g}")
    for fusion in ("on", "off"):
        label = f"{name} (dnnl, fusion={fusion})"
        env = dict(os.environ, DNNL_VERBOSE="1", ONEDNN_VERBOSE="1")
        r, got = run_model(f"dnnl_{fusion}", "--target", "dnnl", "--placement", "capability", "--compile-log",
                           "--target-option", f"fusion={fusion}", env=env)
        if got is None:
            check.fail(f"{label}: {r.stderr.strip()[-400:]}")
            continue
        e_ref = seamtest.worst(rel_err(g, w) for g, w in zip(got, refs))
        e_cpu = seamtest.worst(rel_err(g, c.astype(np.float64)) for g, c in zip(got, cpu))
        check.expect(e_ref <= TOL and e_cpu <= TOL,
                     f"{label}: error {e_ref:.2e} against torch, {e_cpu:.2e} against the CPU",
                     f"dnnl differs from torch by {e_ref:.3g}, from the CPU by {e_cpu:.3g}")
        prims = compiled(r.stderr)
        log_tail = r.stderr.strip()[-1500:]
        # (a pooling reads the convolution's layout: no reorder under the
        # Reduce node; a reduction may reorder its input first)
        got_red = [kind.split("_v")[0] for op, kind, _, _ in prims if op.startswith("Reduce")]
        if "pooling" not in reductions:
            got_red = [k for k in got_red if k != "reorder"]
        if seamtest.dnnl_avx512_layouts():
            check.expect(got_red == reductions, f"{label}: the reductions became {reductions}",
                         f"they became {got_red}:\n{log_tail}")
        else:
            check.ok(f"{label}: the reductions became {got_red}, not checked against {reductions}: the expectation "
                     "is oneDNN's AVX-512 layouts (seamtest.dnnl_avx512_layouts)")
        bns = [rest for op, kind, _, rest in prims if op == "BatchNormalization" and kind == "batch_normalization"]
        n_bn = sum(1 for ln in r.stderr.splitlines() if "(BatchNormalization):" in ln and "node " in ln)
        fused = sum("(Relu)" in rest and "fuses" in rest for rest in bns)
        relus = sum(1 for op, kind, _, _ in prims if op == "Relu" and kind == "eltwise")
        want_fused = n_fused if fusion == "on" else 0
        check.expect(len(bns) == n_bn and fused == want_fused,
                     f"{label}: {n_bn} batch_normalization(s), {want_fused} fusing their Relu",
                     f"{len(bns)} batch_normalization lines, {fused} fuse a Relu:\n{log_tail}")
        if n_bn:
            check.expect(not (fusion == "on" and n_fused and relus),
                         f"{label}: no eltwise pass for a fused Relu",
                         f"{relus} Relu eltwise primitives:\n{log_tail}")
            if fusion == "off" or not n_fused:
                check.expect(relus >= 1, f"{label}: the unfused Relu is an eltwise of its own",
                             f"no Relu eltwise in the log:\n{log_tail}")
        execs = [ln for ln in r.stdout.splitlines() + r.stderr.splitlines()
                 if ln.startswith(("onednn_verbose,exec,", "dnnl_verbose,exec,"))]
        check.expect(execs, f"{label}: DNNL_VERBOSE shows the primitives run", "no exec line: is verbose on?")
        refs_run = [ln for ln in execs if ",ref:" in ln or ",ref," in ln]
        check.expect(not refs_run and "slow:" not in r.stderr, f"{label}: no reference kernel, no slow: line",
                     "\n".join(refs_run[:3]) or log_tail)
        if any(k == "pooling" for k in reductions):
            red_exec = [ln for ln in execs if ",reduction," in ln]
            check.expect(not red_exec, f"{label}: no reduction primitive runs", "\n".join(red_exec[:3]))

check.finish()
