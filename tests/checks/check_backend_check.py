"""seam backend-check (tools/cli/backend_check.c) against planted defects.

usage: python3 check_backend_check.py SEAM TOY_SO WORKDIR [--dnnl] [-k PATTERN]

The toy plug-in (tests/plugin/toy_backend.c) claims Relu, Add, Mul and
Sigmoid; it cannot compile Sigmoid or a broadcasting Add, and its target
option defect=wrong_relu|crash|hang|racy plants a wrong Relu, an abort, a
hang and a run through a buffer all its programs share in its run. Against Debian's ONNX node tests:
  clean    Relu and Mul tests: every claimed test correct, exit 0, the
           table's Relu row '1 1 1 1', the JSON a record per test;
  compile  Sigmoid and the broadcasting Add: 'compile failed' naming the
           node and op, exit 1;
  wrong    defect=wrong_relu: test_relu 'wrong' at the first negative
           element, exit 1;
  crash    defect=crash: 'crashed' (signal 6) with the op named, and
           backend-check itself goes on to the next test, exit 1;
  hang     defect=hang with --timeout 1: 'timed out', exit 1;
  threads  defect=racy: two sessions run at once on two threads give an
           output the single run did not: 'wrong', exit 1 (and --no-threads
           skips that run);
  usage    no --target, a bad --repeat, a -k that selects nothing: exit 2;
           a missing --node-tests folder: exit 1;
  models   --models DIR: a folder of three models written here (onnx.helper,
           random weights): every distinct node at the shape it has there
           is a case (a Relu at two shapes two cases, a second Relu of the
           same shape none, a node of unknown shape counted as such, a
           symbolic input sized by NAME.input.npy); the cases kept by
           --keep-cases are node tests whose expected outputs are numpy's
           (Relu, Add, a Conv by its weights); the toy's claimed cases
           correct (exit 0); defect=wrong_relu makes the Relu cases 'wrong'
           naming the model and node (exit 1); Sigmoid 'compile failed';
           with --dnnl the whole folder through oneDNN, exit 0; a folder
           without models: exit 1;
  dnnl     (--dnnl) oneDNN on Relu, Add, Conv with constant weights and
           Max/Min of two inputs: correct, exit 0; and every node test
           with no claimed test failing (the defects it found first are
           fixed: Max/Min of other than two inputs, Dropout's mask, Log
           near 1, Resize's linear downscale); Resize by constant scales
           against torch's interpolate: 2x linear and 3x nearest taken and
           right, a 0.6 linear and a 2.5 nearest (which out/in does not give)
           left to the CPU.
  forms    (--dnnl) MaxPool's node tests: a table row per form under the op
           (dtype, rank, auto_pad=..., ceil_mode=1, dilated): uint8
           unclaimed, ceil_mode=1 claimed and correct; the JSON's `form`.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

p = seamtest.arg_parser(__doc__)
p.add_argument("seam")
p.add_argument("toy")
p.add_argument("work")
p.add_argument("--dnnl", action="store_true")
args = p.parse_args()
os.makedirs(args.work, exist_ok=True)
run = seamtest.Program(args.seam, timeout=900)
check = seamtest.Checker("backend-check", args.k)
NODE = "/usr/share/libonnx-testdata/data/node"
if not os.path.isdir(NODE):
    print(f"skipped: no ONNX node tests at {NODE} (Debian's libonnx-testdata)")
    check.finish()
    sys.exit(0)
toy = ["backend-check", "--backend-lib", args.toy, "--target", "toy", "--repeat", "2"]


def row(out, op):
    """The table's numbers for op: tests, claimed, compiled, correct."""
    for ln in out.splitlines():
        f = ln.split()
        if f and f[0] == op:
            return [int(x) for x in f[1:5]]
    return None


if check.selected("clean"):
    js = os.path.join(args.work, "clean.json")
    r = run(*toy, "-k", "test_relu", "-k", "test_mul_example", "--json", js)
    check.expect(r.returncode == 0, f"clean: Relu and Mul correct, exit {r.returncode}", r.stdout[-800:] + r.stderr)
    check.expect(row(r.stdout, "Relu") == [1, 1, 1, 1], f"clean: the Relu row {row(r.stdout, 'Relu')}")
    if os.path.exists(js):
        rec = {t["test"]: t for t in json.load(open(js))["tests"]}
        check.expect(rec.get("test_relu", {}).get("verdict") == "correct" and rec["test_relu"]["time_vs_cpu"],
                     "clean: the JSON says test_relu is correct and timed", rec.get("test_relu"))
    else:
        check.fail("clean: no JSON written")

if check.selected("compile"):
    r = run(*toy, "-k", "test_sigmoid", "-k", "test_add_bcast")
    bad = [ln for ln in r.stdout.splitlines() if ": compile failed: " in ln]
    check.expect(r.returncode == 1 and any("test_sigmoid (Sigmoid): compile failed" in x and "cannot lower Sigmoid" in x for x in bad)
                 and any("test_add_bcast (Add): compile failed" in x and "does not broadcast" in x for x in bad),
                 f"compile: claimed and not compiled, each named, exit {r.returncode}", r.stdout[-1200:])

if check.selected("wrong"):
    r = run(*toy, "-k", "test_relu", "--target-option", "defect=wrong_relu")
    check.expect(r.returncode == 1 and "test_relu (Relu): wrong: output 'y'[" in r.stdout and "expected 0" in r.stdout,
                 f"wrong: a Relu computed wrong is caught, exit {r.returncode}", r.stdout[-600:])
    check.expect(row(r.stdout, "Relu") == [1, 1, 1, 0], f"wrong: the Relu row {row(r.stdout, 'Relu')}")

if check.selected("crash"):
    r = run(*toy, "-k", "test_relu", "-k", "test_mul_example", "--target-option", "defect=crash")
    check.expect(r.returncode == 1 and "test_relu (Relu): crashed: killed by signal 6" in r.stdout
                 and "test_mul_example (Mul): crashed" in r.stdout,
                 f"crash: each crash a verdict with its op, the check goes on, exit {r.returncode}", r.stdout[-800:] + r.stderr)

if check.selected("threads"):  # a run that is not safe on two compiled handles at once
    r = run(*toy, "-k", "test_relu", "--target-option", "defect=racy")
    check.expect(r.returncode == 1 and "test_relu (Relu): wrong: two sessions run at once on two threads" in r.stdout,
                 f"threads: a racy run is caught, exit {r.returncode}", r.stdout[-600:])
    r = run(*toy, "-k", "test_relu", "--target-option", "defect=racy", "--no-threads")
    check.expect(r.returncode == 0, f"threads: --no-threads skips that run, exit {r.returncode}", r.stdout[-400:])

if check.selected("hang"):
    r = run(*toy, "-k", "test_relu", "--target-option", "defect=hang", "--timeout", "1")
    check.expect(r.returncode == 1 and "test_relu (Relu): timed out: over 1 s" in r.stdout,
                 f"hang: a hang is a timeout, exit {r.returncode}", r.stdout[-600:])

if check.selected("usage"):
    for label, a, want in (("no target", ["backend-check"], 2),
                           ("bad repeat", [*toy, "--repeat", "x"], 2),
                           ("selects nothing", [*toy, "-k", "no_such_test_anywhere"], 2),
                           ("missing folder", [*toy, "--node-tests", os.path.join(args.work, "none")], 1)):
        r = run(*a)
        check.expect(r.returncode == want and "seam backend-check" in r.stderr,
                     f"usage: {label}: exit {r.returncode} (want {want})", r.stderr.strip()[-300:])

def own_tests():
    """Node tests of this check's own in WORKDIR/own (as Debian's lay them
    out), expected outputs from torch's interpolate (the scale given, not
    recomputed: ONNX's half_pixel linear and asymmetric floor nearest): Resize by
    constant scales that out/in does not give (a 0.6 linear downscale, a 2.5
    nearest upscale), which dnnl once mapped by out/in."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    import torch
    root = os.path.join(args.work, "own")
    rng = np.random.default_rng(0)
    asym = dict(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    cases = (("test_own_resize_linear_scales", "linear", {}, [1, 1, 0.6, 0.6], (1, 2, 5, 7)),
             ("test_own_resize_nearest_scales", "nearest", asym, [1, 1, 2.5, 2.5], (1, 3, 4, 3)),
             ("test_own_resize_linear_2x", "linear", {}, [1, 1, 2.0, 2.0], (1, 2, 5, 7)),
             ("test_own_resize_nearest_3x", "nearest", asym, [1, 1, 3.0, 3.0], (1, 3, 4, 3)))
    for name, mode, attrs, scales, shape in cases:
        d = os.path.join(root, name, "test_data_set_0")
        os.makedirs(d, exist_ok=True)
        x = rng.standard_normal(shape).astype(np.float32)
        node = helper.make_node("Resize", ["X", "", "scales"], ["Y"], mode=mode, **attrs)
        g = helper.make_graph([node], name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array(scales, np.float32), "scales")])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        y = torch.nn.functional.interpolate(torch.from_numpy(x), scale_factor=scales[2], mode="bilinear" if mode == "linear"
                                            else "nearest", recompute_scale_factor=False,
                                            **({"align_corners": False} if mode == "linear" else {})).numpy()
        with open(os.path.join(root, name, "model.onnx"), "wb") as f:
            f.write(m.SerializeToString())
        for fn, a in (("input_0.pb", x), ("output_0.pb", y)):
            with open(os.path.join(d, fn), "wb") as f:
                f.write(numpy_helper.from_array(a).SerializeToString())
    return root


def models_folder():
    """Three small models in WORKDIR/models: a conv net with Relus at two
    shapes (one repeated) and an Add; a model whose input has a symbolic
    batch sized by its NAME.input.npy; one with a Sigmoid (which the toy
    claims and cannot compile) after a Mul; and a model whose input's dims
    stay unknown (no .npy), so its nodes have no known shape."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    root = os.path.join(args.work, "models")
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(1)
    f32 = TensorProto.FLOAT

    def save(name, nodes, inputs, outputs, inits=()):
        g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        with open(os.path.join(root, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())

    w = numpy_helper.from_array((rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32), "w")
    save("convnet", [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                     helper.make_node("Relu", ["c"], ["r1"]),
                     helper.make_node("Relu", ["r1"], ["r2"]),  # the same case as r1
                     helper.make_node("Add", ["r2", "c"], ["a"]),
                     helper.make_node("MaxPool", ["a"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                     helper.make_node("Relu", ["p"], ["y"])],  # a Relu at another shape
         [helper.make_tensor_value_info("x", f32, [1, 3, 8, 10])], [helper.make_tensor_value_info("y", f32, None)], [w])
    save("symbolic", [helper.make_node("Mul", ["x", "x"], ["m"]), helper.make_node("Relu", ["m"], ["y"])],
         [helper.make_tensor_value_info("x", f32, ["batch", 6])], [helper.make_tensor_value_info("y", f32, None)])
    np.save(os.path.join(root, "symbolic.input.npy"), np.zeros((5, 6), np.float32))
    save("sigmoid", [helper.make_node("Sigmoid", ["x"], ["y"])], [helper.make_tensor_value_info("x", f32, [2, 7])],
         [helper.make_tensor_value_info("y", f32, None)])
    save("unknown", [helper.make_node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", f32, ["n", "m"])],
         [helper.make_tensor_value_info("y", f32, None)])
    return root, numpy_helper.to_array(w)


if check.selected("models"):
    import glob
    import numpy as np
    import onnx
    from onnx import numpy_helper
    root, wk = models_folder()
    kept = os.path.join(args.work, "cases")
    js = os.path.join(args.work, "models.json")
    r = run(*toy, "--models", root, "--keep-cases", kept, "-k", "convnet", "-k", "symbolic", "--json", js)
    head = r.stdout.splitlines()[0] if r.stdout else ""
    check.expect(r.returncode == 0 and "4 models from" in head and "10 nodes: 8 cases; 1 the same as a case before, "
                 "1 with an input of unknown shape" in head,
                 f"models: the cases of the folder ({head}), exit {r.returncode}", r.stdout[-1200:] + r.stderr[-400:])
    check.expect(row(r.stdout, "Relu") == [3, 3, 3, 3] and row(r.stdout, "Mul") == [1, 1, 1, 1],
                 f"models: the toy's Relu cases (two convnet shapes, one symbolic) and Mul correct: Relu {row(r.stdout, 'Relu')}, "
                 f"Mul {row(r.stdout, 'Mul')}", r.stdout[-1200:])
    recs = json.load(open(js))["tests"] if os.path.exists(js) else []
    check.expect(len(recs) == 7 and all(t["test"].split("_")[1] in ("convnet", "symbolic") for t in recs),
                 f"models: a JSON record per selected case ({len(recs)})", [t["test"] for t in recs])

    def case(pattern):
        d = sorted(glob.glob(os.path.join(kept, pattern)))
        if not d:
            return None, None
        io = os.path.join(d[0], "test_data_set_0")
        read = lambda f: numpy_helper.to_array(onnx.load_tensor(os.path.join(io, f)))
        return read("input_0.pb"), read("output_0.pb")
    x, y = case("*_convnet_Relu_*")
    check.expect(x is not None and x.shape == (1, 4, 8, 10) and np.array_equal(y, np.maximum(x, 0)) and (x < 0).any(),
                 "models: the kept Relu case is a node test at the model's shape, its output numpy's Relu")
    x, y = case("*_symbolic_Mul_*")
    check.expect(x is not None and x.shape == (5, 6) and np.array_equal(y, x * x),
                 "models: the symbolic batch sized by symbolic.input.npy (5 x 6), its output x * x")
    xc, yc = case("*_convnet_Conv_*")
    if xc is not None:
        pad = np.pad(xc, ((0, 0), (0, 0), (1, 1), (1, 1)))
        ref = np.zeros((1, 4, 8, 10))
        for dh in range(3):
            for dw in range(3):
                ref += np.einsum("nchw,oc->nohw", pad[:, :, dh:dh + 8, dw:dw + 10], wk[:, :, dh, dw])
        check.expect(np.abs(yc - ref).max() < 1e-4, f"models: the Conv case keeps its weights: {np.abs(yc - ref).max():.2e}")
    else:
        check.fail("models: no Conv case kept")
    r = run(*toy, "--models", root, "-k", "convnet", "--target-option", "defect=wrong_relu")
    wrong = [ln for ln in r.stdout.splitlines() if ": wrong: " in ln]
    check.expect(r.returncode == 1 and len(wrong) == 2 and all("_convnet_Relu_" in ln for ln in wrong),
                 f"models: a wrong Relu fails both convnet Relu cases, named, exit {r.returncode}", r.stdout[-1000:])
    r = run(*toy, "--models", root, "-k", "sigmoid")
    check.expect(r.returncode == 1 and "(Sigmoid): compile failed" in r.stdout,
                 f"models: the Sigmoid the toy claims and cannot build, exit {r.returncode}", r.stdout[-800:])
    leftover = glob.glob(os.path.join(os.environ.get("TMPDIR", "/tmp"), "seam-backend-check-*"))
    r = run(*toy, "--models", os.path.join(args.work, "own_missing"))
    check.expect(r.returncode == 1 and "--models" in r.stderr, f"models: a missing folder, exit {r.returncode}", r.stderr[-300:])
    r = run(*toy, "--keep-cases", kept)
    check.expect(r.returncode == 2, f"models: --keep-cases without --models is bad usage, exit {r.returncode}", r.stderr[-300:])
    after = glob.glob(os.path.join(os.environ.get("TMPDIR", "/tmp"), "seam-backend-check-*"))
    check.expect(len(after) <= len(leftover), "models: the temporary cases are removed", after)
    if args.dnnl:
        r = run("backend-check", "--target", "dnnl", "--repeat", "0", "--models", root)
        check.expect(r.returncode == 0 and (row(r.stdout, "Conv") or [0, 0, 0, 0])[3] == 1,
                     f"models: the folder through dnnl, the Conv case correct, exit {r.returncode}", r.stdout[-1200:])

if args.dnnl and check.selected("dnnl"):
    r = run("backend-check", "--target", "dnnl", "--repeat", "0", "--node-tests", own_tests())
    # the 0.6 and 2.5 ones dnnl now leaves to the CPU (it maps by out/in,
    # and its nearest is ONNX's for whole-number upscales only)
    check.expect(r.returncode == 0 and row(r.stdout, "Resize") == [4, 2, 2, 2],
                 f"dnnl: Resize by constant scales, two taken and right, two out/in does not give left alone, against torch: "
                 f"{row(r.stdout, 'Resize')}, exit {r.returncode}", r.stdout[-800:])
    r = run("backend-check", "--target", "dnnl", "--repeat", "2", "-k", "test_relu", "-k", "test_add", "-k", "test_conv_with_strides",
            "-k", "test_max_two_inputs", "-k", "test_min_two_inputs")
    check.expect(r.returncode == 0 and (row(r.stdout, "Relu") or [0])[3] >= 1, f"dnnl: a selection correct, exit {r.returncode}",
                 r.stdout[-1200:])
    js = os.path.join(args.work, "dnnl.json")
    r = run("backend-check", "--target", "dnnl", "--repeat", "0", "--json", js)
    print("\n".join(r.stdout.splitlines()[:1] + [ln for ln in r.stdout.splitlines() if ": " in ln and "(" in ln][:20]))
    check.expect(r.returncode == 0, f"dnnl: every claimed node test passes, exit {r.returncode}", r.stdout[-1500:])

if args.dnnl and check.selected("forms"):
    # MaxPool's node tests come in many forms: a row per form under the op;
    # oneDNN takes the float ones (ceil_mode=1 too), not uint8
    js = os.path.join(args.work, "forms.json")
    r = run("backend-check", "--target", "dnnl", "--repeat", "0", "-k", "test_maxpool", "--json", js)
    lines = r.stdout.splitlines()
    at = next((k for k, ln in enumerate(lines) if ln.split()[:1] == ["MaxPool"]), None)
    forms = []
    for ln in lines[at + 1:] if at is not None else []:
        if not ln.startswith("  "):
            break
        f = ln.split()
        forms.append((" ".join(f[:-5]), [int(x) for x in f[-5:-1]]))
    u8 = [c for f, c in forms if f.startswith("uint8")]
    ceil = [c for f, c in forms if "ceil_mode=1" in f]
    check.expect(r.returncode == 0 and len(forms) >= 5 and u8 and all(c[1] == 0 for c in u8) and ceil
                 and all(c[1] > 0 and c[3] == c[1] for c in ceil),
                 f"forms: MaxPool's rows per form ({len(forms)}): uint8 unclaimed, ceil_mode=1 claimed and correct",
                 "\n".join(lines[at:at + 12] if at is not None else lines[-12:]))
    recs = json.load(open(js))["tests"] if os.path.exists(js) else []
    check.expect(recs and any("ceil_mode=1" in t.get("form", "") for t in recs if t["op"] == "MaxPool"),
                 "forms: the JSON gives each MaxPool test its form", str(recs[:2]))

check.finish()
