#!/usr/bin/env bash
# Partitioning time across graph sizes, seam against torch.fx's
# CapabilityBasedPartitioner (the peer, 1k-8k nodes; it grows
# quadratically), and seam alone up to 1M nodes. seam's time is the whole
# command (load, check, infer, partition, print the summary); the peer's is
# propose_partitions() alone. Both sides run alternately in one loop.
#
# usage: bench/partition_bench.sh [BUILD_DIR]    (prints a markdown table)
#        bench/partition_bench.sh BUILD_DIR scale  (100k and 1M nodes only:
#            whole command best of 3 and median, --json, peak RSS, and the
#            median CPU seconds, user + sys: the steadier number on a
#            shared machine)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
echo '{"name": "npu", "default": true, "ops": {"Sigmoid": false}}' > "$W/npu.json"
if [ "${2:-}" = scale ]; then
  # the 3 runs as "wall-seconds peak-KB cpu-seconds" lines, fastest first
  runs() {
    local out=()
    for _ in 1 2 3; do
      /usr/bin/time -f "%e %M %U %S" -o "$W/t" "$@" >/dev/null
      out+=("$(awk '{printf "%s %s %.2f", $1, $2, $3 + $4}' "$W/t")")
    done
    printf '%s\n' "${out[@]}" | sort -n
  }
  # median of the third column (CPU seconds) of the runs
  cpu_median() { echo "$1" | cut -d' ' -f3 | sort -n | sed -n 2p; }
  echo "| graph | nodes | device subgraphs | seam s best | seam s median | CPU s median | peak MB | --json s best | --json s median | --json CPU s median | --json peak MB |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  for kind in chain wide random; do
    for n in 100000 1000000; do
      "$B/bench/gen_graph" "$kind" "$n" "$W/g.onnx"
      dev=$("$B/seam" partition "$W/g.onnx" --target "$W/npu.json" | sed -n '1s/.*(\([0-9]*\) on devices).*/\1/p')
      r=$(runs "$B/seam" partition "$W/g.onnx" --target "$W/npu.json")
      j=$(runs "$B/seam" partition "$W/g.onnx" --target "$W/npu.json" --json)
      printf "| %s | %d | %s | %.2f | %.2f | %.2f | %d | %.2f | %.2f | %.2f | %d |\n" "$kind" "$n" "$dev" \
        "$(echo "$r" | sed -n 1p | cut -d' ' -f1)" "$(echo "$r" | sed -n 2p | cut -d' ' -f1)" "$(cpu_median "$r")" \
        "$(( $(echo "$r" | cut -d' ' -f2 | sort -n | tail -1) / 1024 ))" \
        "$(echo "$j" | sed -n 1p | cut -d' ' -f1)" "$(echo "$j" | sed -n 2p | cut -d' ' -f1)" "$(cpu_median "$j")" \
        "$(( $(echo "$j" | cut -d' ' -f2 | sort -n | tail -1) / 1024 ))"
    done
  done
  exit 0
fi
best() { # best of 3 wall times of a command, in seconds
  local b=999
  for _ in 1 2 3; do
    local s e
    s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N)
    b=$(echo "$e - $s" | bc -l | awk -v b="$b" '{print ($1 < b) ? $1 : b}')
  done
  echo "$b"
}
echo "| graph | nodes | seam s | seam device subgraphs | torch.fx s | fx partitions | fx / seam |"
echo "|---|---|---|---|---|---|---|"
for kind in chain wide random; do
  for n in 1000 2000 4000 8000 100000 1000000; do
    "$B/bench/gen_graph" "$kind" "$n" "$W/g.onnx"
    ts=$(best "$B/seam" partition "$W/g.onnx" --target "$W/npu.json")
    summary=$("$B/seam" partition "$W/g.onnx" --target "$W/npu.json")
    dev=$(printf '%s\n' "$summary" | sed -n '1s/.*(\([0-9]*\) on devices).*/\1/p')
    if [ "$n" -le 8000 ]; then
      fx=$(/usr/bin/python3 bench/fx_peer.py "$W/g.onnx" "$W/npu.json")
      tf=$(echo "$fx" | sed -E 's/.*"fx_seconds": ([0-9.e-]+).*/\1/')
      pf=$(echo "$fx" | sed -E 's/.*"fx_partitions": ([0-9]+).*/\1/')
      ratio=$(echo "$tf / $ts" | bc -l)
      printf "| %s | %d | %.3f | %s | %.3f | %s | %.1fx |\n" "$kind" "$n" "$ts" "$dev" "$tf" "$pf" "$ratio"
    else
      printf "| %s | %d | %.3f | %s | - | - | - |\n" "$kind" "$n" "$ts" "$dev"
    fi
  done
done
