"""ONNX Runtime's Python API over seam, so code written for onnxruntime
runs on seam with one changed import:

    import seam as ort                      # was: import onnxruntime as ort
    sess = ort.InferenceSession("model.onnx", providers=["DnnlExecutionProvider", "CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    y = sess.run(None, {name: x})[0]

Providers name seam's targets: "CPUExecutionProvider" is seam's CPU kernels
(always last), "DnnlExecutionProvider" the built-in oneDNN target, and any
seam target spec ("dnnl", a rules file NAME.json, a backend library
libseam_X.so, or a plug-in's name such as "cuda") may be given as is, alone
or as (spec, {option: value}) whose options reach the target's compile.
A provider seam does not have is left out with a warning, as onnxruntime
does. providers=None means every available provider in order.

The model is placed as `seam run MODEL --target ...` places it (seam.Session).
What is accepted but has no effect in seam: SessionOptions'
inter_op_num_threads, execution_mode, graph_optimization_level (seam always
folds constants and fuses), enable_cpu_mem_arena, enable_mem_pattern, the
log levels, and RunOptions. Differences: errors are ValueError (bad input)
or seam.UnsupportedError rather than onnxruntime's exception types;
IOBinding's get_outputs returns numpy arrays, not OrtValues; end_profiling
writes every run's node times as trace events, as onnxruntime does.
"""
import ctypes
import enum
import json
import logging
import os
import time

import numpy as np

from . import _seam

log = logging.getLogger("seam")

# seam dtype names -> ONNX Runtime's type strings
_ORT_TYPES = {
    "float32": "tensor(float)", "float64": "tensor(double)", "float16": "tensor(float16)",
    "bfloat16": "tensor(bfloat16)", "int8": "tensor(int8)", "int16": "tensor(int16)", "int32": "tensor(int32)",
    "int64": "tensor(int64)", "uint8": "tensor(uint8)", "uint16": "tensor(uint16)", "uint32": "tensor(uint32)",
    "uint64": "tensor(uint64)", "bool": "tensor(bool)", "string": "tensor(string)",
    "complex64": "tensor(complex64)", "complex128": "tensor(complex128)",
}
_NUMPY_OF_ORT = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int8)": np.int8, "tensor(int16)": np.int16, "tensor(int32)": np.int32, "tensor(int64)": np.int64,
    "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16, "tensor(uint32)": np.uint32,
    "tensor(uint64)": np.uint64, "tensor(bool)": np.bool_,
}
_CPU = "CPUExecutionProvider"
# ONNX Runtime's provider names for seam's targets, both ways
_PROVIDER_OF_TARGET = {"dnnl": "DnnlExecutionProvider", "cuda": "CUDAExecutionProvider"}
_TARGET_OF_PROVIDER = {v: k for k, v in _PROVIDER_OF_TARGET.items()}


class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    """onnxruntime.SessionOptions: intra_op_num_threads is seam's thread
    count (0: one per core); optimized_model_filepath, when set, receives
    the model as seam placed it; enable_profiling records node times for
    end_profiling. The others are accepted (see the module's text)."""
    __slots__ = ("intra_op_num_threads", "inter_op_num_threads", "graph_optimization_level", "execution_mode",
                 "enable_profiling", "profile_file_prefix", "optimized_model_filepath", "log_severity_level",
                 "log_verbosity_level", "logid", "enable_cpu_mem_arena", "enable_mem_pattern",
                 "enable_mem_reuse", "use_deterministic_compute", "_config", "_free_dims")

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.enable_profiling = False
        self.profile_file_prefix = "onnxruntime_profile_"
        self.optimized_model_filepath = ""
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.use_deterministic_compute = False
        self._config = {}
        self._free_dims = {}

    def add_session_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def add_free_dimension_override_by_name(self, dim_name, dim_value):
        """Gives symbolic dim dim_name the size dim_value wherever an input has it."""
        self._free_dims[str(dim_name)] = int(dim_value)

    def get_session_config_entry(self, key):
        if key not in self._config:
            raise ValueError(f"SessionOptions has no config entry '{key}'")
        return self._config[key]


class RunOptions:
    """onnxruntime.RunOptions: accepted; seam runs have no per-run options."""
    __slots__ = ("log_severity_level", "log_verbosity_level", "logid", "run_tag", "terminate", "_config")

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""
        self.terminate = False
        self._config = {}

    def add_run_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key):
        return self._config[key]


def _ort_type(dtype):
    """seam's type name as onnxruntime writes it: "float32" -> "tensor(float)",
    "sequence(float32)" -> "seq(tensor(float))", "optional(float32)" ->
    "optional(tensor(float))"."""
    for outer, ort in (("optional(", "optional"), ("sequence(", "seq")):
        if dtype.startswith(outer) and dtype.endswith(")"):
            return f"{ort}({_ort_type(dtype[len(outer):-1])})"
    if dtype.startswith("map(") and "," in dtype:
        key, val = dtype[4:-1].split(",", 1)
        return f"map({_ORT_TYPES.get(key, 'tensor(undefined)')[7:-1]},{_ort_type(val)})"
    return _ORT_TYPES.get(dtype, f"tensor({dtype})" if dtype.startswith("float8") else "tensor(undefined)")


class NodeArg:
    """A graph input or output as onnxruntime describes it: .name, .shape
    (ints, symbolic dim names as str, None where unknown), .type
    ("tensor(float)")."""
    __slots__ = ("name", "shape", "type")

    def __init__(self, name, dtype, shape):
        self.name = name
        self.type = _ort_type(dtype)
        self.shape = list(shape) if shape is not None else []

    def __repr__(self):
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    """onnxruntime.ModelMetadata: the file's producer_name, graph_name,
    graph_description, domain, description (the model's doc string),
    version and custom_metadata_map (metadata_props)."""
    __slots__ = ("producer_name", "graph_name", "graph_description", "domain", "description", "version",
                 "custom_metadata_map")

    def __init__(self, meta):
        self.producer_name = meta["producer_name"]
        self.graph_name = meta["graph_name"]
        self.graph_description = meta["graph_description"]
        self.domain = meta["domain"]
        self.description = meta["description"]
        self.version = meta["version"]
        self.custom_metadata_map = dict(meta["props"])


def get_available_providers():
    """The providers this seam has, in the order placement prefers them."""
    return [_PROVIDER_OF_TARGET.get(t, t) for t in _builtin_device_targets()] + [_CPU]


def get_all_providers():
    """Every provider name seam understands (a plug-in such as "cuda"
    counts only where its library is found)."""
    return list(_PROVIDER_OF_TARGET.values()) + [_CPU]


def get_device():
    return "CPU-DNNL" if "dnnl" in _builtin_device_targets() else "CPU"


def _builtin_device_targets():
    return [t.strip() for t in _seam.builtin_targets().split(",") if t.strip() != "cpu"]


def _options_list(opts, provider):
    if opts is None:
        return []
    if not isinstance(opts, dict):
        raise ValueError(f"provider '{provider}': its options must be a dict, got {type(opts).__name__}")
    return [f"{k}={v}" for k, v in opts.items()]


def _resolve_providers(providers, provider_options):
    """[(provider name, seam Target or None for the CPU, {options})]: the
    CPU last; a provider seam has not is left out, said once."""
    if providers is None:
        providers = get_available_providers()
    if isinstance(providers, (str, os.PathLike)):
        raise ValueError("providers must be a list of provider names (or (name, options) tuples), not one string")
    providers = list(providers)
    if provider_options is not None:
        if len(provider_options) != len(providers):
            raise ValueError(f"provider_options has {len(provider_options)} entries for {len(providers)} providers")
        providers = [(p if isinstance(p, (str, os.PathLike)) else p[0], o) for p, o in zip(providers, provider_options)]
    out, seen = [], set()
    for p in providers:
        opts = None
        if isinstance(p, (tuple, list)):
            if len(p) != 2:
                raise ValueError(f"a provider given as a tuple is (name, options), got {p!r}")
            p, opts = p
        if not isinstance(p, (str, os.PathLike)):
            raise ValueError(f"a provider is a name, got {type(p).__name__}")
        p = os.fspath(p)
        if p == _CPU or p == "cpu":
            continue  # the CPU is always there, last
        spec = _TARGET_OF_PROVIDER.get(p, p)
        try:
            target = _seam.Target(spec)
        except (ValueError, OSError) as e:
            if p.endswith("ExecutionProvider"):
                log.warning("seam: specified provider '%s' is not in available provider names (%s): it is left out, "
                            "and what it would have run runs on the next provider (%s)", p,
                            ", ".join(get_available_providers()), e)
                continue
            raise
        if target.name in seen:
            continue
        seen.add(target.name)
        out.append((_PROVIDER_OF_TARGET.get(target.name, p), target, _options_list(opts, p)))
    out.append((_CPU, None, []))
    return out


class InferenceSession:
    """onnxruntime.InferenceSession on seam: InferenceSession(path_or_bytes,
    sess_options=None, providers=None, provider_options=None)."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        if not isinstance(path_or_bytes, (str, bytes, bytearray, os.PathLike)):
            raise TypeError(f"InferenceSession: expected a path or bytes, got {type(path_or_bytes).__name__}")
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            raise TypeError("sess_options must be a seam.SessionOptions (onnxruntime.SessionOptions's counterpart)")
        self._model_path = os.fspath(path_or_bytes) if isinstance(path_or_bytes, (str, os.PathLike)) else None
        self._model_bytes = bytes(path_or_bytes) if self._model_path is None else None
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        self._profiling_start_ns = time.time_ns()
        self._events = []
        self._create(providers, provider_options)

    def _create(self, providers, provider_options):
        from . import Session  # the package's (this module is imported at its end)
        so = self._sess_options
        resolved = _resolve_providers(providers, provider_options)
        targets = [t for _, t, _ in resolved if t is not None]
        topts = [o for _, t, opts in resolved if t is not None for o in opts]
        source = self._model_path if self._model_path is not None else self._model_bytes
        threads = int(so.intra_op_num_threads or 0)
        if threads < 0:
            raise ValueError(f"intra_op_num_threads must be >= 0, got {threads}")
        self._session = Session(source, targets=targets or None, threads=threads, target_options=topts or None,
                                profile=bool(so.enable_profiling), free_dims=so._free_dims)
        self._providers = [name for name, _, _ in resolved]
        self._provider_options = {name: dict(o.split("=", 1) for o in opts) for name, _, opts in resolved}
        self._graph = self._session._model._graph
        if so.optimized_model_filepath:
            self._session.save(so.optimized_model_filepath)

    @property
    def plan(self):
        """The plan as seam placed the model (None for a model saved partitioned, or CPU only)."""
        return self._session.plan

    def get_inputs(self):
        return [NodeArg(n, d, s) for n, d, s in self._graph.inputs()]

    def get_outputs(self):
        return [NodeArg(n, d, s) for n, d, s in self._graph.outputs()]

    def get_overridable_initializers(self):
        return []

    def get_providers(self):
        return list(self._providers)

    def get_provider_options(self):
        return {k: dict(v) for k, v in self._provider_options.items()}

    def set_providers(self, providers=None, provider_options=None):
        self._create(providers, provider_options)

    def disable_fallback(self):
        pass

    def enable_fallback(self):
        pass

    def get_session_options(self):
        return self._sess_options

    def get_modelmeta(self):
        return ModelMetadata(self._graph.metadata())

    def get_profiling_start_time_ns(self):
        return self._profiling_start_ns

    def _output_names(self, output_names):
        names = [n for n, _, _ in self._graph.outputs()]
        if not output_names:
            return names
        for n in output_names:
            if n not in names:
                raise ValueError(f"invalid output name: '{n}' (the model's outputs: {', '.join(names)})")
        return list(output_names)

    def run(self, output_names, input_feed, run_options=None):
        """The outputs named (all, for None or []) as a list of numpy arrays."""
        if not isinstance(input_feed, dict):
            raise TypeError("run: input_feed must be a dict {input name: array}")
        want = self._output_names(output_names)
        out = self._run(input_feed)
        return [out[n] for n in want]

    def _run(self, feeds, outputs=None):
        t0 = time.time_ns()
        out = self._session.run(feeds, outputs)
        if self._sess_options.enable_profiling:  # onnxruntime's profile: every node of every run
            base = (t0 - self._profiling_start_ns) / 1e3
            for name, op, target, start_ms, ms in self._session.node_stats():
                self._events.append({"cat": "Node", "name": name, "ph": "X", "pid": 0, "tid": 0,
                                     "ts": base + start_ms * 1e3, "dur": ms * 1e3,
                                     "args": {"op_name": op, "provider": _PROVIDER_OF_TARGET.get(target, target)}})
            self._events.append({"cat": "Session", "name": "model_run", "ph": "X", "pid": 0, "tid": 0,
                                 "ts": base, "dur": (time.time_ns() - t0) / 1e3})
        return out

    def io_binding(self):
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        if not isinstance(iobinding, IOBinding) or iobinding._session is not self:
            raise ValueError("run_with_iobinding: the binding must come from this session's io_binding()")
        out = self._run(dict(iobinding._inputs), dict(iobinding._outputs) or None)
        names = iobinding._output_order or [n for n, _, _ in self._graph.outputs()]
        iobinding._results = [out[n] for n in names]

    def end_profiling(self):
        """Writes every run's node times since the session was made, as
        onnxruntime does (trace events: a JSON list), to PREFIX_DATE.json
        in the working directory; returns its name ("" without profiling)."""
        if not self._sess_options.enable_profiling:
            return ""
        name = f"{self._sess_options.profile_file_prefix}{time.strftime('%Y-%m-%d_%H-%M-%S')}.json"
        tmp = name + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self._events, f)
        os.replace(tmp, name)
        self._events = []
        return name


def _array_at(ptr, element_type, shape):
    """A numpy array over caller memory at address ptr (no copy)."""
    dt = np.dtype(element_type)
    shape = tuple(int(d) for d in shape)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if not ptr or n < 0:
        raise ValueError("a bound buffer needs a non-null address and a shape")
    buf = (ctypes.c_char * max(n, 1)).from_address(int(ptr))
    return np.frombuffer(buf, dtype=dt, count=n // dt.itemsize).reshape(shape)


def _check_device(device_type, device_id):
    if str(device_type).lower() != "cpu" or int(device_id) != 0:
        raise ValueError(f"seam binds host memory only (device 'cpu', id 0), got '{device_type}', {device_id}")


class IOBinding:
    """onnxruntime's IOBinding on host memory: inputs bound are read in
    place, outputs bound to a buffer are written into it."""

    def __init__(self, session):
        self._session = session
        self._inputs = {}
        self._outputs = {}
        self._output_order = []
        self._results = None

    def bind_cpu_input(self, name, arr_on_cpu):
        self._inputs[name] = arr_on_cpu

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        _check_device(device_type, device_id)
        self._inputs[name] = _array_at(buffer_ptr, element_type, shape)

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        _check_device(device_type, device_id)
        if buffer_ptr is not None:
            if element_type is None or shape is None:
                raise ValueError(f"bind_output '{name}': a buffer needs its element_type and shape")
            self._outputs[name] = _array_at(buffer_ptr, element_type, shape)
        if name not in self._output_order:
            self._output_order.append(name)

    def clear_binding_inputs(self):
        self._inputs = {}

    def clear_binding_outputs(self):
        self._outputs = {}
        self._output_order = []

    def synchronize_inputs(self):
        pass

    def synchronize_outputs(self):
        pass

    def get_outputs(self):
        if self._results is None:
            raise ValueError("get_outputs: run_with_iobinding has not run")
        return list(self._results)

    def copy_outputs_to_cpu(self):
        return [np.array(r) for r in self.get_outputs()]
