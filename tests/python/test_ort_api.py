"""seam.Session on plain models and seam.InferenceSession, onnxruntime's
API, against the references: the seam CLI for placement (`seam partition
--json`, the plan `seam run --target` applies), ONNX Runtime (npm's
onnxruntime-node) for inputs, outputs and values on every test model, and
torch for a model exported here. Zero copy is checked by addresses.

Run: PYTHONPATH=build/python SEAM_CLI=build/seam SEAM_MODELS_DIR=build/models \\
     /usr/bin/python3 -m pytest tests/python/test_ort_api.py
"""
import glob
import json
import logging
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
import torch
import torch.nn as nn

import seam

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

if "dnnl" not in seam.builtin_targets():
    pytest.skip("this seam was built without oneDNN: the sessions here place onto dnnl", allow_module_level=True)

CLI = os.environ.get("SEAM_CLI")
MODELS = os.environ.get("SEAM_MODELS_DIR", "")
TARGETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "targets")


def models():
    found = sorted(glob.glob(os.path.join(MODELS, "*.onnx"))) if MODELS else []
    return [os.path.basename(p)[:-5] for p in found if os.path.exists(p[:-5] + ".input.npy")]


def model_path(name):
    return os.path.join(MODELS, name + ".onnx")


def need_models():
    if not models():
        pytest.skip("SEAM_MODELS_DIR has no test models (the `models` fixture writes them)")


def cli(*args, json_out=True):
    if not CLI:
        pytest.skip("SEAM_CLI is not set")
    r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout) if json_out else r


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    base = os.environ.get("SEAM_TEST_WORK")
    if base:
        os.makedirs(base, exist_ok=True)
        d = os.path.join(base, "ort_api")
        os.makedirs(d, exist_ok=True)
        return d
    return str(tmp_path_factory.mktemp("ort_api"))


class Net(nn.Module):
    """A small conv net with a symbolic batch: conv, relu, pool, linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        y = nn.functional.adaptive_avg_pool2d(y, 4)
        return self.fc(y.flatten(1))


@pytest.fixture(scope="module")
def net_path(work):
    torch.manual_seed(0)
    net = Net().eval()
    x = torch.rand(2, 3, 8, 8)
    p = os.path.join(work, "net.onnx")
    torch.onnx.export(net, (x,), p, input_names=["x"], output_names=["y"], opset_version=17,
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    return p, net


def test_installed_package_is_the_wheels():
    """Under scripts/wheel_test.sh: seam, its extension and libseam come
    from the virtual environment the wheel was installed into."""
    venv = os.environ.get("SEAM_EXPECT_PACKAGE")
    if not venv:
        pytest.skip("not run from an installed wheel (scripts/wheel_test.sh sets SEAM_EXPECT_PACKAGE)")
    venv = os.path.realpath(venv)
    assert os.path.realpath(seam.__file__).startswith(venv), seam.__file__
    assert os.path.realpath(seam._seam.__file__).startswith(venv), seam._seam.__file__
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "libseam" in line}
    assert libs and all(os.path.realpath(p).startswith(venv) for p in libs), libs
    pkg = os.path.dirname(seam.__file__)
    assert any(f.startswith("libseam.so") for f in os.listdir(pkg)), os.listdir(pkg)


# ---- a Session on a plain model places it as `seam run --target` does ---------

@pytest.mark.parametrize("name", ["resnet18", "googlenet", "mobilenet_v2", "transformer_encoder",
                                  "transformer_encoder_dyn", "topk_cumsum"])
def test_plain_model_plan_is_the_clis(name):
    need_models()
    s = seam.Session(model_path(name), targets=("dnnl",))
    assert s.plan == cli("partition", model_path(name), "--target", "dnnl", "--json")
    assert s.plan["subgraphs"], name
    x = np.load(os.path.join(MODELS, name + ".input.npy"))
    out = s.run({s.inputs[0]["name"]: x})
    for k, o in enumerate(s.outputs):
        want = np.load(os.path.join(MODELS, f"{name}.expected.{k}.npy"))
        assert seamtest.rel_err(out[o["name"]], want) < 1e-4, (name, o["name"])
    st = s.stats()
    on_dnnl = sum(1 for sg in s.plan["subgraphs"] if sg["target"] == "dnnl")
    assert st["compiles"] >= on_dnnl > 0  # the dnnl subgraphs were compiled: not silently on the CPU


def test_plain_model_options_as_keywords(net_path):
    p, _ = net_path
    s = seam.Session(p, targets=("dnnl",), cpu_ops=["Relu"], placement="capability", shapes={"x": [2, 3, 8, 8]})
    want = cli("partition", p, "--target", "dnnl", "--cpu-ops", "Relu", "--placement", "capability",
               "--shape", "x=2x3x8x8", "--json")
    assert s.plan == want
    assert all(n["target"] == "cpu" for n in s.plan["nodes"] if n["op"] == "Relu")
    cfg = seam.PartitionerConfig(placement="capability", cpu_ops=["Relu"], model_support_percentage_threshold=0.0,
                                 on_violation="fallback")
    assert seam.Session(p, targets=("dnnl",), partitioner_config=cfg, shapes={"x": [2, 3, 8, 8]}).plan == want
    with pytest.raises(TypeError, match="unknown option"):
        seam.Session(p, targets=("dnnl",), min_subgraph_sise=2)
    with pytest.raises(TypeError, match="not both"):
        seam.Session(p, targets=("dnnl",), partitioner_config=cfg, cpu_ops=["Relu"])


def test_no_targets_runs_on_the_cpu_and_saved_runs_as_saved(net_path, work):
    p, net = net_path
    x = np.random.default_rng(1).random((2, 3, 8, 8), dtype=np.float32)
    want = net(torch.from_numpy(x)).detach().numpy()
    cpu = seam.Session(p)
    assert cpu.plan is None and cpu.stats()["compiles"] == 0
    assert seamtest.rel_err(cpu.run({"x": x})["y"], want) < 1e-5
    placed = seam.Session(p, targets=("dnnl",), shapes={"x": [2, 3, 8, 8]}, placement="capability")
    saved = os.path.join(work, "net.placed.onnx")
    placed.save(saved)
    again = seam.Session(saved)  # ai.seam Subgraph nodes: runs as saved, no placement
    assert again.plan is None
    assert seamtest.rel_err(again.run({"x": x})["y"], want) < 1e-4
    assert again.stats()["compiles"] >= 1  # its dnnl subgraph, at the first run's shapes


def test_a_target_that_takes_nothing_says_so_once(net_path, caplog):
    p, _ = net_path
    with caplog.at_level(logging.WARNING, logger="seam"):
        s = seam.Session(p, targets=(os.path.join(TARGETS, "int8_npu.json"),))
    notes = [r.getMessage() for r in caplog.records if "supports none of this model" in r.getMessage()]
    assert len(notes) == 1, [r.getMessage() for r in caplog.records]
    assert "'int8npu'" in notes[0] and "Conv 1" in notes[0]
    assert all(sg["target"] == "cpu" for sg in s.plan["subgraphs"])
    # the CLI says the same on stderr
    r = cli("run", p, "--target", os.path.join(TARGETS, "int8_npu.json"), "--shape", "x=1x3x8x8", json_out=False)
    assert r.stderr.count("supports none of this model") == 1, r.stderr


def _cpu_has_vnni():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        flags = []
    return "avx512_vnni" in flags or "avx_vnni" in flags


def test_quantized_model_units_placed_whole(net_path, work, caplog):
    p, _ = net_path
    rng = np.random.default_rng(2)
    q = os.path.join(work, "net.int8.onnx")
    seam.quantize(p, q, [{"x": rng.random((2, 3, 8, 8), dtype=np.float32)} for _ in range(3)])
    with caplog.at_level(logging.WARNING, logger="seam"):
        s = seam.Session(q, targets=("dnnl",), shapes={"x": [2, 3, 8, 8]}, placement="capability")
    assert any("QDQ units" in r.getMessage() for r in caplog.records)
    assert s.plan == cli("partition", q, "--target", "dnnl", "--shape", "x=2x3x8x8", "--placement", "capability",
                         "--json")
    ops = {n["op"]: n["target"] for n in s.plan["nodes"]}
    # (without VNNI dnnl refuses int8 products, which would saturate there:
    # docs/quantized.md, "CPUs without VNNI"; the plan's note says so)
    assert ops.get("QLinearConv") == ("dnnl" if _cpu_has_vnni() else "cpu"), ops
    if not _cpu_has_vnni():
        assert any("without VNNI" in r.getMessage() for r in caplog.records)
    x = rng.random((2, 3, 8, 8), dtype=np.float32)
    r = cli("run", q, "--target", "dnnl", "--placement", "capability", "--input", f"x={_npy(work, 'qx', x)}",
            "--output-dir", os.path.join(work, "qout"), "--quiet", json_out=False)
    assert r.returncode == 0
    assert np.array_equal(s.run({"x": x})["y"], np.load(os.path.join(work, "qout", "y.npy")))


def _npy(work, name, a):
    path = os.path.join(work, name + ".npy")
    np.save(path, a)
    return path


# ---- onnxruntime's API: a script written for onnxruntime, only the import changed ----

# Retyped from ONNX Runtime's Python API summary and tutorial (their
# usage as documented), with `import onnxruntime as rt` as the first line.
ORT_SCRIPT = '''
import onnxruntime as rt
import numpy
import json, sys

model_path, input_path, out_dir = sys.argv[1:4]
so = rt.SessionOptions()
so.intra_op_num_threads = 2
so.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_ALL
sess = rt.InferenceSession(model_path, so, providers=rt.get_available_providers())
input_name = sess.get_inputs()[0].name
input_shape = sess.get_inputs()[0].shape
input_type = sess.get_inputs()[0].type
label_name = sess.get_outputs()[0].name
x = numpy.load(input_path)
pred_onx = sess.run([label_name], {input_name: x})[0]
everything = sess.run(None, {input_name: x})
meta = sess.get_modelmeta()
info = {
    "inputs": [{"name": i.name, "type": i.type, "shape": i.shape} for i in sess.get_inputs()],
    "outputs": [{"name": o.name, "type": o.type, "shape": o.shape} for o in sess.get_outputs()],
    "providers": sess.get_providers(),
    "device": rt.get_device(),
    "meta": {"producer_name": meta.producer_name, "graph_name": meta.graph_name, "domain": meta.domain,
             "description": meta.description, "version": meta.version,
             "custom_metadata_map": meta.custom_metadata_map},
}
numpy.save(out_dir + "/first.npy", pred_onx)
for k, y in enumerate(everything):
    numpy.save(out_dir + "/all_%d.npy" % k, y)
with open(out_dir + "/info.json", "w") as f:
    json.dump(info, f)
'''

_ORT_TYPE = {"float32": "tensor(float)", "int64": "tensor(int64)", "int32": "tensor(int32)", "bool": "tensor(bool)",
             "float64": "tensor(double)", "uint8": "tensor(uint8)", "int8": "tensor(int8)"}


def _same_dim(mine, theirs):
    """A dim as ONNX Runtime declares it: seam says the same, or knows a
    number where the file's declaration has only a name."""
    return mine == theirs or (isinstance(theirs, str) and isinstance(mine, int))


def test_onnxruntime_script_unchanged_but_the_import(work):
    need_models()
    problem = seamtest.ort_problem()
    if problem:
        pytest.skip(problem)
    script = os.path.join(work, "ort_script.py")
    with open(script, "w") as f:
        f.write(ORT_SCRIPT.replace("import onnxruntime as rt", "import seam as rt", 1))
    env = dict(os.environ)
    for name in models():
        path, inp = model_path(name), os.path.join(MODELS, name + ".input.npy")
        mine, theirs = os.path.join(work, "seam_" + name), os.path.join(work, "ort_" + name)
        os.makedirs(mine, exist_ok=True)
        r = subprocess.run([sys.executable, script, path, inp, mine], capture_output=True, text=True, env=env,
                           timeout=300)
        assert r.returncode == 0, (name, r.stderr[-3000:])
        with open(os.path.join(mine, "info.json")) as f:
            info = json.load(f)
        r, _ = seamtest.ort_run(path, {info["inputs"][0]["name"]: inp}, theirs, meta=os.path.join(theirs + ".json"))
        assert r.returncode == 0, (name, r.stderr)
        with open(theirs + ".json") as f:
            ort = json.load(f)
        for side in ("inputs", "outputs"):
            assert [v["name"] for v in info[side]] == [v["name"] for v in ort[side]], (name, side)
            for a, b in zip(info[side], ort[side]):
                assert a["type"] == _ORT_TYPE[b["type"]], (name, a, b)
                if side == "inputs":
                    assert a["shape"] == b["shape"], (name, a, b)
                else:
                    assert len(a["shape"]) == len(b["shape"]) and all(map(_same_dim, a["shape"], b["shape"])), \
                        (name, a, b)
        assert info["providers"] == ["DnnlExecutionProvider", "CPUExecutionProvider"]
        assert info["device"] == "CPU-DNNL"
        assert info["meta"]["producer_name"] == "pytorch"
        for k, o in enumerate(ort["outputs"]):
            want = np.load(os.path.join(theirs, o["name"] + ".npy"))
            got = np.load(os.path.join(mine, f"all_{k}.npy"))
            assert got.dtype == want.dtype and got.shape == want.shape, (name, o["name"])
            assert seamtest.rel_err(got, want) < 1e-4, (name, o["name"], seamtest.rel_err(got, want))
        assert np.array_equal(np.load(os.path.join(mine, "first.npy")), np.load(os.path.join(mine, "all_0.npy")))


def test_inference_session_api(net_path, work, caplog):
    p, net = net_path
    x = np.random.default_rng(3).random((2, 3, 8, 8), dtype=np.float32)
    want = net(torch.from_numpy(x)).detach().numpy()
    with open(p, "rb") as f:
        data = f.read()
    so = seam.SessionOptions()
    so.intra_op_num_threads = 1
    so.add_free_dimension_override_by_name("batch", 2)
    so.optimized_model_filepath = os.path.join(work, "net.optimized.onnx")
    s = seam.InferenceSession(data, so, providers=[("DnnlExecutionProvider", {"fusion": "off"}), "CPUExecutionProvider"])
    # the override fixed the batch: seam says so (onnxruntime keeps showing the file's 'batch')
    assert s.get_inputs()[0].shape == [2, 3, 8, 8] and s.get_inputs()[0].type == "tensor(float)"
    assert repr(s.get_outputs()[0]) == "NodeArg(name='y', type='tensor(float)', shape=[2, 10])"
    plain = seam.InferenceSession(p, providers=["CPUExecutionProvider"])
    assert plain.get_inputs()[0].shape == ["batch", 3, 8, 8]
    assert s.get_provider_options()["DnnlExecutionProvider"] == {"fusion": "off"}
    assert s.get_session_options() is so
    assert not any(n["reason"] == "unsupported" for n in s.plan["nodes"])  # the batch fixed: shapes folded
    assert os.path.exists(so.optimized_model_filepath)
    assert seamtest.rel_err(s.run(["y"], {"x": x}, seam.RunOptions())[0], want) < 1e-4
    assert seamtest.rel_err(s.run([], {"x": x})[0], want) < 1e-4
    with pytest.raises(ValueError, match="invalid output name"):
        s.run(["z"], {"x": x})
    with pytest.raises(ValueError, match="'x'"):
        s.run(None, {"x": x.astype(np.float64)})
    with pytest.raises(ValueError):
        s.run(None, {})
    with caplog.at_level(logging.WARNING, logger="seam"):
        t = seam.InferenceSession(p, providers=["TensorrtExecutionProvider", "CPUExecutionProvider"])
    assert any("TensorrtExecutionProvider" in r.getMessage() for r in caplog.records)
    assert t.get_providers() == ["CPUExecutionProvider"] and t.plan is None
    with pytest.raises(ValueError, match="providers must be a list"):
        seam.InferenceSession(p, providers="CPUExecutionProvider")
    with pytest.raises(TypeError):
        seam.InferenceSession(12)
    with pytest.raises(AttributeError):
        so.intra_op_num_thread = 2  # a misspelt option fails, as on onnxruntime's pybind objects


def test_profiling_writes_trace_events(net_path, work, monkeypatch):
    p, _ = net_path
    monkeypatch.chdir(work)
    so = seam.SessionOptions()
    so.enable_profiling = True
    s = seam.InferenceSession(p, so, providers=["DnnlExecutionProvider"])
    x = np.ones((2, 3, 8, 8), np.float32)
    s.run(None, {"x": x})
    s.run(None, {"x": x})
    name = s.end_profiling()
    with open(name) as f:
        events = json.load(f)
    runs = [e for e in events if e["name"] == "model_run"]
    nodes = [e for e in events if e["cat"] == "Node"]
    assert len(runs) == 2 and nodes and all(e["dur"] >= 0 for e in nodes)
    assert runs[1]["ts"] > runs[0]["ts"]


# ---- zero copy: inputs read in place, outputs written into given arrays, DLPack ----

def test_inputs_read_in_place_outputs_into_buffers(net_path):
    p, net = net_path
    s = seam.Session(p, targets=("dnnl",), shapes={"x": [2, 3, 8, 8]})
    x = np.random.default_rng(4).random((2, 3, 8, 8), dtype=np.float32)
    want = net(torch.from_numpy(x)).detach().numpy()
    s.run({"x": x})
    assert s.stats()["input_copies"] == 0
    s.run({"x": np.asfortranarray(x)})  # not C-contiguous: copied, and counted
    assert s.stats()["input_copies"] == 1
    buf = np.full((2, 10), np.nan, np.float32)
    out = s.run({"x": x}, outputs={"y": buf})
    assert out["y"] is buf and seamtest.rel_err(buf, want) < 1e-4
    assert s.stats()["output_copies"] == 0
    # the buffer is bound for that run only: the next run leaves it alone
    before = buf.copy()
    again = s.run({"x": x * 2})
    assert np.array_equal(buf, before) and again["y"].ctypes.data != buf.ctypes.data
    with pytest.raises(ValueError, match="is float32"):
        s.run({"x": x}, outputs={"y": np.zeros((2, 10), np.float64)})
    with pytest.raises(ValueError, match="needs 80 bytes"):
        s.run({"x": x}, outputs={"y": np.zeros((2, 5), np.float32)})
    with pytest.raises(ValueError, match="C-contiguous"):
        s.run({"x": x}, outputs={"y": np.zeros((10, 2), np.float32).T})
    with pytest.raises(ValueError, match="no output 'z'"):
        s.run({"x": x}, outputs={"z": np.zeros((2, 10), np.float32)})
    # a refused second array leaves the first unbound too: the next run does not write into it
    first = np.zeros((2, 10), np.float32)
    with pytest.raises(ValueError, match="no output 'z'"):
        s.run({"x": x}, outputs={"y": first, "z": np.zeros((2, 10), np.float32)})
    s.run({"x": x})
    assert not first.any()


def test_io_binding_reads_and_writes_caller_memory(net_path):
    p, net = net_path
    s = seam.InferenceSession(p, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(5).random((2, 3, 8, 8), dtype=np.float32)
    y = np.zeros((2, 10), np.float32)
    io = s.io_binding()
    io.bind_input("x", "cpu", 0, np.float32, x.shape, x.ctypes.data)
    io.bind_output("y", "cpu", 0, np.float32, y.shape, y.ctypes.data)
    s.run_with_iobinding(io)
    want = net(torch.from_numpy(x)).detach().numpy()
    assert seamtest.rel_err(y, want) < 1e-5
    assert io.get_outputs()[0].ctypes.data == y.ctypes.data
    assert s._session.stats()["input_copies"] == 0
    io2 = s.io_binding()
    io2.bind_cpu_input("x", x)
    io2.bind_output("y")
    s.run_with_iobinding(io2)
    assert seamtest.rel_err(io2.copy_outputs_to_cpu()[0], want) < 1e-5
    with pytest.raises(ValueError, match="host memory"):
        io2.bind_output("y", "cuda", 0, np.float32, y.shape, y.ctypes.data)


def test_dlpack_round_trip_with_torch(net_path):
    p, net = net_path
    s = seam.Session(p, targets=("dnnl",), shapes={"x": [2, 3, 8, 8]})
    xt = torch.rand(2, 3, 8, 8)
    out = s.run({"x": xt})  # a torch tensor: read in place
    assert s.stats()["input_copies"] == 0
    yt = torch.from_dlpack(out["y"])  # and back to torch without a copy
    assert yt.data_ptr() == out["y"].ctypes.data
    assert torch.allclose(yt, net(xt).detach(), rtol=1e-4, atol=1e-5)
    buf = torch.empty(2, 10)
    s.run({"x": xt}, outputs={"y": buf.numpy()})  # a torch tensor's memory as the output buffer
    assert torch.allclose(buf, net(xt).detach(), rtol=1e-4, atol=1e-5)


def test_values_of_every_kind(tmp_path):
    """Sequences, optionals and strings through the onnxruntime API: lists,
    None and string arrays in and out; NodeArg types as onnxruntime names
    them (seq(tensor(float)), optional(tensor(float)))."""
    h, T = onnx.helper, onnx.TensorProto
    seq_f = h.make_sequence_type_proto(h.make_tensor_type_proto(T.FLOAT, None))
    opt_f = h.make_optional_type_proto(h.make_tensor_type_proto(T.FLOAT, None))
    g = h.make_graph([h.make_node("ConcatFromSequence", ["s"], ["cat"], axis=0),
                      h.make_node("SplitToSequence", ["cat"], ["parts"], axis=0, keepdims=1),
                      h.make_node("OptionalHasElement", ["o"], ["has"]),
                      h.make_node("Identity", ["w"], ["w_out"])], "kinds",
                     [h.make_value_info("s", seq_f), h.make_value_info("o", opt_f),
                      h.make_tensor_value_info("w", T.STRING, [2])],
                     [h.make_tensor_value_info("cat", T.FLOAT, None), h.make_value_info("parts", seq_f),
                      h.make_tensor_value_info("has", T.BOOL, []), h.make_tensor_value_info("w_out", T.STRING, [2])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
    m.ir_version = 8
    path = str(tmp_path / "kinds.onnx")
    onnx.save(m, path)
    sess = seam.InferenceSession(path)
    assert [a.type for a in sess.get_inputs()] == ["seq(tensor(float))", "optional(tensor(float))", "tensor(string)"]
    assert sess.get_outputs()[1].type == "seq(tensor(float))"
    a, b = np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32)[None]
    cat, parts, has, w = sess.run(None, {"s": [a, b], "o": None, "w": np.array(["x", "yz"])})
    np.testing.assert_array_equal(cat, np.concatenate([a, b]))
    assert isinstance(parts, list) and len(parts) == 3 and not has and list(w) == ["x", "yz"]
