"""seam on models nobody tuned it for (bench/unseen_models.py) against ONNX
Runtime's CPU provider (issue 31 item 5).

usage: /usr/bin/python3 bench/unseen_bench.py [--seam build/seam] [--models /work/bench-unseen]
           [--rounds 3] [--repeat 10] [--threads 2] [--pause 2] [--timeout 900] [--plan]
           [--no-export] [NAME...]

Exports the models first (bench/unseen_models.py; quick when they are
there). Each round runs, on the same inputs, `seam run M --target dnnl
--threads T --repeat N`, `seam run M --threads T --repeat N` (seam's CPU
kernels) and ONNX Runtime (bench/ort/ort_run.js, T intra-op threads, all
graph optimizations); each side keeps its best median over the rounds (the
machine is shared and noisy), as bench/dnnl_bench.py does. Then one more
run of each writes every output, and seam's outputs are compared with ONNX
Runtime's: max |seam - ORT| over max |ORT| per output, the worst output's
figure printed (integer outputs: the count of elements that differ);
figures above 1e-3 are flagged with '!'. A side that fails (a refusal, a
crash, a timeout) is reported in the table with its exit status, its last
line and the command; the benchmark goes on.

Prints a markdown table: model, seam dnnl ms, seam cpu ms, ORT ms,
dnnl/ORT, cpu/ORT, error dnnl, error cpu; then the geometric means and the
worst cases. --plan adds, per model, the dnnl plan (`seam partition M
--target dnnl --json`: subgraphs on each target, nodes on each target, the
cost model's estimate) and `seam analyze M --target dnnl`'s summary lines,
next to the measured time: estimate / measured.
"""
import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ORT = os.path.join(HERE, "ort")


def run(cmd, timeout):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", f"timed out after {timeout} s"
    return r.returncode, r.stdout + r.stderr


def median_of(text):
    m = re.search(r"median ([0-9.]+) ms", text)
    return float(m.group(1)) if m else None


def last_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:160] if lines else ""


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


class Model:
    def __init__(self, models, name):
        self.name = name
        self.path = os.path.join(models, name + ".onnx")
        g = onnx.load(self.path, load_external_data=False).graph
        inits = {i.name for i in g.initializer}
        self.inputs = [(i.name, os.path.join(models, f"{name}.{i.name}.npy")) for i in g.input if i.name not in inits]
        # the shapes of the input files, for --shape of a model with symbolic dims
        self.shapes = []
        for n, f in self.inputs:
            dims = "x".join(str(d) for d in np.load(f, mmap_mode="r").shape)
            self.shapes += ["--shape", f"{n}={dims}"]

    def seam(self, seam, extra):
        cmd = [seam, "run", self.path]
        for n, f in self.inputs:
            cmd += ["--input", f"{n}={f}"]
        return cmd + extra

    def ort(self, extra):
        cmd = ["node", os.path.join(ORT, "ort_run.js"), self.path, self.inputs[0][1]]
        for n, f in self.inputs[1:]:
            cmd += ["--input", f"{n}={f}"]
        return cmd + extra


def compare(ref_dir, got_dir):
    """The worst output's error of got against ref: (figure text, number or None)."""
    worst, text = -1.0, "no outputs"
    for f in sorted(os.listdir(ref_dir)):
        ref = np.load(os.path.join(ref_dir, f))
        p = os.path.join(got_dir, f)
        if not os.path.exists(p):
            return f"output {f[:-4]} missing", math.inf
        got = np.load(p)
        if ref.shape != got.shape:
            return f"{f[:-4]}: shape {list(got.shape)} vs ORT {list(ref.shape)}", math.inf
        if ref.dtype.kind in "iub":
            bad = int((ref != got).sum())
            e, t = (0.0, None) if not bad else (math.inf, f"{f[:-4]}: {bad} of {ref.size} differ")
        else:
            r, g = ref.astype(np.float64), got.astype(np.float64)
            if ref.size == 0:
                e = 0.0
            elif not np.array_equal(np.isfinite(r), np.isfinite(g)):
                e = math.inf
            else:
                fin = np.isfinite(r)
                e = float(np.abs(r[fin] - g[fin]).max() / max(np.abs(r[fin]).max(), 1e-30)) if fin.any() else 0.0
            t = None if math.isfinite(e) else f"{f[:-4]}: inf/nan where ORT has none (or the reverse)"
        if e > worst:
            worst, text = e, t or f"{e:.1e}" + (f" ({f[:-4]})" if len(os.listdir(ref_dir)) > 1 else "")
    return text, worst


def plan(a, m):
    """(subgraphs per target, nodes per target, estimate us) of the dnnl plan, and analyze's summary lines."""
    rc, text = run([a.seam, "partition", m.path, "--target", "dnnl", "--json", *m.shapes], a.timeout)
    if rc != 0:
        return None, f"partition fails ({rc}): {last_line(text)}"
    p = json.loads(text[text.index("{"):])
    sub, nodes = {}, {}
    for s in p["subgraphs"]:
        sub[s["target"]] = sub.get(s["target"], 0) + 1
        nodes[s["target"]] = nodes.get(s["target"], 0) + len(s["nodes"])
    rc, atext = run([a.seam, "analyze", m.path, "--target", "dnnl", *m.shapes], a.timeout)
    summary = [ln.strip() for ln in atext.splitlines() if re.match(r"[0-9.]+% of operations", ln) or ln.startswith("Estimated")]
    return (sub, nodes, p["estimate"]), "; ".join(summary) if rc == 0 else f"analyze fails ({rc}): {last_line(atext)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seam", default="build/seam")
    ap.add_argument("--models", default="/work/bench-unseen")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pause", type=float, default=2)
    ap.add_argument("--timeout", type=int, default=900, help="seconds one command may take")
    ap.add_argument("--plan", action="store_true")
    ap.add_argument("--no-export", action="store_true")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    sys.path.insert(0, HERE)
    if not a.no_export:
        cmd = ["/usr/bin/python3", os.path.join(HERE, "unseen_models.py"), a.models]
        if a.names:
            cmd += ["--only", ",".join(a.names)]
        subprocess.run(cmd)
    import unseen_models
    names = [n for n in (a.names or list(unseen_models.MODELS)) if os.path.exists(os.path.join(a.models, n + ".onnx"))]
    skipped = [n for n in (a.names or list(unseen_models.MODELS)) if n not in names]
    if not os.path.isdir(os.path.join(ORT, "node_modules", "onnxruntime-node")):
        subprocess.run(["npm", "install", "--ignore-scripts"], cwd=ORT, check=True, capture_output=True)
    timing = ["--repeat", str(a.repeat), "--threads", str(a.threads)]
    sides = {
        "dnnl": lambda m, x: m.seam(a.seam, ["--target", "dnnl", "--quiet", *timing, *x]),
        "cpu": lambda m, x: m.seam(a.seam, ["--quiet", *timing, *x]),
        "ort": lambda m, x: m.ort([*timing, *x]),
    }
    out_flag = {"dnnl": "--output-dir", "cpu": "--output-dir", "ort": "--out-dir"}

    rows, failures, plans = [], [], {}
    for name in names:
        m = Model(a.models, name)
        time.sleep(a.pause)
        best = {s: math.inf for s in sides}
        fail = {}
        for _ in range(a.rounds):
            for s, mk in sides.items():
                if s in fail:
                    continue
                cmd = mk(m, [])
                rc, text = run(cmd, a.timeout)
                ms = median_of(text) if rc == 0 else None
                if ms is None:
                    fail[s] = (rc, last_line(text), cmd)
                else:
                    best[s] = min(best[s], ms)
        err = {}
        with tempfile.TemporaryDirectory() as d:
            for s, mk in sides.items():
                if s in fail:
                    continue
                cmd = mk(m, [out_flag[s], os.path.join(d, s)])
                cmd[cmd.index("--repeat") + 1] = "1"
                rc, text = run(cmd, a.timeout)
                if rc != 0:
                    fail[s] = (rc, last_line(text), cmd)
            for s in ("dnnl", "cpu"):
                if s in fail or "ort" in fail:
                    err[s] = ("", None)
                else:
                    err[s] = compare(os.path.join(d, "ort"), os.path.join(d, s))
        for s, (rc, line, cmd) in fail.items():
            failures.append((name, s, rc, line, cmd))
            best[s] = math.inf
        row = {"name": name, "best": best, "err": err, "fail": fail}
        rows.append(row)
        if a.plan:
            plans[name] = plan(a, m)
        print(fmt_row(row), flush=True)

    print("\n| model | seam dnnl ms | seam cpu ms | ORT ms | dnnl / ORT | cpu / ORT | err dnnl | err cpu |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(fmt_row(row))
    for s in ("dnnl", "cpu"):
        ok = [(r["best"][s] / r["best"]["ort"], r["name"]) for r in rows
              if math.isfinite(r["best"][s]) and math.isfinite(r["best"]["ort"])]
        if ok:
            ok.sort(reverse=True)
            print(f"\nseam {s} / ORT over {len(ok)} of {len(rows)} models: geometric mean {geomean([r for r, _ in ok]):.2f}; "
                  f"worst " + ", ".join(f"{n} {r:.2f}" for r, n in ok[:3]) +
                  f"; at or below 1.0: {sum(r <= 1.0 for r, _ in ok)}")
    bad = [(r["name"], s, r["err"][s][0]) for r in rows for s in ("dnnl", "cpu")
           if r["err"].get(s, ("", None))[1] is not None and r["err"][s][1] > 1e-3]
    print(f"\noutputs more than 1e-3 of the output's scale from ORT's: {len(bad)}" +
          "".join(f"\n  {n} {s}: {t}" for n, s, t in bad))
    print(f"failures (refusals, crashes, timeouts): {len(failures)}" +
          "".join(f"\n  {n} {s}: exit {rc}: {line}\n    {' '.join(shlex.quote(c) for c in cmd)}"
                  for n, s, rc, line, cmd in failures))
    if skipped:
        print("not exported (see unseen_models.py's output): " + ", ".join(skipped))
    if a.plan:
        print("\n| model | dnnl plan: subgraphs (dnnl/cpu) | nodes (dnnl/cpu) | estimate ms (plan / all cpu) | "
              "measured dnnl ms | estimate / measured | analyze |")
        print("|---|---|---|---|---|---|---|")
        for row in rows:
            p, summary = plans[row["name"]]
            if p is None:
                print(f"| {row['name']} | {summary} | | | | | |")
                continue
            sub, nodes, est = p
            meas = row["best"]["dnnl"]
            ratio = f"{est['plan_us'] / 1e3 / meas:.2f}" if math.isfinite(meas) else ""
            print(f"| {row['name']} | {sub.get('dnnl', 0)}/{sub.get('cpu', 0)} | {nodes.get('dnnl', 0)}/{nodes.get('cpu', 0)} "
                  f"| {est['plan_us'] / 1e3:.2f} / {est['all_cpu_us'] / 1e3:.2f} | {fmt_ms(meas)} | {ratio} | {summary} |")


def fmt_ms(x):
    return f"{x:.3f}" if math.isfinite(x) else "fails"


def fmt_err(e):
    text, v = e
    if v is None:
        return "-"
    return text + (" !" if v > 1e-3 else "")


def fmt_row(row):
    b, f = row["best"], row["fail"]

    def cell(s):
        return fmt_ms(b[s]) if s not in f else f"FAILS (exit {f[s][0]}: {f[s][1][:70]})"

    def ratio(s):
        return f"{b[s] / b['ort']:.2f}" if math.isfinite(b[s]) and math.isfinite(b["ort"]) else "-"

    return (f"| {row['name']} | {cell('dnnl')} | {cell('cpu')} | {cell('ort')} | {ratio('dnnl')} | {ratio('cpu')} | "
            f"{fmt_err(row['err'].get('dnnl', ('', None)))} | {fmt_err(row['err'].get('cpu', ('', None)))} |")


if __name__ == "__main__":
    main()
