#!/bin/sh
# cmake --install of BUILD into a fresh temporary prefix, then the consumer
# (consumer.c) built against it twice, with pkg-config and with
# find_package(seam), and run on a tiny model; then the installed Python
# package imported from the prefix. Nothing outside the temporary folder is
# touched. Usage: run_install_test.sh BUILD_DIR WORK_DIR CC [python] [CFLAGS]
# (CFLAGS: the sanitizer build's, since its libseam.so needs their runtime).
set -eu
build=$1 work=$2 cc=$3 py=${4:-} flags=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >"$work/install.log"
lib=$prefix/lib
[ -d "$prefix/lib64" ] && lib=$prefix/lib64
for f in "$prefix/include/seam.h" "$prefix/include/seam_backend.h" "$prefix/include/seam_partition.h" "$prefix/include/seam_quantize.h" "$prefix/include/seam_report.h" "$prefix/bin/seam" "$lib/pkgconfig/seam.pc" \
         "$lib/cmake/seam/seamConfig.cmake" "$lib/libseam.so.0"; do
    [ -e "$f" ] || { echo "install: $f is missing"; exit 1; }
done
# internal headers stay out of the public include path
[ -z "$(ls "$prefix/include" | grep -v '^seam\(_backend\|_partition\|_quantize\|_report\|_mpi\)\?\.h$')" ] || { echo "install: extra headers"; ls "$prefix/include"; exit 1; }
# the SONAME carries the major version
readelf -d "$lib/libseam.so" | grep -q 'SONAME.*libseam\.so\.0' || { echo "install: no SONAME libseam.so.0"; exit 1; }
# only the public API is exported
extra=$(nm -D --defined-only "$lib/libseam.so" | awk '{print $3}' | grep -v '^seam_' || true)
[ -z "$extra" ] || { echo "install: libseam.so exports non-API symbols:"; echo "$extra"; exit 1; }

# the model: y = Relu(x) + 1 on float32[4]
/usr/bin/python3 - "$work/relu1.onnx" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "one"], ["y"])], "relu1",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY

echo "== pkg-config"
export PKG_CONFIG_PATH="$lib/pkgconfig"
# shellcheck disable=SC2046
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Werror $flags -o "$work/consumer-pc" "$here/consumer.c" $(pkg-config --cflags --libs seam) -lm
LD_LIBRARY_PATH="$lib" "$work/consumer-pc" "$work/relu1.onnx"

echo "== the report library (libseam_report.so; libseam.so needs no graphviz)"
if readelf -d "$lib/libseam.so" | grep NEEDED | grep -q -E 'libgvc|libcgraph'; then
    echo "install: libseam.so links graphviz"; exit 1
fi
rextra=$(nm -D --defined-only "$lib/libseam_report.so" | awk '{print $3}' | grep -v -E '^(seam_report_|seam_session_write_trace$)' || true)
[ -z "$rextra" ] || { echo "install: libseam_report.so exports more than the report:"; echo "$rextra"; exit 1; }
# shellcheck disable=SC2046
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Werror $flags -o "$work/report-consumer" "$here/report_consumer.c" $(pkg-config --cflags --libs seam) -lseam_report
# graphviz's own allocations that it never frees (tests/browser/lsan.supp) in sanitizer builds
LSAN_OPTIONS="suppressions=$here/../browser/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    LD_LIBRARY_PATH="$lib" "$work/report-consumer" "$work/relu1.onnx" "$work/relu1.html"

echo "== find_package(seam)"
cmake -S "$here/project" -B "$work/project" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
      -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$work/project.log"
cmake --build "$work/project" >>"$work/project.log"
LD_LIBRARY_PATH="$lib" "$work/project/consumer" "$work/relu1.onnx"

echo "== the installed CLI"
"$prefix/bin/seam" inspect "$work/relu1.onnx" >/dev/null

# built with MPI: seam_mpi.h installed, and a program on it runs a staged
# model over MPI_COMM_WORLD (one stage, mpirun -np 1)
if nm -D --defined-only "$lib/libseam.so" | grep -q ' seam_pipeline_create$'; then
    echo "== seam_mpi.h (a pipeline over MPI)"
    [ -e "$prefix/include/seam_mpi.h" ] || { echo "install: libseam.so has the pipeline, seam_mpi.h is missing"; exit 1; }
    "$prefix/bin/seam" partition "$work/relu1.onnx" --stages 1 -o "$work/relu1_staged.onnx" >/dev/null
    # shellcheck disable=SC2046
    # shellcheck disable=SC2086
    OMPI_CC="$cc" mpicc -std=c11 -Wall -Werror $flags -o "$work/mpi-consumer" "$here/mpi_consumer.c" $(pkg-config --cflags --libs seam)
    # (Open MPI's own allocations past MPI_Finalize: no leak check in sanitizer builds)
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        LD_LIBRARY_PATH="$lib" mpirun --oversubscribe --bind-to none --mca btl self,vader -np 1 \
        "$work/mpi-consumer" "$work/relu1_staged.onnx"
else
    [ ! -e "$prefix/include/seam_mpi.h" ] || { echo "install: seam_mpi.h without the pipeline in libseam.so"; exit 1; }
fi

if [ "$py" = python ]; then
    echo "== the installed Python package"
    pydir=$(find "$prefix" -path '*/seam/__init__.py' | head -1)
    [ -n "$pydir" ] || { echo "install: the Python package is missing"; exit 1; }
    PYTHONPATH=$(dirname "$(dirname "$pydir")") /usr/bin/python3 -c "
import numpy as np, seam, sys
assert seam.__file__.startswith('$prefix'), seam.__file__
y = seam.load(sys.argv[1])(np.array([-2, -1, 0, 3], np.float32))
assert y.tolist() == [1, 1, 1, 4], y
print('python: seam', seam.version(), 'ok')
" "$work/relu1.onnx"
fi
echo "install test passed"
