"""seam run --dynamic-batch against torch: a model exported for batch B runs
batch N (cut into chunks of B, the last padded, outputs joined).

usage: /usr/bin/python3 check_dynamic_batch.py SEAM WORKDIR [-k PATTERN]

Exports a small conv net ending in fully connected layers (random weights)
for batch 1 and for batch 8, then runs batch 7 through the first and batch
3 through the second, partitioned for a rules target (the neuron-like one)
and saved, and compares with torch's own outputs for the whole batch
(1e-4 of the output's scale). An input whose other dims differ must fail
with exit 1, naming the input.

The two cases are b1_n7 and b8_n3 (model batch, run batch).
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

parser = seamtest.arg_parser(__doc__)
parser.add_argument("seam", metavar="SEAM")
parser.add_argument("work", metavar="WORKDIR")
args = parser.parse_args()
seam, work = seamtest.Program(args.seam), args.work
check = seamtest.Checker("dynamic batch", args.k)
targets = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "targets", "neuron_like.json")
os.makedirs(work, exist_ok=True)
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        return torch.log_softmax(self.fc(torch.relu(self.conv(x)).flatten(1)), dim=1)


net = Net().eval()
for b, n in ((1, 7), (8, 3)):
    if not check.selected(f"b{b}_n{n}"):
        continue
    path = os.path.join(work, f"net_b{b}.onnx")
    torch.onnx.export(net, (torch.randn(b, 3, 8, 8),), path, input_names=["x"], output_names=["y"], opset_version=13)
    part = os.path.join(work, f"net_b{b}.part.onnx")
    r = seam("partition", path, "--target", targets, "-o", part)
    if r.returncode:
        check.fail(f"batch {b}: partition failed: {r.stderr.strip()}")
        continue
    x = np.random.RandomState(b).randn(n, 3, 8, 8).astype(np.float32)
    xin = os.path.join(work, f"x_{n}.npy")
    np.save(xin, x)
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    for model in (path, part):
        out = os.path.join(work, f"out_b{b}_{os.path.basename(model)}")
        r = seam("run", model, "--dynamic-batch", "--input", f"x={xin}", "--output-dir", out)
        if r.returncode:
            check.fail(f"{os.path.basename(model)} batch {n}: exit {r.returncode}: {r.stderr.strip()}")
            continue
        got = np.load(os.path.join(out, "y.npy"))
        err = seamtest.rel_err(got, want) if got.shape == want.shape else None
        check.expect(err is not None and err <= 1e-4,
                     f"{os.path.basename(model)}: model batch {b}, run batch {n}, shape {got.shape} "
                     f"(torch {want.shape}), error {err}")
    # without --dynamic-batch the batch is refused
    r = seam("run", path, "--input", f"x={xin}")
    if r.returncode != 1 or "'x'" not in r.stderr:
        check.fail(f"batch {b} without --dynamic-batch: exit {r.returncode}, {r.stderr.strip()!r}")
    bad = os.path.join(work, "x_bad.npy")
    np.save(bad, np.zeros((n, 3, 8, 9), np.float32))
    r = seam("run", path, "--dynamic-batch", "--input", f"x={bad}")
    if r.returncode != 1 or "'x'" not in r.stderr:
        check.fail(f"other dims differing: exit {r.returncode}, {r.stderr.strip()!r}")
check.finish()
