#!/usr/bin/env python3
"""Digests of seam's outputs, for checking that a refactor changed nothing.

    /usr/bin/python3 scripts/output_digest.py SEAM DIR... > before.txt
    (change, rebuild)
    /usr/bin/python3 scripts/output_digest.py SEAM DIR... > after.txt
    diff before.txt after.txt

Runs every DIR/X.onnx whose inputs are in DIR/X.<input>.npy (or, for the
test models, DIR/X.input.npy for the first input) on the CPU, on dnnl, and
on dnnl with fusion=off, and prints one line per model and mode: the
sha256 of every output's bytes, or the exit status and first error line.
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


def main():
    seam, dirs = sys.argv[1], sys.argv[2:]
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.onnx"))):
            ins = feeds(path)
            if ins is None:
                continue
            for mode, extra in MODES.items():
                with tempfile.TemporaryDirectory() as out:
                    r = subprocess.run([seam, "run", path, *ins, *extra, "--threads", "2", "--output-dir", out],
                                       capture_output=True, text=True, timeout=600)
                    if r.returncode:
                        line = (r.stderr.strip().splitlines() or [""])[0]
                        print(f"{os.path.basename(path)} {mode} exit {r.returncode}: {line}")
                        continue
                    h = hashlib.sha256()
                    for f in sorted(os.listdir(out)):
                        h.update(f.encode())
                        with open(os.path.join(out, f), "rb") as fh:
                            h.update(fh.read())
                    print(f"{os.path.basename(path)} {mode} {h.hexdigest()[:16]}", flush=True)


if __name__ == "__main__":
    main()
