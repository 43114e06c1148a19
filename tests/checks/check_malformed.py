"""Feeds seam hostile and broken models; each must give exit 1 (bad input)
and one clear line naming the problem, never a crash.

usage: /usr/bin/python3 check_malformed.py SEAM_BINARY WORKDIR [-k PATTERN]

A case is named by its file (empty.onnx, cycle.onnx, ...), followed by the
seam command when that is not `inspect` (ok.onnx inspect --bogus).
"""
import os
import random
import shutil
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import vi  # noqa: E402

parser = seamtest.arg_parser(__doc__)
parser.add_argument("seam", metavar="SEAM_BINARY")
parser.add_argument("work", metavar="WORKDIR")
args = parser.parse_args()
SEAM, WORK = seamtest.Program(args.seam, timeout=60), args.work
os.makedirs(WORK, exist_ok=True)
check = seamtest.Checker("malformed", args.k)


def model(nodes, inputs, outputs, inits=(), value_info=()):
    return seamtest.make_model(nodes, inputs, outputs, inits, value_info)


def write(name, data):
    path = os.path.join(WORK, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.SerializeToString())
    return path


def expect(path, code, *needles, args=("inspect",)):
    """seam ARGS PATH exits with code, and (for an error) says all needles
    on one line of stderr."""
    words = [os.path.basename(path)] if path else []
    if not path or args != ("inspect",):
        words += args
    label = " ".join(words)
    if not check.selected(label):
        return
    r = SEAM(*args, *([path] if path is not None else []))
    err = r.stderr.strip()
    ok = r.returncode == code and all(n in err for n in needles)
    if code != 0 and (len(err.splitlines()) != 1):
        ok = False
    if ok:
        check.ok(f"{label}: exit {r.returncode}: {err[:200]}")
    else:
        check.fail(f"{label}: wanted exit {code} and {needles}, got {r.returncode}: {err}")


relu = helper.make_node("Relu", ["x"], ["y"], name="r")
good = model([relu], [vi("x", [1, 4])], [vi("y", [1, 4])])
good_bytes = good.SerializeToString()

# files that are not models
expect(write("empty.onnx", b""), 1, "empty")
expect(write("truncated.onnx", good_bytes[: len(good_bytes) // 2]), 1, "truncated.onnx")
rng = random.Random(1)
for k in range(5):
    expect(write(f"random{k}.onnx", bytes(rng.randrange(256) for _ in range(4096))), 1, f"random{k}.onnx")
expect(write("text.onnx", b"this is a text file, not a model\nsecond line\n"), 1, "text.onnx")
expect(os.path.join(WORK, "does-not-exist.onnx"), 1, "does-not-exist.onnx", "cannot open")
expect(WORK, 1, "not a regular file")

# broken graphs
cyc = model([helper.make_node("Add", ["x", "c"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["b"], name="relu"),
             helper.make_node("Neg", ["b"], ["c"], name="neg"),
             helper.make_node("Identity", ["c"], ["y"], name="out")],
            [vi("x", [1])], [vi("y", [1])])
expect(write("cycle.onnx", cyc), 1, "cycle", "node 0 'add' (Add)", "node 2 'neg' (Neg)")
# a node that reads its own output: a cycle of one node, in a graph that
# is otherwise in order (and in one whose other nodes come after it)
loop1 = model([helper.make_node("Add", ["x", "y"], ["y"], name="selfloop")], [vi("x", [1])], [vi("y", [1])])
expect(write("self_loop.onnx", loop1), 1, "cycle", "node 0 'selfloop' (Add) -> node 0 'selfloop' (Add)")
loop2 = model([helper.make_node("Relu", ["x"], ["a"], name="first"),
               helper.make_node("Mul", ["a", "b"], ["b"], name="selfmul"),
               helper.make_node("Neg", ["b"], ["y"], name="last")], [vi("x", [1])], [vi("y", [1])])
expect(write("self_loop_mid.onnx", loop2), 1, "cycle", "node 1 'selfmul' (Mul) -> node 1 'selfmul' (Mul)")
dang = model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add")], [vi("x", [1])], [vi("y", [1])])
expect(write("dangling.onnx", dang), 1, "'ghost'", "node 0 'add' (Add)", "never defined")
twice = model([helper.make_node("Relu", ["x"], ["y"], name="r1"), helper.make_node("Neg", ["x"], ["y"], name="r2")],
              [vi("x", [1])], [vi("y", [1])])
expect(write("twice.onnx", twice), 1, "'y' is produced twice", "node 1 'r2' (Neg)")
noout = model([relu], [vi("x", [1])], [vi("z", [1])])
expect(write("orphan_output.onnx", noout), 1, "graph output 'z'")
body_dang = helper.make_graph([helper.make_node("Add", ["x", "nowhere"], ["o"], name="inner")], "then",
                              [], [vi("o", [1])])
ifm = model([helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=body_dang, else_branch=body_dang)],
            [vi("cond", [], TensorProto.BOOL), vi("x", [1])], [vi("y", [1])])
expect(write("body_dangling.onnx", ifm), 1, "'nowhere'", "node 0 'inner' (Add)", "node 0 'branch' (If)")

# bad types, dims and data
bad_t = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
bad_t.data_type = 99
expect(write("bad_dtype.onnx", model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [2])], [vi("y", [2])], [bad_t])),
       1, "initializer 'w'", "unknown element type 99")
bad_vi = model([relu], [vi("x", [1, 4])], [vi("y", [1, 4])])
bad_vi.graph.input[0].type.tensor_type.elem_type = 77
expect(write("bad_value_dtype.onnx", bad_vi), 1, "value 'x'", "unknown element type 77")
neg = model([relu], [vi("x", [1, 4])], [vi("y", [1, 4])])
neg.graph.input[0].type.tensor_type.shape.dim[1].dim_value = -3
expect(write("negative_dim.onnx", neg), 1, "value 'x'", "negative dimension -3")
absurd = model([relu], [vi("x", [1, 4])], [vi("y", [1, 4])])
absurd.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 1 << 50
expect(write("absurd_dim.onnx", absurd), 1, "value 'x'", "absurd dimension")
def raw_tensor(name, dims, raw):
    t = TensorProto()
    t.name, t.data_type, t.raw_data = name, TensorProto.FLOAT, raw
    t.dims.extend(dims)
    return t


overflow = raw_tensor("w", [1 << 30, 1 << 30, 1 << 30], b"\0\0\0\0")
expect(write("overflow_dims.onnx", model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [1])], [vi("y", [1])], [overflow])),
       1, "initializer 'w'", "absurd element count")
huge = raw_tensor("w", [1 << 20, 1 << 20], b"\0\0\0\0")
expect(write("huge_dims.onnx", model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [1])], [vi("y", [1])], [huge])),
       1, "initializer 'w'", "4 bytes of data")
short = raw_tensor("w", [3], b"\0" * 8)
expect(write("short_data.onnx", model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [3])], [vi("y", [3])], [short])),
       1, "initializer 'w'", "8 bytes of data but its dims and type need 12")
typed = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
typed.dims[0] = 3
expect(write("typed_count.onnx", model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [3])], [vi("y", [3])], [typed])),
       1, "initializer 'w' has 2 values")


def ext_model(location):
    t = raw_tensor("w", [4], b"")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "16")):
        e = t.external_data.add()
        e.key, e.value = k, v
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [4])], [vi("y", [4])], [t])


with open(os.path.join(WORK, "weights.bin"), "wb") as f:
    f.write(np.arange(4, dtype=np.float32).tobytes())
expect(write("ext_ok.onnx", ext_model("weights.bin")), 0)
expect(write("ext_dotdot.onnx", ext_model("../secret.bin")), 1, "initializer 'w'", "leaves the model's folder")
expect(write("ext_dotdot2.onnx", ext_model("sub/../../secret.bin")), 1, "leaves the model's folder")
expect(write("ext_absolute.onnx", ext_model("/etc/passwd")), 1, "initializer 'w'", "is absolute")
expect(write("ext_missing.onnx", ext_model("no_such_weights.bin")), 1, "initializer 'w'", "is missing")
link = os.path.join(WORK, "escape.bin")
if os.path.lexists(link):
    os.remove(link)
os.symlink("/etc/hostname", link)
expect(write("ext_symlink.onnx", ext_model("escape.bin")), 1, "resolves outside")
short_ext = ext_model("weights.bin")
short_ext.graph.initializer[0].dims[0] = 8
short_ext.graph.initializer[0].external_data[2].value = "32"
expect(write("ext_short.onnx", short_ext), 1, "too short")

# usage errors exit 2
expect(None, 2, "no model given", args=("inspect",))
expect(write("ok.onnx", good), 2, "unknown option '--bogus'", args=("inspect", "--bogus"))
expect(None, 2, "unknown command", args=("frobnicate",))
expect(write("ok.onnx", good), 0)

# a Reshape whose constant shape does not hold its input's elements: the
# run stops at that node with exit 1, on the CPU and on dnnl (which checks
# it when compiling)
reshape = model([helper.make_node("Relu", ["x"], ["r"], name="r0"),
                 helper.make_node("Reshape", ["r", "shp"], ["y"], name="bad_reshape")],
                [vi("x", [4])], [vi("y", [8])], [numpy_helper.from_array(np.array([8], dtype=np.int64), "shp")])
expect(write("reshape_numel.onnx", reshape), 1, "bad_reshape", args=("run",))
expect(write("reshape_numel_dnnl.onnx", reshape), 1, "bad_reshape", args=("run", "--target", "dnnl", "--placement", "capability"))

# Attributes no real window has: refused at once (the window geometry is
# checked before any loop), on the CPU and on dnnl, never a run that walks
# a 2^31-wide window.
for target in ((), ("--target", "dnnl", "--placement", "capability")):
    tag = "_dnnl" if target else ""
    big_pool = model([helper.make_node("MaxPool", ["x"], ["y"], name="big_pool", kernel_shape=[2147483647, 2],
                                       auto_pad="SAME_LOWER")], [vi("x", [1, 1, 32, 32])], [vi("y", None)])
    expect(write(f"maxpool_huge_kernel{tag}.onnx", big_pool), 1, "big_pool",
           "kernel, stride and dilation must be positive", args=("run", *target))
    concat = model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat", axis=-2147483648)],
                   [vi("x", [2, 3])], [vi("y", None)])
    expect(write(f"concat_axis_min{tag}.onnx", concat), 1, "cat", "axis is out of range", args=("run", *target))

# What the op layer refuses before any backend sees the node (src/ops/
# validate.c): the same words on the CPU and on dnnl, never a crash or a
# silent result from a node missing an input.
w3 = numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "w")
for target in ((), ("--target", "dnnl", "--placement", "capability")):
    tag = "_dnnl" if target else ""
    conv = model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[])],
                 [vi("x", [1, 1, 5, 5])], [vi("y", None)], [w3])
    expect(write(f"conv_empty_kernel{tag}.onnx", conv), 1, "node 0 'conv' (Conv)", "kernel_shape has 0 entries",
           args=("run", *target))
    tconv = model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="tconv", strides=[2**62, 1])],
                  [vi("x", [1, 1, 5, 5])], [vi("y", None)], [w3])
    expect(write(f"convtranspose_huge_stride{tag}.onnx", tconv), 1, "'tconv' (ConvTranspose)", "strides[0]",
           args=("run", *target))
    for op in ("Add", "MatMul", "PRelu"):
        one = model([helper.make_node(op, ["x"], ["y"], name="one")], [vi("x", [2, 2])], [vi("y", None)])
        expect(write(f"one_input_{op}{tag}.onnx", one), 1, f"node 0 'one' ({op})", "needs 2 inputs, has 1",
               args=("run", *target))
    cat_hole = model([helper.make_node("Concat", ["", "x"], ["y"], name="cat", axis=0)],
                     [vi("x", [2, 3])], [vi("y", None)])
    expect(write(f"concat_empty_input{tag}.onnx", cat_hole), 1, "'cat' (Concat)", "input 0 is required",
           args=("run", *target))
    # a hole later in the list, the output's shape static (so that dnnl
    # compiles the Concat): dnnl crashed on it, the CPU skipped the hole
    cat_mid = model([helper.make_node("Relu", ["x"], ["r"], name="r"),
                     helper.make_node("Concat", ["r", "", "x"], ["y"], name="cat", axis=0)],
                    [vi("x", [2, 3])], [vi("y", [4, 3])])
    expect(write(f"concat_empty_middle_input{tag}.onnx", cat_mid), 1, "'cat' (Concat)", "input 1 is required",
           args=("run", *target))
    sum_mid = model([helper.make_node("Sum", ["x", "", "x"], ["y"], name="sum")], [vi("x", [2, 3])], [vi("y", [2, 3])])
    expect(write(f"sum_empty_middle_input{tag}.onnx", sum_mid), 1, "'sum' (Sum)", "input 1 is required",
           args=("run", *target))
    # attribute arithmetic (issue 29): blocksize^2 of 2^62 wrapped to 0 (SIGFPE on both paths once); a
    # num_scan_inputs of 2^31 wrapped through int32 (found by check_mutate's sweep under UBSan)
    d2s = model([helper.make_node("DepthToSpace", ["x"], ["y"], name="d2s", blocksize=2**62)],
                [vi("x", [1, 4, 2, 2])], [vi("y", None)])
    expect(write(f"depthtospace_huge_blocksize{tag}.onnx", d2s), 1, "'d2s' (DepthToSpace)", "blocksize",
           "out of range", args=("run", *target))
    body = helper.make_graph([helper.make_node("Add", ["s_in", "x_in"], ["s_out"]),
                              helper.make_node("Identity", ["s_out"], ["y_out"])], "body",
                             [vi("s_in", [2]), vi("x_in", [2])], [vi("s_out", [2]), vi("y_out", [2])])
    for m_bad in (2**31, 0):
        scan = model([helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], name="scan", body=body,
                                       num_scan_inputs=m_bad)],
                     [vi("s0", [2]), vi("xs", [3, 2])], [vi("s", None), vi("ys", None)])
        scan.opset_import[0].version = 11
        expect(write(f"scan_num_scan_inputs_{m_bad}{tag}.onnx", scan), 1, "'scan' (Scan)",
               f"num_scan_inputs = {m_bad} is out of range [1, 2]", args=("run", *target))
    # found by the sweep's 2^63 - 1 (issue 29): an ngram_counts start of 2^63 - 1 wrapped the CPU kernel's
    # walk of the pool (SIGSEGV on cpu and in the saved file); now refused before any backend sees it
    tfidf = model([helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf", mode="TF", min_gram_length=2,
                                    max_gram_length=2, max_skip_count=0, ngram_counts=[0, 2**63 - 1],
                                    ngram_indexes=[0, 1], pool_int64s=[2, 3, 5, 4])],
                  [vi("x", [6], TensorProto.INT32)], [vi("y", None)])
    tfidf.opset_import[0].version = 9
    expect(write(f"tfidf_ngram_counts_max{tag}.onnx", tfidf), 1, "'tfidf' (TfIdfVectorizer)",
           "ngram_counts[1] = 9223372036854775807 is out of range [0, 4]", args=("run", *target))
    # sizes the op layer now bounds instead of the kernels alone: Upsample's float scales (inf and 1e30 were
    # cast to int64, undefined), Pad's pads (2^62 + 2^62 wrapped in inference), TopK's k, EyeLike's row + k
    ups = model([helper.make_node("Upsample", ["x"], ["y"], name="up", scales=[1.0, 1.0, float("inf"), 2.0])],
                [vi("x", [1, 1, 2, 2])], [vi("y", None)])
    ups.opset_import[0].version = 7
    expect(write(f"upsample_scales_inf{tag}.onnx", ups), 1, "'up' (Upsample)",
           "scales[2] = inf is out of range [0, 1099511627776]", args=("run", *target))
    ups.graph.node[0].attribute[0].floats[2] = 1e12
    expect(write(f"upsample_scales_huge{tag}.onnx", ups), 1, "'up' (Upsample)",
           "scales[2] = 1e+12 makes axis 2 2e+12 long, over the limit 1099511627776", args=("run", *target))
    pad = model([helper.make_node("Pad", ["x"], ["y"], name="pad", pads=[0, 2**62, 0, 2**62])],
                [vi("x", [2, 3])], [vi("y", None)])
    pad.opset_import[0].version = 2
    expect(write(f"pad_attr_huge{tag}.onnx", pad), 1, "'pad' (Pad)",
           "pads[1] = 4611686018427387904 is out of range", args=("run", *target))
    topk = model([helper.make_node("TopK", ["x"], ["v", "i"], name="topk", k=2**62)],
                 [vi("x", [2, 3])], [vi("v", None), vi("i", None)])
    topk.opset_import[0].version = 1
    expect(write(f"topk_k_huge{tag}.onnx", topk), 1, "'topk' (TopK)",
           "k = 4611686018427387904 is out of range [0, 1099511627776]", args=("run", *target))
    eye = model([helper.make_node("EyeLike", ["x"], ["y"], name="eye", k=2**63 - 1)], [vi("x", [3, 3])],
                [vi("y", None)])
    expect(write(f"eyelike_k_max{tag}.onnx", eye), 1, "'eye' (EyeLike)",
           "k = 9223372036854775807 is out of range", args=("run", *target))
    # a Constant with two values (a shape tensor and a value_float, found by the sweep's added attributes):
    # inference took the type from one and the data from the other, and dnnl's Reshape view of it was a
    # SIGSEGV in dnnl_memory_create (1 run in 5, by address layout); refused as ONNX's checker does
    shp = helper.make_node("Constant", [], ["shp"], name="two", value=numpy_helper.from_array(
        np.array([0, -1], np.int64)), value_float=0.0)
    two_values = model([shp, helper.make_node("Relu", ["x"], ["r"], name="r"),
                        helper.make_node("Reshape", ["r", "shp"], ["y"], name="re")],
                       [vi("x", [3, 5])], [vi("y", None)])
    expect(write(f"constant_two_values{tag}.onnx", two_values), 1, "node 0 'two' (Constant)",
           "has 2 value attributes (value, value_float)", args=("run", *target))
    cat_max = model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat", axis=2**31 - 1)],
                    [vi("x", [2, 3])], [vi("y", None)])
    expect(write(f"concat_axis_max{tag}.onnx", cat_max), 1, "cat", "axis is out of range", args=("run", *target))

# The axis bounds at their edges, refused by `inspect` (the op layer, before
# any kernel): the last axis and -rank are fine, rank and -rank - 1 are not
# (Flatten's axis may be rank itself; rank + 1 is not).
idx = numpy_helper.from_array(np.array([0, 1], np.int64), "idx")
for op, ins, inits, extra in (("Softmax", ["x"], [], 0), ("Concat", ["x", "x"], [], 0), ("ArgMax", ["x"], [], 0),
                              ("Gather", ["x", "idx"], [idx], 0), ("Flatten", ["x"], [], 1)):
    for axis, code in ((2 - 1 + extra, 0), (-2, 0), (2 + extra, 1), (-3, 1)):
        m = model([helper.make_node(op, ins, ["y"], name="ax", axis=axis)], [vi("x", [2, 3])], [vi("y", None)], inits)
        needles = ("node 0 'ax'", f"axis is out of range for rank 2 (axis = {axis})") if code else ()
        expect(write(f"axis_edge_{op}_{axis}.onnx".replace("-", "m"), m), code, *needles)

# a shape known only at run time that asks for more than one tensor may
# hold (SEAM_MAX_TENSOR_BYTES) fails at once, naming the node
big = model([helper.make_node("ConstantOfShape", ["s"], ["y"], name="big")], [vi("s", [2], TensorProto.INT64)],
            [vi("y", None)])
big_shape = os.path.join(WORK, "big_shape.npy")
np.save(big_shape, np.array([2**30, 2], dtype=np.int64))  # 8 GiB of float32
expect(write("constant_of_shape_huge.onnx", big), 1, "'big' (ConstantOfShape)", "out of memory",
       args=("run", "--input", f"s={big_shape}"))

# --output-dir is all or nothing: a run that fails leaves the folder as it was
out = os.path.join(WORK, "outdir")
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
with open(os.path.join(out, "keep.txt"), "w") as f:
    f.write("mine")
if check.selected("output-dir after a failed run"):
    r = SEAM("run", write("reshape_out.onnx", reshape), "--output-dir", out)
    check.expect(r.returncode == 1 and sorted(os.listdir(out)) == ["keep.txt"],
                 "output-dir after a failed run", f"exit {r.returncode}, folder {sorted(os.listdir(out))}")
    fresh = os.path.join(WORK, "outdir-new")
    shutil.rmtree(fresh, ignore_errors=True)
    r = SEAM("run", write("reshape_out.onnx", reshape), "--output-dir", fresh)
    check.expect(r.returncode == 1 and not os.path.exists(fresh), "output-dir not made by a failed run",
                 f"exit {r.returncode}, exists {os.path.exists(fresh)}")
    r = SEAM("run", write("ok.onnx", good), "--output-dir", out)
    check.expect(r.returncode == 0 and sorted(os.listdir(out)) == ["keep.txt", "y.npy"],
                 "output-dir after a good run", f"exit {r.returncode}: {r.stderr} folder {sorted(os.listdir(out))}")
    # two outputs whose file names collide (tf2onnx's a:0 next to an a_0)
    two = model([helper.make_node("Relu", ["x"], ["a:0"], name="r1"), helper.make_node("Neg", ["x"], ["a_0"], name="r2")],
                [vi("x", [1, 4])], [vi("a:0", [1, 4]), vi("a_0", [1, 4])])
    r = SEAM("run", write("two_outputs.onnx", two), "--output-dir", out)
    check.expect(r.returncode == 1 and "'a:0' and 'a_0' would both be written" in r.stderr
                 and sorted(os.listdir(out)) == ["keep.txt", "y.npy"],
                 "output-dir with two outputs mapped to one file: refused, nothing written",
                 f"exit {r.returncode}: {r.stderr} folder {sorted(os.listdir(out))}")

check.finish()
