"""seam partition --stages (issue 34): pipeline stages checked from the
ONNX file alone.

usage: python3 check_stages.py SEAM WORKDIR MODEL.onnx... [-k PATTERN]

For each MODEL, with and without dnnl, with and without a stage memory:
`seam partition --stages N --json` gives "pipeline". The execution order
is the plan's subgraphs in order (its own "subgraphs" lists); every node
but constants is in exactly one stage, stages are contiguous and in order.
Each stage's weight, received and sent bytes are recomputed here from the
model (its initializers, and its values' shapes from ONNX shape
inference): weights are the initializers its nodes read, each once (an
Identity of an initializer is that initializer);
received, the values its nodes read that an earlier stage (or the graph's
input) made; sent, every value made before the cut and read after it. A
stage's memory is within --stage-memory. The text output has a line per
stage and the schedule. A model whose weights are 2.5 stage budgets runs
as 3 stages and is refused as 2 with the number it needs; a node larger
than the budget is named; bad options exit 2.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import vi  # noqa: E402

p = seamtest.arg_parser(__doc__)
p.add_argument("seam")
p.add_argument("work")
p.add_argument("models", nargs="*")
args = p.parse_args()
os.makedirs(args.work, exist_ok=True)
run = seamtest.Program(args.seam, timeout=600)
check = seamtest.Checker("stages", args.k)

SIZES = {onnx.TensorProto.FLOAT: 4, onnx.TensorProto.INT64: 8, onnx.TensorProto.INT32: 4, onnx.TensorProto.UINT8: 1,
         onnx.TensorProto.INT8: 1, onnx.TensorProto.FLOAT16: 2, onnx.TensorProto.BOOL: 1, onnx.TensorProto.DOUBLE: 8}


def value_bytes(model):
    """{value name: bytes} from the graph's declared and inferred shapes
    (None where a dim is not a number) and the initializers."""
    m = shape_inference.infer_shapes(model)
    out = {}
    for v in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        t = v.type.tensor_type
        if not t.HasField("shape"):  # (ONNX's inference gave up on it)
            out[v.name] = None
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        out[v.name] = None if None in dims or t.elem_type not in SIZES else int(np.prod(dims, dtype=np.int64)) * SIZES[t.elem_type]
    for t in model.graph.initializer:
        out[t.name] = numpy_helper.to_array(t).nbytes
    return out


def check_plan(label, model, plan, budget):
    pipe = plan.get("pipeline")
    if not check.expect(pipe is not None, f"{label}: the JSON has 'pipeline'", list(plan)):
        return
    nodes = list(model.graph.node)
    order = [i for sg in plan["subgraphs"] for i in sg["nodes"]]
    consts = {n["index"] for n in plan["nodes"] if n["target"] == "constant"}
    check.expect(sorted(order) == sorted(set(range(len(nodes))) - consts), f"{label}: the order covers every node once")
    stages = pipe["stages"]
    at = 0
    for s in stages:
        check.expect(s["first"] == at and s["nodes"] >= 1, f"{label}: stage {s['stage']} starts where the last ended",
                     f"first {s['first']}, expected {at}")
        at = s["first"] + s["nodes"]
    check.expect(at == len(order), f"{label}: the stages cover the order ({at} of {len(order)})")
    sizes = value_bytes(model)
    inits = {t.name for t in model.graph.initializer}
    made = {}
    for q, i in enumerate(order):
        for o in nodes[i].output:
            made[o] = q
    alias = {}  # an Identity of a weight is that weight (seam's readers read it directly: one copy)
    for c in sorted(consts):
        for o in nodes[c].output:
            inits.add(o)  # a folded constant counts as a weight
        if nodes[c].op_type == "Identity" and nodes[c].input[0] in inits:
            alias[nodes[c].output[0]] = alias.get(nodes[c].input[0], nodes[c].input[0])
    known = True
    for s in stages:
        a, b = s["first"], s["first"] + s["nodes"]
        mine = [nodes[order[q]] for q in range(a, b)]
        reads = {x for n in mine for x in n.input if x}
        wset = {alias.get(x, x) for x in reads if x in inits}
        w = sum(sizes.get(x) or 0 for x in wset)
        rec = [x for x in reads if x not in inits and made.get(x, -1) < a]
        sent = set()
        if b < len(order):
            later = {x for q in range(b, len(order)) for x in nodes[order[q]].input if x}
            sent = {x for x in later if x not in inits and made.get(x, -1) < b}
        if any(sizes.get(x) is None for x in list(rec) + list(sent) + list(wset)):
            known = False
            continue
        check.expect(s["weight_bytes"] == w, f"{label}: stage {s['stage']} weights {s['weight_bytes']}", f"the file says {w}")
        check.expect(s["receive_bytes"] == sum(sizes[x] for x in rec),
                     f"{label}: stage {s['stage']} receives {s['receive_bytes']}", f"the file says {sum(sizes[x] for x in rec)}")
        check.expect(s["send_bytes"] == sum(sizes[x] for x in sent), f"{label}: stage {s['stage']} sends {s['send_bytes']}",
                     f"the file says {sum(sizes[x] for x in sent)}")
        if budget:
            check.expect(s["memory_bytes"] <= budget, f"{label}: stage {s['stage']} within the budget",
                         f"{s['memory_bytes']} > {budget}")
    if not known:
        check.ok(f"{label}: byte counts not checked where a shape is symbolic")


def model_cases():
    for path in args.models:
        name = os.path.splitext(os.path.basename(path))[0]
        if not check.selected(name):
            continue
        model = onnx.load(path)
        for extra in ([], ["--target", "dnnl"]):
            label0 = f"{name}{' dnnl' if extra else ''}"
            r = run("partition", path, *extra, "--stages", "3", "--json", "--simulate")
            if not check.expect(r.returncode == 0, f"{label0}: --stages 3", r.stderr.strip()[-300:]):
                continue
            plan = json.loads(r.stdout)
            check_plan(f"{label0} 3 stages", model, plan, 0)
            mem = max(s["memory_bytes"] for s in plan["pipeline"]["stages"])
            sched = plan["pipeline"].get("schedule", {})
            check.expect(sched.get("micro_batches") == 12 and sched.get("makespan_us", 0) > 0,
                         f"{label0}: --simulate adds the schedule (12 micro-batches by default)", sched)
            # a budget below the free cut's largest stage: still 3 stages, each within it, or refused saying why
            budget = int(mem * 0.9)
            r = run("partition", path, *extra, "--stages", "3", "--stage-memory", str(budget), "--json")
            if r.returncode == 0:
                check_plan(f"{label0} 3 stages within {budget}", model, json.loads(r.stdout), budget)
            else:
                check.expect(r.returncode == 2 and ("needs at least" in r.stderr or "alone needs" in r.stderr),
                             f"{label0}: a budget no cut fits is refused saying why", r.stderr.strip()[-300:])
            r = run("partition", path, *extra, "--stages", "2", "--simulate", "--micro-batches", "5")
            lines = r.stdout.splitlines()
            check.expect(r.returncode == 0 and sum(ln.startswith("  stage ") for ln in lines) == 2 and
                         any(ln.startswith("schedule of 5 micro-batches") for ln in lines),
                         f"{label0}: the text has a line per stage and the schedule", r.stdout[-400:] + r.stderr[-300:])


def mlp_model():
    """Six 256 x 256 MatMuls with a Relu each (256 KiB of weights each)."""
    rng = np.random.RandomState(3)
    nodes, inits, x = [], [], "x"
    for k in range(6):
        inits.append(numpy_helper.from_array((rng.randn(256, 256) * 0.05).astype(np.float32), f"w{k}"))
        nodes.append(helper.make_node("MatMul", [x, f"w{k}"], [f"m{k}"], name=f"mm{k}"))
        nodes.append(helper.make_node("Relu", [f"m{k}"], [f"r{k}" if k < 5 else "y"], name=f"relu{k}"))
        x = f"r{k}"
    return seamtest.save_model(os.path.join(args.work, "mlp6.onnx"), nodes, [vi("x", [4, 256])], [vi("y", [4, 256])], inits)


def mlp_case():
    """The six MatMuls' 1.5 MiB of weights and a stage memory of 1.5 MiB /
    2.5: three stages fit, two do not."""
    if not check.selected("mlp_budget"):
        return
    path = mlp_model()
    weights = 6 * 256 * 256 * 4
    budget = int(weights / 2.5)
    model = onnx.load(path)
    r = run("partition", path, "--stages", "3", "--stage-memory", str(budget), "--json")
    if check.expect(r.returncode == 0, "mlp_budget: weights of 2.5 budgets in 3 stages", r.stderr.strip()[-300:]):
        check_plan("mlp_budget", model, json.loads(r.stdout), budget)
    r = run("partition", path, "--stages", "2", "--stage-memory", str(budget))
    check.expect(r.returncode == 2 and "needs at least 3" in r.stderr, "mlp_budget: 2 stages refused: it needs at least 3",
                 r.stderr.strip()[-300:])
    r = run("partition", path, "--stages", "2", "--stage-memory", "100K")
    check.expect(r.returncode == 2 and "'mm0' (MatMul) alone needs" in r.stderr,
                 "mlp_budget: a weight larger than the budget names its node", r.stderr.strip()[-300:])


def usage_cases():
    if not check.selected("usage"):
        return
    m = mlp_model()
    for bad in (["--stages", "0"], ["--stages", "x"], ["--stages", "2", "--stage-memory", "lots"],
                ["--simulate"], ["--stage-memory", "1M"], ["--stages", "2", "--link-gbits", "0"],
                ["--stages", "2", "--link-latency-us", "-1"], ["--stages", "2", "--micro-batches", "0"], ["--stages"],
                ["--stages", "99"]):
        r = run("partition", m, *bad)
        check.expect(r.returncode == 2 and r.stderr.strip(), f"usage: {' '.join(bad)} exits 2 saying why",
                     f"exit {r.returncode}: {r.stderr.strip()[-200:]}")


model_cases()
mlp_case()
usage_cases()
check.finish()
