#!/usr/bin/env bash
# A short libFuzzer run on the loader, seeded with small conformance models.
# usage: scripts/fuzz_smoke.sh [SECONDS]   (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
CC=clang cmake -S . -B build-fuzz -DSEAM_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_load >/dev/null
corpus=build-fuzz/corpus
mkdir -p "$corpus"
for d in /usr/share/libonnx-testdata/data/node/test_{conv,loop,if,lstm,gather,reshape,slice,topk,cumsum,resize}*; do
  [ -f "$d/model.onnx" ] && cp "$d/model.onnx" "$corpus/$(basename "$d").onnx"
done
log=build-fuzz/fuzz.log
rc=0
build-fuzz/tests/fuzz/fuzz_load -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 \
  -artifact_prefix=build-fuzz/ -print_final_stats=1 "$corpus" >"$log" 2>&1 || rc=$?
grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$log" || true
if [ "$rc" -ne 0 ]; then
  echo "fuzz smoke: the fuzzer failed (exit $rc):"
  grep -E -A30 "ERROR|SUMMARY" "$log" | head -60
  exit 1
fi
echo "fuzz smoke: ${secs}s without a crash"
