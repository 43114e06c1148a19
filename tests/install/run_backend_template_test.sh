#!/bin/sh
# The out-of-tree backend template (examples/backend-template) built as a
# vendor builds it: cmake --install of BUILD into a fresh temporary prefix,
# then the template configured with find_package(seam) against that prefix
# alone and built; then check_backend_template.py runs the installed seam
# on the plug-in (backend-check, run). Nothing outside WORK_DIR is touched.
# Usage: run_backend_template_test.sh BUILD_DIR WORK_DIR CC [CFLAGS]
# (CFLAGS: the sanitizer build's, as install_tree passes them).
set -eu
build=$1 work=$2 cc=$3 flags=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../examples/backend-template" && pwd)
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >"$work/install.log"
echo "== the template, built against $prefix"
cmake -S "$src" -B "$work/template" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
      -DCMAKE_C_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" -DCMAKE_MODULE_LINKER_FLAGS="$flags" \
      >"$work/template.log" || { cat "$work/template.log"; exit 1; }
cmake --build "$work/template" >>"$work/template.log" 2>&1 || { cat "$work/template.log"; exit 1; }
so=$work/template/libseam_template.so
[ -f "$so" ] || { echo "template: $so was not built"; exit 1; }
# the plug-in exports seam_backend_register alone
extra=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^seam_backend_register$' || true)
[ -z "$extra" ] || { echo "template: exports more than seam_backend_register:"; echo "$extra"; exit 1; }

/usr/bin/python3 "$here/check_backend_template.py" "$prefix/bin/seam" "$so" "$work"
