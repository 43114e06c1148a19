"""seam analyze --what-if (tools/cli/what_if.c): its predictions are what the
partitioner does.

usage: python3 check_what_if.py SEAM TARGETS_DIR WORKDIR MODEL.onnx... [-k PATTERN]

For each MODEL and the narrow rules target tests/targets/
conv_gemm_relu_maxpool.json (ccrm: every op not listed is refused as "X is
not listed"), `seam analyze --what-if --json` predicts, per refused form,
the device subgraphs, the nodes on the target and the boundary bytes if
that form were supported. The check writes ccrm with that op added
("X": true) and partitions the model with it: the plan must have exactly
the predicted numbers, for every form (not a sample). A small model
(Conv, Relu, Sigmoid, Conv, Relu) checks the arithmetic by hand: Sigmoid's
form merges three device subgraphs into one.
"""
import json
import os
import sys

import numpy as np
from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import vi  # noqa: E402

p = seamtest.arg_parser(__doc__)
p.add_argument("seam")
p.add_argument("targets")
p.add_argument("work")
p.add_argument("models", nargs="*")
args = p.parse_args()
os.makedirs(args.work, exist_ok=True)
run = seamtest.Program(args.seam, timeout=600)
check = seamtest.Checker("what-if", args.k)
ccrm_path = os.path.join(args.targets, "conv_gemm_relu_maxpool.json")
ccrm = json.load(open(ccrm_path))


def plan_numbers(model, target):
    r = run("partition", model, "--target", target, "--json")
    if r.returncode:
        return None, r.stderr
    plan = json.loads(r.stdout)
    dev = [s for s in plan["subgraphs"] if s["target"] != "cpu"]
    on = sum(1 for n in plan["nodes"] if n["target"] == plan["targets"][0])
    return (len(dev), on, sum(s["boundary_bytes"] for s in dev)), ""


def check_model(label, model):
    r = run("analyze", model, "--target", ccrm_path, "--what-if", "--json")
    if not check.expect(r.returncode == 0, f"{label}: analyze --what-if --json", r.stderr.strip()[-300:]):
        return None
    w = json.loads(r.stdout)
    now, _ = plan_numbers(model, ccrm_path)
    check.expect(now == (w["now"]["device_subgraphs"], w["now"]["offloaded"], w["now"]["boundary_bytes"]),
                 f"{label}: 'now' is the plan: {w['now']} against {now}")
    for f in w["forms"]:
        if not f["reason"].endswith("is not listed and the default is false"):
            continue
        t = dict(ccrm, ops=dict(ccrm["ops"], **{f["op"]: True}))
        tp = os.path.join(args.work, f"ccrm_plus_{f['op']}.json")
        json.dump(t, open(tp, "w"))
        got, err = plan_numbers(model, tp)
        want = (f["device_subgraphs"], f["offloaded"], f["boundary_bytes"])
        check.expect(got == want, f"{label}: with {f['op']} supported: predicted (subgraphs, nodes, bytes) {want}, "
                     f"partitioned {got}", err)
    return w


if check.selected("small"):
    mk = helper.make_node
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((4, 4, 3, 3)).astype(np.float32)
    path = seamtest.save_model(os.path.join(args.work, "small.onnx"),
                               [mk("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), mk("Relu", ["c1"], ["r1"]),
                                mk("Sigmoid", ["r1"], ["s"]), mk("Conv", ["s", "w2"], ["c2"], pads=[1, 1, 1, 1]),
                                mk("Relu", ["c2"], ["y"])],
                               [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])],
                               seamtest.initializers({"w1": w1, "w2": w2}), name="small")
    w = check_model("small", path)
    if w:
        sig = [f for f in w["forms"] if f["op"] == "Sigmoid"]
        check.expect(w["now"]["device_subgraphs"] == 2 and len(sig) == 1 and sig[0]["device_subgraphs"] == 1
                     and sig[0]["offloaded"] == 5 and sig[0]["nodes"] == 1,
                     f"small: now 2 device subgraphs; with Sigmoid 1 of all 5 nodes: {w}")

for m in args.models:
    name = os.path.basename(m)[:-5]
    if check.selected(name):
        check_model(name, m)

check.finish()
