"""The CPU kernels' LSTM, GRU and RNN (src/backends/cpu/rnn.c) against
torch.nn.LSTM / GRU / RNN run in float64, on the sizes where the steps run
as one parallel region split over threads (rnn.c run_step,
runtime/pool.c seam_parallel_steps).

usage: /usr/bin/python3 check_cpu_rnn.py SEAM WORKDIR [-k PATTERN]

Each case builds one ONNX node from a torch module's weights (torch's gate
order converted to ONNX's: LSTM i, o, f, c; GRU z, r, h with
linear_before_reset = 1, which is torch's formula), with weights and inputs
scaled so that the gates' pre-activations have a spread of about 1 (not
saturated: a check on the reference's outputs says so). The shapes hit
every branch of the step: hidden sizes that fill the 16-unit blocks and
ones that leave a partial block, batch 1 and 3, forward, reverse (torch on
the time-reversed input) and bidirectional, T = 1, sequence_lens shorter
than T (torch's packed sequences), initial states given or not, layout 1,
W and R as initializers (packed in check: R for the step, W for the
packed GEMM of the input projection) or graph inputs (R packed per run, W
through OpenBLAS), with and without B (torch's bias=False),
the benchmark's layer size (input 128, hidden 256, T = 64). Y, Y_h and
Y_c are compared to torch's.

The forms torch has not (GRU without linear_before_reset, which takes two
region steps per step; LSTM with peepholes, clip and other activations,
whose gates are computed element by element) are checked on the same
kinds of sizes against the ONNX spec's equations, written below in
float64 from the operator's documentation.

Every model also runs with --threads 2, 3 and 5 (5 threads on fewer
cores: threads are late and others take their parts), each bitwise equal
to --threads 1; with SEAM_CPU_RNN=avx2 (the AVX2 step; on a CPU with
AVX-512 it must give the AVX-512 step's bits) and SEAM_CPU_RNN=plain (the
plain loop: within 1e-5 of the default). A few seconds.
"""
import os
import sys

import numpy as np
import torch
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402
from seamtest import vi  # noqa: E402

args, seam, work, check = seamtest.checker_setup(__doc__, "cpu_rnn", timeout=120)
rng = np.random.RandomState(5)

THREADS = (1, 2, 3, 5)
# torch's gate blocks in ONNX's order
ORDER = {"LSTM": (0, 3, 1, 2), "GRU": (1, 0, 2), "RNN": (0,)}
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
# float32 against float64 over up to 64 steps of up to 256-term sums
TOL = 1e-5
HAS_AVX2 = {"avx2", "fma"} <= seamtest.cpu_flags()


def run_model(name, node, feeds, inits, outs):
    """Runs the one-node model on every thread count; (outputs at 1 thread,
    None) or (None, why)."""
    ins = [vi(n, a.shape) for n, a in feeds.items()]
    path = seamtest.save_model(os.path.join(work, name + ".onnx"), [node], ins, [vi(o, None) for o in outs], inits,
                               name=name, opset=14)
    args_in = []
    for n, a in feeds.items():
        f = os.path.join(work, f"{name}.{n}.npy")
        np.save(f, a)
        args_in += ["--input", f"{n}={f}"]
    got = {}
    for t in THREADS:
        d = os.path.join(work, f"{name}.t{t}")
        r = seam("run", path, *args_in, "--threads", t, "--output-dir", d, "--quiet")
        if r.returncode:
            return None, f"seam run --threads {t} failed: {r.stderr.strip()[-400:]}"
        got[t] = [np.load(seamtest.output_file(d, o)) for o in outs]
    for t in THREADS[1:]:
        if any(a.tobytes() != b.tobytes() for a, b in zip(got[1], got[t])):
            return None, f"--threads {t} differs from --threads 1"
    # the step's other paths: SEAM_CPU_RNN=avx2 (on a CPU with AVX-512: the
    # same FMA chains, so the same bits) and plain (products and sums
    # rounded apart: close)
    for path_name in (["avx2"] if HAS_AVX2 else []) + ["plain"]:
        d = os.path.join(work, f"{name}.{path_name}")
        r = seam("run", path, *args_in, "--threads", 2, "--output-dir", d, "--quiet",
                 env=dict(os.environ, SEAM_CPU_RNN=path_name))
        if r.returncode:
            return None, f"seam run with SEAM_CPU_RNN={path_name} failed: {r.stderr.strip()[-400:]}"
        other = [np.load(seamtest.output_file(d, o)) for o in outs]
        if path_name == "avx2" and any(a.tobytes() != b.tobytes() for a, b in zip(got[1], other)):
            return None, "SEAM_CPU_RNN=avx2 differs from the default path's bits"
        if path_name == "plain" and seamtest.worst(seamtest.rel_err(b, a) for a, b in zip(got[1], other)) > TOL:
            return None, "SEAM_CPU_RNN=plain is not within 1e-5 of the default path"
    return got[1], None


def case(name, op, S, Bn, In, H, direction="forward", lens=None, init=False, layout=0, r_input=False, bias=True):
    if not check.selected(name):
        return
    D, G = (2 if direction == "bidirectional" else 1), GATES[op]
    torch.manual_seed(len(name) * 7 + S)
    ctor = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU, "RNN": torch.nn.RNN}[op]
    net = ctor(In, H, bidirectional=direction == "bidirectional", batch_first=False, bias=bias).double()
    # weights uniform in +-a with (In + H) a^2 / 3 = 1: with inputs of unit
    # variance and |h| < 1 a pre-activation has a spread of about 1
    a = (3.0 / (In + H)) ** 0.5
    with torch.no_grad():
        for p in net.parameters():
            p.uniform_(-a, a)
    sfx = ["", "_reverse"] if D == 2 else [""]

    def onnx_order(t):
        g = t.detach().numpy().reshape(G, H, -1)
        return np.concatenate([g[k] for k in ORDER[op]]).reshape(G * H, -1)
    W = np.stack([onnx_order(getattr(net, "weight_ih_l0" + s)) for s in sfx]).astype(np.float32)
    R = np.stack([onnx_order(getattr(net, "weight_hh_l0" + s)) for s in sfx]).astype(np.float32)
    B = np.stack([np.concatenate([onnx_order(getattr(net, "bias_ih_l0" + s)).ravel(),
                                  onnx_order(getattr(net, "bias_hh_l0" + s)).ravel()])
                  for s in sfx]).astype(np.float32) if bias else None
    # torch runs on the float32 values seam gets, widened
    with torch.no_grad():
        for s in sfx:
            for kind in ("weight_ih_l0", "weight_hh_l0") + (("bias_ih_l0", "bias_hh_l0") if bias else ()):
                p = getattr(net, kind + s)
                p.copy_(p.float().double())
    x = rng.randn(S, Bn, In).astype(np.float32)
    h0 = (rng.uniform(-0.8, 0.8, (D, Bn, H))).astype(np.float32) if init else None
    c0 = (rng.randn(D, Bn, H)).astype(np.float32) if init and op == "LSTM" else None
    L = np.full(Bn, S) if lens is None else np.asarray(lens)

    # the reference: torch in float64; reverse is forward on the reversed input
    def torch_run(xs, hx):
        xt = torch.from_numpy(xs.astype(np.float64))
        if lens is not None:
            xt = torch.nn.utils.rnn.pack_padded_sequence(xt, torch.from_numpy(L), enforce_sorted=False)
        with torch.no_grad():
            y, hn = net(xt, hx)
        if lens is not None:
            y = torch.nn.utils.rnn.pad_packed_sequence(y, total_length=S)[0]
        return y.numpy(), hn

    hx = None
    if init:
        hx = torch.from_numpy(h0.astype(np.float64))
        if op == "LSTM":
            hx = (hx, torch.from_numpy(c0.astype(np.float64)))
    if direction == "reverse":
        assert lens is None  # (torch's reverse of a packed batch is per sequence: not this trick)
        y, hn = torch_run(x[::-1].copy(), hx)
        y = y[::-1]
    else:
        y, hn = torch_run(x, hx)
    Y = y.reshape(S, Bn, D, H).transpose(0, 2, 1, 3)  # ONNX's [S, D, B, H]
    Yh = (hn[0] if op == "LSTM" else hn).numpy()
    want = [Y, Yh] + ([hn[1].numpy()] if op == "LSTM" else [])
    live = np.concatenate([Y[t, :, b].ravel() for b in range(Bn) for t in range(L[b])])
    if not check.expect(live.size == 0 or (live.std() > 0.05 and np.mean(np.abs(live) > 0.97) < 0.05),
                        f"{name}: the reference's states are spread, not saturated",
                        f"std {live.std():.2f}, |y| > 0.97: {np.mean(np.abs(live) > 0.97):.2f}"):
        return

    attrs = {"hidden_size": H, "direction": direction}
    if op == "GRU":
        attrs["linear_before_reset"] = 1
    if layout:
        attrs["layout"] = 1
    feeds = {"x": x.transpose(1, 0, 2).copy() if layout else x}
    inits = [numpy_helper.from_array(B, "B")] if bias else []
    if r_input:
        feeds["W"], feeds["R"] = W, R
    else:
        inits += [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R")]
    extra = ["", "", ""]
    if lens is not None:
        inits.append(numpy_helper.from_array(L.astype(np.int32), "lens"))
        extra[0] = "lens"
    for k, (nm, v) in enumerate((("h0", h0), ("c0", c0))):
        if v is not None:
            inits.append(numpy_helper.from_array(v.transpose(1, 0, 2).copy() if layout else v, nm))
            extra[k + 1] = nm
    ins = ["x", "W", "R", "B" if bias else ""] + extra[:2 if op != "LSTM" else 3]
    while ins[-1] == "":
        ins.pop()
    outs = ["y", "yh", "yc"][:3 if op == "LSTM" else 2]
    node = helper.make_node(op, ins, outs, name=name, **attrs)
    got, err = run_model(name, node, feeds, inits, outs)
    if err:
        check.fail(f"{name}: {err}")
        return
    if layout:  # Y [B, S, D, H], Y_h and Y_c [B, D, H]
        want = [want[0].transpose(2, 0, 1, 3)] + [w.transpose(1, 0, 2) for w in want[1:]]
    for o, g, w in zip(outs, got, want):
        e = seamtest.rel_err(g, w)
        check.expect(g.shape == w.shape and g.dtype == np.float32 and e <= TOL,
                     f"{name}: {o} against torch.nn.{op} (float64): error {e:.1e}, threads {THREADS} bitwise equal",
                     f"shape {g.shape} {g.dtype}, want {w.shape}")


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


# the ONNX activation functions the spec cases use, with their alpha and beta
SPEC_ACTS = {"Sigmoid": lambda v, a, b: sigmoid(v), "Tanh": lambda v, a, b: np.tanh(v),
             "HardSigmoid": lambda v, a, b: np.clip(a * v + b, 0, 1), "ScaledTanh": lambda v, a, b: a * np.tanh(b * v),
             "LeakyRelu": lambda v, a, b: np.where(v >= 0, v, a * v)}


def spec_case(name, op, S, Bn, In, H, direction, lens=None, init=False, clip=0.0, peep=False, acts=None):
    """GRU with linear_before_reset = 0, or LSTM with peepholes / clip /
    activations, against the spec's equations (layout 0, float64):
    GRU  z = f(Xt Wz^T + Ht-1 Rz^T + Wbz + Rbz), r likewise,
         h~ = g(Xt Wh^T + (r . Ht-1) Rh^T + Rbh + Wbh), Ht = (1 - z) . h~ + z . Ht-1
    LSTM i = f(Xt Wi^T + Ht-1 Ri^T + Pi . Ct-1 + Wbi + Rbi), f likewise with Pf,
         c~ = g(...), Ct = f . Ct-1 + i . c~, o = f(... + Po . Ct), Ht = o . h(Ct)
    with clip applied to every pre-activation; a row past its length keeps
    its state and gives Y = 0, a reverse row starts at its last step."""
    if not check.selected(name):
        return
    D, G = (2 if direction == "bidirectional" else 1), GATES[op]
    a = (3.0 / (In + H)) ** 0.5
    W = rng.uniform(-a, a, (D, G * H, In)).astype(np.float32)
    R = rng.uniform(-a, a, (D, G * H, H)).astype(np.float32)
    B = rng.uniform(-a, a, (D, 2 * G * H)).astype(np.float32)
    P = rng.uniform(-0.5, 0.5, (D, 3 * H)).astype(np.float32) if peep else None
    x = rng.randn(S, Bn, In).astype(np.float32)
    h0 = rng.uniform(-0.8, 0.8, (D, Bn, H)).astype(np.float32) if init else None
    c0 = rng.randn(D, Bn, H).astype(np.float32) if init and op == "LSTM" else None
    L = np.full(Bn, S) if lens is None else np.asarray(lens)
    names = acts or (["Sigmoid", "Tanh", "Tanh"] if op == "LSTM" else ["Sigmoid", "Tanh"])
    # (alpha, beta) per function, given explicitly for those that take them
    ab = {"HardSigmoid": (0.25, 0.5), "ScaledTanh": (1.1, 0.9), "LeakyRelu": (0.1, 0.0)}
    fns = [lambda v, n=n: SPEC_ACTS[n](v, *ab.get(n, (0, 0))) for n in names]
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    Y, Yh, Yc = np.zeros((S, D, Bn, H)), np.zeros((D, Bn, H)), np.zeros((D, Bn, H))
    for d in range(D):
        Wd, Rd, Bd = W[d].astype(np.float64), R[d].astype(np.float64), B[d].astype(np.float64)
        Pd = P[d].astype(np.float64) if P is not None else np.zeros(3 * H)
        backward = direction == "reverse" or (direction == "bidirectional" and d == 1)
        for b in range(Bn):
            h = h0[d, b].astype(np.float64) if init else np.zeros(H)
            c = c0[d, b].astype(np.float64) if c0 is not None else np.zeros(H)
            for t in (range(L[b] - 1, -1, -1) if backward else range(L[b])):
                xw = Wd @ x[t, b] + Bd[:G * H]
                rb = Bd[G * H:]
                gate = [slice(k * H, (k + 1) * H) for k in range(G)]
                if op == "GRU":
                    z = fns[0](cl(xw[gate[0]] + Rd[gate[0]] @ h + rb[gate[0]]))
                    r = fns[0](cl(xw[gate[1]] + Rd[gate[1]] @ h + rb[gate[1]]))
                    ht = fns[1](cl(xw[gate[2]] + Rd[gate[2]] @ (r * h) + rb[gate[2]]))
                    h = (1 - z) * ht + z * h
                else:
                    pre = [xw[gate[k]] + Rd[gate[k]] @ h + rb[gate[k]] for k in range(4)]  # i, o, f, c
                    i = fns[0](cl(pre[0] + Pd[:H] * c))
                    f = fns[0](cl(pre[2] + Pd[2 * H:] * c))
                    c = f * c + i * fns[1](cl(pre[3]))
                    o = fns[0](cl(pre[1] + Pd[H:2 * H] * c))
                    h = o * fns[2](c)
                Y[t, d, b] = h
            Yh[d, b], Yc[d, b] = h, c
    attrs = {"hidden_size": H, "direction": direction}
    if op == "GRU":
        attrs["linear_before_reset"] = 0
    if clip:
        attrs["clip"] = clip
    if acts:
        attrs["activations"] = names * D
        alphas = [ab[n][0] for n in names * D if n in ab]
        betas = [ab[n][1] for n in names * D if n in ("HardSigmoid", "ScaledTanh")]
        if alphas:
            attrs["activation_alpha"] = alphas
        if betas:
            attrs["activation_beta"] = betas
    inits = [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R"), numpy_helper.from_array(B, "B")]
    ins = ["x", "W", "R", "B", "", "", "", ""]
    for k, (nm, v) in enumerate((("lens", L.astype(np.int32) if lens is not None else None), ("h0", h0), ("c0", c0),
                                 ("P", P))):
        if v is not None:
            inits.append(numpy_helper.from_array(v, nm))
            ins[4 + k] = nm
    while ins[-1] == "":
        ins.pop()
    outs = ["y", "yh", "yc"][:3 if op == "LSTM" else 2]
    got, err = run_model(name, helper.make_node(op, ins, outs, name=name, **attrs), {"x": x}, inits, outs)
    if err:
        check.fail(f"{name}: {err}")
        return
    for o, g, w in zip(outs, got, [Y, Yh, Yc]):
        e = seamtest.rel_err(g, w)
        check.expect(g.shape == w.shape and e <= TOL,
                     f"{name}: {o} against the spec's equations (float64): error {e:.1e}, threads {THREADS} bitwise equal",
                     f"shape {g.shape}, want {w.shape}")


for op in ("LSTM", "GRU", "RNN"):
    lo = op.lower()
    case(f"{lo}_bench_layer", op, 64, 1, 128, 256)
    case(f"{lo}_h40_b3_bidirectional_lens_init", op, 9, 3, 24, 40, "bidirectional", lens=[9, 4, 1], init=True)
    case(f"{lo}_h23_b1_t1", op, 1, 1, 7, 23)
    case(f"{lo}_h23_b3_t1_init", op, 1, 3, 7, 23, "bidirectional", init=True)
    case(f"{lo}_h100_b3_reverse_init", op, 12, 3, 30, 100, "reverse", init=True)
    case(f"{lo}_h72_b1_bidirectional", op, 17, 1, 16, 72, "bidirectional")
    case(f"{lo}_h64_b3_forward_lens", op, 10, 3, 20, 64, lens=[3, 10, 7])
    case(f"{lo}_h48_b2_layout1_lens_init", op, 8, 2, 12, 48, "bidirectional", lens=[5, 8], init=True, layout=1)
    case(f"{lo}_h80_b3_w_r_input", op, 7, 3, 10, 80, "bidirectional", init=True, r_input=True)
    case(f"{lo}_h64_b1_no_bias", op, 20, 1, 48, 64, "bidirectional", bias=False)
    case(f"{lo}_h64_b2_w_r_input_no_bias", op, 6, 2, 40, 64, r_input=True, bias=False)

spec_case("gru_no_linear_before_reset_h256", "GRU", 16, 1, 64, 256, "forward")
spec_case("gru_no_linear_before_reset_h40_b3_lens_init", "GRU", 9, 3, 24, 40, "bidirectional", lens=[9, 4, 1],
          init=True)
spec_case("gru_no_linear_before_reset_h100_reverse_clip_acts", "GRU", 7, 2, 16, 100, "reverse", init=True, clip=1.5,
          acts=["HardSigmoid", "LeakyRelu"])
spec_case("lstm_peepholes_clip_h72_b3_lens_init", "LSTM", 9, 3, 24, 72, "bidirectional", lens=[2, 9, 5], init=True,
          clip=2.0, peep=True)
spec_case("lstm_activations_h48_b1", "LSTM", 11, 1, 16, 48, "forward", acts=["HardSigmoid", "ScaledTanh", "Tanh"])

check.finish()
