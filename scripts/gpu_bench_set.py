"""The CUDA plug-in on the benchmark set (bench/bench_models.py: 24 models a
user would pick), on the GPU machine (scripts/gpu_check.sh runs it).

usage: python3 scripts/gpu_bench_set.py SEAM CUDA_SO WORKDIR [--md FILE]
           [--repeat N] [--jobs N] [--only a,b]

1. export: bench/bench_models.py writes the set into WORKDIR/models with
   this machine's torch (random weights, batch norms calibrated), JOBS
   exporters at once. Nothing of the set travels: it is 1.1 GB.
2. correct (JOBS models at once): seam's CPU kernels, then --target cuda
   --placement capability (every supported node on the GPU), then the
   model partitioned for cuda, saved (-o) and reloaded (--backend-lib):
   each output within 1e-4 of the output's scale (max |ref|) of the CPU
   kernels' (TF32 off, the default). A model cuda does not wholly take
   runs split; its unsupported ops are listed.
3. speed (one model at a time): `seam run --target cuda --placement
   capability --repeat N` median against PyTorch eager on the same
   architecture and batch (fp32, TF32 off, cudnn.benchmark on, the input
   copied to the GPU and the output back inside the timed region, as
   seam's runs do), and the TFLOP/s each reached (2 flops per
   multiply-add of Conv/ConvTranspose/MatMul/Gemm, from ONNX's shape
   inference). On models cuda takes partly, also the default placement and
   all-CPU, the three alternating for three rounds (the best median of
   each): the default must be no slower than all-CPU and all-GPU (at most
   1.10 x the faster + 0.05 ms).
Prints a markdown table (also to --md) and the geometric mean of cuda /
torch over the conv nets and transformers (the set less lstm, gru and
mlp_large) and over all. Exit 1 if an export, a run or a check failed.
"""
import argparse
import concurrent.futures as cf
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("seam")
ap.add_argument("so")
ap.add_argument("work")
ap.add_argument("--md", default=None)
ap.add_argument("--repeat", type=int, default=20)
ap.add_argument("--jobs", type=int, default=4)
ap.add_argument("--only", default=None)
ap.add_argument("--tol", type=float, default=1e-4)
args = ap.parse_args()
MD = os.path.join(args.work, "models")
os.makedirs(MD, exist_ok=True)
failures, lines = [], []
NOT_CONV_OR_TRANSFORMER = {"lstm", "gru", "mlp_large"}


def say(s=""):
    print(s, flush=True)
    lines.append(s)


def seam(*a, timeout=300):
    try:
        return subprocess.run([args.seam, *a], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(a, 124, "", f"timed out after {timeout} s")


sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import bench_models  # noqa: E402
import torch  # noqa: E402
from dnnl_bench import flops  # noqa: E402

names = args.only.split(",") if args.only else list(bench_models.MODELS)

# ---- 1. export ---------------------------------------------------------------
t0 = time.time()
chunks = [names[k::args.jobs] for k in range(args.jobs) if names[k::args.jobs]]
procs = [subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", "bench_models.py"), MD, "--only", ",".join(c)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for c in chunks]
for p, c in zip(procs, chunks):
    out, _ = p.communicate()
    if p.returncode:
        say(f"gpu_bench_set: exporting {c} failed (exit {p.returncode}): {out.strip()[-600:]}")
models = [n for n in names if os.path.exists(os.path.join(MD, n + ".onnx"))]
for n in sorted(set(names) - set(models)):
    failures.append(f"{n}: not exported")
say(f"gpu_bench_set: {len(models)} of {len(names)} models exported by torch {torch.__version__} in "
    f"{time.time() - t0:.0f} s ({args.jobs} at once)")


def feed(n):
    return ["--input", f"input={os.path.join(MD, n + '.input.npy')}"]


def outputs(d):
    return [np.load(os.path.join(d, f)) for f in sorted(os.listdir(d))] if os.path.isdir(d) else []


def rel_err(got, want):
    if len(got) != len(want) or not want:
        return math.inf
    e = 0.0
    for g, w in zip(got, want):
        if g.shape != w.shape:
            return math.inf
        g, w = g.astype(np.float64), w.astype(np.float64)
        if not np.isfinite(g).all():
            return math.inf
        e = max(e, float(np.abs(g - w).max() / max(float(np.abs(w).max()), 1e-30)) if w.size else 0.0)
    return e


# ---- 2. correct --------------------------------------------------------------
def correct(n):
    """(model, on-cuda share, unsupported ops, error, error saved+reloaded,
    notes, the cost model's estimate)"""
    path, base = os.path.join(MD, n + ".onnx"), os.path.join(args.work, n)
    notes = []
    r = seam("run", path, *feed(n), "--output-dir", base + ".cpu", "--quiet")
    if r.returncode:
        return n, None, None, None, None, [f"the CPU run failed: {r.stderr.strip()[-300:]}"], {}
    want = outputs(base + ".cpu")
    # saved as exported: a model of symbolic dims keeps them, and its
    # cuda subgraphs are specialized at run time
    r = seam("partition", path, "--target", "cuda", "--placement", "capability", "-o", base + ".cuda.onnx")
    if r.returncode:
        notes.append(f"partition -o failed: {r.stderr.strip()[-300:]}")
    # the plan at the run's shape (as seam run makes it): what cuda takes,
    # and the cost model's estimate to set beside the times
    shape = "x".join(map(str, np.load(os.path.join(MD, n + ".input.npy"), mmap_mode="r").shape))
    r = seam("partition", path, "--target", "cuda", "--shape", "input=" + shape, "--json")
    share, unsup, est = None, [], {}
    if r.returncode:
        notes.append(f"partition --json failed: {r.stderr.strip()[-300:]}")
    else:
        plan = json.loads(r.stdout)
        share, est = plan.get("supported_fraction"), plan.get("estimate", {})
        unsup = sorted({f"{x['op']}" for x in plan["nodes"]
                        if x["target"] != "cuda" and not x.get("reason", "").startswith("constant")})
    r = seam("run", path, *feed(n), "--target", "cuda", "--placement", "capability", "--output-dir", base + ".gpu")
    err = rel_err(outputs(base + ".gpu"), want) if not r.returncode else None
    if r.returncode:
        notes.append(f"cuda run failed (exit {r.returncode}): {r.stderr.strip()[-400:]}")
    elif "not compiled" in r.stderr or "could not" in r.stderr:
        notes.append("said: " + " | ".join(ln for ln in r.stderr.splitlines() if "cuda" in ln)[-300:])
    err_saved = None
    if os.path.exists(base + ".cuda.onnx"):
        r = seam("run", base + ".cuda.onnx", *feed(n), "--backend-lib", args.so, "--output-dir", base + ".saved", "--quiet")
        err_saved = rel_err(outputs(base + ".saved"), want) if not r.returncode else None
        if r.returncode:
            notes.append(f"the saved file failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
    return n, share, unsup, err, err_saved, notes, est


t0 = time.time()
res = {}
with cf.ThreadPoolExecutor(args.jobs) as ex:
    for n, share, unsup, err, err_saved, notes, est in ex.map(correct, models):
        res[n] = (share, unsup, err, err_saved, est)
        for note in notes:
            say(f"  {n}: {note}")
        for label, e in (("cuda", err), ("cuda saved and reloaded", err_saved)):
            if e is None or not e <= args.tol:
                failures.append(f"{n}: {label} against the CPU kernels: {'no output' if e is None else f'{e:.2e}'}")
say(f"gpu_bench_set: correctness of {len(models)} models in {time.time() - t0:.0f} s")


# ---- 3. speed ----------------------------------------------------------------
def median_ms(path, *extra, repeat=None):
    r = seam("run", path, *feed(os.path.basename(path)[:-5]), *extra, "--repeat", str(repeat or args.repeat), "--quiet")
    m = re.search(r"median ([0-9.]+) ms", r.stdout)
    return float(m.group(1)) if not r.returncode and m else None


if not torch.cuda.is_available():
    say("gpu_bench_set: torch sees no GPU: no timings")
    for f in failures:
        print("FAIL", f)
    sys.exit(1 if failures else 2)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
torch.set_num_threads(os.cpu_count() or 4)
dev = torch.device("cuda")


def torch_ms(n):
    ctor, make_input = bench_models.MODELS[n][:2]
    torch.manual_seed(0)
    model = ctor().eval().to(dev)
    torch.manual_seed(1)
    x = make_input()
    with torch.no_grad():
        for _ in range(5):
            model(x.to(dev)).cpu()
        torch.cuda.synchronize()
        t = []
        for _ in range(args.repeat):
            t1 = time.perf_counter()
            model(x.to(dev)).cpu()
            torch.cuda.synchronize()
            t.append((time.perf_counter() - t1) * 1e3)
    del model
    torch.cuda.empty_cache()
    return statistics.median(t)


fmt = lambda v, f="{:.3f}": "-" if v is None else f.format(v)  # noqa: E731
fe = lambda e: "-" if e is None else f"{e:.1e}"  # noqa: E731
say("")
say(f"gpu_bench_set: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}; "
    f"fp32, TF32 off; medians of {args.repeat}, input and output on the host on both sides")
say("")
say("| model | GFLOP | on cuda | err | err saved | seam cuda ms | torch eager ms | cuda / torch | seam TFLOP/s | "
    "torch TFLOP/s | estimate: all-GPU / all-CPU ms | placement: default / all-GPU / all-CPU ms (best of 3 rounds) |")
say("|---|---|---|---|---|---|---|---|---|---|---|---|")
ratios, est_ratios = {}, {}
t0 = time.time()
for n in models:
    path = os.path.join(MD, n + ".onnx")
    share, unsup, err, err_saved, est = res[n]
    try:
        gf = flops(path)  # GFLOP
    except Exception:  # noqa: BLE001
        gf = None
    gpu = median_ms(path, "--target", "cuda", "--placement", "capability")
    if gpu is None:
        failures.append(f"{n}: the timed cuda run failed")
    try:
        tms = torch_ms(n)
    except Exception as e:  # noqa: BLE001
        tms = None
        say(f"  torch eager {n} failed: {str(e)[:200]}")
    if gpu and tms:
        ratios[n] = gpu / tms  # one median each, as for every model
    if gpu and est.get("capability_us"):
        est_ratios[n] = est["capability_us"] / 1e3 / gpu
    dflt = cpu = gpu_best = None
    if share is not None and share < 1:
        # the three plans alternating, three rounds, the best median of
        # each: one median apiece swung 3x on this machine
        best = {"cpu": [], "gpu": [gpu] if gpu else [], "dflt": []}
        for _ in range(3):
            for k, extra in (("cpu", ()), ("gpu", ("--target", "cuda", "--placement", "capability")),
                             ("dflt", ("--target", "cuda"))):
                t = median_ms(path, *extra)
                if t is not None:
                    best[k].append(t)
        cpu, gpu_best, dflt = (min(best[k]) if len(best[k]) >= 3 else None for k in ("cpu", "gpu", "dflt"))
        ok = None not in (cpu, gpu_best, dflt) and dflt <= 1.10 * min(cpu, gpu_best) + 0.05
        if not ok:
            failures.append(f"placement {n}: default {dflt} ms against all-CPU {cpu} and all-GPU {gpu_best}")
    on = "-" if share is None else f"{share:.0%}" + (f" (not: {', '.join(unsup)})" if unsup else "")
    tf = lambda ms: None if not ms or not gf else gf / ms  # noqa: E731  GFLOP / ms = TFLOP/s
    say(f"| {n} | {fmt(gf, '{:.2f}')} | {on} | {fe(err)} | {fe(err_saved)} | {fmt(gpu)} | {fmt(tms)} | "
        f"{fmt(ratios.get(n))} | {fmt(tf(gpu), '{:.2f}')} | {fmt(tf(tms), '{:.2f}')} | "
        f"{fmt(est.get('capability_us') and est['capability_us'] / 1e3)} / {fmt(est.get('all_cpu_us') and est['all_cpu_us'] / 1e3)} | "
        f"{'-' if dflt is None and cpu is None else f'{fmt(dflt)} / {fmt(gpu_best)} / {fmt(cpu)}'} |")


def geo(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else math.nan


ct = [r for n, r in ratios.items() if n not in NOT_CONV_OR_TRANSFORMER]
say("")
if ratios:
    worst = max(ratios, key=ratios.get)
    say(f"cuda / torch eager: geometric mean {geo(ct):.3f} over the {len(ct)} conv nets and transformers, "
        f"{geo(list(ratios.values())):.3f} over all {len(ratios)}; worst {worst} {ratios[worst]:.3f} "
        f"(timing {time.time() - t0:.0f} s)")
if est_ratios:
    off = {n: max(r, 1 / r) for n, r in est_ratios.items()}
    worst = max(off, key=off.get)
    say(f"the cost model's all-GPU estimate / measured: geometric mean {geo(list(est_ratios.values())):.2f}, "
        f"furthest {worst} {est_ratios[worst]:.2f}")
if args.md:
    with open(args.md, "w") as f:
        f.write("\n".join(lines) + "\n")
for f in failures:
    print("FAIL", f)
print(f"gpu_bench_set: {'FAILED' if failures else 'passed'}")
sys.exit(1 if failures else 0)
