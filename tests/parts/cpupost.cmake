# Post-processing and 1-D audio kernels on their fast paths and next to the
# general ones (tests/checks/check_cpu_post.py): TopK against numpy's
# lexsort in the spec's order (NaN, +-0, ties), PRelu against numpy.where
# bitwise for every slope shape (and on dnnl: one slope as a relu with
# alpha, fused into a Conv before it), NonMaxSuppression against a
# brute-force reading of the spec and against ONNX Runtime. Each model on 1
# and 2 threads, bitwise equal. About 15 seconds.
add_test(NAME cpu_post
  COMMAND ${PY} ${CHECKS}/check_cpu_post.py $<TARGET_FILE:seam> ${TEST_WORK}/cpu_post)
set_tests_properties(cpu_post PROPERTIES LABELS "standalone;python;dnnl")
