#!/usr/bin/env bash
# Installs every Debian package seam's build, demo, tests and benchmarks need.
# Idempotent: packages already present are skipped, so a second run is quick.
set -euo pipefail

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
  bc time                                # benchmark scripts
  # tests
  clang libclang-rt-14-dev               # libFuzzer, sanitizers
  libonnx-testdata                       # ONNX conformance models and data
  python3-onnx python3-numpy python3-torch python3-torchvision
  python3-pytest                         # tests/python
  chromium                               # tests/checks/check_report.py opens the HTML pages headless
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
