"""The mask and shape ops on dnnl (src/backends/dnnl/mask.c): comparisons,
Where, Expand, Tile, Cast, and the values other than float32 they carry.

usage: /usr/bin/python3 check_dnnl_ops.py SEAM WORKDIR [-k PATTERN]

1. Per op: small models built with onnx.helper, over dtypes (float32,
   bool, int8, uint8, int32, integer constants), broadcasting shapes and
   edge values (NaN and inf in Where's unused branch, float -> int
   truncation of negatives and of .5s, -0.0 and NaN to bool). Every node
   must be placed on dnnl, and the output must equal numpy's result
   (written from the ONNX spec, independently of seam) exactly, on the
   CPU, on dnnl with fusion on and with fusion off; dnnl must name no
   reference kernel and print no "slow:" line.
2. What dnnl cannot hold is refused with its reason: supports() (the plan)
   for computed int64 and int32 inputs, int64 outputs, int8 <-> uint8
   casts; compile() for an integer constant beyond 2^24 (supports() cannot
   read data), as an error naming the node and the constant.
3. Models torch exports with masks (nn.TransformerEncoder with a causal
   mask and src_key_padding_mask, a BERT-style embedding + attention mask
   with masked_fill, torch.where / expand / repeat / casts), random weights:
   the mask arithmetic goes on dnnl (fewer subgraphs, or fewer boundary
   values, than with those ops kept on the CPU), and the outputs equal
   torch's within 1e-4 of their scale on the CPU and on dnnl with fusion
   on and off.
4. The sweep: for every model above and every target option combination
   (fusion on/off, threads=1), every node supports() accepts is placed on
   dnnl (--placement capability) and its subgraph compiles and runs.

The cases are named by what they test (cast_trunc, where_nan_unused,
torch_encoder, ...).
"""
import json
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto as T
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import rel_err  # noqa: E402

args, run, work, check = seamtest.checker_setup(__doc__, "dnnl_ops", timeout=300)
rng = np.random.RandomState(11)

NP2ONNX = {np.float32: T.FLOAT, np.bool_: T.BOOL, np.int8: T.INT8, np.uint8: T.UINT8, np.int32: T.INT32,
           np.int64: T.INT64}
OPTIONS = [[], ["fusion=off"], ["threads=1"], ["fusion=off", "threads=1"]]
MASK_OPS = "Equal,Greater,Less,GreaterOrEqual,LessOrEqual,Where,Expand,Tile,Cast"


def onnx_type(a):
    return NP2ONNX[a.dtype.type]


def plan(path, *extra):
    r = run("partition", path, "--target", "dnnl", "--json", *extra)
    if r.returncode:
        return None, r.stderr.strip()
    return json.loads(r.stdout), None


def no_refs(stderr):
    """The compile log's reference kernels and slow: lines."""
    bad = []
    for line in stderr.splitlines():
        if "): slow: " in line:
            bad.append(line.split("): slow: ", 1)[1][:200])
        elif "(dnnl): node " in line and " ref:" in line and " concat " not in line and " sum " not in line:
            bad.append(line[:200])
    return bad


def run_variants(name, path, feeds, placement="capability"):
    """Runs the model on the CPU and on dnnl under every option set; returns
    {label: [outputs]} or None after a failure."""
    args_in = []
    for k, v in feeds.items():
        f = os.path.join(work, f"{name}.{k}.npy")
        np.save(f, v)
        args_in += ["--input", f"{k}={f}"]
    outs = {}
    for opts in [None] + OPTIONS:
        label = "cpu" if opts is None else "dnnl " + (",".join(opts) or "fusion=on")
        d = os.path.join(work, f"{name}.{label}".replace(" ", "_").replace("=", "_").replace(",", "_"))
        extra = [] if opts is None else ["--target", "dnnl", "--placement", placement, "--compile-log"]
        for o in opts or []:
            extra += ["--target-option", o]
        r = run("run", path, *args_in, *extra, "--output-dir", d)
        if r.returncode:
            check.fail(f"{name} ({label}): run failed: {r.stderr.strip()[-400:]}")
            return None
        if opts is not None:
            bad = no_refs(r.stderr)
            check.expect(not bad, f"{name} ({label}): no reference kernel, no slow: line", bad)
        outs[label] = seamtest.load_outputs(path, d)
    return outs


def same(got, want):
    """Exact equality, NaN equal to NaN, dtypes included."""
    return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


def named(nodes):
    """Every node named (the plan names nodes by name)."""
    for i, n in enumerate(nodes):
        if not n.name:
            n.name = f"{n.op_type}_{i}"
    return nodes


def case(name, nodes, feeds, outs, inits=None, opset=13, on_dnnl=None):
    """feeds: {name: array}; outs: {name: expected array} (numpy's); inits:
    {name: array} (kept in their dtype). Every node must be on dnnl (or the
    ones named in on_dnnl)."""
    inits, nodes = inits or {}, named(nodes)
    path = os.path.join(work, name + ".onnx")
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(k, onnx_type(v), v.shape) for k, v in feeds.items()],
                          [helper.make_tensor_value_info(k, onnx_type(v), v.shape) for k, v in outs.items()],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)
    if not check.selected(name):
        return
    p, err = plan(path, "--placement", "capability")
    if p is None:
        check.fail(f"{name}: partition failed: {err}")
        return
    want_on = set(on_dnnl) if on_dnnl else {n.name for n in nodes}
    off = [f"{n['name']}: {n['reason']}" for n in p["nodes"] if n["name"] in want_on and n["target"] != "dnnl"]
    off += [f"{x}: not in the plan" for x in want_on - {n["name"] for n in p["nodes"]}]
    check.expect(not off, f"{name}: placed on dnnl", off)
    got = run_variants(name, path, feeds)
    if got is None:
        return
    for label, values in got.items():
        for (oname, want), v in zip(outs.items(), values):
            check.expect(same(v, want), f"{name} ({label}): {oname} equals numpy's",
                         f"got {v.dtype} {v.ravel()[:12]}, want {want.dtype} {want.ravel()[:12]}")


def refused(name, nodes, feeds, outs, inits, reason):
    """supports() says no, with a reason containing `reason`."""
    nodes = named(nodes)
    path = os.path.join(work, name + ".onnx")
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(k, onnx_type(v), v.shape) for k, v in feeds.items()],
                          [helper.make_tensor_value_info(k, t, s) for k, (t, s) in outs.items()],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    if not check.selected(name):
        return
    p, err = plan(path, "--placement", "capability")
    if p is None:
        check.fail(f"{name}: partition failed: {err}")
        return
    n = [x for x in p["nodes"] if x["name"] == nodes[-1].name][0]
    check.expect(n["target"] != "dnnl" and reason in n["reason"], f"{name}: refused ({reason})", n["reason"])


f32 = lambda *s: rng.randn(*s).astype(np.float32)  # noqa: E731
ints_f = lambda *s: rng.randint(-2, 3, size=s).astype(np.float32)  # noqa: E731
mk = helper.make_node

# ---- comparisons: broadcasting either side, both sides, constants of other types
a, b = ints_f(2, 3, 4), ints_f(3, 1)
case("equal_broadcast", [mk("Equal", ["a", "b"], ["y"])], {"a": a, "b": b}, {"y": a == b})
a, b = ints_f(1, 4), ints_f(3, 4)
case("greater_first_broadcast", [mk("Greater", ["a", "b"], ["y"])], {"a": a, "b": b}, {"y": a > b})
case("greater_or_equal_first_broadcast", [mk("GreaterOrEqual", ["a", "b"], ["y"])], {"a": a, "b": b}, {"y": a >= b})
a, b = ints_f(3, 1), ints_f(1, 4)
case("less_both_broadcast", [mk("Less", ["a", "b"], ["y"])], {"a": a, "b": b}, {"y": a < b})
case("less_or_equal_both_broadcast", [mk("LessOrEqual", ["a", "b"], ["y"])], {"a": a, "b": b}, {"y": a <= b})
a = np.array([[0, 1, 2, 255], [7, 0, 3, 3]], np.uint8)
c = np.array([0, 3, 2, 255])
c = c.astype(np.uint8)
case("equal_uint8_constant", [mk("Equal", ["a", "c"], ["y"])], {"a": a}, {"y": a == c}, inits={"c": c})
a = np.array([[-128, 5, 127], [0, -1, 1]], np.int8)
case("greater_int8_scalar_constant", [mk("Greater", ["a", "c"], ["y"])], {"a": a}, {"y": a > 0},
     inits={"c": np.array(0, np.int8)})
a, b = rng.rand(2, 5) > 0.5, rng.rand(5) > 0.5
case("equal_bool", [mk("Equal", ["a", "b"], ["y"])], {"a": a, "b": b}, {"y": a == b})
x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], np.float32)
case("equal_nan_inf", [mk("Equal", ["a", "b"], ["y"])], {"a": x, "b": x[::-1].copy()}, {"y": x == x[::-1]})

# ---- Where: broadcasting, NaN and inf in the branch not taken, other dtypes
cond = rng.rand(2, 1, 4) > 0.5
xa = f32(2, 3, 4)
xa[0, :, :] = np.nan
xa[1, :, 1] = np.inf
xb = np.array(-np.inf, np.float32)
case("where_nan_inf_unused", [mk("Where", ["c", "a", "b"], ["y"])], {"c": cond, "a": xa}, {"y": np.where(cond, xa, xb)},
     inits={"b": xb})
xb2 = f32(3, 1)
xb2[0, 0] = np.nan
case_feeds = {"c": cond, "a": f32(1, 4), "b": xb2}
case("where_broadcast_all", [mk("Where", ["c", "a", "b"], ["y"])], case_feeds,
     {"y": np.where(case_feeds["c"], case_feeds["a"], case_feeds["b"])})
ba, bb = rng.rand(2, 4) > 0.5, rng.rand(4) > 0.5
cond2 = rng.rand(2, 4) > 0.5
case("where_bool", [mk("Where", ["c", "a", "b"], ["y"])], {"c": cond2, "a": ba, "b": bb}, {"y": np.where(cond2, ba, bb)})
ia, ib = np.array([1, -2, 3, 4], np.int32), np.array(-7, np.int32)
case("where_int32_constants", [mk("Where", ["c", "a", "b"], ["y"])], {"c": cond2}, {"y": np.where(cond2, ia, ib)},
     inits={"a": ia, "b": ib})
neg0 = np.array([-0.0, 0.0, np.float32(1e-45), -3.4e38], np.float32)
case("where_bits", [mk("Where", ["c", "a", "b"], ["y"])], {"c": np.array([True, False, True, False]), "a": neg0,
     "b": neg0[::-1].copy()}, {"y": np.where([True, False, True, False], neg0, neg0[::-1])})

# ---- Expand and Tile
e = f32(3, 1)
case("expand_grow_rank", [mk("Expand", ["x", "s"], ["y"])], {"x": e}, {"y": np.broadcast_to(e, (2, 3, 4)).copy()},
     inits={"s": np.array([2, 1, 4], np.int64)})
e2 = f32(2, 1, 4)
case("expand_shape_of_lower_rank", [mk("Expand", ["x", "s"], ["y"])], {"x": e2},
     {"y": np.broadcast_to(e2, (2, 3, 4)).copy()}, inits={"s": np.array([3, 1], np.int64)})
eb = rng.rand(1, 5) > 0.5
case("expand_bool", [mk("Expand", ["x", "s"], ["y"])], {"x": eb}, {"y": np.broadcast_to(eb, (3, 5)).copy()},
     inits={"s": np.array([3, 5], np.int64)})
t = f32(2, 3)
case("tile_2d", [mk("Tile", ["x", "r"], ["y"])], {"x": t}, {"y": np.tile(t, (2, 1))}, inits={"r": np.array([2, 1], np.int64)})
t3 = f32(1, 2, 3)
case("tile_3d", [mk("Tile", ["x", "r"], ["y"])], {"x": t3}, {"y": np.tile(t3, (3, 2, 2))},
     inits={"r": np.array([3, 2, 2], np.int64)})
tu = rng.randint(0, 255, size=(2, 2)).astype(np.uint8)
case("tile_uint8", [mk("Tile", ["x", "r"], ["y"])], {"x": tu}, {"y": np.tile(tu, (1, 3))},
     inits={"r": np.array([1, 3], np.int64)})

# ---- Cast: truncation toward zero (negatives, .5s), to bool (NaN, -0.0), from the held types
edge = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.7, 2.7, -3.0, 3.0, -0.0, 99.99, -99.99, 1e6 + 0.5,
                 8388607.5, -8388607.5, 16777216.0, 1e9], np.float32)
case("cast_trunc_int32", [mk("Cast", ["x"], ["y"], to=T.INT32)], {"x": edge}, {"y": edge.astype(np.int32)})
small = np.array([-128.9, -2.5, -0.5, 0.5, 1.5, 127.9, 3.0, -3.7], np.float32)
case("cast_trunc_int8", [mk("Cast", ["x"], ["y"], to=T.INT8)], {"x": small}, {"y": small.astype(np.int8)})
# an int32 a dnnl Cast makes is no run-time parameter: the Slice reading it
# goes to the CPU, and the dnnl subgraph compiles (no slow: line)
xs8, fs = rng.rand(4, 8).astype(np.float32), np.array([2.7], np.float32)
case("cast_int32_into_slice", [mk("Relu", ["f"], ["fr"]), mk("Cast", ["fr"], ["s"], to=T.INT32), mk("Relu", ["x"], ["xr"]),
                               mk("Slice", ["xr", "s", "e", "ax"], ["y"])],
     {"x": xs8, "f": fs}, {"y": xs8[:, 2:8]}, inits={"e": np.array([8], np.int32), "ax": np.array([1], np.int32)},
     on_dnnl=["Relu_0", "Cast_1", "Relu_2"])
usmall = np.array([0.0, 0.5, 1.5, 2.5, 254.9, 7.99], np.float32)
case("cast_trunc_uint8", [mk("Cast", ["x"], ["y"], to=T.UINT8)], {"x": usmall}, {"y": usmall.astype(np.uint8)})
bz = np.array([0.0, -0.0, np.nan, np.inf, -1e-30, 2.0], np.float32)
case("cast_to_bool", [mk("Cast", ["x"], ["y"], to=T.BOOL)], {"x": bz}, {"y": bz.astype(bool)})
big = np.array([16777217, -16777219, 2147483647, -5, 0], np.int32)
case("cast_int32_to_float", [mk("Cast", ["x"], ["y"], to=T.FLOAT)], {"x": big}, {"y": big.astype(np.float32)})
bb1 = rng.rand(3, 4) > 0.5
case("cast_bool_to_float", [mk("Cast", ["x"], ["y"], to=T.FLOAT)], {"x": bb1}, {"y": bb1.astype(np.float32)})
case("cast_bool_to_int32", [mk("Cast", ["x"], ["y"], to=T.INT32)], {"x": bb1}, {"y": bb1.astype(np.int32)})
u = np.array([0, 1, 200, 255], np.uint8)
case("cast_uint8_to_int32", [mk("Cast", ["x"], ["y"], to=T.INT32)], {"x": u}, {"y": u.astype(np.int32)})
case("cast_uint8_to_bool", [mk("Cast", ["x"], ["y"], to=T.BOOL)], {"x": u}, {"y": u.astype(bool)})
# a chain: float -> int32 -> float inside one subgraph (the held value), and a mask made and used
xc = (f32(2, 6) * 4).astype(np.float32)
case("cast_chain_mask", [mk("Cast", ["x"], ["i"], to=T.INT32), mk("Cast", ["i"], ["f"], to=T.FLOAT),
                         mk("Greater", ["f", "z"], ["m"]), mk("Where", ["m", "x", "n"], ["y"])],
     {"x": xc}, {"y": np.where(np.trunc(xc) > 0, xc, np.float32(-1e9))},
     inits={"z": np.array(0, np.float32), "n": np.array(-1e9, np.float32)})

# ---- refused, with the reason
refused("refuse_int64_computed", [mk("Equal", ["a", "b"], ["y"])], {"a": np.zeros(3, np.int64), "b": np.zeros(3, np.int64)},
        {"y": (T.BOOL, [3])}, {}, "oneDNN has no int64")
refused("refuse_int32_computed", [mk("Where", ["c", "a", "b"], ["y"])],
        {"c": np.zeros(3, bool), "a": np.zeros(3, np.int32), "b": np.zeros(3, np.int32)}, {"y": (T.INT32, [3])}, {},
        "exact only up to 2^24")
refused("refuse_cast_int32_to_int32", [mk("Cast", ["x"], ["y"], to=T.INT32)], {"x": np.zeros(3, np.int32)},
        {"y": (T.INT32, [3])}, {}, "exact only up to 2^24")
refused("refuse_cast_to_int64", [mk("Cast", ["x"], ["y"], to=T.INT64)], {"x": np.zeros(3, np.float32)},
        {"y": (T.INT64, [3])}, {}, "oneDNN has no such type")
refused("refuse_cast_uint8_int8", [mk("Cast", ["x"], ["y"], to=T.INT8)], {"x": np.zeros(3, np.uint8)},
        {"y": (T.INT8, [3])}, {}, "wraps around")
if check.selected("refuse_int64_constant_too_large"):
    path = os.path.join(work, "big_constant.onnx")
    g = helper.make_graph([mk("Equal", ["a", "c"], ["y"])], "g", [helper.make_tensor_value_info("a", T.UINT8, [2])],
                          [helper.make_tensor_value_info("y", T.BOOL, [2])],
                          [numpy_helper.from_array(np.array([1 << 40, 1], np.int64), "c")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    np.save(os.path.join(work, "big_constant.a.npy"), np.array([1, 1], np.uint8))
    r = run("run", path, "--target", "dnnl", "--placement", "capability", "--input",
            "a=" + os.path.join(work, "big_constant.a.npy"), "--output-dir", os.path.join(work, "big_constant.out"))
    check.expect(r.returncode == 1 and "'Equal_0' (Equal)" in r.stderr and "1099511627776" in r.stderr and
                 "2^24" in r.stderr, "refuse_int64_constant_too_large: compile refuses, naming node and value",
                 r.stderr.strip()[-300:])


# ---- models torch exports with masks
class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, 2)
        self.register_buffer("causal", torch.triu(torch.full((8, 8), float("-inf")), 1))

    def forward(self, x, pad):
        return self.enc(x, mask=self.causal, src_key_padding_mask=pad)


class Bert(torch.nn.Module):
    """Embedding + position, one attention with masked_fill from a float
    attention mask, a feed-forward; the mask repeated per head."""

    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(50, 32)
        self.pos = torch.nn.Parameter(torch.randn(1, 8, 32) * 0.1)
        self.qkv = torch.nn.Linear(32, 96)
        self.out = torch.nn.Linear(32, 32)
        self.ff = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 32))

    def forward(self, ids, mask):
        h = self.tok(ids) + self.pos
        b, s, _ = h.shape
        q, k, v = self.qkv(h).reshape(b, s, 3, 4, 8).permute(2, 0, 3, 1, 4)
        sc = q @ k.transpose(-1, -2) / 8 ** 0.5
        m = (mask == 0).unsqueeze(1).unsqueeze(2).expand(b, 4, s, s)
        sc = sc.masked_fill(m, float("-inf"))
        a = (sc.softmax(-1) @ v).transpose(1, 2).reshape(b, s, 32)
        h = h + self.out(a)
        return h + self.ff(h)


class Masks(torch.nn.Module):
    """torch.where, expand, repeat and casts around arithmetic."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 6)

    def forward(self, x, keep):
        y = self.lin(x)
        y = torch.where(keep > 0.5, y, torch.zeros_like(y) - 1e4)
        r = y.repeat(1, 2, 1) + y.expand(3, 4, 6).sum(0, keepdim=True).repeat(1, 2, 1)
        t = (r * 3).int().float() + (r > 0).float()
        return t.softmax(-1)


def torch_case(name, model, feeds, inputs, opset=14):
    path = os.path.join(work, name + ".onnx")
    torch.manual_seed(3)
    model = model.eval()
    with torch.no_grad():
        want = model(*[torch.from_numpy(v) for v in feeds.values()])
    torch.onnx.export(model, tuple(torch.from_numpy(v) for v in feeds.values()), path, opset_version=opset,
                      input_names=inputs, output_names=["y"])
    if not check.selected(name):
        return
    p, err = plan(path, "--placement", "capability")
    p_cpu, err2 = plan(path, "--placement", "capability", "--cpu-ops", MASK_OPS)
    if p is None or p_cpu is None:
        check.fail(f"{name}: partition failed: {err or err2}")
        return
    mask_nodes = [n for n in p["nodes"] if n["op"] in MASK_OPS.split(",") and n["target"] not in ("constant",)]
    off = [f"{n['name']}: {n['reason']}" for n in mask_nodes if n["target"] != "dnnl"]
    # (an Equal or a comparison on the int64 ids the model is fed stays on
    # the CPU, with its reason)
    off = [o for o in off if "int64" not in o]
    check.expect(mask_nodes and not off, f"{name}: the mask ops on dnnl ({len(mask_nodes)})", off)

    def cost(pl):
        return len(pl["subgraphs"]), sum(len(s.get("inputs", [])) + len(s.get("outputs", [])) for s in pl["subgraphs"])

    c_dnnl, c_cpu = cost(p), cost(p_cpu)
    check.expect(c_dnnl < c_cpu, f"{name}: fewer (subgraphs, boundary values) with the mask ops on dnnl: {c_dnnl} vs {c_cpu}")
    got = run_variants(name, path, feeds)
    if got is None:
        return
    want = want.numpy()
    for label, values in got.items():
        e = rel_err(values[0], want)
        check.expect(e <= 1e-4, f"{name} ({label}): error against torch {e:.2e}")


torch.manual_seed(0)
pad = np.zeros((2, 8), bool)
pad[1, 5:] = True
torch_case("torch_encoder", Encoder(), {"x": f32(2, 8, 32), "pad": pad}, ["x", "pad"])
am = np.ones((2, 8), np.float32)
am[0, 6:] = 0
torch_case("torch_bert", Bert(), {"ids": rng.randint(1, 50, size=(2, 8)).astype(np.int64), "mask": am}, ["ids", "mask"])
torch_case("torch_masks", Masks(), {"x": f32(1, 4, 6), "keep": rng.rand(1, 4, 6).astype(np.float32)}, ["x", "keep"],
           opset=13)

# ---- the sweep: supports() and compile() agree on every node of every
# model above (placed on dnnl wherever supported), under every option set
for f in sorted(os.listdir(work)):
    if not f.endswith(".onnx") or f.startswith(("refuse", "big_constant", "sweep_")):
        continue
    name = "sweep_" + f[:-5]
    if not check.selected(name):
        continue
    path = os.path.join(work, f)
    m = onnx.load(path)
    # random inputs: an output whose shape follows the data (a Slice whose
    # start a Cast computes) need not have the shape the case declared for
    # its own data, so the sweep's copy declares none (the self-check,
    # SEAM_SELF_CHECK, compares outputs with what a file declares)
    for o in m.graph.output:
        o.type.tensor_type.ClearField("shape")
    path = os.path.join(work, name + ".onnx")
    onnx.save(m, path)
    feeds = {}
    for i in seamtest.feeds(m):
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        et = i.type.tensor_type.elem_type
        feeds[i.name] = (rng.rand(*shape) > 0.5 if et == T.BOOL else
                         rng.randint(1, 50, size=shape).astype({v: k for k, v in NP2ONNX.items()}[et])
                         if et != T.FLOAT else rng.randn(*shape).astype(np.float32))
    args_in = []
    for k, v in feeds.items():
        fp = os.path.join(work, f"{name}.{k}.npy")
        np.save(fp, v)
        args_in += ["--input", f"{k}={fp}"]
    for opts in OPTIONS:
        extra = [a for o in opts for a in ("--target-option", o)]
        r = run("run", path, *args_in, "--target", "dnnl", "--placement", "capability", *extra, "--output-dir",
                os.path.join(work, name + ".out"))
        check.expect(r.returncode == 0, f"{name} {' '.join(opts) or 'fusion=on'}: every supported node compiles",
                     r.stderr.strip()[-300:])

check.finish()
