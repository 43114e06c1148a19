"""The CPU kernels outside convolution and GEMM that the benchmark models
spend time in, on the sizes and forms that take their fast paths.

usage: /usr/bin/python3 check_cpu_misc.py SEAM WORKDIR [-k PATTERN]

1. LSTM and GRU (rnn.c): forward, reverse and bidirectional; batch 1 and
   3; hidden sizes that fill the 16-unit blocks of the parallel step and
   ones that leave a partial block; initial_h / initial_c; sequence_lens
   (a full, a short and an empty sequence); layout 1; R as a graph input
   (packed at run time, not in check); float64; and the forms the parallel
   step leaves to the general loop (clip, peepholes, input_forget, other
   activations with alpha/beta, GRU without linear_before_reset); R of
   the wrong shape fails naming the node. The
   reference is the ONNX spec's equations in float64 (numpy, below),
   itself checked against torch.nn.LSTM/GRU on the forms torch has. Every
   output (Y, Y_h, Y_c) is compared.
2. Pad (tensor.c): constant, edge, reflect and wrap; pads on every axis,
   negative pads (crops), the axes input, int64 data, against numpy.pad.
3. BatchNormalization (norm.c) in inference, its scale and shift made in
   check when the parameters are initializers, else per run; followed by
   Relu or Clip (fused into it as a post-op, runtime/fuse.c), by Relu
   while its output is read elsewhere too (not fused), float64, rank 2,
   against torch.nn.functional.batch_norm; that the activation was fused
   (it does not run: --profile) or not, as expected.
4. Concat (tensor.c), copied in 64 KB pieces over the pool: along the
   channels of batch-1 NCHW tensors (densenet's), batch 2, the first and
   the last axis, an empty input, an input given twice, int64, against
   numpy.concatenate.
   Rows of at most 256 bytes (a detector's boxes) take a row-by-row copy:
   4- and 8-byte parts, mixed sizes with an empty part.
   MaxPool of small planes (pool.c's 16-column vectors, stride 1):
   googlenet's 832 x 7 x 7 with ceil_mode, 14 x 14, a 1 x 1 plane, 16
   columns, 64 rows with a 5 x 5 window, 65 rows (the general path),
   asymmetric pads, with NaN, inf and a window of NaN alone, bit for bit
   numpy's fmax over the taps; ReduceMax/Min/Sum/Mean over short last axes
   (rows of 1 to 65, NaN rows) and whole tensors of 65 K to 270 K elements
   (the pool's chunks, a tail, one NaN in 270 K) against numpy; GlobalAveragePool of 3-D and
   1-D inputs against numpy's mean; Tile (copies doubling per axis) against
   numpy.tile, a zero repeat and int64 and uint8 among them.
5. Values whose size only the run decides (runtime/plan_memory.c's
   dynamic slab): the first run allocates them, the later runs of the
   session place them in a slab planned from their sizes, and a value
   that outgrows its place is allocated again and planned anew. A Loop
   whose body slices, squares, adds and tiles a length that grows and
   shrinks from one iteration to the next (6, 20, 11, 2, 16, 7, 21: the
   body's executor runs 7 times a session run, several such values alive
   at once), NonZero -> Gather -> Mul chains in the main graph, and a
   dynamic value that is a graph output; each run 3 times in one session
   (--repeat), against numpy.
Every model also runs with --threads 1 and 2: the outputs must be bitwise
equal. A case is one model, named as printed.
"""
import json
import os
import sys

import numpy as np
import torch
from onnx import TensorProto, helper, mapping, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import vi  # noqa: E402

args, seam, work, check = seamtest.checker_setup(__doc__, "cpu_misc")
rng = np.random.RandomState(11)

def onnx_dtype(dt):
    return mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dt)]


NP_DTYPE = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64, TensorProto.INT64: np.int64}


def run_model(name, nodes, feeds, outputs, inits=(), opset=14, repeat=None):
    """Runs a model whose inputs are feeds ({name: array}) and whose outputs
    are outputs ([(name, dtype)]) on 1 and 2 threads (repeat: that many
    timed runs in one session, the outputs the last one's); (list of
    arrays, None) or (None, why)."""
    ins = [vi(n, a.shape, onnx_dtype(a.dtype)) for n, a in feeds.items()]
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), nodes, ins,
                               [vi(n, None, dt) for n, dt in outputs], inits, name=name, opset=opset)
    args_in = []
    for n, a in feeds.items():
        f = os.path.join(work, f"{name}.{n}.npy")
        np.save(f, a)
        args_in += ["--input", f"{n}={f}"]
    got = []
    for threads in (1, 2):
        d = os.path.join(work, f"{name}.t{threads}")
        r = seam("run", path, *args_in, "--threads", threads, "--output-dir", d, "--quiet",
                 *(["--repeat", repeat] if repeat else []))
        if r.returncode:
            return None, f"seam run --threads {threads} failed: {r.stderr.strip()}"
        got.append([np.load(seamtest.output_file(d, n)) for n, _ in outputs])
    if any(a.tobytes() != b.tobytes() for a, b in zip(*got)):
        return None, "--threads 1 and --threads 2 differ"
    return got[0], None


# ---- LSTM / GRU: the ONNX spec's equations in float64 ----

ACTS = {
    "Sigmoid": lambda x, a, b: 1 / (1 + np.exp(-x)),
    "Tanh": lambda x, a, b: np.tanh(x),
    "Relu": lambda x, a, b: np.maximum(x, 0),
    "HardSigmoid": lambda x, a, b: np.clip(a * x + b, 0, 1),
    "LeakyRelu": lambda x, a, b: np.where(x >= 0, x, a * x),
    "ScaledTanh": lambda x, a, b: a * np.tanh(b * x),
    "Affine": lambda x, a, b: a * x + b,
    "Softsign": lambda x, a, b: x / (1 + np.abs(x)),
}
DEFAULT_AB = {"HardSigmoid": (0.2, 0.5), "LeakyRelu": (0.01, 0), "ScaledTanh": (1, 1), "Affine": (1, 0)}


def rnn_reference(op, x, W, R, B, lens, h0, c0, P, direction, acts, clip, input_forget, lbr):
    """Y [S, D, B, H], Y_h [D, B, H], Y_c (LSTM) for layout 0, in float64.
    acts: per direction, a list of (name, alpha, beta). Rows past their
    sequence's length keep their state and give Y = 0 (onnxruntime's
    reading of sequence_lens; reverse starts at each row's last step)."""
    S, Bn, _ = x.shape
    D, GH, H = R.shape
    G = GH // H
    x = x.astype(np.float64)
    Y = np.zeros((S, D, Bn, H))
    Yh, Yc = np.zeros((D, Bn, H)), np.zeros((D, Bn, H))
    lens = np.full(Bn, S) if lens is None else lens
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    for d in range(D):
        f, g, h_ = [(lambda v, n=n, a=a, b=b: ACTS[n](v, a, b)) for n, a, b in acts[d]] + [None] * (3 - len(acts[d]))
        Wd, Rd = W[d].astype(np.float64), R[d].astype(np.float64)
        Wb = B[d][:GH].astype(np.float64) if B is not None else np.zeros(GH)
        Rb = B[d][GH:].astype(np.float64) if B is not None else np.zeros(GH)
        Pd = P[d].astype(np.float64) if P is not None else np.zeros(3 * H)
        h = h0[d].astype(np.float64).copy() if h0 is not None else np.zeros((Bn, H))
        c = c0[d].astype(np.float64).copy() if c0 is not None else np.zeros((Bn, H))
        backward = direction == "reverse" or (direction == "bidirectional" and d == 1)
        for b in range(Bn):
            steps = range(lens[b] - 1, -1, -1) if backward else range(lens[b])
            for t in steps:
                xw = Wd @ x[t, b] + Wb
                hr = Rd @ h[b]
                if op == "LSTM":
                    gi, go, gf, gc = [xw[k * H:(k + 1) * H] + hr[k * H:(k + 1) * H] + Rb[k * H:(k + 1) * H]
                                      for k in range(4)]
                    i = f(cl(gi + Pd[:H] * c[b]))
                    ft = 1 - i if input_forget else f(cl(gf + Pd[2 * H:] * c[b]))
                    cn = ft * c[b] + i * g(cl(gc))
                    o = f(cl(go + Pd[H:2 * H] * cn))
                    c[b], h[b] = cn, o * h_(cn)
                else:
                    z = f(cl(xw[:H] + hr[:H] + Rb[:H]))
                    r = f(cl(xw[H:2 * H] + hr[H:2 * H] + Rb[H:2 * H]))
                    if lbr:
                        ht = g(cl(xw[2 * H:] + r * (hr[2 * H:] + Rb[2 * H:])))
                    else:
                        ht = g(cl(xw[2 * H:] + Rd[2 * H:] @ (r * h[b]) + Rb[2 * H:]))
                    h[b] = (1 - z) * ht + z * h[b]
                Y[t, d, b] = h[b]
        Yh[d], Yc[d] = h, c
    return Y, Yh, Yc


def torch_net(op, inp, hidden, direction, seed):
    """A torch.nn.LSTM/GRU and its weights in ONNX's gate order."""
    torch.manual_seed(seed)
    ctor, n_gates, order = {"LSTM": (torch.nn.LSTM, 4, (0, 3, 1, 2)), "GRU": (torch.nn.GRU, 3, (1, 0, 2))}[op]
    net = ctor(inp, hidden, bidirectional=direction == "bidirectional")

    def onnx_order(t):
        gates = t.detach().numpy().reshape(n_gates, hidden, -1)
        return np.concatenate([gates[k] for k in order]).reshape(n_gates * hidden, -1)
    sfx = ["", "_reverse"] if direction == "bidirectional" else [""]
    W = np.stack([onnx_order(getattr(net, "weight_ih_l0" + s)) for s in sfx]).astype(np.float32)
    R = np.stack([onnx_order(getattr(net, "weight_hh_l0" + s)) for s in sfx]).astype(np.float32)
    B = np.stack([np.concatenate([onnx_order(getattr(net, "bias_ih_l0" + s)).ravel(),
                                  onnx_order(getattr(net, "bias_hh_l0" + s)).ravel()]) for s in sfx]).astype(np.float32)
    return net, W, R, B


def rnn_case(name, op, S, Bn, In, H, direction="forward", lens=None, init=False, layout=0, r_input=False,
             dtype=np.float32, clip=0.0, peep=False, input_forget=False, acts=None, lbr=1, vs_torch=False):
    if not check.selected(name):
        return
    D = 2 if direction == "bidirectional" else 1
    G = 4 if op == "LSTM" else 3
    if vs_torch or not peep:
        net, W, R, B = torch_net(op, In, H, direction, len(name))
    else:
        W, R, B = [(rng.randn(*s) * 0.3).astype(np.float32) for s in ((D, G * H, In), (D, G * H, H), (D, 2 * G * H))]
        net = None
    x = (rng.randn(S, Bn, In) * np.logspace(-2, 0.7, In)).astype(np.float32)
    h0 = (rng.randn(D, Bn, H) * 0.5).astype(np.float32) if init else None
    c0 = (rng.randn(D, Bn, H) * 0.5).astype(np.float32) if init and op == "LSTM" else None
    P = (rng.randn(D, 3 * H) * 0.5).astype(np.float32) if peep else None
    n_act = 3 if op == "LSTM" else 2
    names = acts or (["Sigmoid", "Tanh", "Tanh"] if op == "LSTM" else ["Sigmoid", "Tanh"])
    ref_acts, alphas, betas = [], [], []
    for d in range(D):
        row = []
        for q in range(n_act):
            n = names[q % len(names)]
            a, b = DEFAULT_AB.get(n, (0, 0))
            if n in DEFAULT_AB and acts:  # explicit alpha/beta, consumed in order by the functions that take them
                a, b = 0.3 + 0.1 * q, 0.4 - 0.05 * d
                alphas.append(a)
                if n in ("HardSigmoid", "ScaledTanh", "Affine"):
                    betas.append(b)
            row.append((n, a, b))
        ref_acts.append(row)
    Y, Yh, Yc = rnn_reference(op, x, W, R, B, lens, h0, c0, P, direction, ref_acts, clip, input_forget, lbr)
    if vs_torch:  # the reference itself against torch (no sequence_lens there)
        with torch.no_grad():
            hx = torch.from_numpy(h0) if h0 is not None else None
            if op == "LSTM" and hx is not None:
                hx = (hx, torch.from_numpy(c0))
            ty, th = net(torch.from_numpy(x), hx)
        ty = ty.numpy().reshape(S, Bn, D, H).transpose(0, 2, 1, 3)
        th = (th[0] if op == "LSTM" else th).numpy()
        e = seamtest.worst([seamtest.rel_err(Y.astype(np.float32), ty), seamtest.rel_err(Yh.astype(np.float32), th)])
        check.expect(e <= 1e-5, f"{name}: the numpy reference against torch.nn.{op}: error {e:.1e}")
    attrs = {"hidden_size": H, "direction": direction}
    if op == "GRU":
        attrs["linear_before_reset"] = lbr
    if clip:
        attrs["clip"] = clip
    if input_forget:
        attrs["input_forget"] = 1
    if acts:
        attrs["activations"] = [a for r in ref_acts for a, _, _ in r]
        if alphas:
            attrs["activation_alpha"] = alphas
        if betas:
            attrs["activation_beta"] = betas
    if layout:
        attrs["layout"] = 1
    dt = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE}[dtype]
    xin = x.transpose(1, 0, 2).copy() if layout else x
    feeds = {"x": xin.astype(dtype)}
    inits = [numpy_helper.from_array(W.astype(dtype), "W"), numpy_helper.from_array(B.astype(dtype), "B")]
    if r_input:
        feeds["R"] = R.astype(dtype)
    else:
        inits.append(numpy_helper.from_array(R.astype(dtype), "R"))
    extra = ["", "", ""]
    if lens is not None:
        inits.append(numpy_helper.from_array(np.asarray(lens, np.int32), "lens"))
        extra[0] = "lens"
    for k, (nm, a) in enumerate((("h0", h0), ("c0", c0))):
        if a is not None:
            inits.append(numpy_helper.from_array((a.transpose(1, 0, 2).copy() if layout else a).astype(dtype), nm))
            extra[k + 1] = nm
    if P is not None:
        inits.append(numpy_helper.from_array(P.astype(dtype), "P"))
    ins = ["x", "W", "R", "B", extra[0], extra[1]] + ([extra[2], "P" if P is not None else ""] if op == "LSTM" else [])
    while ins[-1] == "":
        ins.pop()
    outs = ["y", "yh", "yc"][:2 if op == "GRU" else 3]
    node = helper.make_node(op, ins, outs, **attrs)
    got, err = run_model(name, [node], feeds, [(o, dt) for o in outs], inits)
    if err:
        check.fail(f"{name}: {err}")
        return
    want = [Y, Yh, Yc][:len(outs)]
    if layout:  # Y [B, S, D, H], Y_h [B, D, H]
        want = [Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)][:len(outs)]
    for o, g, w in zip(outs, got, want):  # (float64 too is computed in float32)
        e = seamtest.rel_err(g, w)
        check.expect(g.shape == w.shape and g.dtype == dtype and e <= 2e-6,
                     f"{name}: {o} error {e:.1e} against the spec's equations", f"shape {g.shape} {g.dtype}, want {w.shape}")


for op in ("LSTM", "GRU"):
    lo = op.lower()
    # the reference against torch first, then the fast path's forms
    rnn_case(f"{lo}_vs_torch", op, 6, 2, 12, 20, init=True, vs_torch=True)
    rnn_case(f"{lo}_vs_torch_bidirectional", op, 5, 1, 8, 16, "bidirectional", vs_torch=True)
    for direction in ("forward", "reverse", "bidirectional"):
        for Bn in (1, 3):
            for H in (32, 21):  # whole 16-unit blocks, and a partial one
                rnn_case(f"{lo}_{direction}_b{Bn}_h{H}", op, 7, Bn, 10, H, direction)
        rnn_case(f"{lo}_{direction}_lens_init", op, 6, 3, 9, 24, direction, lens=[6, 2, 0], init=True)
    rnn_case(f"{lo}_layout1_lens_init", op, 5, 3, 7, 18, "bidirectional", lens=[3, 5, 1], init=True, layout=1)
    rnn_case(f"{lo}_r_input", op, 6, 2, 8, 20, "bidirectional", init=True, r_input=True)
    rnn_case(f"{lo}_float64", op, 5, 2, 6, 17, "bidirectional", init=True, dtype=np.float64)
    rnn_case(f"{lo}_clip", op, 6, 2, 8, 20, "forward", init=True, clip=0.7)
    rnn_case(f"{lo}_activations", op, 6, 2, 8, 20, "bidirectional", lens=[6, 3], init=True,
             acts=["HardSigmoid", "ScaledTanh", "Affine"] if op == "LSTM" else ["HardSigmoid", "LeakyRelu"])
rnn_case("lstm_peepholes", "LSTM", 6, 2, 8, 19, "bidirectional", lens=[4, 6], init=True, peep=True)
rnn_case("lstm_input_forget", "LSTM", 6, 2, 8, 19, "reverse", init=True, input_forget=True)
rnn_case("gru_no_linear_before_reset", "GRU", 6, 3, 8, 19, "bidirectional", lens=[6, 1, 4], init=True, lbr=0)



def rnn_bad_r(name, op, r_shape):
    """R with the wrong shape (an initializer, which check() packs): seam
    run fails with exit 1 and a message naming the node, no crash."""
    if not check.selected(name):
        return
    H, G = 8, 4 if op == "LSTM" else 3
    inits = [numpy_helper.from_array(np.ones((1, G * H, 5), np.float32), "W"),
             numpy_helper.from_array(np.ones(r_shape, np.float32), "R")]
    node = helper.make_node(op, ["x", "W", "R"], ["y"], hidden_size=H, name="the_rnn")
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), [node], [vi("x", (3, 2, 5))],
                               [vi("y", None)], inits, name=name, opset=14)
    f = os.path.join(work, name + ".x.npy")
    np.save(f, np.ones((3, 2, 5), np.float32))
    r = seam("run", path, "--input", f"x={f}", "--quiet")
    check.expect(r.returncode == 1 and "the_rnn" in r.stderr, f"{name}: fails naming the node",
                 f"exit {r.returncode}: {r.stderr.strip()[-300:]}")


rnn_bad_r("lstm_bad_r_gates", "LSTM", (1, 3 * 8, 8))
rnn_bad_r("gru_bad_r_hidden", "GRU", (1, 3 * 8, 9))
rnn_bad_r("lstm_bad_r_directions", "LSTM", (2, 4 * 8, 8))

# ---- Pad: numpy.pad ----

NP_MODE = {"constant": "constant", "edge": "edge", "reflect": "reflect", "wrap": "wrap"}


def pad_case(name, shape, pads, mode, value=0.0, axes=None, dtype=np.float32):
    """pads: ONNX order (all begins, then all ends) over axes (or every axis)."""
    if not check.selected(name):
        return
    x = (rng.randn(*shape) * 10).astype(dtype)
    r = len(shape)
    ax = list(range(r)) if axes is None else [a % r for a in axes]
    lo, hi = [0] * r, [0] * r
    for i, a in enumerate(ax):
        lo[a], hi[a] = pads[i], pads[i + len(ax)]
    # numpy.pad has no negative pads: crop first, then pad
    crop = tuple(slice(max(0, -lo[d]), shape[d] - max(0, -hi[d])) for d in range(r))
    kw = {"constant_values": dtype(value)} if mode == "constant" else {}
    want = np.pad(x[crop], [(max(0, lo[d]), max(0, hi[d])) for d in range(r)], mode=NP_MODE[mode], **kw)
    inits = [numpy_helper.from_array(np.asarray(pads, np.int64), "pads"),
             numpy_helper.from_array(np.asarray([value], dtype), "value")]
    ins = ["x", "pads", "value"]
    if axes is not None:
        inits.append(numpy_helper.from_array(np.asarray(axes, np.int64), "axes"))
        ins.append("axes")
    node = helper.make_node("Pad", ins, ["y"], mode=mode)
    dt = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64}[dtype]
    got, err = run_model(name, [node], {"x": x}, [("y", dt)], inits, opset=18)
    if err:
        check.fail(f"{name}: {err}")
        return
    check.expect(got[0].shape == want.shape and np.array_equal(got[0], want), f"{name}: equal to numpy.pad",
                 f"shape {got[0].shape}, want {want.shape}")


for mode in ("constant", "edge", "reflect", "wrap"):
    pad_case(f"pad_{mode}_hw", (1, 32, 35, 35), [0, 0, 1, 1, 0, 0, 1, 1], mode)  # inception's avgpool pad
    pad_case(f"pad_{mode}_every_axis", (2, 3, 5, 6), [1, 0, 2, 3, 0, 2, 1, 4], mode, value=1.5)
    if mode != "wrap":  # (wrap with a crop on the same axis wraps over the uncropped axis, numpy over the cropped)
        pad_case(f"pad_{mode}_negative", (2, 4, 7, 9), [0, -1, 2, -3, 0, 1, -2, 3], mode, value=-2.0)
    pad_case(f"pad_{mode}_crop_other_axis", (2, 4, 7, 9), [0, -1, 2, 3, 0, -2, 1, 4], mode, value=-2.0)
pad_case("pad_constant_axes", (2, 3, 8, 1100), [3, 5, 2, 7], "constant", value=4.0, axes=[-1, 1])
pad_case("pad_reflect_wide", (1, 2, 3, 3000), [0, 0, 2, 5, 0, 0, 2, 7], "reflect")
pad_case("pad_int64", (3, 4, 5), [1, 2, 0, 0, 1, 3], "constant", value=7, dtype=np.int64)
pad_case("pad_crop_all", (2, 3, 4), [0, 0, -2, 0, 0, -2], "constant")
pad_case("pad_rank1", (10,), [3, 2], "edge")



# ---- BatchNormalization, alone and with a fused activation: torch ----

def bn_case(name, shape, after=None, params_in=False, also_out=False, dtype=np.float32):
    if not check.selected(name):
        return
    C = shape[1]
    x = (rng.randn(*shape) * 3).astype(dtype)
    prm = {"scale": rng.randn(C), "B": rng.randn(C), "mean": rng.randn(C), "var": rng.rand(C) + 0.1}
    prm = {k: v.astype(dtype) for k, v in prm.items()}
    eps = 1e-3
    with torch.no_grad():
        want = torch.nn.functional.batch_norm(torch.from_numpy(x), torch.from_numpy(prm["mean"]),
                                              torch.from_numpy(prm["var"]), torch.from_numpy(prm["scale"]),
                                              torch.from_numpy(prm["B"]), eps=eps)
        bn_out = want.numpy()
        if after == "Relu":
            want = torch.relu(want)
        elif after == "Clip":
            want = torch.clamp(want, 0, 6)
    want = want.numpy()
    dt = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE}[dtype]
    feeds, inits = {"x": x}, []
    for k, v in prm.items():
        if params_in:
            feeds[k] = v
        else:
            inits.append(numpy_helper.from_array(v, k))
    # (the activation's output is not the graph's: graph outputs are never fused away)
    nodes = [helper.make_node("BatchNormalization", ["x", "scale", "B", "mean", "var"], ["bn" if after else "y"],
                              epsilon=eps)]
    if after == "Relu":
        nodes.append(helper.make_node("Relu", ["bn"], ["act"]))
    elif after == "Clip":
        inits += [numpy_helper.from_array(np.asarray(0, dtype), "lo"), numpy_helper.from_array(np.asarray(6, dtype), "hi")]
        nodes.append(helper.make_node("Clip", ["bn", "lo", "hi"], ["act"]))
    if after:
        nodes.append(helper.make_node("Identity", ["act"], ["y"]))
    outs = [("y", dt)] + ([("bn", dt)] if also_out else [])
    got, err = run_model(name, nodes, feeds, outs, inits)
    if err:
        check.fail(f"{name}: {err}")
        return
    e = seamtest.rel_err(got[0], want)
    check.expect(got[0].shape == want.shape and e <= 1e-6, f"{name}: error {e:.1e} against torch")
    if also_out:
        e = seamtest.rel_err(got[1], bn_out)
        check.expect(e <= 1e-6, f"{name}: the BatchNormalization output read elsewhere, error {e:.1e} against torch")
    if after:  # fused when float32 and bn has no other reader: the activation node does not run
        trace = os.path.join(work, name + ".trace.json")
        args_in = []
        for n, a in feeds.items():
            args_in += ["--input", f"{n}={os.path.join(work, f'{name}.{n}.npy')}"]
        r = seam("run", os.path.join(work, name + ".onnx"), *args_in, "--profile", trace, "--quiet")
        ran = [e["dur"] > 0 for e in json.load(open(trace))["traceEvents"] if e.get("cat") == "node" and
               e["args"]["op"] == after] if r.returncode == 0 else []
        fused = dtype == np.float32 and not also_out
        check.expect(ran == [not fused], f"{name}: {after} {'fused into' if fused else 'runs after'} the "
                     "BatchNormalization", f"seam run: {r.stderr.strip()}; {after} ran: {ran}")


bn_case("bn_const", (1, 64, 28, 28))
bn_case("bn_const_relu", (1, 64, 28, 28), "Relu")
bn_case("bn_const_clip", (2, 32, 14, 15), "Clip")
bn_case("bn_params_in_relu", (1, 16, 9, 9), "Relu", params_in=True)
bn_case("bn_relu_output_read_elsewhere", (1, 16, 9, 9), "Relu", also_out=True)
bn_case("bn_float64_relu", (1, 8, 5, 5), "Relu", dtype=np.float64)
bn_case("bn_rank2_relu", (7, 40), "Relu")


# ---- Concat: numpy.concatenate ----

def concat_case(name, shapes, axis, dtype=np.float32, repeat=None):
    """repeat: (i, j) gives input j the same value as input i."""
    if not check.selected(name):
        return
    xs = [(rng.randn(*sh) * 100).astype(dtype) for sh in shapes]
    names = [f"x{i}" for i in range(len(xs))]
    if repeat:
        names[repeat[1]] = names[repeat[0]]
        xs[repeat[1]] = xs[repeat[0]]
    want = np.concatenate(xs, axis=axis)
    feeds = {n: a for n, a in zip(names, xs)}
    dt = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64}[dtype]
    got, err = run_model(name, [helper.make_node("Concat", names, ["y"], axis=axis)], feeds, [("y", dt)])
    if err:
        check.fail(f"{name}: {err}")
        return
    check.expect(got[0].shape == want.shape and np.array_equal(got[0], want), f"{name}: equal to numpy.concatenate",
                 f"shape {got[0].shape}, want {want.shape}")


concat_case("concat_channels_densenet", [(1, 64, 56, 56), (1, 32, 56, 56), (1, 32, 56, 56), (1, 3, 56, 56)], 1)
concat_case("concat_channels_batch2", [(2, 40, 30, 31), (2, 7, 30, 31), (2, 1, 30, 31)], 1)
concat_case("concat_axis0", [(3, 50, 70), (1, 50, 70), (5, 50, 70)], 0)
concat_case("concat_last_axis", [(300, 64, 5), (300, 64, 11), (300, 64, 1)], -1)
concat_case("concat_empty_input", [(1, 8, 90, 90), (1, 0, 90, 90), (1, 9, 90, 90)], 1)
concat_case("concat_input_twice", [(1, 30, 40, 40), (1, 20, 40, 40), (1, 30, 40, 40)], 1, repeat=(0, 2))
concat_case("concat_int64", [(2, 3000), (2, 7000)], 1, dtype=np.int64)
concat_case("concat_small", [(1, 2), (1, 3)], 1)
# rows of at most 256 bytes copied row by row: a detector's boxes (4-byte
# parts), int64 parts of one element (8 bytes), mixed sizes with an empty part
concat_case("concat_rows_boxes", [(3234, 2, 1), (3234, 2, 1)], 2)
concat_case("concat_rows_four", [(3234, 1, 1)] * 4, 2)
concat_case("concat_rows_int64", [(1600, 1)] * 4, 1, dtype=np.int64)
concat_case("concat_rows_mixed", [(999, 3), (999, 0), (999, 1), (999, 12)], 1)


# ---- MaxPool of small planes, GlobalAveragePool of any rank, short-row reductions (pool.c, reduce.c) ----

def max_pool_ref(x, k, pads):
    """Max pooling, stride 1, NaN passed over (-inf where a window has only NaN): numpy.fmax over the taps."""
    t, l, b, r = pads
    N, C, H, W = x.shape
    xp = np.full((N, C, H + t + b, W + l + r), -np.inf, np.float32)
    xp[:, :, t:t + H, l:l + W] = x
    OH, OW = H + t + b - k[0] + 1, W + l + r - k[1] + 1
    y = np.full((N, C, OH, OW), -np.inf, np.float32)
    for a in range(k[0]):
        for c in range(k[1]):
            y = np.fmax(y, xp[:, :, a:a + OH, c:c + OW])
    return y


def pool_case(name, shape, k, pads, ceil=0, nan=False):
    if not check.selected(name):
        return
    x = rng.randn(*shape).astype(np.float32)
    if nan:  # NaN, inf and -inf among the values, and one window of NaN alone
        flat = x.reshape(-1)
        flat[rng.rand(flat.size) < 0.05] = np.nan
        flat[rng.rand(flat.size) < 0.02] = np.inf
        flat[rng.rand(flat.size) < 0.02] = -np.inf
        x[0, 0, :k[0], :k[1]] = np.nan
    want = max_pool_ref(x, k, pads)
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=list(k), pads=[pads[0], pads[1], pads[2], pads[3]],
                            ceil_mode=ceil)
    got, err = run_model(name, [node], {"x": x}, [("y", TensorProto.FLOAT)])
    if err:
        return check.fail(f"{name}: {err}")
    check.expect(got[0].shape == want.shape and got[0].tobytes() == want.tobytes(),
                 f"{name}: bit for bit numpy's max over the taps", f"shape {got[0].shape}, want {want.shape}")


pool_case("maxpool_7x7_ceil", (1, 832, 7, 7), (3, 3), (1, 1, 1, 1), ceil=1)
pool_case("maxpool_14x14_nan", (2, 5, 14, 14), (3, 3), (1, 1, 1, 1), nan=True)
pool_case("maxpool_1x1_plane", (1, 3, 1, 1), (3, 3), (1, 1, 1, 1), nan=True)
pool_case("maxpool_16_columns", (1, 4, 3, 16), (2, 2), (0, 0, 0, 0), nan=True)
pool_case("maxpool_64_rows_k5", (1, 2, 64, 5), (5, 5), (2, 2, 2, 2), nan=True)
pool_case("maxpool_65_rows", (1, 2, 65, 5), (3, 3), (1, 1, 1, 1), nan=True)
pool_case("maxpool_asymmetric_pads", (1, 3, 9, 9), (3, 4), (0, 1, 2, 3), nan=True)


def reduce_case(name, op, shape, keepdims, nan=False, every_axis=False):
    """over the last axis, or (every_axis) over all of them"""
    if not check.selected(name):
        return
    x = rng.randn(*shape).astype(np.float32)
    if nan:
        x.reshape(-1)[rng.rand(x.size) < (0.1 if nan is True else nan)] = np.nan
        x.reshape(-1)[rng.randint(x.size)] = np.nan  # (one at least)
    inits = []
    if every_axis:
        node = helper.make_node(op, ["x"], ["y"], keepdims=keepdims)
    elif op == "ReduceSum":  # (its axes an input since opset 13)
        node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims)
        inits = [numpy_helper.from_array(np.array([-1], np.int64), "axes")]
    else:
        node = helper.make_node(op, ["x"], ["y"], axes=[-1], keepdims=keepdims)
    got, err = run_model(name, [node], {"x": x}, [("y", TensorProto.FLOAT)], inits, opset=13)
    if err:
        return check.fail(f"{name}: {err}")
    f = {"ReduceMax": np.max, "ReduceMin": np.min, "ReduceSum": np.sum, "ReduceMean": np.mean}[op]
    want = f(x.astype(np.float64), axis=None if every_axis else -1, keepdims=bool(keepdims)).astype(np.float32)
    if op in ("ReduceMax", "ReduceMin"):
        ok = got[0].shape == want.shape and got[0].tobytes() == want.tobytes()
    else:
        ok = got[0].shape == want.shape and seamtest.rel_err(got[0], want) <= 1e-6
    check.expect(ok, f"{name}: {op} over the last axis of {shape} equal to numpy's", f"shape {got[0].shape}")


reduce_case("reduce_max_rows_of_4", "ReduceMax", (27000, 4), 0)
reduce_case("reduce_min_rows_nan", "ReduceMin", (500, 7), 1, nan=True)
reduce_case("reduce_max_rows_nan", "ReduceMax", (3, 100, 64), 0, nan=True)
reduce_case("reduce_sum_rows_of_1", "ReduceSum", (1000, 1), 1)
reduce_case("reduce_mean_rows", "ReduceMean", (2, 56, 56, 16), 1)
reduce_case("reduce_mean_rows_65", "ReduceMean", (300, 65), 0)
# a whole tensor to one number, in chunks over the pool (a detector's boxes)
reduce_case("reduce_max_all", "ReduceMax", (27000, 4), 0, every_axis=True)
reduce_case("reduce_min_all_nan", "ReduceMin", (270001,), 1, nan=1e-5, every_axis=True)
reduce_case("reduce_max_all_tail", "ReduceMax", (3, 65537), 0, every_axis=True)
reduce_case("reduce_sum_all", "ReduceSum", (1000, 300), 0, every_axis=True)
reduce_case("reduce_mean_all", "ReduceMean", (2, 3, 40000), 1, every_axis=True)


def gap_case(name, shape):
    if not check.selected(name):
        return
    x = rng.randn(*shape).astype(np.float32)
    got, err = run_model(name, [helper.make_node("GlobalAveragePool", ["x"], ["y"])], {"x": x}, [("y", TensorProto.FLOAT)])
    if err:
        return check.fail(f"{name}: {err}")
    want = x.astype(np.float64).mean(axis=tuple(range(2, x.ndim)), keepdims=True).astype(np.float32)
    check.expect(got[0].shape == want.shape and seamtest.rel_err(got[0], want) <= 1e-6,
                 f"{name}: GlobalAveragePool of {shape} equal to numpy's mean", f"shape {got[0].shape}")


def tile_case(name, shape, reps, dtype=np.float32):
    if not check.selected(name):
        return
    x = (rng.randn(*shape) * 100).astype(dtype)
    node = helper.make_node("Tile", ["x", "reps"], ["y"])
    inits = [numpy_helper.from_array(np.array(reps, np.int64), "reps")]
    got, err = run_model(name, [node], {"x": x}, [("y", onnx_dtype(dtype))], inits, opset=13)
    if err:
        return check.fail(f"{name}: {err}")
    want = np.tile(x, reps)
    check.expect(got[0].shape == want.shape and np.array_equal(got[0], want), f"{name}: Tile {shape} by {reps} "
                 f"equal to numpy.tile", f"shape {got[0].shape}, want {want.shape}")


# Tile by doubling copies per axis (tensor.c)
tile_case("tile_rows_cols", (6, 2), (100, 300))
tile_case("tile_3d_int64", (2, 3, 4), (1, 2, 3), np.int64)
tile_case("tile_zero_repeat", (5, 3), (0, 2))
tile_case("tile_uint8_inner_one", (3, 1, 2), (2, 5, 1), np.uint8)
tile_case("tile_ones", (4, 7), (1, 1))

gap_case("gap_3d_video", (1, 512, 1, 7, 7))
gap_case("gap_1d", (2, 64, 33))



# ---- Cast (cast.c): the typed loops and the general one, against numpy ----

CAST_FROM = [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.uint32, np.int64, np.bool_, np.float32, np.float64]
CAST_TO = [np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8]


def cast_values(dt, n):
    """n values of dt with its extremes, values that round in float32
    (2^24 + 1), and a bool byte of 7 (true, not 1)."""
    if dt == np.bool_:
        return np.frombuffer(np.array(([0, 1, 7] * n)[:n], np.uint8).tobytes(), np.bool_).copy()
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        edge = [info.min, info.max, 0, 1, -1 if info.min < 0 else 2, min(info.max, 2**24 + 1), min(info.max, 300)]
        return np.concatenate([np.array(edge, dt), rng.randint(info.min, int(info.max) + 1, n - len(edge),
                                                               dtype=np.int64 if dt != np.uint64 else np.uint64).astype(dt)])
    return np.concatenate([np.array([0.0, -0.0, 1.5, -2.5, 16777217.0, 1e6 + 0.1], dt),
                           (rng.randn(n - 6) * 1000).astype(dt)])


def cast_want(x, to):
    """ONNX's Cast: integers to integers wrap; floats to integers truncate
    (only values that fit are used here); bool is x != 0."""
    if x.dtype == np.bool_:
        return (x.view(np.uint8) != 0).astype(to)
    if np.issubdtype(x.dtype, np.floating) and np.issubdtype(to, np.integer):
        return np.trunc(x).astype(np.int64).astype(to)
    return x.astype(to)


def cast_case(name, n=1000):
    """One model casting every source type to every target type; each
    output exactly numpy's (the typed loops of cast.c and the general
    loop must agree, bit for bit)."""
    if not check.selected(name):
        return
    feeds, nodes, outs, want = {}, [], [], []
    for f in CAST_FROM:
        x = cast_values(f, n)
        if np.issubdtype(f, np.floating):  # in range of every target (C leaves the rest undefined)
            x = np.clip(x, -100, 100)
        fn = f"x_{np.dtype(f).name}"
        feeds[fn] = x
        for t in CAST_TO:
            if f == t:
                continue
            yn = f"y_{np.dtype(f).name}_{np.dtype(t).name}"
            nodes.append(helper.make_node("Cast", [fn], [yn], to=onnx_dtype(np.dtype(t))))
            outs.append((yn, onnx_dtype(np.dtype(t))))
            want.append(cast_want(x, t))
    got, err = run_model(name, nodes, feeds, outs, opset=13)
    if err:
        check.fail(f"{name}: {err}")
        return
    bad = [o for (o, _), a, w in zip(outs, got, want) if a.dtype != w.dtype or a.tobytes() != w.tobytes()]
    check.expect(not bad, f"{name}: {len(outs)} casts equal to numpy's, bit for bit", f"{bad[:6]} differ")


cast_case("cast_every_pair")
cast_case("cast_short", n=9)


# ---- QuantizeLinear and DequantizeLinear per tensor (quant.c): chunks of
# 16384 over the pool and a tail, against numpy in float32 ----

def qdq_case(name, n, signed):
    if not check.selected(name):
        return
    x = (rng.randn(n) * 3).astype(np.float32)
    x[:5] = [0.5 * 0.02, 1.5 * 0.02, -2.5 * 0.02, 1e9, -1e9]  # ties (to even), saturation both ways
    qt, npq = (TensorProto.INT8, np.int8) if signed else (TensorProto.UINT8, np.uint8)
    scale, zp = np.float32(0.02), (-3 if signed else 131)
    inits = [numpy_helper.from_array(np.array(scale, np.float32), "s"), numpy_helper.from_array(np.array(zp, npq), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    lo, hi = (-128, 127) if signed else (0, 255)
    want_q = np.clip(np.round(x / scale).astype(np.float32) + zp, lo, hi).astype(npq)
    want_y = ((want_q.astype(np.int32) - zp).astype(np.float32) * scale).astype(np.float32)
    got, err = run_model(name, nodes, {"x": x}, [("q", qt), ("y", TensorProto.FLOAT)], inits)
    if err:
        check.fail(f"{name}: {err}")
        return
    check.expect(np.array_equal(got[0], want_q) and got[1].tobytes() == want_y.tobytes(),
                 f"{name}: QuantizeLinear and DequantizeLinear of {n} values equal numpy's in float32",
                 f"{int(np.sum(got[0] != want_q))} quantized and {int(np.sum(got[1] != want_y))} dequantized values differ")


qdq_case("qdq_per_tensor_uint8", 70001, False)
qdq_case("qdq_per_tensor_int8", 3 * 16384, True)
qdq_case("qdq_per_tensor_small", 100, False)


# ---- values whose size the run decides: the dynamic slab, numpy ----

def loop_sizes_case(name, L=4000, K=173, trips=7):
    """Loop over i: n = (37 i + 5) % 23 + 1, s = x[:n K], b = s * s + s,
    big = tile(b, n); acc += sum(big), scan max(b); then y = scan * 2."""
    if not check.selected(name):
        return
    x = rng.rand(L).astype(np.float32)
    c = lambda nm, v: helper.make_node("Constant", [], [nm], value=numpy_helper.from_array(np.array(v, np.int64)))
    body = helper.make_graph([
        c("c37", 37), c("c5", 5), c("c23", 23), c("one", 1), c("cK", K), c("ax", [0]),
        helper.make_node("Mul", ["i", "c37"], ["t1"]), helper.make_node("Add", ["t1", "c5"], ["t2"]),
        helper.make_node("Mod", ["t2", "c23"], ["t3"]), helper.make_node("Add", ["t3", "one"], ["n"]),
        helper.make_node("Mul", ["n", "cK"], ["nn"]), helper.make_node("Unsqueeze", ["nn", "ax"], ["end"]),
        helper.make_node("Unsqueeze", ["n", "ax"], ["reps"]), helper.make_node("Unsqueeze", ["one", "ax"], ["one1"]),
        helper.make_node("Sub", ["one1", "one1"], ["zero1"]),
        helper.make_node("Slice", ["x", "zero1", "end"], ["s"]),
        helper.make_node("Mul", ["s", "s"], ["a"]), helper.make_node("Add", ["a", "s"], ["b"]),
        helper.make_node("Tile", ["b", "reps"], ["big"]),
        helper.make_node("ReduceSum", ["big"], ["r"], keepdims=1),
        helper.make_node("Add", ["acc", "r"], ["acc_out"]),
        helper.make_node("ReduceMax", ["b"], ["m"], keepdims=1, axes=[0]),
        helper.make_node("Identity", ["cond"], ["cond_out"]),
    ], "body", [vi("i", [], TensorProto.INT64), vi("cond", [], TensorProto.BOOL), vi("acc", [1])],
        [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [1]), vi("m", [1])])
    inits = [numpy_helper.from_array(np.array(trips, np.int64), "M"), numpy_helper.from_array(np.array(True), "c"),
             numpy_helper.from_array(np.zeros(1, np.float32), "acc0"),
             numpy_helper.from_array(np.array(2, np.float32), "two")]
    nodes = [helper.make_node("Loop", ["M", "c", "acc0"], ["acc", "scan"], body=body),
             helper.make_node("Mul", ["scan", "two"], ["y"])]
    acc, ms = 0.0, []
    for i in range(trips):
        n = (37 * i + 5) % 23 + 1
        b = x[:n * K].astype(np.float64) ** 2 + x[:n * K]
        acc += n * b.sum()
        ms.append([b.max()])
    got, err = run_model(name, nodes, {"x": x}, [("acc", TensorProto.FLOAT), ("y", TensorProto.FLOAT)], inits,
                         opset=13, repeat=3)
    if err:
        check.fail(f"{name}: {err}")
        return
    want_y = 2 * np.array(ms)
    ok = got[0].shape == (1,) and np.allclose(got[0], [acc], rtol=1e-5) and got[1].shape == want_y.shape and \
        np.allclose(got[1], want_y, rtol=1e-6)
    check.expect(ok, f"{name}: equal to numpy after 3 runs", f"acc {got[0]} want {acc}; y {got[1].ravel()} "
                 f"want {want_y.ravel()}")


def nonzero_case(name, shape, thresholds):
    """For each threshold t: idx = NonZero(x > t) (flattened), g = Gather(x
    flat, idx), y_t = g * g + g; every y_t and the last idx are outputs."""
    if not check.selected(name):
        return
    x = rng.rand(*shape).astype(np.float32)
    inits = [numpy_helper.from_array(np.array([-1], np.int64), "flat")]
    nodes = [helper.make_node("Reshape", ["x", "flat"], ["xf"])]
    outs, want = [], []
    for k, t in enumerate(thresholds):
        inits.append(numpy_helper.from_array(np.array(t, np.float32), f"t{k}"))
        nodes += [helper.make_node("Greater", ["xf", f"t{k}"], [f"m{k}"]),
                  helper.make_node("NonZero", [f"m{k}"], [f"nz{k}"]),
                  helper.make_node("Squeeze", [f"nz{k}", "zero"], [f"idx{k}"]),
                  helper.make_node("Gather", ["xf", f"idx{k}"], [f"g{k}"]),
                  helper.make_node("Mul", [f"g{k}", f"g{k}"], [f"q{k}"]),
                  helper.make_node("Add", [f"q{k}", f"g{k}"], [f"y{k}"])]
        outs.append((f"y{k}", TensorProto.FLOAT))
        g = x.ravel()[x.ravel() > t]
        want.append(g * g + g)
    inits.append(numpy_helper.from_array(np.array([0], np.int64), "zero"))
    outs.append((f"idx{len(thresholds) - 1}", TensorProto.INT64))
    want.append(np.nonzero(x.ravel() > thresholds[-1])[0])
    got, err = run_model(name, nodes, {"x": x}, outs, inits, opset=13, repeat=3)
    if err:
        check.fail(f"{name}: {err}")
        return
    bad = [o for (o, _), a, w in zip(outs, got, want) if a.shape != w.shape or not np.array_equal(a, w)]
    check.expect(not bad, f"{name}: equal to numpy after 3 runs", f"outputs {bad} differ")


loop_sizes_case("dynamic_loop_sizes_grow_and_shrink")
loop_sizes_case("dynamic_loop_sizes_small", L=200, K=7, trips=5)
nonzero_case("dynamic_nonzero_gather", (1, 64, 80, 80), [0.2, 0.5, 0.9, 0.99])
nonzero_case("dynamic_nonzero_none_kept", (3, 100), [0.5, 2.0])

check.finish()
