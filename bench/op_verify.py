"""Re-times the worst rows of saved bench/op_bench.py runs, to tell a slow
kernel from a disturbed measurement.

usage: /usr/bin/python3 bench/op_verify.py RUN.json[:WORKDIR]... [--top 25] [--rounds 3]
           [--seam build/seam] [--threads 2]

Takes the --top worst cases (max of cpu/ORT and dnnl/ORT on the minima,
overhead class excluded) over the runs and times each again, the sides
alternating, --rounds rounds: ONNX Runtime, seam cpu, seam dnnl with the
CLI's OpenMP policy (ACTIVE: threads spin between primitives), and seam
dnnl with OMP_WAIT_POLICY=PASSIVE (threads sleep: no spinning thread
waits a scheduler tick for a descheduled one, but each primitive pays a
wake-up). Each side keeps its best median. Prints a markdown table.
"""
import argparse
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import op_bench  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seam", default=os.path.join(HERE, "..", "build", "seam"))
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    a.seam = os.path.abspath(a.seam)
    rows = []
    for spec in a.runs:
        path, _, work = spec.partition(":")
        cases, results, stats, floors = op_bench.from_json(a, [path])
        work = work or json.load(open(path))["args"]["work"]
        _, rr = op_bench.report(a, cases, results, stats, None, floors)
        for rw in rr:
            if not rw["overhead"]:
                rw["work"] = work
                rw["repeat"] = results[rw["key"]]["repeat"]
                rows.append(rw)

    def worst(rw):
        return max(rw["cpu_rm"] or 0, rw["dnnl_rm"] or 0)

    rows.sort(key=worst, reverse=True)
    rows = rows[:a.top]
    ort = op_bench.Ort(a.threads)
    best = {}
    for rnd in range(a.rounds):
        for rw in rows:
            d = os.path.join(rw["work"], rw["id"])
            model = os.path.join(d, "model.onnx")
            feeds = {os.path.basename(f)[:-4]: f for f in sorted(glob.glob(os.path.join(d, "in*.npy")))}
            rep = max(rw["repeat"], 20)
            b = best.setdefault(rw["id"], {})
            o = ort.time(model, feeds, rep)
            if o.get("median_ms") is not None:
                b["ort"] = min(b.get("ort", 1e18), o["median_ms"] * 1000)
            for side, dnnl, env in (("cpu", False, {}), ("active", True, {}),
                                    ("passive", True, {"OMP_WAIT_POLICY": "PASSIVE"})):
                if dnnl and rw["dnnl"] is None:
                    continue
                rc, out, err = op_bench.run(op_bench.seam_cmd(a, model, feeds, dnnl, rep, ["--quiet"]),
                                            dict(os.environ, **env))
                m = op_bench.MEDIAN_RE.search(out + err)
                if m:
                    b[side] = min(b.get(side, 1e18), float(m.group(1)) * 1000)
    ort.close()
    print("| op | shape class | bench: cpu/ORT, dnnl/ORT (minima) | again: ORT us | seam cpu us | dnnl us (ACTIVE) | "
          "dnnl us (PASSIVE) | cpu/ORT | dnnl/ORT (best of the two) | dnnl impl |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
    for rw in rows:
        b = best.get(rw["id"], {})
        o = b.get("ort")
        dn = min([x for x in (b.get("active"), b.get("passive")) if x is not None], default=None)
        cr = op_bench.ratio(b.get("cpu"), o)
        dr = op_bench.ratio(dn, o)
        impl = ("**REF** " if rw["refs"] else "") + (rw["impl"] or "not taken")
        print(f"| {rw['op']} | {rw['shape'][:70]} | {rw['cpu_rm'] or 0:.2f}, {rw['dnnl_rm'] or 0:.2f} | "
              f"{op_bench.fmt(o)} | {op_bench.fmt(b.get('cpu'))} | {op_bench.fmt(b.get('active'))} | "
              f"{op_bench.fmt(b.get('passive'))} | {f'{cr:.2f}' if cr else '-'} | {f'{dr:.2f}' if dr else '-'} | "
              f"{impl[:60]} |")


if __name__ == "__main__":
    main()
