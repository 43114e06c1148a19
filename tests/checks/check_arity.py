"""The op layer's table of input and output counts (src/ops/validate.c,
`arities`) against the operator schemas of the installed onnx package:
for every row, the smallest min_input/min_output and the largest
max_input/max_output over the op's versions must be the row's. Ops newer
than the installed onnx are reported and skipped; inputs that versions newer
than the installed onnx added (NEWER below, from the ONNX spec) are added to
what it says.

usage: /usr/bin/python3 check_arity.py VALIDATE_C [-k OP]
"""
import os
import re
import sys

import onnx.defs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import seamtest  # noqa: E402

p = seamtest.arg_parser(__doc__)
p.add_argument("source", metavar="VALIDATE_C")
args = p.parse_args()
check = seamtest.Checker("arity", args.k)
VARIADIC = 2147483647
# Inputs added by opsets newer than an installed onnx may know: op -> (opset,
# max inputs from then on), from the ONNX operator spec.
NEWER = {"Pad": (18, 4), "DFT": (20, 3)}  # Pad's axes; DFT's axis as an input
NEWER.update({op: (18, 2) for op in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                                     "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSumSquare")})  # axes as input 1

text = open(args.source).read()
table = text[text.index("arities[] = {"):]
table = table[: table.index("};")]
rows = re.findall(r'\{"([^"]*)", "([^"]*)", (\d+), (\d+|V), (\d+), (\d+|V)\}', table)
check.expect(len(rows) > 150, f"the table has {len(rows)} rows")
skipped = []
keys = []
for dom, op, mi, ma, mo, mx in rows:
    keys.append((dom, op))
    if not check.selected(op):
        continue
    want = tuple(VARIADIC if v == "V" else int(v) for v in (mi, ma, mo, mx))
    versions = []
    for v in range(1, onnx.defs.onnx_opset_version() + 1 if not dom else 30):
        try:
            s = onnx.defs.get_schema(op, v, dom)
        except Exception:
            continue
        if all(s.since_version != x.since_version for x in versions):
            versions.append(s)
    if not versions:
        skipped.append(op)
        continue
    got = (min(s.min_input for s in versions), max(s.max_input for s in versions),
           min(s.min_output for s in versions), max(s.max_output for s in versions))
    if not dom and op in NEWER and onnx.defs.onnx_opset_version() < NEWER[op][0]:
        got = (got[0], max(got[1], NEWER[op][1]), got[2], got[3])
    if not dom and op == "OptionalHasElement" and onnx.defs.onnx_opset_version() < 18:
        got = (0, got[1], got[2], got[3])  # its input became optional in opset 18
    check.expect(got == want, f"{dom or 'ai.onnx'} {op}: inputs {want[0]}..{want[1]}, outputs {want[2]}..{want[3]}",
                 f"onnx says inputs {got[0]}..{got[1]}, outputs {got[2]}..{got[3]}")
check.expect(keys == sorted(keys), "the table is sorted by (domain, op)")
check.finish(f"{len(rows)} ops; not in this onnx (unchecked): {', '.join(skipped) or 'none'}")
