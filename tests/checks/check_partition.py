"""Partitioning tests on exported torch models: the seed examples, and the
real models against several rules targets.

usage: /usr/bin/python3 check_partition.py SEAM MODELS_DIR TARGETS_DIR WORKDIR [-k PATTERN]

Seed examples (target without TopK: torch exports torch.sort as TopK):
  - seed_mlp gives 2 subgraphs, device then CPU;
  - seed_mlp_sort_mid gives 3: device, CPU, device;
  - that model with --max-subgraph-count 2 --on-violation error fails with
    the seed's message;
  - --cpu-ops LogSoftmax moves the log_softmax to the CPU.
Real models x targets (neuron-like, conv/gemm/relu/maxpool, dense-npu, a
random half of the ops, dnnl), with folding and with --no-fold: each plan
is checked against the ONNX file alone by tests/lib/planval.py (every node
of the model once with its index, name and op; constants honest; every
other node in one subgraph of its target; an execution order that runs;
exact boundaries in the model's names), and each device node of a rules
target is supported per an independent evaluation of the rules file.

The cases: seed_mlp, seed_mlp_sort_mid, seed_mlp cpu_ops, seed_mlp analyze, validator, measured,
and MODEL x TARGET [--no-fold] (resnet18 x neuron; the targets are neuron,
ccrm, dense_npu, half and dnnl); MODEL x conv_only+npu_a, both orders (the
targets chosen jointly: the same plan in either --target order); memory
budgets (rules memory_bytes, --target-memory, a pin that cannot fit).
"""
import glob
import json
import os
import random
import re
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import planval  # noqa: E402
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


def check_real(model_path, target, fold=True):
    """Plans every real model for target (a rules file, or "dnnl"), folded
    or not, and validates the plan against the ONNX file alone
    (tests/lib/planval.py: ownership, honest constants, execution order,
    exact boundaries in the model's names); for a rules target also that
    every device node is supported per an independent reading of the rules."""
    name = os.path.basename(model_path)[:-5]
    rules = json.load(open(target)) if target != "dnnl" else None
    p = plan(model_path, "--target", target, *([] if fold else ["--no-fold"]))
    m = onnx.load(model_path, load_external_data=False)
    nodes = list(m.graph.node)
    problems = planval.validate(m, p)
    for n in p["nodes"]:
        i = n["index"]
        if rules and n["target"] == rules["name"] and not rule_ok(rules, nodes[i], m):
            problems.append(f"node {i} ({nodes[i].op_type}) on {rules['name']}, which does not support it")
    for what in problems[:5]:
        check.fail(f"{name} x {rules['name'] if rules else target}{'' if fold else ' --no-fold'}: {what}")
    expect(not problems, f"{name} x {rules['name'] if rules else target}{'' if fold else ' --no-fold'}: "
                         f"{len(p['subgraphs'])} subgraphs, {sum(1 for s in p['subgraphs'] if s['target'] != 'cpu')} "
                         f"on the device, {sum(1 for n in p['nodes'] if n['target'] == 'constant')} constants; "
                         f"{len(problems)} problems")
    return p


if check.selected("validator"):
    # planval must catch each kind of lie a plan can tell: a sound plan of
    # seed_mlp_sort_mid (npu, cpu, npu), then one corruption at a time
    import copy
    m = onnx.load(mid, load_external_data=False)
    good = plan(mid, "--target", npu)
    expect(not planval.validate(m, good), "validator: the plan of seed_mlp_sort_mid is valid",
           planval.validate(m, good)[:3])
    first_dev = next(i for i, s in enumerate(good["subgraphs"]) if s["target"] == "npu")
    def corrupt(what, fn):
        bad = copy.deepcopy(good)
        fn(bad)
        expect(planval.validate(m, bad), f"validator: catches {what}")
    corrupt("subgraphs out of order", lambda b: b["subgraphs"].reverse())
    corrupt("a missing boundary input", lambda b: b["subgraphs"][-1]["inputs"].pop())
    corrupt("a missing boundary output", lambda b: b["subgraphs"][first_dev]["outputs"].pop())
    corrupt("a node in no subgraph", lambda b: b["subgraphs"][first_dev]["nodes"].pop())
    corrupt("a live node called constant", lambda b: b["nodes"][b["subgraphs"][-1]["nodes"][0]].update(target="constant"))
    corrupt("a node with another op", lambda b: b["nodes"][0].update(op="Constant"))
    corrupt("nodes out of order in a subgraph", lambda b: b["subgraphs"][first_dev]["nodes"].reverse())


if check.selected("measured"):
    # --placement measured times the device subgraphs and the CPU on this
    # machine: the times differ from run to run, so what is checked is that
    # the plan is valid, says what it measured, and is never slower (by its
    # own measurements) than either single-backend plan
    for name in ("seed_mlp_sort_mid", "resnet18"):
        path = os.path.join(MODELS, name + ".onnx")
        p = plan(path, "--target", "dnnl", "--placement", "measured")
        m = onnx.load(path, load_external_data=False)
        problems = planval.validate(m, p)
        e = p["estimate"]
        expect(not problems and any(n.startswith("measured placement: ") and re.search(r" runs? on the CPU alone", n)
                                    for n in p["notes"])
               and 0 < e["plan_us"] <= min(e["all_cpu_us"], e["capability_us"]) * 1.0001,
               f"measured: {name}: a valid plan, {e['plan_us']:.0f} us measured against {e['all_cpu_us']:.0f} us on the "
               f"CPU alone and {e['capability_us']:.0f} us offloaded", (problems[:3], p["notes"]))
    dyn = os.path.join(MODELS, "transformer_encoder_dyn.onnx")
    r = run("partition", dyn, "--target", "dnnl", "--placement", "measured", "--shape", "input=1x9")
    expect(r.returncode == 0 and "measured placement" in r.stdout, "measured: a symbolic model with --shape is measured",
           r.stdout[-300:] + r.stderr)
    r = run("partition", dyn, "--target", "dnnl", "--placement", "measured")
    expect(r.returncode == 0 and "placed by the cost model instead" in r.stdout and "--shape" in r.stdout,
           "measured: a symbolic model without shapes cannot be measured: placed by cost, with a note saying how to "
           "measure it", r.stdout[-400:] + r.stderr)
    r = run("partition", dyn, "--target", "dnnl", "--placement", "fastest")
    expect(r.returncode == 2 and "--placement must be cost, capability or measured" in r.stderr,
           "measured: a bad --placement is a usage error", r.stderr)


random_half = os.path.join(WORK, "random_half.json")
reals = sorted(glob.glob(os.path.join(MODELS, "*.onnx")))
all_ops = sorted({n.op_type for path in reals for n in onnx.load(path, load_external_data=False).graph.node})
rng = random.Random(1234)
with open(random_half, "w") as f:
    json.dump({"name": "half", "default": False, "ops": {op: rng.random() < 0.5 for op in all_ops}}, f)
targets = [os.path.join(TARGETS, "neuron_like.json"), os.path.join(TARGETS, "conv_gemm_relu_maxpool.json"),
           os.path.join(TARGETS, "dense_npu.json"), random_half, "dnnl"]
target_names = [json.load(open(t))["name"] if t != "dnnl" else t for t in targets]
for path in reals:
    for t, tname in zip(targets, target_names):
        for fold in (True, False):
            case = f"{os.path.basename(path)[:-5]} x {tname}{'' if fold else ' --no-fold'}"
            if not check.selected(case):
                continue
            try:
                check_real(path, t, fold)
            except Exception as e:
                check.fail(f"{case}: {e}")

# Several targets chosen jointly (issue 34): a conv-only target and a broad
# one that takes every op, in either order, give the same plan, one npu_a
# subgraph (first-fit by order once cut googlenet into 18).
conv_only, npu_a = os.path.join(TARGETS, "conv_only.json"), os.path.join(TARGETS, "npu_a.json")
for path in reals:
    case = f"{os.path.basename(path)[:-5]} x conv_only+npu_a, both orders"
    if not check.selected(case):
        continue
    try:
        plans = [plan(path, "--target", a, "--target", b) for a, b in ((conv_only, npu_a), (npu_a, conv_only))]
        maps = [{n["name"]: n["target"] for n in p["nodes"]} for p in plans]
        devs = [sum(1 for sg in p["subgraphs"] if sg["target"] != "cpu") for p in plans]
        # (shape arithmetic on symbolic dims is seam's DimExpr, and what is
        # made from it alone runs before the device: the CPU's)
        check.expect(maps[0] == maps[1] and devs == [1, 1] and all(
            sg["target"] == "npu_a" or all("dimexpr" in p["nodes"][i] or "inputs' shapes alone" in
                                           p["nodes"][i]["reason"] for i in sg["nodes"])
            for p in plans for sg in p["subgraphs"]), case,
            f"device subgraphs {devs}, {sum(maps[0][k] != maps[1][k] for k in maps[0])} nodes differ")
    except Exception as e:
        check.fail(f"{case}: {e}")

# Memory as a placement constraint (issue 34): a rules file's memory_bytes
# and --target-memory keep every device subgraph within the target's
# memory (nodes stay on the CPU, reason "memory"); a pin that cannot fit
# is an error naming it; bad sizes are usage errors.
if check.selected("memory budgets"):
    r18 = os.path.join(MODELS, "resnet18.onnx")
    small = os.path.join(WORK, "npu_a_4m.json")
    with open(small, "w") as f:
        json.dump({"name": "npu_a", "default": True, "memory_bytes": 4 << 20}, f)
    try:
        full = plan(r18, "--target", npu_a)
        for label, args in (("rules memory_bytes 4M", ("--target", small)),
                            ("--target-memory 8M", ("--target", npu_a, "--target-memory", "npu_a=8M"))):
            cap = 4 << 20 if "4M" in label else 8 << 20
            p = plan(r18, *args)
            dev = [sg for sg in p["subgraphs"] if sg["target"] != "cpu"]
            mem = [n for n in p["nodes"] if n["reason"].startswith("memory") or n.get("reason_code") == "memory"]
            kept = sum(1 for n in p["nodes"] if n["target"] == "cpu")
            check.expect(dev and all(sg["memory_bytes"] <= cap for sg in dev) and kept > 0 and
                         any("memory" in n for n in p["notes"]) and
                         sum(sg["memory_bytes"] for sg in full["subgraphs"] if sg["target"] != "cpu") > cap,
                         f"memory budgets: {label}: {len(dev)} device subgraphs each within it, {kept} nodes on the CPU",
                         f"needs {[sg['memory_bytes'] for sg in dev]}, notes {p['notes']}")
        r = run("partition", r18, "--target", npu_a, "--target-memory", "npu_a=1M", "--pin",
                "/layer4/layer4.1/conv2/Conv=npu_a")
        check.expect(r.returncode == 2 and "/layer4/layer4.1/conv2/Conv" in r.stderr and "memory_bytes" in r.stderr,
                     "memory budgets: a pin that cannot fit is a usage error naming it (exit 2)", r.stderr.strip()[-300:])
        for bad in ("npu_a=lots", "nothing=1M", "npu_a"):
            r = run("partition", r18, "--target", npu_a, "--target-memory", bad)
            check.expect(r.returncode == 2 and "--target-memory" in r.stderr,
                         f"memory budgets: --target-memory {bad} is a usage error", r.stderr.strip()[-200:])
        neg = os.path.join(WORK, "npu_neg.json")
        with open(neg, "w") as f:
            json.dump({"name": "npu_a", "default": True, "memory_bytes": -1}, f)
        r = run("partition", r18, "--target", neg)
        check.expect(r.returncode == 1 and "memory_bytes" in r.stderr, "memory budgets: a negative memory_bytes is refused",
                     r.stderr.strip()[-200:])
    except Exception as e:
        check.fail(f"memory budgets: {e}")

# Several instances of one target (issue 34): --target dnnl:0 --target
# dnnl:1, each with its own memory (--target-memory) and threads
# (--target-threads), placed jointly; a rules target's instances each take
# its memory_bytes. resnet18's weights (~45 MiB) do not fit one 30 MiB
# instance; two hold all of it, each within its budget, in either order.
# The run on both equals plain dnnl's bitwise, as does the saved plan run
# again without targets (its dnnl:1 subgraph on dnnl with its own threads).
if check.selected("instances"):
    r18 = os.path.join(MODELS, "resnet18.onnx")
    cap = 30 << 20
    mem = ("--target-memory", "dnnl:0=30M", "--target-memory", "dnnl:1=30M")
    try:
        one = plan(r18, "--target", "dnnl:0", "--target-memory", "dnnl:0=30M")
        both = plan(r18, "--target", "dnnl:0", "--target", "dnnl:1", *mem)
        back = plan(r18, "--target", "dnnl:1", "--target", "dnnl:0", *mem)
        on_cpu = [n["name"] for n in one["nodes"] if n["target"] == "cpu"]
        expect(on_cpu and any("memory" in n for n in one["notes"]),
               f"instances: one 30 MiB instance leaves {len(on_cpu)} nodes on the CPU (memory)")
        for label, p in (("dnnl:0 first", both), ("dnnl:1 first", back)):
            per = {}
            for sg in p["subgraphs"]:
                per.setdefault(sg["target"], []).append(sg["memory_bytes"])
            cpu = [n["name"] for n in p["nodes"] if n["target"] == "cpu"]
            expect(set(per) == {"dnnl:0", "dnnl:1"} and not cpu and all(len(v) == 1 and v[0] <= cap for v in per.values()),
                   f"instances ({label}): every node on the two instances, each within 30 MiB: {per}", f"cpu: {cpu}")
        inp = os.path.join(MODELS, "resnet18.input.npy")
        outs = {}
        for label, extra in (("dnnl", ("--target", "dnnl")),
                             ("instances", ("--target", "dnnl:0", "--target", "dnnl:1", *mem,
                                            "--target-threads", "dnnl:1=1"))):
            d = os.path.join(WORK, "inst_" + label)
            r = run("run", r18, *extra, "--input", "input=" + inp, "--output-dir", d, "--quiet")
            expect(r.returncode == 0, f"instances: seam run --target {label} (rc {r.returncode})", r.stderr[-500:])
            outs[label] = np.load(glob.glob(os.path.join(d, "*.npy"))[0]) if r.returncode == 0 else None
        saved = os.path.join(WORK, "inst_saved.onnx")
        r = run("partition", r18, "--target", "dnnl:0", "--target", "dnnl:1", *mem, "--target-threads", "dnnl:1=1",
                "-o", saved)
        expect(r.returncode == 0, f"instances: partition -o (rc {r.returncode})", r.stderr[-500:])
        m = onnx.load(saved)
        opts = {}
        for n in m.graph.node:
            if n.op_type == "Subgraph":
                a = {x.name: x for x in n.attribute}
                opts[a["target"].s.decode()] = [o.decode() for o in a["target_options"].strings] if "target_options" in a else []
        expect(opts == {"dnnl:0": [], "dnnl:1": ["threads=1"]},
               "instances: the saved subgraphs name their instance, dnnl:1's with its threads=1", str(opts))
        d = os.path.join(WORK, "inst_reloaded")
        r = run("run", saved, "--input", "input=" + inp, "--output-dir", d, "--compile-log")
        expect(r.returncode == 0 and "threads: 1 (target option threads=1)" in r.stderr,
               "instances: the saved plan runs without targets, dnnl:1's subgraph on dnnl with 1 thread", r.stderr[-800:])
        outs["reloaded"] = np.load(glob.glob(os.path.join(d, "*.npy"))[0]) if r.returncode == 0 else None
        want = np.load(os.path.join(MODELS, "resnet18.expected.0.npy"))
        ok = all(v is not None for v in outs.values())
        expect(ok and outs["instances"].tobytes() == outs["dnnl"].tobytes() and
               outs["reloaded"].tobytes() == outs["dnnl"].tobytes() and
               seamtest.abs_err(outs["dnnl"], want) <= 1e-4 * float(np.abs(want).max()),
               "instances: the two instances' run and the reloaded plan's equal plain dnnl's bitwise, torch's within 1e-4")
        # a rules target's instances each take its memory_bytes
        small = os.path.join(WORK, "npu_a_4m.json")
        with open(small, "w") as f:
            json.dump({"name": "npu_a", "default": True, "memory_bytes": 4 << 20}, f)
        p1 = plan(r18, "--target", small)
        p2 = plan(r18, "--target", small + ":0", "--target", small + ":1")
        dev1 = sum(1 for n in p1["nodes"] if n["target"] != "cpu")
        dev2 = {t: sum(1 for n in p2["nodes"] if n["target"] == t) for t in ("npu_a:0", "npu_a:1")}
        expect(all(v > 0 for v in dev2.values()) and sum(dev2.values()) > dev1 and
               all(sg["memory_bytes"] <= 4 << 20 for sg in p2["subgraphs"] if sg["target"] != "cpu"),
               f"instances: two 4 MiB npu_a instances take more nodes ({dev2}) than one ({dev1}), each subgraph within 4 MiB")
        for bad, why in ((("--target", "dnnl:0", "--target", "dnnl:0"), "given twice"),
                         (("--target", "cpu:1"), "no instances"),
                         (("--target", "dnnl:1", "--target-threads", "dnnl:1=0"), "--target-threads"),
                         (("--target", "dnnl:1", "--target-threads", "dnnl:2=2"), "no --target is named")):
            r = run("partition", r18, *bad)
            expect(r.returncode == 2 and why in r.stderr, f"instances: {' '.join(bad)}: exit 2 ({r.returncode})",
                   r.stderr.strip()[-300:])
    except Exception as e:
        check.fail(f"instances: {e}")
check.finish()
