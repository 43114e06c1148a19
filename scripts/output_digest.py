#!/usr/bin/env python3
"""Digests of seam's outputs, for checking that a refactor changed nothing.

    /usr/bin/python3 scripts/output_digest.py SEAM DIR... > before.txt
    (change, rebuild)
    /usr/bin/python3 scripts/output_digest.py SEAM DIR... > after.txt
    diff before.txt after.txt

Runs every DIR/X.onnx whose inputs are in DIR/X.<input>.npy (or, for the
test models, DIR/X.input.npy for the first input) on the CPU, on dnnl, on dnnl with fusion=off, and partitioned for dnnl,
saved (`partition -o`) and reloaded, and prints one line per model and
mode: the sha256 of every output's bytes, or the exit status and first
error line; then one line per model for the plan (`partition --target dnnl
--json`) and the rules plan (`--target tests/targets/neuron_like.json` when
present), the sha256 of the JSON text.
"""
import glob, hashlib, os, subprocess, sys, tempfile

import onnx

MODES = {"cpu": [], "dnnl": ["--target", "dnnl"], "dnnl-nofuse": ["--target", "dnnl", "--target-option", "fusion=off"]}


def feeds(path):
    base = path[:-5]
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    args = []
    for k, i in enumerate(x for x in m.graph.input if x.name not in inits):
        f = f"{base}.{i.name}.npy"
        if not os.path.exists(f) and k == 0:
            f = f"{base}.input.npy"
        if not os.path.exists(f):
            return None
        args += ["--input", f"{i.name}={f}"]
    return args


def digest_dir(out):
    h = hashlib.sha256()
    for f in sorted(os.listdir(out)):
        h.update(f.encode())
        with open(os.path.join(out, f), "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:16]


def run(seam, name, mode, args):
    r = subprocess.run([seam, *args], capture_output=True, text=True, timeout=600)
    if r.returncode:
        line = (r.stderr.strip().splitlines() or [""])[0]
        print(f"{name} {mode} exit {r.returncode}: {line}", flush=True)
        return None
    return r


def main():
    seam, dirs = sys.argv[1], sys.argv[2:]
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.onnx"))):
            ins = feeds(path)
            if ins is None:
                continue
            name = os.path.basename(path)
            for mode, extra in MODES.items():
                with tempfile.TemporaryDirectory() as out:
                    if run(seam, name, mode, ["run", path, *ins, *extra, "--threads", "2", "--output-dir", out]):
                        print(f"{name} {mode} {digest_dir(out)}", flush=True)
            with tempfile.TemporaryDirectory() as out:
                saved = os.path.join(out, "saved.onnx")
                res = os.path.join(out, "res")
                os.mkdir(res)
                if run(seam, name, "saved", ["partition", path, "--target", "dnnl", "-o", saved]) and \
                        run(seam, name, "saved", ["run", saved, *ins, "--threads", "2", "--output-dir", res]):
                    print(f"{name} saved {digest_dir(res)}", flush=True)
            rules = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "targets", "neuron_like.json")
            plans = {"plan-dnnl": ["--target", "dnnl"]}
            if os.path.exists(rules):
                plans["plan-rules"] = ["--target", rules]
            for mode, extra in plans.items():
                r = run(seam, name, mode, ["partition", path, *extra, "--json"])
                if r:
                    print(f"{name} {mode} {hashlib.sha256(r.stdout.encode()).hexdigest()[:16]}", flush=True)


if __name__ == "__main__":
    main()
