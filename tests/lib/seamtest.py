"""What seam's Python checkers (tests/checks/*.py) share: running a program,
collecting failures, selecting cases with -k, loading outputs, the relative
error, and writing small ONNX models.

A checker finds this module from its own path, so that it runs the same from
ctest, from another folder or by hand:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    import seamtest

and starts with

    p = seamtest.arg_parser(__doc__)
    p.add_argument("seam") ...
    args = p.parse_args()
    check = seamtest.Checker("name", args.k)

Every check then goes through check.fail / check.expect, every case through
check.selected(NAME), and the script ends with check.finish(summary).
"""
import argparse
import fnmatch
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# the floor of the scale in rel_err, so that an all-zero reference does not
# divide by zero
TINY = 1e-6


def arg_parser(doc):
    """An argument parser with the checker's docstring as its help and -k."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-k", action="append", default=[], metavar="PATTERN",
                   help="run only the cases whose name contains PATTERN, or matches it when it holds * ? or [ "
                        "(a shell pattern); may be given several times. A PATTERN that selects nothing is an error.")
    return p


def checker_setup(doc, title, timeout=None, models=False):
    """The start of a checker run as `CHECKER SEAM WORKDIR [MODELS_DIR]`:
    parses the arguments (with -k), makes WORKDIR, and returns (args,
    Program(SEAM), WORKDIR, Checker)."""
    p = arg_parser(doc)
    p.add_argument("seam", metavar="SEAM")
    p.add_argument("work", metavar="WORKDIR")
    if models:
        p.add_argument("models", metavar="MODELS_DIR", nargs="?")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    return args, Program(args.seam, timeout=timeout), args.work, Checker(title, args.k)


class Checker:
    """Selects cases (-k) and collects failures for one checker script."""

    def __init__(self, title, patterns=()):
        self.title = title
        self.patterns = list(patterns or ())
        self.failures = []
        self.seen = []   # every case name offered to selected(), in order
        self.ran = 0     # how many of them were selected

    @property
    def everything(self):
        """True without -k: checks over the whole run (coverage counts) apply."""
        return not self.patterns

    def matches(self, name):
        """Whether -k selects the case NAME (always, without -k)."""
        if not self.patterns:
            return True
        return any(fnmatch.fnmatchcase(name, p) if any(c in p for c in "*?[") else p in name
                   for p in self.patterns)

    def selected(self, name, needed_by=()):
        """Whether to run the case NAME: -k selects it, or one of the cases
        in needed_by, which use what this one leaves in the work folder."""
        self.seen.append(name)
        if self.matches(name) or any(self.matches(n) for n in needed_by):
            self.ran += 1
            return True
        return False

    def fail(self, what):
        print("FAIL", what, flush=True)
        self.failures.append(what)

    def ok(self, what):
        print("ok  ", what, flush=True)

    def expect(self, cond, what, detail=None):
        """Prints ok or FAIL for what (with detail on a failure); a failure
        is kept. Returns cond."""
        if cond:
            self.ok(what)
        else:
            self.fail(f"{what}: {detail}" if detail is not None else what)
        return bool(cond)

    def finish(self, summary=None):
        """Prints the failures again and a summary line, and exits: 0 when all
        passed, 1 on a failure, 2 when -k selected no case."""
        if self.patterns and not self.ran:
            print(f"{self.title}: no case matches -k {' -k '.join(self.patterns)}; the cases are:")
            for name in self.seen:
                print("  ", name)
            sys.exit(2)
        if self.failures:
            print(f"{self.title}: {len(self.failures)} failures:")
            for f in self.failures:
                print("  FAIL", f)
        if summary:
            print(f"{self.title}: {summary}")
        if not self.everything:
            print(f"{self.title}: {self.ran} of {len(self.seen)} cases selected by -k")
        print(f"{self.title}: {'FAILED' if self.failures else 'passed'}")
        sys.exit(1 if self.failures else 0)


class Program:
    """A program to run with arguments; calling it returns the
    CompletedProcess with stdout and stderr captured as text."""

    def __init__(self, path, timeout=None):
        self.path, self.timeout = path, timeout

    def __call__(self, *args, env=None, timeout=None):
        return subprocess.run([self.path, *map(str, args)], capture_output=True, text=True, env=env,
                              timeout=timeout if timeout is not None else self.timeout)


def rel_err(got, want):
    """max|got - want| / max(max|want|, TINY), in float64; 0 for empty tensors."""
    if not want.size:
        return 0.0
    scale = max(float(np.abs(want).max()), TINY)
    return float(np.abs(got.astype(np.float64) - want).max()) / scale


def output_file(out_dir, name):
    """Where `seam run --output-dir` writes output NAME: the characters
    other than letters, digits and ._- become _, as tools/cli/run.c does."""
    s = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    return os.path.join(out_dir, (s if s not in ("", ".", "..") else "output") + ".npy")


def load_outputs(model, out_dir):
    """The graph outputs of model (a path or a ModelProto) as written by
    `seam run --output-dir out_dir`, in the graph's order."""
    m = onnx.load(model, load_external_data=False) if isinstance(model, str) else model
    return [np.load(output_file(out_dir, o.name)) for o in m.graph.output]


def feeds(model):
    """The graph inputs of a ModelProto that are not initializers."""
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def has_symbolic_dims(value_info):
    return any(not d.HasField("dim_value") for d in value_info.type.tensor_type.shape.dim)


def shape_arg(shape):
    """A shape as seam's --shape takes it: 2x3x224."""
    return "x".join(str(d) for d in shape)


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def initializers(arrays):
    """{name: array-like} as initializers: integer arrays keep their type,
    everything else becomes float32."""
    out = []
    for name, v in arrays.items():
        a = np.asarray(v)
        out.append(numpy_helper.from_array(a if a.dtype.kind in "iu" else np.asarray(v, np.float32), name))
    return out


def make_model(nodes, inputs, outputs, inits=(), value_info=(), name="g", opset=13, domains=()):
    """A model of one graph; inits are TensorProtos, domains extra
    (domain, version) opsets."""
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits), value_info=list(value_info))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] +
                             [helper.make_opsetid(d, v) for d, v in domains])


def save_model(path, *args, **kw):
    """make_model(*args, **kw) saved at path; returns path."""
    onnx.save(make_model(*args, **kw), path)
    return path
