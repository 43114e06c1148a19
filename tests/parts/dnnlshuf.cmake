# The dnnl backend's channel shuffle and strided layouts through the view
# ops (src/backends/dnnl/shuf_shuffle.c, dnnl_internal.h;
# tests/checks/check_dnnl_shuffle.py): ShuffleNet's Concat -> Reshape ->
# Transpose -> Reshape -> Slices with groups 2, 3 and 4, odd channel
# counts, a batch of 2, 1-D, a symbolic batch, and the near misses the
# pattern must leave alone, against torch and the CPU kernels within 1e-5
# with fusion on and off, and the reorders oneDNN runs per run bounded
# (ONEDNN_VERBOSE). No generated models: it makes its own. A few seconds.
add_test(NAME dnnl_shuffle
  COMMAND ${PY} ${CHECKS}/check_dnnl_shuffle.py $<TARGET_FILE:seam> ${TEST_WORK}/dnnl_shuffle)
set_tests_properties(dnnl_shuffle PROPERTIES LABELS "standalone;python;dnnl" TIMEOUT 600)
