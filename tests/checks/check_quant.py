"""Quantized models on every path, against ONNX Runtime (issue 27).

usage: /usr/bin/python3 check_quant.py SEAM WORKDIR [-k PATTERN]

ONNX Runtime is bench/ort's onnxruntime-node (`npm install --ignore-scripts`
there; scripts/setup.sh does it), or the folder $SEAM_ORT_DIR names;
without it every model case fails saying so.

1. tests/models/gen_quant.py writes the models into WORKDIR/models (QDQ
   resnet18, mobilenet_v2, one resnet BasicBlock with a downsample to a
   5x5 output, a conv chain whose Relus stay, an MLP; a dynamically
   quantized transformer encoder; a QOperator conv net), each with
   NAME.json holding output_scale, one quantum of its output.
2. Case NAME: ONNX Runtime runs the model (CPU provider, all graph
   optimizations, 2 threads: its int8 kernels); its output must not be
   degenerate (std > 0, under half of it at an end of the uint8 range).
   Then seam on the CPU, on `--target dnnl`, on dnnl with
   `--target-option fusion=off`, and `seam partition --target dnnl -o`
   then `seam run` of the saved file: each output must be within one
   quantum of ONNX Runtime's (plus 1e-6 of its largest magnitude); each
   path prints its largest difference in quanta, how many elements differ
   by half a quantum or more, and its wall time.
   QDQ models, unit by unit: the model cut at every QuantizeLinear output
   (each reader of a Q output reads a graph input fed with ONNX Runtime's
   value instead; in pieces of at most 60 inputs, as seam run takes 64),
   so that each quantized tensor is computed from the same quantized
   inputs on both sides: every one must be within 1 step of ONNX
   Runtime's (a rounding tie may go either way; deep nets with random
   weights amplify such single steps into several quanta at the output,
   which this tells apart from a wrong kernel). Where an end-to-end path
   fails, the message names the first Q output that differs in a copy with
   every Q output exposed, or, when that copy agrees (a fault in values
   kept inside a subgraph), the first Q whose prefix model (cut after it,
   only it an output) differs by over 1 step, found by bisection.
3. Case NAME plan (QDQ models): the unit check, independent of seam's code.
   From the ONNX file alone, a unit is a node (not Q/DQ) whose float
   inputs all come from DequantizeLinear nodes and whose output (or the
   output of the one Relu/Clip it alone feeds) goes only to
   QuantizeLinear nodes: the unit is those DQs, the node, the Relu and
   the Qs. For `seam partition MODEL --target dnnl --json`, with placement
   cost and capability, and with `--pin Q=cpu` for the Q of a unit the
   plan keeps as nodes and for one of a unit it rewrote (a node of the
   user's file, which seam must accept), every unit must be whole:
   - its node must be in the plan (by name);
   - if the plan lists that name with another op (the rewrite into
     QLinearConv/QLinearMatMul), the unit is absorbed: members missing
     from the plan are taken as absorbed into it (or must be listed in the
     node's `absorbed` list, when the plan has one); members still in the
     plan (a DQ another consumer also reads) must be a DQ read outside the
     unit too, or sit in the node's subgraph;
   - otherwise every member must be in the plan, in the node's subgraph
     (a DQ of constants may be folded: target "constant"), except a DQ
     that other units also read, which may be duplicated (a plan node of
     the same op whose name starts with the DQ's, in the node's subgraph).
   A plan where no unit was rewritten and none placed off the CPU says so
   and the case is skipped (ok), not failed. Two faults planted in a copy
   of the cost plan (a member moved to a subgraph of its own, a unit's
   node dropped) must be found.
4. Case bad NAME: a QuantizeLinear, DequantizeLinear, QLinearConv,
   QLinearMatMul, or a QDQ Conv unit, with a scale of 0, NaN or below 0, a
   zero point of the wrong type (int32 300 where uint8/int8 is required),
   a per-channel axis out of range, scale and zero point lengths not
   matching the axis: `seam run` on the CPU and on `--target dnnl` must
   exit 1 with a message naming the node. Cases named ok_* are valid
   (uint8 zero point 255, int8 -128) and must run; info_* cases are only
   reported (an int32 DequantizeLinear with a zero point of 7: ONNX says
   it is "supposed to be 0", ONNX Runtime applies it).

The cases: the model names (qdq_resnet18, ...), "NAME plan", and
"bad CASE" / "ok_CASE" / "info_CASE".
"""
import json
import re
import os
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import quantcase  # noqa: E402
import seamtest  # noqa: E402

args, run, work, check = seamtest.checker_setup(__doc__, "quant_models", timeout=600)
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
GEN = os.path.join(ROOT, "tests", "models", "gen_quant.py")
MODELS = os.path.join(work, "models")
PATHS = ["cpu", "dnnl", "dnnl fusion=off", "saved"]
summary = {}  # model -> {path: (quanta, seconds)}


ort_problem, ort_run = seamtest.ort_problem, seamtest.ort_run
qc = quantcase.Cases(run, work, check)
seam_run, last, write_case, run_case, f32 = qc.seam_run, qc.last, qc.write_case, qc.run_case, quantcase.f32


# (max difference in quanta, elements off by half a quantum, ok); a NaN,
# an infinity or a shape ONNX Runtime's output lacks is never ok
quanta = seamtest.quanta


# ---- the quantized tensors, end to end and unit by unit ----------------------------------

class Tensors:
    """Every QuantizeLinear output of a QDQ model, from ONNX Runtime and
    from seam: end to end (the model with those outputs exposed), and unit
    by unit (the model cut at every Q output: each DequantizeLinear reads a
    graph input fed with ONNX Runtime's value instead, so every Q output is
    computed from the same quantized inputs on both sides)."""

    def __init__(self, name, model, feeds):
        self.name, self.feeds, self.error = name, feeds, None
        m = onnx.load(model)
        self.qs = [n.output[0] for n in m.graph.node if n.op_type == "QuantizeLinear"]
        have = {o.name for o in m.graph.output}
        for q in self.qs:
            if q not in have:
                m.graph.output.append(helper.make_tensor_value_info(q, T.UINT8, None))
        self.full = os.path.join(work, f"{name}.debug.onnx")
        onnx.save(m, self.full)
        self.ort_full = os.path.join(work, f"{name}.debug.ort")
        r, _ = ort_run(self.full, feeds, self.ort_full)
        if r.returncode:
            self.error = f"ONNX Runtime fails on the copy with every Q output exposed: {last(r.stderr)}"
            return
        # the cut model: consumers of q read q__in, a graph input
        shapes = {q: np.load(seamtest.output_file(self.ort_full, q)).shape for q in self.qs}
        for n in m.graph.node:
            for i, x in enumerate(n.input):
                if x in shapes:
                    n.input[i] = x + "__in"
        for q in self.qs:
            m.graph.input.append(helper.make_tensor_value_info(q + "__in", T.UINT8, list(shapes[q])))
        self.cut = os.path.join(work, f"{name}.cut.onnx")
        onnx.save(m, self.cut)
        self.cut_feeds = dict(feeds)
        for q in self.qs:
            f = os.path.join(work, f"{name}.cut.{len(self.cut_feeds)}.npy")
            np.save(f, np.load(seamtest.output_file(self.ort_full, q)))
            self.cut_feeds[q + "__in"] = f
        self.ort_cut = os.path.join(work, f"{name}.cut.ort")
        r, _ = ort_run(self.cut, self.cut_feeds, self.ort_cut)
        if r.returncode:
            self.error = f"ONNX Runtime fails on the cut model: {last(r.stderr)}"
        self.chunks = self.split(m)

    def split(self, m, limit=60):
        """The cut model in pieces of at most limit graph inputs (seam run
        takes 64 --input options): [(path, feeds, [q])], each piece the
        nodes its Q outputs need."""
        producer = {o: n for n in m.graph.node for o in n.output}
        inits = {i.name for i in m.graph.initializer}
        ins = {i.name: i for i in m.graph.input}

        def needs(outputs):
            nodes, inputs, todo, seen = set(), set(), list(outputs), set()
            while todo:
                t = todo.pop()
                if t in seen or not t:
                    continue
                seen.add(t)
                if t in ins:
                    inputs.add(t)
                elif t in producer and id(producer[t]) not in nodes:
                    nodes.add(id(producer[t]))
                    todo.extend(producer[t].input)
            return nodes, inputs
        groups, cur = [], []
        for q in self.qs:
            if cur and len(needs(cur + [q])[1]) > limit:
                groups.append(cur)
                cur = []
            cur.append(q)
        groups.append(cur)
        out = []
        for k, g in enumerate(groups):
            nodes, inputs = needs(g)
            used = {x for n in m.graph.node if id(n) in nodes for x in n.input}
            piece = helper.make_graph([n for n in m.graph.node if id(n) in nodes], f"piece{k}",
                                      [ins[i] for i in ins if i in inputs],
                                      [helper.make_tensor_value_info(q, T.UINT8, None) for q in g],
                                      [i for i in m.graph.initializer if i.name in used and i.name in inits])
            pm = helper.make_model(piece, opset_imports=list(m.opset_import))
            pm.ir_version = m.ir_version
            path = os.path.join(work, f"{self.name}.cut{k}.onnx")
            onnx.save(pm, path)
            out.append((path, {i: self.cut_feeds[i] for i in ins if i in inputs}, g))
        return out

    def compare(self, seam_dir, ort_dir, qs=None):
        """[(q, elements that differ, largest step)] for every Q output
        (or those in qs) seam wrote to seam_dir; another shape is (q, -1,
        inf), over any step limit."""
        return [(q, *seamtest.steps(np.load(seamtest.output_file(seam_dir, q)),
                                    np.load(seamtest.output_file(ort_dir, q)))) for q in qs or self.qs]

    def first_difference(self, extra):
        """Text: the first Q output (in graph order) where seam end to end
        differs from ONNX Runtime."""
        d = os.path.join(work, f"{self.name}.debug.seam")
        r, _ = seam_run(self.full, self.feeds, d, extra)
        if r.returncode:
            return f"(seam fails on the copy with every Q output exposed: {last(r.stderr)})"
        for q, n, step in self.compare(d, self.ort_full):
            if n:
                return (f"first difference at {q}: shape differs" if n < 0 else
                        f"first difference at {q}: {n} elements, up to {step} steps")
        return ("with every Q output also a graph output every quantized tensor equals ONNX Runtime's: "
                + self.prefix_search(extra))

    def prefix(self, q):
        """The model cut after QuantizeLinear output q (its graph output)."""
        m = onnx.load(self.full)
        producer = {o: n for n in m.graph.node for o in n.output}
        keep, todo = set(), [q]
        while todo:
            t = todo.pop()
            if t in producer and id(producer[t]) not in keep:
                keep.add(id(producer[t]))
                todo.extend(producer[t].input)
        nodes = [n for n in m.graph.node if id(n) in keep]
        used = {x for n in nodes for x in n.input}
        g = helper.make_graph(nodes, "prefix", list(m.graph.input), [helper.make_tensor_value_info(q, T.UINT8, None)],
                              [i for i in m.graph.initializer if i.name in used])
        pm = helper.make_model(g, opset_imports=list(m.opset_import))
        pm.ir_version = m.ir_version
        path = os.path.join(work, f"{self.name}.prefix.onnx")
        onnx.save(pm, path)
        return path

    def prefix_differs(self, q, extra):
        """Largest step between seam (with extra) and ONNX Runtime on the
        model cut after q, where only q is a graph output."""
        path = self.prefix(q)
        so, oo = os.path.join(work, f"{self.name}.prefix.seam"), os.path.join(work, f"{self.name}.prefix.ort")
        r, _ = seam_run(path, self.feeds, so, extra)
        r2, _ = ort_run(path, self.feeds, oo)
        if r.returncode or r2.returncode:
            return None
        a, b = (np.load(seamtest.output_file(d, q)) for d in (so, oo))
        return seamtest.steps(a, b)[1]

    def prefix_search(self, extra):
        """Bisects the Q outputs (in graph order) for the first whose
        prefix model (only that Q an output) differs by over 1 step."""
        lo, hi, found = 0, len(self.qs) - 1, None
        top = self.prefix_differs(self.qs[hi], extra)
        if top is None or top <= 1:
            return f"the prefix model ending at the last Q differs by {top} steps (the difference is after it)"
        found = (self.qs[hi], top)
        while lo < hi:
            mid = (lo + hi) // 2
            d = self.prefix_differs(self.qs[mid], extra)
            if d is not None and d > 1:
                hi, found = mid, (self.qs[mid], d)
            else:
                lo = mid + 1
        return (f"bisecting prefix models (only their last Q an output), the first over 1 step ends at "
                f"{found[0]} ({found[1]} steps)")

    def unit_by_unit(self, label, extra):
        """Checks every Q output of the cut model within 1 step of ONNX Runtime's."""
        res = []
        for k, (path, feeds, qs) in enumerate(self.chunks):
            d = os.path.join(work, f"{self.name}.cut{k}.{label.replace(' ', '_').replace('=', '_')}")
            r, _ = seam_run(path, feeds, d, extra)
            if r.returncode:
                check.fail(f"{self.name} ({label}) unit by unit: seam run of {os.path.basename(path)} failed: "
                           f"{last(r.stderr)}")
                return None
            res += self.compare(d, self.ort_cut, qs)
        worst = max(res, key=lambda t: t[2])
        n_diff = sum(1 for _, n, _ in res if n)
        check.expect(worst[2] <= 1, f"{self.name} ({label}) unit by unit: every one of {len(res)} quantized tensors "
                     f"within 1 step of ONNX Runtime's from the same inputs ({n_diff} differ; largest "
                     f"{worst[2]} steps, at {worst[0]})", "over 1 step")
        return worst[2]


# ---- the unit check -------------------------------------------------------------

def units_of(model):
    """[(node name, {member names}, {member name: op})] from the ONNX file."""
    g = model.graph
    producer = {o: n for n in g.node for o in n.output}
    consumers = {}
    for n in g.node:
        for x in n.input:
            consumers.setdefault(x, []).append(n)
    inits = {i.name for i in g.initializer}
    out = []
    for n in g.node:
        if n.op_type in ("QuantizeLinear", "DequantizeLinear") or not n.output:
            continue
        ins = [x for x in n.input if x and x not in inits]
        if n.op_type in ("Reshape",):
            ins = ins[:1]
        if not ins or not all(x in producer and producer[x].op_type == "DequantizeLinear" for x in ins):
            continue
        tail = n.output[0]
        members = [n]
        cs = consumers.get(tail, [])
        if len(cs) == 1 and cs[0].op_type in ("Relu", "Clip"):
            members.append(cs[0])
            tail = cs[0].output[0]
            cs = consumers.get(tail, [])
        if not cs or not all(c.op_type == "QuantizeLinear" for c in cs) or tail in {o.name for o in g.output}:
            continue
        members += [producer[x] for x in ins] + cs
        out.append((n.name, members))
    return out


def unit_problems(m, plan):
    """(problems, stats): every unit of the ONNX model m checked against
    the plan (a parsed --json plan)."""
    file_op = {n.name: n.op_type for n in m.graph.node}
    readers_in_file = {}
    for n in m.graph.node:
        for x in n.input:
            readers_in_file.setdefault(x, []).append(n.name)
    by_name = {n["name"]: n for n in plan["nodes"]}
    sub_of = {i: s["id"] for s in plan["subgraphs"] for i in s["nodes"]}
    target_of_sub = {s["id"]: s["target"] for s in plan["subgraphs"]}

    def where(n):
        return sub_of.get(n["index"], "constant" if n.get("target") == "constant" else None)

    def read_elsewhere(dq, uname):
        """Whether DQ node dq's output is read by a node other than uname."""
        return any(r != uname for r in readers_in_file.get(dq.output[0], []))
    units = units_of(m)
    rewritten = {u for u, _ in units if u in by_name and by_name[u]["op"] != file_op[u]}
    offloaded = [u for u, _ in units if u in by_name and target_of_sub.get(where(by_name[u])) not in (None, "cpu")]
    bad, inferred = [], 0
    for uname, members in units:
        node = by_name.get(uname)
        if node is None:
            bad.append(f"unit {uname}: its node is not in the plan")
            continue
        home, absorbed = where(node), node.get("absorbed")
        split = []
        for mem in members[1:]:
            p = by_name.get(mem.name)
            shared_dq = mem.op_type == "DequantizeLinear" and read_elsewhere(mem, uname)
            if p is None:
                if uname not in rewritten:
                    split.append(f"{mem.name} ({mem.op_type}) is not in the plan")
                elif absorbed is not None and mem.name not in absorbed:
                    split.append(f"{mem.name} ({mem.op_type}) is neither in the plan nor in the node's absorbed list")
                elif absorbed is None:
                    inferred += 1
                continue
            w = where(p)
            if w == home or (w == "constant" and mem.op_type == "DequantizeLinear"):
                continue
            if uname in rewritten and shared_dq:
                continue  # kept for its other readers; the rewritten node reads the quantized value
            if shared_dq and any(q["name"] != mem.name and q["name"].startswith(mem.name) and
                                 q["op"] == "DequantizeLinear" and where(q) == home for q in plan["nodes"]):
                continue  # duplicated into this unit's subgraph
            split.append(f"{mem.name} ({mem.op_type}) in subgraph {w} ({target_of_sub.get(w, w)})")
        if split:
            bad.append(f"unit {uname} ({node['op']}, subgraph {home} {target_of_sub.get(home, '')}) is split: "
                       + "; ".join(split))
    stats = {"units": len(units), "rewritten": len(rewritten), "inferred": inferred, "offloaded": len(offloaded)}
    return bad, stats


def check_plan(name, model_path, placement, extra=()):
    label = f"{name} plan ({placement}{''.join(' ' + e for e in extra)}" + \
        (", ONEDNN_MAX_CPU_ISA=AVX2)" if os.environ.get("ONEDNN_MAX_CPU_ISA") else ")")
    r = run("partition", model_path, "--target", "dnnl", "--json", "--placement", placement, *extra)
    if r.returncode:
        check.fail(f"{label}: seam partition failed: {last(r.stderr)}")
        return None
    plan = json.loads(r.stdout)
    bad, st = unit_problems(onnx.load(model_path), plan)
    what = (f"{st['units']} units in the file, {st['rewritten']} rewritten ({st['inferred']} members taken as "
            f"absorbed because the plan no longer lists them), {st['offloaded']} on dnnl")
    if not st["rewritten"] and not st["offloaded"]:
        check.ok(f"{label}: skipped: no unit rewritten or placed off the CPU ({what})")
        return plan
    check.expect(not bad, f"{label}: every unit whole: {what}", "; ".join(bad[:6]) +
                 (f"; and {len(bad) - 6} more" if len(bad) > 6 else ""))
    return plan


def plan_cases(name, model_path):
    """The unit check on the cost and capability plans, on plans with the
    Q of a unit pinned to the CPU (one of a unit the plan keeps as nodes,
    one of a unit it rewrote: the pin names a node of the file, which
    seam must accept), and on the cost plan with faults planted (the check
    must find them)."""
    plan = check_plan(name, model_path, "cost")
    check_plan(name, model_path, "capability")
    if seamtest.cpu_has_vnni():
        # as on a CPU without VNNI (no_vnni_case): the convolutions on the
        # CPU, the Add and pool units on dnnl between them, where a DQ of
        # a unit was once left behind with the Q that made its input
        os.environ["ONEDNN_MAX_CPU_ISA"] = "AVX2"
        try:
            check_plan(name, model_path, "capability")
        finally:
            del os.environ["ONEDNN_MAX_CPU_ISA"]
    m = onnx.load(model_path)
    units = units_of(m)
    if not units or plan is None:
        return
    # pins: the Q of a unit in the middle that seam keeps as nodes, and of
    # one it rewrote (the user names nodes of the file)
    by_name = {n["name"]: n for n in plan["nodes"]}
    file_op = {n.name: n.op_type for n in m.graph.node}
    for rewritten in (False, True):
        some = [(u, ms) for u, ms in units if u in by_name and (by_name[u]["op"] != file_op[u]) == rewritten]
        if some:
            members = some[len(some) // 2][1]
            q = next(mem.name for mem in members if mem.op_type == "QuantizeLinear")
            # (a unit seam keeps as nodes, an Add, Mul or pool, follows
            # the pin whole; under capability its op is on dnnl first)
            for placement in ("cost", "capability"):
                check_plan(name, model_path, placement, ("--pin", f"{q}=cpu"))
    # planted: a kept member moved to another subgraph, and a unit's node dropped
    kept = [(u, mem) for u, ms in units if u in by_name for mem in ms[1:] if mem.name in by_name]
    planted = []
    if kept:
        u, mem = kept[0]
        p = json.loads(json.dumps(plan))
        idx = next(n["index"] for n in p["nodes"] if n["name"] == mem.name)
        for sg in p["subgraphs"]:
            sg["nodes"] = [i for i in sg["nodes"] if i != idx]
        p["subgraphs"].append({"id": 10 ** 6, "target": "cpu", "nodes": [idx]})
        planted.append((f"{mem.name} of {u} moved to a subgraph of its own", p))
    p = json.loads(json.dumps(plan))
    p["nodes"] = [n for n in p["nodes"] if n["name"] != units[0][0]]
    planted.append((f"{units[0][0]} dropped from the plan", p))
    for what, p in planted:
        bad, _ = unit_problems(m, p)
        check.expect(bad, f"{name} plan: the check finds a planted fault ({what})", "not found")


# ---- the models -------------------------------------------------------------------

def model_case(name, info):
    model = os.path.join(MODELS, info["model"])
    feeds = {info["input_name"]: os.path.join(MODELS, info["input"])}
    scale = info["output_scale"]
    why = ort_problem()
    if why:
        check.fail(f"{name}: {why}")
        return
    ref_dir = os.path.join(work, f"{name}.ort")
    r, t_ort = ort_run(model, feeds, ref_dir)
    if r.returncode:
        check.fail(f"{name}: ONNX Runtime fails: {last(r.stderr)}")
        return
    ref = seamtest.load_outputs(model, ref_dir)[0]
    zp = info.get("output_zero_point", 0)
    q = np.clip(np.round(ref / scale) + zp, 0, 255)
    sat = float(np.mean((q == 255) | ((q == 0) & (zp > 0))))  # at an end of the range (0 is a value when zp is 0)
    check.expect(float(ref.std()) > 0 and sat < 0.5, f"{name}: ONNX Runtime's output is not degenerate "
                 f"(std {ref.std():.3g} = {ref.std() / scale:.0f} quanta, {100 * sat:.0f}% saturated)")
    res = summary.setdefault(name, {"ort": (0.0, t_ort, None)})
    saved = os.path.join(work, f"{name}.saved.onnx")
    tensors = Tensors(name, model, feeds) if info["kind"] == "qdq" else None
    if tensors and tensors.error:
        check.fail(f"{name}: {tensors.error}")
        tensors = None
    for label in PATHS:
        d = os.path.join(work, f"{name}.{label.replace(' ', '_').replace('=', '_')}")
        if label == "saved":
            p = run("partition", model, "--target", "dnnl", "-o", saved)
            if p.returncode:
                check.fail(f"{name} ({label}): seam partition -o failed: {last(p.stderr)}")
                continue
            r, t = seam_run(saved, feeds, d)
            extra = ["--target", "dnnl"]
        else:
            extra = [] if label == "cpu" else ["--target", "dnnl"] + (
                ["--target-option", "fusion=off"] if "fusion=off" in label else [])
            r, t = seam_run(model, feeds, d, extra)
        if r.returncode:
            check.fail(f"{name} ({label}): seam run failed: {last(r.stderr)}")
            res[label] = (None, t, None)
            continue
        got = seamtest.load_outputs(model, d)[0]
        if got.shape != ref.shape:
            check.fail(f"{name} ({label}): output shape {got.shape}, ONNX Runtime's {ref.shape}")
            res[label] = (None, t, None)
            continue
        qd, n_off, ok = quanta(got, ref, scale)
        detail = f"max diff {qd:.2f} quanta, {n_off} of {ref.size} elements off by >= 0.5 quantum, {t:.2f} s"
        if not ok and tensors and label != "saved":
            detail += "; " + tensors.first_difference(extra)
        check.expect(ok, f"{name} ({label}): within 1 quantum of ONNX Runtime ({detail})", "over 1 quantum")
        local = tensors.unit_by_unit(label, extra) if tensors and label != "saved" else None
        res[label] = (qd, t, local)


# ---- bad input ----------------------------------------------------------------------

def bad_models():
    """{case: (nodes, inputs {name: array}, outputs [(name, type)], inits, node the error must name)}"""
    rng = np.random.RandomState(3)
    x = rng.randn(1, 4, 6, 6).astype(np.float32)
    xq = rng.randint(0, 255, (1, 4, 6, 6)).astype(np.uint8)
    wq = rng.randint(-127, 128, (3, 4, 3, 3)).astype(np.int8)
    cases = {}

    def q_case(name, scale, zp, axis=None, data=x):
        attrs = {"axis": axis} if axis is not None else {}
        cases[name] = ([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="the_q", **attrs)],
                       {"x": data}, [("y", T.UINT8 if zp.dtype == np.uint8 else T.INT8 if zp.dtype == np.int8 else T.INT32)],
                       {"s": scale, "z": zp}, "the_q")

    def dq_case(name, scale, zp, axis=None, data=xq):
        attrs = {"axis": axis} if axis is not None else {}
        cases[name] = ([helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], name="the_dq", **attrs)],
                       {"x": data}, [("y", T.FLOAT)], {"s": scale, "z": zp}, "the_dq")

    for label, v in (("zero", 0.0), ("nan", np.nan), ("negative", -0.5), ("inf", np.inf)):
        q_case(f"q_scale_{label}", f32(v), np.array(128, np.uint8))
        dq_case(f"dq_scale_{label}", f32(v), np.array(128, np.uint8))
        dq_case(f"dq_per_channel_scale_{label}", f32(0.1, v, 0.1, 0.1), np.zeros(4, np.uint8), axis=1)
    q_case("q_zero_point_int32_300", f32(0.1), np.array(300, np.int32))
    dq_case("dq_zero_point_int32_300", f32(0.1), np.array(300, np.int32))
    dq_case("dq_zero_point_type_mismatch", f32(0.1), np.array(3, np.int8))  # x uint8, zero point int8
    q_case("q_axis_out_of_range", f32(0.1, 0.1, 0.1, 0.1), np.zeros(4, np.uint8), axis=4)
    q_case("q_axis_negative_out_of_range", f32(0.1, 0.1, 0.1, 0.1), np.zeros(4, np.uint8), axis=-5)
    dq_case("dq_axis_out_of_range", f32(0.1, 0.1, 0.1, 0.1), np.zeros(4, np.uint8), axis=7)
    q_case("q_scale_length_mismatch", f32(0.1, 0.1, 0.1), np.zeros(3, np.uint8), axis=1)
    dq_case("dq_scale_length_mismatch", f32(0.1, 0.1, 0.1), np.zeros(3, np.uint8), axis=1)
    dq_case("dq_zero_point_length_mismatch", f32(0.1, 0.1, 0.1, 0.1), np.zeros(3, np.uint8), axis=1)
    # ONNX: "in the case of dequantizing int32, there's no zero point (zero
    # point is supposed to be 0)"; ONNX Runtime applies it: reported, not checked
    dq_case("info_dq_int32_zero_point_not_0", f32(0.1), np.array(7, np.int32),
            data=rng.randint(-1000, 1000, (1, 4, 6, 6)).astype(np.int32))
    # valid ones: the extremes of each type
    q_case("ok_q_uint8_zero_point_255", f32(0.1), np.array(255, np.uint8))
    q_case("ok_q_int8_zero_point_-128", f32(0.1), np.array(-128, np.int8))
    dq_case("ok_dq_per_channel", f32(0.1, 0.2, 0.3, 0.4), np.array([0, 255, 7, 128], np.uint8), axis=1)

    def qconv_case(name, **over):
        p = {"xs": f32(0.05), "xz": np.array(128, np.uint8), "w": wq, "ws": f32(0.01, 0.02, 0.03),
             "wz": np.zeros(3, np.int8), "ys": f32(0.2), "yz": np.array(100, np.uint8)}
        p.update(over)
        cases[name] = ([helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"],
                                         name="the_qconv", pads=[1, 1, 1, 1])],
                       {"x": xq}, [("y", T.UINT8)], p, "the_qconv")
    for label, v in (("zero", 0.0), ("nan", np.nan), ("negative", -1.0)):
        qconv_case(f"qlinearconv_x_scale_{label}", xs=f32(v))
        qconv_case(f"qlinearconv_w_scale_{label}", ws=f32(0.01, v, 0.03))
        qconv_case(f"qlinearconv_y_scale_{label}", ys=f32(v))
    qconv_case("qlinearconv_w_scale_length_mismatch", ws=f32(0.01, 0.02))
    qconv_case("qlinearconv_w_zero_point_length_mismatch", wz=np.zeros(2, np.int8))
    qconv_case("qlinearconv_x_zero_point_int32_300", xz=np.array(300, np.int32))
    qconv_case("qlinearconv_w_zero_point_int32_300", wz=np.full(3, 300, np.int32))
    qconv_case("ok_qlinearconv")

    def qmatmul_case(name, **over):
        p = {"as": f32(0.05), "az": np.array(128, np.uint8), "b": rng.randint(-127, 128, (6, 5)).astype(np.int8),
             "bs": f32(0.02), "bz": np.array(0, np.int8), "ys": f32(0.3), "yz": np.array(128, np.uint8)}
        p.update(over)
        cases[name] = ([helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"],
                                         name="the_qmatmul")],
                       {"a": rng.randint(0, 255, (4, 6)).astype(np.uint8)}, [("y", T.UINT8)], p, "the_qmatmul")
    qmatmul_case("qlinearmatmul_a_scale_zero", **{"as": f32(0.0)})
    qmatmul_case("qlinearmatmul_y_scale_nan", ys=f32(np.nan))
    qmatmul_case("qlinearmatmul_b_scale_length_mismatch", bs=f32(0.1, 0.1, 0.1))
    qmatmul_case("ok_qlinearmatmul")

    def unit_case(name, **over):
        """Q -> DQ -> Conv(DQ(w) per channel, DQ(bias)) -> Q -> DQ: the unit dnnl rewrites."""
        p = {"xs": f32(0.05), "xz": np.array(128, np.uint8), "wq": wq, "ws": f32(0.01, 0.02, 0.03),
             "wz": np.zeros(3, np.int8), "bq": np.array([10, -20, 30], np.int32), "bs": f32(0.0005, 0.001, 0.0015),
             "bz": np.zeros(3, np.int32), "ys": f32(0.2), "yz": np.array(100, np.uint8)}
        waxis = over.pop("waxis", 0)
        p.update(over)
        nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="unit_q_in"),
                 helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="unit_dq_in"),
                 helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], name="unit_dq_w", axis=waxis),
                 helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["bd"], name="unit_dq_b", axis=0),
                 helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], name="unit_conv", pads=[1, 1, 1, 1]),
                 helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["cq"], name="unit_q_out"),
                 helper.make_node("DequantizeLinear", ["cq", "ys", "yz"], ["y"], name="unit_dq_out")]
        return nodes, p
    for label, v in (("zero", 0.0), ("nan", np.nan), ("negative", -1.0)):
        for which, node, key, val in (("input", "unit_q_in", "xs", f32(v)),
                                      ("weight", "unit_dq_w", "ws", f32(0.01, v, 0.03)),
                                      ("output", "unit_q_out", "ys", f32(v))):
            nodes, p = unit_case("", **{key: val})
            cases[f"unit_{which}_scale_{label}"] = (nodes, {"x": x}, [("y", T.FLOAT)], p, node)
    for name, node, over in (("unit_weight_axis_out_of_range", "unit_dq_w", {"waxis": 4}),
                             ("unit_weight_scale_length_mismatch", "unit_dq_w", {"ws": f32(0.01, 0.02)}),
                             ("unit_weight_zero_point_int32_300", "unit_dq_w", {"wz": np.full(3, 300, np.int32)}),
                             ("unit_input_zero_point_int32_300", "unit_q_in", {"xz": np.array(300, np.int32)}),
                             ("ok_unit", None, {})):
        nodes, p = unit_case("", **over)
        cases[name] = (nodes, {"x": x}, [("y", T.FLOAT)], p, node)
    return cases




# the paths the fusion cases run: the CPU's nodes, dnnl, dnnl with fusion off
def bad_case(name, spec):
    nodes, feeds, outs, inits, node = spec
    path, files = write_case(f"bad_{name}", nodes, feeds, inits, outs)
    results = []
    for label, extra in (("cpu", []), ("dnnl", ["--target", "dnnl", "--placement", "capability"])):
        r, _ = seam_run(path, files, os.path.join(work, f"bad_{name}.{label}"), extra)
        msg = (r.stderr.strip().splitlines() or [""])[-1][:220]
        if name.startswith("info_"):
            ok = True
            check.ok(f"{name} ({label}): not checked: " + ("exit 0 (accepted)" if r.returncode == 0 else
                                                           f"exit {r.returncode}: {msg}"))
        elif name.startswith("ok_"):
            ok = r.returncode == 0
            check.expect(ok, f"{name} ({label}): runs", f"exit {r.returncode}: {msg}")
        else:
            ok = r.returncode == 1 and node in r.stderr and "internal" not in r.stderr.lower()
            got = "exit 0 (accepted)" if r.returncode == 0 else f"exit {r.returncode}: {msg}"
            check.expect(ok, f"bad {name} ({label}): exit 1 naming '{node}'", got)
        results.append(ok)
    return results


# ---- a rules target that takes int8 only -------------------------------------------

INT8_OPS = {"QLinearConv", "QLinearMatMul", "MaxPool", "Reshape", "Flatten"}


def int8_target_case(name, model_path, feeds):
    """tests/targets/int8_npu.json (docs/rules.md): the QDQ units go to the
    NPU whole, nothing in float does (every node placed there is one of
    the target's int8 ops and reads an 8-bit value), the unit check holds,
    and the simulated run is the CPU run's to the bit. Both placements."""
    target = os.path.join(ROOT, "tests", "targets", "int8_npu.json")
    m = onnx.load(model_path)
    for placement in ("capability", "cost"):
        label = f"{name} int8 target ({placement})"
        r = run("partition", model_path, "--target", target, "--json", "--placement", placement)
        if not check.expect(r.returncode == 0, f"{label}: partitions", last(r.stderr)):
            continue
        plan = json.loads(r.stdout)
        npu = {sg["id"] for sg in plan["subgraphs"] if sg["target"] == "int8npu"}
        on_npu = [n for sg in plan["subgraphs"] if sg["id"] in npu for n in sg["nodes"]]
        ops = {n["index"]: n["op"] for n in plan["nodes"]}
        wrong = sorted({ops[i] for i in on_npu if ops[i] not in INT8_OPS})
        units = sum(1 for i in on_npu if ops[i] in ("QLinearConv", "QLinearMatMul"))
        if placement == "cost" and units == 0 and not wrong:
            # by cost a model of a few microseconds may stay on the CPU: only
            # where the estimates say the offload is slower (the NPU's launch)
            a = run("analyze", model_path, "--target", target)
            est = re.search(r"all on the CPU ([0-9.]+) us; every supported node offloaded ([0-9.]+) us", a.stdout)
            check.expect(bool(est) and float(est.group(2)) > float(est.group(1)),
                         f"{label}: no unit on the NPU, as its estimates say (offloading is slower)",
                         est.group(0) if est else last(a.stderr) or "no estimate in analyze's output")
        else:
            check.expect(not wrong and units > 0, f"{label}: {units} units and only int8 ops on the NPU",
                         f"float ops there: {wrong}" if wrong else "no unit on the NPU")
        # (the units seam does not make one node, the residual Adds, stay
        # on the CPU here, where the CPU subgraphs before and after an NPU
        # subgraph may hold different members of one: not a split that
        # matters, since every member runs on the CPU)
        bad, _ = unit_problems(m, plan)
        bad = [b for b in bad if set(re.findall(r"subgraph \d+ \(?(\w+)\)?", b)) - {"cpu"}]
        check.expect(not bad, f"{label}: no unit split across targets", "; ".join(bad[:4]))
    outs = {}
    for label, extra in (("cpu", []), ("int8npu", ["--target", target, "--placement", "capability"])):
        od = os.path.join(work, f"{name}.int8target.{label}")
        r, _ = seam_run(model_path, feeds, od, extra)
        if check.expect(r.returncode == 0, f"{name} int8 target: runs on {label}", last(r.stderr)):
            outs[label] = {f: np.load(os.path.join(od, f)) for f in sorted(os.listdir(od))}
    if len(outs) == 2:
        same = outs["cpu"].keys() == outs["int8npu"].keys() and all(
            np.array_equal(outs["cpu"][k], outs["int8npu"][k]) for k in outs["cpu"])
        check.expect(same, f"{name} int8 target: the simulated run is the CPU's to the bit")


def int8_target_float_case():
    """A float model gets nothing on the int8 target."""
    if not check.selected("int8 target float"):
        return
    path, _ = write_case("int8_float", [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
                                        helper.make_node("MaxPool", ["c"], ["y"], name="pool", kernel_shape=[2, 2])],
                         {"x": np.zeros((1, 3, 8, 8), np.float32)}, {"w": np.ones((4, 3, 3, 3), np.float32)},
                         [("y", T.FLOAT)])
    target = os.path.join(ROOT, "tests", "targets", "int8_npu.json")
    r = run("partition", path, "--target", target, "--json", "--placement", "capability")
    if check.expect(r.returncode == 0, "int8 target float: partitions", last(r.stderr)):
        plan = json.loads(r.stdout)
        check.expect(all(sg["target"] == "cpu" for sg in plan["subgraphs"]),
                     "int8 target float: a float model gets nothing on the int8 target",
                     [sg["target"] for sg in plan["subgraphs"]])


def no_vnni_case():
    """oneDNN's int8 kernels without VNNI saturate (seen on an AVX2 CPU: 15
    to 72 quanta off at resnet18's and mobilenet_v2's outputs), so dnnl
    refuses int8 products there (backends/dnnl/quant.c). With oneDNN capped
    at AVX2 (ONEDNN_MAX_CPU_ISA, as such a CPU is, on any CPU):
    `seam partition qdq_conv_relu --target dnnl --placement capability`
    leaves every QLinearConv on the CPU and a plan note says why once;
    SEAM_DNNL_INT8_WITHOUT_VNNI=1 gives them back to dnnl; without the cap
    on a CPU with VNNI, dnnl takes them."""
    if not check.selected("no vnni"):
        return
    model = os.path.join(MODELS, "qdq_conv_relu.onnx")
    if not os.path.exists(model):
        return check.ok("no vnni: not run (qdq_conv_relu was not selected, so not written)")
    runs = [("capped", {"ONEDNN_MAX_CPU_ISA": "AVX2"}, False),
            ("capped, SEAM_DNNL_INT8_WITHOUT_VNNI=1", {"ONEDNN_MAX_CPU_ISA": "AVX2", "SEAM_DNNL_INT8_WITHOUT_VNNI": "1"}, True)]
    if seamtest.cpu_has_vnni():
        runs.append(("this CPU (VNNI)", {}, True))
    for label, env, want_dnnl in runs:
        r = subprocess.run([args.seam, "partition", model, "--target", "dnnl", "--placement", "capability", "--json"],
                           capture_output=True, text=True, env=dict(os.environ, **env), timeout=300)
        if not check.expect(r.returncode == 0, f"no vnni ({label}): partition runs", last(r.stderr)):
            continue
        plan = json.loads(r.stdout)
        convs = [n["target"] for n in plan["nodes"] if n["op"] == "QLinearConv"]
        said = [t for t in plan["notes"] if "without VNNI" in t and "refuses" in t]
        if want_dnnl:
            check.expect(convs and all(t == "dnnl" for t in convs) and not said,
                         f"no vnni ({label}): every QLinearConv on dnnl, no VNNI note", f"{convs}, notes {said}")
        else:
            check.expect(convs and all(t == "cpu" for t in convs) and len(said) == 1 and str(len(convs)) in said[0],
                         f"no vnni ({label}): every QLinearConv ({len(convs)}) on the CPU, one note saying why",
                         f"{convs}, notes {plan['notes']}")


def main():
    names = [n for n in subprocess.run([sys.executable, GEN, "--list"], capture_output=True, text=True,
                                       check=True).stdout.split()]
    wanted = [n for n in names if check.selected(n) | check.selected(f"{n} plan")]
    if wanted:
        t0 = time.time()
        r = subprocess.run([sys.executable, GEN, MODELS, "--seam", args.seam, "--only", ",".join(wanted)],
                           capture_output=True, text=True)
        if r.returncode:
            check.fail(f"gen_quant.py failed: {(r.stderr or r.stdout).strip()[-600:]}")
            check.finish()
        print(f"models written in {time.time() - t0:.1f} s", flush=True)
    for name in wanted:
        info = json.load(open(os.path.join(MODELS, name + ".json")))
        if check.matches(name):
            model_case(name, info)
        if check.matches(f"{name} plan") and info["kind"] == "qdq":
            plan_cases(name, os.path.join(MODELS, info["model"]))
        if check.matches(f"{name} plan") and name in ("qdq_resnet18", "qop_convnet"):
            int8_target_case(name, os.path.join(MODELS, info["model"]),
                             {info["input_name"]: os.path.join(MODELS, info["input"])})
    int8_target_float_case()
    no_vnni_case()
    bad = bad_models()
    failing = []
    for name, spec in bad.items():
        label = name if name.startswith(("ok_", "info_")) else f"bad {name}"
        if not check.selected(label):
            continue
        res = bad_case(name, spec)
        if not all(res) and not name.startswith(("ok_", "info_")):
            failing.append(f"{name} ({' '.join(p for p, ok in zip(('cpu', 'dnnl'), res) if not ok)})")
    print("\nmax difference from ONNX Runtime's output in quanta [largest step of a quantized tensor computed "
          "from ONNX Runtime's inputs, QDQ models], seam's wall time")
    print(f"{'model':16} | " + " | ".join(f"{p:>21}" for p in PATHS) + " | ORT")
    for name, res in summary.items():
        cells = []
        for p in PATHS:
            qd, t, local = res.get(p, (None, None, None))
            cells.append(f"{'-' if qd is None else f'{qd:.2f}':>6} {'' if local is None else f'[{local}]':>5} "
                         f"{'' if t is None else f'{t:.2f}s':>7}")
        print(f"{name:16} | " + " | ".join(cells) + f" | {res['ort'][1]:.2f}s")
    if failing:
        print(f"bad-input cases not refused with exit 1 and the node's name: {len(failing)}: " + ", ".join(failing))
    check.finish()


main()
