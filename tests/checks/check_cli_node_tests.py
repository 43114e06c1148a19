"""Every ONNX backend node test through `seam run`, as a user runs it.

usage: /usr/bin/python3 check_cli_node_tests.py SEAM_BINARY CONFORMANCE_DRIVER WORKDIR NODE_DIR
                                                [-k PATTERN] [--jobs N]

Each test folder's model.onnx runs as

    seam run model.onnx --input NAME=test_data_set_K/input_I.pb ... --output-dir OUT

with the test's own files (TensorProto, SequenceProto or OptionalProto;
bfloat16 stored as uint16), and every output seam writes (.npy where numpy
holds the value, else .pb: a sequence, an empty optional, bfloat16, bytes
that are not UTF-8) is read back with numpy and onnx's numpy_helper, not
with seam, and compared with output_I.pb: floats within the backend tests'
rtol 1e-3 / atol 1e-7, everything else exactly. Tests whose outputs are
not plain numeric tensors run again with --output-format pb.

The C API driver (tests/drivers/conformance) runs the same folders in the
same run, and the two must agree test by test: every test that passes
through the API passes through the CLI, and no other (issue 29: the
interface must not lose what the kernels do). The draws of Bernoulli and
of Dropout in training mode are compared by their statistics instead
(values in {0, 1}; y = x * mask / (1 - ratio); the share kept near
1 - ratio), and counted apart. A signal or an exit without a message
fails the check.
"""
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

parser = seamtest.arg_parser(__doc__)
parser.add_argument("seam", metavar="SEAM_BINARY")
parser.add_argument("driver", metavar="CONFORMANCE_DRIVER")
parser.add_argument("work", metavar="WORKDIR")
parser.add_argument("node_dir", metavar="NODE_DIR")
parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
args = parser.parse_args()
check = seamtest.Checker("cli-node-tests", args.k)
WORK = os.path.abspath(args.work)
STATS = re.compile(r"^test_(bernoulli|training_dropout(?!_zero_ratio))")


def file_name(name):
    """seam run's file name for a value name (npy_file_name in src/core/npy.c)."""
    out = "".join(c if c.isalnum() and c.isascii() or c in "._-" else "_" for c in name)
    return "output" if out in ("", ".", "..") else out


def bf16_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def tensor_array(t, declared=None):
    """A TensorProto as numpy; bfloat16 (or uint16 where bfloat16 is
    declared: the older test data) as float32 from its bits."""
    if t.data_type == TensorProto.BFLOAT16 or (t.data_type == TensorProto.UINT16 and declared == TensorProto.BFLOAT16):
        if t.raw_data:
            bits = np.frombuffer(t.raw_data, dtype="<u2")
        else:
            bits = np.array(t.int32_data, dtype=np.uint32).astype(np.uint16)
        return bf16_to_f32(bits).reshape(tuple(t.dims)), "bfloat16"
    a = numpy_helper.to_array(t)
    if t.data_type == TensorProto.STRING:
        a = np.array([x if isinstance(x, bytes) else str(x).encode() for x in a.ravel()], dtype=object).reshape(a.shape)
    return a, TensorProto.DataType.Name(t.data_type).lower()


def elem_of(tp):
    """The declared element type of a TypeProto's tensors (or None)."""
    while True:
        k = tp.WhichOneof("value")
        if k == "tensor_type":
            return tp.tensor_type.elem_type
        if k == "sequence_type":
            tp = tp.sequence_type.elem_type
        elif k == "optional_type":
            tp = tp.optional_type.elem_type
        else:
            return None


def read_value(path, tp):
    """A value file of type tp: ('tensor', (array, dtype)), ('sequence',
    [...]), ('none', None)."""
    with open(path, "rb") as f:
        data = f.read()
    kind = tp.WhichOneof("value")
    elem = elem_of(tp)
    if kind == "optional_type":
        o = onnx.OptionalProto()
        o.ParseFromString(data)
        if o.HasField("tensor_value"):
            return "tensor", tensor_array(o.tensor_value, elem)
        if o.HasField("sequence_value"):
            return "sequence", [tensor_array(t, elem) for t in o.sequence_value.tensor_values]
        return "none", None
    if kind == "sequence_type":
        s = onnx.SequenceProto()
        s.ParseFromString(data)
        return "sequence", [tensor_array(t, elem) for t in s.tensor_values]
    t = TensorProto()
    t.ParseFromString(data)
    return "tensor", tensor_array(t, elem)


def read_output(out_dir, name, tp):
    """What seam wrote for output `name`: its .npy (read by numpy) or .pb."""
    base = os.path.join(out_dir, file_name(name))
    if os.path.exists(base + ".npy"):
        a = np.load(base + ".npy", allow_pickle=False)
        if a.dtype.kind == "U":
            a = np.array([x.encode() for x in a.ravel()], dtype=object).reshape(a.shape)
            return "tensor", (a, "string")
        return "tensor", (a, str(a.dtype))
    if os.path.exists(base + ".pb"):
        return read_value(base + ".pb", tp)
    raise FileNotFoundError(f"no {base}.npy or .pb")


def same_tensor(got, want, what):
    (g, gd), (w, wd) = got, want
    if g.shape != w.shape:
        return f"{what}: shape {list(g.shape)}, expected {list(w.shape)}"
    if w.dtype == object or g.dtype == object:
        if w.dtype != g.dtype or [bytes(x) for x in g.ravel()] != [bytes(x) for x in w.ravel()]:
            return f"{what}: strings differ ({g.ravel()[:3]} vs {w.ravel()[:3]})"
        return None
    if g.dtype != w.dtype:
        return f"{what}: dtype {g.dtype} ({gd}), expected {w.dtype} ({wd})"
    if w.dtype.kind in "fc":
        ok = np.isclose(g, w, rtol=1e-3, atol=1e-7, equal_nan=True)
        if not ok.all():
            i = int(np.argmin(ok.ravel()))
            return f"{what}[{i}] = {g.ravel()[i]}, expected {w.ravel()[i]}"
        return None
    if not np.array_equal(g, w):
        return f"{what}: values differ"
    return None


def same_value(got, want, what):
    if got[0] != want[0]:
        return f"{what} is {got[0]}, expected {want[0]}"
    if got[0] == "none":
        return None
    if got[0] == "tensor":
        return same_tensor(got[1], want[1], what)
    if len(got[1]) != len(want[1]):
        return f"{what}: {len(got[1])} elements, expected {len(want[1])}"
    for i, (g, w) in enumerate(zip(got[1], want[1])):
        why = same_tensor(g, w, f"{what}[{i}]")
        if why:
            return why
    return None


def stats_verdict(name, m, got, want):
    """Bernoulli and training Dropout: their statistics, not the one draw."""
    if name.startswith("test_bernoulli"):
        (g, _), (w, _) = got[0][1], want[0][1]
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"shape/dtype {g.shape} {g.dtype}, expected {w.shape} {w.dtype}"
        if not np.isin(g, [0, 1]).all():
            return "a Bernoulli draw that is not 0 or 1"
        return None
    return "unexpected"


def dropout_verdict(x, ratio, got, want):
    (y, _), = [got[0][1]]
    if y.shape != want[0][1][0].shape or y.dtype != want[0][1][0].dtype:
        return f"y is {y.dtype}{list(y.shape)}, expected {want[0][1][0].dtype}{list(want[0][1][0].shape)}"
    if len(got) > 1:
        mask = got[1][1][0]
        if mask.dtype != np.bool_ or mask.shape != y.shape:
            return f"mask is {mask.dtype}{list(mask.shape)}"
    else:
        mask = y != 0
    scale = 1.0 / (1.0 - ratio) if ratio < 1 else 0.0
    if not np.allclose(y, np.where(mask, x * scale, 0), rtol=1e-5, atol=1e-6):
        return "y is not x * mask / (1 - ratio)"
    n = mask.size
    keep = mask.mean()
    sd = np.sqrt(max(ratio * (1 - ratio), 1e-12) / n)
    if abs(keep - (1 - ratio)) > 5 * sd + 1e-9:
        return f"kept {keep:.3f} of the elements; 1 - ratio is {1 - ratio:.3f}"
    return None


def feed_names(m):
    inits = {i.name for i in m.graph.initializer}
    return [i.name for i in m.graph.input if i.name not in inits]


def run_seam(cmd):
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
                       timeout=120)
    return p.returncode, p.stderr.strip()


def run_test(name):
    """(verdict, why): pass, fail, error (seam refused), crash, or stats-pass/stats-fail."""
    try:
        return run_test_raw(name)
    except Exception as e:  # noqa: BLE001 - the check's own trouble with a test is a verdict, not a stop
        return "checker-error", f"{type(e).__name__}: {e}"


def run_test_raw(name):
    d = os.path.join(args.node_dir, name)
    m = onnx.load(os.path.join(d, "model.onnx"))
    names = feed_names(m)
    outs = [(o.name, o.type) for o in m.graph.output]
    plain = all(o.type.WhichOneof("value") == "tensor_type"
                and o.type.tensor_type.elem_type not in (TensorProto.STRING, TensorProto.BFLOAT16) for o in m.graph.output)
    sets = sorted(x for x in os.listdir(d) if x.startswith("test_data_set_"))
    for s in sets:
        sd = os.path.join(d, s)
        ins = []
        for i, n in enumerate(names):
            p = os.path.join(sd, f"input_{i}.pb")
            if os.path.exists(p):
                ins += ["--input", f"{n}={p}"]
        want = [read_value(os.path.join(sd, f"output_{i}.pb"), tp) for i, (_, tp) in enumerate(outs)]
        for fmt in (["npy"] if plain else ["npy", "pb"]):
            out_dir = os.path.join(WORK, name, s, fmt)
            shutil.rmtree(out_dir, ignore_errors=True)
            os.makedirs(os.path.dirname(out_dir), exist_ok=True)
            code, err = run_seam([args.seam, "run", "--threads", "1", os.path.join(d, "model.onnx"), *ins,
                                  "--output-dir", out_dir, "--output-format", fmt])
            if code < 0 or code > 2 or (code and not err):
                return "crash", f"exit {code} {err[-300:]}"
            if code:
                return "error", err.splitlines()[-1][:300] if err else ""
            try:
                got = [read_output(out_dir, n, tp) for n, tp in outs]
            except Exception as e:  # noqa: BLE001 - a file seam wrote that onnx cannot read
                return "fail", f"{fmt}: {e}"
            if STATS.match(name):
                if name.startswith("test_bernoulli"):
                    why = stats_verdict(name, m, got, want)
                else:
                    t = TensorProto()
                    with open(os.path.join(sd, "input_0.pb"), "rb") as f:
                        t.ParseFromString(f.read())
                    x = numpy_helper.to_array(t)
                    ratio = 0.5
                    rp = os.path.join(sd, "input_1.pb")
                    if os.path.exists(rp):
                        r = TensorProto()
                        with open(rp, "rb") as f:
                            r.ParseFromString(f.read())
                        ratio = float(numpy_helper.to_array(r))
                    why = dropout_verdict(x, ratio, got, want)
                if why:
                    return "stats-fail", f"{fmt}: {why}"
                continue
            for i, (n, _) in enumerate(outs):
                why = same_value(got[i], want[i], f"{fmt}: output '{n}'")
                if why:
                    return "fail", why
    return ("stats-pass" if STATS.match(name) else "pass"), ""


def driver_verdicts():
    p = subprocess.run([args.driver, "-v", args.node_dir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace")
    out = {}
    for line in p.stdout.splitlines():
        mm = re.match(r"^(pass|fail|unsupported|error|crash)\s+(\S+):", line)
        if mm:
            out[mm.group(2)] = mm.group(1)
    return out


tests = sorted(t for t in os.listdir(args.node_dir) if os.path.isfile(os.path.join(args.node_dir, t, "model.onnx")))
tests = [t for t in tests if check.selected(t)]
api = driver_verdicts()
with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
    results = dict(zip(tests, pool.map(run_test, tests)))

counts = {}
for t, (v, _) in results.items():
    counts[v] = counts.get(v, 0) + 1
api_pass = {t for t in tests if api.get(t) == "pass"}
cli_pass = {t for t, (v, _) in results.items() if v == "pass"}
stats = [t for t in tests if STATS.match(t)]

summary = (f"{len(tests)} tests through seam run: {len(cli_pass)} passed (through the C API driver: "
           f"{len(api_pass & set(tests))}); {counts.get('stats-pass', 0)} of {len(stats)} random draws right by their "
           f"statistics; " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items()) if v not in ("pass", "stats-pass")))
for t in sorted(api_pass - cli_pass):
    check.fail(f"{t}: passes through the C API, not through seam run: {results[t][0]}: {results[t][1]}")
for t in sorted(cli_pass - api_pass):
    check.fail(f"{t}: passes through seam run, not through the C API ({api.get(t, 'not run')})")
for t in tests:
    v, why = results[t]
    if v in ("crash", "stats-fail", "checker-error"):
        check.fail(f"{t}: {v}: {why}")
    elif v != "pass" and v != "stats-pass" and t not in api_pass:
        print(f"  (both) {t}: {v}: {why}")
check.finish(summary)
