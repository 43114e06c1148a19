"""seam analyze --what-if (tools/cli/what_if.c): its predictions are what the
partitioner does.

usage: python3 check_what_if.py SEAM TARGETS_DIR WORKDIR MODEL.onnx... [-k PATTERN]

For each MODEL and the narrow rules target tests/targets/
conv_gemm_relu_maxpool.json (ccrm: every op not listed is refused as "X is
not listed"), `seam analyze --what-if --json` predicts, per refused form,
the device subgraphs, the nodes on the target and the boundary bytes if
that form were supported. The check writes ccrm with that op added
("X": true) and partitions the model with it: the plan must have exactly
the predicted numbers, for every form (not a sample). Over a folder of
the models (`seam analyze FOLDER --what-if --json`), each form's numbers
must be the sums of the single-model answers. A small model
(Conv, Relu, Sigmoid, Conv, Relu) checks the arithmetic by hand: Sigmoid's
form merges three device subgraphs into one.
"""
import json
import os
import shutil
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

per_model = {}
for m in args.models:
    name = os.path.basename(m)[:-5]
    if check.selected(name):
        per_model[name] = check_model(name, m)


def folder_case():
    """analyze FOLDER --what-if: each form's numbers are the sums of the
    single-model answers above (which were each checked against the plan
    made with the form supported), and a file that is not a model is
    named, left out, and makes the exit status 1."""
    names = [n for n, w in per_model.items() if w][:4]
    if len(names) < 2:
        return check.ok("folder: skipped (fewer than two models selected)")
    folder = os.path.join(args.work, "folder")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for n in names:
        os.symlink(next(m for m in args.models if os.path.basename(m) == n + ".onnx"), os.path.join(folder, n + ".onnx"))
    r = run("analyze", folder, "--target", ccrm_path, "--what-if", "--json")
    if not check.expect(r.returncode == 0, f"folder: analyze FOLDER --what-if --json over {names}", r.stderr[-300:]):
        return
    got = json.loads(r.stdout)
    want = {}
    for n in names:
        w = per_model[n]
        for f in w["forms"]:
            a = want.setdefault((f["op"], f["reason"]), [0, 0, 0, 0, 0])
            a[0] += 1
            a[1] += f["nodes"]
            a[2] += f["device_subgraphs"] - w["now"]["device_subgraphs"]
            a[3] += f["offloaded"] - w["now"]["offloaded"]
            a[4] += f["boundary_bytes"] - w["now"]["boundary_bytes"]
    have = {(f["op"], f["reason"]): [f["models"], f["nodes"], f["device_subgraphs_delta"], f["offloaded_delta"],
                                     f["boundary_bytes_delta"]] for f in got["forms"]}
    check.expect(got["models"] == len(names) and have == want,
                 f"folder: {len(have)} forms, each the sum of its models' answers",
                 f"models {got['models']}; differ: {[(k, have.get(k), want.get(k)) for k in set(have) | set(want) if have.get(k) != want.get(k)][:3]}")
    subs = [f["device_subgraphs_delta"] for f in got["forms"]]
    check.expect(subs == sorted(subs), "folder: ranked by the device subgraphs each form removes", str(subs))
    now = sum(per_model[n]["now"]["device_subgraphs"] for n in names)
    check.expect(got["now"]["device_subgraphs"] == now, f"folder: now {now} device subgraphs in all",
                 str(got["now"]))
    with open(os.path.join(folder, "broken.onnx"), "wb") as f:
        f.write(b"not a model")
    r = run("analyze", folder, "--target", ccrm_path, "--what-if", "--json")
    check.expect(r.returncode == 1 and "broken.onnx" in r.stderr and r.stdout and
                 json.loads(r.stdout)["models"] == len(names) and json.loads(r.stdout)["left_out"] == 1,
                 "folder: a broken file is named and left out, exit 1", f"exit {r.returncode}: {r.stderr[-200:]}")


if check.selected("folder"):
    folder_case()

check.finish()
