#!/bin/bash
# Packs what scripts/gpu_check.sh needs on the GPU machine into .gpu/ (run it
# HERE, on a build machine, before the GPU run). The GPU machine has CUDA,
# PyTorch (with cuDNN) and python3 with numpy and onnx, but none of seam's
# Debian dependencies and no package registry, so this:
#   - builds a Release seam with the CUDA plug-in in build-gpu/ (no Python
#     package; no oneDNN: the reference is seam's CPU kernels, and
#     libdnnl is 40 MB);
#   - copies the seam binary, libseam_cuda.so and every shared library they
#     need that is not glibc's or CUDA's (protobuf-c, jansson, openblas,
#     libgfortran, graphviz's, ...);
#   - adds test models with their inputs (GPU_MODELS, names from
#     tests/models/gen_models.py; taken from SEAM_MODELS_DIR, build/models or
#     /work/main/build/models, generated into build/models if missing);
#   - adds the ONNX node tests of the ops the CUDA plug-in takes, and of a
#     few it refuses (the model splits then), from NODE_TESTS
#     (/usr/share/libonnx-testdata/data/node) into node/: the mutation
#     fuzzer's cases (check_mutate.py --targets cpu,cuda in gpu_check.sh);
#   - writes .gpu/seam-gpu.tar.xz (under 60 MB, checked).
# The GPU machine's copy of the working tree brings the scripts and checkers.
#
# usage: bash scripts/gpu_pack.sh        then, on the GPU machine: bash scripts/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
B=build-gpu
MODELS=${GPU_MODELS:-mobilenet_v2 squeezenet1_0 shufflenet_v2_x1_0 vit_small transformer_encoder transformer_encoder_dyn seed_mlp seed_mlp_sort_mid topk_cumsum lstm_classifier}
LIMIT_MB=60
NODE_TESTS=${NODE_TESTS:-/usr/share/libonnx-testdata/data/node}
# node tests by op: test_OP or test_OP_*. The ops of docs/cuda.md's "What
# runs", then Slice, Pad, Expand, Where, Cast, Equal, Less, Greater, which
# the plug-in refuses: a model of those runs on the CPU, or split.
NODE_OPS='conv|gemm|matmul|batchnorm|relu|sigmoid|tanh|leakyrelu|clip|erf|gelu|exp|log|sqrt|abs|neg|reciprocal|elu'
NODE_OPS+='|hardsigmoid|hardswish|softplus|floor|ceil|sin|cos|add|sub|mul|div|pow|max|min|prelu|maxpool|averagepool'
NODE_OPS+='|globalaveragepool|globalmaxpool|reduce_mean|reduce_sum|reduce_max|reduce_min|softmax|logsoftmax'
NODE_OPS+='|layer_normalization|transpose|concat|gather|reshape|flatten|squeeze|unsqueeze|identity|dropout'
NODE_OPS+='|slice|constant_pad|edge_pad|reflect_pad|expand|where|cast|equal|less|greater'
NODE_OPS+='|convtranspose|resize|lstm|gru'

echo "gpu_pack: building seam and libseam_cuda.so (Release) in $B/"
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DSEAM_PYTHON=OFF -DSEAM_WITH_DNNL=OFF -DSEAM_WITH_CUDA=ON >/dev/null
cmake --build "$B" -j"${JOBS:-2}" --target seam seam_cuda >/dev/null
[ -f "$B/libseam_cuda.so" ] || { echo "gpu_pack: $B/libseam_cuda.so was not built (CUDA toolkit or cuDNN not found?)" >&2; exit 1; }

# the models: the first folder that has each one, else generate it
SRC=""
for d in "${SEAM_MODELS_DIR:-}" build/models /work/main/build/models; do
  [ -n "$d" ] || continue
  ok=1
  for m in $MODELS; do [ -f "$d/$m.onnx" ] || ok=0; done
  if [ $ok = 1 ]; then SRC=$d; break; fi
done
if [ -z "$SRC" ]; then
  SRC=build/models
  echo "gpu_pack: generating the models into $SRC (tests/models/gen_models.py)"
  /usr/bin/python3 tests/models/gen_models.py "$SRC" --only "$(echo $MODELS | tr ' ' ',')"
fi

STAGE=.gpu/stage
rm -rf .gpu
mkdir -p "$STAGE/bin" "$STAGE/lib" "$STAGE/models"
cp "$B/seam" "$B/libseam_cuda.so" "$STAGE/bin/"
strip --strip-debug "$STAGE/bin/seam" "$STAGE/bin/libseam_cuda.so"

# shared libraries: everything ldd resolves but glibc's, the C++ runtime's
# and CUDA's (the GPU machine has those, with its own driver)
skip='^(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcudnn.*|libcublas.*|libcudart|libcuda|libnvrtc.*)\.so'
for f in "$B/seam" "$B/libseam_cuda.so"; do
  ldd "$f" | awk '/=> \//{print $1, $3}'
done | sort -u | while read -r name path; do
  if [[ "$name" =~ $skip ]]; then continue; fi
  cp -L "$path" "$STAGE/lib/$name"
done
strip --strip-unneeded "$STAGE"/lib/*.so* 2>/dev/null || true
need=$(objdump -T "$STAGE"/bin/* "$STAGE"/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
echo "gpu_pack: libraries: $(ls "$STAGE/lib" | tr '\n' ' ')(the newest glibc symbol needed: $need)"

for m in $MODELS; do
  cp "$SRC/$m.onnx" "$SRC"/$m.input*.npy "$STAGE/models/"
  cp "$SRC"/$m.expected.*.npy "$STAGE/models/" 2>/dev/null || true
done
# the node tests (folders of model.onnx and test_data_set_*/)
if [ -d "$NODE_TESTS" ]; then
  mkdir -p "$STAGE/node"
  ls "$NODE_TESTS" | grep -E "^test_($NODE_OPS)(_|\$)" | while read -r t; do cp -r "$NODE_TESTS/$t" "$STAGE/node/"; done
else
  echo "gpu_pack: no $NODE_TESTS (Debian's libonnx-testdata): no node tests packed, gpu_check.sh skips mutate_cuda" >&2
fi
n_node=$(ls "$STAGE/node" 2>/dev/null | wc -l)
git rev-parse HEAD > "$STAGE/COMMIT" 2>/dev/null || true
tar -C "$STAGE" -cf - . | xz -T0 -6 > .gpu/seam-gpu.tar.xz
rm -rf "$STAGE"
size=$(stat -c %s .gpu/seam-gpu.tar.xz)
echo "gpu_pack: .gpu/seam-gpu.tar.xz $((size / 1048576)) MB ($size bytes): seam, libseam_cuda.so, $(echo $MODELS | wc -w) models from $SRC, $n_node node tests"
if [ "$size" -gt $((LIMIT_MB * 1048576)) ]; then
  echo "gpu_pack: over $LIMIT_MB MB: pick fewer models (GPU_MODELS=...)" >&2
  exit 1
fi
