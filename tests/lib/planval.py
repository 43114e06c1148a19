"""An independent validator of seam's plans (`seam partition --json`),
written from the ONNX file alone: it knows nothing of how seam folds,
places or groups, only what a plan claims about the model the user passed.

    problems = planval.validate(onnx.load(path), json.loads(plan_text))

A plan is valid when:
  - ownership: it lists every node of the model's main graph once, with
    the model's index, name and op; a node whose target is `constant` is
    in no subgraph, and every other node is in exactly one subgraph, of
    its own target;
  - constants are honest: a node reported `constant` is one whose outputs
    can be computed before any input arrives (a Constant node; a node
    whose inputs are all initializers or outputs of such nodes; a
    Shape/Size of a value whose shape ONNX's own inference makes static)
    or whose outputs reach no graph output (dead);
  - shape arithmetic is honest: a node the plan says seam computes from
    the inputs' shapes alone (a `dimexpr` list: it became a DimExpr node)
    is a Shape or Size, or reads only initializers, constants and such
    nodes; it reads no value at run time but the graph inputs' shapes;
  - execution order: running the subgraphs in the listed order, each
    subgraph's nodes in their listed order, every node reads only graph
    inputs, initializers, constants, or values a node before it produced
    (outer-scope reads of If/Loop/Scan bodies count as reads);
  - boundaries: each subgraph's `inputs` are exactly the values its nodes
    read that are produced outside it (graph inputs included; initializers
    and constants excluded), and its `outputs` exactly the values its nodes
    produce that a non-constant node of another subgraph reads or that are
    graph outputs, in the model's own names.
"""
import onnx
from onnx import shape_inference


def _body_reads(graph):
    """Names a body graph reads from outside itself (outer scope), nested."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    reads = set()
    for n in graph.node:
        for x in list(n.input) + sorted(_node_body_reads(n)):
            if x and x not in defined:
                reads.add(x)
        defined |= {o for o in n.output if o}
    return reads


def _node_body_reads(node):
    out = set()
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            out |= _body_reads(a.g)
        elif a.type == onnx.AttributeProto.GRAPHS:
            for g in a.graphs:
                out |= _body_reads(g)
    return out


def _shapes(model):
    """Per value name, the dims ONNX's inference gives it (an int where
    static, None where not); {} for a model onnx cannot infer."""
    try:
        inferred = shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # a model onnx cannot infer: no shape is known to be static
        return {}
    g = inferred.graph
    dims = {t.name: list(t.dims) for t in g.initializer}
    for v in list(g.input) + list(g.value_info) + list(g.output):
        t = v.type.tensor_type
        if v.type.HasField("tensor_type") and t.HasField("shape"):
            dims[v.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    return dims


def validate(model, plan):
    """The list of problems of plan against model (empty when valid)."""
    g = model.graph
    nodes = list(g.node)
    problems = []
    p_nodes = plan.get("nodes", [])
    if sorted(n.get("index", -1) for n in p_nodes) != list(range(len(nodes))):
        return [f"the plan lists nodes {sorted(n.get('index') for n in p_nodes)[:10]}..., "
                f"the model has nodes 0..{len(nodes) - 1}"]
    target = {}
    for pn in p_nodes:
        i = pn["index"]
        if pn.get("name") != nodes[i].name or pn.get("op") != nodes[i].op_type:
            problems.append(f"node {i}: the plan says '{pn.get('name')}' ({pn.get('op')}), the model "
                            f"'{nodes[i].name}' ({nodes[i].op_type})")
        target[i] = pn.get("target")

    inits = {t.name for t in g.initializer}
    graph_inputs = [v.name for v in g.input if v.name not in inits]
    graph_outputs = {v.name for v in g.output}
    producer = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    reads = [[x for x in n.input if x] + sorted(_node_body_reads(n)) for n in nodes]

    # constants: computable before any input arrives, or dead
    dims = _shapes(model)
    static = {k for k, d in dims.items() if all(x is not None for x in d)}
    foldable = set()
    for i, n in enumerate(nodes):  # nodes are topologically sorted in a valid ONNX graph
        if n.op_type == "Constant" and not n.domain:
            foldable.add(i)
        elif n.op_type in ("Shape", "Size") and not n.domain and n.input and n.input[0] in static:
            foldable.add(i)
        elif reads[i] and all(x in inits or producer.get(x) in foldable for x in reads[i]):
            foldable.add(i)
    # shape arithmetic: Shape/Size of anything, and what reads only it and constants
    shaped = set(foldable)
    for i, n in enumerate(nodes):
        if not n.domain and (n.op_type in ("Shape", "Size") or
                             (reads[i] and all(x in inits or producer.get(x) in shaped for x in reads[i]))):
            shaped.add(i)
    live, stack = set(), [producer[o] for o in graph_outputs if o in producer]
    while stack:
        i = stack.pop()
        if i in live:
            continue
        live.add(i)
        stack.extend(producer[x] for x in reads[i] if x in producer)
    consts = {i for i, t in target.items() if t == "constant"}
    dimexpr = {pn["index"] for pn in p_nodes if "dimexpr" in pn}
    for i in sorted(dimexpr - shaped):
        problems.append(f"node {i} '{nodes[i].name}' ({nodes[i].op_type}) is reported computed from the inputs' "
                        f"shapes, but it reads {[x for x in reads[i] if producer.get(x) not in shaped][:3]}")
    for i in dimexpr:  # (it reads the graph inputs' shapes only)
        reads[i] = [x for x in reads[i] if x in graph_inputs]
    # a number among a shape's elements that ONNX's inference cannot place
    # (it gives up past a Reshape to computed dims) but seam's expressions
    # can: a constant read from shapes alone passes here, and the runs at
    # several shapes (check_symdim.py, check_hetero.py) check its value
    symbolic = any(d is None for v in graph_inputs for d in dims.get(v, [None]))
    for i in sorted(consts - foldable - (shaped if symbolic else set()) - (set(range(len(nodes))) - live)):
        problems.append(f"node {i} '{nodes[i].name}' ({nodes[i].op_type}) is reported constant, but it reads "
                        f"{[x for x in reads[i] if x not in inits and producer.get(x) not in foldable][:3]}, "
                        f"known only at run time, and its outputs are used")

    # ownership and order
    pos, owner = {}, {}
    for k, s in enumerate(plan.get("subgraphs", [])):
        for j, i in enumerate(s.get("nodes", [])):
            if i in owner:
                problems.append(f"node {i} is in subgraphs {owner[i]} and {s.get('id')}")
            owner[i], pos[i] = s.get("id"), (k, j)
            if target.get(i) != s.get("target"):
                problems.append(f"node {i} '{nodes[i].name}' has target {target.get(i)}, its subgraph "
                                f"{s.get('id')} {s.get('target')}")
    for i in range(len(nodes)):
        if i in consts and i in owner:
            problems.append(f"constant node {i} '{nodes[i].name}' is in subgraph {owner[i]}")
        elif i not in consts and i not in owner:
            problems.append(f"node {i} '{nodes[i].name}' ({nodes[i].op_type}, {target.get(i)}) is in no subgraph")

    def runtime_value(x):
        return x not in inits and not (x in producer and producer[x] in consts)

    for i in owner:
        for x in reads[i]:
            if not runtime_value(x) or x not in producer:
                continue
            p = producer[x]
            if p in pos and pos[p] >= pos[i]:
                problems.append(f"node {i} '{nodes[i].name}' in subgraph {owner[i]} reads '{x}', which node {p} "
                                f"'{nodes[p].name}' in subgraph {owner[p]} produces only later")
        for x in reads[i]:
            if runtime_value(x) and x not in producer and x not in graph_inputs:
                problems.append(f"node {i} '{nodes[i].name}' reads '{x}', which nothing produces")

    # boundaries
    for s in plan.get("subgraphs", []):
        mine = set(s.get("nodes", []))
        ins, outs = set(), set()
        for i in mine:
            for x in reads[i]:
                if runtime_value(x) and producer.get(x) not in mine:
                    ins.add(x)
            for o in nodes[i].output:
                if not o:
                    continue
                if o in graph_outputs or any(o in reads[j] for j in owner if j not in mine):
                    outs.add(o)
        if mine & dimexpr:  # a DimExpr reads the graph inputs its symbols come from
            ins |= set(s.get("inputs", [])) & set(graph_inputs)
        if set(s.get("inputs", [])) != ins or len(s.get("inputs", [])) != len(ins):
            problems.append(f"subgraph {s.get('id')} inputs: the plan says {sorted(s.get('inputs', []))[:6]}, "
                            f"the model {sorted(ins)[:6]} (missing {sorted(ins - set(s.get('inputs', [])))[:4]}, "
                            f"extra {sorted(set(s.get('inputs', [])) - ins)[:4]})")
        if set(s.get("outputs", [])) != outs or len(s.get("outputs", [])) != len(outs):
            problems.append(f"subgraph {s.get('id')} outputs: the plan says {sorted(s.get('outputs', []))[:6]}, "
                            f"the model {sorted(outs)[:6]} (missing {sorted(outs - set(s.get('outputs', [])))[:4]}, "
                            f"extra {sorted(set(s.get('outputs', [])) - outs)[:4]})")
    return problems
