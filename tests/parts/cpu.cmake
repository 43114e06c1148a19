# The CPU kernels' fast paths (tests/checks/check_cpu_kernels.py): Resize
# (every mode and coordinate transform on sizes that take the fast path,
# against the ONNX spec's formulas and torch) and the vectorized Sigmoid,
# HardSigmoid and HardSwish (against torch, NaN and inf included), Conv on
# the packed AVX-512 GEMM (edge tiles, depth blocks, groups, each fused
# activation, against torch); each
# model on 1 and 2 threads, bitwise equal. A few seconds.
add_test(NAME cpu_kernels
  COMMAND ${PY} ${CHECKS}/check_cpu_kernels.py $<TARGET_FILE:seam> ${TEST_WORK}/cpu_kernels)
set_tests_properties(cpu_kernels PROPERTIES LABELS "standalone;python")
