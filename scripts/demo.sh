#!/usr/bin/env bash
# Sets up, builds, exports a model with torch (random weights) and shows
# what seam sees in it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
/usr/bin/python3 tests/models/gen_models.py build/models --only seed_mlp,resnet18
echo
echo "\$ seam inspect build/models/seed_mlp.onnx"
build/seam inspect build/models/seed_mlp.onnx
echo
echo "\$ seam inspect build/models/resnet18.onnx --json"
build/seam inspect build/models/resnet18.onnx --json
