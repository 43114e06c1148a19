"""Sequence, optional and string values on the CPU backend, through `seam run`.

usage: /usr/bin/python3 check_sequences.py SEAM_BINARY WORKDIR [-k CASE]

ONNX's node tests do not cover SplitToSequence, ConcatFromSequence,
SequenceErase or SequenceLength, nor casts of unusual floats to strings.
Each case here is a small model whose inputs and outputs are tensors (what
`seam run` takes and gives) with sequences inside, checked against numpy
(np.split, np.concatenate, np.stack, list operations). The hostile cases
are models a buggy exporter or an attacker makes: each must fail with exit
1 and a message that names the node (never a crash, never a wrong answer).
"""
import os
import subprocess
import sys

import numpy as np
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

# The API takes and gives tensors only: a sequence output (or input) is
# refused with its name, and no output file is written.
if check.selected("sequence_output"):
    g = helper.make_graph([N("SequenceConstruct", ["x", "x"], ["y"])], "seq_out",
                          [helper.make_tensor_value_info("x", F, list(X.shape))],
                          [helper.make_tensor_sequence_value_info("y", F, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(args.work, "sequence_output.onnx")
    save(m, path)
    r, y = run("sequence_output", path)
    out = os.path.join(args.work, "sequence_output.out")
    check.expect(r.returncode == 1 and "output 'y' is a sequence" in r.stderr and not os.listdir(out) if
                 os.path.isdir(out) else r.returncode == 1 and "output 'y' is a sequence" in r.stderr,
                 "sequence_output: refused naming the output, nothing written", r.stderr.strip()[-300:])
if check.selected("sequence_input"):
    g = helper.make_graph([N("ConcatFromSequence", ["s"], ["y"], axis=0)], "seq_in",
                          [helper.make_tensor_sequence_value_info("s", F, None)],
                          [helper.make_tensor_value_info("y", F, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(args.work, "sequence_input.onnx")
    save(m, path)
    xp = os.path.join(args.work, "sequence_input.s.npy")
    np.save(xp, X)
    r = subprocess.run([args.seam, "run", path, "--input", "s=" + xp], capture_output=True, text=True, timeout=60)
    check.expect(r.returncode == 1 and "input 's' is a sequence" in r.stderr, "sequence_input: refused naming the input",
                 r.stderr.strip()[-300:])
check.finish()
