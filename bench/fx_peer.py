"""torch.fx's CapabilityBasedPartitioner on an fx mirror of an ONNX graph.

usage: /usr/bin/python3 bench/fx_peer.py MODEL.onnx RULES.json [--repeat N]

Builds a torch.fx Graph with one call_function node per ONNX node (same
edges), and asks the partitioner to group the nodes the rules file supports
(op type listed as true, or not listed with "default": true; conditions on
dtypes, ranks and attributes are ignored: use plain rules files). Prints one
JSON line: nodes, partitions found, seconds for propose_partitions (best of
N).
"""
import json
import sys
import time

import onnx
import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

args = [a for a in sys.argv[1:] if not a.startswith("--")]
repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 1
if "--repeat" in sys.argv:
    args = [a for a in args if a != str(repeat)]
model_path, rules_path = args[0], args[1]
rules = json.load(open(rules_path))
ops_rules, default = rules.get("ops", {}), rules.get("default", False)


def supported(op):
    r = ops_rules.get(op, default)
    return r if isinstance(r, bool) else r.get("supported", True)


model = onnx.load(model_path, load_external_data=False)
# one distinct python function per op type, so the predicate can see it
funcs = {}


def func_for(op):
    if op not in funcs:
        def f(*xs):
            return xs[0]
        f.__name__ = op
        funcs[op] = f
    return funcs[op]


def build():
    g = torch.fx.Graph()
    env = {}
    for i in model.graph.input:
        env[i.name] = g.placeholder(i.name.replace(".", "_").replace("/", "_") or "x")
    for t in model.graph.initializer:
        env.setdefault(t.name, None)
    for n in model.graph.node:
        args_ = tuple(env[x] for x in n.input if x and env.get(x) is not None)
        node = g.call_function(func_for(n.op_type), args_)
        node.meta["onnx_op"] = n.op_type
        for o in n.output:
            env[o] = node
    g.output(tuple(env[o.name] for o in model.graph.output if env.get(o.name) is not None))
    return torch.fx.GraphModule(torch.nn.Module(), g)


class Support(OperatorSupportBase):
    def is_node_supported(self, submodules, node):
        return node.op == "call_function" and supported(node.meta.get("onnx_op", ""))


best, parts = None, None
for _ in range(repeat):
    gm = build()
    t0 = time.perf_counter()
    partitioner = CapabilityBasedPartitioner(gm, Support(), allows_single_node_partition=True)
    p = partitioner.propose_partitions()
    dt = time.perf_counter() - t0
    best = dt if best is None else min(best, dt)
    parts = len(p)
print(json.dumps({"model": model_path, "nodes": len(model.graph.node), "fx_partitions": parts, "fx_seconds": best}))
