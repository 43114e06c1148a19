#!/bin/bash
# The GPU check of the CUDA backend (docs/cuda.md), run ON the GPU machine
# from the repository root, after scripts/gpu_pack.sh made .gpu/ on a build
# machine. It unpacks .gpu/seam-gpu.tar.xz, points the loader at the packed
# libraries (only those the machine lacks), /usr/local/cuda's and the cuDNN
# of python3's nvidia.cudnn package, prints nvidia-smi -L, then runs:
#   1. tests/checks/check_cuda.py on every packed model: cuda against the CPU
#      kernels (1e-4 of the output's scale), saved and reloaded, the op
#      models, a model split around a TopK with its boundary copies;
#   2. scripts/gpu_bench.py: seam cuda against PyTorch eager (fp32, TF32
#      off) and the placement check (default placement no slower than
#      all-CPU and all-GPU), tables in $OUT/gpu_bench.md;
#   3. bench_set: scripts/gpu_bench_set.py: the benchmark set
#      (bench/bench_models.py, exported here by this machine's torch: 1.1 GB
#      does not travel) against the CPU kernels, saved and reloaded, and
#      seam cuda against PyTorch eager with TFLOP/s, in $OUT/gpu_bench_set.md;
#   4. mutate_cuda: tests/checks/check_mutate.py over the packed ONNX node
#      tests (node/): hostile variants of each run on the CPU and with
#      --target cuda, partitioned for cuda, saved and reloaded; a crash, a
#      sanitizer report or a hang fails (tests/checks/mutate_known.txt
#      applies as in CI). MUTATE_MUTATIONS (default 1) variants per test,
#      MUTATE_JOBS (default: cores) at once; about 90 s on 16 cores.
# After a check_cuda failure it reruns the first failing op model and model
# with SEAM_CUDA_SYNC=2 and under compute-sanitizer (when installed).
# GPU_CHECK_STEPS (default: check_cuda gpu_bench bench_set mutate_cuda)
# names the steps to run.
# It runs everything, then prints a summary and exits 1 if anything failed
# (2 when there is no GPU: the no-device path is still checked, and the
# fuzzer's cases run on the CPU and through the no-device cuda path). Output
# also goes to $OUT/gpu_check.log when $OUT is set. About 5 minutes on an H100.
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  exec > >(tee -a "$OUT/gpu_check.log") 2>&1
fi
T0=$(date +%s)
FAILED=()
STEPS=" ${GPU_CHECK_STEPS:-check_cuda gpu_bench bench_set mutate_cuda} "
step() { # step NAME COMMAND...: runs it, records a failure, goes on
  local name=$1
  shift
  if [[ "$STEPS" != *" $name "* ]]; then echo "=== $name: not in GPU_CHECK_STEPS"; return 0; fi
  echo "=== $name: $*"
  "$@"
  local rc=$?
  if [ $rc -ne 0 ]; then FAILED+=("$name (exit $rc)"); echo "=== $name: FAILED (exit $rc)"; else echo "=== $name: ok"; fi
  return 0
}

G=$ROOT/.gpu/unpacked
rm -rf "$G"
mkdir -p "$G"
if ! tar -xJf .gpu/seam-gpu.tar.xz -C "$G"; then
  echo "gpu_check: cannot unpack .gpu/seam-gpu.tar.xz (run scripts/gpu_pack.sh on a build machine first, and carry .gpu)"
  exit 1
fi
echo "gpu_check: packed from commit $(cat "$G/COMMIT" 2>/dev/null || echo '?'); this tree $(git rev-parse HEAD 2>/dev/null || echo '?')"
# a packed library the machine has under the same soname: the machine's
for f in "$G"/lib/*; do
  n=$(basename "$f")
  if /sbin/ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$n ("; then rm -f "$f"; fi
done
echo "gpu_check: packed libraries used: $(ls "$G/lib" | tr '\n' ' ')"
PY=${PYTHON:-python3}
pylib() { "$PY" -c "import importlib, os; m = importlib.import_module('$1'); print(os.path.join(list(m.__path__)[0], 'lib'))" 2>/dev/null; }
CUDNN_LIB=$(pylib nvidia.cudnn)
CUBLAS_LIB=$(pylib nvidia.cublas)
SEAM_LD="$G/lib:/usr/local/cuda/lib64:${CUDNN_LIB:-}:${CUBLAS_LIB:-}"
echo "gpu_check: LD_LIBRARY_PATH for seam: $SEAM_LD"
cat > "$G/seam.sh" <<WRAP
#!/bin/sh
LD_LIBRARY_PATH="$SEAM_LD\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$G/bin/seam" "\$@"
WRAP
chmod +x "$G/seam.sh"
SEAM=$G/seam.sh
SO=$G/bin/libseam_cuda.so

echo "=== nvidia-smi -L"
GPU=1
nvidia-smi -L || { GPU=0; echo "gpu_check: nvidia-smi found no GPU"; }
step "seam runs" "$SEAM" --version
LD_LIBRARY_PATH="$SEAM_LD" ldd "$SO" | grep -E "not found|cudnn|cublas" || true

WORK=${TMPDIR:-/tmp}/seam-gpu-work  # not under $OUT: only a few files come back from there
mkdir -p "$WORK"
step "check_cuda" bash -c 'set -o pipefail; "$@" 2>&1 | tee "'"$WORK"'/check_cuda.out"' _ \
  "$PY" tests/checks/check_cuda.py "$SEAM" "$SO" "$WORK/check" "$G"/models/*.onnx
# the first failing op model and model again, to name the failing launch:
# SEAM_CUDA_SYNC=2 (each step synchronized and checked, each compile phase
# traced) and, where installed, compute-sanitizer's memcheck (30 s at most)
rerun() { # rerun LABEL MODEL FEED...
  local label=$1 model=$2
  shift 2
  echo "=== rerun $label with SEAM_CUDA_SYNC=2: seam run $model $* --target cuda --placement capability --compile-log"
  SEAM_CUDA_SYNC=2 timeout 60 "$SEAM" run "$model" "$@" --target cuda --placement capability --compile-log 2>&1 | tail -40
  echo "=== rerun $label: exit ${PIPESTATUS[0]}"
  local cs
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  if [ -n "$cs" ]; then
    echo "=== rerun $label under compute-sanitizer --tool memcheck (30 s)"
    LD_LIBRARY_PATH="$SEAM_LD" SEAM_CUDA_SYNC=1 timeout 30 "$cs" --tool memcheck --print-limit 10 \
      "$G/bin/seam" run "$model" "$@" --target cuda --placement capability 2>&1 | tail -60
    echo "=== rerun $label under compute-sanitizer: exit ${PIPESTATUS[0]}"
  else
    echo "=== rerun $label: no compute-sanitizer here"
  fi
}
if [ $GPU = 1 ] && [ -f "$WORK/check_cuda.out" ]; then
  op=$(grep -m1 -oE '^FAIL (op_[A-Za-z0-9_]+|ops [A-Za-z0-9_]+)' "$WORK/check_cuda.out" | sed -E 's/^FAIL (op_|ops )//')
  if [ -n "$op" ] && [ -f "$WORK/check/op_$op.onnx" ]; then
    feed=()
    for f in "$WORK/check/op_$op.onnx".*.npy; do
      [ -f "$f" ] || continue
      n=${f#"$WORK/check/op_$op.onnx."}
      feed+=(--input "${n%.npy}=$f")
    done
    rerun "op_$op" "$WORK/check/op_$op.onnx" "${feed[@]}"
  fi
  mdl=$(grep -m1 -oE '^FAIL (model_[A-Za-z0-9_]+|models [A-Za-z0-9_]+)' "$WORK/check_cuda.out" | sed -E 's/^FAIL (model_|models )//')
  if [ -n "$mdl" ] && [ -f "$G/models/$mdl.onnx" ]; then
    feed=()
    [ -f "$G/models/$mdl.input.npy" ] && feed=(--input "$("$PY" -c "import onnx,sys; g=onnx.load(sys.argv[1],load_external_data=False).graph; i={x.name for x in g.initializer}; print([x.name for x in g.input if x.name not in i][0])" "$G/models/$mdl.onnx")=$G/models/$mdl.input.npy")
    rerun "model_$mdl" "$G/models/$mdl.onnx" "${feed[@]}"
  fi
fi
if [ $GPU = 1 ]; then
  step "gpu_bench" "$PY" scripts/gpu_bench.py "$SEAM" "$SO" "$WORK/bench" "$G/models" --md "${OUT:-$WORK}/gpu_bench.md" \
    --repeat "${GPU_BENCH_REPEAT:-20}"
  step "bench_set" bash -c 'set -o pipefail; "$@" 2>&1 | tee "'"$WORK"'/bench_set.out"' _ \
    "$PY" scripts/gpu_bench_set.py "$SEAM" "$SO" "$WORK/set" --md "${OUT:-$WORK}/gpu_bench_set.md" \
    --jobs "${BENCH_SET_JOBS:-4}" --repeat "${BENCH_SET_REPEAT:-20}"
  # the first model that failed on cuda, again, naming the failing launch
  bm=$(grep -m1 -oE '^FAIL [A-Za-z0-9_]+: cuda' "$WORK/bench_set.out" 2>/dev/null | sed -E 's/^FAIL ([A-Za-z0-9_]+): cuda/\1/')
  if [ -n "$bm" ] && [ -f "$WORK/set/models/$bm.onnx" ]; then
    rerun "bench_$bm" "$WORK/set/models/$bm.onnx" --input "input=$WORK/set/models/$bm.input.npy"
  fi
else
  echo "skipped: gpu_bench, bench_set: no GPU"
fi

# the mutation fuzzer's cases through --target cuda (on the CPU without a
# GPU: the plug-in refuses every node then); --backend-lib: the saved
# partitioned files name the cuda target, and the wrapper is not next to
# libseam_cuda.so
if [ -d "$G/node" ]; then
  step "mutate_cuda" "$PY" tests/checks/check_mutate.py "$SEAM" "$WORK/mutate" "$G/node" \
    --targets cpu,cuda --backend-lib "$SO" --mutations "${MUTATE_MUTATIONS:-1}" \
    --jobs "${MUTATE_JOBS:-$(nproc)}" --timeout 30
else
  echo "skipped: mutate_cuda: no node tests packed (gpu_pack.sh found no libonnx-testdata)"
fi

echo "=== summary ($(( $(date +%s) - T0 )) s)"
if [ ${#FAILED[@]} -gt 0 ]; then
  for f in "${FAILED[@]}"; do echo "FAILED: $f"; done
  exit 1
fi
if [ $GPU = 0 ]; then
  echo "gpu_check: no GPU here: only the no-device path was checked"
  exit 2
fi
echo "gpu_check: all passed"
