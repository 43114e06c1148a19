#!/usr/bin/env bash
# Sets up, builds and runs every test: the suite, the suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer, the threads test under
# ThreadSanitizer, and a fuzz smoke run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)
# each stage says when it began, in seconds since the start (CI allows 90 minutes; the goal is 30)
stage() { echo "== $1 (at ${SECONDS} s; $(df -h . | awk 'NR == 2 {print $4}') of disk free)"; }
# the machine, first: oneDNN's kernels, ONNX Runtime's int8 and several
# checks depend on the CPU's instruction sets and cores
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores," \
  "$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(df -h . | awk 'NR == 2 {print $4}') of disk free;" \
  "flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|avx512f|avx512bw|avx512_vnni|avx_vnni|avx512_bf16|amx_int8)$' | tr '\n' ' ')"
# the Python checkers print their FAIL lines and a count, not every check
# that passed (CI shows the start of a failed test's output)
export SEAM_TEST_QUIET=1

stage "build (RelWithDebInfo)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
stage "tests"
ctest --test-dir build --output-on-failure -j"$jobs"

stage "tests under ASan + UBSan"
cmake -S . -B build-asan -DSEAM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DSEAM_MODELS_DIR="$PWD/build/models" >/dev/null
cmake --build build-asan -j"$jobs"
# the Python checkers run a share of their cases here (tests/CMakeLists.txt),
# chosen by this seed: the commit, so each commit covers another share
seed=${SEAM_TEST_SEED:-$(git rev-parse --short HEAD 2>/dev/null || echo 0)}
echo "sanitizer stage: SEAM_TEST_SEED=$seed (to repeat: SEAM_TEST_SEED=$seed bash scripts/test.sh)"
SEAM_TEST_SEED=$seed ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"

stage "threads under ThreadSanitizer"
cmake -S . -B build-tsan -DSEAM_TSAN=ON -DCMAKE_BUILD_TYPE=Debug -DSEAM_MODELS_DIR="$PWD/build/models" >/dev/null
cmake --build build-tsan -j"$jobs" --target test_threads
ctest --test-dir build-tsan -L tsan --output-on-failure

stage "a build without oneDNN (-DSEAM_WITH_DNNL=OFF): it builds, lists its targets, refuses --target dnnl"
cmake -S . -B build-nodnnl -DSEAM_WITH_DNNL=OFF -DCMAKE_BUILD_TYPE=Release -DSEAM_MODELS_DIR="$PWD/build/models" >/dev/null
cmake --build build-nodnnl -j"$jobs" --target seam >/dev/null
build-nodnnl/seam --version | grep -q "built-in targets: cpu)" || { echo "nodnnl: seam --version does not list cpu alone"; exit 1; }
set +e
out=$(build-nodnnl/seam run build/models/resnet18.onnx --target dnnl 2>&1); rc=$?
set -e
if [ "$rc" -ne 1 ] || ! echo "$out" | grep -q "built without oneDNN"; then
  echo "nodnnl: --target dnnl gave exit $rc: $out"; exit 1
fi
build-nodnnl/seam run build/models/resnet18.onnx >/dev/null
echo "nodnnl: ok"

stage "fuzz smoke"
bash scripts/fuzz_smoke.sh 30
stage "all tests passed"
