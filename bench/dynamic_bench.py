"""Models with symbolic dims: seam --target dnnl against ONNX Runtime at
several shapes, with and without buckets, and what the first run at a new
shape costs.

usage: PYTHONPATH=build/python /usr/bin/python3 bench/dynamic_bench.py [--seam build/seam]
           [--work DIR] [--rounds 3] [--repeat 20] [--threads 2] [--pause 2] [--ort DIR]

Exports three models with dynamic_axes (random weights): a conv net with
dynamic H/W, a transformer encoder with dynamic batch and sequence, an LSTM
with a dynamic sequence. Per model and shape, alternating per round (best
median over the rounds, as bench/dnnl_bench.py does):

  fixed     `seam run MODEL --target dnnl --input x=...`: seam run fixes the
            symbolic dims from the input file, then partitions and compiles
  symbolic  `seam run PART --input x=...` on the model partitioned without
            shapes (--placement capability) and saved: each device subgraph
            is compiled at the first (untimed) run for that shape
  buckets   the same, saved with --bucket for each of the shapes: compiled
            when the session is made
  ORT       bench/ort/ort_run.js on MODEL (node, onnxruntime-node)

Then, per model, one Python session (seam.Session) on PART and on the
bucketed file, run once at each shape: the first run's time (a compile at
each new shape without buckets), a seen shape's run time, and the compile
time the session counted (Session.stats()).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from dnnl_bench import median_of, run  # noqa: E402

warnings.filterwarnings("ignore")


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        c = [3, 32, 64, 64, 128]
        layers = []
        for i in range(4):
            layers += [nn.Conv2d(c[i], c[i + 1], 3, padding=1), nn.BatchNorm2d(c[i + 1]), nn.ReLU()]
            if i < 3:
                layers.append(nn.MaxPool2d(2))
        self.f = nn.Sequential(*layers, nn.Conv2d(128, 8, 1))

    def forward(self, x):
        return torch.sigmoid(self.f(x))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(64, 256)
        layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=4)

    def forward(self, x):
        return self.enc(self.inp(x))


class LSTMNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm, self.fc = nn.LSTM(64, 256), nn.Linear(256, 32)

    def forward(self, x):
        return self.fc(self.lstm(x)[0])


MODELS = {
    "conv_hw": (ConvNet, {0: "N", 2: "H", 3: "W"}, {0: "N", 2: "Ho", 3: "Wo"},
                [(1, 3, 224, 224), (1, 3, 320, 320), (1, 3, 480, 640)]),
    "encoder_bs": (Encoder, {0: "B", 1: "S"}, {0: "B", 1: "S"}, [(1, 64, 64), (4, 128, 64), (8, 32, 64)]),
    "lstm_t": (LSTMNet, {0: "T"}, {0: "T"}, [(32, 4, 64), (128, 4, 64), (512, 4, 64)]),
}


def sh(shape):
    return "x".join(map(str, shape))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seam", default=os.path.join(HERE, "..", "build", "seam"))
    p.add_argument("--work", default="/tmp/seam_dynamic_bench")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--pause", type=float, default=2)
    p.add_argument("--ort", default=os.path.join(HERE, "ort"), help="the folder of ort_run.js with node_modules")
    a = p.parse_args()
    import seam
    os.makedirs(a.work, exist_ok=True)
    ort = a.ort
    print("| model | shape | fixed ms | symbolic ms | buckets ms | ORT ms | fixed / ORT | symbolic / ORT |")
    print("|---|---|---|---|---|---|---|---|")
    first_rows = []
    for name, (ctor, axes, yaxes, shapes) in MODELS.items():
        torch.manual_seed(0)
        net = ctor().eval()
        path, part, bpart = (os.path.join(a.work, name + s) for s in (".onnx", ".part.onnx", ".buckets.onnx"))
        torch.onnx.export(net, (torch.randn(*shapes[0]),), path, input_names=["x"], output_names=["y"],
                          opset_version=13, dynamic_axes={"x": axes, "y": yaxes})
        subprocess.run([a.seam, "partition", path, "--target", "dnnl", "--placement", "capability", "-o", part],
                       check=True, capture_output=True)
        buckets = [arg for s in shapes for arg in ("--bucket", f"x={sh(s)}")]
        subprocess.run([a.seam, "partition", path, "--target", "dnnl", "--placement", "capability", *buckets,
                        "-o", bpart], check=True, capture_output=True)
        inputs = []
        for k, s in enumerate(shapes):
            inp = os.path.join(a.work, f"{name}.{k}.npy")
            np.save(inp, np.random.RandomState(k).randn(*s).astype(np.float32))
            inputs.append(inp)
        for s, inp in zip(shapes, inputs):
            time.sleep(a.pause)
            best = {"fixed": 1e30, "symbolic": 1e30, "buckets": 1e30, "ort": 1e30}
            for _ in range(a.rounds):
                common = ["--input", f"x={inp}", "--repeat", str(a.repeat), "--threads", str(a.threads), "--quiet"]
                for key, cmd in (("fixed", [a.seam, "run", path, "--target", "dnnl", *common]),
                                 ("symbolic", [a.seam, "run", part, *common]),
                                 ("buckets", [a.seam, "run", bpart, *common]),
                                 ("ort", ["node", os.path.join(ort, "ort_run.js"), path, inp, "--repeat",
                                          str(a.repeat), "--threads", str(a.threads)])):
                    rc, text = run(cmd)
                    m = median_of(text) if rc == 0 else None
                    if m is None:
                        print(f"{name} {s} {key} fails: {text.strip()[-200:]}", file=sys.stderr)
                    else:
                        best[key] = min(best[key], m)
            b = best
            print(f"| {name} | {sh(s)} | {b['fixed']:.3f} | {b['symbolic']:.3f} | {b['buckets']:.3f} | {b['ort']:.3f} "
                  f"| {b['fixed'] / b['ort']:.2f} | {b['symbolic'] / b['ort']:.2f} |", flush=True)
        # the first run at each shape, in one session
        for label, model in (("no buckets", part), ("buckets", bpart)):
            t0 = time.perf_counter()
            sess = seam.Session(model, threads=a.threads)
            create_ms = (time.perf_counter() - t0) * 1e3
            for s, inp in zip(shapes, inputs):
                x = np.load(inp)
                before = sess.stats()
                t0 = time.perf_counter()
                sess.run({"x": x})
                first = (time.perf_counter() - t0) * 1e3
                seen = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    sess.run({"x": x})
                    seen.append((time.perf_counter() - t0) * 1e3)
                after = sess.stats()
                first_rows.append((name, label, sh(s), create_ms, first, statistics.median(seen),
                                   after["run_compiles"] - before["run_compiles"],
                                   after["compile_ms"] - before["compile_ms"]))
                create_ms = 0.0
    print("\nFirst run at a new shape (one seam.Session per file, the shapes in order):\n")
    print("| model | file | shape | session creation ms | first run ms | seen shape ms | compiles at the run | "
          "compile ms |")
    print("|---|---|---|---|---|---|---|---|")
    for r in first_rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.1f} | {r[4]:.2f} | {r[5]:.2f} | {r[6]} | {r[7]:.1f} |")


if __name__ == "__main__":
    main()
