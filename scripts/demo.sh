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
T=tests/targets/neuron_like.json   # a rules target: float ops, no TopK (torch.sort)
IN="input=build/models/seed_mlp.input.npy"
say() { echo; echo "\$ $*"; "$@"; }
say build/seam analyze "$M" --target "$T"
say build/seam partition "$M" --target "$T" -o "$D/seed_mlp.partitioned.onnx"
say build/seam inspect "$D/seed_mlp.partitioned.onnx"
say build/seam run "$D/seed_mlp.partitioned.onnx" --input "$IN" --output-dir "$D/partitioned" --report
say build/seam run "$M" --input "$IN" --output-dir "$D/plain"
echo
if cmp -s "$D/partitioned/output.npy" "$D/plain/output.npy"; then
  echo "the partitioned model's output is bitwise equal to the unpartitioned run"
else
  echo "MISMATCH between the partitioned and the unpartitioned run" >&2
  exit 1
fi
say build/seam run build/models/resnet18.onnx --target tests/targets/conv_gemm_relu_maxpool.json \
  --input input=build/models/resnet18.input.npy --report --repeat 5
