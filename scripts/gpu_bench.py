"""seam's CUDA backend against PyTorch eager, and the placement check, on the
GPU machine (scripts/gpu_check.sh runs it).

usage: python3 scripts/gpu_bench.py SEAM CUDA_SO WORKDIR MODELS_DIR [--md FILE] [--repeat N]

Speed: for each model, `seam run --repeat N` medians: the CPU kernels, cuda
with every supported node on the GPU (--placement capability) and cuda with
the default (cost) placement; PyTorch eager on the same architecture at the
same batch (fp32, TF32 off, cudnn.benchmark on, the input copied to the GPU
and the output back inside the timed region, as seam's runs do). Models:
resnet18 and resnet50 exported here from torchvision (when it is installed;
their cuda outputs are also checked against the CPU kernels, 1e-4 of the
output's scale), and the packed ones whose torch module this machine can
build (tests/models/gen_models.py's classes, torchvision's).
Placement: on each partly supported model (a node cuda lacks between
supported ones) the default placement must not be slower than both all-CPU
and all-GPU: at most 1.10 x the faster of the two + 0.05 ms, each the best
median of three rounds that alternate the three.
Exit 1 if a correctness or placement check failed.
"""
import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import time
import types

import numpy as np

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("seam")
ap.add_argument("so")
ap.add_argument("work")
ap.add_argument("models")
ap.add_argument("--md", default=None)
ap.add_argument("--repeat", type=int, default=20)
args = ap.parse_args()
os.makedirs(args.work, exist_ok=True)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
failures, lines = [], []


def say(s=""):
    print(s, flush=True)
    lines.append(s)


def seam(*a, timeout=300):
    return subprocess.run([args.seam, *a], capture_output=True, text=True, timeout=timeout)


def median_ms(model, feed, *extra, repeat=None):
    r = seam("run", model, *feed, *extra, "--repeat", str(repeat or args.repeat), "--quiet")
    m = re.search(r"median ([0-9.]+) ms", r.stdout)
    if r.returncode or not m:
        say(f"  seam run {' '.join(extra)} failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
        return None
    return float(m.group(1))


import torch  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
dev = torch.device("cuda")
say(f"gpu_bench: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}; "
    "fp32, TF32 off")
try:
    import torchvision  # noqa: F401
    have_tv = True
except ImportError:
    have_tv = False
    sys.modules["torchvision"] = types.ModuleType("torchvision")  # gen_models imports it; its own classes need none
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
try:
    import gen_models
    torch.set_num_threads(os.cpu_count() or 4)
except Exception as e:  # noqa: BLE001
    gen_models = None
    say(f"gpu_bench: tests/models/gen_models.py does not import here ({e}): no torch modules for the packed models")

TV = {"resnet18", "resnet50", "mobilenet_v2", "squeezenet1_0", "shufflenet_v2_x1_0", "efficientnet_b0", "mnasnet1_0",
      "regnet_y_400mf", "densenet121", "googlenet", "inception_v3", "convnext_tiny"}


def torch_module(name):
    if not gen_models or name not in gen_models.MODELS or (name in TV and not have_tv):
        return None, None
    ctor, make_input, _ = gen_models.MODELS[name]
    torch.manual_seed(0)
    return ctor().eval(), make_input()


def torch_ms(model, x, repeat):
    model = model.to(dev)
    with torch.no_grad():
        for _ in range(5):
            model(x.to(dev)).cpu() if not isinstance(model(x.to(dev)), tuple) else None
        torch.cuda.synchronize()
        t = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            y = model(x.to(dev))
            (y[0] if isinstance(y, tuple) else y).cpu()
            torch.cuda.synchronize()
            t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def feed_of(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits]
    base = path[:-5]
    if os.path.exists(base + ".input.npy"):
        return ["--input", f"{names[0]}={base}.input.npy"]
    return [a for k, n in enumerate(names) if os.path.exists(f"{base}.input.{k}.npy")
            for a in ("--input", f"{n}={base}.input.{k}.npy")]


def rel_err(a, b):
    return float(np.abs(a.astype(np.float64) - b).max() / max(float(np.abs(b).max()), 1e-6)) if b.size else 0.0


# models exported here (torchvision), checked and timed
bench = []
if have_tv:
    for name in ("resnet18", "resnet50"):
        path = os.path.join(args.work, name + ".onnx")
        try:
            model, x = torch_module(name)
            torch.onnx.export(model, x, path, opset_version=13, dynamo=False)
            np.save(path[:-5] + ".input.npy", x.numpy())
        except Exception as e:  # noqa: BLE001
            say(f"gpu_bench: exporting {name} failed: {e}")
            continue
        feed = feed_of(path)
        outs = []
        for label, extra in (("cpu", []), ("cuda", ["--target", "cuda", "--placement", "capability"])):
            d = os.path.join(args.work, f"{name}.{label}")
            r = seam("run", path, *feed, *extra, "--output-dir", d, "--quiet")
            outs.append(sorted(os.listdir(d)) and [np.load(os.path.join(d, f)) for f in sorted(os.listdir(d))]
                        if not r.returncode else None)
            if r.returncode:
                failures.append(f"{name}: seam run {label} failed: {r.stderr.strip()[-300:]}")
        if outs[0] and outs[1]:
            e = max(rel_err(g, w) for g, w in zip(outs[1], outs[0]))
            say(f"gpu_bench: {name} (exported here): cuda against the CPU kernels {e:.2e}")
            if not e <= 1e-4:
                failures.append(f"{name}: cuda against the CPU kernels {e:.2e} > 1e-4")
        bench.append((name, path))
else:
    say("gpu_bench: no torchvision here: resnet18/resnet50 are not exported (skipped)")
for f in sorted(os.listdir(args.models)):
    if f.endswith(".onnx"):
        bench.append((f[:-5], os.path.join(args.models, f)))

say("")
say("| model | seam CPU ms | seam cuda (all on GPU) ms | seam cuda (default placement) ms | torch eager ms | cuda / torch |")
say("|---|---|---|---|---|---|")
ratios = []
fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
for name, path in bench:
    feed = feed_of(path)
    cpu = median_ms(path, feed, repeat=max(3, args.repeat // 4))
    gpu = median_ms(path, feed, "--target", "cuda", "--placement", "capability")
    dflt = median_ms(path, feed, "--target", "cuda")
    tms = None
    model, x = torch_module(name)
    if model is not None:
        try:
            tms = torch_ms(model, x, args.repeat)
        except Exception as e:  # noqa: BLE001
            say(f"  torch eager {name} failed: {e}")
    ratio = gpu / tms if gpu and tms else None
    if ratio:
        ratios.append(ratio)
    say(f"| {name} | {fmt(cpu)} | {fmt(gpu)} | {fmt(dflt)} | {fmt(tms)} | {fmt(ratio)} |")
if ratios:
    say(f"\ngeometric mean of cuda / torch eager over {len(ratios)} models: "
        f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}")

# placement: partly supported models
say("\n| partly supported model | all-CPU ms | all-GPU ms | default ms | default no slower |")
say("|---|---|---|---|---|")
for name in ("seed_mlp_sort_mid", "topk_cumsum", "transformer_encoder", "lstm_classifier"):
    path = os.path.join(args.models, name + ".onnx")
    if not os.path.exists(path):
        continue
    feed = feed_of(path)
    # the three alternating, three rounds, the best median of each (one
    # median apiece swung 3x on the GPU machine's CPU side)
    best = {"cpu": [], "gpu": [], "dflt": []}
    for _ in range(3):
        for k, extra in (("cpu", ()), ("gpu", ("--target", "cuda", "--placement", "capability")), ("dflt", ("--target", "cuda"))):
            t = median_ms(path, feed, *extra)
            if t is not None:
                best[k].append(t)
    cpu, gpu, dflt = (min(best[k]) if len(best[k]) == 3 else None for k in ("cpu", "gpu", "dflt"))
    ok = None not in (cpu, gpu, dflt) and dflt <= 1.10 * min(cpu, gpu) + 0.05
    if not ok:
        failures.append(f"placement {name}: default {dflt} ms against all-CPU {cpu} and all-GPU {gpu}")
    say(f"| {name} | {fmt(cpu)} | {fmt(gpu)} | {fmt(dflt)} | {'yes' if ok else 'NO'} |")

if args.md:
    with open(args.md, "w") as f:
        f.write("\n".join(lines) + "\n")
for f in failures:
    print("FAIL", f)
print(f"gpu_bench: {'FAILED' if failures else 'passed'}")
sys.exit(1 if failures else 0)
