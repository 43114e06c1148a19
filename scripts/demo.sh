#!/usr/bin/env bash
# Sets up, builds, exports the seeds' example model with torch (random
# weights) and shows the whole flow on it: analyze for a device without a
# sort, partition (the sort falls back to the CPU), save as one file,
# reload and run it, check the outputs against the unpartitioned run, and
# print the per-subgraph report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
/usr/bin/python3 tests/models/gen_models.py build/models --only seed_mlp,resnet18
D=build/demo
mkdir -p "$D"
M=build/models/seed_mlp.onnx
T=dnnl   # the oneDNN backend: it has no TopK (torch.sort), which falls back to the CPU
IN="input=build/models/seed_mlp.input.npy"
say() { echo; echo "\$ $*"; "$@"; }
say build/seam analyze "$M" --target "$T"
say build/seam partition "$M" --target "$T" -o "$D/seed_mlp.partitioned.onnx"
say build/seam inspect "$D/seed_mlp.partitioned.onnx"
say build/seam run "$D/seed_mlp.partitioned.onnx" --input "$IN" --output-dir "$D/partitioned" --report
say build/seam run "$M" --input "$IN" --output-dir "$D/plain"
echo
# oneDNN's arithmetic differs from the CPU kernels' in the last bits: compare
# within the documented tolerance (1e-4 of the output's scale)
/usr/bin/python3 - "$D" <<'PY'
import sys
import numpy as np
d = sys.argv[1]
a, b = np.load(f"{d}/partitioned/output.npy"), np.load(f"{d}/plain/output.npy")
err = float(np.abs(a - b).max() / np.abs(b).max())
print(f"partitioned vs unpartitioned: max error {err:.2e} of the output's scale "
      f"({'ok' if err <= 1e-4 else 'MISMATCH'}, limit 1e-4)")
sys.exit(0 if err <= 1e-4 else 1)
PY
say build/seam run build/models/resnet18.onnx --target dnnl \
  --input input=build/models/resnet18.input.npy --report --repeat 5
