"""Mutation fuzzing: hostile variants of real models, on every path.

usage: /usr/bin/python3 check_mutate.py SEAM_BINARY WORKDIR MODEL_DIR... [-k CASE] [--mutations N]
                                       [--timeout S] [--jobs N] [--seed S]
                                       [--targets cpu,dnnl] [--backend-lib SO]
                                       [--sweep N] [--budget S]

Every model under each MODEL_DIR (a node test folder holding model.onnx
and test_data_set_0/input_*.pb, or a plain .onnx file) gets N mutations
(default 3), each drawn from a generator seeded with (seed, model, index),
so that a case is the same on every machine and every run. A mutation is
one of what an attacker or a buggy exporter does:

  attr     one attribute of one node set to 0, -1, -2^31, 2^31-1, 2^62,
           NaN, inf or emptied (a list with no entries, an empty string)
  tensor   one element of a constant tensor attribute (Constant's value)
           or of an integer initializer set to such a value
  drop     one input of a node removed (the last one popped, another
           left empty)
  axis     an extra `axis` attribute with such a value
  rank, dtype, size
           an input file whose rank, element type or size contradicts the
           model

Each variant runs once per entry of --targets (default cpu,dnnl): `seam
run` for cpu, `seam run --target T --placement capability` for another
target T; and (for the first mutation of each model) as `seam partition
--target T -o X.onnx` followed by `seam run X.onnx`, T the first target
that is not cpu. A plug-in target (cuda: --targets cpu,cuda) needs its
library to run the saved X.onnx: --backend-lib SO, by default
libseam_T.so found next to SEAM_BINARY (or in its bin/ or ../lib, for a
wrapper script that sets LD_LIBRARY_PATH and execs seam: a signal still
shows in the exit code then; a wrapper without exec gives 128+N, which
fails the case too). A run may succeed or refuse
the model (exit 1 or 2) with a message; a signal, a sanitizer report, a run
longer than the timeout, another exit code or an exit 1 without a message
fails the case. The model and inputs of a failing case are kept in
WORKDIR/artifacts/ with the seed in their names, and the line to run that
one case again is printed.

--sweep N adds a deterministic sweep of the attribute arithmetic: for
each (op type, attribute) pair met in the models, the first N models
holding it get an integer attribute set to each of 0, -1, -2^31, 2^31,
2^31+1, 2^62, -2^62, 2^63-1 and -2^63, a float attribute to NaN, inf,
-inf, 0, -1 and 3.4e38 (every entry of a list), a list of two or more
entries its first entry alone set to -1, 2^31, 2^62, -2^62 or 2^63-1 (NaN,
+-inf for floats: one axis's arithmetic wrapping while the others stay
plausible), and a list attribute grown to 2^18 copies of its first entry,
one variant each (N 0: every model). An integer or float attribute of the
op's schema (onnx.defs) that no model sets (Conv's group and dilations,
GRU's clip, ...) is added, with the same values, to the first N models
holding the op (a list as long as the node's window has axes, pads twice
that, else one entry). Each variant runs on every target and is
partitioned, saved and reloaded. The sizes, products, sums and shifts ops
compute from attributes (block sizes, windows, pads, groups, pool offsets)
must be refused with a message, on every path, never wrap into a crash
(issue 29). A sweep case is named MODEL/sNODE.ATTR=VALUE, the first entry
alone MODEL/sNODE.ATTR.0=VALUE (test_depthtospace_example/s0.blocksize=0,
.../s0.pads=huge, test_conv_with_strides_padding/s0.pads.0=-1).

--budget S starts no case after S seconds (those left are counted in the
summary, not failed): a time box for a slow machine or a sanitizer build.

A case is named MODEL/mN (test_conv_with_padding/m1); -k selects cases.
tests/checks/mutate_known.txt lists the crashes that are known and whose
fix belongs to code this test does not own; they are reported, not failed.
"""
import concurrent.futures
import os
import random
import shutil
import subprocess
import sys
import time
import zlib

import numpy as np
import onnx
import onnx.defs
from onnx import AttributeProto, TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

parser = seamtest.arg_parser(__doc__)
parser.add_argument("seam", metavar="SEAM_BINARY")
parser.add_argument("work", metavar="WORKDIR")
parser.add_argument("dirs", metavar="MODEL_DIR", nargs="+")
parser.add_argument("--mutations", type=int, default=3, help="mutations per model (default 3)")
parser.add_argument("--timeout", type=float, default=10.0, help="seconds a run may take (default 10)")
parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="runs at once (default: cores)")
parser.add_argument("--seed", type=int, default=17, help="the base seed (default 17)")
parser.add_argument("--targets", default="cpu,dnnl",
                    help="comma-separated: the paths each variant runs on; the first one that is not cpu also "
                         "partitions, saves and reloads (default cpu,dnnl)")
parser.add_argument("--backend-lib", metavar="SO",
                    help="the plug-in library that runs the saved partitioned file of a plug-in target "
                         "(default: libseam_TARGET.so next to SEAM_BINARY, or in its bin/ or ../lib)")
parser.add_argument("--sweep", type=int, default=-1, metavar="N",
                    help="also sweep every integer and float attribute of the first N models holding each (op, "
                         "attribute) pair through extreme values, and lists through a huge length (0: every model; "
                         "default: no sweep)")
parser.add_argument("--budget", type=float, default=0, metavar="S",
                    help="start no case after S seconds; the rest are counted as skipped (default 0: no limit)")
parser.add_argument("--known", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "mutate_known.txt"))
args = parser.parse_args()
TARGETS = [t.strip() for t in args.targets.split(",") if t.strip()]
if not TARGETS or len(set(TARGETS)) != len(TARGETS):
    parser.error(f"--targets wants distinct names, got '{args.targets}'")
# the target that partitions, saves and reloads: the first device target
PART = next((t for t in TARGETS if t != "cpu"), None)
check = seamtest.Checker("mutate", args.k)
WORK = os.path.abspath(args.work)
ARTIFACTS = os.path.join(WORK, "artifacts")

INTS = [0, -1, -2**31, 2**31 - 1, 2**62]
SWEEP_INTS = [0, -1, -2**31, 2**31, 2**31 + 1, 2**62, -2**62, 2**63 - 1, -2**63]
SWEEP_FLOATS = [float("nan"), float("inf"), float("-inf"), 0.0, -1.0, 3.4e38]
# a list's first entry alone (pads [2^62, 0, 0, 0]): the values that make one axis's
# arithmetic wrap while the others stay plausible
SWEEP_FIRST = [-1, 2**31, 2**62, -2**62, 2**63 - 1]
HUGE = 1 << 18  # "huge": a list attribute grown to this many copies of its first entry
FLOATS = [0.0, -1.0, float("nan"), float("inf"), float("-inf")]
# how a run of seam may end on hostile input: a result or a refusal with a message
OK_CODES = (0, 1, 2)
SANITIZER = ("AddressSanitizer", "UndefinedBehaviorSanitizer", "runtime error:", "LeakSanitizer")


def plugin_lib():
    """The library to load for the saved file of PART: None for a built-in
    target (dnnl), else --backend-lib or libseam_PART.so near SEAM_BINARY."""
    if PART in (None, "dnnl") or os.path.isfile(PART):  # built in, or a rules file the saved file carries
        return None
    if args.backend_lib:
        return os.path.abspath(args.backend_lib)
    here = os.path.dirname(os.path.realpath(args.seam))
    for d in (here, os.path.join(here, "bin"), os.path.join(here, "..", "lib")):
        p = os.path.join(d, f"libseam_{PART}.so")
        if os.path.isfile(p):
            return os.path.abspath(p)
    parser.error(f"--targets {args.targets}: no libseam_{PART}.so next to {args.seam} (or in its bin/, ../lib): "
                 "give --backend-lib SO")


PLUGIN = plugin_lib()


def known_crashes(path):
    """{(model, path)} from the known list: lines 'MODEL PATH  # why'."""
    out = set()
    if os.path.exists(path):
        for line in open(path):
            line = line.split("#", 1)[0].split()
            if len(line) == 2:
                out.add(tuple(line))
    return out


def models():
    """(name, model path, [input .pb paths]) for every model under the dirs."""
    out = []
    for d in args.dirs:
        if os.path.isfile(d) and d.endswith(".onnx"):
            out.append((os.path.basename(d)[:-5], d, []))
            continue
        for entry in sorted(os.listdir(d)):
            p = os.path.join(d, entry)
            if os.path.isfile(os.path.join(p, "model.onnx")):
                data = os.path.join(p, "test_data_set_0")
                pbs = []
                if os.path.isdir(data):
                    pbs = sorted((f for f in os.listdir(data) if f.startswith("input_")),
                                 key=lambda f: int(f[6:-3]) if f[6:-3].isdigit() else 0)
                    pbs = [os.path.join(data, f) for f in pbs]
                out.append((entry, os.path.join(p, "model.onnx"), pbs))
            elif entry.endswith(".onnx") and os.path.isfile(p):
                out.append((entry[:-5], p, []))
    return out


def all_nodes(graph):
    """Every node of graph and of its bodies."""
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == AttributeProto.GRAPH:
                yield from all_nodes(a.g)
            elif a.type == AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from all_nodes(g)


def hostile_int(rng):
    return rng.choice(INTS)


def mutate_tensor(rng, t):
    """One element of TensorProto t set to a hostile value; False if t has
    no elements or a type this does not change."""
    try:
        a = numpy_helper.to_array(t).copy()
    except Exception:
        return False
    if a.size == 0:
        return False
    flat = a.reshape(-1)
    k = rng.randrange(a.size)
    if a.dtype.kind in "iu":
        info = np.iinfo(a.dtype)
        flat[k] = max(info.min, min(info.max, hostile_int(rng)))
    elif a.dtype.kind == "f":
        flat[k] = rng.choice(FLOATS)
    else:
        return False
    t.CopyFrom(numpy_helper.from_array(a, t.name))
    return True


def mutate_attr(rng, node):
    """One attribute of node set to a hostile value; a description or None."""
    attrs = [a for a in node.attribute if a.type != AttributeProto.GRAPH and a.type != AttributeProto.GRAPHS]
    if not attrs:
        return None
    a = rng.choice(attrs)
    if a.type == AttributeProto.INT:
        a.i = hostile_int(rng)
        return f"{a.name}={a.i}"
    if a.type == AttributeProto.INTS:
        if not a.ints or rng.random() < 0.3:
            del a.ints[:]
            return f"{a.name}=[]"
        k = rng.randrange(len(a.ints))
        a.ints[k] = hostile_int(rng)
        return f"{a.name}[{k}]={a.ints[k]}"
    if a.type == AttributeProto.FLOAT:
        a.f = rng.choice(FLOATS)
        return f"{a.name}={a.f}"
    if a.type == AttributeProto.FLOATS:
        if not a.floats or rng.random() < 0.3:
            del a.floats[:]
            return f"{a.name}=[]"
        k = rng.randrange(len(a.floats))
        a.floats[k] = rng.choice(FLOATS)
        return f"{a.name}[{k}]={a.floats[k]}"
    if a.type == AttributeProto.STRING:
        a.s = rng.choice([b"", b"BOGUS"])
        return f"{a.name}='{a.s.decode()}'"
    if a.type == AttributeProto.STRINGS:
        del a.strings[:]
        return f"{a.name}=[]"
    if a.type == AttributeProto.TENSOR:
        return f"{a.name} element" if mutate_tensor(rng, a.t) else None
    return None


def mutate_model(rng, m, kind):
    """Applies a mutation of kind to ModelProto m in place; a description,
    or None when kind does not apply to m."""
    nodes = list(all_nodes(m.graph))
    if not nodes:
        return None
    node = rng.choice(nodes)
    where = f"{node.op_type} '{node.name}'" if node.name else node.op_type
    if kind == "attr":
        d = mutate_attr(rng, node)
        return f"{where}: {d}" if d else None
    if kind == "tensor":
        consts = [a.t for n in nodes for a in n.attribute if a.type == AttributeProto.TENSOR]
        consts += [t for t in m.graph.initializer if t.data_type in (TensorProto.INT64, TensorProto.INT32)]
        rng.shuffle(consts)
        for t in consts:
            if mutate_tensor(rng, t):
                return f"constant '{t.name}' element"
        return None
    if kind == "drop":
        if not node.input:
            return None
        k = rng.randrange(len(node.input))
        if k == len(node.input) - 1:
            node.input.pop()
            return f"{where}: input {k} removed"
        node.input[k] = ""
        return f"{where}: input {k} emptied"
    if kind == "axis":
        for a in list(node.attribute):
            if a.name == "axis":
                node.attribute.remove(a)
        v = hostile_int(rng)
        node.attribute.append(helper.make_attribute("axis", v))
        return f"{where}: axis={v}"
    return None


def mutate_input(rng, kind, arr):
    """An array that contradicts the model: another rank, dtype or size."""
    if kind == "rank":
        return arr[np.newaxis] if arr.ndim < 6 and rng.random() < 0.6 else arr.reshape(-1)[: max(arr.size, 1)]
    if kind == "dtype":
        choices = [np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_]
        choices = [c for c in choices if np.dtype(c) != arr.dtype]
        return arr.astype(rng.choice(choices))
    # size: one axis one longer, or empty
    if arr.ndim == 0:
        return np.resize(arr, (2,))
    shape = list(arr.shape)
    ax = rng.randrange(arr.ndim)
    shape[ax] = 0 if rng.random() < 0.3 else shape[ax] + 1
    return np.resize(arr, shape)


def feed_names(m):
    inits = {i.name for i in m.graph.initializer}
    return [i.name for i in m.graph.input if i.name not in inits]


KINDS = ["attr", "attr", "attr", "tensor", "drop", "axis", "rank", "dtype", "size"]


def make_case(name, path, pbs, index):
    """Writes the variant's model and inputs into WORK/cases/NAME/mINDEX;
    returns (case dir, model path, [--input args], description)."""
    seed = zlib.crc32(f"{args.seed}:{name}:{index}".encode())
    rng = random.Random(seed)
    m = onnx.load(path, load_external_data=False)
    d = os.path.join(WORK, "cases", name, case_label(index))
    os.makedirs(d, exist_ok=True)
    names = feed_names(m)
    feeds = {}
    for k, pb in enumerate(pbs[: len(names)]):
        feeds[names[k]] = pb
    desc = None
    if isinstance(index, tuple):  # the sweep: one attribute, one value
        _, node_k, attr, value = index
        node = list(all_nodes(m.graph))[node_k]
        name_, _, first = attr.partition(".")  # ATTR.0: the first entry only
        a = next((a for a in node.attribute if a.name == name_), None)
        if a is None:  # an attribute the node leaves at its default: added
            kind, length = absent_kind(m, node, name_)
            a = node.attribute.add()
            a.name, a.type = name_, kind
            if kind == AttributeProto.INTS:
                a.ints.extend([1] * length)
            elif kind == AttributeProto.FLOATS:
                a.floats.extend([1.0] * length)
        if value == "huge":
            for field in ("ints", "floats", "strings"):
                lst = getattr(a, field)
                if len(lst):
                    lst.extend([lst[0]] * (HUGE - len(lst)))
        elif a.type == AttributeProto.INT:
            a.i = value
        elif a.type == AttributeProto.INTS:
            a.ints[:] = [value] + list(a.ints[1:]) if first else [value] * len(a.ints)
        elif a.type == AttributeProto.FLOAT:
            a.f = value
        elif a.type == AttributeProto.FLOATS:
            a.floats[:] = [value] + list(a.floats[1:]) if first else [value] * len(a.floats)
        desc = f"sweep: {node.op_type} node {node_k}: {attr}={value if value != 'huge' else f'{HUGE} entries'}"
    for _ in range(0 if desc else 8):
        kind = rng.choice(KINDS)
        if kind in ("rank", "dtype", "size"):
            cands = [n for n in names if n in feeds]
            if not cands:
                continue
            victim = rng.choice(cands)
            t = TensorProto()
            try:
                with open(feeds[victim], "rb") as f:
                    t.ParseFromString(f.read())
                arr = numpy_helper.to_array(t)
            except Exception:
                continue
            if arr.dtype.kind not in "iufb":
                continue
            bad = mutate_input(rng, kind, arr)
            npy = os.path.join(d, f"input_{names.index(victim)}.npy")
            np.save(npy, bad)
            feeds[victim] = npy
            desc = f"{kind}: input '{victim}' given as {bad.dtype}{list(bad.shape)}"
            break
        desc = mutate_model(rng, m, kind)
        if desc:
            desc = f"{kind}: {desc}"
            break
        m = onnx.load(path, load_external_data=False)  # a partial change must not leak into the next try
    if desc is None:
        desc = "unchanged (no mutation applies)"
    mpath = os.path.join(d, "model.onnx")
    with open(mpath, "wb") as f:
        f.write(m.SerializeToString())
    inputs = []
    for n, p in feeds.items():
        inputs += ["--input", f"{n}={p}"]
    return seed, d, mpath, inputs, desc


def case_label(index):
    """mN for a random mutation, sNODE.ATTR=VALUE for a sweep case."""
    return f"s{index[1]}.{index[2]}={index[3]}" if isinstance(index, tuple) else f"m{index}"


def schema_attrs(m, node):
    """{name: AttributeProto type} of node's integer and float attributes in
    its operator schema at the model's opset ({} for an unknown op)."""
    ver = {o.domain: o.version for o in m.opset_import}
    dom = "" if node.domain == "ai.onnx" else node.domain
    try:
        schema = onnx.defs.get_schema(node.op_type, ver.get(dom, ver.get("", 1)), dom)
    except Exception:
        return {}
    A = AttributeProto
    return {k: int(v.type) for k, v in schema.attributes.items() if int(v.type) in (A.INT, A.INTS, A.FLOAT, A.FLOATS)}


SPATIAL_LISTS = ("kernel_shape", "strides", "dilations", "output_padding", "output_shape")


def absent_kind(m, node, name):
    """(type, length) of attribute NAME that node leaves at its default: a
    list as long as its window has axes (pads twice that), else one entry."""
    kind = schema_attrs(m, node).get(name, AttributeProto.INT)
    if kind not in (AttributeProto.INTS, AttributeProto.FLOATS):
        return kind, 0
    n_sp = next((len(a.ints) for a in node.attribute if a.name in SPATIAL_LISTS and a.ints), 0)
    if not n_sp:
        n_sp = next((len(a.ints) // 2 for a in node.attribute if a.name == "pads" and a.ints), 0)
    if not n_sp and node.input:
        for v in list(m.graph.input) + list(m.graph.value_info):
            if v.name == node.input[0] and v.type.tensor_type.HasField("shape"):
                n_sp = max(len(v.type.tensor_type.shape.dim) - 2, 1)
    n_sp = n_sp or 2
    return kind, 2 * n_sp if name == "pads" else n_sp if name in SPATIAL_LISTS else 1


def sweep_cases(all_models):
    """(name, path, pbs, ("s", node index, attribute, value)) for the sweep:
    each (op type, integer or float attribute) pair in its first args.sweep
    models, through SWEEP_INTS or SWEEP_FLOATS (every entry of a list; and,
    for a list of more entries, its first entry alone through SWEEP_FIRST,
    as ATTR.0), and each list attribute grown to HUGE entries. An integer or
    float attribute of the op's schema that no model sets is added, with
    those values, to the first args.sweep models holding the op."""
    A = AttributeProto
    loaded = []
    present = set()
    for name, path, pbs in all_models:
        try:
            m = onnx.load(path, load_external_data=False)
        except Exception:
            continue
        loaded.append((name, path, pbs, m))
        present.update((n.op_type, a.name) for n in all_nodes(m.graph) for a in n.attribute)
    seen = {}
    out = []

    def take(key):
        if args.sweep and seen.get(key, 0) >= args.sweep:
            return False
        seen[key] = seen.get(key, 0) + 1
        return True

    for name, path, pbs, m in loaded:
        for k, node in enumerate(all_nodes(m.graph)):
            cases = []
            for a in node.attribute:
                ints = a.type == A.INT or (a.type == A.INTS and a.ints)
                floats = a.type == A.FLOAT or (a.type == A.FLOATS and a.floats)
                listed = (a.type == A.INTS and a.ints) or (a.type == A.FLOATS and a.floats) or \
                         (a.type == A.STRINGS and a.strings)
                if not (ints or floats or listed) or not take((node.op_type, a.name)):
                    continue
                values = SWEEP_INTS if ints else SWEEP_FLOATS if floats else []
                cases += [(a.name, v) for v in values + (["huge"] if listed else [])]
                n_list = len(a.ints) if a.type == A.INTS else len(a.floats) if a.type == A.FLOATS else 0
                if n_list > 1:
                    cases += [(a.name + ".0", v) for v in (SWEEP_FIRST if ints else SWEEP_FLOATS[:3])]
            for attr, kind in sorted(schema_attrs(m, node).items()):
                if (node.op_type, attr) in present or not take((node.op_type, attr)):
                    continue
                cases += [(attr, v) for v in (SWEEP_INTS if kind in (A.INT, A.INTS) else SWEEP_FLOATS)]
                if kind in (A.INTS, A.FLOATS):
                    cases.append((attr, "huge"))
            out += [(name, path, pbs, ("s", k, attr, v)) for attr, v in cases]
    return out


def run(cmd, env):
    """(exit code or 'timeout', stderr). The run gets a session of its own
    so that a timeout kills all of it: seam and, when SEAM_BINARY is a
    wrapper script that does not exec, the shell around it."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
                         env=env, start_new_session=True)
    try:
        _, err = p.communicate(timeout=args.timeout)
        return p.returncode, err
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, 9)
        except ProcessLookupError:
            pass
        p.communicate()
        return "timeout", ""


def verdict(code, err):
    """None when the run ended as hostile input may end it, else why not."""
    if code == "timeout":
        return f"ran longer than {args.timeout:g} s"
    if any(s in err for s in SANITIZER):
        lines = [ln for ln in err.splitlines() if any(s in ln for s in SANITIZER)]
        return f"sanitizer report: {lines[0].strip()[:300]}"
    if code < 0:
        return f"killed by signal {-code}"
    if code > 128 and code - 128 in (4, 6, 7, 8, 9, 11):  # a shell's report of a signal (SIGILL, ABRT, BUS, FPE, KILL, SEGV)
        return f"exit {code}: killed by signal {code - 128} (through a shell)"
    if code not in OK_CODES:
        return f"exit {code}"
    if code != 0 and not err.strip():
        return f"exit {code} without a message"
    return None


T0 = time.monotonic()


def run_case(case):
    """(case, seed, folder, description, results); None when --budget was
    spent before it started."""
    if args.budget and time.monotonic() - T0 > args.budget:
        return None
    name, path, pbs, index = case
    seed, d, mpath, inputs, desc = make_case(name, path, pbs, index)
    # In the sanitizer build a huge allocation returns NULL, as it does
    # without the sanitizer, so that seam's own out-of-memory path runs.
    asan = os.environ.get("ASAN_OPTIONS", "")
    env = dict(os.environ, OMP_NUM_THREADS="1",
               ASAN_OPTIONS=(asan + ":" if asan else "") + "allocator_may_return_null=1")
    seam = os.path.abspath(args.seam)
    results = []  # (path, code, verdict or None, stderr)
    for label in TARGETS:
        where = [] if label == "cpu" else ["--target", label, "--placement", "capability"]
        code, err = run([seam, "run", "--threads", "1", *where, mpath, *inputs], env)
        results.append((label, code, verdict(code, err), err))
    if PART and (isinstance(index, tuple) or index == 0):
        saved = os.path.join(d, "partitioned.onnx")
        code, err = run([seam, "partition", "--target", PART, "--placement", "capability", "-o", saved, mpath], env)
        v = verdict(code, err)
        results.append(("partition", code, v, err))
        if code == 0 and os.path.exists(saved):
            lib = ["--backend-lib", PLUGIN] if PLUGIN else []
            code, err = run([seam, "run", "--threads", "1", *lib, saved, *inputs], env)
            results.append(("saved", code, verdict(code, err), err))
    return case, seed, d, desc, results


def keep_artifact(name, index, seed, d):
    """Copies the case's folder to WORK/artifacts/NAME_mINDEX_seedSEED."""
    dst = os.path.join(ARTIFACTS, f"{name}_{case_label(index)}_seed{seed}")
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(d, dst)
    return dst


def main():
    known = known_crashes(args.known)
    cases = []
    all_models = models()
    for name, path, pbs in all_models:
        for i in range(args.mutations):
            if check.selected(f"{name}/m{i}"):
                cases.append((name, path, pbs, i))
    if args.sweep >= 0:
        cases += [c for c in sweep_cases(all_models) if check.selected(f"{c[0]}/{case_label(c[3])}")]
    shutil.rmtree(os.path.join(WORK, "cases"), ignore_errors=True)
    os.makedirs(ARTIFACTS, exist_ok=True)
    global T0
    T0 = t0 = time.monotonic()
    runs = known_hits = skipped = 0
    outcomes = {}
    me = [sys.executable, os.path.abspath(__file__), args.seam, args.work, *args.dirs]
    if args.targets != "cpu,dnnl":
        me += ["--targets", args.targets] + (["--backend-lib", PLUGIN] if PLUGIN else [])
    if args.seed != 17:
        me += ["--seed", str(args.seed)]
    if args.sweep >= 0:
        me += ["--sweep", str(args.sweep)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for got in pool.map(run_case, cases):
            if got is None:
                skipped += 1
                continue
            case, seed, d, desc, results = got
            name, _, _, index = case
            runs += len(results)
            bad = []
            for label, code, v, err in results:
                outcomes[label, "ok" if code == 0 else "refused"] = outcomes.get((label, "ok" if code == 0 else "refused"), 0) + 1
                if not v:
                    continue
                if (name, PART if label in ("partition", "saved") else label) in known:
                    known_hits += 1
                    continue
                last = [ln for ln in err.strip().splitlines()][-3:]
                bad.append(f"{label}: {v}" + (f" ({' | '.join(last)[:300]})" if last else ""))
            case_name = f"{name}/{case_label(index)}"
            if bad:
                art = keep_artifact(name, index, seed, d)
                check.fail(f"{case_name} [{desc}] seed {seed}: {'; '.join(bad)}\n"
                           f"     kept in {art}\n     again: {' '.join(me)} -k {case_name}")
            elif not check.everything:
                check.ok(f"{case_name} [{desc}]: " + "; ".join(
                    f"{lb} {c}" + (f" ({e.strip().splitlines()[-1][:160]})" if c and e.strip() else "")
                    for lb, c, _, e in results))
            if not bad:  # (a mutated model and its partitioned copy: 0.8 GB over the real models)
                shutil.rmtree(d, ignore_errors=True)
    secs = time.monotonic() - t0
    n_models = len({c[0] for c in cases})
    summary = (f"{n_models} models, {len(cases)} mutations, {runs} runs in {secs:.0f} s "
               f"(on {args.targets}; {args.jobs} at once, timeout {args.timeout:g} s); "
               + ", ".join(f"{lb} {k} {n}" for (lb, k), n in sorted(outcomes.items()))
               + (f"; {known_hits} known crashes (mutate_known.txt)" if known_hits else "")
               + (f"; {skipped} cases not started: the budget of {args.budget:g} s was spent" if skipped else ""))
    if check.everything and not skipped and len(cases) < args.mutations * len(all_models):
        check.fail("fewer cases than models x mutations")
    check.finish(summary)


main()
