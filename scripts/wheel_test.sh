#!/usr/bin/env bash
# The pip route, tested: builds the wheel from the source tree (setup.py,
# taking the CMake tree BUILD that is already built), installs it into a
# fresh virtual environment, and runs the Python tests there from a folder
# outside the source and build trees, so `import seam` can only find the
# installed package (test_ort_api.py checks where it came from).
#
# usage: scripts/wheel_test.sh BUILD [pytest args...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "$1" && pwd)"
shift
WORK="$BUILD/wheel"   # setup.py's scratch goes to $WORK/setuptools too
rm -rf "$WORK"
mkdir -p "$WORK/dist"
cd "$ROOT"
# Debian's pip runs offline: no build isolation (setuptools and wheel are Debian's)
SEAM_BUILD_DIR="$BUILD" /usr/bin/python3 -m pip wheel --no-build-isolation --no-deps --quiet -w "$WORK/dist" . \
  > "$WORK/pip-wheel.log" 2>&1 || { cat "$WORK/pip-wheel.log"; exit 1; }
wheel=$(ls "$WORK"/dist/seam-*.whl)
# system site packages give numpy, torch and onnx (no index here); seam only from the wheel
/usr/bin/python3 -m venv --system-site-packages "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --no-index --no-deps --quiet "$wheel"
run_dir=$(mktemp -d)
trap 'rm -rf "$run_dir"' EXIT
cp -r "$ROOT/tests/python" "$ROOT/tests/lib" "$ROOT/tests/targets" "$run_dir/"
mkdir "$run_dir/checks" && cp "$ROOT/tests/checks/ort_outputs.js" "$run_dir/checks/"
cd "$run_dir"
env -u PYTHONPATH SEAM_EXPECT_PACKAGE="$WORK/venv" SEAM_ORT_DIR="${SEAM_ORT_DIR:-$ROOT/bench/ort}" \
  "$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider python "$@"
