#!/usr/bin/env bash
# Device subgraph counts on the real models: seam against torch.fx's
# CapabilityBasedPartitioner with the same support predicate (plain op-list
# rules, so both sides see the same capability).
# usage: bench/fx_real_models.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
/usr/bin/python3 tests/models/gen_models.py "$B/models" >/dev/null
cat > "$W/ccrm.json" <<'J'
{"name": "ccrm", "default": false, "ops": {"Conv": true, "Gemm": true, "Relu": true, "MaxPool": true}}
J
cat > "$W/notopk.json" <<'J'
{"name": "npu", "default": true, "ops": {"TopK": false, "Shape": false, "Gather": false, "Concat": false}}
J
echo "| model | target | seam device subgraphs | torch.fx partitions |"
echo "|---|---|---|---|"
for m in "$B"/models/*.onnx; do
  for t in ccrm notopk; do
    out=$("$B/seam" partition "$m" --target "$W/$t.json")
    dev=$(printf '%s\n' "$out" | sed -n '1s/.*(\([0-9]*\) on devices).*/\1/p')
    fx=$(/usr/bin/python3 bench/fx_peer.py "$m" "$W/$t.json" | sed -E 's/.*"fx_partitions": ([0-9]+).*/\1/')
    echo "| $(basename "$m" .onnx) | $t | $dev | $fx |"
  done
done
