# Two dnnl fusions (src/backends/dnnl/ops.c; tests/checks/check_dnnl_ops2.py):
# a BatchNormalization read by a Relu alone runs as one batch_normalization
# with fuse_norm_relu, and a ReduceMean / ReduceMax over exactly the spatial
# axes as a global pooling in the convolution's layout. Small torch-exported
# models (a densenet-like block, a BN with two readers, classifier heads, a
# squeeze-excitation gate, rank 5, the spatial max, means over other axes
# that stay reductions) against torch float64 and the CPU kernels within
# 1e-5, fusion on and off, with the primitives named in the compile log and
# DNNL_VERBOSE (no reference kernel, no slow: line). No generated models: it
# makes its own. A few seconds.
add_test(NAME dnnl_ops2
  COMMAND ${PY} ${CHECKS}/check_dnnl_ops2.py $<TARGET_FILE:seam> ${TEST_WORK}/dnnl_ops2)
set_tests_properties(dnnl_ops2 PROPERTIES LABELS "standalone;python;dnnl" TIMEOUT 600)
