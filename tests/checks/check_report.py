"""seam's pictures of a partition, checked in a real browser and against
the files themselves (seam partition/run --html, --profile, --workdir).

  html      the HTML page opens in headless Chromium (started here, no
            network): one cluster per subgraph (or one box per subgraph for
            a graph over 2,000 nodes), a node per node, the supported-fraction
            line exactly as `seam analyze` prints it, a node's reason shown
            after a click (the page's #click=ID clicks it at load), edges
            crossing a device boundary labelled with their bytes; a hostile
            node name (<script>alert(1)</script>) stays text; nothing is
            fetched; the counts line (nodes, subgraphs, on devices) equal to
            the plan's JSON. A screenshot of each page is kept in the work
            folder.
  trace     the Chrome trace of a run: every span has ph, ts, dur, pid, tid,
            name; spans nest per track; a span per node of the run, a
            compile span per device subgraph, copy spans for a backend with
            memory of its own (the toy plugin), and for a CPU-only run a
            span per node of the model.
  workdir   each device subgraph's model (onnx.checker passes) run alone
            on the boundary values --dump-values wrote gives the values the
            full run gave; the compile logs are there.
  bad       an unwritable --html path, an existing folder that is not a
            seam work directory, a file as --workdir, --dump-values without
            --workdir: a clear message, exit 1 (2 for usage), nothing
            half-written.

usage: check_report.py SEAM TOY_SO GEN_GRAPH WORK [--models DIR] [-k PATTERN]
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

p = seamtest.arg_parser(__doc__)
p.add_argument("seam")
p.add_argument("toy")
p.add_argument("gen_graph")
p.add_argument("work")
p.add_argument("--models", help="folder of gen_models.py's models (resnet18, resnet50)")
args = p.parse_args()
check = seamtest.Checker("report", args.k)
seam = seamtest.Program(args.seam, timeout=600)
W = os.path.abspath(args.work)
shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)
HOSTILE = "<script>alert(1)</script>"
TOY = ["--backend-lib", args.toy, "--target", "toy"]


def chromium(url, screenshot=None):
    """The DOM of url after its scripts ran, from headless Chromium; with
    screenshot (a path), a PNG of the page instead."""
    prof = tempfile.mkdtemp(dir=W, prefix="chromium-")
    base = ["chromium", "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
            "--disable-background-networking", "--disable-sync", "--mute-audio", f"--user-data-dir={prof}",
            "--virtual-time-budget=15000", "--window-size=1400,1000"]
    what = [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    r = subprocess.run(base + what + [url], capture_output=True, text=True, timeout=300)
    shutil.rmtree(prof, ignore_errors=True)
    return r.stdout


def no_external(html):
    """Names of things in the page that would be fetched."""
    bad = []
    for pat in (r"<link\b", r"\bsrc\s*=", r"@import", r"url\(", r"<iframe", r"<img\b", r"fetch\(", r"XMLHttpRequest"):
        if re.search(pat, html, re.I):
            bad.append(pat)
    return bad


def support_line(model, targets):
    r = seam("analyze", model, *targets)
    m = re.search(r"^(\d+\.\d+% of operations \(\d+ of \d+\) are supported)$", r.stdout, re.M)
    return m.group(1) if m else None


def plan_of(model, targets):
    r = seam("partition", model, *targets, "--json")
    return json.loads(r.stdout) if r.returncode == 0 else None


def small_model():
    """x -> Relu (hostile name) -> Abs (toy lacks it) -> Add -> Mul by a constant -> y."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name=HOSTILE),
             helper.make_node("Abs", ["r"], ["a"], name="abs"),
             helper.make_node("Add", ["a", "r"], ["s"], name="add"),
             helper.make_node("Mul", ["s", "k"], ["y"], name="mul")]
    inits = seamtest.initializers({"k": np.array([0.5], np.float32)})
    path = os.path.join(W, "small.onnx")
    seamtest.save_model(path, nodes, [seamtest.vi("x", [1, 4, 8, 8])], [seamtest.vi("y", [1, 4, 8, 8])], inits)
    return path


def check_page(name, html_path, model, targets, plan, click, want_reason, boxes=False, support=True):
    text = open(html_path, encoding="utf-8", errors="replace").read()
    check.expect(not no_external(text), f"{name}: the page fetches nothing", no_external(text))
    check.expect(HOSTILE not in text, f"{name}: no raw {HOSTILE} in the file")
    png = os.path.join(W, f"{name}.png")
    url = "file://" + os.path.abspath(html_path)
    dom = chromium(url + "#click=" + click)
    chromium(url if boxes else url + "#click=" + click, png)
    check.expect(os.path.exists(png) and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n",
                 f"{name}: screenshot kept ({png})")
    n_sub = len(plan["subgraphs"])
    # the counts line against the plan's JSON: nodes that are not
    # constants, subgraphs, and those on a target other than the CPU
    m = re.search(r'<p id="counts">(\d+) nodes; (\d+) subgraphs \((\d+) on devices\)', dom)
    counts = (sum(n["target"] != "constant" for n in plan["nodes"]), n_sub,
              sum(s["target"] != "cpu" for s in plan["subgraphs"]))
    check.expect(m and tuple(map(int, m.groups())) == counts,
                 f"{name}: the counts line says {counts[0]} nodes, {counts[1]} subgraphs, {counts[2]} on devices",
                 m and m.group(0))
    if boxes:
        got = len(re.findall(r'<g id="s\d+" class="node"', dom))
        check.expect(got == n_sub, f"{name}: one box per subgraph ({n_sub})", f"{got} boxes")
    else:
        got = len(re.findall(r'<g id="c\d+" class="cluster"', dom))
        check.expect(got == n_sub, f"{name}: one cluster per subgraph ({n_sub})", f"{got} clusters")
        nodes = len(re.findall(r'<g id="n\d+" class="node', dom))
        want = sum(n["target"] != "constant" for n in plan["nodes"])
        check.expect(nodes == want, f"{name}: a node per node that is not a constant ({want})", f"{nodes} nodes")
        for s in plan["subgraphs"]:
            label = f"{s['target']} #{s['id']} ({len(s['nodes'])} node{'s' if len(s['nodes']) != 1 else ''})"
            if label not in dom:
                check.fail(f"{name}: cluster label '{label}' missing")
                break
    if support:
        want = support_line(model, targets)
        m = re.search(r'<p id="support">([^<]*)</p>', dom)
        check.expect(m and want and m.group(1) == want, f"{name}: the supported-fraction line as analyze prints it",
                     f"page {m and m.group(1)!r}, analyze {want!r}")
    if want_reason:
        m = re.search(r'<div id="reason">(.*?)</div>', dom, re.S)
        reason = re.sub(r"<[^>]+>", "", m.group(1)) if m else ""
        check.expect(want_reason in reason, f"{name}: clicking {click} shows its reason ({want_reason})", repr(reason))
    check.expect("<script>alert" not in dom, f"{name}: no hostile markup in the DOM")
    return dom


# ---- html --------------------------------------------------------------------------------------------------
small = small_model()
if check.selected("html_small"):
    html = os.path.join(W, "small.html")
    r = seam("partition", small, *TOY, "--html", html)
    if check.expect(r.returncode == 0 and os.path.exists(html), "html_small: seam partition --html", r.stderr):
        plan = plan_of(small, TOY)
        abs_node = next(n["index"] for n in plan["nodes"] if n["op"] == "Abs")
        dom = check_page("html_small", html, small, TOY, plan, f"n{abs_node}", "unsupported")
        check.expect(len(plan["subgraphs"]) == 3, "html_small: the plan has 3 subgraphs (toy, cpu, toy)",
                     len(plan["subgraphs"]))
        check.expect("1.0 KB" in dom, "html_small: a device-boundary edge is labelled with its bytes (1.0 KB)")
        # the hostile name is shown as text after a click
        relu = next(n["index"] for n in plan["nodes"] if n["op"] == "Relu")
        dom2 = chromium("file://" + html + f"#click=n{relu}")
        check.expect("&lt;script&gt;alert(1)&lt;/script&gt;" in dom2, "html_small: the hostile name is shown as text")
    # measured times from a run
    html2 = os.path.join(W, "small_run.html")
    r = seam("run", small, *TOY, "--report", "--html", html2)
    if check.expect(r.returncode == 0, "html_small: seam run --report --html", r.stderr):
        text = open(html2).read()
        data = json.loads(re.search(r'id="seam-data">(.*?)</script>', text, re.S).group(1))
        cpu_ms = [n[8] for n in data["nodes"] if n[2] == "cpu"]
        check.expect(data["measured"] and cpu_ms and all(t >= 0 for t in cpu_ms),
                     "html_small: the CPU nodes have measured times", cpu_ms)
        rows = re.findall(r'<tr id="row-s\d+"[^>]*>(.*?)</tr>', text)
        measured = [re.findall(r"<td>(.*?)</td>", row)[-2] for row in rows]
        check.expect(rows and all(re.match(r"^\d+\.\d+$", t) for t in measured),
                     "html_small: every subgraph row has a measured time", measured)
        check.expect(re.search(r"toy #0 \(1 node\) \d+\.\d+ ms", text),
                     "html_small: the clusters are labelled with their measured time")

for model in ("resnet18", "resnet50"):
    path = os.path.join(args.models or "", f"{model}.onnx")
    name = f"html_{model}"
    if not check.selected(name):
        continue
    if not args.models or not os.path.exists(path):
        check.ok(f"{name}: skipped, no {path} (gen_models.py)")
        continue
    targets = ["--target", "dnnl", "--cpu-ops", "Add", "--placement", "capability"]
    html = os.path.join(W, f"{model}.html")
    r = seam("partition", path, *targets, "--html", html)
    if check.expect(r.returncode == 0, f"{name}: seam partition --html", r.stderr):
        plan = plan_of(path, targets)
        conv = next(n["index"] for n in plan["nodes"] if n["op"] == "Conv")
        add = next(n["index"] for n in plan["nodes"] if n["op"] == "Add")
        check_page(name, html, path, targets, plan, f"n{conv}", "supported by dnnl")
        dom = chromium("file://" + html + f"#click=n{add}")
        check.expect("cpu_ops" in dom, f"{name}: an Add's reason is cpu_ops")

if check.selected("html_big"):
    # over 2,000 nodes: one box per subgraph, a subgraph's nodes on a click
    g = os.path.join(W, "big.onnx")
    subprocess.run([args.gen_graph, "random", "20000", g], check=True, capture_output=True)
    rules = os.path.join(W, "npu.json")
    with open(rules, "w") as f:
        f.write('{"name": "npu", "default": true, "ops": {"Sigmoid": false}}')
    html = os.path.join(W, "big.html")
    r = seam("partition", g, "--target", rules, "--max-subgraph-count", "60", "--html", html)
    if check.expect(r.returncode == 0, "html_big: seam partition --html (20,000 nodes)", r.stderr):
        plan = plan_of(g, ["--target", rules, "--max-subgraph-count", "60"])
        dom = check_page("html_big", html, g, ["--target", rules], plan, "s0", None, boxes=True, support=False)
        small_sub = min(plan["subgraphs"], key=lambda s: len(s["nodes"]))
        dom = chromium("file://" + html + f"#click=s{small_sub['id']}")
        check.expect(f"subgraph #{small_sub['id']} (" in dom, f"html_big: clicking subgraph {small_sub['id']}'s box opens it")
        dom = chromium("file://" + html + f"#click=row-s{small_sub['id']}")
        m = re.search(r'<div id="subview">(.*?)</div>\s*<table id="summary"', dom, re.S)
        sub = m.group(1) if m else ""
        n_shown = len(re.findall(r'id="n\d+" class="node', sub))
        check.expect(n_shown == len(small_sub["nodes"]), f"html_big: clicking subgraph {small_sub['id']}'s row shows its "
                     f"{len(small_sub['nodes'])} nodes", n_shown)


# ---- trace -------------------------------------------------------------------------------------------------
def check_trace(name, path, want_nodes, want_compiles, want_copies):
    try:
        t = json.load(open(path))
    except (OSError, ValueError) as e:
        return check.fail(f"{name}: trace does not load: {e}")
    ev = t.get("traceEvents", [])
    spans = [e for e in ev if e.get("ph") == "X"]
    bad = [e for e in spans if not all(k in e for k in ("ph", "ts", "dur", "pid", "tid", "name"))
           or not isinstance(e["ts"], (int, float)) or not isinstance(e["dur"], (int, float)) or e["dur"] < 0]
    check.expect(spans and not bad, f"{name}: every span has ph, ts, dur >= 0, pid, tid, name", bad[:2])
    others = [e for e in ev if e.get("ph") not in ("X", "M")]
    check.expect(not others, f"{name}: only complete (X) and metadata (M) events", others[:2])
    # nesting per track: a span starting inside another ends inside it
    eps = 0.01
    broken = []
    for tid in {(e["pid"], e["tid"]) for e in spans}:
        stack = []
        for e in sorted((e for e in spans if (e["pid"], e["tid"]) == tid), key=lambda e: (e["ts"], -e["dur"])):
            while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - eps:
                stack.pop()
            if stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"] + eps:
                broken.append((stack[-1]["name"], e["name"]))
            stack.append(e)
    check.expect(not broken, f"{name}: spans nest on every track", broken[:3])
    cats = {}
    for e in spans:
        cats.setdefault(e.get("cat"), []).append(e)
    got = len(cats.get("node", [])) + len(cats.get("subgraph", []))
    check.expect(got == want_nodes, f"{name}: a span per node of the run ({want_nodes})", got)
    check.expect(len(cats.get("compile", [])) == want_compiles, f"{name}: a compile span per device subgraph "
                 f"({want_compiles})", len(cats.get("compile", [])))
    copies = len(cats.get("copy", []))
    check.expect((copies > 0) == want_copies, f"{name}: boundary copies {'are' if want_copies else 'are not'} spans",
                 copies)
    check.expect("not measured" in json.dumps(t.get("metadata", {})),
                 f"{name}: the metadata says per-node times inside device subgraphs are not measured")
    return t


if check.selected("trace"):
    tr = os.path.join(W, "small.trace.json")
    r = seam("run", small, *TOY, "--profile", tr)
    if check.expect(r.returncode == 0, "trace: seam run --profile (toy)", r.stderr):
        # the run's graph: two Subgraph nodes (toy) and Abs
        t = check_trace("trace_toy", tr, 3, 2, True)
        copy = [e for e in t["traceEvents"] if e.get("cat") == "copy"]
        check.expect(any(e["args"].get("bytes") == 1024 for e in copy), "trace_toy: a copy span carries its bytes")
        sub = [e for e in t["traceEvents"] if e.get("cat") == "subgraph"]
        check.expect(all("op" in e["args"] and e["args"].get("inputs") for e in sub),
                     "trace_toy: subgraph spans carry op and shapes")
    tr = os.path.join(W, "cpu.trace.json")
    r = seam("run", small, "--profile", tr)
    if check.expect(r.returncode == 0, "trace: seam run --profile (CPU only)", r.stderr):
        check_trace("trace_cpu", tr, 4, 0, False)
    if args.models and os.path.exists(os.path.join(args.models, "resnet18.onnx")):
        m18 = os.path.join(args.models, "resnet18.onnx")
        tr = os.path.join(W, "resnet18.trace.json")
        r = seam("run", m18, "--target", "dnnl", "--cpu-ops", "Add", "--placement", "capability", "--profile", tr)
        plan = plan_of(m18, ["--target", "dnnl", "--cpu-ops", "Add", "--placement", "capability"])
        if check.expect(r.returncode == 0 and plan, "trace: seam run --profile (resnet18 on dnnl)", r.stderr):
            dev = [s for s in plan["subgraphs"] if s["target"] != "cpu"]
            cpu_nodes = sum(len(s["nodes"]) for s in plan["subgraphs"] if s["target"] == "cpu")
            t = check_trace("trace_resnet18", tr, len(dev) + cpu_nodes, len(dev), False)
            comp = [e for e in t["traceEvents"] if e.get("cat") == "compile"]
            check.expect(comp and all(e["args"].get("log") for e in comp),
                         "trace_resnet18: compile spans carry dnnl's compile log")


# ---- workdir -----------------------------------------------------------------------------------------------
def check_workdir(name, model, targets, inputs=()):
    wd = os.path.join(W, f"{name}.work")
    r = seam("run", model, *targets, *inputs, "--workdir", wd, "--dump-values")
    if not check.expect(r.returncode == 0, f"{name}: seam run --workdir --dump-values", r.stderr):
        return
    for f in (".seam-workdir", "plan.json", "partitioned.onnx"):
        check.expect(os.path.exists(os.path.join(wd, f)), f"{name}: {f} written")
    subs = sorted(glob.glob(os.path.join(wd, "subgraph_*.onnx")))
    plan = json.load(open(os.path.join(wd, "plan.json")))
    dev = [s for s in plan["subgraphs"] if s["target"] != "cpu"]
    check.expect(len(subs) == len(dev), f"{name}: a model per device subgraph ({len(dev)})", len(subs))
    worst = 0.0
    for sp in subs:
        base = os.path.basename(sp)[:-5]
        check.expect(os.path.exists(os.path.join(wd, base + ".log")), f"{name}: {base}.log written")
        try:
            onnx.checker.check_model(sp)
        except Exception as e:  # noqa: BLE001 - any checker complaint is a failure
            check.fail(f"{name}: {base}.onnx fails onnx.checker: {e}")
        m = onnx.load(sp, load_external_data=False)
        inits = {i.name for i in m.graph.initializer}
        run = ["run", sp, *targets[:4], "--output-dir", os.path.join(wd, "out-" + base)]
        for i in m.graph.input:
            if i.name not in inits:
                run += ["--input", f"{i.name}={seamtest.output_file(os.path.join(wd, 'values'), i.name)}"]
        r = seam(*run)
        if not check.expect(r.returncode == 0, f"{name}: {base}.onnx runs alone", r.stderr):
            continue
        for o in m.graph.output:
            got = np.load(seamtest.output_file(os.path.join(wd, "out-" + base), o.name))
            want = np.load(seamtest.output_file(os.path.join(wd, "values"), o.name))
            e = seamtest.rel_err(got, want)  # inf for another shape, or a NaN the full run lacks
            worst = seamtest.worst([worst, e])
            if not e <= 1e-4:
                check.fail(f"{name}: {base} output {o.name}: rel err {e:.2e} against the full run's value")
    check.ok(f"{name}: {len(subs)} subgraphs alone equal the full run's boundary values (worst rel err {worst:.1e})")


if check.selected("workdir"):
    check_workdir("workdir_small", small, TOY)
    if args.models and os.path.exists(os.path.join(args.models, "resnet18.onnx")):
        m18 = os.path.join(args.models, "resnet18.onnx")
        check_workdir("workdir_resnet18", m18, ["--target", "dnnl", "--cpu-ops", "Add", "--placement", "capability"],
                      ["--input", "input=" + os.path.join(args.models, "resnet18.input.npy")])
    # a second write replaces a seam work directory as a whole
    wd = os.path.join(W, "workdir_small.work")
    open(os.path.join(wd, "stale"), "w").close()
    r = seam("partition", small, *TOY, "--workdir", wd)
    check.expect(r.returncode == 0 and not os.path.exists(os.path.join(wd, "stale")) and
                 os.path.exists(os.path.join(wd, "subgraph_0_toy.onnx")),
                 "workdir: seam partition --workdir replaces an earlier seam work directory", r.stderr)
    left = glob.glob(wd + ".tmp-*") + glob.glob(wd + ".old-*")
    check.expect(not left, "workdir: no temporary folders left", left)


# ---- bad input ---------------------------------------------------------------------------------------------
if check.selected("bad"):
    before = set(os.listdir(W))
    r = seam("partition", small, *TOY, "--html", os.path.join(W, "no-such-dir", "x.html"))
    check.expect(r.returncode == 1 and "no-such-dir/x.html" in r.stderr, "bad: unwritable --html: exit 1 naming it",
                 (r.returncode, r.stderr))
    r = seam("run", small, "--profile", os.path.join(W, "no-such-dir", "t.json"))
    check.expect(r.returncode == 1 and "no-such-dir/t.json" in r.stderr, "bad: unwritable --profile: exit 1 naming it",
                 (r.returncode, r.stderr))
    foreign = os.path.join(W, "foreign")
    os.makedirs(foreign)
    open(os.path.join(foreign, "keep.txt"), "w").write("mine")
    for cmd in (["partition", small, *TOY], ["run", small, *TOY, "--dump-values"]):
        r = seam(*cmd, "--workdir", foreign)
        check.expect(r.returncode == 1 and "not a seam work directory" in r.stderr,
                     f"bad: {cmd[0]} --workdir on a folder seam did not write: exit 1", (r.returncode, r.stderr))
    check.expect(os.listdir(foreign) == ["keep.txt"], "bad: the foreign folder is untouched", os.listdir(foreign))
    afile = os.path.join(W, "afile")
    open(afile, "w").close()
    r = seam("partition", small, *TOY, "--workdir", afile)
    check.expect(r.returncode == 1 and "not a seam work directory" in r.stderr, "bad: a file as --workdir: exit 1",
                 (r.returncode, r.stderr))
    r = seam("run", small, "--dump-values")
    check.expect(r.returncode == 2 and "--workdir" in r.stderr, "bad: --dump-values without --workdir: exit 2",
                 (r.returncode, r.stderr))
    r = seam("partition", small, *TOY, "--workdir", os.path.join(W, "no-such-dir", "wd"))
    check.expect(r.returncode == 1, "bad: a --workdir in a missing folder: exit 1", (r.returncode, r.stderr))
    model_bytes = open(small, "rb").read()
    for cmd in (["partition", small, *TOY, "--html", small], ["run", small, "--profile", small]):
        r = seam(*cmd)
        check.expect(r.returncode == 1 and "is the input model" in r.stderr and open(small, "rb").read() == model_bytes,
                     f"bad: {cmd[0]} {cmd[-2]} onto the input model: refused, the model untouched", (r.returncode, r.stderr))
    after = set(os.listdir(W)) - before - {"foreign", "afile"}
    check.expect(not after, "bad: nothing half-written", sorted(after))

check.finish()
