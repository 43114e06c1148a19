"""What seam's Python checkers (tests/checks/*.py) share: running a program,
collecting failures, selecting cases with -k (or one in K under
$SEAM_TEST_SAMPLE, as the sanitizer build does), loading outputs, the
comparisons of outputs with their references, and writing small ONNX models.

Every comparison of an output goes through the functions here (abs_err,
rel_err, worst, max_rel_err, out_err, ulp_err, same_bits, quanta, steps):
a NaN or an infinity in one tensor and not the other, or another shape, is
a failure (an infinite error), never a NaN that a `max()` skips or an
`err <= tol` answers by accident. check_escapes.py plants such faults in a
real pair and checks that each of them fails.

A checker finds this module from its own path, so that it runs the same from
ctest, from another folder or by hand:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    import seamtest

and starts with

    p = seamtest.arg_parser(__doc__)
    p.add_argument("seam") ...
    args = p.parse_args()
    check = seamtest.Checker("name", args.k)

Every check then goes through check.fail / check.expect, every case through
check.selected(NAME), and the script ends with check.finish(summary).
"""
import argparse
import fnmatch
import os
import shutil
import time
import zlib
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# SEAM_TEST_QUIET=1: checks that pass are counted, not printed (Checker.ok)
QUIET = os.environ.get("SEAM_TEST_QUIET") == "1"

# the floor of the scale in rel_err, so that an all-zero reference does not
# divide by zero
TINY = 1e-6


def arg_parser(doc):
    """An argument parser with the checker's docstring as its help and -k."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-k", action="append", default=[], metavar="PATTERN",
                   help="run only the cases whose name contains PATTERN, or matches it when it holds * ? or [ "
                        "(a shell pattern); may be given several times. A PATTERN that selects nothing is an error.")
    return p


def checker_setup(doc, title, timeout=None, models=False):
    """The start of a checker run as `CHECKER SEAM WORKDIR [MODELS_DIR]`:
    parses the arguments (with -k), makes WORKDIR, and returns (args,
    Program(SEAM), WORKDIR, Checker)."""
    p = arg_parser(doc)
    p.add_argument("seam", metavar="SEAM")
    p.add_argument("work", metavar="WORKDIR")
    if models:
        p.add_argument("models", metavar="MODELS_DIR", nargs="?")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    return args, Program(args.seam, timeout=timeout), args.work, Checker(title, args.k)


def sample_setting():
    """(K, SEED) from $SEAM_TEST_SAMPLE and $SEAM_TEST_SEED, or (1, "") when
    every case runs. The sanitizer build sets SEAM_TEST_SAMPLE on its slow
    checkers (tests/CMakeLists.txt), scripts/test.sh sets the seed to the
    commit, so that each commit runs another share and a run can be repeated
    exactly."""
    raw = os.environ.get("SEAM_TEST_SAMPLE", "").strip()
    if not raw:
        return 1, ""
    try:
        k = int(raw)
    except ValueError:
        sys.exit(f"SEAM_TEST_SAMPLE={raw!r}: expected a whole number K (run 1 case in K)")
    if k < 1:
        sys.exit(f"SEAM_TEST_SAMPLE={raw!r}: K must be at least 1")
    return k, os.environ.get("SEAM_TEST_SEED", "0")


class Checker:
    """Selects cases (-k, or one case in K under SEAM_TEST_SAMPLE) and
    collects failures for one checker script."""

    def __init__(self, title, patterns=()):
        self.title = title
        self.patterns = list(patterns or ())
        self.failures = []
        self.passed = 0  # checks that passed (ok)
        self.seen = []   # every case name offered to selected(), in order
        self.ran = 0     # how many of them were selected
        # -k wins over sampling: a case asked for by name always runs
        self.sample, self.seed = sample_setting() if not self.patterns else (1, "")

    @property
    def everything(self):
        """True without -k and without sampling: checks over the whole run
        (coverage counts) apply."""
        return not self.patterns and self.sample == 1

    def sampled(self, name):
        """Whether SEAM_TEST_SAMPLE keeps the case NAME: a hash of the seed
        and the name, so the share is the same for a name in every checker
        run with that seed, whatever else is offered."""
        if self.sample == 1:
            return True
        return zlib.crc32(f"{self.seed}:{name}".encode()) % self.sample == 0

    def matches(self, name):
        """Whether -k selects the case NAME (always, without -k)."""
        if not self.patterns:
            return True
        return any(fnmatch.fnmatchcase(name, p) if any(c in p for c in "*?[") else p in name
                   for p in self.patterns)

    def selected(self, name, needed_by=()):
        """Whether to run the case NAME: -k selects it, or one of the cases
        in needed_by, which use what this one leaves in the work folder."""
        self.seen.append(name)
        if self.sample > 1:
            take = self.sampled(name) or any(self.sampled(n) for n in needed_by)
            if take:
                self.ran += 1
            return take
        if self.matches(name) or any(self.matches(n) for n in needed_by):
            self.ran += 1
            return True
        return False

    def fail(self, what):
        print("FAIL", what, flush=True)
        self.failures.append(what)

    def ok(self, what):
        """Prints what passed, unless SEAM_TEST_QUIET=1 (scripts/test.sh
        sets it: CI shows the start of a failed test's output, where the
        FAIL lines then are); the count is in finish's summary either way."""
        self.passed += 1
        if not QUIET:
            print("ok  ", what, flush=True)

    def expect(self, cond, what, detail=None):
        """Prints ok or FAIL for what (with detail on a failure); a failure
        is kept. Returns cond."""
        if cond:
            self.ok(what)
        else:
            self.fail(f"{what}: {detail}" if detail is not None else what)
        return bool(cond)

    def finish(self, summary=None):
        """Prints the failures again and a summary line, and exits: 0 when all
        passed, 1 on a failure, 2 when -k selected no case."""
        if self.patterns and not self.ran:
            print(f"{self.title}: no case matches -k {' -k '.join(self.patterns)}; the cases are:")
            for name in self.seen:
                print("  ", name)
            sys.exit(2)
        if self.failures:
            print(f"{self.title}: {len(self.failures)} failures:")
            for f in self.failures:
                print("  FAIL", f)
        if summary:
            print(f"{self.title}: {summary}")
        if self.sample > 1:
            print(f"{self.title}: {self.ran} of {len(self.seen)} cases run (SEAM_TEST_SAMPLE={self.sample}, "
                  f"SEAM_TEST_SEED={self.seed}; unset SEAM_TEST_SAMPLE to run them all)")
        elif not self.everything:
            print(f"{self.title}: {self.ran} of {len(self.seen)} cases selected by -k")
        print(f"{self.title}: {'FAILED' if self.failures else 'passed'} ({self.passed} checks passed, "
              f"{len(self.failures)} failed)")
        sys.exit(1 if self.failures else 0)


class Program:
    """A program to run with arguments; calling it returns the
    CompletedProcess with stdout and stderr captured as text."""

    def __init__(self, path, timeout=None):
        self.path, self.timeout = path, timeout

    def __call__(self, *args, env=None, timeout=None):
        # bytes that are not UTF-8 (a message cut inside a character, a
        # model's own strings) are replaced, never a UnicodeDecodeError that
        # ends the whole checker
        return subprocess.run([self.path, *map(str, args)], capture_output=True, text=True, errors="replace", env=env,
                              timeout=timeout if timeout is not None else self.timeout)


def abs_err(got, want):
    """max|got - want| in float64, where a NaN or an infinity counts: inf
    when the shapes differ, where one holds a NaN and the other not, or an
    infinity the other lacks (a NaN in both at one position, or the same
    infinity in both, is equal: references of NaN propagation have them).
    0.0 for empty tensors of one shape. Never NaN, so `e <= tol` fails
    whenever the outputs differ in any of those ways."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return float("inf")
    if not want.size:
        return 0.0
    g, w = got.astype(np.float64), want.astype(np.float64)
    gn, wn = np.isnan(g), np.isnan(w)
    if not np.array_equal(gn, wn):
        return float("inf")
    odd = np.isinf(g) | np.isinf(w)
    if odd.any() and not np.array_equal(g[odd], w[odd]):
        return float("inf")
    fin = ~(wn | odd)
    return float(np.abs(g[fin] - w[fin]).max()) if fin.any() else 0.0


def rel_err(got, want):
    """abs_err(got, want) / max(max|want|, TINY) (the largest finite |want|):
    the error relative to the output's scale, in float64; inf for a shape
    mismatch or a NaN or infinity in one but not the other (see abs_err);
    0.0 for empty tensors. Never NaN."""
    e = abs_err(got, want)
    if e == 0.0 or e == float("inf"):
        return e
    w = np.asarray(want, np.float64)
    fin = np.isfinite(w)
    return e / max(float(np.abs(w[fin]).max()) if fin.any() else 0.0, TINY)


def worst(errs):
    """The largest of errs (0.0 when there are none), where a NaN counts as
    inf: Python's max() skips a NaN that is not first, numpy's nanmax any."""
    out = 0.0
    for e in errs:
        e = float(e)
        if e != e:
            return float("inf")
        out = max(out, e)
    return out


def max_rel_err(gots, wants):
    """worst(rel_err(g, w)) over two lists of outputs, in order; inf when
    the lists differ in length (zip() would drop the extra ones)."""
    gots, wants = list(gots), list(wants)
    if len(gots) != len(wants):
        return float("inf")
    return worst(rel_err(g, w) for g, w in zip(gots, wants))


def out_err(got, want):
    """The error of one output against its reference: rel_err for a
    floating-point reference; for any other type 0.0 when equal (the same
    shape and values) and inf otherwise."""
    want = np.asarray(want)
    if np.issubdtype(want.dtype, np.floating):
        return rel_err(got, want)
    got = np.asarray(got)
    return 0.0 if got.shape == want.shape and np.array_equal(got, want) else float("inf")


def same_bits(a, b):
    """Equal shape, dtype and values, NaN at the same positions and the
    same sign bits (-0.0 is not 0.0)."""
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True) and \
        np.array_equal(np.signbit(a), np.signbit(b))


def ulp_err(got, want, abs_tol):
    """(bad, worst_ulp, first) for an elementwise op's output against a
    float64 reference: bad counts the elements off by more than 4 ulp of
    the reference (in float32) and by more than abs_tol; worst_ulp is the
    largest error in ulp where it is above abs_tol; first is the index of
    the first bad element (or None). NaN must be where the reference has
    NaN and nowhere else, an infinity must equal the reference's: every
    other element is bad, and a shape mismatch makes all of them bad
    (first None)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return max(want.size, 1), float("inf"), None
    nan = np.isnan(want)
    g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    ulp = np.spacing(np.abs(w).astype(np.float32)).astype(np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf
        err = np.where((g == w) | (np.isnan(g) & nan.ravel()), 0.0, np.abs(g - w))
    err = np.where(np.isnan(err), np.inf, err)  # a NaN in got alone
    bad = (err > abs_tol) & ~(err <= 4 * ulp)  # (an infinite reference has a NaN ulp)
    above = np.isfinite(w) & (err > abs_tol) & ~bad
    w_ulp = float(np.max(err[above] / ulp[above])) if above.any() else 0.0
    if bad.any():
        return int(bad.sum()), float("inf"), int(np.argmax(bad))
    return 0, w_ulp, None


def quanta(got, want, scale):
    """(max difference in quanta, elements off by half a quantum or more,
    ok): ok when every element is within one quantum (scale) of want, plus
    1e-6 of want's largest magnitude. A shape mismatch, or a NaN or an
    infinity not in want at the same place, is an infinite difference."""
    want = np.asarray(want, np.float64)
    e = abs_err(got, want)
    if e == float("inf"):
        return float("inf"), max(want.size, 1), False
    fin = np.isfinite(want)
    d = np.where(fin, np.abs(np.asarray(got, np.float64) - np.where(fin, want, 0)), 0.0)
    eps = 1e-6 * max(1.0, float(np.abs(want[fin]).max()) if fin.any() else 0.0)
    return e / scale, int((d >= 0.5 * scale).sum()), e <= scale * (1 + 1e-4) + eps


def steps(got, want):
    """(elements that differ, largest difference) between two integer
    tensors (quantized values); a shape mismatch is (-1, inf)."""
    a, b = np.asarray(got).astype(np.int64), np.asarray(want).astype(np.int64)
    if a.shape != b.shape:
        return -1, float("inf")
    d = np.abs(a - b)
    return int((d > 0).sum()), int(d.max()) if d.size else 0


def output_file(out_dir, name):
    """Where `seam run --output-dir` writes output NAME: the characters
    other than letters, digits and ._- become _, as tools/cli/run.c does."""
    s = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    return os.path.join(out_dir, (s if s not in ("", ".", "..") else "output") + ".npy")


def load_outputs(model, out_dir):
    """The graph outputs of model (a path or a ModelProto) as written by
    `seam run --output-dir out_dir`, in the graph's order."""
    m = onnx.load(model, load_external_data=False) if isinstance(model, str) else model
    return [np.load(output_file(out_dir, o.name)) for o in m.graph.output]


def feeds(model):
    """The graph inputs of a ModelProto that are not initializers."""
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def has_symbolic_dims(value_info):
    return any(not d.HasField("dim_value") for d in value_info.type.tensor_type.shape.dim)


def shape_arg(shape):
    """A shape as seam's --shape takes it: 2x3x224."""
    return "x".join(str(d) for d in shape)


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def initializers(arrays):
    """{name: array-like} as initializers: integer arrays keep their type,
    everything else becomes float32."""
    out = []
    for name, v in arrays.items():
        a = np.asarray(v)
        out.append(numpy_helper.from_array(a if a.dtype.kind in "iu" else np.asarray(v, np.float32), name))
    return out


def make_model(nodes, inputs, outputs, inits=(), value_info=(), name="g", opset=13, domains=()):
    """A model of one graph; inits are TensorProtos, domains extra
    (domain, version) opsets."""
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits), value_info=list(value_info))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] +
                             [helper.make_opsetid(d, v) for d, v in domains])


def save_model(path, *args, **kw):
    """make_model(*args, **kw) saved at path; returns path."""
    onnx.save(make_model(*args, **kw), path)
    return path


def mlp_model(path, layers, hidden, out=16, seed=0):
    """An MLP of `layers` MatMul + Add (+ Relu) layers of hidden x hidden
    float32 random weights (the last hidden x out), input x ["N", hidden],
    saved at path (check_mpi, bench/pipeline_bench.py). Returns its output's
    name and its weights' bytes."""
    rng = np.random.default_rng(seed)
    nodes, inits, prev = [], [], "x"
    for i in range(layers):
        o = out if i == layers - 1 else hidden
        w = (rng.standard_normal((hidden, o)) / np.sqrt(hidden)).astype(np.float32)
        b = (rng.standard_normal(o) * 0.1).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"], name=f"matmul{i}"))
        nodes.append(helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"add{i}"))
        prev = f"a{i}"
        if i < layers - 1:
            nodes.append(helper.make_node("Relu", [prev], [f"h{i}"], name=f"relu{i}"))
            prev = f"h{i}"
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", hidden])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", out])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return prev, sum(t.dims[0] * (t.dims[1] if len(t.dims) > 1 else 1) * 4 for t in inits)


# ---- ONNX Runtime (npm's onnxruntime-node), the peer ---------------------------

LIB = os.path.dirname(os.path.abspath(__file__))
ORT_DIR = os.environ.get("SEAM_ORT_DIR") or os.path.normpath(os.path.join(LIB, "..", "..", "bench", "ort"))


def ort_problem():
    """None when ONNX Runtime can run, else why not."""
    if not shutil.which("node"):
        return "node is not installed (Debian: nodejs npm)"
    if not os.path.isdir(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node")):
        return (f"ONNX Runtime is not installed: no {ORT_DIR}/node_modules/onnxruntime-node "
                f"(run `npm install --ignore-scripts` in bench/ort, as scripts/setup.sh does, or set SEAM_ORT_DIR)")
    return None


def cpu_flags():
    """This CPU's flags from /proc/cpuinfo (empty where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            return set(next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), []))
    except OSError:
        return set()


def cpu_has_vnni():
    """AVX512-VNNI or AVX-VNNI: without either, int8 kernels built on
    vpmaddubsw (ONNX Runtime's u8 x s8 GEMMs, oneDNN's) add pairs of
    products in 16 bits and saturate."""
    f = cpu_flags()
    return "avx512_vnni" in f or "avx_vnni" in f


def dnnl_avx512_layouts():
    """Whether oneDNN runs its AVX-512 kernels here (avx512_core: F, BW,
    VL, DQ; ONEDNN_MAX_CPU_ISA not capping it). The dnnl checks that expect
    a layout (aBcd16b, channels-last acdb after brgconv) or what seam made
    of it (a host step, a Concat in place, a count of reorders) were
    written from oneDNN 2.6 on such a CPU; elsewhere oneDNN picks other
    layouts (aBcd8b on AVX2) and those checks say they were not run, while
    the outputs are still checked."""
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA", os.environ.get("DNNL_MAX_CPU_ISA", "ALL")).upper()
    if cap not in ("ALL", "") and not cap.startswith("AVX512_CORE"):
        return False
    return {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= cpu_flags()


# (op, index of its int8 weight, index of that weight's zero point)
# (domain, op): the index of its int8 weight, of the weight's zero point,
# and of the zero point that says the activation's type (None: none, or
# uint8 always); com.microsoft's are ONNX Runtime's contrib ops
_INT8_WEIGHTS = {("", "DequantizeLinear"): (0, 2, None), ("", "QLinearConv"): (3, 5, 2),
                 ("", "QLinearMatMul"): (3, 5, 2), ("", "MatMulInteger"): (1, 3, 2), ("", "ConvInteger"): (1, 3, 2),
                 ("com.microsoft", "QGemm"): (3, 5, 2), ("com.microsoft", "MatMulIntegerToFloat"): (1, 5, 4),
                 ("com.microsoft", "DynamicQuantizeMatMul"): (1, 3, None)}


def u8_weights_copy(model, out_path):
    """A copy of model whose constant int8 weights (those of the ops in
    _INT8_WEIGHTS) are uint8 with 128 added to the values and to their zero
    points: every dequantized weight and every integer product (w - w_zp)
    is the same, and ONNX Runtime computes it with its u8 x u8 kernels,
    which are exact on every CPU. A product whose activation is int8 (its
    zero point an int8 initializer) keeps its weights: ONNX Runtime has no
    s8 x u8 kernel, and s8 x s8 does not saturate. Returns out_path, or
    None when the model has no such weight."""
    m = onnx.load(model)
    inits = {i.name: i for i in m.graph.initializer}
    users = {}
    for n in m.graph.node:
        for i in n.input:
            users.setdefault(i, set()).add(n.op_type)
    changed, done = False, set()
    for n in m.graph.node:
        spec = _INT8_WEIGHTS.get(("" if n.domain == "ai.onnx" else n.domain, n.op_type))
        if not spec:
            continue
        wi, zi, ai = spec
        if len(n.input) <= wi or n.input[wi] not in inits:
            continue
        xz = n.input[ai] if ai is not None and len(n.input) > ai else ""
        if xz in inits and numpy_helper.to_array(inits[xz]).dtype == np.int8:
            continue
        wname = n.input[wi]
        w = numpy_helper.to_array(inits[wname])
        if w.dtype != np.int8 or users.get(wname, set()) - {n.op_type}:
            continue
        zname = n.input[zi] if len(n.input) > zi and n.input[zi] else None
        if zname and zname not in inits:
            continue
        z = numpy_helper.to_array(inits[zname]) if zname else np.zeros((), np.int8)
        if wname not in done:
            inits[wname].CopyFrom(numpy_helper.from_array((w.astype(np.int16) + 128).astype(np.uint8), wname))
            done.add(wname)
        zu = (z.astype(np.int16) + 128).astype(np.uint8)
        if zname and zname not in done:
            inits[zname].CopyFrom(numpy_helper.from_array(zu, zname))
            done.add(zname)
        elif not zname:
            zname = wname + "_u8_zero_point"
            if zname not in done:
                m.graph.initializer.append(numpy_helper.from_array(zu, zname))
                done.add(zname)
            while len(n.input) <= zi:
                n.input.append("")
            n.input[zi] = zname
        changed = True
    if not changed:
        return None
    onnx.save(m, out_path)
    return out_path


_ORT_U8_SAID = []


def ort_run(model, feeds, out_dir, opt="all", meta=None):
    """Runs model on ONNX Runtime (2 threads, graph optimizations opt) with
    feeds {input name: file}; the outputs land in out_dir as seam run
    writes them; meta: a JSON file to receive ONNX Runtime's view of the
    inputs and outputs (name, type, shape). Returns (CompletedProcess, seconds).

    On a CPU without VNNI, ONNX Runtime's u8 x s8 kernels saturate (its
    quantization docs: "reduce_range"), so there it runs u8_weights_copy of
    a model with int8 weights: the same function, computed exactly."""
    if not cpu_has_vnni() and model.endswith(".onnx"):
        os.makedirs(out_dir, exist_ok=True)
        copy = u8_weights_copy(model, os.path.join(out_dir, "ort_u8_weights.onnx"))
        if copy:
            if not _ORT_U8_SAID:
                _ORT_U8_SAID.append(1)
                print("note: this CPU has no VNNI: ONNX Runtime runs the int8 models with their weights as uint8 "
                      "(+128, the same values) so that its kernels do not saturate (seamtest.u8_weights_copy)")
            model = copy
    cmd = ["node", os.path.join(LIB, "..", "checks", "ort_outputs.js"), ORT_DIR, model, out_dir, "--opt", opt,
           "--threads", "2"]
    if meta:
        cmd += ["--meta", meta]
    for k, f in feeds.items():
        cmd += ["--input", f"{k}={f}"]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return r, time.time() - t0
