"""Sequence, optional and string values on the CPU backend, through `seam run`.

usage: /usr/bin/python3 check_sequences.py SEAM_BINARY WORKDIR [-k CASE]

ONNX's node tests do not cover SplitToSequence, ConcatFromSequence,
SequenceErase or SequenceLength, nor casts of unusual floats to strings.
Most cases here are small models whose inputs and outputs are tensors,
with sequences inside, checked against numpy (np.split, np.concatenate,
np.stack, list operations); the last ones pass sequences, optionals,
strings and bfloat16 through seam run's files, read back by onnx and numpy. The hostile cases
are models a buggy exporter or an attacker makes: each must fail with exit
1 and a message that names the node (never a crash, never a wrong answer).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, save

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

p = seamtest.arg_parser(__doc__)
p.add_argument("seam", metavar="SEAM_BINARY")
p.add_argument("work", metavar="WORKDIR")
args = p.parse_args()
check = seamtest.Checker("sequences", args.k)
os.makedirs(args.work, exist_ok=True)

rng = np.random.default_rng(5)
X = rng.standard_normal((2, 5, 3)).astype(np.float32)
F = TensorProto.FLOAT


def i64(name, v):
    return numpy_helper.from_array(np.array(v, dtype=np.int64), name)


def model(name, nodes, out_type=F, inits=(), out_shape=None):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", F, list(X.shape))],
                          [helper.make_tensor_value_info("y", out_type, out_shape)], initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(args.work, name + ".onnx")
    save(m, path)
    return path


def run(name, path, x=X):
    xp = os.path.join(args.work, name + ".x.npy")
    np.save(xp, x)
    out = os.path.join(args.work, name + ".out")
    r = subprocess.run([args.seam, "run", path, "--input", "x=" + xp, "--output-dir", out],
                       capture_output=True, text=True, timeout=60)
    y = np.load(os.path.join(out, "y.npy")) if r.returncode == 0 else None
    return r, y


def case(name, nodes, want, out_type=F, inits=()):
    """A valid model: y must equal want exactly."""
    if not check.selected(name):
        return
    r, y = run(name, model(name, nodes, out_type, inits))
    if not check.expect(r.returncode == 0, name, f"exit {r.returncode}: {r.stderr.strip()[-300:]}"):
        return
    check.expect(y.shape == want.shape and y.dtype == want.dtype and np.array_equal(y, want, equal_nan=True), name,
                 f"got {y.dtype} {y.shape} {y.ravel()[:6]}, want {want.dtype} {want.shape} {want.ravel()[:6]}")


def hostile(name, nodes, node_name, out_type=F, inits=()):
    """A model that cannot be computed: exit 1, the message names the node."""
    if not check.selected(name):
        return
    r, _ = run(name, model(name, nodes, out_type, inits))
    msg = r.stderr.strip()
    check.expect(r.returncode == 1 and node_name in msg, f"{name} fails naming '{node_name}'",
                 f"exit {r.returncode} (want 1), message {msg[-300:]!r}")


N = helper.make_node

# ---- valid models, against numpy ----
case("split_ones_stack", [N("SplitToSequence", ["x"], ["s"], name="split", axis=1, keepdims=0),
                          N("ConcatFromSequence", ["s"], ["y"], name="cat", axis=1, new_axis=1)], X)
case("split_ones_keepdims_concat", [N("SplitToSequence", ["x"], ["s"], name="split", axis=-1),
                                    N("ConcatFromSequence", ["s"], ["y"], name="cat", axis=-1)], X)
case("split_scalar_last", [N("SplitToSequence", ["x", "two"], ["s"], name="split", axis=1),
                           N("SequenceAt", ["s", "last"], ["y"], name="at")], X[:, 4:5, :],
     inits=[i64("two", 2), i64("last", -1)])
case("split_sizes_middle", [N("SplitToSequence", ["x", "sizes"], ["s"], name="split", axis=1),
                            N("SequenceAt", ["s", "one"], ["y"], name="at")], X[:, 1:4, :],
     inits=[i64("sizes", [1, 3, 1]), i64("one", 1)])
case("stack_last_axis", [N("SplitToSequence", ["x"], ["s"], name="split", axis=0, keepdims=0),
                         N("ConcatFromSequence", ["s"], ["y"], name="cat", axis=-1, new_axis=1)],
     np.stack([X[0], X[1]], axis=-1))
# [x0, x1, x2] -> erase 1 -> insert x at the front -> [x, x0, x2] joined on axis 0
parts = np.split(X, [1, 4], axis=1)
case("erase_insert_concat", [N("SplitToSequence", ["x", "sizes"], ["s"], name="split", axis=1),
                             N("SequenceErase", ["s", "one"], ["s2"], name="erase"),
                             N("SequenceInsert", ["s2", "x", "zero"], ["s3"], name="insert"),
                             N("ConcatFromSequence", ["s3"], ["y"], name="cat", axis=1)],
     np.concatenate([X, parts[0], parts[2]], axis=1), inits=[i64("sizes", [1, 3, 1]), i64("one", 1), i64("zero", 0)])
case("construct_length", [N("SequenceConstruct", ["x", "x", "x"], ["s"], name="construct"),
                          N("SequenceLength", ["s"], ["y"], name="len")], np.array(3, dtype=np.int64), TensorProto.INT64)
case("empty_insert_erase_length", [N("SequenceEmpty", [], ["s"], name="empty", dtype=F),
                                   N("SequenceInsert", ["s", "x"], ["s2"], name="insert"),
                                   N("SequenceInsert", ["s2", "x"], ["s3"], name="insert2"),
                                   N("SequenceErase", ["s3"], ["s4"], name="erase"),
                                   N("SequenceLength", ["s4"], ["y"], name="len")],
     np.array(1, dtype=np.int64), TensorProto.INT64)
case("optional_roundtrip", [N("Optional", ["x"], ["o"], name="opt"),
                            N("OptionalGetElement", ["o"], ["y"], name="get")], X)
case("optional_empty_has", [N("Optional", [], ["o"], name="opt", type=helper.make_tensor_type_proto(F, [])),
                            N("OptionalHasElement", ["o"], ["y"], name="has")],
     np.array(False), TensorProto.BOOL)
# every float32 class read back exactly from its string: the shortest digits round-trip
if check.selected("cast_string_roundtrip"):
    vals = np.concatenate([rng.standard_normal(40) * 10.0 ** rng.integers(-40, 38, 40),
                           [0.0, -0.0, 1e-45, -1e-45, 3.4028235e38, 1.1754944e-38, np.inf, -np.inf, np.nan, 0.1, 100.0]])
    xs = vals.astype(np.float32).reshape(1, -1, 1)
    X_saved = X
    X = xs
    path = model("cast_string_roundtrip", [N("Cast", ["x"], ["s"], name="to_str", to=TensorProto.STRING),
                                           N("Cast", ["s"], ["y"], name="to_float", to=F)])
    r, y = run("cast_string_roundtrip", path, xs)
    X = X_saved
    if check.expect(r.returncode == 0, "cast_string_roundtrip", f"exit {r.returncode}: {r.stderr.strip()[-300:]}"):
        check.expect(np.array_equal(y.view(np.uint32)[~np.isnan(y)], xs.view(np.uint32)[~np.isnan(xs)]) and
                     np.array_equal(np.isnan(y), np.isnan(xs)), "cast_string_roundtrip bit-exact",
                     f"{y.ravel()[:8]} != {xs.ravel()[:8]}")

# ---- hostile models: an error naming the node ----
three = [N("SequenceConstruct", ["x", "x", "x"], ["s"], name="construct")]
hostile("at_past_end", three + [N("SequenceAt", ["s", "p"], ["y"], name="at_bad")], "at_bad", inits=[i64("p", 3)])
hostile("at_before_start", three + [N("SequenceAt", ["s", "p"], ["y"], name="at_bad")], "at_bad", inits=[i64("p", -4)])
hostile("at_huge", three + [N("SequenceAt", ["s", "p"], ["y"], name="at_bad")], "at_bad",
        inits=[i64("p", -(2 ** 63))])
hostile("erase_empty", [N("SequenceEmpty", [], ["s"], name="empty", dtype=F),
                        N("SequenceErase", ["s"], ["s2"], name="erase_bad"),
                        N("SequenceLength", ["s2"], ["y"], name="len")], "erase_bad", TensorProto.INT64)
hostile("insert_past_end", three + [N("SequenceInsert", ["s", "x", "p"], ["s2"], name="insert_bad"),
                                    N("SequenceLength", ["s2"], ["y"], name="len")], "insert_bad", TensorProto.INT64,
        inits=[i64("p", 4)])
hostile("concat_shapes_differ", [N("SplitToSequence", ["x", "sizes"], ["s"], name="split", axis=1),
                                 N("ConcatFromSequence", ["s"], ["y"], name="cat_bad", axis=0)], "cat_bad",
        inits=[i64("sizes", [2, 3])])
hostile("concat_empty", [N("SequenceEmpty", [], ["s"], name="empty", dtype=F),
                         N("ConcatFromSequence", ["s"], ["y"], name="cat_bad", axis=0)], "cat_bad")
hostile("concat_axis_out_of_range", three + [N("ConcatFromSequence", ["s"], ["y"], name="cat_bad", axis=7)],
        "cat_bad")
hostile("split_sizes_wrong_sum", [N("SplitToSequence", ["x", "sizes"], ["s"], name="split_bad", axis=1),
                                  N("SequenceLength", ["s"], ["y"], name="len")], "split_bad", TensorProto.INT64,
        inits=[i64("sizes", [2, 2])])
hostile("split_zero_chunk", [N("SplitToSequence", ["x", "zero"], ["s"], name="split_bad", axis=1),
                             N("SequenceLength", ["s"], ["y"], name="len")], "split_bad", TensorProto.INT64,
        inits=[i64("zero", 0)])
hostile("split_negative_size", [N("SplitToSequence", ["x", "sizes"], ["s"], name="split_bad", axis=1),
                                N("SequenceLength", ["s"], ["y"], name="len")], "split_bad", TensorProto.INT64,
        inits=[i64("sizes", [-1, 6])])
hostile("optional_get_empty", [N("Optional", [], ["o"], name="opt", type=helper.make_tensor_type_proto(F, [])),
                               N("OptionalGetElement", ["o"], ["y"], name="get_bad")], "get_bad")
hostile("sequence_into_tensor_op", three + [N("Abs", ["s"], ["y"], name="abs_bad")], "abs_bad")
hostile("string_normalizer_rank3", [N("Cast", ["x"], ["s"], name="to_str", to=TensorProto.STRING),
                                    N("StringNormalizer", ["s"], ["s2"], name="norm_bad", stopwords=["x"]),
                                    N("Cast", ["s2"], ["y"], name="to_float", to=F)], "norm_bad")
hostile("string_not_a_number", [N("Constant", [], ["s"], name="text", value_strings=["1.5", "one"]),
                                N("Cast", ["s"], ["y"], name="to_float_bad", to=F)], "to_float_bad")
case("string_constant_normalize", [N("Constant", [], ["s"], name="text", value_strings=["1.5", "Drop", "-2e3"]),
                                   N("StringNormalizer", ["s"], ["s2"], name="norm", stopwords=["drop"]),
                                   N("Cast", ["s2"], ["y"], name="to_float", to=F)],
     np.array([1.5, -2000.0], dtype=np.float32))
body = helper.make_graph([N("Identity", ["c_in"], ["c_out"], name="keep"),
                          N("SequenceConstruct", ["x"], ["seq"], name="wrap")], "body",
                         [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                          helper.make_tensor_value_info("c_in", TensorProto.BOOL, [])],
                         [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
                          helper.make_value_info("seq", helper.make_sequence_type_proto(
                              helper.make_tensor_type_proto(F, None)))])
hostile("loop_scan_output_sequence", [N("Loop", ["two", ""], ["y"], name="loop_bad", body=body)], "loop_bad",
        inits=[i64("two", 2)])

# Values other than tensors through seam run's files (issue 29): a sequence
# output is written as a SequenceProto .pb (said), read back by onnx; a
# sequence input is read from a SequenceProto (a .npy is refused naming
# the input); optional inputs take an OptionalProto, empty or not; strings
# round-trip as numpy unicode; a bfloat16 input takes numpy's uint16 bits.
def run_files(name, path, inputs, fmt=None):
    out = os.path.join(args.work, name + ".out")
    cmd = [args.seam, "run", path, "--output-dir", out]
    for k, v in inputs.items():
        cmd += ["--input", f"{k}={v}"]
    if fmt:
        cmd += ["--output-format", fmt]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60), out


def save_model(name, g, opset=17):
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    path = os.path.join(args.work, name + ".onnx")
    save(m, path)
    return path


def pb(name, proto):
    path = os.path.join(args.work, name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())
    return path


if check.selected("sequence_output"):
    g = helper.make_graph([N("SequenceConstruct", ["x", "x2"], ["y"]), N("Neg", ["x"], ["x2"])], "seq_out",
                          [helper.make_tensor_value_info("x", F, list(X.shape))],
                          [helper.make_tensor_sequence_value_info("y", F, None)])
    path = save_model("sequence_output", g)
    xp = os.path.join(args.work, "sequence_output.x.npy")
    np.save(xp, X)
    r, out = run_files("sequence_output", path, {"x": xp})
    got = None
    if r.returncode == 0 and os.path.exists(os.path.join(out, "y.pb")):
        sp = onnx.SequenceProto()
        sp.ParseFromString(open(os.path.join(out, "y.pb"), "rb").read())
        got = numpy_helper.to_list(sp)
    check.expect(got is not None and len(got) == 2 and np.array_equal(got[0], X) and np.array_equal(got[1], -X) and
                 "written as" in r.stderr and "SequenceProto" in r.stderr and not os.path.exists(os.path.join(out, "y.npy")),
                 "sequence_output: written as a SequenceProto .pb (said), onnx reads [x, -x]", r.stderr.strip()[-300:])
if check.selected("sequence_input"):
    g = helper.make_graph([N("ConcatFromSequence", ["s"], ["y"], axis=0)], "seq_in",
                          [helper.make_tensor_sequence_value_info("s", F, None)],
                          [helper.make_tensor_value_info("y", F, None)])
    path = save_model("sequence_input", g)
    xp = os.path.join(args.work, "sequence_input.s.npy")
    np.save(xp, X)
    r = subprocess.run([args.seam, "run", path, "--input", "s=" + xp], capture_output=True, text=True, timeout=60)
    check.expect(r.returncode == 1 and "input 's'" in r.stderr and "SequenceProto" in r.stderr,
                 "sequence_input: a .npy for a sequence input is refused naming the input and the file it needs",
                 r.stderr.strip()[-300:])
    parts = [X[0], X[1] * 2, X[0][:2]]
    sp = pb("sequence_input.s.pb", numpy_helper.from_list(parts, "s"))
    r, out = run_files("sequence_input_pb", path, {"s": sp})
    y = np.load(os.path.join(out, "y.npy")) if r.returncode == 0 else None
    check.expect(y is not None and np.array_equal(y, np.concatenate(parts, axis=0)),
                 "sequence_input: a SequenceProto .pb of three tensors, concatenated as numpy does",
                 r.stderr.strip()[-300:])
    tp = pb("sequence_input.tensor.pb", numpy_helper.from_array(X, "s"))
    r, _ = run_files("sequence_input_tensor", path, {"s": tp})
    check.expect(r.returncode == 1 and "not a SequenceProto" in r.stderr and "sequence_input.tensor.pb" in r.stderr,
                 "sequence_input: a TensorProto where the model takes a sequence is refused", r.stderr.strip()[-300:])
if check.selected("optional_input"):
    opt_f = helper.make_optional_type_proto(helper.make_tensor_type_proto(F, None))
    g = helper.make_graph([N("OptionalHasElement", ["o"], ["has"]), N("Identity", ["o"], ["same"])], "opt_in",
                          [helper.make_value_info("o", opt_f)],
                          [helper.make_tensor_value_info("has", TensorProto.BOOL, []), helper.make_value_info("same", opt_f)])
    path = save_model("optional_input", g, opset=18)
    for label, proto in (("empty", onnx.OptionalProto(name="o", elem_type=onnx.OptionalProto.TENSOR)),
                         ("full", numpy_helper.from_optional(X, "o"))):
        op = pb(f"optional_input.{label}.pb", proto)
        r, out = run_files(f"optional_input_{label}", path, {"o": op})
        has = np.load(os.path.join(out, "has.npy")) if r.returncode == 0 else None
        same = None
        if r.returncode == 0:
            for ext in ("npy", "pb"):
                f = os.path.join(out, "same." + ext)
                if os.path.exists(f) and ext == "npy":
                    same = ("tensor", np.load(f))
                elif os.path.exists(f):
                    o = onnx.OptionalProto()
                    o.ParseFromString(open(f, "rb").read())
                    same = ("tensor", numpy_helper.to_array(o.tensor_value)) if o.HasField("tensor_value") else ("none",)
        want_same = ("none",) if label == "empty" else ("tensor", X)
        check.expect(has is not None and bool(has) == (label == "full") and same is not None and same[0] == want_same[0]
                     and (label == "empty" or np.array_equal(same[1], X)),
                     f"optional_input_{label}: an OptionalProto in, OptionalHasElement {label == 'full'}, the value back",
                     r.stderr.strip()[-300:])
    np.save(os.path.join(args.work, "o.npy"), X)
    r, _ = run_files("optional_input_npy", path, {"o": os.path.join(args.work, "o.npy")})
    check.expect(r.returncode == 0, "optional_input: a .npy tensor for an optional of a tensor", r.stderr.strip()[-300:])
if check.selected("strings_npy"):
    S = TensorProto.STRING
    g = helper.make_graph([N("Identity", ["s"], ["y"])], "str_id", [helper.make_tensor_value_info("s", S, [2, 3])],
                          [helper.make_tensor_value_info("y", S, [2, 3])])
    path = save_model("strings_npy", g)
    words = np.array([["seam", "", "grüße"], ["日本語", "a b", "x" * 40]])
    sp = os.path.join(args.work, "strings.s.npy")
    np.save(sp, words)
    r, out = run_files("strings_npy", path, {"s": sp})
    y = np.load(os.path.join(out, "y.npy"), allow_pickle=False) if r.returncode == 0 else None
    check.expect(y is not None and y.dtype.kind == "U" and np.array_equal(y, words),
                 "strings_npy: numpy unicode in, the same numpy unicode out", r.stderr.strip()[-300:])
    r, out = run_files("strings_pb", path, {"s": sp}, fmt="pb")
    t = TensorProto()
    if r.returncode == 0:
        t.ParseFromString(open(os.path.join(out, "y.pb"), "rb").read())
    check.expect(r.returncode == 0 and [x.decode() for x in t.string_data] == list(words.ravel()),
                 "strings_npy: --output-format pb writes string_data onnx reads", r.stderr.strip()[-300:])
    bp = os.path.join(args.work, "strings.b.npy")
    np.save(bp, np.array([b"raw", b"\xff\xfe", b"ok", b"", b"z", b"q"]).reshape(2, 3))
    r, out = run_files("strings_bytes", path, {"s": bp})
    t = TensorProto()
    if r.returncode == 0 and os.path.exists(os.path.join(out, "y.pb")):
        t.ParseFromString(open(os.path.join(out, "y.pb"), "rb").read())
    check.expect(r.returncode == 0 and list(t.string_data) == [b"raw", b"\xff\xfe", b"ok", b"", b"z", b"q"] and
                 "not UTF-8" in r.stderr, "strings_npy: bytes that are not UTF-8 come back as a .pb (said)",
                 r.stderr.strip()[-300:])
    r = subprocess.run([args.seam, "run", path], capture_output=True, text=True, timeout=60)
    check.expect(r.returncode == 0 and "output 'y': string [2,3]" in r.stdout,
                 "strings_npy: a string input without a file gets random words", (r.stdout + r.stderr).strip()[-300:])
    op = os.path.join(args.work, "strings.obj.npy")
    np.save(op, np.array([["a", 1, None]] * 2, dtype=object), allow_pickle=True)
    r, _ = run_files("strings_object", path, {"s": op})
    check.expect(r.returncode == 1 and "pickle" in r.stderr, "strings_npy: an object .npy (a pickle) is refused",
                 r.stderr.strip()[-300:])
if check.selected("bfloat16_npy"):
    g = helper.make_graph([N("Cast", ["b"], ["f"], to=F), N("Identity", ["b"], ["same"])], "bf16",
                          [helper.make_tensor_value_info("b", TensorProto.BFLOAT16, [4])],
                          [helper.make_tensor_value_info("f", F, [4]),
                           helper.make_tensor_value_info("same", TensorProto.BFLOAT16, [4])])
    path = save_model("bfloat16_npy", g)
    vals = np.array([1.0, -2.5, 0.1, 3e38], dtype=np.float32)
    bits = (vals.view(np.uint32) >> 16).astype(np.uint16)
    bp = os.path.join(args.work, "bf16.npy")
    np.save(bp, bits)
    r, out = run_files("bfloat16_npy", path, {"b": bp})
    f = np.load(os.path.join(out, "f.npy")) if r.returncode == 0 else None
    t = TensorProto()
    if r.returncode == 0 and os.path.exists(os.path.join(out, "same.pb")):
        t.ParseFromString(open(os.path.join(out, "same.pb"), "rb").read())
    check.expect(f is not None and np.array_equal(f, (bits.astype(np.uint32) << 16).view(np.float32)) and
                 t.data_type == TensorProto.BFLOAT16 and np.frombuffer(t.raw_data, "<u2").tolist() == bits.tolist() and
                 "bfloat16" in r.stderr, "bfloat16_npy: uint16 bits in, float32 and a bfloat16 TensorProto out (said)",
                 r.stderr.strip()[-300:])
check.finish()
