"""Op-level benchmark (issue 31): every node shape class of a model corpus as a
one-node model, timed on seam's CPU kernels, seam --target dnnl and ONNX
Runtime's CPU provider; which oneDNN implementation ran; what seam refused.

usage: /usr/bin/python3 bench/op_bench.py [DIR...] [--seam build/seam]
           [--rounds 2] [--budget-ms 60] [--max-repeat 50] [--threads 2]
           [--ops Conv,PRelu] [--max-cases N] [--work DIR] [--json OUT]
           [--md OUT.md] [--time-limit S]

DIRs default to /work/bench-models (bench/bench_models.py's 24 models,
written first when missing) and /work/bench-unseen when it exists. The
corpus and the one-node models are bench/op_corpus.py's: one case per (op,
attributes, input shapes and dtypes, constant inputs), with the number of
nodes and models it came from.

Per case, per round, alternating: ONNX Runtime (one node process for the
whole run, bench/ort/ort_ops.js: 2 intra-op threads, all graph
optimizations), `seam run M --threads 2 --repeat N`, and `seam run M
--target dnnl --placement capability --threads 2 --repeat N` (capability:
the one node goes to oneDNN whenever the backend takes it; the cost model
would keep a tiny one on the CPU). Each side keeps its best median over the
rounds. N comes from ONNX Runtime's first time: about --budget-ms of runs,
between 5 and --max-repeat. Before the timed rounds one dnnl run with
DNNL_VERBOSE=1 and --compile-log records the primitives and the
implementations oneDNN chose (every `ref` one is flagged), or the reason
the node stayed on the CPU. Times under 20 us (the faster of seam's and
ORT's) are "overhead class": per-run overhead, not the kernel, decides them.
seam runs with GOMP_SPINCOUNT=100000 (--spincount): the CLI's default,
OMP_WAIT_POLICY=ACTIVE, spins forever between primitives, and on a shared
machine a spinning thread waiting for a descheduled one cost whole
scheduler ticks (medians of 4-40 ms for 15-400 us kernels).

Prints a markdown table per op (op, shape class, count in the corpus,
seam cpu us, seam dnnl us, ORT us, cpu/ORT, dnnl/ORT, dnnl implementation),
worst first, then a summary: the worst 15 rows, geometric means per
backend, every ref kernel, every case seam refused or crashed on with the
command that reproduces it. --json writes the cases and all results.
"""
import argparse
import collections
import json
import math
import os
import random
import re
import shlex
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import op_corpus  # noqa: E402

MEDIAN_RE = re.compile(r"median ([0-9.]+) ms, min ([0-9.]+) ms")
LOG_RE = re.compile(r"^seam: subgraph '[^']*' \(dnnl\): node \d+ '.*?' \(([^)]*)\): (\w+) (\S+?);")
OVERHEAD_US = 20.0


class Ort:
    """One node process timing jobs sent on its stdin (bench/ort/ort_ops.js)."""

    def __init__(self, threads):
        env = dict(os.environ)
        mods = os.path.join(HERE, "ort", "node_modules")
        if not os.path.isdir(mods):  # a worktree: the main checkout's install
            for cand in ("/work/main/bench/ort/node_modules",):
                if os.path.isdir(cand):
                    env["NODE_PATH"] = cand
        self.p = subprocess.Popen(["node", os.path.join(HERE, "ort", "ort_ops.js"), "--threads", str(threads)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, bufsize=1)

    def time(self, model, inputs, repeat):
        if self.p.poll() is not None:
            return {"error": "ort_ops.js exited"}
        self.p.stdin.write(json.dumps({"model": model, "inputs": inputs, "repeat": repeat}) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        return json.loads(line) if line else {"error": "ort_ops.js died"}

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def seam_cmd(a, model, feeds, dnnl, repeat, extra=()):
    cmd = [a.seam, "run", model, "--threads", str(a.threads), "--repeat", str(repeat)]
    for name, f in feeds.items():
        cmd += ["--input", f"{name}={f}"]
    if dnnl:
        cmd += ["--target", "dnnl", "--placement", "capability"]
    return cmd + list(extra)


SPIN = {}


def run(cmd, env=None, timeout=300):
    env = dict(env or os.environ, **SPIN)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s"


def failure(rc, err):
    last = [ln for ln in err.strip().splitlines() if not ln.startswith(("onednn_verbose", "dnnl_verbose"))]
    sig = f"signal {-rc}" if rc < 0 else f"exit {rc}"
    return f"{sig}: {(last[-1] if last else '')[:200]}"


def probe_dnnl(a, case, model, feeds):
    """One dnnl run with DNNL_VERBOSE and --compile-log: taken or not, the
    primitives (kind impl) it compiled and ran, the stderr notes."""
    env = dict(os.environ, DNNL_VERBOSE="1", ONEDNN_VERBOSE="1")
    cmd = seam_cmd(a, model, feeds, True, 1, ["--compile-log"])
    rc, out, err = run(cmd, env)
    res = {"cmd": " ".join(shlex.quote(c) for c in seam_cmd(a, model, feeds, True, 10))}
    if rc:
        res["error"] = failure(rc, err)
        return res
    lines = (out + err).splitlines()
    prims = []
    for ln in lines:
        m = LOG_RE.match(ln)
        if m:
            prims.append(f"{m.group(2)} {m.group(3)}")
    execs, times = [], []
    for ln in lines:
        if re.match(r"^(onednn|dnnl)_verbose,exec,", ln):
            f = ln.split(",")
            execs.append(f"{f[3]} {f[4]}")
            try:
                times.append(float(f[-1]) * 1000.0)
            except ValueError:
                times.append(0.0)
    res["taken"] = bool(prims)
    res["prims"] = prims
    # the kernels of the timed run: the last run's exec lines (the compile's weight reorders come first)
    res["exec"] = execs[-len(prims):] if prims and len(execs) >= len(prims) else execs
    if prims and len(execs) >= len(prims):  # the main primitives' time in that one run (no reorders), us
        res["kernel_us"] = sum(t for e, t in zip(execs[-len(prims):], times[-len(prims):])
                               if not e.startswith("reorder")) or None
    notes = [ln for ln in err.splitlines() if ln.startswith("seam") and "dnnl" in ln and not LOG_RE.match(ln)]
    if not prims:
        res["reason"] = (notes[0] if notes else "not placed on dnnl")[:240]
    res["notes"] = notes[:5]
    return res


def impl_of(probe):
    """The main primitive's implementation (not reorders), e.g. 'convolution brgconv:avx512_core'."""
    if not probe or not probe.get("taken"):
        return ""
    main = [p for p in probe["prims"] if not p.startswith("reorder")] or probe["prims"]
    seen = []
    for p in main:
        if p not in seen:
            seen.append(p)
    return ", ".join(seen)


def generic_of(probe):
    """oneDNN's generic reorder (simple:any), the slow path of a reorder/copy."""
    out = []
    for p in (probe or {}).get("prims", []):
        if ("simple:any" in p or "simple_nchw" in p) and p not in out:
            out.append(p)
    return out


def refs_of(probe):
    out = []
    for p in (probe or {}).get("prims", []) + (probe or {}).get("exec", []):
        kind, _, impl = p.partition(" ")
        if impl.startswith("ref") or ":ref" in impl:
            if p not in out:
                out.append(p)
    return out


def fmt(us):
    if us is None:
        return "-"
    return f"{us:.1f}" if us < 100 else f"{us:.0f}"


def ratio(x, y):
    """x / y, times under 1 us (seam prints ms with 3 decimals: 0.000) counted as 0.5 us."""
    return max(x, 0.5) / max(y, 0.5) if x is not None and y is not None else None


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def stext(c):
    return c.get("shape_text") or op_corpus.shape_class(c)


def from_json(a, files):
    """cases, results, stats, floors of saved --json runs, merged (a case in several: counts added)."""
    cases, results, stats, floors = collections.OrderedDict(), {}, collections.Counter(), {}
    for f in files:
        d = json.load(open(f))
        stats.update(d["stats"])
        floors = floors or d.get("floors", {})
        for c in d["cases"]:
            r = c.get("result")
            if not r:
                continue
            k = r["id"]
            if k in cases:
                cases[k]["count"] += c["count"]
                cases[k]["models"] |= set(c["models"])
                continue
            cases[k] = dict(c, shape_text=c["shape"], models=set(c["models"]))
            results[k] = r
    return cases, results, stats, floors


def report(a, cases, results, stats, out, floors):
    rows = []
    ort_floor = floors.get("ort_us") or 0.0
    for key, c in cases.items():
        r = results.get(key)
        if not r or "repeat" not in r:  # written, never probed (--time-limit)
            continue
        cpu, dn, ort = r.get("cpu_us"), r.get("dnnl_us"), r.get("ort_us")
        cpum, dnm, ortm = (r.get(x + "_min_us") if r.get(x + "_us") is not None else None for x in ("cpu", "dnnl", "ort"))
        lo = [x for x in (cpum, ortm - ort_floor if ortm is not None else None) if x is not None]
        rows.append({"key": key, "op": c["op"], "shape": stext(c), "count": c["count"],
                     "models": len(c["models"]), "cpu": cpu, "dnnl": dn, "ort": ort, "cpu_r": ratio(cpu, ort),
                     "dnnl_r": ratio(dn, ort), "cpu_min": cpum, "dnnl_min": dnm, "ort_min": ortm,
                     "cpu_rm": ratio(cpum, ortm), "dnnl_rm": ratio(dnm, ortm),
                     "disturbed": any(m is not None and x is not None and x > 3 * max(m, 0.5)
                                      for x, m in ((cpu, cpum), (dn, dnm), (ort, ortm))),
                     "impl": impl_of(r.get("probe")), "refs": refs_of(r.get("probe")),
                     "overhead": bool(ort is not None and lo and min(lo) < OVERHEAD_US),
                     "generic": generic_of(r.get("probe")), "kernel_us": (r.get("probe") or {}).get("kernel_us"),
                     "dnnl_note": "" if (r.get("probe") or {}).get("taken") else
                     ((r.get("probe") or {}).get("reason") or (r.get("probe") or {}).get("error") or ""),
                     "id": r["id"]})

    def worst(rw):  # on the minima: the medians of a 2-thread run on a loaded 2-core machine are scheduler ticks
        return max(rw["cpu_rm"] or rw["cpu_r"] or 0, rw["dnnl_rm"] or rw["dnnl_r"] or 0)

    def line(rw):
        mark = " (overhead)" if rw["overhead"] else ""
        impl = rw["impl"] or ("not taken" if not rw["dnnl"] else "")
        if rw["refs"]:
            impl = "**REF** " + impl
        if rw["disturbed"]:
            mark += " (disturbed)"

        def rr(x, y):
            return f"{y:.2f} ({x:.2f})" if x and y else (f"{x:.2f}" if x else "-")

        def tt(x, y):
            return f"{fmt(x)} / {fmt(y)}" if x is not None else "-"
        return (f"| {rw['op']} | {rw['shape'][:90]}{mark} | {rw['count']} ({rw['models']}m) | "
                f"{tt(rw['cpu'], rw['cpu_min'])} | {tt(rw['dnnl'], rw['dnnl_min'])} | {tt(rw['ort'], rw['ort_min'])} | "
                f"{rr(rw['cpu_r'], rw['cpu_rm'])} | {rr(rw['dnnl_r'], rw['dnnl_rm'])} | {impl[:80]} |")

    head = ("| op | shape class | nodes (models) | seam cpu us (median / min) | seam dnnl us | ORT us | "
            "cpu/ORT on min (on median) | dnnl/ORT on min (on median) | "
            "dnnl impl |\n|---|---|---:|---:|---:|---:|---:|---:|---|")
    p = []
    p.append("## Summary\n")
    p.append(f"per-run floor (an Identity of one float): ORT {fmt(floors.get('ort_us'))} us (onnxruntime-node's "
             f"session.run from JS), seam cpu {fmt(floors.get('cpu_us'))} us, seam dnnl "
             f"{fmt(floors.get('dnnl_us'))} us (seam's --repeat times the run inside the process). Overhead "
             f"class: seam cpu or ORT under {OVERHEAD_US:.0f} us, or ORT within {OVERHEAD_US:.0f} us of its "
             f"floor.\n")
    p.append(f"corpus: {stats.get('models', 0)} models, {stats.get('nodes', 0)} timed-kind nodes, "
             f"{len(cases)} shape classes ({stats.get('folded (static)', 0)} nodes folded as static, "
             f"{stats.get('control flow (skipped)', 0)} control flow skipped, "
             f"{stats.get('unknown input shape (skipped)', 0)} without a known input shape); "
             f"{len(rows)} cases timed")
    both = [rw for rw in rows if rw["ort"] is not None]
    big = [rw for rw in both if not rw["overhead"]]
    for label, sel in (("all cases", both), ("cases above the overhead class", big)):
        for on, suf in (("minima", "m"), ("medians", "")):
            gc = geomean([rw["cpu_r" + suf] for rw in sel])
            gd = geomean([rw["dnnl_r" + suf] for rw in sel])
            nd = sum(1 for rw in sel if rw["dnnl_r" + suf])
            p.append(f"- geometric mean over {label}, on the {on}: seam cpu / ORT "
                     f"{gc:.2f} ({sum(1 for rw in sel if rw['cpu_r' + suf])} cases), seam dnnl / ORT "
                     f"{(gd or 0):.2f} ({nd} cases dnnl took)" if gc else f"- {label}: none")
    p.append(f"- disturbed (a side's median above 3x its min over all its runs): "
             f"{sum(1 for rw in rows if rw['disturbed'])} of {len(rows)} cases")
    p.append("\n### Worst 15 rows (max of cpu/ORT and dnnl/ORT on the minima; overhead-class rows excluded)\n")
    p.append(head)
    for rw in sorted(big, key=worst, reverse=True)[:15]:
        p.append(line(rw))
    p.append("\n### Worst 10 overhead-class rows (under 20 us: per-run overhead)\n")
    p.append(head)
    for rw in sorted([rw for rw in both if rw["overhead"]], key=worst, reverse=True)[:10]:
        p.append(line(rw))
    p.append("\n### oneDNN reference kernels\n")
    refs = [rw for rw in rows if rw["refs"]]
    if not refs:
        p.append("none")
    for rw in refs:
        p.append(f"- {rw['op']} {rw['shape'][:90]}: {', '.join(rw['refs'])} (case {rw['id']}; dnnl "
                 f"{fmt(rw['dnnl'])} / min {fmt(rw['dnnl_min'])} us, ORT {fmt(rw['ort'])} / min {fmt(rw['ort_min'])} us)")
    p.append("\n### oneDNN generic kernels (simple:any reorders, simple_nchw pools): not ref, not jit\n")
    gen = collections.defaultdict(list)
    for rw in rows:
        if rw["generic"]:
            gen[rw["op"]].append(rw)
    if not gen:
        p.append("none")
    for op, sel in sorted(gen.items()):
        w = max(sel, key=lambda rw: rw["dnnl_rm"] or 0)
        p.append(f"- {op}: {len(sel)} cases ({', '.join(sorted(set(g for rw in sel for g in rw['generic'])))}), "
                 f"worst {w['shape'][:70]}: dnnl min {fmt(w['dnnl_min'])} us, ORT min {fmt(w['ort_min'])} us")
    p.append("\n### seam refused or crashed\n")
    bad = 0
    for key, r in results.items():
        c = cases[key]
        for side in ("cpu", "dnnl"):
            e = r.get(side + "_error")
            if e:
                bad += 1
                p.append(f"- {side}: {c['op']} {stext(c)[:90]}: {e}\n  `{r[side + '_cmd']}`")
        if r.get("ort_error"):
            p.append(f"- ORT: {c['op']} {stext(c)[:90]}: {r['ort_error'][:200]}")
    if not bad:
        p.append("none")
    nt = collections.Counter()
    for rw in rows:
        if not rw["dnnl"] and rw["dnnl_note"]:
            nt[(rw["op"], re.sub(r"node \d+ ", "", rw["dnnl_note"])[:160])] += 1
    p.append("\n### Not taken by dnnl (op: the reason seam gives, cases)\n")
    for (op, why), n in sorted(nt.items()):
        p.append(f"- {op}: {why} ({n})")
    p.append("\n## Per op, worst first\n")
    byop = collections.defaultdict(list)
    for rw in rows:
        byop[rw["op"]].append(rw)
    for op in sorted(byop, key=lambda o: -max(worst(rw) for rw in byop[o])):
        sel = byop[op]
        gc = geomean([rw["cpu_rm"] for rw in sel])
        gd = geomean([rw["dnnl_rm"] for rw in sel])
        p.append(f"\n### {op} ({len(sel)} cases; geomean on the minima: cpu/ORT {gc or 0:.2f}, dnnl/ORT {gd or 0:.2f})\n")
        p.append(head)
        for rw in sorted(sel, key=worst, reverse=True):
            p.append(line(rw))
    text = "\n".join(p) + "\n"
    if out:
        with open(out, "w") as f:
            f.write(text)
    return text, rows


def is_tiny(r, floors):
    ort, cpu = r.get("ort_us"), r.get("cpu_us")
    return ort is not None and cpu is not None and (cpu < OVERHEAD_US or ort - floors.get("ort_us", 0) < OVERHEAD_US) \
        and (r.get("dnnl_us") is None or r["dnnl_us"] < 2 * OVERHEAD_US)


def measure_floors(a, ort):
    """The per-run cost of the cheapest model (Identity of one float) on each side, best of 3."""
    import onnx
    from onnx import helper, TensorProto
    d = os.path.join(a.work, "floor")
    os.makedirs(d, exist_ok=True)
    mp = os.path.join(d, "model.onnx")
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "floor",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=7), mp)
    f = os.path.join(d, "x.npy")
    np.save(f, np.ones(1, np.float32))
    floors = {}
    for _ in range(3):
        o = ort.time(mp, {"x": f}, 200)
        if o.get("median_ms") is not None:
            floors["ort_us"] = min(floors.get("ort_us", 1e18), o["median_ms"] * 1000)
        for side, dnnl in (("cpu", False), ("dnnl", True)):
            rc, out, err = run(seam_cmd(a, mp, {"x": f}, dnnl, 200, ["--quiet"]))
            m = MEDIAN_RE.search(out + err)
            if m:
                floors[side + "_us"] = min(floors.get(side + "_us", 1e18), float(m.group(1)) * 1000)
    return floors


def retime_dnnl(a):
    import glob
    d = json.load(open(a.retime_dnnl))
    start = time.time()
    todo = [c for c in d["cases"] if c.get("result") and (c["result"].get("probe") or {}).get("taken")]
    for c in todo:
        for k in ("dnnl_us", "dnnl_min_us", "dnnl_medians", "dnnl_error", "dnnl_cmd"):
            c["result"].pop(k, None)
    floors = d.get("floors", {})
    for rnd in range(a.rounds):
        order = todo if not rnd else [c for c in todo if not is_tiny(c["result"], floors) and (
            c["result"].get("dnnl_us", 0) > 1.5 * max(c["result"].get("dnnl_min_us", 0), 0.5)
            or not 0.7 < ratio(c["result"].get("dnnl_us", 0), c["result"].get("ort_us") or 1e-9) < 1.3)]
        random.Random(rnd).shuffle(order)
        print(f"op_bench: retime dnnl round {rnd + 1}: {len(order)} cases", file=sys.stderr)
        for n, c in enumerate(order):
            if rnd and a.time_limit and time.time() - start > a.time_limit:
                break
            r = c["result"]
            cdir = os.path.join(a.work, r["id"])
            feeds = {os.path.basename(f)[:-4]: f for f in sorted(glob.glob(os.path.join(cdir, "in*.npy")))}
            model = os.path.join(cdir, "model.onnx")
            rc, out, err = run(seam_cmd(a, model, feeds, True, r["repeat"], ["--quiet"]))
            m = MEDIAN_RE.search(out + err)
            if rc or not m:
                r["dnnl_error"] = failure(rc, err) if rc else "no median printed"
                r["dnnl_cmd"] = " ".join(shlex.quote(x) for x in seam_cmd(a, model, feeds, True, r["repeat"]))
                continue
            r["dnnl_us"] = min(r.get("dnnl_us", 1e18), float(m.group(1)) * 1000)
            r["dnnl_min_us"] = min(r.get("dnnl_min_us", 1e18), float(m.group(2)) * 1000)
            r.setdefault("dnnl_medians", []).append(float(m.group(1)) * 1000)
            if n % 200 == 0:
                print(f"op_bench: {n}/{len(order)} ({time.time() - start:.0f} s)", file=sys.stderr)
    d["args"]["retime_dnnl"] = vars(a)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(d, f, indent=1, default=str)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--seam", default=os.path.join(HERE, "..", "build", "seam"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--budget-ms", type=float, default=60)
    ap.add_argument("--max-repeat", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ops", default="")
    ap.add_argument("--max-cases", type=int, default=0)
    ap.add_argument("--work", default="/tmp/op-bench")
    ap.add_argument("--json")
    ap.add_argument("--md")
    ap.add_argument("--recheck", type=int, default=2,
                    help="extra rounds for the cases above the overhead class whose ratio is outside 0.7-1.3 "
                         "or where a side looks disturbed (its median above 1.5x its min)")
    ap.add_argument("--spincount", type=int, default=-1,
                    help="GOMP_SPINCOUNT for seam's runs (default -1: the CLI's own OMP_WAIT_POLICY=ACTIVE). "
                         "Do not: on the shared 2-core machine GOMP_SPINCOUNT=100000 made oneDNN's primitives "
                         "take 3-12 ms each (a 25 us eltwise ran in 4 ms)")
    ap.add_argument("--retime-dnnl", metavar="JSON",
                    help="time only the dnnl side again for the cases of a saved --json run (same --work), "
                         "keep its cpu and ORT figures; --json writes the result")
    ap.add_argument("--from-json", nargs="+", help="print the report of saved --json runs (merged) and exit")
    ap.add_argument("--time-limit", type=float, default=0, help="stop starting rounds/cases after S seconds")
    a = ap.parse_args()
    a.seam = os.path.abspath(a.seam)
    if a.spincount >= 0 and "OMP_WAIT_POLICY" not in os.environ:
        SPIN["GOMP_SPINCOUNT"] = str(a.spincount)
    if a.retime_dnnl:
        return retime_dnnl(a)
    if a.from_json:
        cases, results, stats, floors = from_json(a, a.from_json)
        print(report(a, cases, results, stats, a.md, floors)[0])
        return
    dirs = list(a.dirs)
    if not dirs:
        if not os.path.exists("/work/bench-models/resnet18.onnx"):
            subprocess.run(["/usr/bin/python3", os.path.join(HERE, "bench_models.py"), "/work/bench-models"],
                           check=True)
        dirs = ["/work/bench-models"] + (["/work/bench-unseen"] if os.path.isdir("/work/bench-unseen") else [])
    ops = set(a.ops.split(",")) - {""} or None
    t0 = time.time()
    cases, stats = op_corpus.collect(dirs, a.seam, ops)
    print(f"op_bench: {len(cases)} cases from {stats['models']} models in {time.time() - t0:.0f} s", file=sys.stderr)
    if a.max_cases:
        # keep the most frequent cases of each op first, round robin over ops
        byop = collections.defaultdict(list)
        for k, c in cases.items():
            byop[c["op"]].append(k)
        order = []
        lists = [sorted(v, key=lambda k: -cases[k]["count"]) for v in byop.values()]
        while len(order) < a.max_cases and any(lists):
            for lst in lists:
                if lst and len(order) < a.max_cases:
                    order.append(lst.pop(0))
        cases = collections.OrderedDict((k, cases[k]) for k in order)
    rng = np.random.default_rng(0)
    os.makedirs(a.work, exist_ok=True)
    files = {}
    results = {}
    for key, c in cases.items():
        try:
            files[key] = op_corpus.write_case(c, key, a.work, rng)
            results[key] = {"id": op_corpus.case_id(key)}
        except Exception as e:  # noqa: BLE001
            stats["could not write"] += 1
            print(f"op_bench: {c['op']} {op_corpus.shape_class(c)}: cannot write the case: {e}", file=sys.stderr)
    keys = list(files)
    ort = Ort(a.threads)
    floors = measure_floors(a, ort)
    print(f"op_bench: floors {floors}", file=sys.stderr)
    start = time.time()
    # probe: dnnl's kernels, and the repeat count from ONNX Runtime's first time
    for n, key in enumerate(keys):
        if a.time_limit and time.time() - start > a.time_limit * 0.3:
            print(f"op_bench: time limit: probed {n} of {len(keys)} cases", file=sys.stderr)
            keys = keys[:n]
            break
        model, feeds = files[key]
        r = results[key]
        r["probe"] = probe_dnnl(a, cases[key], model, feeds)
        o = ort.time(model, feeds, 3)
        t = o.get("median_ms")
        r["repeat"] = max(5, min(a.max_repeat, int(a.budget_ms / t))) if t else 5
        if o.get("error"):
            r["ort_error"] = o["error"]
        if n % 50 == 0:
            print(f"op_bench: probed {n}/{len(keys)} ({time.time() - start:.0f} s)", file=sys.stderr)
    def suspicious(r):
        if is_tiny(r, floors) or r.get("ort_us") is None:
            return False
        for side in ("cpu", "dnnl", "ort"):
            t = r.get(side + "_us")
            if t is None:
                continue
            if t > 1.5 * max(r.get(side + "_min_us", t), 0.5):
                return True
            if side != "ort" and not 0.7 < ratio(t, r["ort_us"]) < 1.3:
                return True
        return False

    for rnd in range(a.rounds + a.recheck):
        if rnd and a.time_limit and time.time() - start > a.time_limit:
            print(f"op_bench: time limit: {rnd} rounds", file=sys.stderr)
            break
        order = list(keys)
        if rnd:  # tiny cases (per-run overhead decides them) get one round
            order = [k for k in keys if not is_tiny(results[k], floors)]
        if rnd >= a.rounds:  # rechecks: only what looks slow or disturbed
            order = [k for k in order if suspicious(results[k])]
            print(f"op_bench: recheck {rnd - a.rounds + 1}: {len(order)} cases", file=sys.stderr)
        random.Random(rnd).shuffle(order)
        for n, key in enumerate(order):
            if rnd and a.time_limit and time.time() - start > a.time_limit:
                print(f"op_bench: time limit: round {rnd + 1} stopped after {n} cases", file=sys.stderr)
                break
            model, feeds = files[key]
            r = results[key]
            rep = r["repeat"]
            if not r.get("ort_error"):
                o = ort.time(model, feeds, rep)
                if o.get("median_ms") is not None:
                    r["ort_us"] = min(r.get("ort_us", 1e18), o["median_ms"] * 1000)
                    r.setdefault("ort_medians", []).append(o["median_ms"] * 1000)
                    r["ort_min_us"] = min(r.get("ort_min_us", 1e18), o["min_ms"] * 1000)
                else:
                    r["ort_error"] = o.get("error")
            for side, dnnl in (("cpu", False), ("dnnl", True)):
                if r.get(side + "_error") or (dnnl and not r["probe"].get("taken")):
                    if dnnl and r["probe"].get("error"):
                        r["dnnl_error"], r["dnnl_cmd"] = r["probe"]["error"], r["probe"]["cmd"]
                    continue
                cmd = seam_cmd(a, model, feeds, dnnl, rep, ["--quiet"])
                rc, out, err = run(cmd)
                m = MEDIAN_RE.search(out + err)
                if rc or not m:
                    r[side + "_error"] = failure(rc, err) if rc else "no median printed"
                    r[side + "_cmd"] = " ".join(shlex.quote(c) for c in seam_cmd(a, model, feeds, dnnl, rep))
                    continue
                r[side + "_us"] = min(r.get(side + "_us", 1e18), float(m.group(1)) * 1000)
                r[side + "_min_us"] = min(r.get(side + "_min_us", 1e18), float(m.group(2)) * 1000)
                r.setdefault(side + "_medians", []).append(float(m.group(1)) * 1000)
            if n % 100 == 0:
                print(f"op_bench: round {rnd + 1}: {n}/{len(order)} ({time.time() - start:.0f} s)", file=sys.stderr)
    ort.close()
    text, rows = report(a, cases, results, stats, a.md, floors)
    print(text)
    if a.json:
        out = {"dirs": dirs, "stats": dict(stats), "args": vars(a), "floors": floors,
               "cases": [{"id": results[k]["id"] if k in results else None, "op": c["op"], "attrs": c["attrs"],
                          "shape": op_corpus.shape_class(c), "count": c["count"], "models": sorted(c["models"]),
                          "inputs": [None if i is None else {"shape": i["shape"], "dtype": i["dtype"],
                                                             "const": i["const"]} for i in c["inputs"]],
                          "result": results.get(k)} for k, c in cases.items()],
               "rows": rows}
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, default=str)


if __name__ == "__main__":
    main()
