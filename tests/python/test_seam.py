"""The Python package seam against torch (the reference for every output),
the seam CLI (the reference for plans and analyses) and onnx (the reference
for saved files): the seed examples through seam.trace, save and load,
replace_weights, dynamic batch, bad inputs, and threads.

Run: PYTHONPATH=build/python SEAM_CLI=build/seam /usr/bin/python3 -m pytest tests/python
"""
import json
import logging
import os
import subprocess
import sys
import threading

import numpy as np
import onnx
import pytest
import torch
import torch.nn as nn

import seam

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402  (abs_err, rel_err: a NaN or a shape mismatch is an infinite error)

if "dnnl" not in seam.builtin_targets():
    pytest.skip("this seam was built without oneDNN (-DSEAM_WITH_DNNL=OFF): the examples partition onto dnnl",
                allow_module_level=True)

TOL = 1e-4
CLI = os.environ.get("SEAM_CLI")


class MLP(nn.Module):
    """The seed's MLP, small: log_softmax then sort at the end, or the sort
    between the first ReLU and the second Linear (sort_mid)."""

    def __init__(self, sort_mid=False, input_size=64, output_size=10, layers=(32, 16)):
        super().__init__()
        self.sort_mid = sort_mid
        self.fc1 = nn.Linear(input_size, layers[0])
        self.fc2 = nn.Linear(layers[0], layers[1])
        self.fc3 = nn.Linear(layers[1], output_size)
        self.relu = nn.ReLU()

    def forward(self, x):
        r1 = self.relu(self.fc1(x))
        if self.sort_mid:
            r1, _ = torch.sort(r1)
        r2 = self.relu(self.fc2(r1))
        out = torch.log_softmax(self.fc3(r2), dim=1)
        if not self.sort_mid:
            out, _ = torch.sort(out)
        return out


def close(a, b):
    a = a.detach().numpy() if isinstance(a, torch.Tensor) else a
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else b
    assert a.shape == b.shape, (a.shape, b.shape)
    err = seamtest.abs_err(a, b)
    assert err <= TOL * max(1.0, float(np.max(np.abs(b))) if b.size else 0.0), f"max error {err}"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("seam")


@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    return MLP().eval()


@pytest.fixture(scope="module")
def mlp_mid():
    torch.manual_seed(1)
    return MLP(sort_mid=True).eval()


@pytest.fixture(scope="module")
def x():
    torch.manual_seed(2)
    return torch.rand(8, 64)


@pytest.fixture(scope="module")
def traced(mlp, x):
    return seam.trace(mlp, x, partitioner_config=CAPABILITY)


# The seed examples put the MLP's layers on the device, as torch-neuronx
# does; on dnnl the cost model would keep so small a model on the CPU, so
# they ask for placement by capability (test_cost_placement checks cost).
CAPABILITY = seam.PartitionerConfig(placement="capability")


def targets_of(plan):
    return [s["target"] for s in plan["subgraphs"]]


def node_targets(plan, op):
    return [n["target"] for n in plan["nodes"] if n["op"] == op]


def cli(*args):
    if not CLI:
        pytest.skip("SEAM_CLI is not set")
    r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def export(module, x, path):
    torch.onnx.export(module, (x,), str(path), input_names=["x"], opset_version=17)
    return str(path)


# ---- the seed examples -------------------------------------------------------

def test_seed_sort_at_end(traced, mlp, x):
    """Default config: the sort (TopK) goes to the CPU, the rest is one dnnl subgraph."""
    assert targets_of(traced.plan) == ["dnnl", "cpu"]
    assert node_targets(traced.plan, "TopK") == ["cpu"]
    assert set(node_targets(traced.plan, "Gemm")) == {"dnnl"}
    y = traced(x)
    assert isinstance(y, torch.Tensor)
    close(y, mlp(x))


def test_numpy_in_numpy_out(traced, mlp, x):
    y = traced(x.numpy())
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    close(y, mlp(x))
    out = traced.run({"x": x.numpy()})
    assert list(out) == [o["name"] for o in traced.outputs]
    close(next(iter(out.values())), mlp(x))


def test_seed_sort_mid_max_count(mlp_mid, x):
    """The seed's second example: three subgraphs, so max_subgraph_count=2 raises its message."""
    with pytest.raises(seam.UnsupportedError) as e:
        seam.trace(mlp_mid, x, partitioner_config=seam.PartitionerConfig(placement="capability", max_subgraph_count=2))
    assert "The partitioner has found 3 subgraphs which exceeds the specified max subgraph count of 2." in str(e.value)
    assert isinstance(e.value, ValueError)  # the seed raises ValueError
    m = seam.trace(mlp_mid, x, partitioner_config=CAPABILITY)
    assert targets_of(m.plan) == ["dnnl", "cpu", "dnnl"]
    close(m(x), mlp_mid(x))
    # fallback: the plan fits by moving work to the CPU, and says so
    m = seam.trace(mlp_mid, x, partitioner_config=seam.PartitionerConfig(placement="capability", max_subgraph_count=2,
                                                                         on_violation="fallback"))
    assert len(m.plan["subgraphs"]) <= 2 and m.plan["notes"]
    close(m(x), mlp_mid(x))


@pytest.mark.parametrize("ops", [{"aten::log_softmax"}, {"LogSoftmax"}])
def test_ops_to_partition(mlp, x, ops, caplog):
    """The seed's third example: log_softmax goes to the CPU though dnnl supports it."""
    cfg = seam.PartitionerConfig(placement="capability", model_support_percentage_threshold=0.8, ops_to_partition=ops)
    with caplog.at_level(logging.INFO, logger="seam"):
        m = seam.trace(mlp, x, partitioner_config=cfg)
    assert node_targets(m.plan, "LogSoftmax") == ["cpu"]
    assert targets_of(m.plan) == ["dnnl", "cpu"]
    text = caplog.text
    assert "The following operations are currently supported:" in text
    assert "85.71% of arithmetic operations (6 of 7) are supported" in text
    assert "Num Partitions: 2" in text
    close(m(x), mlp(x))


def test_support_threshold(mlp, x):
    with pytest.raises(seam.UnsupportedError, match=r"85.71% of operations \(6 of 7\) are supported"):
        seam.trace(mlp, x, partitioner_config=seam.PartitionerConfig(placement="capability",
                                                                      model_support_percentage_threshold=0.9))


def test_config_checks():
    with pytest.raises(ValueError, match="max_subgraph_count"):
        seam.PartitionerConfig(max_subgraph_count=0)
    with pytest.raises(ValueError, match="model_support_percentage_threshold"):
        seam.PartitionerConfig(model_support_percentage_threshold=2)
    with pytest.raises(ValueError, match="on_violation"):
        seam.PartitionerConfig(on_violation="maybe")
    with pytest.raises(ValueError, match="aten::frobnicate"):
        seam.PartitionerConfig(ops_to_partition={"aten::frobnicate"})


def test_pins_and_placement(mlp, x):
    m = seam.trace(mlp, x, partitioner_config=seam.PartitionerConfig(
        placement=lambda n: "cpu" if n["op"] == "Relu" else None))
    assert set(node_targets(m.plan, "Relu")) == {"cpu"}
    close(m(x), mlp(x))
    relu = next(n["name"] for n in m.plan["nodes"] if n["op"] == "Relu")
    m = seam.trace(mlp, x, partitioner_config=seam.PartitionerConfig(placement="capability", pins={relu: "cpu"}))
    assert [n["target"] for n in m.plan["nodes"] if n["name"] == relu] == ["cpu"]
    close(m(x), mlp(x))


def test_cost_placement(mlp, x):
    # by cost (the default) the tiny MLP stays on the CPU, and the plan says why
    m = seam.trace(mlp, x)
    assert set(targets_of(m.plan)) == {"cpu"}
    gemms = [n for n in m.plan["nodes"] if n["op"] == "Gemm"]
    assert gemms and all(n["reason"].startswith("cost: ") for n in gemms)
    assert any("placement by cost" in note for note in m.plan["notes"])
    assert m.plan["estimate"]["plan_us"] <= m.plan["estimate"]["capability_us"]
    close(m(x), mlp(x))
    with pytest.raises(ValueError, match="placement must be"):
        seam.PartitionerConfig(placement="fastest")


# ---- the plan and the analysis are the CLI's -------------------------------

def test_plan_equals_cli(mlp_mid, x, work):
    path = export(mlp_mid, x, work / "mid.onnx")
    cfg = seam.PartitionerConfig(placement="capability", ops_to_partition={"LogSoftmax"})
    m = seam.trace(path, None, partitioner_config=cfg)
    assert m.plan == cli("partition", path, "--target", "dnnl", "--cpu-ops", "LogSoftmax", "--on-violation", "error",
                         "--min-support", "0.5", "--placement", "capability", "--json")


def test_analyze(mlp, x, work, caplog):
    with caplog.at_level(logging.INFO, logger="seam"):
        a = seam.analyze(mlp, x)
    assert a["supported"] == {"Gemm": 3, "Relu": 2, "LogSoftmax": 1}
    assert a["unsupported"] == {"TopK": 1}
    assert abs(a["supported_fraction"] - 6 / 7) < 1e-12
    [n] = a["unsupported_nodes"]
    assert n["op"] == "TopK" and "TopK" in n["reason"]
    assert "85.71% of arithmetic operations (6 of 7) are supported" in caplog.text
    path = export(mlp, x, work / "mlp.onnx")
    ref = cli("analyze", path, "--target", "dnnl", "--json")
    got = seam.analyze(path)
    got["supported_ops"], got["unsupported_ops"] = got.pop("supported"), got.pop("unsupported")
    assert got == ref


def test_plan_stages(mlp, x, work):
    """seam.plan_stages is `seam partition --stages --json`'s "pipeline",
    and a memory no stage can hold is a ValueError naming the node."""
    path = export(mlp, x, work / "mlp_stages.onnx")
    got = seam.plan_stages(path, stages=3, targets=(), stage_memory=0, micro_batches=6)
    ref = cli("partition", path, "--stages", "3", "--simulate", "--micro-batches", "6", "--json")
    assert got["pipeline"] == ref["pipeline"]
    stages = got["pipeline"]["stages"]
    assert [s["stage"] for s in stages] == [0, 1, 2] and stages[0]["first"] == 0
    assert sum(s["nodes"] for s in stages) == sum(len(sg["nodes"]) for sg in got["subgraphs"])
    assert got["pipeline"]["schedule"]["micro_batches"] == 6
    budget = max(s["memory_bytes"] for s in stages)
    tight = seam.plan_stages(path, stages=3, targets=(), stage_memory=budget)
    assert all(s["memory_bytes"] <= budget for s in tight["pipeline"]["stages"])
    with pytest.raises(ValueError, match="alone needs"):
        seam.plan_stages(path, stages=2, targets=(), stage_memory=16)
    for bad in (dict(stages=0), dict(stages=2, micro_batches=-1), dict(stages=2, stage_memory=-1),
                dict(stages=2, link_gbits=0.0)):
        with pytest.raises(ValueError):
            seam.plan_stages(path, targets=(), **bad)


def test_target_instances(work):
    """Two instances of dnnl (seam.Target("dnnl:0", memory=...)), each with
    its own memory: a model that one cannot hold runs on both, each within
    its budget, dnnl:1 with its threads=1 saved; outputs as the CPU's
    within float rounding. A budget is honoured from Python as from the CLI
    (one instance alone leaves nodes on the CPU)."""
    torch.manual_seed(5)
    big = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(512, 512), nn.ReLU())]).eval()
    xb = torch.rand(4, 512)
    path = export(big, xb, work / "mlp_instances.onnx")
    mib = 1 << 20
    t0, t1 = seam.Target("dnnl:0", memory=4 * mib), seam.Target("dnnl:1", memory=4 * mib, threads=1)
    assert (t0.name, t1.name, t1.memory) == ("dnnl:0", "dnnl:1", 4 * mib)
    one = seam.Session(path, targets=[seam.Target("dnnl:0", memory=4 * mib)], placement="capability")
    assert "cpu" in targets_of(one.plan)
    s = seam.Session(path, targets=[t0, t1], placement="capability")
    per = {}
    for sg in s.plan["subgraphs"]:
        per.setdefault(sg["target"], []).append(sg["memory_bytes"])
    assert set(per) == {"dnnl:0", "dnnl:1"}, per
    assert all(sum(v) <= 4 * mib for v in per.values()), per
    close(s.run({"x": xb.numpy()})[s.outputs[0]["name"]], big(xb))
    s.save(str(work / "instances_saved.onnx"))
    m = onnx.load(str(work / "instances_saved.onnx"))
    opts = {dict((a.name, a) for a in n.attribute)["target"].s.decode(): [o.decode() for a in n.attribute
                                                                         if a.name == "target_options" for o in a.strings]
            for n in m.graph.node if n.op_type == "Subgraph"}
    assert opts == {"dnnl:0": [], "dnnl:1": ["threads=1"]}, opts
    again = seam.Session(str(work / "instances_saved.onnx"))
    close(again.run({"x": xb.numpy()})[again.outputs[0]["name"]], big(xb))
    for bad in (lambda: seam.Target("cpu:1"), lambda: seam.Target("dnnl:0", threads=-1)):
        with pytest.raises(ValueError):
            bad()


def test_bf16_target_option(work):
    """dnnl's precision=bf16 from Python (target_options): the MLP's outputs
    move off float32 by bfloat16's rounding, no more; on a CPU without
    bfloat16 the session is refused, saying why."""
    torch.manual_seed(6)
    net = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 64)).eval()
    xb = torch.rand(8, 256)
    path = export(net, xb, work / "mlp_bf16.onnx")
    f32 = seam.Session(path, targets=["dnnl"], placement="capability").run({"x": xb.numpy()})
    try:
        s = seam.Session(path, targets=["dnnl"], placement="capability", target_options=["precision=bf16"])
    except seam.UnsupportedError as e:
        assert "neither AVX512_BF16 nor AMX" in str(e)
        return
    got = s.run({"x": xb.numpy()})
    (a,), (b,) = got.values(), f32.values()
    err = float(np.abs(a - b).max() / np.abs(b).max())
    assert 1e-5 < err < 3e-2, err


# ---- save, load, replace_weights ---------------------------------------------

def test_save_load(traced, mlp, x, work):
    path = str(work / "traced.onnx")
    traced.save(path)
    onnx.checker.check_model(onnx.load(path))
    kinds = [(n.domain, n.op_type) for n in onnx.load(path).graph.node]
    assert ("ai.seam", "Subgraph") in kinds
    again = seam.load(path)
    assert again.plan is None
    close(again(x), mlp(x))
    # weights in a file of their own
    path2 = str(work / "traced-ext.onnx")
    traced.save(path2, weights_file="traced-ext.weights")
    assert os.path.getsize(work / "traced-ext.weights") > 4 * 32 * 64
    assert os.path.getsize(path2) < os.path.getsize(path)
    close(seam.load(path2)(x), mlp(x))


def test_inline_weights_false(mlp, x, work):
    m = seam.trace(mlp, x, inline_weights=False, partitioner_config=CAPABILITY)
    path = str(work / "sep.onnx")
    m.save(path)
    assert os.path.exists(str(work / "sep.onnx.weights"))
    close(seam.load(path)(x), mlp(x))


def test_replace_weights(mlp, x, work):
    torch.manual_seed(5)
    other = MLP().eval()
    m = seam.trace(mlp, x, partitioner_config=CAPABILITY)
    close(m(x), mlp(x))
    # a torch state_dict, by initializer name
    assert seam.replace_weights(m, other.state_dict()) is m
    close(m(x), other(x))
    # an ONNX file of weights, on a saved partitioned model
    path = str(work / "rw.onnx")
    seam.trace(mlp, x, partitioner_config=CAPABILITY).save(path)
    donor = export(other, x, work / "other.onnx")
    out = str(work / "rw-new.onnx")
    assert seam.replace_weights(path, donor, out) == out
    close(seam.load(out)(x), other(x))
    close(seam.load(path)(x), mlp(x))  # the input file is untouched
    # bad weights: nothing changes, the error names the weight
    with pytest.raises(ValueError, match="fc1.weight"):
        seam.replace_weights(m, {"fc1.weight": np.zeros((3, 3), np.float32)})
    with pytest.raises(ValueError, match="no_such_weight"):
        seam.replace_weights(m, {"no_such_weight": np.zeros((3,), np.float32)})
    close(m(x), other(x))


# ---- dynamic batch ---------------------------------------------------------------

def test_dynamic_batch(mlp, x):
    m = seam.trace(mlp, x[:4], dynamic_batch=True, partitioner_config=CAPABILITY)
    for n in (1, 7, 8, 9):
        xn = torch.rand(n, 64)
        close(m(xn), mlp(xn))
    fixed = seam.trace(mlp, x[:4], partitioner_config=CAPABILITY)
    with pytest.raises(ValueError, match="'x'"):
        fixed(torch.rand(7, 64))
    d = seam.dynamic_batch(fixed)
    xn = torch.rand(7, 64)
    close(d(xn), mlp(xn))


# ---- bad inputs ------------------------------------------------------------------

def test_bad_inputs(traced, mlp, x, work):
    with pytest.raises(ValueError, match="input 'x'.*float64|float64.*'x'|input 'x'"):
        traced(x.numpy().astype(np.float64))
    with pytest.raises(ValueError, match="'x'"):
        traced(x.numpy()[None])  # rank 3
    with pytest.raises(ValueError, match="no input 'y'"):
        traced.run({"y": x.numpy()})
    with pytest.raises(ValueError, match="input 'x' was not given"):
        traced.run({})
    with pytest.raises(ValueError, match="takes 1 input"):
        traced(x, x)
    with pytest.raises(ValueError, match="'x'.*no seam dtype"):
        traced.run({"x": np.zeros((8, 64), np.longdouble)})
    with pytest.raises(ValueError, match="input 'x': expected float32 \\[8,64\\], got complex64"):
        traced.run({"x": np.zeros((8, 64), np.complex64)})
    # a non-contiguous array is accepted (copied)
    wide = np.zeros((8, 128), np.float32)
    wide[:, ::2] = x.numpy()
    view = wide[:, ::2]
    assert not view.flags["C_CONTIGUOUS"]
    close(traced(view), mlp(x))
    close(traced(x.numpy().T.copy().T), mlp(x))  # Fortran order
    # files and bytes that are not models
    with pytest.raises(OSError):
        seam.load(str(work / "missing.onnx"))
    with pytest.raises(ValueError):
        seam.trace(b"this is not onnx", None)
    bad = work / "bad.json"
    bad.write_text('{"name": "npu", "nope": 1}')
    with pytest.raises(ValueError, match="nope"):
        seam.trace(mlp, x, targets=(str(bad),))
    with pytest.raises(TypeError):
        seam.trace(12, None)
    # the model still runs after all that
    close(traced(x), mlp(x))


# ---- threads ---------------------------------------------------------------------

def run_threads(fns):
    errors, results = [], [None] * len(fns)

    def wrap(k, f):
        try:
            results[k] = f()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=wrap, args=(k, f)) for k, f in enumerate(fns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    return results


def test_threads(traced, mlp, x, work):
    path = str(work / "threads.onnx")
    traced.save(path)
    rng = np.random.default_rng(0)
    feeds = [rng.random((8, 64), dtype=np.float32) for _ in range(6)]
    s1 = seam.Session(path, threads=1)
    assert [i["name"] for i in s1.inputs] == ["x"] and len(s1.outputs) == 1
    out = s1.outputs[0]["name"]
    serial = [s1.run({"x": f})[out] for f in feeds]
    for f, y in zip(feeds, serial):
        close(y, mlp(torch.from_numpy(f)))

    def many(session, k):
        return lambda: [session.run({"x": feeds[(k + j) % 6]})[out] for j in range(12)]

    # two threads on one session: runs take turns, results as the serial run
    for k, got in enumerate(run_threads([many(s1, 0), many(s1, 3)])):
        for j, y in enumerate(got):
            assert np.array_equal(y, serial[(3 * k + j) % 6])
    # two sessions at once
    s2 = seam.Session(path, threads=1)
    for k, got in enumerate(run_threads([many(s1, 1), many(s2, 2)])):
        for j, y in enumerate(got):
            assert np.array_equal(y, serial[(k + 1 + j) % 6])


def test_symbolic_dims_session(work):
    """A model with a symbolic batch and sequence, partitioned for dnnl
    without shapes and saved: one seam.Session runs it at three shapes
    against torch; a new shape compiles its device subgraphs, a seen one
    compiles nothing (Session.stats)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)).eval()
    path = os.path.join(work, "symbolic.onnx")
    torch.onnx.export(net, (torch.randn(2, 5, 16),), path, input_names=["x"], output_names=["y"], opset_version=13,
                      dynamic_axes={"x": {0: "B", 1: "S"}, "y": {0: "B", 1: "S"}})
    part = os.path.join(work, "symbolic.part.onnx")
    r = subprocess.run([CLI, "partition", path, "--target", "dnnl", "--placement", "capability", "-o", part],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    s = seam.Session(part)
    before = s.stats()
    assert before["compiles"] == 0  # nothing is known to compile before a run
    seen = []
    for shape in ((2, 5, 16), (1, 9, 16), (3, 2, 16), (2, 5, 16)):
        x = np.random.RandomState(len(seen)).randn(*shape).astype(np.float32)
        y = s.run({"x": x})["y"]
        with torch.no_grad():
            want = net(torch.from_numpy(x)).numpy()
        assert seamtest.rel_err(y, want) <= TOL, (y.shape, want.shape)
        seen.append(s.stats())
    assert seen[0]["run_compiles"] >= 1 and seen[2]["run_compiles"] == 3 * seen[0]["run_compiles"]
    assert seen[3]["run_compiles"] == seen[2]["run_compiles"] and seen[3]["cache_hits"] > seen[2]["cache_hits"]
    assert seen[3]["cpu_shapes"] == 0
    with pytest.raises(ValueError):
        s.set_shape_cache(0)


# ---- OpenBLAS's kernels: chosen before it loads, or said when too late ----

CORENAME = ("import ctypes; lib = ctypes.CDLL('libopenblas.so.0'); "
            "lib.openblas_get_corename.restype = ctypes.c_char_p; print(lib.openblas_get_corename().decode())")


def _python(code, **env):
    e = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)


def test_openblas_kernels():
    if not all(f in seam._cpu_flags() for f in seam._AVX512):
        pytest.skip("the CPU has no AVX-512: OpenBLAS's own choice stands")
    # seam imported first: it chooses the skylake-class kernels, silently
    r = _python("import seam; " + CORENAME)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().lower().encode() in seam._SKYLAKE_CLASS and "OPENBLAS_CORETYPE" not in r.stderr
    # numpy first: too late to choose; if OpenBLAS took older kernels, one warning with the fix
    r = _python("import numpy, seam; " + CORENAME)
    assert r.returncode == 0, r.stderr
    took = r.stdout.strip().lower().encode()
    warned = r.stderr.count("OPENBLAS_CORETYPE=SKYLAKEX")
    assert warned == (0 if took in seam._SKYLAKE_CLASS else 1), (took, r.stderr)
    # the user's choice is left alone, and nothing is said
    r = _python("import numpy, seam; " + CORENAME, OPENBLAS_CORETYPE="Haswell")
    assert r.returncode == 0 and r.stdout.strip().lower() == "haswell" and "OPENBLAS" not in r.stderr, r.stderr


def _override_model(tmp_path, name, node, ins, out_shape, inits):
    """One node whose listed initializers are also graph inputs (a caller
    may feed them)."""
    from onnx import TensorProto, helper, numpy_helper
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(a.shape)) for n, a in ins.items()]
    g = helper.make_graph([node], name, vi, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                          [numpy_helper.from_array(a, n) for n, a in inits.items()])
    path = str(tmp_path / (name + ".onnx"))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), path)
    return path


def test_fed_initializers_override_prepared_weights(tmp_path):
    """The CPU kernels prepare constant weights at session creation (BatchNorm's
    scale and shift, LSTM's packed R, Conv's packed or Winograd weights); an
    initializer that is also a graph input may be fed, and the run must use
    what was fed."""
    from onnx import helper
    rng = np.random.RandomState(5)
    C = 64
    x = rng.randn(1, C, 9, 9).astype(np.float32)
    sc, b, mu, var = [(rng.rand(C) + 0.5).astype(np.float32) for _ in range(4)]
    path = _override_model(tmp_path, "bn", helper.make_node("BatchNormalization", ["x", "sc", "b", "mu", "var"], ["y"]),
                           {"x": x, "sc": sc, "b": b, "mu": mu, "var": var}, list(x.shape),
                           {"sc": sc, "b": b, "mu": mu, "var": var})
    m = seam.load(path, targets=[])
    sc2 = (3 * sc).astype(np.float32)
    got = m.run({"x": x, "sc": sc2})["y"]
    ref = torch.nn.functional.batch_norm(torch.from_numpy(x), torch.from_numpy(mu), torch.from_numpy(var),
                                         torch.from_numpy(sc2), torch.from_numpy(b), eps=1e-5).numpy()
    assert seamtest.rel_err(got, ref) <= 1e-5

    # Conv 3x3 with 64 channels each side (Winograd's sizes) and LSTM's R
    w = (rng.randn(C, C, 3, 3) * 0.05).astype(np.float32)
    path = _override_model(tmp_path, "conv", helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]),
                           {"x": x, "w": w}, list(x.shape), {"w": w})
    w2 = (rng.randn(C, C, 3, 3) * 0.05).astype(np.float32)
    got = seam.load(path, targets=[]).run({"x": x, "w": w2})["y"]
    ref = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w2), padding=1).numpy()
    assert seamtest.rel_err(got, ref) <= 1e-4

    H, In, T = 16, 8, 5
    xs = rng.randn(T, 1, In).astype(np.float32)
    W = (rng.randn(1, 4 * H, In) * 0.3).astype(np.float32)
    R = (rng.randn(1, 4 * H, H) * 0.3).astype(np.float32)
    path = _override_model(tmp_path, "lstm", helper.make_node("LSTM", ["x", "W", "R"], ["y"], hidden_size=H),
                           {"x": xs, "W": W, "R": R}, [T, 1, 1, H], {"W": W, "R": R})
    R2 = (rng.randn(1, 4 * H, H) * 0.3).astype(np.float32)
    got = seam.load(path, targets=[]).run({"x": xs, "R": R2})["y"]
    lstm = torch.nn.LSTM(In, H)
    with torch.no_grad():  # ONNX's gates i o f c, torch's i f g o
        order = [0, 2, 3, 1]
        lstm.weight_ih_l0.copy_(torch.from_numpy(W[0].reshape(4, H, In)[order].reshape(4 * H, In)))
        lstm.weight_hh_l0.copy_(torch.from_numpy(R2[0].reshape(4, H, H)[order].reshape(4 * H, H)))
        lstm.bias_ih_l0.zero_()
        lstm.bias_hh_l0.zero_()
        ref = lstm(torch.from_numpy(xs))[0].numpy()
    assert seamtest.abs_err(got[:, 0], ref) <= 1e-5


# ---- values of every type (issue 29) ----------------------------------------

def _save(g, path, opset=18):
    m = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def test_sequences_and_optionals_round_trip(work):
    """A model taking a sequence and an optional and returning a sequence,
    an optional and a tensor: lists in and out, None for an empty optional,
    against numpy; the model's types named in .inputs/.outputs."""
    h, T = onnx.helper, onnx.TensorProto
    seq_f = h.make_sequence_type_proto(h.make_tensor_type_proto(T.FLOAT, None))
    opt_f = h.make_optional_type_proto(h.make_tensor_type_proto(T.FLOAT, None))
    g = h.make_graph(
        [h.make_node("SequenceInsert", ["s", "x"], ["s2"]),          # s + [x]
         h.make_node("ConcatFromSequence", ["s2"], ["cat"], axis=0),
         h.make_node("OptionalHasElement", ["o"], ["has"]),
         h.make_node("Identity", ["o"], ["o_out"])],
        "values",
        [h.make_value_info("s", seq_f), h.make_tensor_value_info("x", T.FLOAT, [None, 3]), h.make_value_info("o", opt_f)],
        [h.make_value_info("s2", seq_f), h.make_tensor_value_info("cat", T.FLOAT, [None, 3]),
         h.make_tensor_value_info("has", T.BOOL, []), h.make_value_info("o_out", opt_f)])
    m = seam.load(_save(g, os.path.join(work, "values.onnx")))
    assert [i["dtype"] for i in m.inputs] == ["sequence(float32)", "float32", "optional(float32)"]
    assert [o["dtype"] for o in m.outputs] == ["sequence(float32)", "float32", "bool", "optional(float32)"]
    rng = np.random.default_rng(3)
    parts = [rng.standard_normal((k, 3)).astype(np.float32) for k in (2, 1, 4)]
    x = rng.standard_normal((3, 3)).astype(np.float32)
    out = m.run({"s": parts, "x": x, "o": None})
    assert isinstance(out["s2"], list) and len(out["s2"]) == 4
    for got, want in zip(out["s2"], parts + [x]):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(out["cat"], np.concatenate(parts + [x]))
    assert not out["has"] and out["o_out"] is None
    out = m.run({"s": [], "x": x, "o": x * 2})  # an empty sequence; an optional holding a tensor
    assert len(out["s2"]) == 1 and bool(out["has"])
    np.testing.assert_array_equal(out["o_out"], x * 2)
    # torch in, torch out, lists included
    res = m(list(map(torch.from_numpy, parts)), torch.from_numpy(x), None)
    assert isinstance(res[0], list) and isinstance(res[0][0], torch.Tensor) and res[3] is None
    np.testing.assert_array_equal(res[1].numpy(), np.concatenate(parts + [x]))
    with pytest.raises(ValueError, match="input 'x'"):
        m.run({"s": parts, "x": [x], "o": None})
    with pytest.raises(ValueError, match="'s'"):
        m.run({"s": [parts[0], parts[1].astype(np.int64)], "x": x, "o": None})


def test_strings_round_trip(work):
    """A string model: numpy str arrays in and out (non-ASCII, empty
    strings), bytes in, bytes that are not UTF-8 back as bytes."""
    h, T = onnx.helper, onnx.TensorProto
    g = h.make_graph([h.make_node("Identity", ["s"], ["y"]),
                      h.make_node("StringNormalizer", ["w"], ["up"], case_change_action="UPPER")], "strings",
                     [h.make_tensor_value_info("s", T.STRING, [2, 2]), h.make_tensor_value_info("w", T.STRING, [3])],
                     [h.make_tensor_value_info("y", T.STRING, [2, 2]), h.make_tensor_value_info("up", T.STRING, [3])])
    m = seam.load(_save(g, os.path.join(work, "strings.onnx")))
    s = np.array([["grüße", ""], ["日本語", "x" * 50]])
    w = np.array(["monday", "Tuesday", "x1"])
    out = m.run({"s": s, "w": w})
    assert out["y"].dtype.kind == "U" and out["up"].dtype.kind == "U"
    np.testing.assert_array_equal(out["y"], s)
    np.testing.assert_array_equal(out["up"], np.char.upper(w))
    raw = np.array([[b"\xff\x00z", b"ok"], [b"", b"q"]], dtype=object)
    out = m.run({"s": raw, "w": w})
    assert out["y"].dtype == object and list(out["y"].ravel()) == list(raw.ravel())
    out = m.run({"s": np.array([[b"a", b"bc"], [b"", b"d"]]), "w": w})  # numpy bytes (S) arrays
    np.testing.assert_array_equal(out["y"], np.array([["a", "bc"], ["", "d"]]))


def test_bfloat16_bits(work):
    """bfloat16 in and out as its uint16 bits (torch.bfloat16 with torch)."""
    h, T = onnx.helper, onnx.TensorProto
    g = h.make_graph([h.make_node("Cast", ["b"], ["f"], to=T.FLOAT), h.make_node("Identity", ["b"], ["same"])], "bf16",
                     [h.make_tensor_value_info("b", T.BFLOAT16, [3])],
                     [h.make_tensor_value_info("f", T.FLOAT, [3]), h.make_tensor_value_info("same", T.BFLOAT16, [3])])
    m = seam.load(_save(g, os.path.join(work, "bf16.onnx")))
    assert m.outputs[1]["dtype"] == "bfloat16"
    tb = torch.tensor([1.5, -2.0, 3e38], dtype=torch.bfloat16)
    f, same = m(tb)
    assert same.dtype == torch.bfloat16 and torch.equal(same, tb)
    np.testing.assert_array_equal(f.numpy(), tb.float().numpy())
    bits = tb.view(torch.int16).numpy().view(np.uint16)
    out = m.run({"b": bits})
    assert out["same"].dtype == np.uint16 and out["same"].tolist() == bits.tolist()


def test_float8_bits(work):
    """float8 in and out as its uint8 bits: a float32 through E4M3FN (448 the
    largest, ties to even) and a float8 input read as bits."""
    h, T = onnx.helper, onnx.TensorProto
    g = h.make_graph([h.make_node("Cast", ["x"], ["y8"], to=17), h.make_node("Cast", ["b8"], ["bf"], to=T.FLOAT)],
                     "f8", [h.make_tensor_value_info("x", T.FLOAT, [5]), h.make_tensor_value_info("b8", 17, [3])],
                     [h.make_tensor_value_info("y8", 17, [5]), h.make_tensor_value_info("bf", T.FLOAT, [3])])
    m = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", 19)])
    m.ir_version = 9
    path = os.path.join(work, "f8.onnx")
    onnx.save(m, path)
    model = seam.load(path)
    assert model.outputs[0]["dtype"] == "float8e4m3fn"
    out = model.run({"x": np.array([1.0, -1.0625, 1e9, 0.0, 1.1875], np.float32),
                     "b8": np.array([0x38, 0x7E, 0x01], np.uint8)})
    # 1.0 = 0x38; -1.0625 ties between 1.0 and 1.125: even 1.0 (0xB8); 1e9 saturates to 448 (0x7E);
    # 1.1875 ties between 1.125 (0x39) and 1.25 (0x3A): even 0x3A
    assert out["y8"].dtype == np.uint8 and out["y8"].tolist() == [0x38, 0xB8, 0x7E, 0x00, 0x3A]
    assert out["bf"].tolist() == [1.0, 448.0, 2.0 ** -9]


def test_rewrite_heals_for_a_rules_target(work):
    """A torch model with reflection padding between two convs, traced for a
    rules target with Conv, Slice and Concat but no Pad: the Pad is written
    as Slices and a Concat (one device subgraph, a rewrite note), outputs
    as torch's; with rewrite=False, two device subgraphs."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Conv2d(3, 8, 3)
            self.pad = nn.ReflectionPad2d((1, 2, 2, 1))
            self.b = nn.Conv2d(8, 4, 3)

        def forward(self, x):
            return self.b(self.pad(self.a(x)))

    torch.manual_seed(0)
    net = Net().eval()
    x = torch.randn(1, 3, 16, 16)
    rules = os.path.join(work, "no_pad.json")
    with open(rules, "w") as f:
        json.dump({"name": "no_pad", "default": False, "ops": {"Conv": True, "Slice": True, "Concat": True}}, f)
    healed = seam.trace(net, x, targets=[rules])
    devices = [s for s in healed.plan["subgraphs"] if s["target"] != "cpu"]
    assert len(devices) == 1 and any(n.startswith("rewrite:") for n in healed.plan["notes"])
    with torch.no_grad():
        want = net(x).numpy()
    close(healed(x.numpy()), want)
    kept = seam.trace(net, x, targets=[rules], partitioner_config=seam.PartitionerConfig(rewrite=False))
    assert len([s for s in kept.plan["subgraphs"] if s["target"] != "cpu"]) == 2
