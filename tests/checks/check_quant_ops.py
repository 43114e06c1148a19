"""The quantized ops dnnl fuses or runs on its own passes, against numpy
and the CPU (issue 27; cases split from check_quant.py).

usage: /usr/bin/python3 check_quant_ops.py SEAM WORKDIR [-k PATTERN]

One-node or few-node models written with onnx.helper, run on the CPU and
on `--target dnnl` with fusion on and off:
- MatMulInteger -> Cast -> Mul [-> Add] as one pass after the int32
  matmul (only on a CPU with VNNI: elsewhere dnnl refuses int8 products);
- DQ -> MaxPool -> Q as one int8 pooling;
- DQ(a) * DQ(b) -> Q as one pass;
- DQ, DQ, ... -> Concat -> Q on the 8-bit values;
- an int8 convolution whose input has a zero point (with VNNI only);
- DynamicQuantizeLinear on dnnl against the CPU.
Each function's docstring says what it compares; the outputs are bit for
bit the CPU's or numpy's where the arithmetic is exact, and the compile
log must say which nodes became one pass.
"""
import json
import os
import re
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import quantcase  # noqa: E402
import seamtest  # noqa: E402

args, run, work, check = seamtest.checker_setup(__doc__, "quant_ops", timeout=600)
qc = quantcase.Cases(run, work, check)
write_case, run_case, expect_cpu_bits, f32 = qc.write_case, qc.run_case, qc.expect_cpu_bits, quantcase.f32
# the paths each case runs: the CPU, dnnl with fusion on and off (each dnnl run prints its compile log)
CPU_DNNL_PATHS = (("cpu", []), ("dnnl", ["--target", "dnnl", "--placement", "capability", "--compile-log"]),
                  ("dnnl fusion=off", ["--target", "dnnl", "--placement", "capability", "--target-option", "fusion=off",
                                       "--compile-log"]))


# ---- MatMulInteger -> Cast -> Mul [-> Add] as one pass on dnnl ----------------------

def epilogue_cases():
    """The dequantization after MatMulInteger (backends/dnnl/quant_dyn.c):
    dnnl makes Cast, Mul and the bias Add one host pass after the int32
    matmul. Each variant (B's zero point per tensor or per column, A uint8
    or int8, a scale of one value or one per column, a bias of one value,
    one per column, from a graph input, or none; a Mul whose operand is
    not along the last axis, which must stay unfused) against numpy's
    exact integer product followed by the same float32 operations, bit for
    bit, on the CPU and on dnnl with fusion on and off; the compile log
    must say which ones became one pass."""
    rng = np.random.RandomState(11)
    K, N = 40, 24
    variants = [
        # name, A type, A shape, B zp per column, scale per column, bias kind, fused
        ("epi_percol_bias", np.uint8, (6, K), True, True, "const_col", True),
        ("epi_tensor_zp_scalar", np.uint8, (2, 5, K), False, False, None, True),
        ("epi_int8_a_bias_input", np.int8, (7, K), True, False, "input_col", True),
        ("epi_bias_scalar", np.uint8, (3, K), True, True, "const_one", True),
        ("epi_full_scale", np.uint8, (6, K), True, "full", "const_col", False),
    ]
    for name, adt, ashape, zp_col, scale_kind, bias_kind, fused in variants:
        if not check.selected(name):
            continue
        lo, hi = (0, 256) if adt == np.uint8 else (-128, 128)
        a = rng.randint(lo, hi, ashape).astype(adt)
        az = np.array(rng.randint(lo, hi), adt)
        b = rng.randint(-127, 128, (K, N)).astype(np.int8)
        bz = (rng.randint(-3, 4, N) if zp_col else np.array(2)).astype(np.int8)
        a_scale = f32(0.02)
        b_scale = (rng.rand(N).astype(np.float32) * 0.01 + 0.001) if scale_kind is True else f32(0.004)
        inputs = {"a": a, "a_scale": a_scale}
        inits = {"b": b, "az": az, "bz": bz, "b_scale": b_scale}
        nodes = [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["acc"], name="mmi"),
                 helper.make_node("Mul", ["a_scale", "b_scale"], ["scale"], name="scale_product"),
                 helper.make_node("Cast", ["acc"], ["accf"], to=T.FLOAT, name="cast")]
        if scale_kind == "full":  # a scale per element: not along the last axis alone
            inits["full"] = (rng.rand(*ashape[:-1], N).astype(np.float32) + 0.5)
            nodes.append(helper.make_node("Mul", ["scale", "full"], ["scale_full"], name="widen"))
            nodes.append(helper.make_node("Mul", ["accf", "scale_full"], ["y0"], name="dq"))
        else:
            nodes.append(helper.make_node("Mul", ["scale", "accf"], ["y0"], name="dq"))
        out = "y0"
        if bias_kind:
            bias = {"const_col": rng.randn(N), "input_col": rng.randn(N), "const_one": rng.randn(1)}[bias_kind]
            bias = bias.astype(np.float32)
            (inputs if bias_kind == "input_col" else inits)["bias"] = bias
            nodes.append(helper.make_node("Add", ["y0", "bias"], ["y"], name="bias_add"))
            out = "y"
        # numpy: the exact product, then the nodes' float32 operations in order
        acc = ((a.astype(np.int64) - int(az)) @ (b.astype(np.int64) - bz.astype(np.int64))).astype(np.int32)
        scale = (a_scale * b_scale).astype(np.float32)
        if scale_kind == "full":
            scale = (scale * inits["full"]).astype(np.float32)
        want = (acc.astype(np.float32) * scale).astype(np.float32)
        if bias_kind:
            want = (want + bias).astype(np.float32)
        path, files = write_case(name, nodes, inputs, inits, [(out, T.FLOAT)])
        for label, extra in CPU_DNNL_PATHS:
            r, got = run_case(name, label, path, files, extra, [out])
            if got is None:
                continue
            got = got[0]
            check.expect(got.shape == want.shape and seamtest.same_bits(got, want),
                         f"{name} ({label}): bit for bit numpy's", f"max difference {seamtest.abs_err(got, want)}")
            if label != "cpu":
                one = "one pass from the int32 product" in r.stderr
                on_dnnl = "mmi" in r.stderr or "MatMulInteger" in r.stderr
                expect_one = fused and label == "dnnl"
                check.expect(one == expect_one and on_dnnl, f"{name} ({label}): "
                             + ("one pass" if expect_one else "not one pass") + " in the compile log",
                             r.stderr.strip()[-600:])


# ---- DQ -> MaxPool -> Q as one int8 pooling on dnnl ---------------------------------

def qpool_cases():
    """A DequantizeLinear -> MaxPool -> QuantizeLinear with the same scale
    and zero point on both sides is one max pooling on the 8-bit values on
    dnnl (backends/dnnl/quant_dyn.c). Each variant (uint8 and int8, pads,
    strides, ceil_mode, a 1-D pool, a Q whose zero point or scale differs,
    which must stay three nodes) bit for bit against the CPU, which runs
    the three nodes in float32; the compile log must say which were made
    one pooling."""
    rng = np.random.RandomState(12)
    variants = [
        # name, type, shape, kernel, strides, pads, ceil, Q's (scale, zp) differs, fused
        ("qpool_u8_3x3s2", np.uint8, (1, 8, 13, 11), [3, 3], [2, 2], [1, 1, 1, 1], 0, None, True),
        ("qpool_s8_ceil", np.int8, (2, 5, 9, 9), [2, 2], [2, 2], [0, 0, 0, 0], 1, None, True),
        ("qpool_u8_1d", np.uint8, (1, 6, 17), [3], [1], [1, 1], 0, None, True),
        ("qpool_u8_other_zp", np.uint8, (1, 8, 13, 11), [3, 3], [2, 2], [1, 1, 1, 1], 0, "zp", False),
        ("qpool_s8_other_scale", np.int8, (1, 8, 12, 12), [2, 2], [2, 2], [0, 0, 0, 0], 0, "scale", False),
    ]
    for name, dt, shape, kernel, strides, pads, ceil, differs, fused in variants:
        if not check.selected(name):
            continue
        lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
        x = rng.randint(lo, hi, shape).astype(dt)
        zp = np.array(7 if dt == np.uint8 else -3, dt)
        qzp = np.array(int(zp) + (2 if differs == "zp" else 0), dt)
        qs = f32(0.05 * (1.5 if differs == "scale" else 1.0))
        inits = {"s": f32(0.05), "z": zp, "qs": qs, "qz": qzp}
        nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"], name="dq"),
                 helper.make_node("MaxPool", ["xf"], ["pf"], name="pool", kernel_shape=kernel, strides=strides,
                                  pads=pads, ceil_mode=ceil),
                 helper.make_node("QuantizeLinear", ["pf", "qs", "qz"], ["y"], name="q")]
        path, files = write_case(name, nodes, {"x": x}, inits, [("y", quantcase.NP2T[dt])])
        outs = {}
        for label, extra in CPU_DNNL_PATHS:
            r, got = run_case(name, label, path, files, extra, ["y"])
            if got is None:
                continue
            outs[label] = got[0]
            if label != "cpu":
                one = "one max pooling on the 8-bit values" in r.stderr
                expect_one = fused and label == "dnnl"
                if expect_one:  # oneDNN's own kernel, not its reference loop
                    ref = [ln for ln in r.stderr.splitlines() if "pooling" in ln and "ref:" in ln]
                    check.expect(not ref, f"{name} ({label}): a jit pooling, not a reference one", ref)
                check.expect(one == expect_one, f"{name} ({label}): "
                             + ("one pooling" if expect_one else "three nodes") + " in the compile log",
                             r.stderr.strip()[-600:])
        expect_cpu_bits(name, outs, "the CPU's three nodes")


# ---- DQ(a) * DQ(b) -> Q as one pass on dnnl ---------------------------------------

def qmul_cases():
    """A Mul of two dequantized values, quantized again (ONNX Runtime's
    QLinearMul in the QDQ form), is one host pass on dnnl in the three
    nodes' float32 arithmetic (backends/dnnl/quant_dyn.c, with the
    quantized Add): bit for bit the CPU's nodes, for uint8 and int8
    operands, zero points far from 0 and products that saturate."""
    rng = np.random.RandomState(13)
    variants = [
        # name, a type, b type, y type, shape, (sa, za), (sb, zb), (ys, yz)
        ("qmul_u8_u8", np.uint8, np.uint8, np.uint8, (1, 16, 9, 7), (0.02, 3), (0.004, 119), (0.0004, 131)),
        ("qmul_s8_u8_to_s8", np.int8, np.uint8, np.int8, (2, 6, 5), (0.05, -7), (0.01, 200), (0.003, 4)),
        ("qmul_saturating", np.uint8, np.int8, np.uint8, (3, 40), (0.5, 0), (0.5, 0), (0.01, 128)),
    ]
    for name, at, bt, yt, shape, (sa, za), (sb, zb), (ys, yz) in variants:
        if not check.selected(name):
            continue
        def rnd(dt):
            lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
            return rng.randint(lo, hi, shape).astype(dt)
        feeds = {"a": rnd(at), "b": rnd(bt)}
        inits = {"sa": f32(sa), "za": np.array(za, at), "sb": f32(sb), "zb": np.array(zb, bt),
                 "ys": f32(ys), "yz": np.array(yz, yt)}
        nodes = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["af"], name="dqa"),
                 helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["bf"], name="dqb"),
                 helper.make_node("Mul", ["af", "bf"], ["pf"], name="mul"),
                 helper.make_node("QuantizeLinear", ["pf", "ys", "yz"], ["y"], name="q")]
        path, files = write_case(name, nodes, feeds, inits, [("y", quantcase.NP2T[yt])])
        outs = {}
        for label, extra in (("cpu", []), ("dnnl", ["--target", "dnnl", "--placement", "capability", "--compile-log"])):
            r, got = run_case(name, label, path, files, extra, ["y"])
            if got is None:
                continue
            outs[label] = got[0]
            if label == "dnnl":
                check.expect("(Mul) and" in r.stderr and "one pass" in r.stderr, f"{name} (dnnl): one pass in the log",
                             r.stderr.strip()[-400:])
        if len(outs) == 2:
            a, b = outs["dnnl"], outs["cpu"]
            check.expect(a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b),
                         f"{name}: dnnl bit for bit the CPU's nodes", f"{int(np.sum(a != b))} of {a.size} differ")


# ---- DQ, DQ, ... -> Concat -> Q on the 8-bit values on dnnl ---------------------------

def qconcat_cases():
    """A Concat between DequantizeLinear nodes and a QuantizeLinear is a
    concat of the 8-bit values on dnnl (backends/dnnl/quant_concat.c), each
    input whose scale, zero point or type is not the output's requantized
    first in the nodes' float32 arithmetic: bit for bit the CPU's nodes,
    with the log saying how many were requantized. Variants: all
    parameters equal (none requantized), one scale differing, three inputs
    of mixed int8/uint8 into a uint8 output, the last axis, a negative
    axis; inputs straight from the graph (plain layout) and from an int8
    convolution (channels-last)."""
    rng = np.random.RandomState(14)
    variants = [
        # name, axis, [(type, shape, scale, zp)], (y type, y scale, y zp), conv first, requantized
        ("qconcat_same", 1, [(np.uint8, (1, 4, 6, 5), 0.02, 3), (np.uint8, (1, 3, 6, 5), 0.02, 3)],
         (np.uint8, 0.02, 3), False, 0),
        ("qconcat_one_scale", 1, [(np.uint8, (1, 4, 6, 5), 0.015, 0), (np.uint8, (1, 5, 6, 5), 0.02, 0)],
         (np.uint8, 0.02, 0), True, 1),
        ("qconcat_mixed_types", 2, [(np.int8, (2, 3, 4), 0.05, -4), (np.uint8, (2, 3, 7), 0.01, 128),
                                    (np.uint8, (2, 3, 1), 0.03, 9)], (np.uint8, 0.04, 100), False, 3),
        ("qconcat_negative_axis", -1, [(np.int8, (3, 5), 0.1, 0), (np.int8, (3, 2), 0.1, 1)],
         (np.int8, 0.1, 0), False, 1),
    ]
    for name, axis, ins, (yt, ys, yz), conv_first, requantized in variants:
        if not check.selected(name):
            continue
        feeds, inits, nodes, cat_in = {}, {"ys": f32(ys), "yz": np.array(yz, yt)}, [], []
        for k, (dt, shape, sc, zp) in enumerate(ins):
            lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
            src = f"x{k}"
            if conv_first and k == 0:  # an int8 convolution's output: channels-last on dnnl
                c = shape[1]
                feeds["x0in"] = rng.randint(0, 256, shape).astype(np.uint8)
                inits.update({"cs": f32(0.02), "cz": np.array(3, np.uint8),
                              "w": rng.randint(-127, 128, (c, c, 3, 3)).astype(np.int8), "ws": f32(0.01),
                              "wz": np.array(0, np.int8), "os": f32(sc), "oz": np.array(zp, dt)})
                nodes.append(helper.make_node("QLinearConv", ["x0in", "cs", "cz", "w", "ws", "wz", "os", "oz"], [src],
                                              name="conv", pads=[1, 1, 1, 1]))
            else:
                feeds[src] = rng.randint(lo, hi, shape).astype(dt)
            inits[f"s{k}"], inits[f"z{k}"] = f32(sc), np.array(zp, dt)
            nodes.append(helper.make_node("DequantizeLinear", [src, f"s{k}", f"z{k}"], [f"f{k}"], name=f"dq{k}"))
            cat_in.append(f"f{k}")
        nodes.append(helper.make_node("Concat", cat_in, ["cf"], name="cat", axis=axis))
        nodes.append(helper.make_node("QuantizeLinear", ["cf", "ys", "yz"], ["y"], name="q"))
        path, files = write_case(name, nodes, feeds, inits, [("y", quantcase.NP2T[yt])])
        outs = {}
        for label, extra in (("cpu", []), ("dnnl", ["--target", "dnnl", "--placement", "capability", "--compile-log"]),
                             ("dnnl fusion=off", ["--target", "dnnl", "--placement", "capability",
                                                  "--target-option", "fusion=off"])):
            r, got = run_case(name, label, path, files, extra, ["y"])
            if got is None:
                continue
            outs[label] = got[0]
            if label == "dnnl":
                said = f"the 8-bit values concatenated, {requantized} of them requantized" in r.stderr
                check.expect(said, f"{name} (dnnl): one concat, {requantized} requantized, in the log",
                             r.stderr.strip()[-500:])
        # (qconcat_mixed_types's requantization lands on halfway points:
        # a QuantizeLinear that multiplied by 1 / scale where ONNX divides
        # rounded 3 of its 72 values the other way on dnnl with fusion off)
        expect_cpu_bits(name, outs, "the CPU's nodes")


# ---- an int8 convolution whose input has a zero point -----------------------------

def qconv_zp_cases():
    """A QLinearConv whose input has a zero point runs on dnnl without it
    where oneDNN would otherwise pick its slower jit_int8 kernel: the
    input padded with its zero point, the bias shifted by zero point x the
    weights' sums (backends/dnnl/quant_conv.c). The integers are the same,
    so the output must be that of the same node with fusion off (oneDNN's
    own zero point) bit for bit, and within one step of the CPU's kernel
    (which requantizes in double precision). Variants: symmetric and
    asymmetric pads, none, stride 2, dilation, an int8 input with a
    negative zero point, no bias; the log must say which were rewritten
    (not one oneDNN gives brgconv anyway, nor one with 3 input channels,
    where brgconv is no faster)."""
    rng = np.random.RandomState(15)
    variants = [
        # name, x type, x shape, out ch, kernel, pads, strides, dilations, xz, bias, rewritten
        ("qconv_zp_pad1", np.uint8, (1, 16, 14, 12), 32, 3, [1, 1, 1, 1], [1, 1], [1, 1], 117, True, True),
        ("qconv_zp_asym_stride2", np.uint8, (2, 16, 15, 15), 24, 3, [0, 1, 2, 0], [2, 2], [1, 1], 200, True, True),
        # (unpadded, oneDNN's brgconv takes the zero point itself: left as it is)
        ("qconv_zp_nopad_dilated", np.uint8, (1, 32, 12, 12), 16, 3, [0, 0, 0, 0], [1, 1], [2, 2], 3, False, False),
        ("qconv_zp_int8", np.int8, (1, 16, 10, 10), 16, 5, [2, 2, 2, 2], [1, 1], [1, 1], -37, True, True),
        ("qconv_zp_3ch", np.uint8, (1, 3, 20, 20), 16, 3, [1, 1, 1, 1], [2, 2], [1, 1], 90, True, False),
    ]
    for name, dt, shape, oc, ks, pads, strides, dil, xz, with_bias, rewritten in variants:
        if not check.selected(name):
            continue
        lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
        x = rng.randint(lo, hi, shape).astype(dt)
        ic = shape[1]
        w = rng.randint(-127, 128, (oc, ic, ks, ks)).astype(np.int8)
        inits = {"xs": f32(0.02), "xz": np.array(xz, dt), "w": w, "ws": (rng.rand(oc) * 0.01 + 0.002).astype(np.float32),
                 "wz": np.zeros(oc, np.int8), "ys": f32(0.6), "yz": np.array(128, np.uint8)}
        ins = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
        if with_bias:
            inits["b"] = rng.randint(-5000, 5000, oc).astype(np.int32)
            ins.append("b")
        nodes = [helper.make_node("QLinearConv", ins, ["y"], name="qconv", pads=pads, strides=strides, dilations=dil)]
        path, files = write_case(name, nodes, {"x": x}, inits, [("y", T.UINT8)])
        outs, logs = {}, {}
        for label, extra in CPU_DNNL_PATHS:
            r, got = run_case(name, label, path, files, extra, ["y"])
            if got is None:
                continue
            outs[label] = got[0].astype(np.int32)
            logs[label] = r.stderr
        # oneDNN's own kernel for the zero point's form (fusion=off keeps
        # it): the rewrite is for its older jit_int8 kernel only; an AMX
        # machine's kernel takes the zero point at full speed
        own = re.search(r"\(QLinearConv\): convolution ([^;]+);", logs.get("dnnl fusion=off", ""))
        fast = own is not None and ("brg" in own.group(1) or "amx" in own.group(1))
        for label in ("dnnl", "dnnl fusion=off"):
            if label in logs:
                said = "taken out" in logs[label]
                want = rewritten and label == "dnnl" and not fast
                check.expect(said == want, f"{name} ({label}): " + ("rewritten" if want else "not rewritten")
                             + f" in the log (oneDNN's own kernel: {own.group(1) if own else '?'})",
                             logs[label].strip()[-400:])
        if len(outs) == 3:
            a, b, c = outs["dnnl"], outs["dnnl fusion=off"], outs["cpu"]
            check.expect(a.shape == b.shape and np.array_equal(a, b), f"{name}: dnnl bit for bit its own zero point's",
                         f"{int(np.sum(a != b)) if a.shape == b.shape else a.shape} differ")
            step = int(np.abs(a - c).max()) if a.shape == c.shape else None
            check.expect(step is not None and step <= 1, f"{name}: within one step of the CPU's kernel", f"{step} steps")
            check.expect(len(np.unique(c)) > 20, f"{name}: the output is not degenerate", f"{len(np.unique(c))} values")


# ---- DynamicQuantizeLinear on dnnl against the CPU ----------------------------------

def dyn_quant_cases():
    """DynamicQuantizeLinear is a host step on dnnl (backends/dnnl/
    quant_dyn.c: its range in 8 lanes, then the quantization); its three
    outputs must be the CPU kernel's bit for bit on inputs that test the
    range and the rounding: lengths that are not a multiple of the lanes,
    all zeros, all negative, a NaN, a huge range, one element."""
    rng = np.random.RandomState(16)
    base = rng.randn(1001).astype(np.float32)
    variants = {
        "dynq_random_1001": base,
        "dynq_zeros": np.zeros((4, 9), np.float32),
        "dynq_negative": -np.abs(rng.randn(3, 37)).astype(np.float32) - 0.5,
        "dynq_nan": np.where(np.arange(77) == 50, np.nan, rng.randn(77)).astype(np.float32),
        "dynq_huge": (rng.randn(2, 40) * 1e30).astype(np.float32),
        "dynq_one": np.array([3.7], np.float32),
        "dynq_halfway": (np.arange(-64, 200, dtype=np.float32) * 0.5),
    }
    for name, x in variants.items():
        if not check.selected(name):
            continue
        nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "ys", "yz"], name="dql")]
        path, files = write_case(name, nodes, {"x": x}, {}, [("y", T.UINT8), ("ys", T.FLOAT), ("yz", T.UINT8)])
        outs = {}
        for label, extra in (("cpu", []), ("dnnl", ["--target", "dnnl", "--placement", "capability", "--report"])):
            r, got = run_case(name, label, path, files, extra, ["y", "ys", "yz"])
            if got is None:
                continue
            outs[label] = got
            if label == "dnnl":
                check.expect(re.search(r"subgraph_\d+_dnnl\s+dnnl\s+1\b", r.stdout) is not None,
                             f"{name} (dnnl): on dnnl", r.stdout.strip()[-300:])
        if len(outs) == 2:
            same = all(a.shape == b.shape and a.tobytes() == b.tobytes() for a, b in zip(outs["dnnl"], outs["cpu"]))
            check.expect(same, f"{name}: dnnl's y, scale and zero point bit for bit the CPU's",
                         f"scale {outs['dnnl'][1]} vs {outs['cpu'][1]}, zp {outs['dnnl'][2]} vs {outs['cpu'][2]}")

# ---- a DequantizeLinear two units read, the units on two targets -------------------

def shared_dq_cases():
    """x_q -> DQ feeds two QDQ units seam keeps as nodes: DQ(x), DQ(b) ->
    Add -> Q, and DQ(x) -> MaxPool -> Q. With the pool's Q pinned to the
    CPU (capability placement, dnnl), the pool unit goes whole to the CPU
    and the Add unit stays on dnnl: the shared DQ must be copied into each
    unit's subgraph (issue 27), so that only 8-bit values cross between
    subgraphs, never the float one. Outputs bit for bit the CPU's, also
    saved and reloaded."""
    name = "shared_dq"
    if not check.selected(name):
        return
    rng = np.random.RandomState(5)
    x = rng.randint(0, 256, (1, 4, 8, 8)).astype(np.uint8)
    b = rng.randint(0, 256, (1, 4, 8, 8)).astype(np.uint8)
    inits = {"s": f32(0.05), "z": np.array(9, np.uint8), "qs": f32(0.1), "qz": np.array(3, np.uint8)}
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"], name="dq_x"),
             helper.make_node("DequantizeLinear", ["b", "s", "z"], ["bf"], name="dq_b"),
             helper.make_node("Add", ["xf", "bf"], ["af"], name="add"),
             helper.make_node("QuantizeLinear", ["af", "qs", "qz"], ["y1"], name="q_add"),
             helper.make_node("MaxPool", ["xf"], ["pf"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("QuantizeLinear", ["pf", "s", "z"], ["y2"], name="q_pool")]
    path, files = write_case(name, nodes, {"x": x, "b": b}, inits, [("y1", T.UINT8), ("y2", T.UINT8)])
    pin = ["--target", "dnnl", "--placement", "capability", "--pin", "q_pool=cpu"]
    r = run("partition", path, *pin, "--json")
    if not check.expect(r.returncode == 0, f"{name}: partitions", quantcase.last(r.stderr)):
        return
    plan = json.loads(r.stdout)
    where = {}
    for sg in plan["subgraphs"]:
        for i in sg["nodes"]:
            where[i] = (sg["id"], sg["target"])
    node_at = {n["name"]: where.get(n["index"]) for n in plan["nodes"]}
    dqs = [n["name"] for n in plan["nodes"] if n["op"] == "DequantizeLinear" and n["name"].startswith("dq_x")]
    home = {u: node_at.get(u) for u in ("add", "pool")}
    check.expect(home["add"] and home["pool"] and home["add"][1] == "dnnl" and home["pool"][1] == "cpu",
                 f"{name}: the Add unit on dnnl, the pinned pool unit on the CPU", str(home))
    check.expect(len(dqs) == 2 and {node_at[d] for d in dqs} == {home["add"], home["pool"]},
                 f"{name}: the shared DequantizeLinear copied into both units' subgraphs",
                 f"DQs of x {[(d, node_at[d]) for d in dqs]}, units at {home}")
    whole = all(node_at.get(q) == home[u] for q, u in (("q_add", "add"), ("q_pool", "pool"), ("dq_b", "add")))
    check.expect(whole, f"{name}: every member with its unit", str(node_at))
    crossing = sorted({v for sg in plan["subgraphs"] for v in sg.get("inputs", [])} - {"x", "b"})
    check.expect(not crossing, f"{name}: only the 8-bit inputs enter subgraphs (no float crosses)", str(crossing))
    # the plan names each member's unit (its op's index)
    idx = {n["name"]: n["index"] for n in plan["nodes"]}
    unit = {n["name"]: n.get("unit") for n in plan["nodes"]}
    want = {"dq_b": "add", "q_add": "add", "add": "add", "pool": "pool", "q_pool": "pool"}
    want.update({d: ("add" if node_at[d] == home["add"] else "pool") for d in dqs})
    check.expect(all(unit.get(k) == idx[v] for k, v in want.items()), f"{name}: the plan names each member's unit",
                 str(unit))
    # analyze counts units as their ops, and says why a unit runs on the
    # CPU: a target taking Add, DQ and Q but not MaxPool
    rules = os.path.join(work, f"{name}.npu.json")
    with open(rules, "w") as f:
        json.dump({"name": "addnpu", "default": False,
                   "ops": {"Add": True, "DequantizeLinear": True, "QuantizeLinear": True}}, f)
    r = run("analyze", path, "--target", rules, "--placement", "capability")
    out = r.stdout
    check.expect(r.returncode == 0 and "  Add, as QDQ units: 1" in out and "  MaxPool, as QDQ units: 1" in out
                 and "DequantizeLinear:" not in out and "QuantizeLinear:" not in out
                 and re.search(r"QDQ units on the CPU:\n  the unit of node \d+ 'pool' \(MaxPool\): ", out),
                 f"{name}: analyze counts the units as their ops and says why the pool's runs on the CPU", out[-900:])
    saved = os.path.join(work, f"{name}.saved.onnx")
    r = run("partition", path, *pin, "-o", saved)
    check.expect(r.returncode == 0, f"{name}: saves", quantcase.last(r.stderr))
    outs = {}
    for label, p_, extra in (("cpu", path, []), ("dnnl", path, pin), ("dnnl saved", saved, [])):
        r, got = run_case(name, label, p_, files, extra, ["y1", "y2"])
        if got is not None:
            outs[label] = got
    for label in ("dnnl", "dnnl saved"):
        if "cpu" in outs and label in outs:
            same = all(a.dtype == c.dtype and np.array_equal(a, c) for a, c in zip(outs[label], outs["cpu"]))
            check.expect(same, f"{name} ({label}): both outputs bit for bit the CPU's", "differ")


# ---- 7-bit weights: dnnl's int8 products on a CPU without VNNI -------------------

def seven_bit_cases():
    """On a CPU without VNNI (oneDNN capped at AVX2 here, as such a CPU is,
    on any machine) oneDNN's int8 products add pairs of u8 x s8 products in
    16 bits, which saturate past 32767; with weights within [-64, 64] a pair
    is at most 255 * 128 = 32640, so dnnl takes those QLinearConvs
    (backends/dnnl/quant.c) and must give the CPU's exact outputs (within
    one step: oneDNN requantizes in float). Cases: every x 255 against
    weights all 64 or all -64 per channel (the bound itself), random 7-bit
    weights, and a weight of 65 (two such at x = 255 pass 32767), which
    dnnl must refuse, saying why."""
    rng = np.random.RandomState(7)
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2")
    C, M = 16, 8
    for name, kind in (("w7_bound", "bound"), ("w7_random", "random"), ("w8_65", "65")):
        if not check.selected(name):
            continue
        if kind == "bound":
            x = np.full((1, C, 9, 9), 255, np.uint8)
            w = np.where((np.arange(M) % 2 == 0)[:, None, None, None], 64, -64).astype(np.int8) * np.ones((M, C, 3, 3), np.int8)
        else:
            x = rng.randint(0, 256, (1, C, 9, 9)).astype(np.uint8)
            w = rng.randint(-64, 65, (M, C, 3, 3)).astype(np.int8)
            if kind == "65":
                w[3, :, :, :] = 65
        acc = np.abs(w.astype(np.int64)).sum(axis=(1, 2, 3)).max() * 255
        inits = {"xs": f32(0.02), "xz": np.array(3, np.uint8), "w": w, "ws": f32(0.01), "wz": np.array(0, np.int8),
                 "ys": f32(float(acc) * 0.02 * 0.01 / 100), "yz": np.array(128, np.uint8)}
        nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="qconv",
                                  pads=[1, 1, 1, 1])]
        path, files = write_case(name, nodes, {"x": x}, inits, [("y", T.UINT8)])
        r = run("partition", path, "--target", "dnnl", "--placement", "capability", "--json", env=env)
        if not check.expect(r.returncode == 0, f"{name}: partitions (oneDNN capped at AVX2)", quantcase.last(r.stderr)):
            continue
        plan = json.loads(r.stdout)
        on = next(n for n in plan["nodes"] if n["name"] == "qconv")["target"]
        if kind == "65":
            said = any("past 7 bits" in t and "--reduce-range" in t for t in plan["notes"])
            check.expect(on == "cpu" and said, f"{name}: a weight of 65 keeps the conv off dnnl, saying why",
                         f"on {on}, notes {plan['notes']}")
            continue
        check.expect(on == "dnnl", f"{name}: dnnl takes the 7-bit conv without VNNI", f"on {on}, notes {plan['notes']}")
        outs = {}
        for label, extra in (("cpu", []), ("dnnl", ["--target", "dnnl", "--placement", "capability", "--compile-log"])):
            od = os.path.join(work, f"{name}.{label}")
            a = []
            for k, f in files.items():
                a += ["--input", f"{k}={f}"]
            rr = run("run", path, *a, "--output-dir", od, *extra, env=env)
            if check.expect(rr.returncode == 0, f"{name} ({label}): runs", quantcase.last(rr.stderr)):
                outs[label] = np.load(os.path.join(od, "y.npy")).astype(np.int32)
                if label == "dnnl":
                    kern = [ln for ln in rr.stderr.splitlines() if "convolution" in ln]
                    check.expect(kern and not any("ref:" in ln for ln in kern), f"{name}: a jit int8 kernel, not ref",
                                 kern)
        if len(outs) == 2:
            d = int(np.abs(outs["dnnl"] - outs["cpu"]).max())
            spread = int(outs["cpu"].max()) - int(outs["cpu"].min())
            check.expect(d <= 1 and spread > 2, f"{name}: dnnl within one step of the CPU's exact int8 "
                         f"(largest {d}; outputs span {spread} steps)", f"largest difference {d} steps")


def main():
    if seamtest.cpu_has_vnni():
        epilogue_cases()
        qconv_zp_cases()
    else:  # (dnnl refuses MatMulInteger and QLinearConv there, and oneDNN's results would saturate)
        check.ok("epi_*, qconv_zp_*: dnnl's int8 products, not checked: this CPU has no VNNI "
                 "(check_quant.py's no_vnni_case instead)")
    qpool_cases()
    qmul_cases()
    qconcat_cases()
    dyn_quant_cases()
    shared_dq_cases()
    seven_bit_cases()
    check.finish()


main()
