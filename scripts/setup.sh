#!/usr/bin/env bash
# Installs every Debian package seam's build, demo, tests and benchmarks need,
# and ONNX Runtime (npm's onnxruntime-node) into bench/ort, which the
# quantized-model checker (tests/checks/check_quant.py) and the benchmarks
# compare against.
# Idempotent: packages already present are skipped, so a second run is quick.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

PKGS=(
  # build
  cmake make gcc pkg-config
  python3-dev python3-numpy              # the Python package seam (a CPython extension)
  protobuf-c-compiler libprotobuf-c-dev  # ONNX parsing, C generated at build time
  libonnx-dev                            # provides onnx.proto (not committed here)
  libjansson-dev                         # JSON (rules targets, --json output)
  libopenblas-dev                        # MatMul/Gemm/Conv on the CPU backend
  libdnnl-dev                            # the dnnl backend
  graphviz libgraphviz-dev               # pictures of plans: seam --html lays out graphs with libgvc
  openmpi-bin libopenmpi-dev             # pipeline stages across processes: mpirun -np N seam run STAGED.onnx
  bc time                                # benchmark scripts
  # tests
  clang libclang-rt-14-dev               # libFuzzer, sanitizers
  libonnx-testdata                       # ONNX conformance models and data
  python3-onnx python3-numpy python3-torch python3-torchvision
  python3-pytest                         # tests/python
  python3-mpi4py                         # tests: seam.Pipeline over an mpi4py communicator
  python3-setuptools python3-wheel python3-pip python3-venv  # `pip install .`: the wheel, tested in a fresh venv
  chromium                               # tests/checks/check_report.py opens the HTML pages headless
)
# node and npm, for ONNX Runtime in bench/ort: Debian's, unless a node with
# its npm is already installed (NodeSource's nodejs package holds both and
# conflicts with Debian's npm)
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  PKGS+=(nodejs npm)
fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} packages present"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ONNX Runtime's CPU build from npm, at the version bench/ort/package-lock.json
# pins (--ignore-scripts: its install script only fetches CUDA libraries)
if [ ! -d "$ROOT/bench/ort/node_modules/onnxruntime-node" ]; then
  echo "setup: npm install in bench/ort (onnxruntime-node)"
  (cd "$ROOT/bench/ort" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error)
else
  echo "setup: bench/ort has onnxruntime-node"
fi
