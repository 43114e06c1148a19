"""seam: partition an ONNX model (or a torch module) between backends and run it.

    import torch, seam
    net = MLP().eval()
    x = torch.rand(32, 784)
    model = seam.trace(net, x, partitioner_config=seam.PartitionerConfig(max_subgraph_count=2))
    y = model(x)                      # a torch tensor, as x was
    model.save("mlp.onnx")            # one ONNX file: device subgraphs are ai.seam Subgraph nodes
    again = seam.load("mlp.onnx")

The names and meanings follow torch-neuronx's trace API: PartitionerConfig,
trace, analyze, replace_weights, dynamic_batch. The work is seam's C library
(libseam), reached through the extension seam._seam; a torch module is
exported to ONNX in memory with torch.onnx.export.

Errors raise ValueError (bad input: a model, a file's content, an input of
the wrong dtype or shape), seam.UnsupportedError (a ValueError: something
seam cannot do, such as a constraint the plan cannot meet), MemoryError,
OSError (a file that cannot be read or written) or RuntimeError (a bug in
seam); the message is seam's.
"""
import io
import json
import logging
import os
import sys

log = logging.getLogger("seam")

# The skylake-class kernels of OpenBLAS 0.3.21 (the CPU path's GEMMs), on
# CPUs with these flags; it picks older kernels for some of them (AMD's
# AVX-512 cores, and Prescott's under some hypervisors), measured 1.3-3x
# slower. The seam CLI chooses the same (tools/cli/main.c).
_AVX512 = ("avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd")
_SKYLAKE_CLASS = (b"skylakex", b"cooperlake", b"sapphirerapids")


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _openblas_mapped():
    try:
        with open("/proc/self/maps") as f:
            return any("openblas" in line for line in f)
    except OSError:
        return False


def _tune_openblas():
    """Before libseam loads OpenBLAS: choose its kernels unless the user did.
    Returns True when it was loaded already (by numpy or torch), too late to
    choose, so the caller checks what it took."""
    if "OPENBLAS_CORETYPE" in os.environ or not all(f in _cpu_flags() for f in _AVX512):
        return False
    if _openblas_mapped():
        return True
    os.environ["OPENBLAS_CORETYPE"] = "SKYLAKEX"
    return False


def _check_openblas():
    """Never silent: OpenBLAS loaded before seam with older kernels than the
    CPU takes makes every GEMM on the CPU path slower; say so once, with the fix."""
    import ctypes
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        core = lib.openblas_get_corename() or b""
    except (OSError, AttributeError):
        return
    if core.lower() not in _SKYLAKE_CLASS:
        log.warning("seam: OpenBLAS was loaded before seam (by numpy or torch) and took its %s kernels on this "
                    "AVX-512 CPU: the CPU path's GEMMs run 1.3-3x slower; fix: start Python with "
                    "OPENBLAS_CORETYPE=SKYLAKEX in the environment (or import seam first)", core.decode() or "?")


_openblas_early = _tune_openblas()

# libseam's symbols global, so backend plug-ins loaded later (libseam_cuda.so
# calls seam_subgraph_node and the other view accessors) resolve them: an
# extension's libraries are otherwise loaded RTLD_LOCAL.
_flags = sys.getdlopenflags()
sys.setdlopenflags(_flags | os.RTLD_GLOBAL)
try:
    from . import _seam  # noqa: E402  (after OpenBLAS's kernels are chosen)
finally:
    sys.setdlopenflags(_flags)
from ._seam import Target, UnsupportedError  # noqa: E402

if _openblas_early:
    _check_openblas()

__all__ = ["PartitionerConfig", "Model", "Session", "Pipeline", "Target", "UnsupportedError", "analyze", "dynamic_batch", "load", "quantize",
           "replace_weights", "trace", "version", "builtin_targets",
           # onnxruntime's API (seam/ort.py)
           "InferenceSession", "SessionOptions", "RunOptions", "GraphOptimizationLevel", "ExecutionMode", "NodeArg",
           "ModelMetadata", "IOBinding", "get_available_providers", "get_all_providers", "get_device"]
__version__ = _seam.version()


def version():
    return _seam.version()


# torch-neuronx names ops as TorchScript does ("aten::log_softmax"); seam
# places ONNX nodes. The ONNX op types each aten op is exported as.
_ATEN_TO_ONNX = {
    "aten::log_softmax": ["LogSoftmax"], "aten::softmax": ["Softmax"], "aten::sort": ["TopK"],
    "aten::topk": ["TopK"], "aten::linear": ["Gemm", "MatMul"], "aten::matmul": ["MatMul"],
    "aten::relu": ["Relu"], "aten::gelu": ["Gelu", "Erf"], "aten::sigmoid": ["Sigmoid"], "aten::tanh": ["Tanh"],
    "aten::conv2d": ["Conv"], "aten::_convolution": ["Conv"], "aten::max_pool2d": ["MaxPool"],
    "aten::avg_pool2d": ["AveragePool"], "aten::batch_norm": ["BatchNormalization"],
    "aten::layer_norm": ["LayerNormalization"], "aten::add": ["Add"], "aten::mul": ["Mul"], "aten::sub": ["Sub"],
    "aten::div": ["Div"], "aten::cat": ["Concat"], "aten::flatten": ["Flatten"], "aten::reshape": ["Reshape"],
    "aten::view": ["Reshape"], "aten::transpose": ["Transpose"], "aten::permute": ["Transpose"],
}


def _onnx_ops(ops):
    """ONNX op types for ops_to_partition: ONNX names as they are, aten names mapped."""
    out = []
    for op in ops or ():
        if not isinstance(op, str):
            raise TypeError(f"ops_to_partition: op names are str, got {type(op).__name__}")
        if op.startswith("aten::"):
            if op not in _ATEN_TO_ONNX:
                raise ValueError(f"ops_to_partition: '{op}' has no known ONNX op type; name the ONNX op instead "
                                 f"(e.g. 'LogSoftmax'); known aten names: {', '.join(sorted(_ATEN_TO_ONNX))}")
            out.extend(_ATEN_TO_ONNX[op])
        else:
            out.append(op)
    return out


class PartitionerConfig:
    """How trace splits a model between its targets and the CPU.

    model_support_percentage_threshold: fraction (0..1) of the operations the
        targets must support, or trace raises seam.UnsupportedError.
    min_subgraph_size: device subgraphs with fewer nodes go to the CPU (-1: no minimum).
    max_subgraph_count: at most this many subgraphs, device and CPU (-1: no maximum).
    ops_to_partition: op types sent to the CPU even where supported: ONNX names
        ("LogSoftmax") or torch-neuronx's ("aten::log_softmax").
    on_violation: "error" (a constraint that the plan breaks raises, as
        torch-neuronx does) or "fallback" (subgraphs move to the CPU, and the
        plan's notes say so).
    cpu_ops: more ONNX op types for the CPU (as ops_to_partition).
    pins: {node name: target name} forcing nodes onto a target (or "cpu").
    placement: "cost" (default: a supported node stays on the CPU when the
        cost model says offloading it costs more than it saves),
        "capability" (everything supported is offloaded), or a function of a
        node ({"index", "name", "op"}) returning a target name to pin it to,
        or None to let seam decide (by cost).
    rewrite: write a node no target takes as ops one takes (a reflect or edge
        Pad as Slices and a Concat, a Split as Slices, a Sum as Adds) where
        the plan is then estimated faster or has fewer device subgraphs
        (default True; each rewrite is a note of the plan).
    """

    def __init__(self, *, model_support_percentage_threshold=0.5, min_subgraph_size=-1, max_subgraph_count=-1,
                 ops_to_partition=None, on_violation="error", cpu_ops=None, pins=None, placement=None, rewrite=True):
        t = model_support_percentage_threshold
        if not isinstance(t, (int, float)) or not 0 <= t <= 1:
            raise ValueError(f"model_support_percentage_threshold must be between 0 and 1, got {t!r}")
        for name, v in (("min_subgraph_size", min_subgraph_size), ("max_subgraph_count", max_subgraph_count)):
            if not isinstance(v, int) or isinstance(v, bool) or not (v == -1 or v >= 1):
                raise ValueError(f"{name} must be -1 or a whole number >= 1, got {v!r}")
        if on_violation not in ("error", "fallback"):
            raise ValueError(f"on_violation must be 'error' or 'fallback', got {on_violation!r}")
        if pins is not None and not isinstance(pins, dict):
            raise TypeError("pins must be a dict {node name: target name}")
        if placement is not None and not callable(placement) and placement not in ("cost", "capability"):
            raise ValueError(f"placement must be 'cost', 'capability' or a function of a node, got {placement!r}")
        self.model_support_percentage_threshold = float(t)
        self.min_subgraph_size = min_subgraph_size
        self.max_subgraph_count = max_subgraph_count
        self.ops_to_partition = set(ops_to_partition) if ops_to_partition else None
        self.on_violation = on_violation
        self.cpu_ops = list(cpu_ops) if cpu_ops else []
        self.pins = dict(pins) if pins else {}
        self.placement = placement
        self.rewrite = bool(rewrite)
        self._cpu_ops = _onnx_ops(self.ops_to_partition) + _onnx_ops(self.cpu_ops)

    def __repr__(self):
        return (f"PartitionerConfig(model_support_percentage_threshold={self.model_support_percentage_threshold}, "
                f"min_subgraph_size={self.min_subgraph_size}, max_subgraph_count={self.max_subgraph_count}, "
                f"ops_to_partition={self.ops_to_partition}, on_violation={self.on_violation!r})")


def _is_torch(x):
    t = type(x)
    return t.__module__.startswith("torch") and t.__name__ in ("Tensor", "Parameter")


def _example_tuple(example_inputs):
    if example_inputs is None:
        return ()
    if isinstance(example_inputs, (tuple, list)):
        return tuple(example_inputs)
    return (example_inputs,)


def _export(module, example_inputs):
    """A torch nn.Module as ONNX bytes (torch.onnx.export, in memory)."""
    import inspect

    import torch
    args = tuple(torch.as_tensor(a) if not _is_torch(a) else a for a in _example_tuple(example_inputs))
    if not args:
        raise ValueError("trace: a torch module needs example_inputs to be exported")
    names = None
    try:
        params = [p for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(params) == len(args):
            names = [p.name for p in params]
    except (TypeError, ValueError):
        pass
    buf = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(module, args, buf, input_names=names, opset_version=17, do_constant_folding=True)
    return buf.getvalue()


def _graph(source, example_inputs=None):
    """A _seam.Graph and a name for it from a module, a path, a ModelProto or bytes."""
    if isinstance(source, _seam.Graph):
        return source, "<graph>"
    if isinstance(source, (str, os.PathLike)):
        return _seam.Graph(os.fspath(source)), os.fspath(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _seam.Graph(bytes(source)), "<bytes>"
    if type(source).__name__ == "ModelProto" and hasattr(source, "SerializeToString"):
        return _seam.Graph(source.SerializeToString()), "<onnx.ModelProto>"
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is optional
        torch = None
    if torch is not None and isinstance(source, torch.nn.Module):
        return _seam.Graph(_export(source, example_inputs)), type(source).__name__
    raise TypeError("expected a torch nn.Module, a path, an onnx.ModelProto or bytes, got "
                    f"{type(source).__name__}")


def _targets(targets):
    if isinstance(targets, (str, os.PathLike)):
        targets = (targets,)
    return [t if isinstance(t, _seam.Target) else _seam.Target(os.fspath(t)) for t in targets or ()]


def _log_analysis(a):
    log.info("The following operations are currently supported:")
    for op in a["supported"]:
        log.info("%s", op)
    log.info("The following operations are currently not supported:")
    for n in a["unsupported_nodes"]:
        log.info("%s, node %d '%s': %s", n["op"], n["index"], n["name"], n["reason"])
    log.info("%.2f%% of arithmetic operations (%d of %d) are supported", 100.0 * a["supported_fraction"],
             a["supported_count"], a["node_count"])


def _analysis(graph, name, targets):
    a = json.loads(graph.partition(targets, analysis=True, name=name))
    a["supported"] = a.pop("supported_ops")
    a["unsupported"] = a.pop("unsupported_ops")
    return a


def analyze(module_or_path, example_inputs=None, targets=("dnnl",)):
    """Which operations the targets support: a dict with supported_fraction,
    supported and unsupported ({op type: count}), unsupported_nodes
    ([{index, name, op, reason}]), supported_count, node_count and targets;
    the report is also logged (logger "seam", INFO)."""
    graph, name = _graph(module_or_path, example_inputs)
    graph.fold()
    graph.fuse_qdq()
    a = _analysis(graph, name, _targets(targets))
    _log_analysis(a)
    return a


def plan_stages(module_or_path, example_inputs=None, *, stages, targets=("dnnl",), stage_memory=0, link_gbits=10.0,
                link_latency_us=20.0, micro_batches=0, partitioner_config=None):
    """The model partitioned for targets and cut into `stages` pipeline
    stages, one process each (`seam partition --stages`; docs/scale-out.md):
    the plan as a dict, with "pipeline": n_stages, memory_limit, link, and
    per stage its first position and node count, first and last node,
    compute_us, memory_bytes (weights, received values and the peak of its
    own, each within stage_memory bytes when that is > 0), weight_bytes,
    receive_bytes, send_bytes and send_us over a link of link_gbits
    gigabits per second and link_latency_us a transfer; with micro_batches
    > 0 also "schedule" (makespan_us, latency_us, interval_us,
    throughput_per_s, bubble_fraction, bottleneck) and each stage's busy
    share. Raises ValueError naming the node that alone does not fit, or
    how many stages the memory needs."""
    if int(stages) < 1:
        raise ValueError(f"plan_stages: stages={stages}: one stage at least")
    if int(micro_batches) < 0:
        raise ValueError(f"plan_stages: micro_batches={micro_batches}: 0 (no schedule) or more")
    graph, name = _graph(module_or_path, example_inputs)
    graph.fold()
    graph.fuse_qdq()
    cfg = partitioner_config or PartitionerConfig()
    return json.loads(graph.partition(_targets(targets), min_subgraph_size=max(cfg.min_subgraph_size, 1),
                                      max_subgraph_count=max(cfg.max_subgraph_count, 0), cpu_ops=list(cfg._cpu_ops),
                                      pins=[s for kv in cfg.pins.items() for s in kv], name=name,
                                      capability=cfg.placement == "capability", rewrite=cfg.rewrite,
                                      stages=int(stages), stage_memory=int(stage_memory), link_gbits=float(link_gbits),
                                      link_latency_us=float(link_latency_us), micro_batches=int(micro_batches)))


def _log_plan(plan, nodes):
    log.info("Num Partitions: %d", len(plan["subgraphs"]))
    for sg in plan["subgraphs"]:
        log.info("Creating Partition #%d for device: %s", sg["id"] + 1, sg["target"])
        log.info("The following operators will be included in this partition:")
        hist = {}
        for i in sg["nodes"]:
            op = nodes[i]["op"]
            hist[op] = hist.get(op, 0) + 1
        for op, n in hist.items():
            log.info("%s:%d", op, n)
    for note in plan["notes"]:
        log.info("%s", note)


def _to_numpy(x, what):
    import numpy as np
    if _is_torch(x):
        if x.device.type != "cpu":
            raise ValueError(f"{what}: seam runs on host memory; move the tensor to the CPU first "
                             f"(it is on {x.device})")
        import torch
        if x.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits, as uint16
            return x.detach().contiguous().view(torch.int16).numpy().view(np.uint16)
        return x.detach().numpy()  # shares the tensor's memory
    if not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)  # another framework's tensor, read in place
    return np.asarray(x)


def _feed(x, declared, what):
    """A feed as the C layer takes it: None, a list of arrays for a
    declared sequence, else an array."""
    if x is None:
        return None
    if isinstance(x, (list, tuple)) and "sequence(" in declared:
        return [_to_numpy(e, f"{what} element {i}") for i, e in enumerate(x)]
    return _to_numpy(x, what)


def _as_torch(r, declared):
    """A result as torch, for a call made with torch tensors: lists element
    by element, None as is, strings stay numpy (torch has none), bfloat16
    bits back as torch.bfloat16."""
    import torch
    if r is None:
        return None
    if isinstance(r, list):
        return [_as_torch(e, declared) for e in r]
    if r.dtype.kind in "UOS":
        return r
    if "bfloat16" in declared and r.dtype.itemsize == 2:  # torch has no uint16: the bits through int16
        return torch.from_numpy(r.view("int16")).view(torch.bfloat16)
    return torch.from_numpy(r)


class Model:
    """A (partitioned) model ready to run: call it with numpy arrays or CPU
    torch tensors, positionally in the order of .inputs, and it returns the
    same kind (one output, or a tuple). .plan is the plan as `seam partition
    --json` prints it (None for a model loaded from a file)."""

    def __init__(self, graph, targets, plan=None, dynamic_batch=False, threads=0, inline_weights=True, profile=False):
        self._graph = graph
        self._profile = bool(profile)
        self._targets = targets
        self.plan = plan
        self.dynamic_batch = bool(dynamic_batch)
        self.threads = threads
        self.inline_weights = inline_weights
        self._session = None
        self._session = self._make_session()

    def _make_session(self):
        s = _seam.Session(self._graph, self._targets, self.threads, self.dynamic_batch, self._profile)
        for line in s.log().splitlines():
            if ": slow: " in line:
                log.warning("%s", line)
        return s

    @property
    def inputs(self):
        return [{"name": n, "dtype": d, "shape": s} for n, d, s in self._graph.inputs()]

    @property
    def outputs(self):
        return [{"name": n, "dtype": d, "shape": s} for n, d, s in self._graph.outputs()]

    def run(self, feeds):
        """feeds: {input name: value}; returns {output name: value}.

        A value is what the model declares (see .inputs and .outputs): a
        numpy array or CPU torch tensor for a tensor; a list of them for a
        sequence ("sequence(float32)"); None for an optional left empty
        ("optional(...)"). Strings are numpy str (or bytes) arrays, and come
        back as numpy str arrays (an object array of bytes when a string is
        not UTF-8). bfloat16 and the float8 types, which numpy lacks, are
        their bits as uint16 / uint8 (ml_dtypes' arrays are taken too;
        .view(ml_dtypes.bfloat16) reads a result); the dtype in
        .inputs/.outputs names the type ("bfloat16", "float8e4m3fn")."""
        if not isinstance(feeds, dict):
            raise TypeError("run: feeds must be a dict {input name: array}")
        kinds = {n: d for n, d, _ in self._graph.inputs()}
        return self._session.run({k: _feed(v, kinds.get(k, ""), f"input '{k}'") for k, v in feeds.items()})

    def __call__(self, *inputs):
        names = [i[0] for i in self._graph.inputs()]
        if len(inputs) != len(names):
            raise ValueError(f"the model takes {len(names)} input{'s' if len(names) != 1 else ''} "
                             f"({', '.join(names)}), got {len(inputs)}")
        as_torch = any(_is_torch(x) or (isinstance(x, (list, tuple)) and any(_is_torch(e) for e in x))
                       for x in inputs)
        out = self.run(dict(zip(names, inputs)))
        res = [out[o[0]] for o in self._graph.outputs()]
        if as_torch:
            res = [_as_torch(r, d) for r, (_, d, _) in zip(res, self._graph.outputs())]
        return res[0] if len(res) == 1 else tuple(res)

    def stats(self):
        """Compile counts of the session (seam_session_stats): compiles (at
        creation and at runs), run_compiles (a run with a shape signature not
        seen before compiles its device subgraphs), cache_hits, evictions,
        cpu_shapes (shapes a backend did not compile: they ran on the CPU),
        compile_ms."""
        return self._session.stats()

    def log(self):
        """The session's log: compile logs, and "slow:" lines (a shape a
        device subgraph ran on the CPU)."""
        return self._session.log()

    def set_shape_cache(self, n):
        """How many shape signatures each device subgraph keeps compiled
        (default 8; the least recently used goes)."""
        self._session.set_shape_cache(n)

    def save(self, path, weights_file=None):
        """Writes the model as one ONNX file (device subgraphs are ai.seam
        Subgraph nodes). weights_file: the weights go to that file next to
        path (ONNX external data); a model traced with inline_weights=False
        does so by default (PATH's name + ".weights")."""
        if weights_file is None and not self.inline_weights:
            weights_file = os.path.basename(os.fspath(path)) + ".weights"
        self._graph.save(os.fspath(path), weights_file)

    def _replace_weights(self, donor):
        # Device subgraphs compiled the old weights: the session is made
        # again. (seam keeps the old data alive, so a model sharing this
        # graph, such as dynamic_batch's, keeps running on the old weights.)
        n = self._graph.replace_weights(donor)
        self._session = self._make_session()
        return n


def _place(graph, name, tl, cfg, target_options):
    """Partitions graph for the targets tl under cfg (a PartitionerConfig)
    and applies the plan; returns the plan as a dict."""
    pins = dict(cfg.pins)
    if callable(cfg.placement):
        plan0 = json.loads(graph.partition(tl, name=name))
        for n in plan0["nodes"]:
            if n["target"] == "constant":
                continue
            t = cfg.placement({"index": n["index"], "name": n["name"], "op": n["op"]})
            if t is not None:
                pins.setdefault(n["name"], t)
    flat_pins = [s for kv in pins.items() for s in kv]
    topts = list(target_options) if target_options else None
    text = graph.partition(tl, min_support=cfg.model_support_percentage_threshold,
                           min_subgraph_size=max(cfg.min_subgraph_size, 1),
                           max_subgraph_count=max(cfg.max_subgraph_count, 0),
                           on_violation_error=cfg.on_violation == "error", cpu_ops=list(cfg._cpu_ops),
                           pins=flat_pins, apply=True, target_options=topts, name=name,
                           capability=cfg.placement == "capability", rewrite=cfg.rewrite)
    return json.loads(text)


def trace(module_or_path, example_inputs, *, targets=("dnnl",), partitioner_config=None, target_options=None,
          dynamic_batch=False, inline_weights=True):
    """Partitions a model between targets (priority order; the CPU runs the
    rest) and compiles it. module_or_path: a torch nn.Module (exported with
    torch.onnx.export at example_inputs), a path, an onnx.ModelProto or
    bytes. target_options: strings passed to every device subgraph's
    compile (e.g. "fusion=off"). dynamic_batch: accept any batch size (the
    inputs are cut into chunks of the traced batch). inline_weights=False:
    save() writes the weights to a separate file by default. Returns a Model."""
    cfg = partitioner_config if partitioner_config is not None else PartitionerConfig()
    if not isinstance(cfg, PartitionerConfig):
        raise TypeError("partitioner_config must be a seam.PartitionerConfig")
    graph, name = _graph(module_or_path, example_inputs)
    graph.fold()
    tl = _targets(targets)
    _qdq_note(graph.fuse_qdq(), tl)
    analysis = _analysis(graph, name, tl)
    _log_analysis(analysis)
    plan = _place(graph, name, tl, cfg, target_options)
    _log_plan(plan, plan["nodes"])
    return Model(graph, tl, plan, dynamic_batch=dynamic_batch, inline_weights=inline_weights)


def dynamic_batch(model):
    """The same model accepting any batch size (torch-neuronx's dynamic_batch)."""
    if not isinstance(model, Model):
        raise TypeError("dynamic_batch: expected a seam.Model")
    return Model(model._graph, model._targets, model.plan, dynamic_batch=True, threads=model.threads,
                 inline_weights=model.inline_weights)


def _calibration_sets(calibration, names):
    """Each calibration set as a dict {input name: numpy array}: from dicts,
    or from tuples/lists (or single arrays) in the order of the inputs."""
    for k, item in enumerate(calibration):
        if isinstance(item, dict):
            yield {str(n): _to_numpy(v, f"calibration set {k}, input '{n}'") for n, v in item.items()}
            continue
        items = item if isinstance(item, (tuple, list)) else (item,)
        if len(items) != len(names):
            raise ValueError(f"calibration set {k} has {len(items)} arrays; the model takes {len(names)} inputs "
                             f"({', '.join(names)})")
        yield {n: _to_numpy(v, f"calibration set {k}, input '{n}'") for n, v in zip(names, items)}


def quantize(model, output, calibration=None, *, dynamic=False, method="minmax", percentile=99.999,
             per_channel=None, exclude=(), threads=0, reduce_range=False, max_error=None, targets=("dnnl",)):
    """Quantizes a float model to int8 as `seam quantize` does and writes it
    to `output` (an ONNX file that seam's int8 targets and ONNX Runtime run).

    model: a path, an onnx.ModelProto, bytes, or a torch nn.Module (exported
    with the first calibration set as its example inputs). Static (QDQ)
    quantization needs calibration: an iterable of sets, each a dict
    {input name: array} or a tuple of arrays in the order of the inputs (a
    single array for a model of one input), numpy or CPU torch. dynamic=True
    quantizes MatMul/Gemm weights with run-time activation ranges and takes
    no calibration. method: "minmax" or "percentile" (the range holding
    `percentile` percent of the values). per_channel: None for the default
    (per channel static, per tensor dynamic). exclude: node names left in
    float. reduce_range: 7-bit weights in [-64, 64] (ONNX Runtime's
    reduce_range), which dnnl runs in int8 on a CPU without VNNI.
    max_error: as `seam partition --precision int8 --max-error E`: the
    model's error on the calibration sets (the largest over sets and float
    outputs of max |y - y_fp32| / max |y_fp32|) kept at most E by leaving
    in float the subgraphs of its partition for `targets` whose int8 costs
    the most accuracy. Returns a dict of counts, with "notes": what stayed
    float and why; with max_error, "error" (the model's error as written)
    and "max_error_report": a line per subgraph, int8 or kept in fp32.
    """
    sets = None
    if calibration is not None:
        sets = list(calibration)
    if hasattr(model, "forward") and hasattr(model, "parameters"):  # a torch nn.Module
        if not sets:
            raise ValueError("quantize: a torch module needs calibration sets (the first is its example input)")
        first = sets[0]
        example = tuple(first.values()) if isinstance(first, dict) else first
        import torch
        example = tuple(torch.as_tensor(_to_numpy(x, "example input")) for x in _example_tuple(example))
        graph, _ = _graph(model, example)
    else:
        graph, _ = _graph(model)
    names = [n for n, _, _ in graph.inputs()]
    calib = None if sets is None else _calibration_sets(sets, names)
    extra = {}
    if max_error is not None:
        import numpy as np
        if sets is None:
            raise ValueError("quantize: max_error needs calibration sets: the error is measured on them")
        calib = [{n: np.ascontiguousarray(a) for n, a in d.items()} for d in calib]  # read again per variant
        extra = {"max_error": float(max_error), "targets": _targets(targets)}
    stats = graph.quantize(calib, dynamic=dynamic, method=method, percentile=percentile, per_channel=per_channel,
                           exclude=list(exclude), threads=threads, reduce_range=reduce_range, **extra)
    graph.save(os.fspath(output))
    stats["notes"] = [line for line in stats["notes"].split("\n") if line]
    for line in stats["notes"]:
        log.info("quantize: %s", line)
    report = stats.pop("max_error_report", "")
    if max_error is None:
        stats.pop("error", None)
    else:
        stats["max_error_report"] = [line for line in report.split("\n") if line]
        for line in stats["max_error_report"]:
            log.info("quantize: %s", line)
    return stats


def builtin_targets():
    """The targets built into this seam: ["cpu", "dnnl"], or ["cpu"] in a build without oneDNN."""
    return [t.strip() for t in _seam.builtin_targets().split(",")]


def _builtin_targets():
    return [_seam.Target(t) for t in builtin_targets() if t != "cpu"]


def load(path, *, targets=None, threads=0, dynamic_batch=False):
    """Loads a model saved by Model.save (or any ONNX file) ready to run.
    targets: backends its ai.seam Subgraph nodes may name besides the
    built-in ones (a backend library's .so)."""
    graph = _seam.Graph(os.fspath(path))
    return Model(graph, _builtin_targets() + _targets(targets), None, dynamic_batch=dynamic_batch, threads=threads)


def _weights_graph(weights):
    """A _seam.Graph holding only initializers, from a path, a ModelProto or a
    dict {name: array} (a torch state_dict works as is when the model was
    exported from the same module: its initializers keep the parameter names)."""
    if isinstance(weights, dict):
        import numpy as np
        import onnx
        from onnx import helper, numpy_helper
        inits = []
        for k, v in weights.items():
            a = np.ascontiguousarray(_to_numpy(v, f"weight '{k}'"))
            inits.append(numpy_helper.from_array(a, name=str(k)))
        g = helper.make_graph([], "weights", [], [], initializer=inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        return _seam.Graph(m.SerializeToString())
    return _graph(weights)[0]


def replace_weights(model_or_path, weights, out_path=None):
    """Gives a (partitioned) model new weights without partitioning again.
    weights: an ONNX file, an onnx.ModelProto, or a dict {initializer name:
    array or tensor}. Each must name a weight of the model with its dtype
    and shape, or nothing changes and a ValueError names it. A seam.Model is
    changed in place (and saved to out_path when given) and returned; a path
    is rewritten (to out_path, or in place) and out_path returned."""
    donor = _weights_graph(weights)
    if isinstance(model_or_path, Model):
        model_or_path._replace_weights(donor)
        if out_path is not None:
            model_or_path.save(out_path)
        return model_or_path
    path = os.fspath(model_or_path)
    g = _seam.Graph(path)
    g.replace_weights(donor)
    out = os.fspath(out_path) if out_path is not None else path
    g.save(out)
    return out


_SESSION_CONFIG = {"min_subgraph_size", "max_subgraph_count", "cpu_ops", "pins", "placement", "on_violation",
                   "model_support_percentage_threshold", "ops_to_partition"}


def _is_partitioned(graph):
    return any(domain == "ai.seam" and op == "Subgraph" for _, op, domain in graph.nodes())


def _qdq_note(q, targets):
    n = q["conv_units"] + q["matmul_units"] + q["gemm_units"]
    if n:
        where = "" if targets else " on the CPU's int8 kernels (exact, but slower than oneDNN's: give targets=('dnnl',))"
        log.warning("seam: note: quantized model: %d QDQ units (DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear) "
                    "became %d QLinearConv (%d of them Gemms, as 1x1 convolutions) and %d QLinearMatMul nodes, each "
                    "placed whole and run in int8%s", n, q["conv_units"] + q["gemm_units"], q["gemm_units"],
                    q["matmul_units"], where)


def _fix_shapes(graph, shapes, free_dims):
    """Input shapes fixed before folding: shapes {input: dims} whole,
    free_dims {symbol: size} wherever an input has that symbolic dim."""
    shapes = dict(shapes or {})
    free_dims = dict(free_dims or {})
    for name, _, shape in graph.inputs():
        if name in shapes or not free_dims or shape is None:
            continue
        if any(isinstance(d, str) and d in free_dims for d in shape):
            dims = [free_dims.get(d, d) if isinstance(d, str) else d for d in shape]
            if all(isinstance(d, int) for d in dims):
                shapes[name] = dims
            else:
                log.warning("seam: free_dims leave input '%s' with unknown dims %s: its shape stays symbolic", name,
                            dims)
    for name, dims in shapes.items():
        graph.set_input_shape(str(name), [int(d) for d in dims])


class Session:
    """A model ready to run from several threads: Session(model, targets=...,
    threads=...).run({name: array}) -> {name: array}. Runs of one session
    take turns; sessions run in parallel.

    model: a path, bytes or an onnx.ModelProto. A plain model given targets
    is placed as `seam run MODEL --target T` places it (folded, quantized
    units made whole, partitioned by cost, the plan in .plan, the plan's
    notes logged once as warnings on logger "seam"); without targets it runs
    on the CPU. A model saved partitioned (ai.seam Subgraph nodes) runs as
    saved; targets then name backend libraries its subgraphs need.
    The partitioner's options come as partitioner_config=PartitionerConfig(...)
    or as keywords (min_subgraph_size=, max_subgraph_count=, cpu_ops=,
    pins=, placement=, on_violation=); target_options are strings for the
    targets' compile ("fusion=off"). shapes={input: dims} fixes inputs'
    shapes, free_dims={symbol: size} symbolic dims by name (onnxruntime's
    free dimension overrides), so shape computations fold before
    placement, as `seam run --shape` does. Unlike trace, which follows
    torch-neuronx, the defaults are the CLI's: no minimum support, and a
    constraint the plan cannot meet moves subgraphs to the CPU."""

    def __init__(self, model, targets=None, threads=0, dynamic_batch=False, *, partitioner_config=None,
                 target_options=None, profile=False, shapes=None, free_dims=None, **options):
        unknown = set(options) - _SESSION_CONFIG
        if unknown:
            raise TypeError(f"Session: unknown option{'s' if len(unknown) > 1 else ''} {', '.join(sorted(unknown))} "
                            f"(partitioner options: {', '.join(sorted(_SESSION_CONFIG))})")
        if partitioner_config is not None and options:
            raise TypeError("Session: give the partitioner's options as partitioner_config or as keywords, not both")
        if partitioner_config is None:
            options.setdefault("model_support_percentage_threshold", 0.0)
            options.setdefault("on_violation", "fallback")
            partitioner_config = PartitionerConfig(**options)
        elif not isinstance(partitioner_config, PartitionerConfig):
            raise TypeError("partitioner_config must be a seam.PartitionerConfig")
        graph, name = _graph(model)
        tl = _targets(targets)
        self.plan = None
        names = {t.name for t in tl}
        backends = tl + [t for t in _builtin_targets() if t.name not in names]
        if _is_partitioned(graph):
            self._model = Model(graph, backends, None, dynamic_batch=dynamic_batch, threads=threads, profile=profile)
            return
        _fix_shapes(graph, shapes, free_dims)
        graph.fold()
        _qdq_note(graph.fuse_qdq(), tl)
        if tl:
            plan = _place(graph, name, tl, partitioner_config, target_options)
            for note in plan["notes"]:
                log.warning("seam: %s", note)
            self.plan = plan
        self._model = Model(graph, backends, self.plan, dynamic_batch=dynamic_batch, threads=threads, profile=profile)

    @property
    def inputs(self):
        return self._model.inputs

    @property
    def outputs(self):
        return self._model.outputs

    def run(self, feeds, outputs=None):
        """feeds: {input name: value}; returns {output name: value} (values
        of every kind as Model.run says). outputs: {output name: numpy
        array} the run writes into (no copy; each comes back as the same
        array)."""
        if not isinstance(feeds, dict):
            raise TypeError("run: feeds must be a dict {input name: array}")
        kinds = {n: d for n, d, _ in self._model._graph.inputs()}
        return self._model._session.run({k: _feed(v, kinds.get(k, ""), f"input '{k}'") for k, v in feeds.items()},
                                        outputs)

    def stats(self):
        """Compile counts: see Model.stats; also input_copies (feeds that
        were not C-contiguous, aligned arrays of the model's dtype, copied
        before the run) and output_copies."""
        return self._model.stats()

    def log(self):
        return self._model.log()

    def set_shape_cache(self, n):
        self._model.set_shape_cache(n)

    def save(self, path, weights_file=None):
        """Writes the model as placed (one ONNX file, device subgraphs as
        ai.seam Subgraph nodes)."""
        self._model.save(path, weights_file)

    def node_stats(self):
        """The last run's time per node: [(name, op_type, target, start_ms,
        ms)] (a session made with profile=True)."""
        return self._model._session.node_stats()


from .ort import (ExecutionMode, GraphOptimizationLevel, InferenceSession, IOBinding, ModelMetadata,  # noqa: E402
                  NodeArg, RunOptions, SessionOptions, get_all_providers, get_available_providers, get_device)


class Pipeline:
    """A staged model run across MPI ranks (docs/scale-out.md), over an
    mpi4py communicator: the library's seam_pipeline (include/seam_mpi.h).

        from mpi4py import MPI
        p = seam.Pipeline("staged.onnx", MPI.COMM_WORLD, micro_batches=4)
        out = p.run({"x": x} if p.rank == 0 else None)   # every rank
        # rank 0: {output name: array}; the others: None

    The model is staged by `seam partition MODEL --stages N -o STAGED.onnx`
    (or seam.plan_stages); the communicator must have N ranks, and every
    rank makes the Pipeline and calls run, in the same order. Rank r of the
    communicator runs stage r and holds its weights alone; rank 0 gives the
    inputs (numpy arrays or CPU torch tensors) and gets the outputs. seam
    talks on a duplicate of comm, never on comm itself. A rank that does not
    answer for stage_timeout seconds makes the others' run raise, naming it;
    an input refused on rank 0 makes every rank's run raise ValueError with
    rank 0's message, and the pipeline runs again after it. After any other
    failed run the pipeline refuses to run: close it. threads: this rank's
    worker threads (0: one per core); targets: backend libraries the saved
    subgraphs need, as Session takes them."""

    def __init__(self, path, comm=None, *, threads=0, micro_batches=1, stage_timeout=10.0, targets=None):
        if not hasattr(_seam, "Pipeline"):
            raise UnsupportedError("seam.Pipeline: this seam was built without MPI (build it with libopenmpi-dev "
                                   "installed, or -DSEAM_WITH_MPI=ON)")
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise ImportError("seam.Pipeline takes its communicator from mpi4py (Debian: python3-mpi4py)") from e
        if comm is None:
            comm = MPI.COMM_WORLD
        if not isinstance(comm, MPI.Comm) or comm == MPI.COMM_NULL:
            raise TypeError(f"Pipeline: comm must be an mpi4py communicator, not {type(comm).__name__}")
        self._p = _seam.Pipeline(os.fspath(path), comm.py2f(), int(threads), int(micro_batches),
                                 float(stage_timeout), _targets(targets) or None)

    @property
    def rank(self):
        """This process's stage (its rank in the communicator)."""
        return self._p.rank

    @property
    def stages(self):
        return self._p.stages

    @property
    def inputs(self):
        return self._p.inputs()

    @property
    def outputs(self):
        return self._p.outputs()

    def run(self, feeds=None):
        """Every rank: one run. Rank 0 passes {input name: array} (every
        input, every run) and gets {output name: numpy array}; the other
        ranks pass nothing and get None."""
        if isinstance(feeds, dict):
            try:
                feeds = {k: _to_numpy(v, f"input '{k}'") for k, v in feeds.items()}
            except Exception as e:  # the run still happens, failing on every rank: none waits for this one
                self._p.run_refused(f"rank {self.rank}: {e}")
                raise
        return self._p.run(feeds)

    def stats(self):
        """This rank's stage (rank, stages, nodes, weight_bytes,
        micro_batches) and the last run's run_ms, compute_ms, wait_ms."""
        return self._p.stats()

    def close(self):
        """Frees the pipeline (every rank; also when it is collected)."""
        self._p.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
