"""Mutation smoke for seam's test suite (issue 35: "a test that cannot fail
is a defect"). Plants a fixed list of small, realistic bugs, one at a
time, in a scratch copy of the tree, builds, runs the ctest tests named
for that bug and reports which bugs the suite catches.

Not part of the test command (too slow): run it before resolving an issue
about the tests, and after large refactors. The list below is exact text:
a mutation whose old text no longer occurs exactly once in its file stops
the run before anything is built, so the list moves with the code.

How it works:
  1. A scratch git worktree of REV (default HEAD; uncommitted changes are
     not in it) is made with `git worktree add --detach`, under a temporary
     folder or at --tree. The user's working tree and build folders are
     never touched; --tree and --build inside the source tree are refused.
     A --tree that exists is reused only if this tool made it (a marker in
     its git folder); it is reset to REV first.
  2. ONE build folder (--build, default TREE/build) is configured
     RelWithDebInfo with SEAM_MODELS_DIR at an existing models cache
     (--models, default SOURCE/build/models, else the main worktree's
     build/models) and built.
  3. Baseline: every test any selected mutation names runs once on the
     unmutated tree. A test failing there cannot catch anything: it is
     reported and its later failures are ignored.
  4. For each mutation: the text is replaced in the scratch tree, the tree
     built incrementally, `ctest -R '^(a|b|...)$'` run (the fixtures they
     require run too) under --timeout, the file restored. ctest starts no
     more tests after the first failure (--stop-on-failure) unless --all
     is given (or a test failed at baseline); then the table names every
     test that failed ("+N more"). Result: caught
     (a test failed that passed at baseline), missed (all passed), broken
     (the mutation did not build: not caught), timeout (the tests ran past
     --timeout with nothing failed yet).
  5. A table: mutation, layer, what it breaks, tests run, result, the first
     failing test, seconds (build + tests). --markdown writes it as a
     Markdown table. Each mutation's build and ctest output is kept in
     BUILD/mutation-smoke/NAME.log.

Exit status: 0 when every mutation run is caught, 1 otherwise, 2 for a
usage or setup error (a mutation's text not found, the unmutated tree does
not build, a named test does not exist) or a run stopped by SIGINT, SIGTERM
or SIGHUP (the planted file is restored; --markdown holds the rows done).

How long (2 shared cores, load 2-7, 2026-11-28): a fresh scratch build
1-5 minutes; the baseline (38 tests) 17-22 minutes; each mutation 25-420
s (an incremental build, then its tests: a caught one stops early, a
missed one runs them all); the 15 mutations 50 minutes, about 75 with the
baseline and the build. Reuse --tree and --build to skip the first build
next time; --only runs some mutations, --no-baseline skips step 3.

usage: /usr/bin/python3 bench/mutation_smoke.py [--tree DIR] [--build DIR] [--models DIR]
           [--only NAME ...] [--list] [--markdown OUT.md] [-j N] [--timeout S] [--rev REV]
           [--no-baseline] [--keep] [--all]
"""
import argparse
import dataclasses
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MARKER = "seam-mutation-smoke"  # in a scratch worktree's own git folder


@dataclasses.dataclass(frozen=True)
class Mutation:
    name: str
    layer: str
    breaks: str  # what the bug breaks, for the table
    path: str  # relative to the tree's root
    old: str  # must occur exactly once in path
    new: str
    tests: tuple  # ctest names, run with -R '^(a|b)$'


# Tests that run seam's whole pipeline on many models or ops, named below
# where an area's bug could reach them.
E2E_CPU = ("run_real_models", "conformance_node")

MUTATIONS = [
    Mutation(
        "dyncache", "runtime",
        "the Subgraph runner's shape signature ignores the last dim of the last input, so a variant compiled "
        "for one shape is reused for another that differs only there",
        "src/runtime/subgraph.c",
        "        for (int32_t d = 0; d < x->rank; d++) q[n++] = x->dims[d];\n",
        "        for (int32_t d = 0; d < x->rank - (i == n_in - 1); d++) q[n++] = x->dims[d];\n",
        ("unit_runtime", "dynamic_shapes", "dynamic_batch", "unit_backend", "dnnl_rebind"),
    ),
    Mutation(
        "conv_pads", "ops",
        "Conv (and pool) shape inference computes (in + 2 pad_begin - window) / stride + 1: end pads taken "
        "equal to begin pads (the kernels keep the right geometry)",
        "src/ops/conv_geom.c",
        "    for (int32_t d = 0; d < n_sp; d++) out[d] = g.out[d] >= 0 ? (ir_dim){g.out[d], NULL} : IR_DIM_UNKNOWN;\n",
        "    for (int32_t d = 0; d < n_sp; d++) { /* (in + 2 pad - window) / stride + 1 */\n"
        "        int64_t o = ceil_mode ? g.out[d]\n"
        "                              : (g.in[d] + 2 * g.pad_lo[d] - (g.kernel[d] - 1) * g.dil[d] - 1) / g.stride[d] + 1;\n"
        "        out[d] = g.out[d] >= 0 ? (ir_dim){o, NULL} : IR_DIM_UNKNOWN;\n"
        "    }\n",
        ("escapes", "infer_node_tests", "infer_real_models", "cpu_kernels", "dnnl_conv",
         "cpudw_model_shapes", "wino_model_shapes"),
    ),
    Mutation(
        "callback_order", "partition",
        "seam_partition_by_callback puts each subgraph's nodes in file order, not topological order",
        "src/partition/assign.c",
        "        int32_t i = g->topo[q];\n        if (pid[i] < 0) continue;\n        int32_t r = pos[pid[i]];\n",
        "        int32_t i = q;\n        if (pid[i] < 0) continue;\n        int32_t r = pos[pid[i]];\n",
        ("unit_partition", "partition_models"),
    ),
    Mutation(
        "softmax_nomax", "backends/cpu",
        "the CPU's float32 Softmax/LogSoftmax fast path skips the max subtraction (exp overflows on large "
        "logits)",
        "src/backends/cpu/activation.c",
        "    if (nan || !(mx > -INFINITY && mx < INFINITY)) return false;\n",
        "    if (nan || !(mx > -INFINITY && mx < INFINITY)) return false;\n    mx = 0; /* logits are small: no max */\n",
        ("cpu_kernels", "escapes", "cpu_post", "conformance_node"),
    ),
    Mutation(
        "cost_transfer", "partition",
        "the cost model's transfer term is 1000x too small (GB/s read as bytes per ns * 1e3 too many)",
        "src/partition/cost.c",
        "1.0 / (gbps * 1e3)",
        "1.0 / (gbps * 1e6)",
        ("unit_partition", "partition_models"),
    ),
    Mutation(
        "cpu_first", "partition",
        "grouping's CPU-first rule never fires (== for !=): a device wave is taken while CPU nodes are ready",
        "src/partition/group.c",
        "    if (cur != cpu && qhead[cpu] < qtail[cpu]) return cpu;\n",
        "    if (cur == cpu && qhead[cpu] < qtail[cpu]) return cpu;\n",
        ("unit_partition", "partition_models"),
    ),
    Mutation(
        "relu_nan", "backends/cpu",
        "the CPU's float32 Relu writes NaN at index 7 of outputs over 1000 elements",
        "src/backends/cpu/activation.c",
        "            for (int64_t i = begin; i < end; i++) y[i] = x[i] < 0 ? 0 : x[i]; /* NaN stays NaN */\n",
        "            for (int64_t i = begin; i < end; i++) y[i] = x[i] < 0 ? 0 : x[i]; /* NaN stays NaN */\n"
        "            if (j->x->numel > 1000 && begin <= 7 && 7 < end) y[7] = NAN;\n",
        ("cpu_kernels", "cpu_fusion", "escapes", "run_real_models", "conformance_node"),
    ),
    Mutation(
        "pool_last_chunk", "core",
        "seam_parallel_for rounds the chunk count down: the last, partial chunk of a loop is never run",
        "src/core/pool.c",
        "    int64_t n_chunks = (n + chunk - 1) / chunk;\n    if (n_chunks > UINT32_MAX / 2) {",
        "    int64_t n_chunks = n / chunk;\n    if (n_chunks > UINT32_MAX / 2) {",
        ("unit_threads", "unit_pool_steps", "cpu_kernels", "cpu_rnn", "run_real_models", "conformance_node"),
    ),
    Mutation(
        "ir_selfloop", "ir",
        "linking sees a node that reads its own output as already sorted (> for >=): the one-node cycle is "
        "never reported",
        "src/ir/graph.c",
        "            if (val->producer >= i) sorted = false;\n",
        "            if (val->producer > i) sorted = false;\n",
        ("unit_ir", "malformed_inputs", "roundtrip_testdata", "conformance_node"),
    ),
    Mutation(
        "ext_offset", "onnx",
        "the loader reads external data from the file's start, ignoring its offset",
        "src/onnx/external.c",
        "(off_t)(offset + (int64_t)got)",
        "(off_t)got",
        ("roundtrip_coverage", "roundtrip_coverage_external", "malformed_inputs", "load_stream", "load_scale2"),
    ),
    Mutation(
        "axis_bound", "ops",
        "the op layer's axis check accepts axis == rank (the upper bound off by one)",
        "src/ops/validate.c",
        "    int64_t hi = rank - 1 + r->extra, lo = -(int64_t)rank - (onehot ? 1 : 0);\n",
        "    int64_t hi = rank + r->extra, lo = -(int64_t)rank - (onehot ? 1 : 0);\n",
        ("malformed_inputs", "infer_node_tests", "conformance_node"),
    ),
    Mutation(
        "plan_touch", "runtime",
        "the memory planner lets two values whose lifetimes touch (one's last use is the other's producer) "
        "share bytes (<= for <)",
        "src/runtime/plan_memory.c",
        "            if (items[j].last < items[i].first || items[i].last < items[j].first) continue;\n",
        "            if (items[j].last <= items[i].first || items[i].last <= items[j].first) continue;\n",
        ("cpu_kernels", "cpu_fusion", "unit_threads", "run_real_models", "conformance_node"),
    ),
    Mutation(
        "gemm_transb", "backends/cpu",
        "the CPU Gemm's BLAS path (small or float64 Gemms) ignores transB",
        "src/backends/cpu/linalg.c",
        "    cpu_blas_gemm_post(k->pool, f64, ta, tb, M, N, K, alpha, va.p, ta ? M : K, vb.p, tb ? K : N, cb, vy.p, N,",
        "    cpu_blas_gemm_post(k->pool, f64, ta, false, M, N, K, alpha, va.p, ta ? M : K, vb.p, N, cb, vy.p, N,",
        ("cpu_kernels", "cpugemm2", "gemm2", "run_real_models", "conformance_node"),
    ),
    Mutation(
        "dnnl_clip", "backends/dnnl",
        "a fused post-op chain drops the clip to [0, 1] after a HardSigmoid's linear step",
        "src/backends/dnnl/fuse.c",
        "            if (c->clip01[k]) dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip_v2, 0.0f, 1.0f), at++;\n",
        "",
        ("dnnl_eff", "dnnl_ops", "dnnl_ops2", "dnnl_conv", "dnnl_backend"),
    ),
    Mutation(
        "report_devcount", "report",
        "the HTML page's count of device subgraphs skips the first subgraph",
        "src/report/html.c",
        "    for (int32_t s = 0; s < r->n_subgraphs; s++) n_dev += r->subgraphs[s].device;\n",
        "    for (int32_t s = 1; s < r->n_subgraphs; s++) n_dev += r->subgraphs[s].device;\n",
        ("report_views",),
    ),
]


class SetupError(Exception):
    """Something that stops the run before or between mutations (exit 2)."""


def log_say(msg):
    print(msg, file=sys.stderr, flush=True)


def git(cwd, *args, check=True):
    r = subprocess.run(["git", "-C", cwd, *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise SetupError(f"git {' '.join(args)} (in {cwd}) failed: {r.stderr.strip()}")
    return r.stdout.strip()


def inside(path, root):
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")


def text_problems(muts, read):
    """Mutations whose old text does not occur exactly once (read(path)
    gives a file's text, or None when it is missing)."""
    problems = []
    for m in muts:
        text = read(m.path)
        if text is None:
            problems.append(f"{m.name}: {m.path} does not exist")
            continue
        k = text.count(m.old)
        if k != 1:
            problems.append(f"{m.name}: the old text occurs {k} times in {m.path} (must be once): {m.old.strip()[:100]!r}")
    return problems


def run_logged(cmd, log, timeout=None, cwd=None):
    """Runs cmd in its own process group, its output going to log as it
    comes (tail the log to watch). Returns (returncode, or None when it ran
    past timeout and was killed; the output text)."""
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    start = log.tell()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        rc = None
    except BaseException:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise
    log.seek(0, os.SEEK_END)
    with open(log.name, errors="replace") as f:
        f.seek(start)
        out = f.read()
    log.write(f"[exit {rc}]\n")
    log.flush()
    return rc, out


def prepare_tree(repo, tree, rev):
    """The scratch worktree at rev: made at tree, or reused when this tool
    made it. Returns its path."""
    sha = git(repo, "rev-parse", "--verify", rev + "^{commit}")
    if os.path.exists(tree):
        gd = git(tree, "rev-parse", "--absolute-git-dir", check=False)
        if not gd or not os.path.exists(os.path.join(gd, MARKER)):
            raise SetupError(f"{tree} exists and is not a scratch tree made by this tool; name a new folder")
        git(tree, "checkout", "--quiet", "--detach", "--force", sha)
        git(tree, "clean", "--quiet", "-fd")  # untracked files, not ignored ones (the build)
    else:
        os.makedirs(os.path.dirname(os.path.abspath(tree)), exist_ok=True)
        git(repo, "worktree", "prune")  # a scratch tree deleted by hand is still registered
        git(repo, "worktree", "add", "--quiet", "--detach", tree, sha)
        gd = git(tree, "rev-parse", "--absolute-git-dir")
        with open(os.path.join(gd, MARKER), "w") as f:
            f.write("made by bench/mutation_smoke.py\n")
    return sha


def default_models(repo):
    """SOURCE/build/models, else the main worktree's build/models, else None."""
    cand = [os.path.join(repo, "build", "models")]
    common = git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir", check=False)
    if common and os.path.basename(common) == ".git":
        cand.append(os.path.join(os.path.dirname(common), "build", "models"))
    for c in cand:
        if os.path.isdir(c):
            return c
    return None


def ctest_names(build):
    r = subprocess.run(["ctest", "--test-dir", build, "-N"], capture_output=True, text=True)
    return set(re.findall(r"Test\s+#\d+: (\S+)", r.stdout))


PROGRESS = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) \.*\s*(.*?)\s+[\d.]+ sec\s*$")


def run_tests(build, tests, jobs, timeout, log, stop_on_failure=False):
    """Runs the tests (and the fixtures they need). Returns (statuses in
    completion order as [(name, status)], timed_out)."""
    regex = "^(" + "|".join(re.escape(t) for t in tests) + ")$"
    cmd = ["ctest", "--test-dir", build, "-R", regex, "-j", str(jobs), "--output-on-failure", "--no-tests=error"]
    rc, out = run_logged(cmd + (["--stop-on-failure"] if stop_on_failure else []), log, timeout=timeout)
    done = []
    for line in out.splitlines():
        m = PROGRESS.match(line)
        if m:
            status = m.group(2).strip().lstrip("*").strip()
            done.append((m.group(1), "Passed" if status == "Passed" else status or "Failed"))
    if rc not in (0, None) and not any(s != "Passed" for _, s in done):
        done.append(("ctest", f"exit {rc}"))  # failed without a test line we could read
    return done, rc is None


def fmt_table(rows, markdown):
    head = ["mutation", "layer", "what it breaks", "tests run", "result", "first failing test", "s"]
    if markdown:
        esc = [[str(c).replace("|", "\\|") for c in r] for r in rows]
        return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] +
                         ["| " + " | ".join(r) + " |" for r in esc]) + "\n"
    # plain: the long columns last would wrap anyway; keep them whole
    widths = [max(len(str(r[k])) for r in [head] + rows) for k in range(len(head))]
    order = [0, 1, 4, 5, 6, 3, 2]
    lines = []
    for r in [head] + rows:
        lines.append("  ".join(str(r[k]).ljust(widths[k]) if k not in (2,) else str(r[k]) for k in order).rstrip())
    return "\n".join(lines) + "\n"


def write_markdown(path, rows, n_total, sha):
    n_caught = sum(r[4] == "caught" for r in rows)
    with open(path, "w") as f:
        f.write(fmt_table(rows, True))
        f.write(f"\n{n_caught} of {len(rows)} mutations caught (commit {sha[:12]})"
                + (f"; stopped after {len(rows)} of {n_total}" if len(rows) < n_total else "") + ".\n")


class Stopped(Exception):
    """SIGTERM or SIGHUP: raised so that the planted file is restored."""


def on_signal(signum, frame):
    raise Stopped(f"stopped by signal {signum}")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="See the top of bench/mutation_smoke.py for what it does and how long it takes.")
    p.add_argument("--tree", help="the scratch worktree (made if missing, kept); default: a temporary one, removed")
    p.add_argument("--build", help="the one build folder; default TREE/build")
    p.add_argument("--models", help="an existing models cache for SEAM_MODELS_DIR; default SOURCE/build/models")
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutations")
    p.add_argument("--list", action="store_true", help="list the mutations, check their text at REV, run nothing")
    p.add_argument("--markdown", metavar="OUT.md", help="also write the table as Markdown")
    p.add_argument("-j", type=int, default=2, help="build and ctest parallelism (default 2)")
    p.add_argument("--timeout", type=int, default=2400, help="seconds for one mutation's tests (default 2400)")
    p.add_argument("--all", action="store_true",
                   help="run every named test of a mutation (default: stop starting tests at its first failure)")
    p.add_argument("--rev", default="HEAD", help="the commit to mutate (default HEAD)")
    p.add_argument("--no-baseline", action="store_true", help="skip the run of the tests on the unmutated tree")
    p.add_argument("--keep", action="store_true", help="keep a temporary scratch tree (its path is printed)")
    return p.parse_args()


def select(args):
    by_name = {m.name: m for m in MUTATIONS}
    if len(by_name) != len(MUTATIONS):
        raise SetupError("two mutations share a name")
    if not args.only:
        return list(MUTATIONS)
    unknown = [n for n in args.only if n not in by_name]
    if unknown:
        raise SetupError(f"unknown mutation(s) {', '.join(unknown)}; known: {', '.join(by_name)}")
    return [by_name[n] for n in args.only]


def list_mutations(repo, rev, muts):
    def read(path):
        r = subprocess.run(["git", "-C", repo, "show", f"{rev}:{path}"], capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else None

    for m in muts:
        print(f"{m.name} ({m.layer}, {m.path}): {m.breaks}\n    tests: {', '.join(m.tests)}")
    problems = text_problems(muts, read)
    for p in problems:
        log_say(f"mutation_smoke: {p}")
    return 2 if problems else 0


def main():
    args = parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    repo = git(here, "rev-parse", "--show-toplevel")
    muts = select(args)
    if args.list:
        return list_mutations(repo, args.rev, muts)

    tmp = None
    tree = os.path.abspath(args.tree) if args.tree else None
    if tree is None:
        tmp = tempfile.mkdtemp(prefix="seam-mutation-")
        tree = os.path.join(tmp, "tree")
    build = os.path.abspath(args.build) if args.build else os.path.join(tree, "build")
    for what, path in (("--tree", tree), ("--build", build)):
        if inside(path, repo) or (inside(repo, path)):
            raise SetupError(f"{what} {path} is inside (or holds) the source tree {repo}; name a folder outside it")
    models = os.path.abspath(args.models) if args.models else default_models(repo)
    if args.models and not os.path.isdir(models):
        raise SetupError(f"--models {models} is not a folder")
    if models and (inside(build, models) or inside(models, tree)):
        raise SetupError(f"the models cache {models} must be outside the scratch tree and build")
    if not models:
        models = os.path.join(build, "models")
        log_say(f"mutation_smoke: no models cache found; gen_models will export them into {models}")

    log_dir = os.path.join(build, "mutation-smoke")
    restore = None  # (path, original text) while a mutation is planted
    try:
        sha = prepare_tree(repo, tree, args.rev)
        log_say(f"mutation_smoke: scratch tree {tree} at {sha[:12]}, build {build}, models {models}")

        def read(path):
            full = os.path.join(tree, path)
            if not os.path.exists(full):
                return None
            with open(full) as f:
                return f.read()

        problems = text_problems(muts, read)
        if problems:
            raise SetupError("the list no longer matches the code:\n  " + "\n  ".join(problems))
        os.makedirs(log_dir, exist_ok=True)

        with open(os.path.join(log_dir, "setup.log"), "w") as log:
            t0 = time.time()
            rc, _ = run_logged(["cmake", "-S", tree, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                                f"-DSEAM_MODELS_DIR={models}"], log)
            if rc == 0:
                rc, _ = run_logged(["cmake", "--build", build, "-j", str(args.j)], log)
            if rc != 0:
                raise SetupError(f"the unmutated tree does not configure or build; see {log.name}")
            log_say(f"mutation_smoke: built in {time.time() - t0:.0f} s")
        known = ctest_names(build)
        missing = sorted({t for m in muts for t in m.tests} - known)
        if missing:
            raise SetupError(f"tests named in the list that ctest does not have: {', '.join(missing)}")

        base_failing = set()
        if not args.no_baseline:
            union = sorted({t for m in muts for t in m.tests})
            t0 = time.time()
            with open(os.path.join(log_dir, "baseline.log"), "w") as log:
                done, timed_out = run_tests(build, union, args.j, args.timeout * 2, log)
            base_failing = {n for n, s in done if s != "Passed"}
            if timed_out:
                raise SetupError(f"the baseline ran past {args.timeout * 2} s; see {log.name}")
            log_say(f"mutation_smoke: baseline: {len(done)} tests in {time.time() - t0:.0f} s"
                    + (f"; FAILING (ignored below): {', '.join(sorted(base_failing))}" if base_failing else ""))

        rows = []
        for idx, m in enumerate(muts, 1):
            full = os.path.join(tree, m.path)
            with open(full) as f:
                original = f.read()
            t0 = time.time()
            with open(os.path.join(log_dir, m.name + ".log"), "w") as log:
                restore = (full, original)
                with open(full, "w") as f:
                    f.write(original.replace(m.old, m.new, 1))
                log_say(f"[{idx}/{len(muts)}] {m.name}: building")
                rc, out = run_logged(["cmake", "--build", build, "-j", str(args.j)], log)
                if rc != 0:
                    errs = [ln for ln in out.splitlines() if "error" in ln]
                    result, first = "broken", (errs[0].strip()[:80] if errs else f"build exit {rc}")
                else:
                    log_say(f"[{idx}/{len(muts)}] {m.name}: running {', '.join(m.tests)}")
                    done, timed_out = run_tests(build, m.tests, args.j, args.timeout, log,
                                                stop_on_failure=not args.all and not base_failing)
                    failed = [(n, s) for n, s in done if s != "Passed" and n not in base_failing]
                    if failed:
                        name, status = failed[0]
                        first = name + (f" ({status})" if status != "Failed" else "")
                        first += f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""
                        result = "caught"
                    elif timed_out:
                        result, first = "timeout", f"over {args.timeout} s"
                    else:
                        result, first = "missed", "-"
                with open(full, "w") as f:
                    f.write(original)
                restore = None
            secs = time.time() - t0
            log_say(f"[{idx}/{len(muts)}] {m.name}: {result} {first} ({secs:.0f} s)")
            rows.append([m.name, m.layer, m.breaks, ", ".join(m.tests), result, first, f"{secs:.0f}"])
            if args.markdown:  # after each mutation: a run stopped half way leaves what it found
                write_markdown(args.markdown, rows, len(muts), sha)
    finally:
        if restore:
            with open(restore[0], "w") as f:
                f.write(restore[1])
        if tmp and not args.keep:
            git(repo, "worktree", "remove", "--force", tree, check=False)
            shutil.rmtree(tmp, ignore_errors=True)
            git(repo, "worktree", "prune", check=False)
        elif tmp:
            log_say(f"mutation_smoke: kept the scratch tree {tree}")

    print(fmt_table(rows, False), end="")
    n_caught = sum(r[4] == "caught" for r in rows)
    print(f"{n_caught} of {len(rows)} mutations caught")
    return 0 if n_caught == len(rows) else 1


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        sys.exit(main())
    except SetupError as e:
        log_say(f"mutation_smoke: {e}")
        sys.exit(2)
    except (Stopped, KeyboardInterrupt) as e:
        log_say(f"mutation_smoke: {e or 'interrupted'}; the planted file was restored")
        sys.exit(2)
