"""seam calibrate and the cost model's rates (issue 31, item 4).

usage: python3 check_calibrate.py SEAM WORKDIR MODELS_DIR [-k PATTERN]

Every run uses a cache folder of its own (SEAM_CACHE_DIR under WORKDIR):
the user's cache is never touched.

- usage: no model, an unknown option, --repeat 0 exit 2; an unreadable
  model and a model with symbolic inputs exit 1 naming the file.
- calibrate on resnet18 and transformer_encoder, with --target dnnl: exit
  0, the cache file holds this machine's entry with every class's rate
  finite and positive and dnnl's measured scale,
  no temporary file is left; another machine's entry already in the file
  is kept, and is never used for this machine.
- the rates are used: analyze and partition --json say where the rates
  come from (measured on this machine; the guesses with
  SEAM_COST_RATES=off; the guesses with no entry for this machine; the
  guesses, naming the file, when it is not JSON or a rate is negative).
- the estimates are of the clock's order: for mobilenet_v2 and googlenet
  (not calibration models), `analyze`'s "all on the CPU" estimate and the
  dnnl plan's (capability placement) are within 10x of `seam run`'s
  measured median (a bound for units and gross errors, such as the 600x
  of issue 31, that a shared machine's load cannot cross; how close they
  are is a benchmark's question: bench/estimate_bench.py, RESULTS.md).
- --no-save leaves the file as it was.
- analyze (and partition --json's guessed_nodes) says when the estimate
  guesses sizes known only at run time: for a model with symbolic dims,
  not for one with static shapes.
- a dilated conv whose windows read padding at most taps (3x3, dilation
  12 at 20 x 20: 36% of the (output, tap) pairs read the input) is
  estimated at that share of the same conv with dilation 1 (the CPU runs
  it tap by tap; the built-in rates, so the ratio is the cost model's).
"""
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

p = seamtest.arg_parser(__doc__)
p.add_argument("seam")
p.add_argument("work")
p.add_argument("models")
args = p.parse_args()
os.makedirs(args.work, exist_ok=True)
run = seamtest.Program(args.seam, timeout=600)
check = seamtest.Checker("calibrate", args.k)
CACHE = os.path.join(args.work, "cache")
FILE = os.path.join(CACHE, "cost-rates.json")
ENV = dict(os.environ, SEAM_CACHE_DIR=CACHE)
ENV.pop("SEAM_COST_RATES", None)
M = {n: os.path.join(args.models, n + ".onnx") for n in
     ("resnet18", "transformer_encoder", "transformer_encoder_dyn", "mobilenet_v2", "googlenet")}
CLASSES = ["gemm_macs_per_us", "conv3x3_macs_per_us", "grouped_macs_per_us", "int8_macs_per_us", "rnn_macs_per_us",
           "elems_per_us", "reduce_elems_per_us", "node_us"]
FOREIGN = {"machine": "Some Other CPU, 512 cores", "date": "2020-01-01",
           "rates": {k: 1e9 if k != "node_us" else 1.0 for k in CLASSES}}


def last(r):
    lines = (r.stderr or "").strip().splitlines()
    return lines[-1] if lines else "(no message)"


def rates_line(model, env=ENV):
    r = run("analyze", model, "--target", "dnnl", env=env)
    m = re.search(r"^The cost model's CPU rates: (.*)$", r.stdout, re.M)
    return r, (m.group(1) if m else "")


def usage():
    if not check.selected("usage"):
        return
    for label, a, want in (("no model", [], 2), ("unknown option", [M["resnet18"], "--fast"], 2),
                           ("--repeat 0", [M["resnet18"], "--repeat", "0"], 2),
                           ("--threads x", [M["resnet18"], "--threads", "x"], 2),
                           ("missing file", [os.path.join(args.work, "nope.onnx")], 1),
                           ("symbolic inputs", [M["transformer_encoder_dyn"], "--repeat", "1"], 1)):
        r = run("calibrate", *a, env=ENV)
        named = want == 2 or (a[0] in r.stderr or "symbolic" in r.stderr)
        check.expect(r.returncode == want and r.stderr.strip() and named, f"usage: {label} exits {want} with a message",
                     f"exit {r.returncode}: {last(r)}")
    check.expect(not os.path.exists(FILE), "usage: no cache file written by a failed calibration")


def calibrate():
    if not check.selected("calibrate"):
        return False
    os.makedirs(CACHE, exist_ok=True)
    with open(FILE, "w") as f:
        json.dump({"version": 1, "machines": [FOREIGN]}, f)
    _, line = rates_line(M["mobilenet_v2"])
    check.expect("built-in guesses" in line and "has no entry for" in line,
                 "another machine's entry is not used for this one", line)
    r = run("calibrate", M["resnet18"], M["transformer_encoder"], "--repeat", "3", "--target", "dnnl", env=ENV)
    if not check.expect(r.returncode == 0, "calibrate resnet18 and transformer_encoder, on the CPU and dnnl", last(r)):
        return False
    check.expect(re.search(r"gemm_macs_per_us .* measured", r.stdout) and "saved for this machine" in r.stdout,
                 "the report names the measured rates and where they were saved", r.stdout[-800:])
    data = json.load(open(FILE))
    mine = [e for e in data["machines"] if e["machine"] != FOREIGN["machine"]]
    check.expect(FOREIGN in data["machines"], "the other machine's entry is kept")
    ok = len(mine) == 1 and all(isinstance(mine[0]["rates"].get(k), float) and 0 < mine[0]["rates"][k] < 1e12
                                for k in CLASSES)
    check.expect(ok, "this machine's entry: every class's rate finite and positive", str(mine))
    scale = mine[0].get("targets", {}).get("dnnl") if len(mine) == 1 else None
    check.expect(isinstance(scale, float) and 0.01 <= scale <= 100, "this machine's entry: dnnl's measured scale",
                 str(mine))
    check.expect([f for f in os.listdir(CACHE) if f != "cost-rates.json"] == [], "no temporary file left",
                 str(os.listdir(CACHE)))
    r, line = rates_line(M["mobilenet_v2"])
    check.expect(r.returncode == 0 and line.startswith("measured on this machine"), "analyze: the rates are this machine's",
                 line or last(r))
    r = run("partition", M["mobilenet_v2"], "--target", "dnnl", "--json", env=ENV)
    rates = json.loads(r.stdout)["estimate"].get("rates", "") if r.returncode == 0 else ""
    check.expect(rates.startswith("measured on this machine"), "partition --json: the estimate names its rates", rates)
    _, line = rates_line(M["mobilenet_v2"], dict(ENV, SEAM_COST_RATES="off"))
    check.expect("SEAM_COST_RATES=off" in line, "SEAM_COST_RATES=off: the guesses", line)
    return True


def believable():
    """The calibrated estimate of models that were not calibrated on."""
    for name in ("mobilenet_v2", "googlenet"):
        if not check.selected(f"estimate {name}"):
            continue
        r = run("analyze", M[name], "--target", "dnnl", env=ENV)
        m = re.search(r"all on the CPU ([0-9.]+) us", r.stdout)
        t = run("run", M[name], "--repeat", "5", env=ENV)
        med = re.search(r"median ([0-9.]+) ms", t.stdout + t.stderr)
        if not check.expect(m and med, f"estimate {name}: analyze and run give numbers", last(r) + " / " + last(t)):
            continue
        est, meas = float(m.group(1)) / 1e3, float(med.group(1))
        check.expect(meas / 10 <= est <= meas * 10, f"estimate {name}: {est:.2f} ms estimated, {meas:.2f} ms measured "
                     f"(within 10x)", f"ratio {est / meas:.2f}")
        # the dnnl plan (every node on dnnl) against a run of it
        r = run("partition", M[name], "--target", "dnnl", "--placement", "capability", "--json", env=ENV)
        t = run("run", M[name], "--target", "dnnl", "--placement", "capability", "--repeat", "5", env=ENV)
        med = re.search(r"median ([0-9.]+) ms", t.stdout + t.stderr)
        if not check.expect(r.returncode == 0 and med, f"estimate {name} on dnnl: partition and run give numbers",
                            last(r) + " / " + last(t)):
            continue
        est, meas = json.loads(r.stdout)["estimate"]["plan_us"] / 1e3, float(med.group(1))
        check.expect(meas / 10 <= est <= meas * 10, f"estimate {name} on dnnl: {est:.2f} ms estimated, {meas:.2f} ms "
                     f"measured (within 10x)", f"ratio {est / meas:.2f}")


def guessed():
    """analyze says when an estimate guesses sizes: a model with symbolic
    dims, and not one with static shapes."""
    if not check.selected("guessed"):
        return
    for name, want in (("transformer_encoder_dyn", True), ("resnet18", False)):
        r = run("analyze", M[name], "--target", "dnnl", env=ENV)
        m = re.search(r"^The estimate guesses the sizes of (\d+) nodes?", r.stdout, re.M)
        got = bool(m and int(m.group(1)) > 0)
        j = run("partition", M[name], "--target", "dnnl", "--json", env=ENV)
        n = json.loads(j.stdout)["estimate"].get("guessed_nodes") if j.returncode == 0 else None
        check.expect(r.returncode == 0 and got == want and (n > 0) == want,
                     f"guessed: {name}: " + ("the estimate says it guesses sizes" if want else "no guess said"),
                     f"analyze: {m.group(0) if m else 'no line'}; json guessed_nodes {n}")


def dilated():
    """The cost model counts the (output, tap) pairs that read the input."""
    if not check.selected("dilated conv"):
        return
    import numpy as np
    from onnx import TensorProto
    from onnx import helper
    est = {}
    for dil in (1, 12):
        w = helper.make_tensor("w", TensorProto.FLOAT, [64, 128, 3, 3], np.zeros(64 * 128 * 9, np.float32))
        node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[dil] * 4, dilations=[dil, dil])
        path = os.path.join(args.work, f"dilated{dil}.onnx")
        seamtest.save_model(path, [node], [seamtest.vi("x", [1, 128, 20, 20])], [seamtest.vi("y", None)], [w])
        r = run("analyze", path, "--target", "dnnl", env=dict(ENV, SEAM_COST_RATES="off"))
        m = re.search(r"all on the CPU ([0-9.]+) us", r.stdout)
        if not check.expect(m, f"dilated conv: analyze gives an estimate (dilation {dil})", last(r)):
            return
        est[dil] = float(m.group(1))
    ratio = est[12] / est[1]
    check.expect(0.33 <= ratio <= 0.40, f"dilated conv: estimated at {ratio:.2f} of the undilated conv (0.36 of the "
                 "pairs read the input)", f"{est[12]:.1f} us against {est[1]:.1f} us")


def bad_files():
    if not check.selected("bad files"):
        return
    keep = open(FILE).read() if os.path.exists(FILE) else None
    r = run("calibrate", M["resnet18"], "--repeat", "2", "--no-save", env=ENV)
    check.expect(r.returncode == 0 and (open(FILE).read() if os.path.exists(FILE) else None) == keep,
                 "--no-save leaves the cache file as it was", last(r))
    for label, text, want in (("not JSON", "{ this is not json", "unreadable"),
                              ("a negative rate", None, "not a positive number")):
        if text is None:
            me = json.loads(keep)["machines"] if keep else []
            for e in me:
                if e["machine"] != FOREIGN["machine"]:
                    e["rates"]["gemm_macs_per_us"] = -5.0
            text = json.dumps({"version": 1, "machines": me})
        with open(FILE, "w") as f:
            f.write(text)
        r, line = rates_line(M["mobilenet_v2"])
        check.expect(r.returncode == 0 and "built-in guesses" in line and want in line,
                     f"a cache file with {label}: the guesses, and why", line or last(r))
    if keep is not None:
        with open(FILE, "w") as f:
            f.write(keep)


shutil.rmtree(CACHE, ignore_errors=True)
usage()
guessed()
dilated()
if calibrate():
    believable()
    bad_files()
check.finish()
