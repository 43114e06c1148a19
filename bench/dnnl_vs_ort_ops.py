"""Per-op comparison of seam --target dnnl with ONNX Runtime's CPU provider on
one model: where seam loses, node by node.

usage: /usr/bin/python3 bench/dnnl_vs_ort_ops.py MODEL.onnx [INPUT.npy]
           [--seam build/seam] [--repeat 10] [--threads 2] [--top 25]
           [--seam-args "..."]

seam's side: `seam run --target dnnl --compile-log` with DNNL_VERBOSE=1.
The compile log lists the primitives of each subgraph in the order they
run, each naming the ONNX node it was made for and the nodes it fused; the
last repeat x (primitives) `exec` lines of oneDNN's verbose output are the
timed runs, matched to the log's lines in order (their primitive kinds are
checked to agree). A primitive's time goes to its node's group: the node
and every node it fused.

ONNX Runtime's side: bench/ort_profile.js (its profiler, same threads and
optimization level as bench/ort/ort_run.js). Each "Node" event is named
after an ONNX node, or after the ONNX value a fused or NCHWc-converted
kernel writes ("<value>_nchwc"), or is "fused <node>", or starts with a
node's name (a fused kernel); the event goes to the group of that node
(of the value's producer). Events naming neither (its own layout
conversions) are listed as "(ORT layout)".

Prints per group the time per run on each side (microseconds; per kernel the
minimum over the runs, the least disturbed on a shared machine), the
difference, seam's implementation names, sorted by how much seam loses;
then totals per primitive kind. Times of primitives this short are noisy on
a shared machine: read the big differences, and repeat.
"""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
LOG_RE = re.compile(r"^seam: subgraph '[^']*' \(dnnl\): node (\d+) '(.*?)' \(([^)]*)\): (\w+) (\S+);(.*)$")
FUSES_RE = re.compile(r"'([^']*)' \(\w+\)")


def seam_side(a, model, inp):
    env = dict(os.environ, DNNL_VERBOSE="1", ONEDNN_VERBOSE="1")
    cmd = [a.seam, "run", model, "--target", "dnnl", "--threads", str(a.threads), "--repeat", str(a.repeat),
           "--compile-log", "--quiet", *a.seam_args.split()]
    if inp:
        cmd[3:3] = ["--input", f"{onnx.load(model, load_external_data=False).graph.input[0].name}={inp}"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        sys.exit(f"dnnl_vs_ort_ops: seam failed:\n{r.stderr[-2000:]}")
    lines = (r.stdout + r.stderr).splitlines()
    prims = []  # (node name, kind, impl, fused names, text)
    for ln in lines:
        m = LOG_RE.match(ln)
        if m:
            fused = []
            if " fuses " in m.group(6):
                fused = FUSES_RE.findall(m.group(6).split(" fuses ", 1)[1])
            prims.append((m.group(2), m.group(4), m.group(5), fused, ln))
    execs = [ln.split(",") for ln in lines if re.match(r"^(onednn|dnnl)_verbose,exec,", ln)]
    n = len(prims)
    if not n or len(execs) < n * a.repeat:
        sys.exit(f"dnnl_vs_ort_ops: {n} primitives in the compile log, {len(execs)} exec lines: cannot match them")
    runs = [execs[len(execs) - (a.repeat - k) * n:len(execs) - (a.repeat - k - 1) * n] for k in range(a.repeat)]
    times = [[] for _ in range(n)]
    for run in runs:
        for i, e in enumerate(run):
            kind = e[3].replace("inner_product", "inner").replace("_", " ")
            want = prims[i][1].replace("inner_product", "inner").replace("_", " ")
            if not kind.startswith(want[:5]) and not want.startswith(kind[:5]):
                sys.exit(f"dnnl_vs_ort_ops: exec line {i} is a {e[3]}, the compile log says {prims[i][1]}")
            times[i].append(float(e[-1]) * 1000.0)  # ms -> us
    return prims, [min(t) for t in times], execs


def ort_side(a, model, inp, work):
    prefix = os.path.join(work, "ort")
    r = subprocess.run(["node", os.path.join(HERE, "ort_profile.js"), model, inp, prefix, "--repeat", str(a.repeat),
                        "--threads", str(a.threads)], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"dnnl_vs_ort_ops: ONNX Runtime failed:\n{r.stderr[-2000:]}")
    files = sorted(glob.glob(prefix + "*.json"))
    if not files:
        sys.exit("dnnl_vs_ort_ops: ONNX Runtime wrote no profile")
    events = [e for e in json.load(open(files[-1])) if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    per = collections.defaultdict(list)
    ops = {}
    for e in events:
        name = e["name"][: -len("_kernel_time")]
        per[name].append(float(e["dur"]))
        ops[name] = e.get("args", {}).get("op_name", "?")
    # the first occurrence of each is the warm-up run
    return {k: min(v[1:] if len(v) > 1 else v) for k, v in per.items()}, ops


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("input", nargs="?")
    ap.add_argument("--seam", default=os.path.join(HERE, "..", "build", "seam"))
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--seam-args", default="")
    a = ap.parse_args()
    inp = a.input or os.path.splitext(a.model)[0] + ".input.npy"
    g = onnx.load(a.model, load_external_data=False).graph
    node_of_value = {o: n.name for n in g.node for o in n.output}
    op_of = {n.name: n.op_type for n in g.node}

    with tempfile.TemporaryDirectory() as work:
        prims, st, _ = seam_side(a, a.model, inp)
        ort, ort_ops = ort_side(a, a.model, inp, work)

    group = {}  # ONNX node -> the node whose primitive absorbed it
    for name, _, _, fused, _ in prims:
        group.setdefault(name, name)
        for f in fused:
            group[f] = group.get(name, name)
    rows = collections.OrderedDict()

    def row(key):
        return rows.setdefault(key, {"seam": 0.0, "ort": 0.0, "impl": [], "ort_ops": set()})

    kinds = collections.defaultdict(float)
    for (name, kind, impl, _, _), t in zip(prims, st):
        r = row(group.get(name, name))
        r["seam"] += t
        if f"{kind} {impl}" not in r["impl"]:
            r["impl"].append(f"{kind} {impl}")
        kinds["seam " + kind] += t
    for ev, t in ort.items():
        base = ev[: -len("_nchwc")] if ev.endswith("_nchwc") else ev
        base = base[len("fused "):] if base.startswith("fused ") and base not in op_of else base
        node = base if base in op_of else node_of_value.get(base)
        if not node:  # a fused kernel named after its first node and more: the longest node name it starts with
            node = max((k for k in op_of if k and base.startswith(k)), key=len, default=None)
        key = group.get(node, node) if node else "(ORT layout)"
        r = row(key)
        r["ort"] += t
        r["ort_ops"].add(ort_ops.get(ev, "?"))
        kinds["ort " + ort_ops.get(ev, "?")] += t
    seam_total, ort_total = sum(st), sum(ort.values())
    print(f"{os.path.basename(a.model)}: seam dnnl {seam_total / 1000:.3f} ms in {len(prims)} primitives, "
          f"ONNX Runtime {ort_total / 1000:.3f} ms in {len(ort)} kernels (minima over runs, kernels only)")
    print("\n| node (group) | op | seam us | ORT us | seam - ORT | seam primitives | ORT ops |")
    print("|---|---|---:|---:|---:|---|---|")
    ordered = sorted(rows.items(), key=lambda kv: kv[1]["ort"] - kv[1]["seam"])
    for key, r in ordered[: a.top]:
        print(f"| {key} | {op_of.get(key, '')} | {r['seam']:.1f} | {r['ort']:.1f} | {r['seam'] - r['ort']:+.1f} | "
              f"{', '.join(r['impl'])} | {', '.join(sorted(r['ort_ops']))} |")
    print("\n| side, kind | us per run |")
    print("|---|---:|")
    for k, t in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"| {k} | {t:.1f} |")


if __name__ == "__main__":
    main()
