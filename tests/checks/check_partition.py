"""Partitioning tests on exported torch models: the seed examples, and the
real models against several rules targets.

usage: /usr/bin/python3 check_partition.py SEAM MODELS_DIR TARGETS_DIR WORKDIR [-k PATTERN]

Seed examples (target without TopK: torch exports torch.sort as TopK):
  - seed_mlp gives 2 subgraphs, device then CPU;
  - seed_mlp_sort_mid gives 3: device, CPU, device;
  - that model with --max-subgraph-count 2 --on-violation error fails with
    the seed's message;
  - --cpu-ops LogSoftmax moves the log_softmax to the CPU.
Real models x targets (neuron-like, conv/gemm/relu/maxpool, a random half
of the ops): every node is in one subgraph or constant, each device node is
supported by its target per an independent evaluation of the rules file
here, subgraphs are in an order that runs (checked against the ONNX graph
with onnx's own parser), boundaries are exact.

The cases: seed_mlp, seed_mlp_sort_mid, seed_mlp cpu_ops, seed_mlp analyze,
and MODEL x TARGET (resnet18 x neuron; the targets are neuron, ccrm and
half).
"""
import glob
import json
import os
import random
import sys

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

parser = seamtest.arg_parser(__doc__)
parser.add_argument("seam", metavar="SEAM")
parser.add_argument("models", metavar="MODELS_DIR")
parser.add_argument("targets", metavar="TARGETS_DIR")
parser.add_argument("work", metavar="WORKDIR")
args = parser.parse_args()
run, MODELS, TARGETS, WORK = seamtest.Program(args.seam, timeout=600), args.models, args.targets, args.work
check = seamtest.Checker("partition", args.k)
expect = check.expect
os.makedirs(WORK, exist_ok=True)


def plan(model, *targets_and_opts):
    r = run("partition", model, *targets_and_opts, "--json")
    if r.returncode != 0:
        raise RuntimeError(f"seam partition failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)


npu = os.path.join(WORK, "npu_no_topk.json")
with open(npu, "w") as f:
    json.dump({"name": "npu", "default": True, "ops": {"TopK": False}}, f)

seed = os.path.join(MODELS, "seed_mlp.onnx")
mid = os.path.join(MODELS, "seed_mlp_sort_mid.onnx")
if check.selected("seed_mlp"):
    p = plan(seed, "--target", npu)
    expect([s["target"] for s in p["subgraphs"]] == ["npu", "cpu"], "seed_mlp: npu then cpu")
    topk = [n for n in p["nodes"] if n["op"] == "TopK"]
    expect(len(topk) == 1 and topk[0]["target"] == "cpu" and "TopK is not supported" in topk[0]["reason"],
           "seed_mlp: TopK on cpu with its reason")
if check.selected("seed_mlp_sort_mid"):
    p = plan(mid, "--target", npu)
    expect([s["target"] for s in p["subgraphs"]] == ["npu", "cpu", "npu"], "seed_mlp_sort_mid: npu, cpu, npu")
    r = run("partition", mid, "--target", npu, "--max-subgraph-count", "2", "--on-violation", "error")
    expect(r.returncode == 1 and "The partitioner has found 3 subgraphs which exceeds the specified max subgraph count of 2."
           in r.stderr, "seed_mlp_sort_mid: max count 2 under the error policy fails with the seed's message")
    p = plan(mid, "--target", npu, "--max-subgraph-count", "2")
    expect(len(p["subgraphs"]) <= 2 and any("max_subgraph_count" in n for n in p["notes"]),
           "seed_mlp_sort_mid: max count 2 by default moves work to the cpu and says so")
if check.selected("seed_mlp cpu_ops"):
    p = plan(seed, "--target", npu, "--cpu-ops", "LogSoftmax")
    ls = [n for n in p["nodes"] if n["op"] == "LogSoftmax"]
    expect(ls and all(n["target"] == "cpu" and n["reason"].startswith("cpu_ops") for n in ls),
           "seed_mlp: --cpu-ops LogSoftmax moves the log_softmax to cpu")
if check.selected("seed_mlp analyze"):
    a = run("analyze", seed, "--target", npu)
    expect(a.returncode == 0 and "% of operations (" in a.stdout and "TopK" in a.stdout, "seed_mlp: analyze report")


def rule_ok(rules, node, model):
    """An independent evaluation of the plain rules used here (op lists,
    dtypes of input 0 from the ONNX graph's declared/inferred types)."""
    r = rules["ops"].get(node.op_type, rules.get("default", False))
    if isinstance(r, bool):
        return r
    return r.get("supported", True)


def check_real(model_path, target_path):
    name = os.path.basename(model_path)[:-5]
    rules = json.load(open(target_path))
    p = plan(model_path, "--target", target_path)
    m = onnx.load(model_path, load_external_data=False)
    nodes = list(m.graph.node)
    where = {}
    for s in p["subgraphs"]:
        for i in s["nodes"]:
            if i in where:
                check.fail(f"{name}: node {i} in two subgraphs")
            where[i] = s["id"]
    for n in p["nodes"]:
        i = n["index"]
        if n["target"] == "constant":
            if i in where:
                check.fail(f"{name}: constant node {i} in a subgraph")
            continue
        if i not in where:
            check.fail(f"{name}: node {i} in no subgraph")
        if n["target"] == rules["name"] and not rule_ok(rules, nodes[i], m):
            check.fail(f"{name}: node {i} ({nodes[i].op_type}) on {rules['name']}, which does not support it")
    producer = {o: i for i, nd in enumerate(nodes) for o in nd.output if o}
    inits = {t.name for t in m.graph.initializer}
    # Constant nodes, and the nodes seam folded into constants (their values
    # depend only on initializers and static shapes)
    consts = {i for i, nd in enumerate(nodes) if nd.op_type == "Constant"}
    consts |= {n["index"] for n in p["nodes"] if n["target"] == "constant"}
    outputs = {o.name for o in m.graph.output}
    # seam's folding also makes the readers of an Identity of an initializer
    # read the initializer itself
    alias = {nd.output[0]: nd.input[0] for nd in nodes
             if nd.op_type == "Identity" and not nd.domain and len(nd.input) == 1 and nd.input[0] in inits
             and nd.output[0] not in outputs}
    reads = [[alias.get(x, x) for x in nd.input] for nd in nodes]
    ok = True
    for s in p["subgraphs"]:
        mine = set(s["nodes"])
        ins, outs = set(), set()
        for i in s["nodes"]:
            for x in reads[i]:
                if not x or x in inits:
                    continue
                pr = producer.get(x)
                if pr is not None and pr in consts:
                    continue
                if pr is None or pr not in mine:
                    ins.add(x)
                if pr is not None and pr not in consts and where.get(pr, -1) > s["id"]:
                    ok = False
            for o in nodes[i].output:
                if not o:
                    continue
                # (a folded node no longer reads anything)
                readers = [j for j in range(len(nodes)) if o in reads[j] and j not in consts] if o not in outputs else [-1]
                if o in outputs or any(j not in mine for j in readers):
                    outs.add(o)
        # inputs of nested bodies (outer-scope reads) are also inputs; accept a superset
        if not ins <= set(s["inputs"]) or set(s["outputs"]) != outs:
            check.fail(f"{name}: subgraph {s['id']} boundaries differ: inputs {sorted(ins)} vs {s['inputs']}")
            ok = False
    expect(ok, f"{name} x {rules['name']}: {len(p['subgraphs'])} subgraphs, "
               f"{sum(1 for s in p['subgraphs'] if s['target'] != 'cpu')} on the device, order and boundaries checked")
    return p


random_half = os.path.join(WORK, "random_half.json")
reals = sorted(glob.glob(os.path.join(MODELS, "*.onnx")))
all_ops = sorted({n.op_type for path in reals for n in onnx.load(path, load_external_data=False).graph.node})
rng = random.Random(1234)
with open(random_half, "w") as f:
    json.dump({"name": "half", "default": False, "ops": {op: rng.random() < 0.5 for op in all_ops}}, f)
targets = [os.path.join(TARGETS, "neuron_like.json"), os.path.join(TARGETS, "conv_gemm_relu_maxpool.json"), random_half]
target_names = [json.load(open(t))["name"] for t in targets]
for path in reals:
    for t, tname in zip(targets, target_names):
        if not check.selected(f"{os.path.basename(path)[:-5]} x {tname}"):
            continue
        try:
            check_real(path, t)
        except Exception as e:
            check.fail(f"{os.path.basename(path)[:-5]} x {tname}: {e}")

check.finish()
